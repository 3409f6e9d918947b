package verifier_test

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/verifier"
)

// Cases for the kernel-fidelity classes of issue #14, each compared with
// the running kernel by runCases.

// lookupArr leaves a pointer to arrayMap's element 0 (8 bytes) in r0, or
// jumps to out.
const lookupArr = "*(u32 *)(r10 -4) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto out\n"

func TestFidelityShifts(t *testing.T) {
	// Each shifts r1 by r2 and then indexes the 8-byte value with r1:
	// accepted only where the kernel knows r1 < 8.
	access := "r0 += r1\nr0 = *(u8 *)(r0 +0)\nout: r0 = 0\nexit"
	arr := []maps.Spec{arrayMap}
	unbounded := "math between map_value pointer and register with unbounded min value is not allowed"
	cases := []vcase{
		// Constant amounts below the width are computed.
		{name: "lsh64 reg 2", asm: lookupArr + "r1 = 1\nr2 = 2\nr1 <<= r2\n" + access},
		{name: "lsh32 reg 2", asm: lookupArr + "r1 = 1\nr2 = 2\nw1 <<= w2\n" + access},
		{name: "rsh64 reg 61", asm: lookupArr + "r1 = -1\nr2 = 61\nr1 >>= r2\n" + access},
		{name: "rsh32 reg 29", asm: lookupArr + "r1 = -1\nr2 = 29\nw1 >>= w2\n" + access},
		{name: "arsh64 reg 63 of positive", asm: lookupArr + "r1 = 7\nr2 = 63\nr1 s>>= r2\n" + access},
		{name: "arsh32 reg 31 of positive", asm: lookupArr + "r1 = 7\nr2 = 31\nw1 s>>= w2\n" + access},
		{name: "lsh64 unknown dst const amount", asm: lookupArr + "r1 = *(u64 *)(r0 +0)\nr1 &= 1\nr2 = 2\nr1 <<= r2\n" + access},
		// An amount of at least the width makes the result unknown
		// although the runtime masks it (here to a shift by 0).
		{name: "lsh64 reg 64", asm: lookupArr + "r1 = 1\nr2 = 64\nr1 <<= r2\n" + access, err: unbounded, kmsg: true},
		{name: "lsh32 reg 32", asm: lookupArr + "r1 = 1\nr2 = 32\nw1 <<= w2\n" + access, err: unbounded, kmsg: true},
		{name: "rsh64 reg 64", asm: lookupArr + "r1 = 1\nr2 = 64\nr1 >>= r2\n" + access, err: unbounded, kmsg: true},
		{name: "rsh32 reg 32", asm: lookupArr + "r1 = 1\nr2 = 32\nw1 >>= w2\n" + access, err: unbounded, kmsg: true},
		{name: "arsh64 reg 64", asm: lookupArr + "r1 = 1\nr2 = 64\nr1 s>>= r2\n" + access, err: unbounded, kmsg: true},
		{name: "arsh32 reg 32", asm: lookupArr + "r1 = 1\nr2 = 32\nw1 s>>= w2\n" + access, err: unbounded, kmsg: true},
		{name: "lsh64 reg 65", asm: lookupArr + "r1 = 1\nr2 = 65\nr1 <<= r2\n" + access, err: unbounded, kmsg: true},
		{name: "lsh64 reg -1", asm: lookupArr + "r1 = 0\nr2 = -1\nr1 <<= r2\n" + access, err: unbounded, kmsg: true},
		// The 32-bit form checks the 64-bit value of the amount: the
		// low half 1 is not enough.
		{name: "lsh32 amount with high bits", asm: lookupArr + "r1 = 1\nr2 = 1\nr3 = 1\nr3 <<= 32\nr2 |= r3\nw1 <<= w2\n" + access, err: unbounded, kmsg: true},
		// ... and an unknown 32-bit result is not zero-extended.
		{name: "lsh32 reg 32 high half unknown", asm: lookupArr + "r1 = 0\nr2 = 32\nw1 <<= w2\nr1 >>= 32\n" + access, err: "R0 unbounded memory access"},
		// Amounts that are not constant make the result unknown, even
		// when every value is below the width.
		{name: "lsh64 amount 0 or 1", asm: lookupArr + "r2 = *(u64 *)(r0 +0)\nr2 &= 1\nr1 = 1\nr1 <<= r2\n" + access, err: unbounded, kmsg: true},
		{name: "rsh64 amount 0 or 1", asm: lookupArr + "r2 = *(u64 *)(r0 +0)\nr2 &= 1\nr1 = 1\nr1 >>= r2\n" + access, err: unbounded, kmsg: true},
		{name: "arsh32 amount 0 or 1", asm: lookupArr + "r2 = *(u64 *)(r0 +0)\nr2 &= 1\nr1 = 1\nw1 s>>= w2\n" + access, err: unbounded, kmsg: true},
		{name: "lsh64 amount across width", asm: lookupArr + "r2 = *(u64 *)(r0 +0)\nr2 &= 64\nr1 = 1\nr1 <<= r2\n" + access, err: unbounded, kmsg: true},
		{name: "rsh32 amount across width", asm: lookupArr + "r2 = *(u64 *)(r0 +0)\nr2 &= 32\nr1 = 1\nw1 >>= w2\n" + access, err: unbounded, kmsg: true},
		// A known amount bounded by a branch is a constant.
		{name: "lsh64 amount fixed by branch", asm: lookupArr + "r2 = *(u64 *)(r0 +0)\nif r2 != 2 goto out\nr1 = 1\nr1 <<= r2\n" + access},
	}
	for i := range cases {
		cases[i].maps = arr
	}
	runCases(t, cases)
}

