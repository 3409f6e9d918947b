package bpfvm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/kernelbtf"
	"github.com/bpfvm/bpfvm/loader"
	"github.com/bpfvm/bpfvm/verifier"
	"github.com/bpfvm/bpfvm/vm"
)

// coreTarget is a target BTF the CO-RE tests relocate testdata/core.o
// against.
type coreTarget struct {
	name string
	spec *btf.Spec
}

// coreTargets are the host's vmlinux (when it has one), the shipped
// types, and two hand-built layouts unlike any kernel's.
func coreTargets(t *testing.T) []coreTarget {
	t.Helper()
	var out []coreTarget
	if host, err := btf.LoadKernelSpec(); err == nil {
		out = append(out, coreTarget{"vmlinux", host})
	} else {
		t.Logf("no host BTF: %v", err)
	}
	shipped, err := kernelbtf.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, coreTarget{"shipped", shipped})
	return append(out, coreTarget{"layoutA", layoutA(t)}, coreTarget{"layoutB", layoutB(t)})
}

var (
	btfInt   = &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	btfUint  = &btf.Int{Name: "unsigned int", Size: 4}
	btfU8    = &btf.Int{Name: "unsigned char", Size: 1}
	btfU16   = &btf.Int{Name: "unsigned short", Size: 2}
	btfChar  = &btf.Int{Name: "char", Size: 1, Encoding: btf.Char}
	btfLong  = &btf.Int{Name: "long", Size: 8, Encoding: btf.Signed}
	btfIndex = &btf.Int{Name: "__ARRAY_SIZE_TYPE__", Size: 4}
)

