package verifier

import (
	"bpfvm/isa"
)

// ArgType says what a helper expects in an argument register, as the
// kernel's enum bpf_arg_type.
type ArgType uint8

// Argument types.
const (
	ArgNone ArgType = iota
	// ArgAnything is any initialised value.
	ArgAnything
	// ArgScalar is any scalar (no pointers).
	ArgScalar
	// ArgConstMapPtr is a map pointer loaded with LD_IMM64.
	ArgConstMapPtr
	// ArgMapKey points at key_size readable bytes of the map argument.
	ArgMapKey
	// ArgMapValue points at value_size readable bytes of the map argument.
	ArgMapValue
	// ArgUninitMapValue points at value_size writable bytes.
	ArgUninitMapValue
	// ArgMem points at readable memory whose size is the next argument.
	ArgMem
	// ArgUninitMem points at writable memory whose size is the next argument.
	ArgUninitMem
	// ArgConstSize is the size of the preceding memory argument, > 0.
	ArgConstSize
	// ArgConstSizeOrZero is a size that may be zero.
	ArgConstSizeOrZero
	// ArgConstAllocSize is a constant allocation size (ringbuf reserve).
	ArgConstAllocSize
	// ArgCtx is the program's context pointer.
	ArgCtx
	// ArgCallback is a function loaded with LD_IMM64 PseudoFunc.
	ArgCallback
	// ArgRingbufMem is memory from bpf_ringbuf_reserve, released by the call.
	ArgRingbufMem
	// ArgConstStr points at a NUL-terminated string in a read-only map.
	ArgConstStr
	// ArgPtrToLong points at 8 writable bytes (strtol results).
	ArgPtrToLong
	// ArgMemOrNull is ArgMem, or NULL when the size is 0 (the kernel's
	// ARG_PTR_TO_MEM | PTR_MAYBE_NULL | MEM_RDONLY). As in the kernel, a
	// pointer that may be NULL passes too: the helper must check for NULL.
	ArgMemOrNull
	// ArgWriteMemOrNull points at memory the helper writes, whose size is
	// the next argument, or is NULL when the size is 0 (the kernel's
	// ARG_PTR_TO_MEM_OR_NULL | MEM_WRITE). Unlike ArgUninitMem, stack
	// memory must be initialised; a pointer that may be NULL passes.
	ArgWriteMemOrNull
	// ArgStackOrNull is a pointer into the stack or NULL, passed on
	// unchecked (callback contexts: the kernel's ARG_PTR_TO_STACK_OR_NULL).
	ArgStackOrNull
)

// isMem reports whether an argument points at memory the helper accesses.
func (t ArgType) isMem() bool {
	switch t {
	case ArgMapKey, ArgMapValue, ArgUninitMapValue, ArgMem, ArgUninitMem, ArgConstStr, ArgPtrToLong, ArgMemOrNull, ArgWriteMemOrNull:
		return true
	}
	return false
}

// orNull reports whether a memory argument may be NULL (with a size of 0).
func (t ArgType) orNull() bool { return t == ArgMemOrNull || t == ArgWriteMemOrNull }

// writes reports whether the helper writes a memory argument (MEM_WRITE).
func (t ArgType) writes() bool {
	return t == ArgUninitMapValue || t == ArgUninitMem || t == ArgPtrToLong || t == ArgWriteMemOrNull
}

// uninit reports whether a memory argument may be uninitialised stack the
// helper fills (MEM_UNINIT, the kernel's raw mode).
func (t ArgType) uninit() bool {
	return t == ArgUninitMapValue || t == ArgUninitMem || t == ArgPtrToLong
}

// RetType says what a helper returns in R0.
type RetType uint8

// Return types.
const (
	RetInteger RetType = iota
	RetVoid
	RetMapValueOrNull
	RetRingbufMemOrNull
)

// Proto is a helper prototype.
type Proto struct {
	Name string
	Args [5]ArgType
	Ret  RetType
	// TailCall marks bpf_tail_call.
	TailCall bool
	// PktAccess allows packet pointers as memory arguments (the kernel's
	// pkt_access): "helper access to the packet is not allowed" otherwise.
	PktAccess bool
	// ProgTypes lists the program types that may call the helper, by
	// progtype name (nil: any).
	ProgTypes []string
}

