package verifier_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/verifier"
)

// vcase is a program with its expected verdict. Maps are referenced from
// the assembly as `rN = map[idx:I]`... written as LD_IMM64 with PseudoMapFD
// and the map's index.
type vcase struct {
	name string
	typ  ebpf.ProgramType
	// attach is the expected attach type (ProgramSpec.AttachType).
	attach ebpf.AttachType
	maps   []maps.Spec
	asm    string
	err    string // "" accepts; otherwise a substring of the error
	unpriv bool
	// noKernel skips the kernel comparison (e.g. our message differs on
	// purpose, or the kernel needs BTF we do not give it).
	noKernel bool
	// kmsg requires the kernel's log to contain err too: our message
	// matches the kernel's word for word.
	kmsg bool
	// klog is a substring the kernel's log must contain, for rejections
	// whose kernel wording differs from ours: it shows that the kernel
	// rejects for the same reason.
	klog string
	// flags are the program's load flags (verifier.Options.Flags).
	flags uint32
	// edit changes the assembled program, for encodings the assembler
	// does not write.
	edit func([]isa.Instruction)
	// values are values of key 0 (u32 keys) by map index, written before
	// the load; maps read-only to programs are then frozen in the kernel
	// (as constant-string arguments require) and give the verifier their
	// value (MapInfo.Frozen, MapInfo.ReadOnlyValue) unless unfrozen.
	values map[int][]byte
	// unfrozen leaves the maps with values unfrozen, in the kernel and for
	// us: their contents are not fixed.
	unfrozen bool
	// funcs declares functions by their index (1 is the first after the
	// entry) with their BTF, e.g. global ones with a prototype; the rest
	// get static ones taking five scalars. Both verifiers get the same
	// func_info.
	funcs map[int]*btf.Func
	// excb are the first instructions of functions no call reaches, such
	// as an exception callback (throw_test.go).
	excb []int
	// noBTF loads a program of several functions without func_info.
	noBTF bool
	// kinsns, when set, is the number of instructions kernel 6.18
	// processes for the program: ours must be at most that, and at most
	// the running kernel's count where it runs.
	kinsns int
	// attachTo is the attach target of a tracing program
	// (ProgramSpec.AttachTo), found in the host's BTF (btf is implied).
	attachTo string
	// btf verifies against the host's vmlinux BTF (Options.KernelTypes),
	// the one the kernel has: the case's type ids are the host's. The
	// case is skipped where the host has none.
	btf bool
}

// Kernel comparison counts, reported by TestMain.
var kernelCompared, kernelAgreed atomic.Int64

var arrayMap = maps.Spec{Name: "arr", Type: maps.Array, KeySize: 4, ValueSize: 8, MaxEntries: 4}
var hashMap = maps.Spec{Name: "hash", Type: maps.Hash, KeySize: 8, ValueSize: 16, MaxEntries: 16}

// progType is the description of t, Raw for a type bpfvm lacks.
func progType(t ebpf.ProgramType) *progtype.Type {
	return progTypeAttach(t, 0)
}

// progTypeAttach is the description of t for attach type a, Raw for a type
// bpfvm lacks.
func progTypeAttach(t ebpf.ProgramType, a ebpf.AttachType) *progtype.Type {
	pt, err := progtype.OfAttach(t, a)
	if err != nil {
		return progtype.Raw
	}
	return pt
}