func buildSpec(t *testing.T, types ...btf.Type) *btf.Spec {
	t.Helper()
	var b btf.Builder
	for _, typ := range types {
		if _, err := b.Add(typ); err != nil {
			t.Fatal(err)
		}
	}
	spec, err := b.Spec()
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// layoutA moves every field, swaps iphdr's bitfields and renumbers the
// enum; no_such_field and no_such_type stay missing.
func layoutA(t *testing.T) *btf.Spec {
	task := &btf.Struct{Name: "task_struct", Size: 64, Members: []btf.Member{
		{Name: "mm", Type: &btf.Pointer{Target: &btf.Void{}}, Offset: 0},
		{Name: "comm", Type: &btf.Array{Index: btfIndex, Type: btfChar, Nelems: 16}, Offset: 8 * 8},
		{Name: "pid", Type: btfInt, Offset: 24 * 8},
		{Name: "tgid", Type: btfInt, Offset: 28 * 8},
	}}
	ip := &btf.Struct{Name: "iphdr", Size: 20, Members: []btf.Member{
		{Name: "version", Type: btfU8, Offset: 0, BitfieldSize: 4},
		{Name: "ihl", Type: btfU8, Offset: 4, BitfieldSize: 4},
		{Name: "tot_len", Type: btfU16, Offset: 2 * 8},
		{Name: "protocol", Type: btfU8, Offset: 8 * 8},
		{Name: "ttl", Type: btfU8, Offset: 9 * 8},
		{Name: "tos", Type: btfU8, Offset: 1 * 8},
	}}
	action := &btf.Enum{Name: "xdp_action", Size: 4, Values: []btf.EnumValue{
		{Name: "XDP_ABORTED", Value: 0}, {Name: "XDP_PASS", Value: 2}, {Name: "XDP_REDIRECT", Value: 4},
	}}
	return buildSpec(t, task, ip, action)
}

// layoutB is an "other kernel": pid unsigned, a shorter comm, no mm
// pointer but a long at its place, ihl a whole byte and tot_len a 32-bit
// field (so iphdr no longer matches), a 64-bit enum, and the field and
// type the other targets lack.
func layoutB(t *testing.T) *btf.Spec {
	task := &btf.Struct{Name: "task_struct", Size: 4096, Members: []btf.Member{
		{Name: "tgid", Type: btfInt, Offset: 1000 * 8},
		{Name: "pid", Type: btfUint, Offset: 1004 * 8},
		{Name: "comm", Type: &btf.Array{Index: btfIndex, Type: btfChar, Nelems: 8}, Offset: 2000 * 8},
		{Name: "mm", Type: &btf.Pointer{Target: &btf.Void{}}, Offset: 3000 * 8},
		{Name: "no_such_field", Type: btfLong, Offset: 16 * 8},
	}}
	ip := &btf.Struct{Name: "iphdr", Size: 24, Members: []btf.Member{
		{Name: "ihl", Type: btfU8, Offset: 0},
		{Name: "version", Type: btfU8, Offset: 8 + 2, BitfieldSize: 3},
		{Name: "tot_len", Type: btfUint, Offset: 4 * 8},
		{Name: "ttl", Type: btfU8, Offset: 12 * 8},
		{Name: "protocol", Type: btfU8, Offset: 13 * 8},
		{Name: "tos", Type: btfU8, Offset: 14 * 8},
	}}
	action := &btf.Enum{Name: "xdp_action", Size: 8, Values: []btf.EnumValue{
		{Name: "XDP_PASS", Value: 1 << 40}, {Name: "XDP_REDIRECT", Value: 3}, {Name: "XDP_NO_SUCH", Value: 5},
	}}
	other := &btf.Struct{Name: "no_such_type", Size: 12, Members: []btf.Member{{Name: "x", Type: btfInt}}}
	return buildSpec(t, task, ip, action, other)
}

// corePrograms are the programs of core.o and core_poison.o: whether the
// kernel keeps their instructions as they are (no dead code after
// relocation), and whether they call a helper bpfvm lacks.
var corePrograms = []struct {
	file, name string
	sameCode   bool
	helper     bool
}{
	{"core.o", "core_consts", true, false},
	{"core.o", "core_access", true, false},
	{"core.o", "core_bitfield", false, false},
	{"core.o", "core_read", true, true},
	{"core.o", "core_guarded", false, false},
	{"core.o", "core_subprog", true, false},
	{"core_poison.o", "core_poison_field", false, false},
	{"core_poison.o", "core_poison_enum", false, false},
}

// coreSpecs reads the objects of corePrograms.
func coreSpecs(t *testing.T) map[string]*ebpf.CollectionSpec {
	t.Helper()
	specs := map[string]*ebpf.CollectionSpec{}
	for _, p := range corePrograms {
		if specs[p.file] != nil {
			continue
		}
		spec, err := loader.LoadCollectionSpec(filepath.Join("testdata", p.file))
		if err != nil {
			t.Fatal(err)
		}
		specs[p.file] = spec
	}
	return specs
}

// TestCORE relocates every program of core.o against every target and
// compares with cilium/ebpf loading it into the kernel with the same
// target (ProgramOptions.KernelTypes): the same verdict (the same message
// for poisoned instructions), the same instructions where the kernel
// keeps them, the same test-run result.
func TestCORE(t *testing.T) {
	specs := coreSpecs(t)
	kernel := haveKernel(t)
	for _, tg := range coreTargets(t) {
		for _, p := range corePrograms {
			t.Run(tg.name+"/"+p.name, func(t *testing.T) {
				spec := specs[p.file]
				ps := spec.Programs[p.name]
				var kprog *ebpf.Program
				var kerr error
				if kernel {
					kprog, kerr = ebpf.NewProgramWithOptions(ps, ebpf.ProgramOptions{KernelTypes: tg.spec})
					if kerr == nil {
						defer kprog.Close()
					}
				}
				if p.helper {
					// bpfvm cannot load it yet: compare the relocation only.
					if kprog == nil {
						t.Skip("no kernel")
					}
					got, _, err := bpfvm.EncodeProgram(ps)
					if tg.name != "vmlinux" {
						t.Skip("EncodeProgram relocates against the default target")
					}
					if err != nil {
						t.Fatal(err)
					}
					compareXlated(t, kprog, got)
					return
				}
				coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{
					ProgramNames: []string{p.name},
					Programs:     bpfvm.ProgramOptions{KernelTypes: tg.spec},
				})
				if err == nil {
					defer coll.Close()
				}
				if kernel {
					compareVerdict(t, err, kerr)
				}
				if err != nil {
					t.Logf("rejected: %v", err)
					return
				}
				prog := coll.Programs[p.name]
				if kprog == nil {
					return
				}
				if p.sameCode {
					compareXlated(t, kprog, prog.Instructions())
				}
				data := make([]byte, 64)
				kret, err := kprog.Run(&ebpf.RunOptions{Data: data})
				if err != nil {
					t.Fatal(err)
				}
				res, err := prog.Execute(&bpfvm.RunOptions{Data: data})
				if err != nil {
					t.Fatal(err)
				}
				if uint32(res.R0) != kret {
					t.Errorf("returned %#x, kernel %#x", uint32(res.R0), kret)
				}
			})
		}
	}
}

// haveKernel reports whether the tests can load programs into the kernel,
// logging why not.
func haveKernel(t testing.TB) bool {
	t.Helper()
	if os.Getuid() != 0 {
		t.Log("kernel oracle skipped: not root")
		return false
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Logf("kernel oracle skipped: %v", err)
		return false
	}
	return true
}

