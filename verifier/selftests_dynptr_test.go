package verifier_test

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/maps"
)

// Dynptrs (the kernel's dynptr_fail.c and dynptr_success.c rules, with
// programs of our own): the stack slots that hold one, their kinds, their
// release, and the slices taken from them.
func TestDynptrs(t *testing.T) {
	rb := []maps.Spec{{Name: "rb", Type: maps.RingBuf, MaxEntries: 4096}}
	rbArr := []maps.Spec{{Name: "rb", Type: maps.RingBuf, MaxEntries: 4096}, arrayMap}
	const (
		out     = "\nr0 = 0\nexit"
		reserve = "r1 = map[fd:0] ll\nr2 = 16\nr3 = 0\nr4 = r10\nr4 += -16\ncall bpf_ringbuf_reserve_dynptr#198\n"
		submit  = "r1 = r10\nr1 += -16\nr2 = 0\ncall bpf_ringbuf_submit_dynptr#199\n"
		discard = "r1 = r10\nr1 += -16\nr2 = 0\ncall bpf_ringbuf_discard_dynptr#200\n"
		end     = "\nout:\nr0 = 0\nexit"
		// A local dynptr at fp-16 over the 8 bytes of array element 0
		// (bpf_dynptr_from_mem takes map values only).
		fromMem = "*(u32 *)(r10 -4) = 0\nr1 = map[fd:1] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto out\nr7 = r0\nr1 = r0\nr2 = 8\nr3 = 0\nr4 = r10\nr4 += -16\ncall bpf_dynptr_from_mem#197\n"
		random  = "call bpf_get_prandom_u32#7\nr6 = r0\n"
		// bpf_dynptr_read(fp-32, 8, fp-16, 0, 0).
		read = "r1 = r10\nr1 += -32\nr2 = 8\nr3 = r10\nr3 += -16\nr4 = 0\nr5 = 0\ncall bpf_dynptr_read#201\n"
		// bpf_dynptr_write(fp-16, 0, fp-32, 8, 0).
		write = "*(u64 *)(r10 -32) = 7\nr1 = r10\nr1 += -16\nr2 = 0\nr3 = r10\nr3 += -32\nr4 = 8\nr5 = 0\ncall bpf_dynptr_write#202\n"
		// R0 = bpf_dynptr_data(fp-16, 0, 8).
		data = "r1 = r10\nr1 += -16\nr2 = 0\nr3 = 8\ncall bpf_dynptr_data#203\n"
	)
	tc := ebpf.SchedCLS
	fromSkb := "r6 = r1\nr2 = 0\nr3 = r10\nr3 += -16\ncall bpf_dynptr_from_skb#0\n"
	fromXdp := "r6 = r1\nr2 = 0\nr3 = r10\nr3 += -16\ncall bpf_dynptr_from_xdp#0\n"
	// R0 = bpf_dynptr_slice(fp-16, 0, NULL, 4), and the _rdwr one.
	slice := "r1 = r10\nr1 += -16\nr2 = 0\nr3 = 0\nr4 = 4\ncall bpf_dynptr_slice#0\n"
	sliceRdwr := "r1 = r10\nr1 += -16\nr2 = 0\nr3 = 0\nr4 = 4\ncall bpf_dynptr_slice_rdwr#0\n"
	// g(const struct bpf_dynptr *), a global function.
	dynptrG := map[int]*btf.Func{1: global("g", btfInt, &btf.Pointer{Target: &btf.Const{Type: &btf.Struct{Name: "bpf_dynptr", Size: 16}}})}
	callG := "r1 = r10\nr1 += -16\ncall g\n"
	gRead := "\ng: r3 = r1\nr1 = r10\nr1 += -8\nr2 = 8\nr4 = 0\nr5 = 0\ncall bpf_dynptr_read#201\nr0 = 0\nexit"
	cases := []vcase{
		// Local dynptrs.
		{name: "from mem and read", asm: fromMem + read + end},
		{name: "from mem and write", asm: fromMem + write + end},
		{name: "from mem twice", asm: fromMem + fromMem + read + end},
		{name: "from map value", maps: rbArr, asm: "*(u32 *)(r10 -4) = 0\nr1 = map[fd:1] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto out\nr1 = r0\nr2 = 8\nr3 = 0\nr4 = r10\nr4 += -24\ncall bpf_dynptr_from_mem#197\nr1 = r10\nr1 += -40\nr2 = 8\nr3 = r10\nr3 += -24\nr4 = 0\nr5 = 0\ncall bpf_dynptr_read#201\n" + end},
		{name: "read uninit", asm: read + end, err: "Expected an initialized dynptr as arg #2", kmsg: true},
		{name: "offset not aligned", asm: fromMem + "r1 = r7\nr2 = 8\nr3 = 0\nr4 = r10\nr4 += -12\ncall bpf_dynptr_from_mem#197" + end, err: "cannot pass in dynptr at an offset=-12", kmsg: true},
		{name: "one slot only", asm: fromMem + "r1 = r7\nr2 = 8\nr3 = 0\nr4 = r10\nr4 += -8\ncall bpf_dynptr_from_mem#197" + end, err: "cannot pass in dynptr at an offset=-8", kmsg: true},
		{name: "variable offset", asm: random + "r6 &= 8\n" + fromMem + "r1 = r7\nr2 = 8\nr3 = 0\nr4 = r10\nr4 += -32\nr4 += r6\ncall bpf_dynptr_from_mem#197" + end, err: "dynptr has to be at a constant offset", kmsg: true},
		{name: "not on stack", asm: "r6 = r1\n" + fromMem + "r1 = r7\nr2 = 8\nr3 = 0\nr4 = r6\ncall bpf_dynptr_from_mem#197" + end, err: "R4 type=ctx expected=fp, dynptr_ptr", kmsg: true},
		{name: "store destroys local", asm: fromMem + "*(u64 *)(r10 -16) = 0\n" + read + end, err: "Expected an initialized dynptr as arg #2", kmsg: true},
		{name: "store into second half", asm: fromMem + "*(u32 *)(r10 -4) = 0\n" + read + end, err: "Expected an initialized dynptr as arg #2", kmsg: true},
		{name: "load from dynptr", asm: fromMem + "r0 = *(u64 *)(r10 -16)\nexit" + end, err: "invalid read from stack off -16+0 size 8", kmsg: true},
		{name: "helper reads dynptr bytes", maps: rbArr, asm: fromMem + "r1 = map[fd:1] ll\nr2 = r10\nr2 += -16\ncall bpf_map_lookup_elem#1" + end, err: "invalid read from stack R2 off -16+0 size 4", kmsg: true},
		{name: "helper fills dynptr bytes", asm: fromMem + "r1 = r10\nr1 += -16\nr2 = 8\nr3 = r10\nr3 += -16\nr4 = 0\nr5 = 0\ncall bpf_dynptr_read#201" + end, err: "potential write to dynptr at off=-16 disallowed", kmsg: true},
		{name: "release local", asm: fromMem + submit + end, err: "arg 1 is an unacquired reference", kmsg: true},
		{name: "release uninit", asm: submit + end, err: "arg 1 is an unacquired reference", kmsg: true},
		{name: "from mem flags any", asm: fromMem + "r1 = r7\nr2 = 8\nr3 = 5\nr4 = r10\nr4 += -16\ncall bpf_dynptr_from_mem#197\n" + read + end},
		{name: "from mem of stack", asm: "*(u64 *)(r10 -24) = 0\nr1 = r10\nr1 += -24\nr2 = 8\nr3 = 0\nr4 = r10\nr4 += -16\ncall bpf_dynptr_from_mem#197\n" + read + end, err: "Unsupported reg type fp for bpf_dynptr_from_mem data", kmsg: true},

		// Ring buffer dynptrs.
		{name: "reserve submit", maps: rb, asm: reserve + submit + end},
		{name: "reserve discard", maps: rb, asm: reserve + discard + end},
		{name: "reserve read write submit", maps: rb, asm: reserve + write + read + submit + end},
		{name: "reserve leak", maps: rb, asm: reserve + end, err: "Unreleased reference id=", klog: "Unreleased reference id="},
		{name: "reserve leak on one path", maps: rb, asm: random + reserve + "if r6 == 0 goto out\n" + submit + "" + end, err: "Unreleased reference", klog: "Unreleased reference"},
		{name: "use after submit", maps: rb, asm: reserve + submit + read + end, err: "Expected an initialized dynptr as arg #2", kmsg: true},
		{name: "submit twice", maps: rb, asm: reserve + submit + submit + end, err: "arg 1 is an unacquired reference", kmsg: true},
		{name: "store over ringbuf dynptr", maps: rb, asm: reserve + "*(u64 *)(r10 -8) = 0\n" + submit + end, err: "cannot overwrite referenced dynptr", kmsg: true},
		{name: "reserve over ringbuf dynptr", maps: rb, asm: reserve + reserve + submit + end, err: "cannot overwrite referenced dynptr", kmsg: true},
		{name: "from mem over ringbuf dynptr", asm: reserve + fromMem + submit + end, err: "cannot overwrite referenced dynptr", kmsg: true},
		{name: "reserve over local", asm: fromMem + reserve + submit + end},
		{name: "reserve wrong map", maps: rbArr, asm: "r1 = map[fd:1] ll\nr2 = 16\nr3 = 0\nr4 = r10\nr4 += -16\ncall bpf_ringbuf_reserve_dynptr#198\n" + submit + end, err: "cannot pass map_type 2 into func bpf_ringbuf_reserve_dynptr#198", kmsg: true},
		{name: "reserve variable size", maps: rb, asm: random + "r2 = r6\nr1 = map[fd:0] ll\nr3 = 0\nr4 = r10\nr4 += -16\ncall bpf_ringbuf_reserve_dynptr#198\n" + discard + end},
		{name: "ringbuf api on dynptr", maps: rb, asm: reserve + "r1 = r10\nr1 += -16\nr2 = 0\ncall bpf_ringbuf_submit#132\n" + submit + end, err: "R1 type=fp expected=ringbuf_mem", kmsg: true},

		// Slices from bpf_dynptr_data.
		{name: "data slice", asm: fromMem + data + "if r0 == 0 goto out\nr1 = *(u64 *)(r0 +0)\n*(u64 *)(r0 +0) = 1\n" + end},
		{name: "data slice unchecked", asm: fromMem + data + "r1 = *(u64 *)(r0 +0)" + end, err: "invalid mem access 'mem_or_null'", kmsg: true},
		{name: "data slice past its size", asm: fromMem + data + "if r0 == 0 goto out\nr1 = *(u8 *)(r0 +8)\n" + end, err: "invalid access to memory, mem_size=8 off=8 size=1", kmsg: true},
		{name: "data slice bigger than dynptr", asm: fromMem + "r1 = r10\nr1 += -16\nr2 = 0\nr3 = 64\ncall bpf_dynptr_data#203\nif r0 == 0 goto out\nr1 = *(u64 *)(r0 +56)\n" + end},
		{name: "data variable size", asm: fromMem + "r3 = *(u32 *)(r10 -24)\nr3 &= 7\nr1 = r10\nr1 += -16\nr2 = 0\ncall bpf_dynptr_data#203" + end, err: "R3 is not a known constant'", kmsg: true},
		{name: "data slice after overwrite", asm: fromMem + data + "if r0 == 0 goto out\nr6 = r0\n*(u64 *)(r10 -16) = 0\nr1 = *(u64 *)(r6 +0)\n" + end, err: "invalid mem access 'scalar'", kmsg: true},
		{name: "data slice after new dynptr", asm: fromMem + data + "if r0 == 0 goto out\nr6 = r0\n" + fromMem + "r1 = *(u64 *)(r6 +0)\n" + end, err: "invalid mem access 'scalar'", kmsg: true},
		{name: "data slice of ringbuf", maps: rb, asm: reserve + data + "if r0 == 0 goto sub\n*(u64 *)(r0 +0) = 1\nsub: " + submit + end},
		{name: "data slice after submit", maps: rb, asm: reserve + data + "r6 = r0\n" + submit + "if r6 == 0 goto out\nr0 = *(u64 *)(r6 +0)\n" + end, err: "invalid mem access 'scalar'", kmsg: true},
		{name: "data slice spilled after submit", maps: rb, asm: reserve + data + "*(u64 *)(r10 -40) = r0\n" + submit + "r6 = *(u64 *)(r10 -40)\nif r6 == 0 goto out\nr0 = *(u64 *)(r6 +0)\n" + end, err: "invalid mem access 'scalar'", kmsg: true},

		// Kfuncs: packet dynptrs.
		{name: "from skb", typ: tc, asm: fromSkb + read + end},
		{name: "from skb in xdp", asm: "r2 = 0\nr3 = r10\nr3 += -16\ncall bpf_dynptr_from_skb#0" + end, err: "calling kernel function bpf_dynptr_from_skb is not allowed", kmsg: true},
		{name: "from xdp in tc", typ: tc, asm: "r2 = 0\nr3 = r10\nr3 += -16\ncall bpf_dynptr_from_xdp#0" + end, err: "calling kernel function bpf_dynptr_from_xdp is not allowed", kmsg: true},
		{name: "from skb in socket filter", typ: ebpf.SocketFilter, asm: fromSkb + read + end},
		{name: "from skb not ctx", typ: tc, asm: "r1 = r10\nr1 += -32\nr2 = 0\nr3 = r10\nr3 += -16\ncall bpf_dynptr_from_skb#0" + end, err: "arg#0 expected pointer to ctx, but got fp", kmsg: true},
		{name: "from skb not stack", typ: tc, asm: "r2 = 0\nr3 = r1\ncall bpf_dynptr_from_skb#0" + end, err: "arg#2 expected pointer to stack or const struct bpf_dynptr", kmsg: true},
		{name: "from xdp slice", asm: fromXdp + slice + "if r0 == 0 goto out\nr0 = *(u32 *)(r0 +0)\nexit\n" + end},
		{name: "slice read-only", asm: fromXdp + slice + "if r0 == 0 goto out\n*(u32 *)(r0 +0) = 1\n" + end, err: "cannot write into rdonly_mem", klog: "cannot write into rdonly_mem"},
		{name: "slice rdwr", asm: fromXdp + sliceRdwr + "if r0 == 0 goto out\n*(u32 *)(r0 +0) = 1\n" + end},
		{name: "slice unchecked", asm: fromXdp + slice + "r0 = *(u32 *)(r0 +0)" + end, err: "invalid mem access 'rdonly_mem_or_null'", kmsg: true},
		{name: "slice past its size", asm: fromXdp + slice + "if r0 == 0 goto out\nr0 = *(u32 *)(r0 +4)\n" + end, err: "invalid access to memory, mem_size=4 off=4 size=4", kmsg: true},
		{name: "slice variable size", asm: "r6 = r1\ncall bpf_get_prandom_u32#7\nr8 = r0\nr1 = r6\n" + fromXdp + "r4 = r8\nr4 &= 7\nr1 = r10\nr1 += -16\nr2 = 0\nr3 = 0\ncall bpf_dynptr_slice#0" + end, err: "R4 must be a known constant", kmsg: true},
		{name: "slice with buffer", asm: fromXdp + "r1 = r10\nr1 += -16\nr2 = 0\nr3 = r10\nr3 += -24\nr4 = 8\ncall bpf_dynptr_slice#0\nif r0 == 0 goto out\nr0 = *(u64 *)(r0 +0)\nexit\n" + end},
		{name: "slice buffer too small", asm: fromXdp + "r1 = r10\nr1 += -16\nr2 = 0\nr3 = r10\nr3 += -24\nr4 = 16\ncall bpf_dynptr_slice#0" + end, err: "invalid read from stack R3 off -24+8 size 16", klog: "arg#2 arg#3 memory, len pair leads to invalid memory access"},
		{name: "slice rdwr read-only type", typ: ebpf.SocketFilter, asm: fromSkb + sliceRdwr + end, err: "the prog does not allow writes to packet data", kmsg: true},
		{name: "slice after packet change", typ: tc, asm: fromSkb + slice + "if r0 == 0 goto out\nr7 = r0\nr1 = r6\nr2 = 0\ncall bpf_skb_pull_data#39\nr0 = *(u32 *)(r7 +0)\nexit\n" + end, err: "invalid mem access 'scalar'", kmsg: true},
		{name: "skb write invalidates packet", typ: tc, asm: fromSkb + "r8 = *(u32 *)(r6 +76)\nr9 = *(u32 *)(r6 +80)\nr1 = r8\nr1 += 4\nif r1 > r9 goto out\n" + write + "r0 = *(u32 *)(r8 +0)\nexit\n" + end, err: "invalid mem access 'scalar'", kmsg: true},
		{name: "xdp write keeps packet", asm: fromXdp + "r8 = *(u32 *)(r6 +0)\nr9 = *(u32 *)(r6 +4)\nr1 = r8\nr1 += 4\nif r1 > r9 goto out\n" + write + "r0 = *(u32 *)(r8 +0)\nexit\n" + end},
		{name: "slice of local", asm: fromMem + slice + "if r0 == 0 goto out\nr0 = *(u32 *)(r0 +0)\nexit\n" + end},
		{name: "slice rdwr of local in xdp", asm: fromMem + sliceRdwr + "if r0 == 0 goto out\n*(u32 *)(r0 +0) = 1\n" + end},
		// Only the helper's slices die with the dynptr: a kfunc's slice is
		// packet or map memory, still there.
		{name: "slice after overwrite", asm: fromXdp + slice + "if r0 == 0 goto out\nr7 = r0\n*(u64 *)(r10 -16) = 0\nr0 = *(u32 *)(r7 +0)\nexit\n" + end},
		{name: "slice of local after overwrite", asm: fromMem + slice + "if r0 == 0 goto out\nr7 = r0\n*(u64 *)(r10 -16) = 0\nr0 = *(u32 *)(r7 +0)\nexit\n" + end},
		{name: "slice of ringbuf after submit", maps: rb, asm: reserve + slice + "r7 = r0\n" + submit + "if r7 == 0 goto out\nr0 = *(u32 *)(r7 +0)\nexit\n" + end, err: "invalid mem access 'scalar'", klog: "invalid mem access"},

		// Kfuncs on any dynptr.
		{name: "adjust size null rdonly", asm: fromMem + "r1 = r10\nr1 += -16\nr2 = 1\nr3 = 4\ncall bpf_dynptr_adjust#0\nr1 = r10\nr1 += -16\ncall bpf_dynptr_size#0\nr1 = r10\nr1 += -16\ncall bpf_dynptr_is_null#0\nr1 = r10\nr1 += -16\ncall bpf_dynptr_is_rdonly#0" + end},
		{name: "size of uninit", asm: "r1 = r10\nr1 += -16\ncall bpf_dynptr_size#0" + end, err: "Expected an initialized dynptr as arg #0", kmsg: true},
		{name: "adjust pointer arg", asm: fromMem + "r1 = r10\nr1 += -16\nr2 = r10\nr3 = 4\ncall bpf_dynptr_adjust#0" + end, err: "R2 is not a scalar", kmsg: true},
		{name: "clone local", asm: fromMem + "r1 = r10\nr1 += -16\nr2 = r10\nr2 += -48\ncall bpf_dynptr_clone#0\nr1 = r10\nr1 += -32\nr2 = 8\nr3 = r10\nr3 += -48\nr4 = 0\nr5 = 0\ncall bpf_dynptr_read#201" + end},
		{name: "clone ringbuf submit clone", maps: rb, asm: reserve + "r1 = r10\nr1 += -16\nr2 = r10\nr2 += -48\ncall bpf_dynptr_clone#0\nr1 = r10\nr1 += -48\nr2 = 0\ncall bpf_ringbuf_submit_dynptr#199" + end},
		{name: "clone ringbuf use after submit", maps: rb, asm: reserve + "r1 = r10\nr1 += -16\nr2 = r10\nr2 += -48\ncall bpf_dynptr_clone#0\n" + submit + "r1 = r10\nr1 += -32\nr2 = 8\nr3 = r10\nr3 += -48\nr4 = 0\nr5 = 0\ncall bpf_dynptr_read#201" + end, err: "Expected an initialized dynptr as arg #2", kmsg: true},
		{name: "clone ringbuf submit both", maps: rb, asm: reserve + "r1 = r10\nr1 += -16\nr2 = r10\nr2 += -48\ncall bpf_dynptr_clone#0\n" + submit + "r1 = r10\nr1 += -48\nr2 = 0\ncall bpf_ringbuf_submit_dynptr#199" + end, err: "arg 1 is an unacquired reference", kmsg: true},
		{name: "clone over ringbuf", maps: rb, asm: reserve + "r1 = r10\nr1 += -16\nr2 = r10\nr2 += -16\ncall bpf_dynptr_clone#0\n" + submit + end, err: "cannot overwrite referenced dynptr", kmsg: true},

		// Other frames: a callee reading the caller's dynptr, making one
		// in the caller's stack, a callback reading it.
		{name: "callee reads caller's dynptr", asm: fromMem + "r1 = r10\nr1 += -16\ncall f" + end + "\nf: r3 = r1\nr1 = r10\nr1 += -8\nr2 = 8\nr4 = 0\nr5 = 0\ncall bpf_dynptr_read#201\nr0 = 0\nexit"},
		{name: "callee reserves in caller's stack", maps: rb, asm: "r1 = r10\nr1 += -16\ncall f\n" + submit + out + "\nf: r4 = r1\nr1 = map[fd:0] ll\nr2 = 16\nr3 = 0\ncall bpf_ringbuf_reserve_dynptr#198\nr0 = 0\nexit"},
		{name: "callee overwrites caller's ringbuf dynptr", maps: rb, asm: reserve + "r1 = r10\nr1 += -16\ncall f\n" + submit + out + "\nf: *(u64 *)(r1 +0) = 0\nr0 = 0\nexit", err: "cannot overwrite referenced dynptr", kmsg: true},
		{name: "callback reads the dynptr", asm: fromMem + "r1 = 2\nr2 = subprog[cb] ll\nr3 = r10\nr3 += -16\nr4 = 0\ncall bpf_loop#181" + end + "\ncb: r3 = r2\nr1 = r10\nr1 += -8\nr2 = 8\nr4 = 0\nr5 = 0\ncall bpf_dynptr_read#201\nr0 = 0\nexit"},
		{name: "callback leaks a ringbuf dynptr", maps: rb, asm: "r1 = 2\nr2 = subprog[cb] ll\nr3 = 0\nr4 = 0\ncall bpf_loop#181" + out + "\ncb: " + reserve + "r0 = 0\nexit", err: "Unreleased reference", klog: "Unreleased reference"},

		// Writes over a dynptr in other ways.
		{name: "variable-offset store destroys", asm: random + "r6 &= 8\n" + fromMem + "r1 = r10\nr1 += -16\nr1 += r6\n*(u8 *)(r1 +0) = 0\n" + read + end, err: "Expected an initialized dynptr as arg #2", kmsg: true},
		{name: "variable-offset store over ringbuf", maps: rb, asm: random + "r6 &= 8\n" + reserve + "r1 = r10\nr1 += -16\nr1 += r6\n*(u8 *)(r1 +0) = 0\n" + submit + out, err: "cannot overwrite referenced dynptr", kmsg: true},
		{name: "pointer spilled over dynptr", asm: fromMem + "*(u64 *)(r10 -16) = r10\n" + read + end, err: "Expected an initialized dynptr as arg #2", kmsg: true},
		{name: "write from the dynptr itself", asm: fromMem + "r1 = r10\nr1 += -16\nr2 = 0\nr3 = r10\nr3 += -16\nr4 = 8\nr5 = 0\ncall bpf_dynptr_write#202" + end, err: "invalid read from stack R3 off -16+0 size 8", kmsg: true},
		{name: "release at an offset", maps: rb, asm: reserve + "r1 = r10\nr1 += -8\nr2 = 0\ncall bpf_ringbuf_submit_dynptr#199\n" + submit + out, err: "cannot pass in dynptr at an offset=-8", kmsg: true},
		{name: "read variable length", asm: random + "r6 &= 7\n" + fromMem + "r1 = r10\nr1 += -32\nr2 = r6\nr3 = r10\nr3 += -16\nr4 = 0\nr5 = 0\ncall bpf_dynptr_read#201" + end},
		{name: "xdp slice after adjust head", asm: fromXdp + sliceRdwr + "if r0 == 0 goto out\nr7 = r0\nr1 = r6\nr2 = 0\ncall bpf_xdp_adjust_head#44\n*(u8 *)(r7 +0) = 1" + end, err: "invalid mem access 'scalar'", kmsg: true},
		{name: "from skb in cgroup skb", typ: ebpf.CGroupSKB, asm: fromSkb + read + "r0 = 1\nexit"},
		{name: "common kfuncs in socket filter", typ: ebpf.SocketFilter, asm: fromMem + "r1 = r10\nr1 += -16\ncall bpf_dynptr_size#0" + end},

		// Global functions take const dynptrs (CONST_PTR_TO_DYNPTR).
		{name: "global reads dynptr", funcs: dynptrG, asm: fromMem + callG + end + gRead},
		{name: "global reads ringbuf dynptr", funcs: dynptrG, asm: reserve + callG + submit + out + gRead},
		{name: "global given uninit dynptr", funcs: dynptrG, asm: callG + out + gRead, err: "Expected an initialized dynptr as arg #0", kmsg: true},
		{name: "global given scalar", funcs: dynptrG, asm: "r1 = 0\ncall g" + out + gRead, err: "arg#0 expected pointer to stack or const struct bpf_dynptr", kmsg: true},
		{name: "global releases const dynptr", funcs: dynptrG, asm: reserve + callG + submit + out + "\ng: r2 = 0\ncall bpf_ringbuf_submit_dynptr#199\nr0 = 0\nexit", err: "cannot release unowned const bpf_dynptr", kmsg: true},
		{name: "global remakes const dynptr", funcs: dynptrG, asm: fromMem + callG + end + "\ng: r4 = r1\nr1 = map[fd:0] ll\nr2 = 8\nr3 = 0\ncall bpf_ringbuf_reserve_dynptr#198\nr0 = 0\nexit", err: "Dynptr has to be an uninitialized dynptr", kmsg: true},
		{name: "global kfuncs on const dynptr", funcs: dynptrG, asm: fromMem + callG + end + "\ng: r6 = r1\ncall bpf_dynptr_size#0\nr1 = r6\nr2 = 0\nr3 = 0\nr4 = 4\ncall bpf_dynptr_slice#0\nif r0 == 0 goto gout\nr0 = *(u32 *)(r0 +0)\ngout: r0 = 0\nexit"},
		{name: "global data slice of const dynptr", funcs: dynptrG, asm: fromMem + callG + end + "\ng: r2 = 0\nr3 = 8\ncall bpf_dynptr_data#203\nif r0 == 0 goto gout\nr0 = *(u64 *)(r0 +0)\ngout: r0 = 0\nexit"},
		{name: "global moves const dynptr", funcs: dynptrG, asm: fromMem + callG + end + "\ng: r1 += 8\ncall bpf_dynptr_size#0\nr0 = 0\nexit", err: "dereference of modified dynptr_ptr ptr R1 off=8 disallowed", kmsg: true},
		{name: "global loads through const dynptr", funcs: dynptrG, asm: fromMem + callG + end + "\ng: r0 = *(u64 *)(r1 +0)\nr0 = 0\nexit", err: "R1 invalid mem access 'dynptr_ptr'", kmsg: true},

		// Paths: a loop re-making a dynptr, one made on one path only.
		{name: "dynptr in loop", asm: "r6 = 0\nloop: " + fromMem + read + "r6 += 1\nif r6 < 4 goto loop" + end},
		{name: "dynptr on one path", asm: random + "if r6 == 0 goto skip\n" + fromMem + "skip: " + read + end, err: "Expected an initialized dynptr as arg #2", kmsg: true},
	}
	for i := range cases {
		if cases[i].maps == nil {
			cases[i].maps = rbArr
		}
	}
	runCases(t, cases)
}
