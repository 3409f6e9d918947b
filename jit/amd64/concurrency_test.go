//go:build amd64 && linux

package amd64

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"weak"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/vm"
)

// TestConcurrent runs one program on many goroutines at once, with helper
// calls, local calls and atomics on shared memory.
func TestConcurrent(t *testing.T) {
	prog := mustAssemble(t, `
		r6 = r1
		r7 = 0
	l:
		r1 = r7
		call 1
		r7 += 1
		r2 = 1
		lock *(u64 *)(r6 + 0) += r2
		call f
		if r7 < 200 goto l
		r0 = r7
		exit
	f:
		*(u64 *)(r10 - 8) = r7
		r0 = *(u64 *)(r10 - 8)
		exit
	`)
	var calls atomic.Int64
	helpers := func(id int32) vm.Helper {
		return func(e *vm.Env, r1, r2, r3, r4, r5 uint64) (uint64, error) {
			calls.Add(1)
			return r1, nil
		}
	}
	p, err := Compile(prog, helpers, Options{Modes: Checked | Unchecked})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	shared := newEnv(t, true, 8)
	const G, N = 16, 50
	var wg sync.WaitGroup
	errs := make(chan error, G)
	for g := range G {
		wg.Add(1)
		go func() {
			defer wg.Done()
			te := newEnv(t, g%2 == 0, 0)
			te.env.Regions = shared.env.Regions
			for range N {
				v, err := p.Run(te.env, shared.addr, 0, 0)
				if err != nil || v != 200 {
					errs <- errors.Join(err, errors.New("wrong result"))
					return
				}
				if g == 0 {
					runtime.GC()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := *(*uint64)(vm.Ptr(shared.addr)); got != G*N*200 {
		t.Fatalf("counter %d, want %d", got, G*N*200)
	}
	if calls.Load() != G*N*200 {
		t.Fatalf("helper calls %d", calls.Load())
	}
}

// TestClose closes a program while it runs: runs in progress finish,
// later runs fail with ErrClosed, nothing crashes.
func TestClose(t *testing.T) {
	if !processBarrier() {
		t.Log("no membarrier: code is freed by the garbage collector")
	}
	prog := mustAssemble(t, `
		r6 = 0
	l:
		call 1
		r6 += 1
		if r6 < 100 goto l
		r0 = r6
		exit
	`)
	for round := range 20 {
		started := make(chan struct{})
		var once sync.Once
		helpers := func(id int32) vm.Helper {
			return func(e *vm.Env, r1, r2, r3, r4, r5 uint64) (uint64, error) {
				once.Do(func() { close(started) })
				runtime.Gosched()
				return 0, nil
			}
		}
		p, err := Compile(prog, helpers, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				te := newEnv(t, true, 0)
				for {
					v, err := p.Run(te.env, 0, 0, 0)
					if errors.Is(err, ErrClosed) {
						return
					}
					if err != nil || v != 100 {
						t.Errorf("round %d: %d, %v", round, v, err)
						return
					}
				}
			}()
		}
		<-started
		p.Close()
		wg.Wait()
		if p.code.freed != processBarrier() {
			t.Fatalf("freed %v after the last run", p.code.freed)
		}
	}
}

// TestHeaderLayout checks the offsets enter_amd64.s hard-codes.
func TestHeaderLayout(t *testing.T) {
	if offGoSP != 0 || offGoBP != 8 || offNativeSP != 16 || offResume != 24 || offRegs != 176 ||
		offCPU != 352 || offRand != 360 {
		t.Fatalf("header layout changed: update enter_amd64.s and natives_amd64.s")
	}
}

// TestInvalidEntry calls into the second slot of an LD_IMM64.
func TestInvalidEntry(t *testing.T) {
	prog := append(ldImm(isa.R0, 5), exitInsn)
	p, err := Compile(prog, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	te := newEnv(t, true, 0)
	te.env.FP = te.env.Stack.End
	_, err = p.Call(te.env, 0xbfbf_0000_0000_0001, 0, 0, 0, 0, 0)
	if !errors.Is(err, isa.ErrInvalidProgram) {
		t.Fatalf("got %v", err)
	}
	v, err := p.Call(te.env, 0xbfbf_0000_0000_0000, 0, 0, 0, 0, 0)
	if err != nil || v != 5 {
		t.Fatalf("got %v, %v", v, err)
	}
}

// TestCollect: a program whose helpers refer back to it is garbage
// collected (and its code unmapped) when it becomes unreachable.
func TestCollect(t *testing.T) {
	type holder struct{ p *Program }
	var w weak.Pointer[Program]
	func() {
		h := &holder{}
		helpers := func(id int32) vm.Helper {
			return func(e *vm.Env, r1, r2, r3, r4, r5 uint64) (uint64, error) {
				return uint64(h.p.Len()), nil
			}
		}
		p, err := Compile(mustAssemble(t, "call 1\n exit"), helpers, Options{})
		if err != nil {
			t.Fatal(err)
		}
		h.p = p
		te := newEnv(t, true, 0)
		if v, err := p.Run(te.env, 0, 0, 0); err != nil || v != 2 {
			t.Fatalf("got %v, %v", v, err)
		}
		w = weak.Make(p)
	}()
	for range 5 {
		runtime.GC()
		if w.Value() == nil {
			return
		}
	}
	t.Fatal("program not collected")
}