// compareVerdict checks that bpfvm accepted what the kernel accepted and
// rejected with the kernel's message what it rejected.
func compareVerdict(t *testing.T, ours, kernel error) {
	t.Helper()
	var kve *ebpf.VerifierError
	switch {
	case ours == nil && kernel == nil:
	case ours == nil:
		t.Fatalf("bpfvm accepted, kernel rejected: %v", kernel)
	case kernel == nil:
		t.Fatalf("kernel accepted, bpfvm rejected: %v", ours)
	case !errors.As(kernel, &kve):
		t.Fatalf("kernel: %v", kernel)
	default:
		var ve *verifier.Error
		if !errors.As(ours, &ve) {
			t.Fatalf("bpfvm: not a verifier error: %v", ours)
		}
		if kmsg := kernelMessage(kve.Log); ve.Msg != kmsg {
			t.Errorf("bpfvm: %q, kernel: %q", ve.Msg, kmsg)
		}
	}
}

// kernelMessage is the reason in a kernel verifier log: the last line
// before the statistics.
func kernelMessage(log []string) string {
	for i := len(log) - 1; i >= 0; i-- {
		if l := log[i]; l != "" && !strings.HasPrefix(l, "processed ") && !strings.HasPrefix(l, "verification time") && !strings.HasPrefix(l, "stack depth") {
			return l
		}
	}
	return ""
}

// compareXlated checks that the kernel's program (which it keeps as
// loaded when it has no dead code, context accesses or maps) equals what
// bpfvm relocated.
func compareXlated(t *testing.T, kprog *ebpf.Program, got []isa.Instruction) {
	t.Helper()
	info, err := kprog.Info()
	if err != nil {
		t.Fatal(err)
	}
	kinsns, err := info.Instructions()
	if err != nil {
		t.Skipf("no xlated instructions: %v", err)
	}
	var buf bytes.Buffer
	for i := range kinsns {
		kinsns[i] = kinsns[i].WithMetadata(asm.Metadata{})
		if kinsns[i].IsBuiltinCall() {
			kinsns[i].Constant = 0 // the helper's address
		}
	}
	if err := kinsns.Marshal(&buf, binary.LittleEndian); err != nil {
		t.Fatal(err)
	}
	compareWire(t, buf.Bytes(), got)
}

// compareWire compares a kernel's xlated program in wire form with what
// bpfvm relocated. Calls are compared as the kernel shows them resolved.
func compareWire(t *testing.T, xlated []byte, got []isa.Instruction) {
	t.Helper()
	want, err := isa.DecodeProgram(xlated)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != len(got) {
		t.Fatalf("%d instructions, kernel %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		switch {
		case g.Op == isa.OpCall && g.Src == isa.Register(isa.CallHelper):
			g.Imm, w.Imm = 0, 0 // the kernel shows the helper's address
		case g.Op == isa.OpCall:
			// The kernel shows a JITed subprogram's index as the
			// immediate and the call's offset in the offset field.
			w.Imm, w.Off = int32(w.Off), 0
		}
		if g != w {
			t.Errorf("insn %d: %v, kernel %v", i, isa.Format(got, i, nil), isa.Format(want, i, nil))
		}
	}
}

// TestCORELibbpf compares bpfvm's relocations against the host's vmlinux
// with libbpf's: bpftool loads core.o into the kernel (libbpf relocating
// against /sys/kernel/btf/vmlinux) and dumps each program's xlated code.
func TestCORELibbpf(t *testing.T) {
	bpftool, err := exec.LookPath("bpftool")
	if err != nil {
		t.Skip("no bpftool")
	}
	if _, err := os.Stat(kernelbtf.VMLinux); err != nil || !haveKernel(t) {
		t.Skip("no host BTF or no kernel")
	}
	pins := fmt.Sprintf("/sys/fs/bpf/bpfvm_core_%d", os.Getpid())
	if out, err := exec.Command(bpftool, "prog", "loadall", "testdata/core.o", pins).CombinedOutput(); err != nil {
		t.Skipf("bpftool prog loadall: %v: %s", err, out)
	}
	t.Cleanup(func() { os.RemoveAll(pins) })
	spec := coreSpecs(t)["core.o"]
	for _, p := range corePrograms {
		if !p.sameCode || p.file != "core.o" {
			continue
		}
		t.Run(p.name, func(t *testing.T) {
			// The default target: the host's vmlinux, as libbpf's.
			got, _, err := bpfvm.EncodeProgram(spec.Programs[p.name])
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "xlated")
			if out, err := exec.Command(bpftool, "prog", "dump", "xlated", "pinned", filepath.Join(pins, p.name), "file", file).CombinedOutput(); err != nil {
				t.Fatalf("bpftool prog dump: %v: %s", err, out)
			}
			xlated, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			// Local type ids are the one difference: cilium/ebpf's, which
			// bpfvm gives, number the types of the BTF it loads with the
			// program (a fresh btf.Builder); libbpf's are the object's.
			want := xlated
			for pc, relo := range relocationsByPC(spec.Programs[p.name]) {
				if !strings.HasPrefix(relo, "CORERelocation(local_type_id") {
					continue
				}
				var local uint32
				if _, err := fmt.Sscanf(relo[strings.LastIndex(relo, "local_id="):], "local_id=%d)", &local); err != nil {
					t.Fatal(err)
				}
				if libbpf := binary.LittleEndian.Uint32(xlated[pc*8+4:]); libbpf != local {
					t.Errorf("insn %d: libbpf's local type id %d, the object's %d", pc, libbpf, local)
				}
				want = bytes.Clone(want)
				binary.LittleEndian.PutUint32(want[pc*8+4:], uint32(got[pc].Imm))
			}
			compareWire(t, want, got)
		})
	}
}

