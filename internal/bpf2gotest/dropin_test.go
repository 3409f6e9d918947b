package bpf2gotest

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"
)

// outcome is what one back end did with the generated objects.
type outcome struct {
	Rets          []uint32
	Count         uint64 // counts[7]
	BytesSeen     uint64
	Runs          uint64 // after setting it to 10 and one more run
	Verdict       uint32
	ReadOnly      [3]bool // bytes_seen, runs, verdict
	SetVerdictErr bool    // Set of the .rodata variable matched ebpf.ErrReadOnly
}

// packet is an Ethernet-sized frame whose first byte is 7.
var packet = append([]byte{7}, make([]byte, 13)...)

// bpfvmOutcome runs the objects through vm_bpfel.go, the generated code
// with its import naming bpfvm.
func bpfvmOutcome(t *testing.T, verdict uint32) outcome {
	spec, err := loadVm()
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.Variables["verdict"].Set(verdict); err != nil {
		t.Fatal(err)
	}
	var objs vmObjects
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		t.Fatal(err)
	}
	defer objs.Close()
	var o outcome
	for range 3 {
		ret, err := objs.XdpCount.Run(&ebpfRunOptions{Data: packet})
		if err != nil {
			t.Fatal(err)
		}
		o.Rets = append(o.Rets, ret)
	}
	fill(t, &o, objs.Counts, [3]variable{objs.BytesSeen, objs.Runs, objs.Verdict}, func() error {
		_, err := objs.XdpCount.Run(&ebpfRunOptions{Data: packet})
		return err
	})
	return o
}

// kernelOutcome runs the objects through kernel_bpfel.go, as bpf2go wrote
// it, in the kernel; nil where bpf() is not permitted.
func kernelOutcome(t *testing.T, verdict uint32) *outcome {
	if os.Getuid() != 0 || rlimit.RemoveMemlock() != nil {
		t.Log("kernel comparison skipped: bpf() not permitted")
		return nil
	}
	spec, err := loadKernel()
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.Variables["verdict"].Set(verdict); err != nil {
		t.Fatal(err)
	}
	var objs kernelObjects
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		t.Fatal(err)
	}
	defer objs.Close()
	var o outcome
	for range 3 {
		ret, err := objs.XdpCount.Run(&ebpf.RunOptions{Data: packet})
		if err != nil {
			t.Fatal(err)
		}
		o.Rets = append(o.Rets, ret)
	}
	fill(t, &o, objs.Counts, [3]variable{objs.BytesSeen, objs.Runs, objs.Verdict}, func() error {
		_, err := objs.XdpCount.Run(&ebpf.RunOptions{Data: packet})
		return err
	})
	return &o
}

// variable and lookup are what both back ends' Variable and Map offer.
type (
	variable interface {
		Set(any) error
		Get(any) error
		ReadOnly() bool
	}
	lookup interface{ Lookup(key, valueOut any) error }
)

func fill(t *testing.T, o *outcome, counts lookup, vars [3]variable, run func() error) {
	t.Helper()
	if err := counts.Lookup(uint32(7), &o.Count); err != nil {
		t.Fatal(err)
	}
	if err := vars[0].Get(&o.BytesSeen); err != nil {
		t.Fatal(err)
	}
	if err := vars[1].Set(uint64(10)); err != nil {
		t.Fatal(err)
	}
	if err := run(); err != nil {
		t.Fatal(err)
	}
	if err := vars[1].Get(&o.Runs); err != nil {
		t.Fatal(err)
	}
	if err := vars[2].Get(&o.Verdict); err != nil {
		t.Fatal(err)
	}
	for i, v := range vars {
		o.ReadOnly[i] = v.ReadOnly()
	}
	o.SetVerdictErr = errors.Is(vars[2].Set(uint32(1)), ebpf.ErrReadOnly)
}

// TestGeneratedObjects loads dropin.o through bpf2go's generated loaders,
// one per back end, and compares what the programs, maps and variables do:
// the tail call's verdict from .rodata set before loading, the counts, the
// .data and .bss variables read and written after loading, .rodata
// read-only.
func TestGeneratedObjects(t *testing.T) {
	for _, verdict := range []uint32{2, 1} { // XDP_PASS, XDP_DROP
		t.Run(fmt.Sprint("verdict ", verdict), func(t *testing.T) {
			ours := bpfvmOutcome(t, verdict)
			want := outcome{Rets: []uint32{verdict, verdict, verdict}, Count: 3, BytesSeen: 3 * 14, Runs: 11,
				Verdict: verdict, ReadOnly: [3]bool{false, false, true}, SetVerdictErr: true}
			if !reflect.DeepEqual(ours, want) {
				t.Errorf("bpfvm:  %+v\nwant    %+v", ours, want)
			}
			if kern := kernelOutcome(t, verdict); kern != nil && !reflect.DeepEqual(ours, *kern) {
				t.Errorf("bpfvm:  %+v\nkernel: %+v", ours, *kern)
			}
		})
	}
}