// builtinProtos are the prototypes of the helpers bpfvm implements.
var builtinProtos = map[string]Proto{
	"bpf_map_lookup_elem":      {Args: [5]ArgType{ArgConstMapPtr, ArgMapKey}, Ret: RetMapValueOrNull, PktAccess: true},
	"bpf_map_update_elem":      {Args: [5]ArgType{ArgConstMapPtr, ArgMapKey, ArgMapValue, ArgAnything}, PktAccess: true},
	"bpf_map_delete_elem":      {Args: [5]ArgType{ArgConstMapPtr, ArgMapKey}, PktAccess: true},
	"bpf_map_push_elem":        {Args: [5]ArgType{ArgConstMapPtr, ArgMapValue, ArgAnything}, PktAccess: true},
	"bpf_map_pop_elem":         {Args: [5]ArgType{ArgConstMapPtr, ArgUninitMapValue}},
	"bpf_map_peek_elem":        {Args: [5]ArgType{ArgConstMapPtr, ArgUninitMapValue}},
	"bpf_ktime_get_ns":         {},
	"bpf_ktime_get_boot_ns":    {},
	"bpf_ktime_get_coarse_ns":  {},
	"bpf_jiffies64":            {},
	"bpf_get_prandom_u32":      {},
	"bpf_get_smp_processor_id": {},
	"bpf_get_numa_node_id":     {},
	"bpf_get_current_pid_tgid": {},
	"bpf_get_current_uid_gid":  {},
	"bpf_get_current_comm":     {Args: [5]ArgType{ArgUninitMem, ArgConstSize}},
	"bpf_trace_printk":         {Args: [5]ArgType{ArgMem, ArgConstSize}}, // R3-R5 are read unchecked, as in the kernel
	"bpf_trace_vprintk":        {Args: [5]ArgType{ArgMem, ArgConstSize, ArgMemOrNull, ArgConstSizeOrZero}},
	"bpf_snprintf":             {Args: [5]ArgType{ArgWriteMemOrNull, ArgConstSizeOrZero, ArgConstStr, ArgMemOrNull, ArgConstSizeOrZero}},
	"bpf_tail_call":            {Args: [5]ArgType{ArgCtx, ArgConstMapPtr, ArgAnything}, Ret: RetVoid, TailCall: true},
	"bpf_ringbuf_output":       {Args: [5]ArgType{ArgConstMapPtr, ArgMem, ArgConstSizeOrZero, ArgAnything}},
	"bpf_ringbuf_reserve":      {Args: [5]ArgType{ArgConstMapPtr, ArgConstAllocSize, ArgAnything}, Ret: RetRingbufMemOrNull},
	"bpf_ringbuf_submit":       {Args: [5]ArgType{ArgRingbufMem, ArgAnything}, Ret: RetVoid},
	"bpf_ringbuf_discard":      {Args: [5]ArgType{ArgRingbufMem, ArgAnything}, Ret: RetVoid},
	"bpf_ringbuf_query":        {Args: [5]ArgType{ArgConstMapPtr, ArgAnything}},
	// The networking variant (the kernel's bpf_skb_event_output_proto and
	// bpf_xdp_event_output_proto), for the types whose func_proto gives
	// it. The tracing types' bpf_perf_event_output_proto, and
	// bpf_skb_output and bpf_xdp_output (BPF_PROG_TYPE_TRACING only), are
	// not implemented: bpfvm has no tracing types.
	"bpf_perf_event_output": {Args: [5]ArgType{ArgCtx, ArgConstMapPtr, ArgAnything, ArgMem, ArgConstSizeOrZero},
		ProgTypes: []string{"socket_filter", "sched_cls", "sched_act", "xdp"}},
	"bpf_skb_load_bytes":    {Args: [5]ArgType{ArgCtx, ArgAnything, ArgUninitMem, ArgConstSize}},
	"bpf_skb_store_bytes":   {Args: [5]ArgType{ArgCtx, ArgAnything, ArgMem, ArgConstSize, ArgAnything}},
	"bpf_l3_csum_replace":   {Args: [5]ArgType{ArgCtx, ArgAnything, ArgAnything, ArgAnything, ArgAnything}},
	"bpf_l4_csum_replace":   {Args: [5]ArgType{ArgCtx, ArgAnything, ArgAnything, ArgAnything, ArgAnything}},
	"bpf_csum_diff":         {Args: [5]ArgType{ArgMemOrNull, ArgConstSizeOrZero, ArgMemOrNull, ArgConstSizeOrZero, ArgAnything}, PktAccess: true},
	"bpf_xdp_adjust_head":   {Args: [5]ArgType{ArgCtx, ArgAnything}},
	"bpf_xdp_adjust_tail":   {Args: [5]ArgType{ArgCtx, ArgAnything}},
	"bpf_xdp_adjust_meta":   {Args: [5]ArgType{ArgCtx, ArgAnything}},
	"bpf_redirect":          {Args: [5]ArgType{ArgAnything, ArgAnything}},
	"bpf_redirect_map":      {Args: [5]ArgType{ArgConstMapPtr, ArgAnything, ArgAnything}, ProgTypes: []string{"xdp"}},
	"bpf_loop":              {Args: [5]ArgType{ArgAnything, ArgCallback, ArgStackOrNull, ArgAnything}},
	"bpf_for_each_map_elem": {Args: [5]ArgType{ArgConstMapPtr, ArgCallback, ArgStackOrNull, ArgAnything}},
	"bpf_strtol":            {Args: [5]ArgType{ArgMem, ArgConstSize, ArgAnything, ArgPtrToLong}},
	"bpf_strtoul":           {Args: [5]ArgType{ArgMem, ArgConstSize, ArgAnything, ArgPtrToLong}},
}

// packetHelpers change the packet: every packet pointer is invalid after
// calling them (the kernel's bpf_helper_changes_pkt_data).
var packetHelpers = map[string]bool{
	"bpf_skb_store_bytes": true, "bpf_l3_csum_replace": true, "bpf_l4_csum_replace": true,
	"bpf_xdp_adjust_head": true, "bpf_xdp_adjust_tail": true, "bpf_xdp_adjust_meta": true,
}

// BuiltinProto returns the prototype of a kernel helper bpfvm implements,
// or nil.
func BuiltinProto(id int32) *Proto {
	name := isa.HelperName(id)
	p, ok := builtinProtos[name]
	if !ok {
		return nil
	}
	p.Name = name
	return &p
}