func runCases(t *testing.T, cases []vcase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			insns, err := isa.Assemble(c.asm)
			if err != nil {
				t.Fatal(err)
			}
			if c.edit != nil {
				c.edit(insns)
			}
			var infos []verifier.MapInfo
			for i, m := range c.maps {
				info := verifier.MapInfo{Name: m.Name, Spec: m, Index: i}
				if v, ok := c.values[i]; ok && m.Flags&maps.FlagRdonlyProg != 0 && !c.unfrozen {
					info.Frozen, info.ReadOnlyValue = true, v
				}
				infos = append(infos, info)
			}
			typ := c.typ
			if typ == ebpf.UnspecifiedProgram {
				typ = ebpf.XDP
			}
			var funcs []verifier.FuncInfo
			if !c.noBTF {
				funcs = funcInfos(insns, c.funcs, c.excb...)
			}
			var kernelTypes *btf.Spec
			var target *verifier.AttachTarget
			if c.btf || c.attachTo != "" {
				kernelTypes = hostBTF(t)
			}
			if c.attachTo != "" {
				if target, err = verifier.ResolveAttach(kernelTypes, c.attach, c.attachTo); err != nil {
					t.Fatal(err)
				}
			}
			res, err := verifier.Verify(insns, verifier.Options{Type: progTypeAttach(typ, c.attach), Maps: infos, Unprivileged: c.unpriv, Flags: c.flags, LogLevel: 2, Funcs: funcs, KernelTypes: kernelTypes, Attach: target})
			switch {
			case c.err == "" && err != nil:
				t.Errorf("rejected: %v\n%s", err, res.Log)
			case c.err != "" && err == nil:
				t.Errorf("accepted, want error %q\n%s", c.err, res.Log)
			case c.err != "" && !strings.Contains(err.Error(), c.err):
				t.Errorf("error %q, want %q\n%s", err, c.err, res.Log)
			case err != nil && !errors.Is(err, verifier.ErrRejected):
				t.Errorf("error %v does not wrap ErrRejected", err)
			}
			if c.kinsns > 0 && res.Stats.Processed > c.kinsns {
				t.Errorf("processed %d instructions, the kernel %d\n%s", res.Stats.Processed, c.kinsns, res.Log)
			}
			if !c.unpriv && !c.noKernel && os.Getenv("BPFVM_UNPRIV_ALL") != "" {
				unprivSweep(t, c, typ, infos, insns, funcs)
			}
			if !c.noKernel {
				klog, k, ran := kernelVerdictAs(t, c.unpriv, typ, c.attach, c.attachTo, c.flags, c.maps, c.values, !c.unfrozen, insns, funcs, err)
				if ran && k > 0 && c.kinsns > 0 && res.Stats.Processed > k {
					t.Errorf("processed %d instructions, the running kernel %d", res.Stats.Processed, k)
				}
				want := c.klog
				if c.kmsg {
					want = c.err
				}
				if ran && want != "" && !strings.Contains(klog, want) {
					t.Errorf("kernel log lacks %q:\n%s", want, klog)
				}
				if ran && os.Getenv("BPFVM_KERNEL_LOG") != "" {
					// For writing cases: our message next to the kernel's.
					t.Logf("ours: %v (%d insns)\nkernel: %s (%d insns)", err, res.Stats.Processed, lastLines(klog, 2), k)
				}
			}
		})
	}
}

// unprivSweep verifies a privileged case again as an unprivileged load and
// compares the verdict with the kernel's, loaded without capabilities
// (BPFVM_UNPRIV_ALL=1, where kernel.unprivileged_bpf_disabled is 0): a
// differential test of the unprivileged rules on every case of the
// suite. Disagreements are reported with both messages; the tally is in
// TestMain's summary.
func unprivSweep(t *testing.T, c vcase, typ ebpf.ProgramType, infos []verifier.MapInfo, insns []isa.Instruction, funcs []verifier.FuncInfo) {
	t.Helper()
	if c.btf || c.attachTo != "" || typ != ebpf.SocketFilter && typ != ebpf.CGroupSKB {
		return
	}
	res, err := verifier.Verify(insns, verifier.Options{Type: progTypeAttach(typ, c.attach), Maps: infos, Unprivileged: true, Flags: c.flags, Funcs: funcs})
	klog, n, ran, kerr := kernelLoad(t, true, typ, c.attach, "", c.flags, c.maps, c.values, !c.unfrozen, insns, funcs)
	if !ran {
		return
	}
	unprivCompared.Add(1)
	if (kerr == nil) != (err == nil) {
		t.Errorf("unprivileged: bpfvm %v; kernel %v: %s", err, kerr, lastLines(klog, 2))
		return
	}
	if n > 0 {
		// Speculative paths count too (the Spectre mitigations).
		unprivProcessed.Add(int64(res.Stats.Processed))
		unprivKernelProcessed.Add(int64(n))
		if res.Stats.Processed > n {
			t.Errorf("unprivileged: processed %d instructions, the kernel %d", res.Stats.Processed, n)
			return
		}
	}
	unprivAgreed.Add(1)
}

