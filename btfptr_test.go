package bpfvm_test

import (
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/kernelbtf"
)

// Loads through pointers to kernel objects are probe loads, as the
// kernel's BPF_PROBE_MEM: on both engines, checked and unchecked, what the
// run may read reads as itself and anything else (unmapped memory, host
// memory outside the run's regions) reads 0 instead of faulting or
// failing the run.
func TestProbeLoads(t *testing.T) {
	spec, err := kernelbtf.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	var task *btf.Struct
	if err := spec.TypeByName("task_struct", &task); err != nil {
		t.Fatal(err)
	}
	taskID, err := spec.TypeID(task)
	if err != nil {
		t.Fatal(err)
	}
	pid := -1
	for _, m := range task.Members {
		if m.Name == "pid" {
			pid = int(m.Offset.Bytes())
		}
	}
	// rdonly casts r1 to type id, then loads from it at off.
	rdonly := func(addr string, id btf.TypeID, load string) string {
		return fmt.Sprintf("%s\nr2 = %d\ncall kernel-function#%d\n%s\nexit", addr, id, isa.KfuncRdonlyCast, load)
	}
	// same asks for the same value on every engine and mode: bpfvm's
	// memory behind a kernel struct's field (here the run's shadow packet
	// pointers past __sk_buff, where sk_buff has fields).
	const same = ^uint64(0)
	cases := []struct {
		name string
		asm  string
		want uint64
		typ  ebpf.ProgramType
	}{
		{"unmapped", rdonly("r1 = 0x1000 ll", 0, "r0 = *(u64 *)(r0 +0)"), 0, 0},
		{"unmapped struct field", rdonly("r1 = 0x10 ll", taskID, fmt.Sprintf("r0 = *(u32 *)(r0 +%d)", pid)), 0, 0},
		{"unmapped signed", rdonly("r1 = 0x1000 ll", 0, "r0 = *(s16 *)(r0 +0)"), 0, 0},
		{"non-canonical", rdonly("r1 = 0x8000000000000000 ll", 0, "r0 = *(u8 *)(r0 +0)"), 0, 0},
		{"stack", "r1 = 0x1122334455667788 ll\n*(u64 *)(r10 -8) = r1\nr1 = r10\nr1 += -8\n" + rdonly("", 0, "r0 = *(u32 *)(r0 +4)"), 0x11223344, 0},
		{"stack signed", "r1 = 0xfedc ll\n*(u64 *)(r10 -8) = r1\nr1 = r10\nr1 += -8\n" + rdonly("", 0, "r0 = *(s16 *)(r0 +0)"), 0xfffffffffffffedc, 0},
		{"stack top straddled", "r1 = r10\nr1 += -4\n" + rdonly("", 0, "r0 = *(u64 *)(r0 +0)"), 0, 0},
		{"context", "r6 = *(u32 *)(r1 +12)\n" + rdonly("", 0, "r0 = *(u32 *)(r0 +12)\nr0 ^= r6\nr0 += 7"), 7, 0},
		{"kernel context", fmt.Sprintf("call kernel-function#%d\nr0 = *(u64 *)(r0 +200)\nexit", isa.KfuncCastToKernCtx), same, ebpf.SchedCLS},
	}
	for _, c := range cases {
		first := true
		prog, err := isa.Assemble(c.asm)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
			for _, checks := range []bpfvm.Checks{bpfvm.ChecksOn, bpfvm.ChecksOff} {
				opts := bpfvm.ProgramOptions{Engine: e, Checks: checks, KernelTypes: spec}
				typ := c.typ
				if typ == ebpf.UnspecifiedProgram {
					typ = ebpf.XDP
				}
				p, err := bpfvm.NewRawProgram("probe", typ, prog, opts)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				res, err := p.Execute(&bpfvm.RunOptions{Data: make([]byte, 64)})
				p.Close()
				if err != nil {
					t.Errorf("%s on %v checks %v: %v", c.name, e, checks, err)
					continue
				}
				if c.want == same && first {
					c.want, first = res.R0, false
				}
				if res.R0 != c.want {
					t.Errorf("%s on %v checks %v: r0 = %#x, want %#x", c.name, e, checks, res.R0, c.want)
				}
			}
		}
	}
}