// setInsn returns an edit that sets the fields of instruction i that f
// changes.
func setInsn(i int, f func(*isa.Instruction)) func([]isa.Instruction) {
	return func(insns []isa.Instruction) { f(&insns[i]) }
}

func TestFidelityLdImm64(t *testing.T) {
	// callback: a bpf_loop whose callback is loaded by insn 1.
	loop := "r1 = 1\nr2 = subprog[cb] ll\nr3 = 0\nr4 = 0\ncall bpf_loop#181\nr0 = 0\nexit\ncb: r0 = 0\nexit"
	mapfd := "r1 = map[fd:0] ll\nr0 = 0\nexit"
	hi := func(imm int32) func([]isa.Instruction) { return setInsn(2, func(in *isa.Instruction) { in.Imm = imm }) }
	// The second-half cases are checked against the kernel's source
	// only: cilium/ebpf refuses to encode them.
	runCases(t, []vcase{
		{name: "func upper imm junk", asm: loop, edit: hi(0x1234)},
		{name: "func upper imm all ones", asm: loop, edit: hi(-1)},
		{name: "map fd upper imm", maps: []maps.Spec{arrayMap}, asm: mapfd, edit: setInsn(1, func(in *isa.Instruction) { in.Imm = 1 }), err: "unrecognized bpf_ld_imm64 insn", kmsg: true},
		{name: "map value upper imm is the offset", maps: []maps.Spec{{Name: "one", Type: maps.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1}},
			asm: "r1 = map_value[fd:0]+4 ll\nr0 = *(u32 *)(r1 +0)\nexit"},
		{name: "const upper imm", asm: "r0 = 0x100000000 ll\nexit"},
		{name: "second half opcode", asm: "r0 = 1 ll\nexit", edit: setInsn(1, func(in *isa.Instruction) { in.Op = 0x07 }), err: "invalid bpf_ld_imm64 insn", noKernel: true},
		{name: "second half dst", asm: "r0 = 1 ll\nexit", edit: setInsn(1, func(in *isa.Instruction) { in.Dst = 1 }), err: "invalid bpf_ld_imm64 insn", noKernel: true},
		{name: "second half off", asm: "r0 = 1 ll\nexit", edit: setInsn(1, func(in *isa.Instruction) { in.Off = 1 }), err: "invalid bpf_ld_imm64 insn", noKernel: true},
		{name: "unknown pseudo source", asm: "r0 = 1 ll\nexit", edit: setInsn(0, func(in *isa.Instruction) { in.Src = 7 }), err: "unrecognized bpf_ld_imm64 insn", kmsg: true},
		{name: "first half off", asm: "r0 = 1 ll\nexit", edit: setInsn(0, func(in *isa.Instruction) { in.Off = 1 }), err: "BPF_LD_IMM64 uses reserved fields", kmsg: true},
	})
}

