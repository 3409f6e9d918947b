package bpfvm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/verifier"
)

// ldAbsVariants are the ways a program can run: both engines, checked and
// unchecked, and the JIT's budgeted, far-memory and blinded code.
var ldAbsVariants = []struct {
	name string
	opts bpfvm.ProgramOptions
}{
	{"interp", bpfvm.ProgramOptions{Engine: bpfvm.EngineInterpreter}},
	{"interp/checked", bpfvm.ProgramOptions{Engine: bpfvm.EngineInterpreter, NoVerify: true}},
	{"interp/budget", bpfvm.ProgramOptions{Engine: bpfvm.EngineInterpreter, Budget: 1 << 20}},
	{"jit", bpfvm.ProgramOptions{Engine: bpfvm.EngineJIT}},
	{"jit/checked", bpfvm.ProgramOptions{Engine: bpfvm.EngineJIT, NoVerify: true}},
	{"jit/budget", bpfvm.ProgramOptions{Engine: bpfvm.EngineJIT, Budget: 1 << 20}},
	{"jit/checked/budget", bpfvm.ProgramOptions{Engine: bpfvm.EngineJIT, NoVerify: true, Budget: 1 << 20}},
	{"jit/far", bpfvm.ProgramOptions{Engine: bpfvm.EngineJIT, JIT: bpfvm.JITOptions{Far: true}}},
	{"jit/blind", bpfvm.ProgramOptions{Engine: bpfvm.EngineJIT, JIT: bpfvm.JITOptions{Blind: true}}},
	{"jit/noinline", bpfvm.ProgramOptions{Engine: bpfvm.EngineJIT, NoInline: true}},
}

// rawFuncs is the BTF func_info the LD_ABS tests give both verifiers:
// every function (the entry and every call or PseudoFunc target) returns
// int and takes nothing; the entry is global, the others static.
func rawFuncs(insns []isa.Instruction) []verifier.FuncInfo {
	entries := map[int]bool{0: true}
	for pc, ins := range insns {
		if ins.IsLocalCall() || ins.IsPseudoFunc() {
			entries[pc+1+int(ins.Imm)] = true
		}
	}
	starts := make([]int, 0, len(entries))
	for pc := range entries {
		starts = append(starts, pc)
	}
	slices.Sort(starts)
	ret := &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	funcs := make([]verifier.FuncInfo, len(starts))
	for i, pc := range starts {
		funcs[i] = verifier.FuncInfo{Start: pc, Name: fmt.Sprintf("f%d", pc), Global: pc == 0, Proto: &btf.FuncProto{Return: ret}}
	}
	return funcs
}

// kernelFuncProgram loads insns into the kernel with BTF func_info for
// every function (the kernel wants it for LD_ABS in subprograms and for
// callbacks). It returns nil, nil where bpf() is not permitted, and the
// verifier's error for a rejection.
func kernelFuncProgram(t *testing.T, typ ebpf.ProgramType, insns []isa.Instruction) (*ebpf.Program, error) {
	t.Helper()
	if os.Getuid() != 0 {
		return nil, nil
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, nil
	}
	kinsns, err := asm.AppendInstructions(nil, bytes.NewReader(isa.EncodeProgram(insns)), binary.LittleEndian, "linux")
	if err != nil {
		t.Fatalf("unmarshal for the kernel: %v", err)
	}
	at := map[int]verifier.FuncInfo{}
	for _, f := range rawFuncs(insns) {
		at[f.Start] = f
	}
	slot := 0
	for i := range kinsns {
		if f, ok := at[slot]; ok {
			linkage := btf.StaticFunc
			if f.Global {
				linkage = btf.GlobalFunc
			}
			kinsns[i] = btf.WithFuncMetadata(kinsns[i], &btf.Func{Name: f.Name, Type: f.Proto, Linkage: linkage})
		}
		slot += int(kinsns[i].Size() / 8)
	}
	p, err := ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{Type: typ, Instructions: kinsns, License: "GPL"},
		ebpf.ProgramOptions{LogLevel: ebpf.LogLevelBranch, LogSizeStart: 1 << 20})
	if errors.Is(err, os.ErrPermission) && !errors.As(err, new(*ebpf.VerifierError)) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { p.Close() })
	return p, nil
}