// relocationsByPC describes the CO-RE relocation of each instruction that
// has one, by wire index.
func relocationsByPC(ps *ebpf.ProgramSpec) map[int]string {
	out := map[int]string{}
	pc := 0
	for i := range ps.Instructions {
		if r := btf.CORERelocationMetadata(&ps.Instructions[i]); r != nil {
			out[pc] = r.String()
		}
		pc += int(ps.Instructions[i].Size() / asm.InstructionSize)
	}
	return out
}

// benchTarget is core_bench.c's struct with its 250 fields in reverse
// order, every other one unsigned.
func benchTarget(b *testing.B) *btf.Spec {
	var members []btf.Member
	for g := 'y'; g >= 'a'; g-- {
		for d := '9'; d >= '0'; d-- {
			typ := btfInt
			if len(members)%2 == 1 {
				typ = btfUint
			}
			members = append(members, btf.Member{Name: string([]rune{g, d}), Type: typ, Offset: btf.Bits(32 * len(members))})
		}
	}
	var bld btf.Builder
	if _, err := bld.Add(&btf.Struct{Name: "bench", Size: uint32(4 * len(members)), Members: members}); err != nil {
		b.Fatal(err)
	}
	spec, err := bld.Spec()
	if err != nil {
		b.Fatal(err)
	}
	return spec
}