func TestFidelityFramePointer(t *testing.T) {
	// dead jumps over the instruction at "bad:", which the verifier never
	// reaches: the kernel checks writes to R10 on explored paths only.
	dead := func(bad string) string { return "r0 = 0\nif r0 == 0 goto out\n" + bad + "\nout: exit" }
	live := func(bad string) string { return "r0 = 0\n" + bad + "\nexit" }
	ro := "frame pointer is read only"
	arr := []maps.Spec{arrayMap}
	var cases []vcase
	for _, bad := range []struct {
		name, asm string
		maps      []maps.Spec
	}{
		{name: "mov imm", asm: "r10 = 0"},
		{name: "mov reg", asm: "r10 = r1"},
		{name: "mov32", asm: "w10 = 1"},
		{name: "movsx", asm: "r10 = (s8)r1"},
		{name: "add", asm: "r10 += 8"},
		{name: "add reg", asm: "r10 += r0"},
		{name: "neg", asm: "r10 = -r10"},
		{name: "bswap", asm: "r10 = bswap64 r10"},
		{name: "ldx", asm: "r10 = *(u64 *)(r1 +0)"},
		{name: "ldimm64", asm: "r10 = 1 ll"},
		{name: "ldimm64 map", asm: "r10 = map[fd:0] ll", maps: arr},
		{name: "atomic fetch into r10", asm: "*(u64 *)(r10 -8) = 0\nr1 = r10\nr1 += -8\nr10 = atomic64_fetch_add((u64 *)(r1 +0), r10)"},
	} {
		cases = append(cases,
			vcase{name: bad.name + " dead", asm: dead(bad.asm), maps: bad.maps},
			vcase{name: bad.name + " live", asm: live(bad.asm), maps: bad.maps, err: ro, kmsg: true})
	}
	// The kernel's order: a read of an uninitialised source comes first,
	// a division by zero and a bad shift before the write check.
	cases = append(cases,
		vcase{name: "mov uninit src", asm: "r10 = r2\nr0 = 0\nexit", err: "R2 !read_ok", kmsg: true},
		vcase{name: "div by zero first", asm: "r10 /= 0\nr0 = 0\nexit", err: "div by zero", kmsg: true},
		vcase{name: "bad shift first", asm: "r10 <<= 64\nr0 = 0\nexit", err: "invalid shift 64", kmsg: true},
		vcase{name: "ldimm64 offset dead", asm: dead("r1 = 1 ll"), edit: setInsn(2, func(in *isa.Instruction) { in.Off = 1 })},
		vcase{name: "ldimm64 offset live", asm: live("r1 = 1 ll"), edit: setInsn(1, func(in *isa.Instruction) { in.Off = 1 }), err: "BPF_LD_IMM64 uses reserved fields", kmsg: true},
		// Stores through R10 and atomics on the stack remain allowed.
		vcase{name: "atomic on stack", asm: "*(u64 *)(r10 -8) = 0\nr1 = 1\nr1 = atomic64_fetch_add((u64 *)(r10 -8), r1)\nr0 = 0\nexit"},
	)
	runCases(t, cases)
}

