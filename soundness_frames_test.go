package bpfvm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/verifier"
	"github.com/bpfvm/bpfvm/vm"
)

// asmSpec builds a collection of XDP programs written in kernel assembly;
// map[fd:N] names the N-th of maps. Programs with more than one function
// get BTF func_info, which the kernel wants for tail calls from
// subprograms.
func asmSpec(t *testing.T, maps []*ebpf.MapSpec, progs map[string]string) *ebpf.CollectionSpec {
	t.Helper()
	spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{}, Programs: map[string]*ebpf.ProgramSpec{}}
	for _, m := range maps {
		spec.Maps[m.Name] = m
	}
	for name, src := range progs {
		insns, err := isa.Assemble(src)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		kinsns, err := asm.AppendInstructions(nil, bytes.NewReader(isa.EncodeProgram(insns)), binary.LittleEndian, "linux")
		if err != nil {
			t.Fatal(err)
		}
		starts := map[int]bool{}
		for pc, ins := range insns {
			if ins.IsLocalCall() || ins.IsPseudoFunc() {
				starts[pc+1+int(ins.Imm)] = true
			}
		}
		proto := &btf.FuncProto{Return: &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}}
		pc := 0
		for i := range kinsns {
			if ins := &kinsns[i]; ins.IsLoadFromMap() {
				// By name, with no fd: loaders keep loads that have one.
				m := maps[ins.Constant&0xffffffff]
				ins.Constant &^= 0xffffffff
				*ins = ins.WithReference(m.Name)
			}
			if len(starts) > 0 && (pc == 0 || starts[pc]) {
				kinsns[i] = btf.WithFuncMetadata(kinsns[i], &btf.Func{Name: fmt.Sprintf("%s_%d", name, pc), Type: proto, Linkage: btf.StaticFunc})
			}
			pc += int(kinsns[i].Size() / asm.InstructionSize)
		}
		kinsns[0] = kinsns[0].WithSymbol(name)
		spec.Programs[name] = &ebpf.ProgramSpec{Name: name, Type: ebpf.XDP, License: "GPL", Instructions: kinsns}
	}
	return spec
}

// kernelRejects checks that the running kernel's verifier rejects spec,
// where bpf() is permitted.
func kernelRejects(t *testing.T, spec *ebpf.CollectionSpec) {
	t.Helper()
	if os.Getuid() != 0 || rlimit.RemoveMemlock() != nil {
		return
	}
	c, err := ebpf.NewCollection(spec.Copy())
	if err == nil {
		c.Close()
		t.Fatal("the kernel accepts the program")
	}
	var ve *ebpf.VerifierError
	if !errors.As(err, &ve) {
		t.Fatalf("kernel load: %v, want a verifier rejection", err)
	}
}

// runModes loads spec on both engines, checked (NoVerify) and verified,
// and calls f with each collection.
func runModes(t *testing.T, spec *ebpf.CollectionSpec, f func(t *testing.T, c *bpfvm.Collection)) {
	t.Helper()
	for _, opts := range []bpfvm.ProgramOptions{
		{NoVerify: true, Engine: bpfvm.EngineInterpreter}, {NoVerify: true, Engine: bpfvm.EngineJIT},
		{Engine: bpfvm.EngineInterpreter}, {Engine: bpfvm.EngineJIT},
	} {
		t.Run(fmt.Sprintf("noverify=%v engine %d", opts.NoVerify, opts.Engine), func(t *testing.T) {
			c, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: opts})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			f(t, c)
		})
	}
}

// frameMaps are the maps of the tail call programs: a writable array, a
// read-only one (for programs) and the prog array whose slot 0 holds the
// program "target".
var frameMaps = []*ebpf.MapSpec{
	{Name: "rw", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1},
	{Name: "ro", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1, Flags: 0x80}, // BPF_F_RDONLY_PROG
	{Name: "jmp", Type: ebpf.ProgramArray, KeySize: 4, ValueSize: 4, MaxEntries: 1},
}