// TestLdAbsReturnsFromFunction checks that an LD_ABS or LD_IND out of
// bounds returns 0 from the function it is in, not from the program, as
// the kernel's expansion of the load into a helper call and an exit does:
// on every engine variant, against the kernel's BPF_PROG_TEST_RUN.
func TestLdAbsReturnsFromFunction(t *testing.T) {
	pkt := make([]byte, 80)
	for i := range pkt {
		pkt[i] = byte(i + 1)
	}
	cases := []struct {
		name string
		asm  string
		// want per packet length: what the kernel returns (checked
		// against it where bpf() is permitted).
		want map[int]uint32
		// reject, when set, is part of the verifier's message for a
		// program both verifiers refuse.
		reject string
		// kernelBug marks a program the kernel refuses with "verifier
		// bug" (EFAULT): a kernel fault, not a verdict to follow.
		kernelBug bool
	}{
		{name: "main in range", asm: "r6 = r1\nr0 = *(u8 *)skb[5]\nexit",
			want: map[int]uint32{64: 6}},
		{name: "main ld_ind keeps R6-R9", asm: "r6 = r1\nr7 = 3\nr8 = 40\nr9 = 500\nr0 = *(u8 *)skb[r7 + 1]\nr0 += r7\nr0 += r8\nr0 += r9\nr1 = r6\nr0 += 6000\nexit",
			want: map[int]uint32{64: 5 + 3 + 40 + 500 + 6000, 14: 5 + 3 + 40 + 500 + 6000}},
		{name: "main out of range", asm: "r6 = r1\nr0 = *(u32 *)skb[61]\nr0 = 7\nexit",
			want: map[int]uint32{64: 0, 65: 7}},
		{name: "subprog ld_abs", asm: "r6 = r1\ncall f\nr0 += 100\nexit\nf: r6 = r1\nr0 = *(u16 *)skb[40]\nr0 &= 0xff\nexit",
			want: map[int]uint32{64: 100 + 42, 14: 100, 41: 100, 42: 142}},
		{name: "subprog ld_abs keeps callee-saved", asm: "r6 = r1\nr7 = 5\nr8 = 6\nr9 = 7\ncall f\nr0 += r7\nr0 += r8\nr0 += r9\nexit\nf: r6 = r1\nr7 = 1000\nr8 = 2000\nr9 = 3000\nr0 = *(u8 *)skb[30]\nr0 += r7\nexit",
			want: map[int]uint32{64: 18 + 31 + 1000, 30: 18}},
		{name: "subprog ld_ind", asm: "r6 = r1\nr2 = 20\ncall f\nr0 += 200\nexit\nf: r6 = r1\nr7 = r2\nr0 = *(u32 *)skb[r7 + 16]\nr0 &= 0xff\nexit",
			want: map[int]uint32{64: 200 + 40, 39: 200, 40: 240}},
		{name: "subprog ld_ind negative", asm: "r6 = r1\ncall f\nr0 += 200\nexit\nf: r6 = r1\nr7 = -8\nr0 = *(u8 *)skb[r7 + 0]\nexit",
			want: map[int]uint32{64: 200}},
		{name: "subprog ld_ind wraps to 32 bits", asm: "r6 = r1\ncall f\nr0 += 200\nexit\nf: r6 = r1\nr7 = 0x100000003 ll\nr0 = *(u8 *)skb[r7 + 1]\nexit",
			want: map[int]uint32{64: 205}},
		{name: "nested", asm: "r6 = r1\ncall f\nr0 += 1000\nexit\nf: call g\nr0 += 100\nexit\ng: r6 = r1\nr0 = *(u8 *)skb[50]\nexit",
			want: map[int]uint32{64: 1100 + 51, 50: 1100}},
		{name: "second load fails", asm: "r6 = r1\ncall f\nr0 += 1000\nexit\nf: r6 = r1\nr0 = *(u8 *)skb[2]\nr7 = r0\nr0 = *(u8 *)skb[50]\nr0 = r7\nexit",
			want: map[int]uint32{64: 1003, 50: 1000}},
		// (A loop over the call trips a kernel verifier bug: "static
		// subprog unexpected regs" in __mark_chain_precision, 6.18.)
		{name: "three calls", asm: "r6 = r1\nr2 = 0\ncall f\nr8 = r0\nr1 = r6\nr2 = 20\ncall f\nr8 += r0\nr1 = r6\nr2 = 40\ncall f\nr0 += r8\nexit\nf: r6 = r1\nr0 = *(u8 *)skb[r2 + 0]\nexit",
			want: map[int]uint32{64: 1 + 21 + 41, 25: 1 + 21, 14: 1}},
		{name: "after main load fails", asm: "r6 = r1\nr0 = *(u8 *)skb[50]\ncall f\nr0 += 1000\nexit\nf: r0 = 1\nexit",
			want: map[int]uint32{64: 1001, 50: 0}},
		{name: "callee value unknown to the caller", asm: "r6 = r1\ncall f\nif r0 == 23 goto ok\nr0 = *(u64 *)(r0 +0)\nok: exit\nf: r6 = r1\nr0 = *(u8 *)skb[50]\nr0 = 23\nexit",
			reject: "invalid mem access 'scalar'"},
		{name: "callee value bounded", asm: "r6 = r1\ncall f\nif r0 == 23 goto ok\nr0 = 1\nok: exit\nf: r6 = r1\nr0 = *(u8 *)skb[50]\nr0 = 23\nexit",
			want: map[int]uint32{64: 23, 50: 1}},
		// A callback never has the context in R6: bpf_loop passes it a
		// stack pointer or NULL, so both verifiers refuse the load. Run
		// unverified, it returns 0 (continue) from the callback.
		{name: "bpf_loop callback", asm: "r6 = r1\nr1 = 4\nr2 = subprog[cb] ll\nr3 = 0\nr4 = 0\ncall bpf_loop#181\nexit\ncb: r0 = *(u8 *)skb[60]\nr0 = 1\nexit",
			reject: "R6 !read_ok", want: map[int]uint32{64: 1, 14: 4}},
		// But the context can reach a callback spilled in its caller's
		// stack, which bpf_loop passes on. (Loaded directly in the
		// callback, 6.18 fails with "verifier bug: callback unexpected
		// regs 1" in __mark_chain_precision; through a subprogram it
		// accepts.)
		{name: "bpf_loop callback ctx from the stack", asm: "*(u64 *)(r10 -8) = r1\nr6 = r1\nr1 = 4\nr2 = subprog[cb] ll\nr3 = r10\nr3 += -8\nr4 = 0\ncall bpf_loop#181\nexit\ncb: r6 = *(u64 *)(r2 +0)\nr0 = *(u8 *)skb[60]\nr0 = 1\nexit",
			reject: "BPF_LD_[ABS|IND] in a callback", want: map[int]uint32{64: 1, 14: 4}, kernelBug: true},
		{name: "bpf_loop callback ctx from the stack, subprog", asm: "*(u64 *)(r10 -8) = r1\nr6 = r1\nr1 = 4\nr2 = subprog[cb] ll\nr3 = r10\nr3 += -8\nr4 = 0\ncall bpf_loop#181\nexit\ncb: r1 = *(u64 *)(r2 +0)\ncall f\nr0 &= 1\nexit\nf: r6 = r1\nr0 = *(u8 *)skb[60]\nr0 = 1\nexit",
			want: map[int]uint32{64: 1, 14: 4}},
		{name: "bpf_loop callback ctx in R6", asm: "r6 = r1\nr1 = 4\nr2 = subprog[cb] ll\nr3 = 0\nr4 = 0\ncall bpf_loop#181\nexit\ncb: r6 = r2\nr0 = *(u8 *)skb[60]\nr0 = 1\nexit",
			reject: "R6 != pointer to skb", want: map[int]uint32{64: 1, 14: 4}},
	}
	for _, typ := range []ebpf.ProgramType{ebpf.SocketFilter, ebpf.SchedCLS} {
		for _, c := range cases {
			t.Run(typ.String()+"/"+c.name, func(t *testing.T) {
				insns, err := isa.Assemble(c.asm)
				if err != nil {
					t.Fatal(err)
				}
				kern, kerr := kernelFuncProgram(t, typ, insns)
				switch {
				case c.kernelBug:
					if kerr == nil || !errors.Is(kerr, syscall.EFAULT) {
						t.Logf("kernel verdict (a kernel bug expected): %v", kerr)
					}
					kern = nil
				case (kerr != nil) != (c.reject != ""):
					t.Errorf("kernel verdict: %v", kerr)
				}
				for _, v := range ldAbsVariants {
					opts := v.opts
					opts.Funcs = rawFuncs(insns)
					p, err := bpfvm.NewRawProgram(c.name, typ, insns, opts)
					if c.reject != "" && !v.opts.NoVerify {
						if err == nil || !strings.Contains(err.Error(), c.reject) {
							t.Errorf("%s: verifier: %v, want %q", v.name, err, c.reject)
						}
						if err == nil {
							p.Close()
						}
						continue
					}
					if err != nil {
						t.Fatalf("%s: %v", v.name, err)
					}
					for n, want := range c.want {
						data := ldAbsFrame(typ, pkt[:n])
						res, err := p.Execute(&bpfvm.RunOptions{Data: data})
						if err != nil {
							t.Errorf("%s/len %d: %v", v.name, n, err)
							continue
						}
						if uint32(res.R0) != want {
							t.Errorf("%s/len %d: returned %d, want %d", v.name, n, res.R0, want)
						}
					}
					p.Close()
				}
				if kern == nil {
					return
				}
				for n, want := range c.want {
					data := ldAbsFrame(typ, pkt[:n])
					ret, err := kern.Run(&ebpf.RunOptions{Data: data})
					if err != nil {
						t.Fatalf("kernel run: %v", err)
					}
					if ret != want {
						t.Errorf("kernel/len %d: returned %d, want %d", n, ret, want)
					}
				}
			})
		}
	}
}