// unprivCompared and unprivAgreed count the unprivileged sweep's
// comparisons, unprivProcessed and unprivKernelProcessed the
// instructions each verifier processed in them.
var unprivCompared, unprivAgreed, unprivProcessed, unprivKernelProcessed atomic.Int64

// lastLines returns the last n non-empty lines of a log.
func lastLines(log string, n int) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		if !strings.HasPrefix(l, "processed ") && !strings.HasPrefix(l, "verification time") {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// kernelVerdictAttach loads the program, of expected attach type attach,
// into the running kernel and compares its verdict with ours; it skips
// where bpf() is not permitted. It returns the kernel's log of a rejection
// and whether the comparison ran.
func kernelVerdictAttach(t *testing.T, typ ebpf.ProgramType, attach ebpf.AttachType, flags uint32, specs []maps.Spec, values map[int][]byte, freeze bool, insns []isa.Instruction, funcs []verifier.FuncInfo, ours error) (string, bool) {
	t.Helper()
	log, _, ran := kernelVerdictInsns(t, typ, attach, flags, specs, values, freeze, insns, funcs, ours)
	return log, ran
}

// kernelVerdictInsns is kernelVerdictAttach that also returns the
// instructions the kernel processed (0 if its log does not say).
func kernelVerdictInsns(t *testing.T, typ ebpf.ProgramType, attach ebpf.AttachType, flags uint32, specs []maps.Spec, values map[int][]byte, freeze bool, insns []isa.Instruction, funcs []verifier.FuncInfo, ours error) (string, int, bool) {
	t.Helper()
	return kernelVerdictTo(t, typ, attach, "", flags, specs, values, freeze, insns, funcs, ours)
}

// kernelVerdictTo is kernelVerdictInsns for a program attaching to
// attachTo (ProgramSpec.AttachTo, "" for none).
func kernelVerdictTo(t *testing.T, typ ebpf.ProgramType, attach ebpf.AttachType, attachTo string, flags uint32, specs []maps.Spec, values map[int][]byte, freeze bool, insns []isa.Instruction, funcs []verifier.FuncInfo, ours error) (string, int, bool) {
	t.Helper()
	return kernelVerdictAs(t, false, typ, attach, attachTo, flags, specs, values, freeze, insns, funcs, ours)
}

// kernelVerdictAs is kernelVerdictTo, loading the program without
// capabilities when unpriv is set (the maps are made with them). That
// comparison runs only where the kernel lets such loads in
// (kernel.unprivileged_bpf_disabled = 0), and only for the program types
// it allows them: socket filters and cgroup skb programs.
func kernelVerdictAs(t *testing.T, unpriv bool, typ ebpf.ProgramType, attach ebpf.AttachType, attachTo string, flags uint32, specs []maps.Spec, values map[int][]byte, freeze bool, insns []isa.Instruction, funcs []verifier.FuncInfo, ours error) (string, int, bool) {
	t.Helper()
	log, n, ran, kerr := kernelLoad(t, unpriv, typ, attach, attachTo, flags, specs, values, freeze, insns, funcs)
	if !ran {
		return "", 0, false
	}
	kernelCompared.Add(1)
	if (kerr == nil) != (ours == nil) {
		t.Errorf("kernel verdict differs: kernel %v, bpfvm %v\nkernel log:\n%s", kerr, ours, log)
	} else {
		kernelAgreed.Add(1)
	}
	return log, n, true
}

// kernelLoad loads the program into the running kernel: the log of a
// rejection, the instructions it processed (0 if its log does not say),
// whether it could be loaded at all, and its error.
func kernelLoad(t *testing.T, unpriv bool, typ ebpf.ProgramType, attach ebpf.AttachType, attachTo string, flags uint32, specs []maps.Spec, values map[int][]byte, freeze bool, insns []isa.Instruction, funcs []verifier.FuncInfo) (log string, n int, ran bool, kerr error) {
	t.Helper()
	if os.Getuid() != 0 {
		return "", 0, false, nil
	}
	if unpriv && (!unprivilegedBPF() || typ != ebpf.SocketFilter && typ != ebpf.CGroupSKB) {
		return "", 0, false, nil
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return "", 0, false, nil
	}
	var fds []int
	for _, s := range specs {
		ks := &ebpf.MapSpec{Type: ebpf.MapType(s.Type), KeySize: s.KeySize, ValueSize: s.ValueSize, MaxEntries: s.MaxEntries, Flags: s.Flags, MapExtra: s.MapExtra}
		if s.Value != nil {
			// The same value BTF, so that the kernel finds the same
			// special fields, with the spec's key or one of the key's
			// size.
			ks.Key, ks.Value = s.Key, s.Value
			if ks.Key == nil {
				ks.Key = &btf.Int{Name: "key", Size: s.KeySize}
			}
		}
		if in := s.InnerMap; in != nil {
			ks.InnerMap = &ebpf.MapSpec{Type: ebpf.MapType(in.Type), KeySize: in.KeySize, ValueSize: in.ValueSize, MaxEntries: in.MaxEntries, Flags: in.Flags}
			if in.Value != nil {
				ks.InnerMap.Key, ks.InnerMap.Value = &btf.Int{Name: "key", Size: in.KeySize}, in.Value
			}
		}
		m, err := ebpf.NewMap(ks)
		if err != nil {
			t.Logf("kernel map: %v", err)
			return "", 0, false, nil
		}
		defer m.Close()
		if v, ok := values[len(fds)]; ok {
			if err := m.Put(uint32(0), v); err != nil {
				t.Fatalf("kernel map value: %v", err)
			}
			if freeze && s.Flags&maps.FlagRdonlyProg != 0 {
				if err := m.Freeze(); err != nil {
					t.Fatalf("kernel map freeze: %v", err)
				}
			}
		}
		fds = append(fds, m.FD())
	}
	patched := append([]isa.Instruction(nil), insns...)
	for i := range patched {
		if patched[i].IsLdImm64() && (patched[i].Src == isa.Register(isa.PseudoMapFD) || patched[i].Src == isa.Register(isa.PseudoMapValue)) {
			patched[i].Imm = int32(fds[patched[i].Imm])
		}
		if patched[i].Op == isa.OpCall && patched[i].Src == isa.Register(isa.CallKfunc) {
			// Kernel functions are called by their vmlinux BTF id.
			id, ok := kfuncBTFID(t, isa.KfuncName(patched[i].Imm))
			if !ok {
				return "", 0, false, nil
			}
			patched[i].Imm = id
		}
	}
	kinsns, err := asm.AppendInstructions(nil, bytes.NewReader(isa.EncodeProgram(patched)), binary.LittleEndian, "linux")
	if err != nil {
		t.Fatalf("unmarshal for the kernel: %v", err)
	}
	withFuncInfo(kinsns, funcs)
	pspec := &ebpf.ProgramSpec{Type: typ, AttachType: attach, AttachTo: attachTo, Flags: flags, Instructions: kinsns, License: "GPL"}
	popts := ebpf.ProgramOptions{LogLevel: ebpf.LogLevelBranch | ebpf.LogLevelStats, LogSizeStart: 1 << 20}
	load := ebpf.NewProgramWithOptions
	if unpriv {
		// Loaded as root first: cilium/ebpf's feature probes then run,
		// and cache their results, with every capability.
		if p, err := ebpf.NewProgramWithOptions(pspec, popts); err == nil {
			p.Close()
		}
		load = loadUnprivileged
	}
	p, err := load(pspec, popts)
	kerr = err
	var ve *ebpf.VerifierError
	stats := ""
	if kerr == nil {
		stats = p.VerifierLog
		p.Close()
	} else if errors.As(kerr, &ve) && (len(ve.Log) > 0 || !unpriv) {
		log = strings.Join(ve.Log, "\n")
		stats = log
	} else if errors.Is(kerr, os.ErrPermission) || unpriv {
		// bpf() itself is not permitted. (The verifier rejects many
		// programs with EACCES too, but then there is a log.) Without
		// capabilities, a program with func_info fails before the
		// verifier, with no log: its BTF cannot be loaded.
		return "", 0, false, nil
	}
	for _, l := range strings.Split(stats, "\n") {
		if _, err := fmt.Sscanf(l, "processed %d insns", &n); err == nil {
			break
		}
	}
	return log, n, true, kerr
}

// funcInfos gives every function of a program with more than one BTF
// func_info: those decl declares as it says, the others static, taking
// five scalars (they may read any of R1-R5) and returning int. The kernel
// needs func_info for some rules (LD_ABS in subprograms); bpfvm gets the
// same.
func funcInfos(insns []isa.Instruction, decl map[int]*btf.Func, extra ...int) []verifier.FuncInfo {
	starts := map[int]bool{}
	for _, pc := range extra {
		starts[pc] = true
	}
	for pc, ins := range insns {
		if ins.IsLocalCall() || ins.IsPseudoFunc() {
			starts[pc+1+int(ins.Imm)] = true
		}
	}
	if len(starts) == 0 {
		return nil
	}
	starts[0] = true
	var sorted []int
	for pc := range starts {
		sorted = append(sorted, pc)
	}
	slices.Sort(sorted)
	u64 := &btf.Int{Name: "u64", Size: 8}
	params := make([]btf.FuncParam, 5)
	for i := range params {
		params[i] = btf.FuncParam{Name: fmt.Sprintf("a%d", i), Type: u64}
	}
	proto := &btf.FuncProto{Return: &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}, Params: params}
	var funcs []verifier.FuncInfo
	for i, pc := range sorted {
		fn := decl[i]
		if fn == nil {
			fn = &btf.Func{Name: fmt.Sprintf("f%d", pc), Type: proto, Linkage: btf.StaticFunc}
		}
		funcs = append(funcs, verifier.NewFuncInfo(pc, fn))
	}
	return funcs
}