// Programs of the tail call tests. The subprogram f keeps a pointer to the
// writable map's value across a tail call to "target", which returns the
// address of the read-only map's value: the caller of f gets that address.
const (
	// tailTarget returns the address of the read-only map's value.
	tailTarget = "r0 = map_value[fd:1]+0 ll\nexit"
	// tailSub looks up rw[0] into r6 (0 when absent), tail-calls slot 0
	// of jmp and returns r6.
	tailSub = "f: r9 = r1\n*(u32 *)(r10 -4) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto fz\nr6 = r0\n" +
		"r1 = r9\nr2 = map[fd:2] ll\nr3 = 0\ncall bpf_tail_call#12\nr0 = r6\nexit\nfz: r0 = 0\nexit\n"
	// tailWrite writes through what f returned: the program.
	tailWrite = "call f\nif r0 == 0 goto out\nr1 = 7\n*(u64 *)(r0 +0) = r1\nout: r0 = 2\nexit\n" + tailSub
	// tailSum returns what f returned plus 1040: the target's R0 comes
	// back to f's caller, whose r6 (40) is kept for it whatever f and the
	// target do with theirs.
	tailSum = "r6 = 40\ncall f\nr0 += r6\nr0 += 1000\nexit\nf: r6 = 1\nr9 = r1\nr1 = r9\nr2 = map[fd:2] ll\nr3 = 0\ncall bpf_tail_call#12\nr0 = 3\nexit\n"
	// tailTarget7 returns 7, with r6 changed.
	tailTarget7 = "r6 = 99\nr0 = 7\nexit"
)

