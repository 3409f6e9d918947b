package helper

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
	// ArgPtrToInt points at 4 initialised, aligned bytes the helper reads
	// and writes (bpf_check_mtu's mtu_len: the kernel's
	// ARG_PTR_TO_FIXED_SIZE_MEM | MEM_WRITE | MEM_ALIGNED of 4 bytes).
	ArgPtrToInt
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
	// ArgWriteMem points at initialised memory the helper reads and
	// writes, whose size is the next argument (the kernel's
	// ARG_PTR_TO_MEM | MEM_WRITE: bpf_fib_lookup's params).
	ArgWriteMem
	// ArgSockCommon is a socket, null-checked: a sock_common, sock or
	// tcp_sock pointer (the kernel's ARG_PTR_TO_SOCK_COMMON).
	ArgSockCommon
	// ArgSockRelease is a socket the helper releases: an ArgSockCommon
	// that carries a reference (the kernel's
	// ARG_PTR_TO_BTF_ID_SOCK_COMMON | OBJ_RELEASE, bpf_sk_release).
	ArgSockRelease
	// ArgSockBTF is a socket as ArgSockRelease takes one, referenced or
	// not, which the helper does not release (the kernel's
	// ARG_PTR_TO_BTF_ID_SOCK_COMMON: bpf_sk_assign).
	ArgSockBTF
	// ArgSockBTFOrNull is an ArgSockBTF or NULL, a socket pointer that
	// may be NULL too (ARG_PTR_TO_BTF_ID_SOCK_COMMON | PTR_MAYBE_NULL:
	// bpf_get_socket_ptr_cookie).
	ArgSockBTFOrNull
	// ArgCtxOrNull is the program's context pointer or NULL (the
	// kernel's ARG_PTR_TO_CTX_OR_NULL).
	ArgCtxOrNull
	// ArgSpinLock points at the bpf_spin_lock of a map value
	// (ARG_PTR_TO_SPIN_LOCK).
	ArgSpinLock
	// ArgMapValueOrNull is ArgMapValue, or NULL (the kernel's
	// ARG_PTR_TO_MAP_VALUE | PTR_MAYBE_NULL).
	ArgMapValueOrNull
	// ArgSocketOrNull is a full socket (struct bpf_sock, null-checked)
	// or NULL: the kernel's ARG_PTR_TO_SOCKET_OR_NULL (sk_lookup's
	// bpf_sk_assign). A pointer that may be NULL passes too.
	ArgSocketOrNull
	// ArgFixedMem points at Proto.ArgSize[i] readable bytes (the
	// kernel's ARG_PTR_TO_FIXED_SIZE_MEM with argN_size: the raw
	// syncookie helpers' headers).
	ArgFixedMem
	// ArgBTFID is a pointer to a kernel object of the struct Proto.ArgBTF
	// names, not NULL, trusted or plain (the kernel's ARG_PTR_TO_BTF_ID:
	// bpf_seq_printf's seq_file).
	ArgBTFID
	// ArgKptrDest points at a referenced kptr field of a map value, at a
	// constant offset (bpf_kptr_xchg's dst: ARG_KPTR_XCHG_DEST).
	ArgKptrDest
	// ArgKptrNew is a referenced pointer of the kptr's type, or NULL,
	// whose reference moves into the field (ARG_PTR_TO_BTF_ID_OR_NULL |
	// OBJ_RELEASE).
	ArgKptrNew
	// ArgConstAllocSizeOrZero is a constant size, zero allowed, of the
	// memory the helper returns (ARG_CONST_ALLOC_SIZE_OR_ZERO:
	// bpf_dynptr_data).
	ArgConstAllocSizeOrZero
	// ArgDynptr points at an initialised dynptr of any kind on the
	// stack, which the helper does not change (ARG_PTR_TO_DYNPTR |
	// MEM_RDONLY).
	ArgDynptr
	// ArgDynptrLocalUninit points at 16 bytes of stack the helper makes
	// a local dynptr (ARG_PTR_TO_DYNPTR | DYNPTR_TYPE_LOCAL | MEM_UNINIT).
	ArgDynptrLocalUninit
	// ArgDynptrRingbufUninit points at 16 bytes of stack the helper makes
	// a ring buffer dynptr, a reference the program must release
	// (ARG_PTR_TO_DYNPTR | DYNPTR_TYPE_RINGBUF | MEM_UNINIT).
	ArgDynptrRingbufUninit
	// ArgDynptrRingbufRelease points at a ring buffer dynptr the helper
	// submits or discards (ARG_PTR_TO_DYNPTR | DYNPTR_TYPE_RINGBUF |
	// OBJ_RELEASE).
	ArgDynptrRingbufRelease
)