// withFuncInfo attaches funcs to the kernel's copy of a program.
func withFuncInfo(kinsns asm.Instructions, funcs []verifier.FuncInfo) {
	at := map[int]verifier.FuncInfo{}
	for _, f := range funcs {
		at[f.Start] = f
	}
	pc := 0
	for i := range kinsns {
		if f, ok := at[pc]; ok {
			link := btf.StaticFunc
			if f.Global {
				link = btf.GlobalFunc
			}
			kinsns[i] = btf.WithFuncMetadata(kinsns[i], &btf.Func{Name: f.Name, Type: f.Proto, Linkage: link, ParamTags: f.ParamTags, Tags: f.Tags})
		}
		pc += int(kinsns[i].Size() / asm.InstructionSize)
	}
}

// hostBTF returns the host's vmlinux BTF, skipping the test where there is
// none.
func hostBTF(t *testing.T) *btf.Spec {
	t.Helper()
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Skipf("no host BTF: %v", err)
	}
	return spec
}

// kfuncBTFID returns the vmlinux BTF id of a kernel function.
func kfuncBTFID(t *testing.T, name string) (int32, bool) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Logf("kernel BTF: %v", err)
		return 0, false
	}
	typ, err := spec.AnyTypeByName(name)
	if err != nil {
		t.Logf("kernel BTF: %v", err)
		return 0, false
	}
	id, err := spec.TypeID(typ)
	if err != nil {
		t.Logf("kernel BTF: %v", err)
		return 0, false
	}
	return int32(id), true
}