// ldAbsFrame is the frame to run a program on so that its packet is pkt:
// a socket filter's packet starts after the Ethernet header.
func ldAbsFrame(typ ebpf.ProgramType, pkt []byte) []byte {
	if typ != ebpf.SocketFilter {
		return pkt
	}
	return append(make([]byte, 14), pkt...)
}

// TestLdAbsHeaderOffsets checks the negative offsets of LD_ABS and LD_IND
// that name headers (SKF_NET_OFF, SKF_LL_OFF), with the kernel's bounds,
// against the kernel's test run. Both program types see the same frame
// here: its link-layer header at the start, the network header 14 bytes
// in, the packet ending with the frame.
func TestLdAbsHeaderOffsets(t *testing.T) {
	frame := make([]byte, 64)
	for i := range frame {
		frame[i] = byte(i + 1)
	}
	load := func(size string, off int) string {
		return fmt.Sprintf("r6 = r1\nr0 = *(%s *)skb[%d]\nr0 += 1\nexit", size, off)
	}
	const net, ll = -0x100000, -0x200000
	cases := []struct {
		name string
		asm  string
		want uint32
	}{
		{"ll start", load("u8", ll), 2},
		{"ll 2", load("u8", ll+2), 4},
		{"ll word at the end", load("u32", ll+60), 0x3d3e3f41},
		{"ll word past the end", load("u32", ll+61), 0},
		{"ll half past the end", load("u16", ll+63), 0},
		{"ll far past the end", load("u8", ll+0xfffff), 0},
		{"below ll", load("u8", ll-1), 0},
		{"net start", load("u8", net), 0x10},
		{"net 2", load("u8", net+2), 0x12},
		{"net word at the end", load("u32", net+46), 0x3d3e3f41},
		{"net word past the end", load("u32", net+47), 0},
		{"ancillary", load("u8", -0x1000), 0},
		{"minus one", load("u8", -1), 0},
		{"int min", load("u8", -0x80000000), 0},
		{"ld_ind calling convention r7", "r6 = r1\nr7 = 1\nr0 = *(u32 *)skb[r7 + -0x200000]\nr0 = r7\nexit", 1},
		{"ld_ind net", "r6 = r1\nr7 = -0x100000\nr0 = *(u16 *)skb[r7 + 4]\nexit", 0x1314},
		{"ld_ind wraps to ll", "r6 = r1\nr7 = 0x7fffffff\nr0 = *(u8 *)skb[r7 + -0x7fffffff]\nr8 = -0x200000\nr0 = *(u8 *)skb[r8 + 5]\nexit", 6},
		{"subprog header fails", "r6 = r1\ncall f\nr0 += 100\nexit\nf: r6 = r1\nr0 = *(u8 *)skb[-0x1000]\nr0 = 7\nexit", 100},
		{"subprog header", "r6 = r1\ncall f\nr0 += 100\nexit\nf: r6 = r1\nr0 = *(u8 *)skb[-0x200000]\nr0 += 7\nexit", 108},
	}
	for _, typ := range []ebpf.ProgramType{ebpf.SocketFilter, ebpf.SchedCLS} {
		for _, c := range cases {
			t.Run(typ.String()+"/"+c.name, func(t *testing.T) {
				insns, err := isa.Assemble(c.asm)
				if err != nil {
					t.Fatal(err)
				}
				kern, kerr := kernelFuncProgram(t, typ, insns)
				if kerr != nil {
					t.Fatalf("kernel verdict: %v", kerr)
				}
				if kern != nil {
					ret, err := kern.Run(&ebpf.RunOptions{Data: frame})
					if err != nil {
						t.Fatalf("kernel run: %v", err)
					}
					if ret != c.want {
						t.Errorf("kernel returned %#x, want %#x", ret, c.want)
					}
				}
				for _, v := range ldAbsVariants {
					opts := v.opts
					opts.Funcs = rawFuncs(insns)
					p, err := bpfvm.NewRawProgram(c.name, typ, insns, opts)
					if err != nil {
						t.Fatalf("%s: %v", v.name, err)
					}
					res, err := p.Execute(&bpfvm.RunOptions{Data: frame})
					p.Close()
					if err != nil {
						t.Errorf("%s: %v", v.name, err)
					} else if uint32(res.R0) != c.want {
						t.Errorf("%s: returned %#x, want %#x", v.name, res.R0, c.want)
					}
				}
			})
		}
	}
}