// A subprogram that tail-calls returns the target's R0 to its caller, not
// its own: the verifier rejects a caller that writes through the pointer it
// expects (it wrote the read-only map before); checked mode stops the
// write; and the engines give the caller the target's R0, as the kernel.
func TestTailCallFromSubprogram(t *testing.T) {
	spec := asmSpec(t, frameMaps, map[string]string{"main": tailWrite, "target": tailTarget})
	kernelRejects(t, spec)
	_, err := bpfvm.NewCollection(spec)
	var ve *bpfvm.VerifierError
	if !errors.As(err, &ve) || !errors.Is(err, verifier.ErrRejected) {
		t.Fatalf("load: %v, want a verifier rejection", err)
	}
	for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		t.Run(fmt.Sprintf("checked engine %d", e), func(t *testing.T) {
			c, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{NoVerify: true, Engine: e}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := c.Maps["jmp"].Put(uint32(0), c.Programs["target"]); err != nil {
				t.Fatal(err)
			}
			_, _, err = c.Programs["main"].Test(make([]byte, 64))
			if !errors.Is(err, vm.ErrMemory) {
				t.Errorf("checked run: %v, want %v", err, vm.ErrMemory)
			}
			var v uint64
			if err := c.Maps["ro"].Lookup(uint32(0), &v); err != nil || v != 0 {
				t.Errorf("read-only map holds %d (%v)", v, err)
			}
		})
	}

	// The accepted variant, checked and verified on both engines, against
	// the kernel: 1047 with the target in the slot, 1043 without.
	ok := asmSpec(t, frameMaps, map[string]string{"main": tailSum, "target": tailTarget7})
	kern := kernelSpec(t, ok)
	runModes(t, ok, func(t *testing.T, c *bpfvm.Collection) {
		checkRun(t, c, nil, "main", make([]byte, 64), nil, runOut{1043, nil})
		if err := c.Maps["jmp"].Put(uint32(0), c.Programs["target"]); err != nil {
			t.Fatal(err)
		}
		if kern != nil {
			if err := kern.Maps["jmp"].Put(uint32(0), kern.Programs["target"]); err != nil {
				t.Fatal(err)
			}
		}
		checkRun(t, c, kern, "main", make([]byte, 64), nil, runOut{1047, nil})
		if kern != nil {
			if err := kern.Maps["jmp"].Delete(uint32(0)); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// A target that moves the packet, tail-called from a subprogram: the
// caller's packet pointers are invalid after the call (the verifier refuses
// a read through one), and pointers it loads again see the moved packet,
// as in the kernel, on both engines, checked and verified.
func TestTailCallFromSubprogramMovesPacket(t *testing.T) {
	const (
		pkt = "r6 = *(u32 *)(r9 +0)\nr7 = *(u32 *)(r9 +4)\nr2 = r6\nr2 += 8\nif r2 > r7 goto out\n"
		// sub tail-calls slot 0 of jmp with its R1, the context.
		sub = "f: r2 = map[fd:2] ll\nr3 = 0\ncall bpf_tail_call#12\nr0 = 0\nexit\n"
		// adjust moves the packet's start 4 bytes in and returns 3.
		adjust = "r6 = r1\nr2 = 4\ncall bpf_xdp_adjust_head#44\nr0 = 3\nexit"
	)
	bad := asmSpec(t, frameMaps, map[string]string{"main": "r9 = r1\n" + pkt + "r1 = r9\ncall f\nr0 = *(u8 *)(r6 +0)\nexit\nout: r0 = 1\nexit\n" + sub, "target": adjust})
	if _, err := bpfvm.NewCollection(bad); !errors.Is(err, verifier.ErrRejected) {
		t.Fatalf("load: %v, want a verifier rejection", err)
	}
	kernelRejects(t, bad)
	// The accepted variant returns the packet's length after the call
	// plus 100 times f's result.
	good := asmSpec(t, frameMaps, map[string]string{"main": "r9 = r1\ncall f\nr0 *= 100\nr6 = *(u32 *)(r9 +0)\nr7 = *(u32 *)(r9 +4)\nr7 -= r6\nr0 += r7\nexit\n" + sub, "target": adjust})
	kern := kernelSpec(t, good)
	if kern != nil {
		if err := kern.Maps["jmp"].Put(uint32(0), kern.Programs["target"]); err != nil {
			t.Fatal(err)
		}
	}
	runModes(t, good, func(t *testing.T, c *bpfvm.Collection) {
		if err := c.Maps["jmp"].Put(uint32(0), c.Programs["target"]); err != nil {
			t.Fatal(err)
		}
		checkRun(t, c, kern, "main", make([]byte, 64), nil, runOut{300 + 60, nil})
	})
}

// Programs the verifier panicked on or accepted unsafely now load with a
// rejection through the public API; their accepted variants run clean in
// checked mode and, verified, agree with the kernel.
func TestFrameAndMetaRejections(t *testing.T) {
	for _, c := range []struct {
		name, bad, good string
		ret             uint32
	}{
		{
			// The caller kept a pointer into the popped callee frame (the
			// verifier panicked indexing it).
			name: "callee stack pointer in the caller",
			bad:  "r1 = r10\nr1 += -8\ncall f\nr0 = *(u64 *)(r10 -8)\nr0 = *(u64 *)(r0 +0)\nexit\nf: *(u64 *)(r10 -8) = 5\nr2 = r10\nr2 += -8\n*(u64 *)(r1 +0) = r2\nr0 = 0\nexit",
			good: "r1 = r10\nr1 += -8\ncall f\nr0 = *(u64 *)(r10 -8)\nexit\nf: *(u64 *)(r10 -8) = 5\nr2 = *(u64 *)(r10 -8)\n*(u64 *)(r1 +0) = r2\nr0 = 0\nexit",
			ret:  5,
		},
		{
			// meta + N <= data' with data' = data + 64 KiB: a write 64 KiB
			// past data_meta.
			name: "meta range against moved data",
			bad: "r6 = r1\nr1 = r6\nr2 = -8\ncall bpf_xdp_adjust_meta#54\nr2 = *(u32 *)(r6 +8)\nr3 = *(u32 *)(r6 +0)\n" +
				"r3 += 0x7fff\nr3 += 0x7fff\nr3 += 2\nr4 = r2\nr4 += 0xffff\nif r4 > r3 goto out\nr2 += 0xfff0\nr1 = 1\n*(u8 *)(r2 +0) = r1\nout: r0 = 2\nexit",
			good: "r6 = r1\nr1 = r6\nr2 = -8\ncall bpf_xdp_adjust_meta#54\nr2 = *(u32 *)(r6 +8)\nr3 = *(u32 *)(r6 +0)\n" +
				"r4 = r2\nr4 += 8\nif r4 > r3 goto out\nr1 = 9\n*(u64 *)(r2 +0) = r1\nr0 = *(u64 *)(r2 +0)\nexit\nout: r0 = 2\nexit",
			ret: 9,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := asmSpec(t, nil, map[string]string{"p": c.bad})
			if _, err := bpfvm.NewCollection(bad); !errors.Is(err, verifier.ErrRejected) {
				t.Fatalf("load: %v, want a verifier rejection", err)
			}
			kernelRejects(t, bad)
			good := asmSpec(t, nil, map[string]string{"p": c.good})
			kern := kernelSpec(t, good)
			runModes(t, good, func(t *testing.T, col *bpfvm.Collection) {
				checkRun(t, col, kern, "p", make([]byte, 64), nil, runOut{c.ret, nil})
			})
		})
	}
}