// BenchmarkCORE measures applying the 1,000 CO-RE relocations of
// core_bench.o (relocate), and the whole load of that program with them
// (load: relocation, verification, rewriting, the JIT), for scale, and
// cilium/ebpf's load of it into the kernel (kernel).
func BenchmarkCORE(b *testing.B) {
	spec, err := loader.LoadCollectionSpec("testdata/core_bench.o")
	if err != nil {
		b.Fatal(err)
	}
	target := benchTarget(b)
	ps := spec.Programs["core_bench"]
	b.Run("relocate", func(b *testing.B) {
		insns := make(asm.Instructions, len(ps.Instructions))
		targets := func() ([]*btf.Spec, error) { return []*btf.Spec{target}, nil }
		b.ReportAllocs()
		for b.Loop() {
			copy(insns, ps.Instructions)
			poisons, err := loader.RelocateCORE(insns, nil, targets)
			if err != nil || len(poisons) != 0 {
				b.Fatal(err, poisons)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/relocation")
	})
	b.Run("kernel", func(b *testing.B) {
		// cilium/ebpf relocating (the same code) and the kernel verifying.
		if !haveKernel(b) {
			b.Skip("no kernel")
		}
		for b.Loop() {
			p, err := ebpf.NewProgramWithOptions(ps, ebpf.ProgramOptions{KernelTypes: target})
			if err != nil {
				b.Fatal(err)
			}
			p.Close()
		}
	})
	b.Run("default-target", func(b *testing.B) {
		// What a load without KernelTypes or a Cache pays to find its
		// target: the host's vmlinux parsed, or the shipped types.
		b.ReportAllocs()
		for b.Loop() {
			if _, err := kernelbtf.Targets(nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("load", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{KernelTypes: target}})
			if err != nil {
				b.Fatal(err)
			}
			coll.Close()
		}
	})
}

// Relocations that cannot be applied are load errors naming the program,
// the instruction and the type; ones the target cannot satisfy poison
// their instruction, an error only where the verifier reaches it, and in
// unverified programs only when a run does.
func TestCOREErrors(t *testing.T) {
	specs := coreSpecs(t)
	task := func(pidOffset, fieldOffset btf.Bits) *btf.Struct {
		return &btf.Struct{Name: "task_struct", Size: 1 << 16, Members: []btf.Member{
			{Name: "pid", Type: btfInt, Offset: pidOffset * 8},
			{Name: "tgid", Type: btfInt, Offset: 4 * 8},
			{Name: "comm", Type: &btf.Array{Index: btfIndex, Type: btfChar, Nelems: 16}, Offset: 8 * 8},
			{Name: "mm", Type: &btf.Pointer{Target: &btf.Void{}}, Offset: 24 * 8},
			{Name: "no_such_field", Type: btfLong, Offset: fieldOffset * 8},
		}}
	}
	far := buildSpec(t, task(0, 40000))
	ambiguous := buildSpec(t, task(0, 32), task(100, 32))
	for _, c := range []struct {
		name     string
		prog     string
		target   *btf.Spec
		noVerify bool
		// want are substrings of the load error; none: it loads.
		want     []string
		sentinel error
	}{
		{"offset out of range", "core_poison_field", far, false,
			[]string{"program core_poison_field", "instruction 11", "task_struct___core", "exceeds MaxInt16"}, loader.ErrCORE},
		{"ambiguous target", "core_consts", ambiguous, false,
			[]string{"program core_consts", "instruction 1:", "task_struct___core", "ambiguous"}, loader.ErrCORE},
		{"poison reached", "core_poison_field", layoutA(t), false,
			[]string{"program core_poison_field", "invalid func unknown#195896080", "instruction 11 poisoned by CO-RE", "task_struct___core"}, verifier.ErrRejected},
		{"poisoned enum reached", "core_poison_enum", layoutA(t), false,
			[]string{"frame pointer is read only", "instruction 0 poisoned by CO-RE", "enumval_value", "xdp_action___core"}, verifier.ErrRejected},
		{"poison not reached", "core_guarded", layoutA(t), false, nil, nil},
		{"poison not reached, unverified", "core_guarded", layoutA(t), true, nil, nil},
		{"poison reached, unverified", "core_poison_field", layoutA(t), true, nil, nil},
	} {
		for _, engine := range []bpfvm.Engine{bpfvm.EngineJIT, bpfvm.EngineInterpreter} {
			t.Run(fmt.Sprintf("%s/%v", c.name, engine), func(t *testing.T) {
				spec := specs["core.o"]
				if spec.Programs[c.prog] == nil {
					spec = specs["core_poison.o"]
				}
				coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{
					ProgramNames: []string{c.prog},
					Programs:     bpfvm.ProgramOptions{KernelTypes: c.target, NoVerify: c.noVerify, Engine: engine},
				})
				if c.want != nil {
					if err == nil {
						coll.Close()
						t.Fatalf("loaded, want %q", c.want)
					}
					for _, w := range c.want {
						if !strings.Contains(err.Error(), w) {
							t.Errorf("error %q lacks %q", err, w)
						}
					}
					if !errors.Is(err, c.sentinel) {
						t.Errorf("error %v is not %v", err, c.sentinel)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				defer coll.Close()
				res, err := coll.Programs[c.prog].Execute(&bpfvm.RunOptions{Data: make([]byte, 64)})
				switch {
				case c.prog == "core_guarded" && (err != nil || res.R0 != 42):
					t.Errorf("run: %v, %d; want 42", err, res.R0)
				case c.prog == "core_poison_field" && (!errors.Is(err, vm.ErrDeadCode) || !strings.Contains(err.Error(), "instruction 11 poisoned by CO-RE") || !strings.Contains(err.Error(), "task_struct___core")):
					t.Errorf("run: %v, want vm.ErrDeadCode at the poisoned instruction, naming its relocation", err)
				}
			})
		}
	}
}

// NewProgramWithOptions relocates against ProgramOptions.KernelTypes as
// a collection does.
func TestCOREProgram(t *testing.T) {
	spec := coreSpecs(t)["core.o"]
	target := layoutA(t)
	p, err := bpfvm.NewProgramWithOptions(spec.Programs["core_consts"], bpfvm.ProgramOptions{KernelTypes: target})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{
		ProgramNames: []string{"core_consts"},
		Programs:     bpfvm.ProgramOptions{KernelTypes: target},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	got, want := p.Instructions(), coll.Programs["core_consts"].Instructions()
	if !slices.Equal(got, want) {
		t.Error("NewProgramWithOptions and NewCollectionWithOptions relocate differently")
	}
	// layoutA puts pid at 24: the first relocated instruction says so.
	if got[1].Imm != 24 {
		t.Errorf("pid's offset %d, want 24", got[1].Imm)
	}
}