func TestControlFlow(t *testing.T) {
	runCases(t, []vcase{
		{name: "exit with r0", asm: "r0 = 0\nexit"},
		{name: "r0 not init", asm: "exit", err: "R0 !read_ok"},
		{name: "unreachable", asm: "r0 = 0\nexit\nr0 = 1\nexit", err: "unreachable insn 2"},
		{name: "bounded loop", asm: "r0 = 0\nl: r0 += 1\nif r0 < 10 goto l\nexit"},
		{name: "infinite loop", asm: "r0 = 0\nl: r0 += 0\nif r0 < 10 goto l\nexit", err: "infinite loop detected at insn 1"},
		{name: "dead branch pruned", asm: "r0 = 0\nif r0 == 1 goto bad\nexit\nbad: r0 = *(u64 *)(r0 +0)\nexit"},
		{name: "uninit read", asm: "r0 = r5\nexit", err: "R5 !read_ok"},
		{name: "write r10", asm: "r10 = 0\nr0 = 0\nexit", err: "frame pointer is read only"},
	})
}

func TestStack(t *testing.T) {
	runCases(t, []vcase{
		{name: "spill fill", asm: "r1 = 42\n*(u64 *)(r10 -8) = r1\nr0 = *(u64 *)(r10 -8)\nexit"},
		{name: "uninit stack read", asm: "r0 = *(u64 *)(r10 -8)\nexit"},
		{name: "uninit stack read unpriv", asm: "r0 = *(u64 *)(r10 -8)\nr0 = 0\nexit", err: "invalid read from stack R10 off=-8 size=8", unpriv: true},
		{name: "stack out of bounds", asm: "r1 = 0\n*(u64 *)(r10 -520) = r1\nr0 = 0\nexit", err: "invalid write to stack R10 off=-520 size=8"},
		{name: "stack above fp", asm: "r1 = 0\n*(u64 *)(r10 +0) = r1\nr0 = 0\nexit", err: "invalid write to stack R10 off=0 size=8"},
		{name: "zero store then read", asm: "*(u32 *)(r10 -4) = 0\nr0 = *(u32 *)(r10 -4)\nexit"},
		{name: "partial init unpriv", asm: "*(u32 *)(r10 -8) = 0\nr0 = *(u64 *)(r10 -8)\nr0 = 0\nexit", err: "invalid read from stack off -8+4 size 8", unpriv: true},
		{name: "pointer spill", asm: "*(u64 *)(r10 -8) = r1\nr2 = *(u64 *)(r10 -8)\nr0 = *(u32 *)(r2 +0)\nexit"},
	})
}