func TestFidelityProgramFlags(t *testing.T) {
	strict, anyAlign := verifier.FlagStrictAlignment, verifier.FlagAnyAlignment
	// pkt checks 32 bytes of packet and reads at off from data.
	pkt := func(read string) string {
		return "r2 = *(u32 *)(r1 +0)\nr3 = *(u32 *)(r1 +4)\nr4 = r2\nr4 += 32\nif r4 > r3 goto out\n" + read + "\nout: r0 = 0\nexit"
	}
	arr := []maps.Spec{arrayMap}
	cases := []vcase{
		// Packet data starts at NET_IP_ALIGN (2) past an aligned address.
		{name: "strict pkt u32 at 0", flags: strict, asm: pkt("r0 = *(u32 *)(r2 +0)"), err: "misaligned packet access off 2+0+0+0 size 4", kmsg: true},
		{name: "strict pkt u32 at 2", flags: strict, asm: pkt("r0 = *(u32 *)(r2 +2)")},
		{name: "strict pkt u16 at 12", flags: strict, asm: pkt("r0 = *(u16 *)(r2 +12)")},
		{name: "strict pkt u16 at 13", flags: strict, asm: pkt("r0 = *(u16 *)(r2 +13)"), err: "misaligned packet access off 2+0+0+13 size 2", kmsg: true},
		{name: "strict pkt u64 at 6", flags: strict, asm: pkt("r0 = *(u64 *)(r2 +6)")},
		{name: "strict pkt u8 at 1", flags: strict, asm: pkt("r0 = *(u8 *)(r2 +1)")},
		{name: "strict pkt fixed offset", flags: strict, asm: pkt("r2 += 15\nr0 = *(u32 *)(r2 -4)"), err: "misaligned packet access off 2+0+15+-4 size 4", kmsg: true},
		{name: "strict pkt store", flags: strict, asm: pkt("*(u32 *)(r2 +4) = 0"), err: "misaligned packet access off 2+0+0+4 size 4", kmsg: true},
		{name: "strict pkt variable offset", flags: strict, asm: pkt("r5 = *(u8 *)(r2 +0)\nr5 &= 4\nr2 += r5\nr4 = r2\nr4 += 2\nif r4 > r3 goto out\nr0 = *(u16 *)(r2 +0)")},
		{name: "strict pkt variable odd offset", flags: strict, asm: pkt("r5 = *(u8 *)(r2 +0)\nr5 &= 1\nr2 += r5\nr0 = *(u16 *)(r2 +0)"), err: "misaligned packet access off 2+(0x0; 0x1)+0+0 size 2", kmsg: true},
		{name: "lax pkt u32 at 0", asm: pkt("r0 = *(u32 *)(r2 +0)")},
		{name: "any pkt u32 at 0", flags: anyAlign, asm: pkt("r0 = *(u32 *)(r2 +0)")},
		{name: "strict and any pkt u32 at 0", flags: strict | anyAlign, asm: pkt("r0 = *(u32 *)(r2 +0)")},
		// Other pointers from an aligned base.
		{name: "strict ctx u16 at 13", flags: strict, asm: "r0 = *(u16 *)(r1 +13)\nexit", err: "misaligned context access off 0+0+13 size 2", kmsg: true},
		{name: "strict ctx u32 at 12", flags: strict, asm: "r0 = *(u32 *)(r1 +12)\nexit"},
		{name: "strict tc ctx u16 at 49", typ: ebpf.SchedCLS, flags: strict, asm: "r0 = *(u16 *)(r1 +49)\nexit", err: "misaligned context access off 0+0+49 size 2", kmsg: true},
		{name: "lax tc ctx u16 at 48", typ: ebpf.SchedCLS, asm: "r0 = *(u16 *)(r1 +48)\nexit"},
		{name: "strict value u32 at 2", flags: strict, maps: arr, asm: lookupArr + "r0 = *(u32 *)(r0 +2)\nout: r0 = 0\nexit", err: "misaligned value access off 0+0+2 size 4", kmsg: true},
		{name: "lax value u32 at 2", maps: arr, asm: lookupArr + "r0 = *(u32 *)(r0 +2)\nout: r0 = 0\nexit"},
		{name: "any value u32 at 2", flags: anyAlign, maps: arr, asm: lookupArr + "r0 = *(u32 *)(r0 +2)\nout: r0 = 0\nexit"},
		// The stack and atomics are strict whatever the flags.
		{name: "any stack misaligned", flags: anyAlign, asm: "r1 = 0\n*(u32 *)(r10 -6) = r1\nr0 = 0\nexit", err: "misaligned stack access off 0+0+-6 size 4", kmsg: true},
		{name: "any atomic misaligned", flags: anyAlign, maps: arr, asm: lookupArr + "r1 = 1\nlock *(u32 *)(r0 +2) += r1\nout: r0 = 0\nexit", err: "misaligned value access off 0+0+2 size 4", kmsg: true},
		// Sleepable: none of these types may be.
		{name: "sleepable xdp", flags: verifier.FlagSleepable, asm: "r0 = 0\nexit", err: "Only fentry/fexit/fmod_ret, lsm, iter, uprobe, and struct_ops programs can be sleepable", kmsg: true},
		{name: "sleepable socket filter", typ: ebpf.SocketFilter, flags: verifier.FlagSleepable, asm: "r0 = 0\nexit", err: "can be sleepable", kmsg: true},
		{name: "sleepable tc", typ: ebpf.SchedCLS, flags: verifier.FlagSleepable, asm: "r0 = 0\nexit", err: "can be sleepable", kmsg: true},
		{name: "sleepable after cfg", flags: verifier.FlagSleepable, asm: "r0 = 0\nexit\nr0 = 1\nexit", err: "unreachable insn 2", kmsg: true},
		// Flags that change no verdict here.
		{name: "xdp has frags", flags: verifier.FlagXDPHasFrags, asm: pkt("r0 = *(u32 *)(r2 +0)")},
		{name: "xdp has frags tc", typ: ebpf.SchedCLS, flags: verifier.FlagXDPHasFrags, asm: "r0 = 0\nexit"},
		{name: "xdp dev bound only without device", flags: verifier.FlagXDPDevBoundOnly, asm: "r0 = 0\nexit"},
		{name: "test state freq", flags: verifier.FlagTestStateFreq, asm: "r0 = 0\nl: r0 += 1\nif r0 < 10 goto l\nexit"},
		{name: "test reg invariants", flags: verifier.FlagTestRegInvariants, asm: pkt("r0 = *(u32 *)(r2 +0)")},
		{name: "test rnd hi32", flags: verifier.FlagTestRndHi32, asm: "w0 = 1\nexit"},
		{name: "test rnd hi32 still rejects", flags: verifier.FlagTestRndHi32, asm: "w0 = 1\nexit\nr0 = 0\nexit", err: "unreachable insn 2", kmsg: true},
		{name: "unknown flag", flags: 1 << 8, asm: "r0 = 0\nexit", err: "unknown program flags 0x100"},
	}
	runCases(t, cases)
}

