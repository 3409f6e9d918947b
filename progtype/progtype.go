// Package progtype describes program types: the layout of the context a
// program receives in R1, which fields it may read and write, which of them
// are pointers into the packet, which helpers it may call (the kernel's
// func_proto for the type, by privilege), the values it may return, and how
// test runs present their input. The runtime uses it to run programs, the
// verifier to check context accesses and helper calls, and the rewrite to
// convert context accesses. Host applications describe their own program
// types with it to embed eBPF as an extension language.
//
// Each family of kernel types has a file: raw.go, xdp.go, skb.go (the
// __sk_buff layout and test-run setup the skb types share),
// socket_filter.go, tc.go, cgroup_skb.go, lwt.go, sockmap.go (sk_skb,
// sk_msg), sock_ops.go, cgroup_sock.go (cgroup_sock, cgroup_sock_addr),
// sk_lookup.go, sk_reuseport.go, flow_dissector.go, cgroup.go (cgroup_sysctl, cgroup_sockopt,
// cgroup_device), kprobe.go, tracepoint.go, raw_tracepoint.go,
// perf_event.go, tracing.go (tp_btf, fentry, fexit, fmod_ret, whose context
// is their attach target's arguments: BTFArgs), lsm.go (LSM programs, typed
// by their hook's prototype), iter.go (iterators), syscall.go (syscall
// programs); helpers.go holds the shared helper sets
// (bpf_base_func_proto, bpf_sk_base_func_proto, cgroup_common_func_proto,
// cgroup_current_func_proto) they compose, tracing_helpers.go the tracing
// types' (bpf_tracing_func_proto and the sets over it). Where the kernel's rules depend
// on the expected attach type, each attach type has its Type (OfAttach).
package progtype

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/internal/errs"
)

// ErrNotSupported is wrapped by errors for inputs the kernel takes and
// bpfvm does not model. It also matches ebpf.ErrNotSupported.
var ErrNotSupported error = errs.New("not supported", ebpf.ErrNotSupported)

// Kind says what a context field holds.
type Kind uint8

// Field kinds.
const (
	// Scalar is plain data stored in the context.
	Scalar Kind = iota
	// PacketData loads the address of the first packet byte.
	PacketData
	// PacketEnd loads the address one past the last packet byte.
	PacketEnd
	// PacketMeta loads the address of the packet's metadata area.
	PacketMeta
	// FlowKeys loads the address of the struct bpf_flow_keys a
	// flow_dissector program fills (FlowKeysSize bytes).
	FlowKeys
	// SockCommonOrNull loads the address of the run's socket, a struct
	// bpf_sock read as SockCommon describes (Type.Socket), or 0 when the
	// run has none.
	SockCommonOrNull
	// Socket loads the address of the run's socket, a struct bpf_sock
	// read as Sock describes (Type.Socket), which every run has.
	Socket
	// SocketOrNull loads the address of the run's socket, a struct
	// bpf_sock read as Sock describes, or 0 when the run has none.
	SocketOrNull
	// TPBuffer loads the address of the writable buffer of a
	// raw_tracepoint_writable program's tracepoint, its first argument
	// (the kernel's PTR_TO_TP_BUFFER): memory the program reads and
	// writes at constant offsets, as far as the tracepoint gives.
	TPBuffer
	// KernelObject is a trusted pointer to the kernel struct named by
	// Field.Object (the kernel's PTR_TO_BTF_ID | PTR_TRUSTED, as
	// netfilter's bpf_nf_ctx has), which the context holds.
	KernelObject
)

// FlowKeysSize is the size of struct bpf_flow_keys.
const FlowKeysSize = 56

