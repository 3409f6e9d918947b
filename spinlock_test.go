package bpfvm_test

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/internal/fieldbtf"
)

// spinLockSpec is an array of one value { struct bpf_spin_lock l; u32 pad;
// u64 n; } and a program that adds one to n holding the lock.
func spinLockSpec() *ebpf.CollectionSpec {
	value := fieldbtf.Value("val", 16, fieldbtf.Member{Type: fieldbtf.Special("bpf_spin_lock", 4)}, fieldbtf.Member{Off: 4, Type: fieldbtf.U32}, fieldbtf.Member{Off: 8, Type: fieldbtf.U64})
	return &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{"m": {Name: "m", Type: ebpf.Array, KeySize: 4, ValueSize: 16, MaxEntries: 1, Key: &btf.Int{Name: "key", Size: 4}, Value: value}},
		Programs: map[string]*ebpf.ProgramSpec{"inc": {Name: "inc", Type: ebpf.XDP, License: "GPL", Instructions: asm.Instructions{
			asm.StoreImm(asm.R10, -4, 0, asm.Word),
			asm.LoadMapPtr(asm.R1, 0).WithReference("m"),
			asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.Mov.Reg(asm.R6, asm.R0),
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.FnSpinLock.Call(),
			asm.LoadMem(asm.R1, asm.R6, 8, asm.DWord),
			asm.Add.Imm(asm.R1, 1),
			asm.StoreMem(asm.R6, 8, asm.R1, asm.DWord),
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.FnSpinUnlock.Call(),
			asm.Mov.Imm(asm.R0, 2).WithSymbol("out"),
			asm.Return(),
		}}},
	}
}

// TestSpinLockRun runs a program that counts under a bpf_spin_lock on
// both engines, from several runners at once: no increment is lost, the
// lock is free after the runs (a BPF_F_LOCK update takes it), and the
// kernel gives the same result for the same runs.
func TestSpinLockRun(t *testing.T) {
	const goroutines, runs = 4, 500
	counter := func(m interface{ Lookup(key, valueOut any) error }) uint64 {
		var v [16]byte
		if err := m.Lookup(uint32(0), &v); err != nil {
			t.Fatal(err)
		}
		return uint64(v[8]) | uint64(v[9])<<8 | uint64(v[10])<<16 | uint64(v[11])<<24
	}
	want := uint64(goroutines * runs)
	if os.Getuid() == 0 && rlimit.RemoveMemlock() == nil {
		if k, err := ebpf.NewCollection(spinLockSpec()); err == nil {
			defer k.Close()
			// One repetition a call: a signal during a repeated test run
			// makes it EINTR after some repetitions and cilium/ebpf runs
			// it again from the start, counting those twice.
			for range goroutines * runs {
				if ret, err := k.Programs["inc"].Run(&ebpf.RunOptions{Data: make([]byte, 64)}); err != nil || ret != 2 {
					t.Fatalf("kernel: %d, %v", ret, err)
				}
			}
			if got := counter(k.Maps["m"]); got != want {
				t.Errorf("kernel counted %d, want %d", got, want)
			}
		} else {
			t.Logf("no kernel oracle: %v", err)
		}
	}
	for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		coll, err := bpfvm.NewCollectionWithOptions(spinLockSpec(), bpfvm.CollectionOptions{NumCPU: goroutines, Programs: bpfvm.ProgramOptions{Engine: e}})
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		defer coll.Close()
		var wg sync.WaitGroup
		for range goroutines {
			wg.Go(func() {
				for range runs {
					if ret, _, err := coll.Programs["inc"].Test(make([]byte, 64)); err != nil || ret != 2 {
						t.Errorf("%s: %d, %v", e, ret, err)
						return
					}
				}
			})
		}
		wg.Wait()
		if got := counter(coll.Maps["m"]); got != want {
			t.Errorf("%s counted %d, want %d", e, got, want)
		}
		if err := coll.Maps["m"].Update(uint32(0), make([]byte, 16), ebpf.UpdateLock); err != nil {
			t.Errorf("%s: locked update: %v", e, err)
		}
	}
}

// TestSpinLockLeftHeld runs unverified programs that exit holding the lock,
// take it twice, or update the value with BPF_F_LOCK holding it: the lock
// is released when the run ends, and the others fail rather than waiting
// for themselves.
func TestSpinLockLeftHeld(t *testing.T) {
	spec := spinLockSpec()
	lockOnly := func(then asm.Instructions) asm.Instructions {
		insns := asm.Instructions{
			asm.StoreImm(asm.R10, -4, 0, asm.Word),
			asm.LoadMapPtr(asm.R1, 0).WithReference("m"),
			asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.Mov.Reg(asm.R6, asm.R0),
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.FnSpinLock.Call(),
		}
		insns = append(insns, then...)
		return append(insns, asm.Mov.Imm(asm.R0, 2).WithSymbol("out"), asm.Return())
	}
	spec.Programs["leak"] = &ebpf.ProgramSpec{Name: "leak", Type: ebpf.XDP, License: "GPL", Instructions: lockOnly(nil)}
	spec.Programs["twice"] = &ebpf.ProgramSpec{Name: "twice", Type: ebpf.XDP, License: "GPL", Instructions: lockOnly(asm.Instructions{
		asm.Mov.Reg(asm.R1, asm.R6), asm.FnSpinLock.Call(),
	})}
	spec.Programs["update"] = &ebpf.ProgramSpec{Name: "update", Type: ebpf.XDP, License: "GPL", Instructions: lockOnly(asm.Instructions{
		asm.LoadMapPtr(asm.R1, 0).WithReference("m"),
		asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, -4),
		asm.Mov.Reg(asm.R3, asm.R6), asm.Mov.Imm(asm.R4, 4), // BPF_F_LOCK
		asm.FnMapUpdateElem.Call(),
	})}
	for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Engine: e, NoVerify: true}})
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		defer coll.Close()
		if _, _, err := coll.Programs["leak"].Test(make([]byte, 64)); err != nil {
			t.Fatalf("%s: leak: %v", e, err)
		}
		if _, _, err := coll.Programs["twice"].Test(make([]byte, 64)); err == nil {
			t.Errorf("%s: a second lock in one run succeeded", e)
		}
		if _, _, err := coll.Programs["update"].Test(make([]byte, 64)); err == nil {
			t.Errorf("%s: a locked update holding the lock succeeded", e)
		}
		done := make(chan error, 1)
		go func() { _, _, err := coll.Programs["inc"].Test(make([]byte, 64)); done <- err }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: inc: %v", e, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the lock a run left held was not released", e)
		}
	}
}