func TestFidelityRedirectMapLookup(t *testing.T) {
	xsk := []maps.Spec{{Name: "xsk", Type: maps.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: 4}}
	dev := []maps.Spec{{Name: "dev", Type: maps.DevMap, KeySize: 4, ValueSize: 8, MaxEntries: 4}}
	devHash := []maps.Spec{{Name: "devh", Type: maps.DevMapHash, KeySize: 4, ValueSize: 4, MaxEntries: 4}}
	cpu := []maps.Spec{{Name: "cpu", Type: maps.CPUMap, KeySize: 4, ValueSize: 4, MaxEntries: 4}}
	lookup := "*(u32 *)(r10 -4) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\n"
	checked := lookup + "if r0 == 0 goto out\n"
	end := "\nout: r0 = 0\nexit"
	runCases(t, []vcase{
		// An xskmap's element is a socket: its queue_id may be read.
		{name: "xsk queue_id", maps: xsk, asm: checked + "r0 = *(u32 *)(r0 +0)\nr0 &= 3" + "\nexit" + end},
		{name: "xsk null compare only", maps: xsk, asm: lookup + "if r0 != 0 goto out\nr0 = 1\nexit" + end},
		{name: "xsk unchecked", maps: xsk, asm: lookup + "r0 = *(u32 *)(r0 +0)" + end, err: "R0 invalid mem access 'map_value_or_null'", kmsg: true},
		{name: "xsk narrow read", maps: xsk, asm: checked + "r0 = *(u8 *)(r0 +0)" + end, err: "R0 invalid xdp_sock access off=0 size=1", kmsg: true},
		{name: "xsk read past queue_id", maps: xsk, asm: checked + "r0 = *(u32 *)(r0 +4)" + end, err: "R0 invalid xdp_sock access off=4 size=4", kmsg: true},
		{name: "xsk wide read", maps: xsk, asm: checked + "r0 = *(u64 *)(r0 +0)" + end, err: "R0 invalid xdp_sock access off=0 size=8", kmsg: true},
		{name: "xsk write", maps: xsk, asm: checked + "*(u32 *)(r0 +0) = 1" + end, err: "R0 cannot write into xdp_sock", kmsg: true},
		{name: "xsk arithmetic", maps: xsk, asm: checked + "r0 += 4" + end, err: "R0 pointer arithmetic on xdp_sock prohibited", kmsg: true},
		{name: "xsk spill and fill", maps: xsk, asm: checked + "*(u64 *)(r10 -16) = r0\nr1 = *(u64 *)(r10 -16)\nr0 = *(u32 *)(r1 +0)" + end},
		{name: "xsk returned", maps: xsk, asm: checked + "exit" + end},
		{name: "xsk update", maps: xsk, asm: "*(u32 *)(r10 -4) = 0\n*(u32 *)(r10 -8) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\nr3 = r10\nr3 += -8\nr4 = 0\ncall bpf_map_update_elem#2\nr0 = 0\nexit",
			err: "cannot pass map_type 17 into func bpf_map_update_elem#2", kmsg: true},
		{name: "xsk lookup from tc", typ: ebpf.SchedCLS, maps: xsk, asm: checked + "r0 = *(u32 *)(r0 +0)\nr0 = 0\nexit" + end},
		// A devmap's element is the device's value: readable, not
		// writable.
		{name: "devmap read ifindex", maps: dev, asm: checked + "r0 = *(u32 *)(r0 +0)" + end},
		{name: "devmap read prog", maps: dev, asm: checked + "r0 = *(u32 *)(r0 +4)" + end},
		{name: "devmap read past value", maps: dev, asm: checked + "r0 = *(u32 *)(r0 +8)" + end, err: "invalid access to map value, value_size=8 off=8 size=4", kmsg: true},
		{name: "devmap write", maps: dev, asm: checked + "*(u32 *)(r0 +0) = 1" + end, err: "write into map forbidden, value_size=8 off=0 size=4", kmsg: true},
		{name: "devmap helper write", typ: ebpf.SchedCLS, maps: dev, asm: "r6 = r1\n" + checked + "r1 = r6\nr2 = 0\nr3 = r0\nr4 = 4\ncall bpf_skb_load_bytes#26" + end, err: "write into map forbidden, value_size=8 off=0 size=4", kmsg: true},
		{name: "devmap unchecked", maps: dev, asm: lookup + "r0 = *(u32 *)(r0 +0)" + end, err: "R0 invalid mem access 'map_value_or_null'", kmsg: true},
		{name: "devmap_hash read", maps: devHash, asm: checked + "r0 = *(u32 *)(r0 +0)" + end},
		{name: "devmap_hash write", maps: devHash, asm: checked + "*(u32 *)(r0 +0) = 1" + end, err: "write into map forbidden, value_size=4 off=0 size=4", kmsg: true},
		// Not cpumaps.
		{name: "cpumap lookup", maps: cpu, asm: checked + "r0 = *(u32 *)(r0 +0)" + end, err: "cannot pass map_type 16 into func bpf_map_lookup_elem#1", kmsg: true},
	})
}