// IsDynptr reports whether an argument points at a dynptr.
func (t ArgType) IsDynptr() bool {
	return t >= ArgDynptr && t <= ArgDynptrRingbufRelease
}

// IsMem reports whether an argument points at memory the helper accesses.
func (t ArgType) IsMem() bool {
	switch t {
	case ArgMapKey, ArgMapValue, ArgMapValueOrNull, ArgUninitMapValue, ArgMem, ArgUninitMem, ArgConstStr, ArgPtrToLong, ArgPtrToInt, ArgMemOrNull, ArgWriteMemOrNull, ArgWriteMem, ArgFixedMem:
		return true
	}
	return false
}

// OrNull reports whether a memory argument may be NULL (with a size of 0).
func (t ArgType) OrNull() bool {
	return t == ArgMemOrNull || t == ArgWriteMemOrNull || t == ArgMapValueOrNull
}

// Writes reports whether the helper writes a memory argument (MEM_WRITE).
func (t ArgType) Writes() bool {
	return t == ArgUninitMapValue || t == ArgUninitMem || t == ArgPtrToLong || t == ArgPtrToInt || t == ArgWriteMemOrNull || t == ArgWriteMem
}

// Uninit reports whether a memory argument may be uninitialised stack the
// helper fills (MEM_UNINIT, the kernel's raw mode).
func (t ArgType) Uninit() bool {
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
	// RetMapValue is a value of the map argument, never NULL
	// (bpf_get_local_storage).
	RetMapValue
	// RetSocketOrNull is a struct bpf_sock or NULL (the kernel's
	// RET_PTR_TO_SOCKET_OR_NULL).
	RetSocketOrNull
	// RetSockCommonOrNull is a socket as struct bpf_sock_common shows it,
	// or NULL (RET_PTR_TO_SOCK_COMMON_OR_NULL).
	RetSockCommonOrNull
	// RetTCPSockOrNull is a struct bpf_tcp_sock or NULL
	// (RET_PTR_TO_TCP_SOCK_OR_NULL).
	RetTCPSockOrNull
	// RetKptrOrNull is the old value of the ArgKptrDest field, referenced,
	// or NULL (bpf_kptr_xchg).
	RetKptrOrNull
	// RetBTFIDTrusted is a trusted pointer to a kernel object of the
	// struct Proto.RetBTF names, never NULL (RET_PTR_TO_BTF_ID_TRUSTED:
	// bpf_get_current_task_btf).
	RetBTFIDTrusted
	// RetDynptrMemOrNull is memory inside the dynptr argument, of the
	// constant size argument's size, or NULL (RET_PTR_TO_DYNPTR_MEM_OR_NULL:
	// bpf_dynptr_data).
	RetDynptrMemOrNull
)

// Proto is a helper prototype: what the verifier checks of a call, the
// kernel's struct bpf_func_proto.
type Proto struct {
	// Name is the kernel's name of the helper, for the verifier's messages
	// ("" for a host helper: isa's name for the id, if any).
	Name string
	Args [5]ArgType
	// ArgSize is the size of each ArgFixedMem argument.
	ArgSize [5]int32
	// ArgBTF names the struct of each ArgBTFID argument (the kernel's
	// arg_btf_id).
	ArgBTF [5]string
	Ret    RetType
	// RetBTF names the struct a RetBTFIDTrusted return points to.
	RetBTF string
	// MightSleep says only sleepable programs may call the helper (the
	// kernel's might_sleep: bpf_copy_from_user).
	MightSleep bool
	// TailCall marks bpf_tail_call.
	TailCall bool
	// PktAccess allows packet pointers as memory arguments (the kernel's
	// pkt_access): "helper access to the packet is not allowed" otherwise.
	PktAccess bool
	// ChangesPacket says the helper may move or resize the packet: every
	// packet pointer is invalid after a call (the kernel's
	// bpf_helper_changes_pkt_data).
	ChangesPacket bool
	// Acquire says the returned pointer carries a new reference the
	// program must release (the kernel's is_acquire_function: the socket
	// lookups).
	Acquire bool
	// Cast says the returned pointer is the socket argument seen as
	// another type, carrying its reference if any (the kernel's
	// is_ptr_cast_function: bpf_sk_fullsock, bpf_tcp_sock).
	Cast bool
	// ReadsBTF says the helper reads the kernel's BTF when it runs
	// (bpf_btf_find_by_name_kind): the load finds it as for a call typed
	// by it (runner.Program.KernelTypes).
	ReadsBTF bool
}

// UsesBTF reports whether verifying or running a call needs the kernel's
// BTF: its arguments or return value are typed by it, or it reads it.
func (p *Proto) UsesBTF() bool {
	if p.Ret == RetBTFIDTrusted || p.ReadsBTF {
		return true
	}
	for _, a := range p.Args {
		if a == ArgBTFID {
			return true
		}
	}
	return false
}