func TestPacket(t *testing.T) {
	load := "r2 = *(u32 *)(r1 +0)\nr3 = *(u32 *)(r1 +4)\n"
	runCases(t, []vcase{
		{name: "checked", asm: load + "r4 = r2\nr4 += 14\nif r4 > r3 goto out\nr0 = *(u16 *)(r2 +12)\nexit\nout: r0 = 2\nexit"},
		{name: "unchecked", asm: load + "r0 = *(u16 *)(r2 +12)\nexit", err: "invalid access to packet, off=12 size=2, R2(id=0,off=12,r=0)"},
		{name: "beyond check", asm: load + "r4 = r2\nr4 += 14\nif r4 > r3 goto out\nr0 = *(u16 *)(r2 +13)\nexit\nout: r0 = 2\nexit", err: "invalid access to packet, off=13 size=2"},
		{name: "checked other side", asm: load + "r4 = r2\nr4 += 14\nif r3 >= r4 goto ok\nr0 = 2\nexit\nok: r0 = *(u16 *)(r2 +12)\nexit"},
		{name: "strict lt", asm: load + "r4 = r2\nr4 += 14\nif r4 < r3 goto ok\nr0 = 2\nexit\nok: r0 = *(u8 *)(r2 +14)\nexit"},
		{name: "unbounded add", asm: load + "r5 = *(u32 *)(r1 +12)\nr2 += r5\nr0 = 0\nexit"},
		{name: "unbounded signed add", asm: load + "r5 = *(u64 *)(r10 -8)\nr2 += r5\nr0 = 0\nexit", err: "math between pkt pointer and register with unbounded min value is not allowed"},
		{name: "pkt_end arithmetic", asm: load + "r3 += 1\nr0 = 0\nexit", err: "R3 pointer arithmetic on pkt_end prohibited"},
	})
}

func TestContext(t *testing.T) {
	runCases(t, []vcase{
		{name: "xdp read ifindex", asm: "r0 = *(u32 *)(r1 +12)\nexit"},
		{name: "xdp write data", asm: "r2 = 0\n*(u32 *)(r1 +0) = r2\nr0 = 0\nexit", err: "invalid bpf_context access off=0 size=4"},
		{name: "xdp out of ctx", asm: "r0 = *(u32 *)(r1 +64)\nexit", err: "invalid bpf_context access off=64 size=4"},
		{name: "tc write mark", typ: ebpf.SchedCLS, asm: "r2 = 7\n*(u32 *)(r1 +8) = r2\nr0 = 0\nexit"},
		{name: "socket filter no data", typ: ebpf.SocketFilter, asm: "r0 = *(u32 *)(r1 +76)\nexit", err: "invalid bpf_context access off=76 size=4"},
		{name: "modified ctx", asm: "r1 += 4\nr0 = *(u32 *)(r1 +0)\nexit", err: "dereference of modified ctx ptr R1 off=4 disallowed"},
	})
}