func TestFidelityMapPtrAccess(t *testing.T) {
	read := func(ins string) string { return "r1 = map[fd:0] ll\n" + ins + "\nr0 = 0\nexit" }
	arr, hash := []maps.Spec{arrayMap}, []maps.Spec{hashMap}
	rb := []maps.Spec{{Name: "rb", Type: maps.RingBuf, MaxEntries: 4096}}
	runCases(t, []vcase{
		{name: "array max_entries", maps: arr, asm: read("r0 = *(u32 *)(r1 +76)")},
		{name: "array map_type", maps: arr, asm: read("r0 = *(u32 *)(r1 +64)")},
		{name: "array key_size", maps: arr, asm: read("r0 = *(u32 *)(r1 +68)")},
		{name: "array value_size", maps: arr, asm: read("r0 = *(u32 *)(r1 +72)")},
		{name: "array map_extra", maps: arr, asm: read("r0 = *(u64 *)(r1 +80)")},
		{name: "array map_flags", maps: arr, asm: read("r0 = *(u32 *)(r1 +88)")},
		{name: "array id", maps: arr, asm: read("r0 = *(u32 *)(r1 +92)")},
		{name: "array max_entries low byte", maps: arr, asm: read("r0 = *(u8 *)(r1 +77)")},
		{name: "hash max_entries", maps: hash, asm: read("r0 = *(u32 *)(r1 +76)")},
		{name: "ringbuf max_entries", maps: rb, asm: read("r0 = *(u32 *)(r1 +76)")},
		{name: "bounded u32", maps: arr, asm: "r1 = map[fd:0] ll\nr0 = *(u32 *)(r1 +76)\nr0 >>= 32\nif r0 == 0 goto ok\nr0 = *(u64 *)(r0 +0)\nok: exit"},
		{name: "across two members", maps: arr, asm: read("r0 = *(u64 *)(r1 +76)"), err: "access beyond the end of member max_entries (mend:80) in struct bpf_map with off 76 size 8", kmsg: true},
		{name: "write", maps: arr, asm: read("*(u32 *)(r1 +76) = 1"), err: "only read from bpf_array is supported", kmsg: true},
		{name: "write hash", maps: hash, asm: read("r2 = 1\n*(u32 *)(r1 +76) = r2"), err: "only read from bpf_htab is supported", kmsg: true},
		{name: "negative", maps: arr, asm: read("r0 = *(u32 *)(r1 -4)"), err: "R1 is bpf_array invalid negative access: off=-4", kmsg: true},
		{name: "unprivileged", unpriv: true, maps: arr, asm: read("r0 = *(u32 *)(r1 +76)"), err: "'struct bpf_array' access is allowed only to CAP_PERFMON and CAP_SYS_ADMIN"},
		// Fields bpfvm does not mirror: a false alarm, with a message
		// saying so (the kernel reads them through its BTF).
		{name: "unmodelled name", maps: arr, asm: read("r0 = *(u8 *)(r1 +136)"), err: "a field bpfvm does not model", noKernel: true},
		{name: "unmodelled ops", maps: arr, asm: read("r0 = *(u64 *)(r1 +40)"), err: "a field bpfvm does not model", noKernel: true},
	})
}