func (k Kind) String() string {
	switch k {
	case Scalar:
		return "scalar"
	case PacketData:
		return "pkt"
	case PacketEnd:
		return "pkt_end"
	case PacketMeta:
		return "pkt_meta"
	case FlowKeys:
		return "flow_keys"
	case SockCommonOrNull:
		return "sock_common_or_null"
	case Socket:
		return "sock"
	case SocketOrNull:
		return "sock_or_null"
	case TPBuffer:
		return "tp_buffer"
	case KernelObject:
		return "trusted_ptr_"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Field is one field of a context structure. Its flags are the kernel's
// per-field rules of a program type's is_valid_access (net/core/filter.c),
// so that a new program type is a table of fields, not code.
type Field struct {
	Name string
	// Offset and Size of the field in the context as the program sees it.
	Offset, Size uint32
	Read, Write  bool
	// Narrow allows loads of any power-of-two size smaller than the field,
	// at offsets inside it aligned to that size (the kernel's
	// bpf_ctx_narrow_access_ok): the low byte of a u32, or its third.
	Narrow bool
	// NarrowStart limits narrow loads to the field's first byte, where the
	// kernel matches the field by its offset alone (bpf_sock.family: a
	// byte of it at its offset, never at the next).
	NarrowStart bool
	// NarrowSpan limits narrow loads to the field's first NarrowSpan bytes
	// (0: all of it), where a narrower kernel field is shown in a wider
	// one (bpf_sock.dst_port, a __be16 read as a u32 or in halves and
	// bytes of its two bytes).
	NarrowSpan uint32
	// NarrowMin is the smallest narrow load (0: any), where the kernel's
	// field behind is wider than a byte (sk_reuseport_md.eth_protocol).
	NarrowMin uint32
	// Wide allows 8-byte accesses at 8-byte aligned offsets covering this
	// field and the next, both Wide: the kernel's bpf_ctx_wide_access_ok
	// for u32 arrays (bpf_sock_addr.user_ip6), the access Read and Write
	// as the first field's.
	Wide bool
	// ReadCap and WriteCap are the least privilege a load needs to read or
	// write the field (CapNone for any), as is_valid_access functions test
	// bpf_token_capable; CapPerfmon stands for CAP_SYS_ADMIN too, which a
	// privileged (root) load has.
	ReadCap, WriteCap Cap
	// Memory makes the field plain memory (__sk_buff.cb[]): loads and, if
	// Write, stores of any size inside it, aligned to that size.
	Memory bool
	// StartLimit, for a Memory field, is the context offset every access
	// must start below (0 for none): a syscall program's accesses start
	// below U16_MAX and may end at 65536.
	StartLimit uint32
	Kind       Kind
	// Object names the kernel struct a KernelObject field points to.
	Object string
	// Backing is the width of the kernel's storage behind a scalar field
	// narrower than Size (skb->protocol is a u16 behind a u32 field); 0 is
	// Size. As in the kernel's context conversion, stores keep only that
	// many bytes, and a load at least that wide reads the stored value
	// whatever its offset in the field.
	Backing uint32
	// NoneMinusOne makes a load of the whole field, wider than Backing,
	// give all ones over the field's Size when the stored value is all
	// ones, the stored value zero-extended otherwise; narrower loads read
	// the stored bytes. That is what Linux 6.18.44 gives for
	// bpf_sock.rx_queue_mapping, a u16 whose NO_QUEUE_MAPPING a u32 load
	// reads as 0xffffffff (earlier 6.18 builds gave a 64-bit -1, beyond
	// the bound their verifier assumed).
	NoneMinusOne bool
	// StoreLimit drops stores of a value at or above it (0 for none), as
	// the kernel's conversion of queue_mapping drops NO_QUEUE_MAPPING and
	// above: a register compared unsigned over 64 bits, an immediate as
	// the signed 32-bit value it is.
	StoreLimit uint64
	// Input says a test run takes the field from the context input. A
	// non-zero input in any other field is refused, as the kernel's
	// BPF_PROG_TEST_RUN refuses it with EINVAL.
	Input bool
	// Output says the test run writes the field back to the context
	// output; the rest of the output is the input as given.
	Output bool
}

// Op is the kind of a context access.
type Op uint8

// Context access kinds.
const (
	// Load is a load (BPF_LDX | BPF_MEM).
	Load Op = iota
	// LoadSigned is a sign-extending load (BPF_LDX | BPF_MEMSX).
	LoadSigned
	// Store is a store of a register or an immediate.
	Store
)

// Type describes a program type.
type Type struct {
	// Name as in the kernel ("xdp", "sched_cls") or chosen by the host.
	Name string
	// ContextSize is the size of the context structure; 0 means R1 points
	// at the input data and R2 holds its length (programs of unspecified
	// type, as in the ISA conformance suite).
	ContextSize uint32
	// Fields of the context; bytes outside every field are inaccessible.
	Fields []Field
	// ContextNames are the BTF struct names that stand for the context in
	// a function's prototype (the kernel's ctx type and the kernel struct
	// it projects, "xdp_md" and "xdp_buff"): a global function's argument
	// pointing at one of them is the context.
	ContextNames []string
	// PacketReadOnly says programs may read the packet through its
	// pointers but not write it (the kernel's may_access_direct_pkt_data:
	// cgroup_skb, lwt_in, lwt_out, sk_reuseport).
	PacketReadOnly bool
	// MinData is the smallest input a test run accepts.
	MinData int
	// NetworkHeader makes the packet start after the 14-byte Ethernet header
	// (socket filters see the packet from the network header on).
	NetworkHeader bool
	// Helpers are the helpers programs of this type may call (the
	// kernel's func_proto for the type, CanCall); nil allows every helper.
	Helpers HelperSet
	// Attach is the expected attach type the type stands for
	// (ProgramSpec.AttachType) where the kernel's rules depend on it
	// (OfAttach); 0 otherwise.
	Attach ebpf.AttachType
	// Unimplemented names helpers of the set that the kernel serves for
	// this type with a function of the type's own (flow_dissector's
	// skb_load_bytes is bpf_flow_dissector_load_bytes), which bpfvm does
	// not implement: a program calling one fails to load as calling a
	// helper bpfvm lacks, rather than run another function.
	Unimplemented map[string]bool
	// CheckReturn makes the verifier check that R0 at exit is within
	// [ReturnMin, ReturnMax]: the kernel's check_return_code. The packet
	// types (xdp, tc, socket filter) have no range.
	CheckReturn          bool
	ReturnMin, ReturnMax int64
	// Setup fills the context before a run, after the context input (given
	// says whether the run had one) has been copied, from the input frame
	// and the packet the program sees: lengths, protocol, defaults of
	// fields the input left zero. It returns an error for an input the
	// kernel's test run refuses. nil for none.
	Setup func(ctx, frame, pkt []byte, given bool) error
	// Skb says the context is struct __sk_buff over a socket buffer,
	// which test runs model (runner.Skb): the skb helpers keep its
	// fields, the packet has room to grow to runner.SkbMaxLen bytes.
	Skb bool
	// Socket fills the run's socket (SockSize bytes, zero before) from
	// the context after Setup and the input frame, and reports whether
	// the run has one: what a SockCommonOrNull field points at. nil for
	// none.
	Socket func(sk, ctx, frame []byte) bool
	// Keys, for a type whose programs fill a struct bpf_flow_keys
	// (flow_dissector), is its test run; nil for none.
	Keys *KeysRun
	// Hook, for a type whose programs run at a netfilter hook
	// (netfilter), is its test run; nil for the others.
	Hook *HookRun
	// BTFArgs says the context is the arguments of the program's attach
	// target, u64 slots typed by its BTF prototype (the tracing types):
	// the verifier checks accesses against the target (Fields is empty).
	BTFArgs bool
	// TargetHelpers, for a type whose helper set depends on the
	// program's attach target and sleepability (LSM programs: the
	// kernel's bpf_lsm_func_proto by hook), gives the set for a program
	// attached to target (the name ProgramSpec.AttachTo gives); nil
	// keeps Helpers.
	TargetHelpers func(target string, sleepable bool) HelperSet
	// Sleepable says programs of the type may be sleepable
	// (BPF_F_SLEEPABLE: the kernel's can_be_sleepable), where their
	// attach target allows it.
	Sleepable bool
	// MetaInput returns how many leading bytes of a test run's input are
	// packet metadata rather than packet (xdp_md.data of the input), after
	// Setup accepted the context; nil for none.
	MetaInput func(ctx []byte) uint32
	// Trace, for a tracing type (kprobe, tracepoint, raw tracepoints,
	// perf events), is its test run: the context is the host's, from the
	// context input; there is no packet; the helpers read the world the
	// run gives (runner.Trace). nil for the others.
	Trace *TraceRun
}

// TraceRun is the test run of a tracing type (Type.Trace).
type TraceRun struct {
	// Kernel says the kernel has a test run for the type (raw
	// tracepoints: bpf_prog_test_run_raw_tp), whose rules runs follow: a
	// context input of at least the bytes the program reads of it (the
	// verifier's max_ctx_offset) and at most ContextSize; no packet,
	// repetitions or context output. The types without one (kprobe,
	// tracepoint, perf_event) run on any context input, zero past its
	// end, repeat, and give the context back as they leave it.
	Kernel bool
	// WriteBack, with Kernel, says the kernel's test run copies the
	// context back to the input after the run (bpf_prog_test_run_syscall)
	// and has no context output of its own: RunOptions.ContextOut
	// receives the context, as long as the input, as cilium/ebpf maps it.
	WriteBack bool
	// MaxInput, with Kernel, is the largest context input the run takes
	// (0: ContextSize).
	MaxInput uint32
}

// KeysRun is the test run of a type whose programs fill a struct
// bpf_flow_keys through a FlowKeys field (flow_dissector): the context is
// the type's own (no context input reaches it), the context input is the
// keys' input, the output packet the keys after the run, and the context
// output the keys' input as given.
type KeysRun struct {
	// Check refuses a keys input the kernel's test run refuses.
	Check func(in []byte) error
	// Reset fills the keys before each repetition from the input (zero
	// when none was given) and the frame.
	Reset func(keys, in, frame []byte)
	// Finish adjusts the keys after the last repetition (each repetition
	// starts from Reset, so only the last one's adjustment is seen).
	Finish func(keys []byte, frame int)
}

// ForTarget returns the type as it is for a program attached to target
// (ProgramSpec.AttachTo), sleepable or not: t itself, or for a type whose
// helper set depends on them (TargetHelpers) a copy with that set.
func (t *Type) ForTarget(target string, sleepable bool) *Type {
	if t.TargetHelpers == nil {
		return t
	}
	at := *t
	at.Helpers = t.TargetHelpers(target, sleepable)
	at.TargetHelpers = nil
	return &at
}

// Field returns the field containing [off, off+size), or nil.
func (t *Type) Field(off, size uint32) *Field {
	for i := range t.Fields {
		f := &t.Fields[i]
		if off >= f.Offset && off+size <= f.Offset+f.Size {
			return f
		}
	}
	return nil
}

// Access checks a context access of size bytes at off by a privileged load
// (AccessAs with CapPerfmon) and returns the field.
func (t *Type) Access(off, size uint32, op Op) (*Field, error) {
	return t.AccessAs(off, size, op, CapPerfmon)
}

// AccessAs checks a context access of size bytes at off by a load with
// privilege c and returns the field. As in the kernel, every access is
// aligned to its size; whole-field accesses are allowed as the field's
// Read and Write (and ReadCap, WriteCap) say; narrower loads only for
// Narrow fields; accesses of any size inside Memory fields; 8-byte ones
// across two Wide fields; pointer fields only as whole loads, never
// sign-extending ones.
func (t *Type) AccessAs(off, size uint32, op Op, c Cap) (*Field, error) {
	f := t.Field(off, size)
	if f == nil && size == 8 && off%8 == 0 {
		f = t.wide(off)
	}
	if f == nil || !f.allows(off, size, op, c) {
		return nil, fmt.Errorf("invalid bpf_context access off=%d size=%d", off, size)
	}
	return f, nil
}

// wide returns the first of two Wide fields an 8-byte access at off covers.
func (t *Type) wide(off uint32) *Field {
	lo, hi := t.Field(off, 4), t.Field(off+4, 4)
	if lo == nil || hi == nil || !lo.Wide || !hi.Wide || lo.Size != 4 || hi.Size != 4 {
		return nil
	}
	return lo
}

// Convert returns the offset and size in the context an allowed access
// becomes, the kernel's convert_ctx_access for a field stored as it is
// shown but in Backing bytes: same as given but for the whole stores and
// the wide loads of such a field.
func (f *Field) Convert(off, size uint32, op Op) (uint32, uint32) {
	if f.Kind != Scalar || f.Memory || f.Backing == 0 || f.Backing >= f.Size {
		return off, size
	}
	switch {
	case op == Store:
		return f.Offset, f.Backing
	case size >= f.Backing:
		// The rest of the field is zero: loading size bytes from its
		// start reads the stored value, zero-extended.
		return f.Offset, size
	}
	return off, size
}

// MinusOne reports whether a load of size bytes of the field reads the
// kernel's converted value, all ones for the stored all-ones
// (NoneMinusOne).
func (f *Field) MinusOne(size uint32) bool {
	return f.NoneMinusOne && f.Kind == Scalar && size > f.Backing
}

// None is the stored value a NoneMinusOne field shows as -1: all ones in
// Backing bytes.
func (f *Field) None() uint64 { return 1<<(8*f.Backing) - 1 }

// LoadConverted is a MinusOne load of the field from its stored value.
func (f *Field) LoadConverted(stored uint64) uint64 {
	if stored == f.None() {
		return 1<<(8*f.Size) - 1
	}
	return stored
}

// Truncate clears the bytes of a context's fields above their Backing
// width, as storing an input into the kernel's narrower field does.
func (t *Type) Truncate(ctx []byte) {
	for _, f := range t.Fields {
		if f.Kind == Scalar && !f.Memory && f.Backing != 0 && f.Backing < f.Size {
			clear(ctx[f.Offset+f.Backing : f.Offset+f.Size])
		}
	}
}

func (f *Field) allows(off, size uint32, op Op, c Cap) bool {
	switch {
	case size == 0 || size&(size-1) != 0 || off%size != 0:
		return false
	case op == Store && (!f.Write || c < f.WriteCap), op != Store && (!f.Read || c < f.ReadCap):
		return false
	case f.Kind != Scalar:
		return op == Load && off == f.Offset && size == f.Size
	case f.Memory:
		return f.StartLimit == 0 || off < f.StartLimit
	case size == f.Size:
		return true
	case f.Wide && size == 8:
		return true
	case !f.Narrow || op == Store || size > f.Size || size < f.NarrowMin:
		return false
	case f.NarrowStart && off != f.Offset:
		return false
	}
	return f.NarrowSpan == 0 || off+size <= f.Offset+f.NarrowSpan
}

// CheckInput checks a context input against the fields a test run takes
// from it: a non-zero byte in any other field is refused, as the kernel
// refuses it. Types without Input fields (host types) take the whole
// context.
func (t *Type) CheckInput(ctx []byte) error {
	input := false
	for _, f := range t.Fields {
		input = input || f.Input
	}
	if !input {
		return nil
	}
	for off, b := range ctx {
		if b == 0 {
			continue
		}
		f := t.Field(uint32(off), 1)
		if f == nil {
			return fmt.Errorf("context input: byte %d is not in a field", off)
		}
		if !f.Input {
			return fmt.Errorf("context input: field %s (offset %d) is not an input", f.Name, f.Offset)
		}
	}
	return nil
}

// Output turns the context after a run into what the kernel's test run
// returns as its context output: the input (in, as given), with the Output
// fields written back from the run, packet pointers as offsets from the
// start of the packet's metadata (meta, data and end are the run's packet
// addresses). Types without Input fields return the whole context.
func (t *Type) Output(ctx, in []byte, meta, data, end uint64) {
	input := false
	for _, f := range t.Fields {
		input = input || f.Input
	}
	if !input {
		return
	}
	out := make([]byte, len(ctx))
	copy(out, in)
	for _, f := range t.Fields {
		if !f.Output || f.Offset+f.Size > uint32(len(ctx)) {
			continue
		}
		b := out[f.Offset : f.Offset+f.Size]
		switch f.Kind {
		case PacketData:
			putUint(b, data-meta)
		case PacketEnd:
			putUint(b, end-meta)
		case PacketMeta:
			clear(b)
		default:
			copy(b, ctx[f.Offset:])
		}
	}
	copy(ctx, out)
}

// putUint stores v in b, 4 or 8 bytes, in the host's (little-endian) order.
func putUint(b []byte, v uint64) {
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
}

// Validate checks a host-defined type for mistakes.
func (t *Type) Validate() error {
	if t.Name == "" {
		return fmt.Errorf("program type without a name")
	}
	if t.Skb && t.ContextSize < skbContextSize {
		// The skb helpers keep the fields of a whole struct __sk_buff.
		return fmt.Errorf("program type %s: a socket buffer's context of %d bytes, struct __sk_buff has %d", t.Name, t.ContextSize, skbContextSize)
	}
	for i, f := range t.Fields {
		if f.Size == 0 || f.Offset+f.Size > t.ContextSize {
			return fmt.Errorf("program type %s: field %s (off %d size %d) outside a %d byte context", t.Name, f.Name, f.Offset, f.Size, t.ContextSize)
		}
		if !f.Memory && (f.Size > 8 || f.Size&(f.Size-1) != 0 || f.Offset%f.Size != 0) {
			// Accesses are aligned to their size, so such a field could
			// never be accessed whole.
			return fmt.Errorf("program type %s: field %s (off %d size %d) is not a 1, 2, 4 or 8 byte field aligned to its size (or Memory)", t.Name, f.Name, f.Offset, f.Size)
		}
		if f.NoneMinusOne && (f.Backing == 0 || f.Backing >= f.Size) {
			return fmt.Errorf("program type %s: field %s: -1 for none needs a backing narrower than the field", t.Name, f.Name)
		}
		if f.Backing != 0 && (f.Backing > f.Size || f.Backing&(f.Backing-1) != 0) {
			return fmt.Errorf("program type %s: field %s: backing of %d bytes for a %d byte field", t.Name, f.Name, f.Backing, f.Size)
		}
		if f.Wide && (f.Size != 4 || f.Kind != Scalar) {
			return fmt.Errorf("program type %s: wide field %s must be a 4-byte scalar", t.Name, f.Name)
		}
		if f.NarrowSpan > f.Size || f.NarrowMin > f.Size {
			return fmt.Errorf("program type %s: field %s: narrow loads limited beyond its %d bytes", t.Name, f.Name, f.Size)
		}
		if (f.Kind == FlowKeys || f.Kind == SockCommonOrNull || f.Kind == Socket || f.Kind == SocketOrNull || f.Kind == TPBuffer || f.Kind == KernelObject) && f.Size != 8 {
			return fmt.Errorf("program type %s: pointer field %s must be 8 bytes", t.Name, f.Name)
		}
		if f.Kind != Scalar && f.Size != 4 && f.Size != 8 {
			return fmt.Errorf("program type %s: pointer field %s must be 4 or 8 bytes", t.Name, f.Name)
		}
		for _, g := range t.Fields[:i] {
			if f.Offset < g.Offset+g.Size && g.Offset < f.Offset+f.Size {
				return fmt.Errorf("program type %s: fields %s and %s overlap", t.Name, g.Name, f.Name)
			}
		}
	}
	return nil
}

// ErrAttachType is wrapped by errors for an expected attach type the
// program type does not take, which the kernel refuses with EINVAL.
var ErrAttachType = errors.New("invalid expected attach type")

// Of returns the description of a kernel program type bpfvm runs, loaded
// with expected attach type 0 (OfAttach); an unspecified type is Raw.
func Of(t ebpf.ProgramType) (*Type, error) {
	return OfAttach(t, 0)
}

// OfAttach returns the description of a kernel program type bpfvm runs,
// loaded with expected attach type a (ProgramSpec.AttachType), as the
// kernel's bpf_prog_load_check_attach takes it: the types whose rules
// depend on it have one description per attach type, and refuse the
// attach types they do not take (ErrAttachType); the others ignore it. A
// cgroup_sock program of attach type 0 is a socket creation one, as the
// kernel fixes it up.
func OfAttach(t ebpf.ProgramType, a ebpf.AttachType) (*Type, error) {
	byAttach := func(m map[ebpf.AttachType]*Type) (*Type, error) {
		if pt := m[a]; pt != nil {
			return pt, nil
		}
		return nil, fmt.Errorf("program type %s: attach type %s: %w", t, a, ErrAttachType)
	}
	switch t {
	case ebpf.UnspecifiedProgram:
		return Raw, nil
	case ebpf.XDP:
		return XDP, nil
	case ebpf.SocketFilter:
		return SocketFilter, nil
	case ebpf.SchedCLS:
		return SchedCLS, nil
	case ebpf.SchedACT:
		return SchedACT, nil
	case ebpf.CGroupSKB:
		return byAttach(map[ebpf.AttachType]*Type{
			ebpf.AttachCGroupInetIngress: CGroupSKBIngress,
			ebpf.AttachCGroupInetEgress:  CGroupSKBEgress,
		})
	case ebpf.SkSKB:
		return SKSKB, nil
	case ebpf.SkMsg:
		return SKMsg, nil
	case ebpf.SockOps:
		if hasRetval(a) {
			return sockOpsRetval, nil
		}
		return SockOps, nil
	case ebpf.CGroupSock:
		if a == 0 {
			a = ebpf.AttachCGroupInetSockCreate
		}
		return byAttach(cgroupSockTypes)
	case ebpf.CGroupSockAddr:
		return byAttach(cgroupSockAddrTypes)
	case ebpf.SkLookup:
		return byAttach(map[ebpf.AttachType]*Type{ebpf.AttachSkLookup: SKLookup})
	case ebpf.Netfilter:
		return byAttach(map[ebpf.AttachType]*Type{ebpf.AttachNetfilter: Netfilter})
	case ebpf.CGroupSysctl:
		if !hasRetval(a) {
			return cgroupSysctlNoRetval, nil
		}
		return CGroupSysctl, nil
	case ebpf.CGroupSockopt:
		return byAttach(map[ebpf.AttachType]*Type{
			ebpf.AttachCGroupSetsockopt: CGroupSetsockopt,
			ebpf.AttachCGroupGetsockopt: CGroupGetsockopt,
		})
	case ebpf.CGroupDevice:
		if !hasRetval(a) {
			return cgroupDeviceNoRetval, nil
		}
		return CGroupDevice, nil
	case ebpf.Tracing:
		return byAttach(tracingTypes)
	case ebpf.LSM:
		return byAttach(lsmTypes)
	case ebpf.SkReuseport:
		return byAttach(map[ebpf.AttachType]*Type{
			0:                                     SKReuseport,
			ebpf.AttachSkReuseportSelect:          SKReuseport,
			ebpf.AttachSkReuseportSelectOrMigrate: SKReuseport,
		})
	case ebpf.FlowDissector:
		return FlowDissector, nil
	case ebpf.LWTIn:
		return LWTIn, nil
	case ebpf.LWTOut:
		return LWTOut, nil
	case ebpf.LWTXmit:
		return LWTXmit, nil
	case ebpf.LWTSeg6Local:
		return LWTSeg6Local, nil
	case ebpf.Kprobe:
		// The kernel takes any expected attach type for kprobes; its
		// multi-attach ones change only where the probed address and the
		// cookie come from, which the run's world gives either way.
		if a == ebpf.AttachTraceKprobeSession || a == uprobeSession {
			return kprobeSession, nil
		}
		return Kprobe, nil
	case ebpf.TracePoint:
		return Tracepoint, nil
	case ebpf.RawTracepoint:
		return RawTracepoint, nil
	case ebpf.RawTracepointWritable:
		return RawTracepointWritable, nil
	case ebpf.PerfEvent:
		return PerfEvent, nil
	case ebpf.Syscall:
		// bpf_prog_load_check_attach: none but 0.
		return byAttach(map[ebpf.AttachType]*Type{0: Syscall})
	}
	return nil, fmt.Errorf("program type %s: %w", t, ErrNotSupported)
}