func TestMapValues(t *testing.T) {
	lookup := "*(u32 *)(r10 -4) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\n"
	runCases(t, []vcase{
		{name: "null checked", maps: []maps.Spec{hashMap}, asm: "*(u64 *)(r10 -8) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -8\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto out\nr0 = *(u64 *)(r0 +8)\nout: r0 = 0\nexit"},
		{name: "not null checked", maps: []maps.Spec{hashMap}, asm: "*(u64 *)(r10 -8) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -8\ncall bpf_map_lookup_elem#1\nr0 = *(u64 *)(r0 +8)\nr0 = 0\nexit", err: "R0 invalid mem access 'map_value_or_null'"},
		{name: "value out of bounds", maps: []maps.Spec{hashMap}, asm: "*(u64 *)(r10 -8) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -8\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto out\nr0 = *(u64 *)(r0 +16)\nout: r0 = 0\nexit", err: "invalid access to map value, value_size=16 off=16 size=8"},
		{name: "key uninit unpriv", unpriv: true, maps: []maps.Spec{hashMap}, asm: "r1 = map[fd:0] ll\nr2 = r10\nr2 += -8\ncall bpf_map_lookup_elem#1\nr0 = 0\nexit", err: "invalid read from stack R2 off=-8 size=8"},
		{name: "variable index bounded", maps: []maps.Spec{arrayMap}, asm: lookup + "if r0 == 0 goto out\nr1 = *(u32 *)(r0 +0)\nr1 &= 7\nr0 += r1\nr0 = *(u8 *)(r0 +0)\nout: r0 = 0\nexit"},
		{name: "variable index unbounded", maps: []maps.Spec{arrayMap}, asm: lookup + "if r0 == 0 goto out\nr1 = *(u32 *)(r0 +0)\nr0 += r1\nr0 = *(u8 *)(r0 +0)\nout: r0 = 0\nexit", err: "R0 unbounded memory access, make sure to bounds check any such access"},
		{name: "map ptr arithmetic", maps: []maps.Spec{arrayMap}, asm: "r1 = map[fd:0] ll\nr1 += 8\nr0 = 0\nexit", err: "R1 pointer arithmetic on map_ptr prohibited"},
	})
}

func TestCalls(t *testing.T) {
	runCases(t, []vcase{
		{name: "bpf2bpf", asm: "r1 = 1\ncall f\nexit\nf: r0 = r1\nr0 += 1\nexit"},
		{name: "callee stack", asm: "call f\nexit\nf: r1 = 0\n*(u64 *)(r10 -8) = r1\nr0 = *(u64 *)(r10 -8)\nexit"},
		{name: "r1 clobbered", asm: "r1 = 1\ncall f\nr0 = r1\nexit\nf: r0 = 0\nexit", err: "R1 !read_ok"},
		{name: "unknown helper", asm: "call 100000\nr0 = 0\nexit", err: "invalid func unknown#100000", noKernel: true},
		{name: "helper clobbers", asm: "r1 = 1\ncall bpf_ktime_get_ns#5\nr0 = r1\nexit", err: "R1 !read_ok"},
	})
}

func TestALU(t *testing.T) {
	runCases(t, []vcase{
		{name: "div by zero imm", asm: "r0 = 1\nr0 /= 0\nexit", err: "div by zero"},
		{name: "bad shift", asm: "r0 = 1\nr0 <<= 64\nexit", err: "invalid shift 64"},
		{name: "pointer bitwise", asm: "r1 &= 1\nr0 = 0\nexit", err: "R1 bitwise operator &= on pointer prohibited"},
		{name: "32-bit pointer arithmetic", asm: "w1 += 1\nr0 = 0\nexit", err: "R1 32-bit pointer arithmetic prohibited"},
		{name: "pointer leak unpriv", asm: "r0 = r1\nexit", err: "R0 leaks addr as return value", unpriv: true},
	})
}