func TestFidelityReservedFields(t *testing.T) {
	// Insn 2 is never reached (dead) or reached (live); each edit puts
	// junk in a field the instruction reserves. The kernel checks those on
	// the paths it explores only, and before anything else there.
	dead := "r0 = 0\nif r0 == 0 goto out\nr1 = 1\nr2 = 2\nout: exit"
	live := "r0 = 0\nif r0 != 0 goto out\nr1 = 1\nr2 = 2\nout: exit"
	set := func(in isa.Instruction) func([]isa.Instruction) {
		return setInsn(2, func(p *isa.Instruction) { *p = in })
	}
	// cilium/ebpf drops the offset of ALU instructions it has no
	// mnemonic for, so those cases are checked against the kernel's source
	// only (kernel: false).
	for _, c := range []struct {
		name   string
		in     isa.Instruction
		msg    string
		kernel bool
	}{
		{"alu off", isa.Instruction{Op: isa.ClassALU64 | isa.ALUAdd, Dst: 1, Off: 1, Imm: 1}, "BPF_ALU uses reserved fields", false},
		{"alu x imm", isa.Instruction{Op: isa.ClassALU64 | isa.ALUAdd | isa.SrcX, Dst: 1, Src: 1, Imm: 3}, "BPF_ALU uses reserved fields", true},
		{"alu32 k src", isa.Instruction{Op: isa.ClassALU | isa.ALUSub, Dst: 1, Src: 4, Imm: 3}, "BPF_ALU uses reserved fields", true},
		{"mov k off", isa.Instruction{Op: isa.ClassALU64 | isa.ALUMov, Dst: 1, Off: 8, Imm: 3}, "BPF_MOV uses reserved fields", true},
		{"movsx bad size", isa.Instruction{Op: isa.ClassALU64 | isa.ALUMov | isa.SrcX, Dst: 1, Src: 1, Off: 24}, "BPF_MOV uses reserved fields", false},
		{"neg src", isa.Instruction{Op: isa.ClassALU64 | isa.ALUNeg, Dst: 1, Src: 2}, "BPF_NEG uses reserved fields", true},
		{"end imm", isa.Instruction{Op: isa.ClassALU | isa.ALUEnd, Dst: 1, Imm: 7}, "BPF_END uses reserved fields", true},
		{"jmp x imm", isa.Instruction{Op: isa.ClassJMP | isa.JumpEQ | isa.SrcX, Dst: 1, Src: 1, Imm: 3}, "BPF_JMP/JMP32 uses reserved fields", true},
		{"jmp32 k src", isa.Instruction{Op: isa.ClassJMP32 | isa.JumpGT, Dst: 1, Src: 2, Imm: 3}, "BPF_JMP/JMP32 uses reserved fields", true},
		{"ja imm", isa.Instruction{Op: isa.OpJA, Imm: 1}, "BPF_JA uses reserved fields", true},
		{"call dst", isa.Instruction{Op: isa.OpCall, Dst: 1, Imm: 5}, "BPF_CALL uses reserved fields", true},
		{"st src", isa.Instruction{Op: isa.ClassST | isa.ModeMEM | isa.SizeDW, Dst: 10, Src: 1, Off: -8}, "BPF_ST uses reserved fields", true},
		{"stx imm", isa.Instruction{Op: isa.ClassSTX | isa.ModeMEM | isa.SizeDW, Dst: 10, Src: 1, Off: -8, Imm: 5}, "BPF_STX uses reserved fields", true},
		{"atomic opcode", isa.Instruction{Op: isa.ClassSTX | isa.ModeATOMIC | isa.SizeDW, Dst: 10, Src: 1, Off: -8, Imm: 0x77}, "BPF_ATOMIC uses invalid atomic opcode", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			runCases(t, []vcase{
				{name: "dead", asm: dead, edit: set(c.in), noKernel: !c.kernel},
				{name: "live", asm: live, edit: set(c.in), err: c.msg, kmsg: c.kernel, noKernel: !c.kernel},
			})
		})
	}
	// What the kernel checks of every instruction at load stays a load
	// error, reached or not.
	runCases(t, []vcase{
		{name: "ldx imm dead", asm: dead, edit: set(isa.Instruction{Op: isa.ClassLDX | isa.ModeMEM | isa.SizeDW, Dst: 1, Src: 10, Off: -8, Imm: 1}), err: "BPF_LDX uses reserved fields", kmsg: true},
		{name: "unknown opcode dead", asm: dead, edit: set(isa.Instruction{Op: 0xff}), err: "unknown opcode 0xff"},
	})
}
