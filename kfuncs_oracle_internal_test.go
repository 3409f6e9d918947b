package bpfvm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/internal/fieldbtf"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/kernelbtf"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/verifier"
)

// refProgram builds a tp_btf program from ops: cpumasks created into
// r6-r9, set, queried, acquired, released (null-checked or not), moved in
// and out of a map's referenced kptr with bpf_kptr_xchg, inside RCU
// sections or not. Most programs leak or misuse a reference somewhere; the
// verifier must refuse those and accept only programs whose runs leave no
// object behind but those in the map.
func refProgram(ops []byte) string {
	var b strings.Builder
	b.WriteString("r6 = 0\nr7 = 0\nr8 = 0\nr9 = 0\n")
	label := 0
	skip := func(r int) string {
		label++
		return fmt.Sprintf("if r%d == 0 goto l%d\n", r, label)
	}
	end := func() string { return fmt.Sprintf("l%d:\n", label) }
	for i := 0; i+1 < len(ops); i += 2 {
		x, y := 6+int(ops[i+1]&3), 6+int(ops[i+1]>>2&3)
		switch ops[i] % 11 {
		case 0:
			fmt.Fprintf(&b, "call bpf_cpumask_create#0\nr%d = r0\n", x)
		case 1:
			b.WriteString(skip(x))
			fmt.Fprintf(&b, "r1 = %d\nr2 = r%d\ncall bpf_cpumask_set_cpu#0\n", ops[i+1]>>4&1, x)
			b.WriteString(end())
		case 2:
			b.WriteString(skip(x))
			fmt.Fprintf(&b, "r1 = r%d\ncall bpf_cpumask_release#0\n", x)
			b.WriteString(end())
		case 3:
			fmt.Fprintf(&b, "r1 = r%d\ncall bpf_cpumask_release#0\n", x)
		case 4:
			b.WriteString(skip(x))
			fmt.Fprintf(&b, "r1 = r%d\ncall bpf_cpumask_acquire#0\nr%d = r0\n", x, y)
			b.WriteString(end())
		case 5:
			b.WriteString("*(u32 *)(r10 -4) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\n")
			b.WriteString(skip(0))
			fmt.Fprintf(&b, "r1 = r0\nr2 = r%d\ncall bpf_kptr_xchg#194\nr%d = r0\n", x, x)
			b.WriteString(end())
		case 6:
			b.WriteString(skip(x))
			fmt.Fprintf(&b, "r1 = r%d\ncall bpf_cpumask_weight#0\n", x)
			b.WriteString(end())
		case 7:
			b.WriteString(skip(x))
			b.WriteString(skip(y))
			fmt.Fprintf(&b, "r1 = r%d\nr2 = r%d\nr3 = r%d\ncall bpf_cpumask_or#0\n", x, x, y)
			b.WriteString(end())
			label--
			b.WriteString(end())
			label++
		case 8:
			b.WriteString("call bpf_rcu_read_lock#0\n")
		case 9:
			b.WriteString("call bpf_rcu_read_unlock#0\n")
		case 10:
			fmt.Fprintf(&b, "r%d = r%d\n", x, y)
		}
	}
	if len(ops)%2 == 1 {
		// Release what is left, so that some programs are clean.
		for r := 6; r <= 9; r++ {
			b.WriteString(skip(r))
			fmt.Fprintf(&b, "r1 = r%d\ncall bpf_cpumask_release#0\n", r)
			b.WriteString(end())
		}
	}
	b.WriteString("r0 = 0\nexit\n")
	return b.String()
}

// refOracle verifies the program ops build and, if accepted, runs it on
// both engines in checked mode: no fault, the same result, and once the
// map is gone, no object alive. It reports whether the program ran.
func refOracle(t *testing.T, ops []byte) bool {
	t.Helper()
	src := refProgram(ops)
	insns, err := isa.Assemble(src)
	if err != nil {
		// Nested skips may reuse a label: not a program.
		return false
	}
	value := fieldbtf.Value("stash", 16, fieldbtf.Member{Off: 0, Type: fieldbtf.Tagged("kptr", &btf.Struct{Name: "bpf_cpumask"})}, fieldbtf.Member{Off: 8, Type: fieldbtf.U64})
	spec := &ebpf.MapSpec{Name: "stash", Type: ebpf.Array, KeySize: 4, ValueSize: 16, MaxEntries: 1, Key: &btf.Int{Name: "u32", Size: 4}, Value: value}
	ctx := make([]byte, 8*progtype.MaxTracingArgs)
	binary.LittleEndian.PutUint64(ctx, 0xffff888012340000)
	base := maps.LiveObjects()
	ran := false
	var r0 []uint64
	for _, e := range []Engine{EngineInterpreter, EngineJIT} {
		cpus := runner.NewCPUs(1)
		m, err := newMap(spec, cpus)
		if err != nil {
			t.Fatal(err)
		}
		p, err := newProgram("refs", ebpf.Tracing, insns, []*Map{m}, cpus, ProgramOptions{Engine: e, Checks: ChecksOn, AttachType: ebpf.AttachTraceRawTp, AttachTo: "task_newtask"})
		if err != nil {
			m.Close()
			cpus.Close()
			var ve *verifier.Error
			if !errors.As(err, &ve) {
				t.Fatalf("%v: not a verifier error: %v\n%s", e, err, src)
			}
			return false
		}
		for range 2 {
			res, err := p.Execute(&RunOptions{Context: ctx})
			if err != nil {
				t.Fatalf("%v: accepted program faults: %v\n%s", e, err, src)
			}
			r0 = append(r0, res.R0)
		}
		p.Close()
		m.Close()
		cpus.Close()
		ran = true
		for i := 0; maps.LiveObjects() > base; i++ {
			maps.Reclaim()
			if i > 400 {
				t.Fatalf("%v: %d objects left of %d after the map went\n%s", e, maps.LiveObjects(), base, src)
			}
			time.Sleep(time.Millisecond)
		}
	}
	for _, v := range r0 {
		if v != r0[0] {
			t.Fatalf("engines differ: %v\n%s", r0, src)
		}
	}
	return ran
}

// TestKfuncRefsOracle applies the oracle to random programs of cpumask
// references: the accepted ones leave nothing behind on either engine.
func TestKfuncRefsOracle(t *testing.T) {
	if _, err := os.Stat(kernelbtf.VMLinux); err != nil {
		t.Skip("no host BTF")
	}
	rng := rand.New(rand.NewPCG(16, 16))
	accepted := 0
	const n = 40
	for range n {
		ops := make([]byte, 2+rng.IntN(14))
		for i := range ops {
			ops[i] = byte(rng.Uint32())
		}
		if refOracle(t, ops) {
			accepted++
		}
	}
	t.Logf("%d of %d programs accepted and ran clean", accepted, n)
	if accepted == 0 {
		t.Error("no program accepted: the generator tests nothing")
	}
}

// FuzzKfuncRefs is TestKfuncRefsOracle on fuzzed ops.
func FuzzKfuncRefs(f *testing.F) {
	if _, err := os.Stat(kernelbtf.VMLinux); err != nil {
		f.Skip("no host BTF")
	}
	f.Add([]byte{0, 0, 1, 0, 5})
	f.Add([]byte{0, 1, 4, 1, 2, 5, 6, 0, 9})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 40 {
			return
		}
		refOracle(t, ops)
	})
}
