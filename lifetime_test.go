package bpfvm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	maps_ "maps"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/verifier"
	"github.com/bpfvm/bpfvm/vm"
)

// lifetimeConfigs are the ways the lifetime tests run programs: verified on
// each engine, and unverified (checked mode) on the JIT.
var lifetimeConfigs = []bpfvm.ProgramOptions{
	{Engine: bpfvm.EngineInterpreter},
	{Engine: bpfvm.EngineDefault},
	{Engine: bpfvm.EngineJIT, NoVerify: true},
}

func lifetimeConfigName(o bpfvm.ProgramOptions) string {
	if o.NoVerify {
		return o.Engine.String() + "-checked"
	}
	return o.Engine.String()
}

// countIn is a program body that adds 1 to value 0 of the map that R1
// holds after load, and returns the new count (0 when the lookup misses).
func countIn(load ...asm.Instruction) asm.Instructions {
	insns := asm.Instructions{asm.StoreImm(asm.RFP, -4, 0, asm.Word)}
	insns = append(insns, load...)
	return append(insns,
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "miss"),
		asm.Mov.Imm(asm.R1, 1),
		asm.AddAtomic.Mem(asm.R0, asm.R1, asm.DWord, 0),
		asm.LoadMem(asm.R0, asm.R0, 0, asm.DWord),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("miss"),
		asm.Return(),
	)
}

// lifetimeSpec has a program for each kind of reference an object can
// have: count uses map m directly, inner goes through outer[0] (map a),
// tail tail-calls jmp[0] (program target, which returns 20; 100 when the
// slot is empty), ring writes 8 bytes to the ring buffer rb. Map h is used
// by Go only.
func lifetimeSpec() *ebpf.CollectionSpec {
	counter := func(name string) *ebpf.MapSpec {
		return &ebpf.MapSpec{Name: name, Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1}
	}
	prog := func(name string, insns asm.Instructions) *ebpf.ProgramSpec {
		return &ebpf.ProgramSpec{Name: name, Type: ebpf.XDP, License: "GPL", Instructions: insns}
	}
	return &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{
			"m": counter("m"),
			"a": counter("a"),
			"h": {Name: "h", Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 16},
			"outer": {Name: "outer", Type: ebpf.ArrayOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 2,
				InnerMap: counter("a"), Contents: []ebpf.MapKV{{Key: uint32(0), Value: "a"}}},
			"jmp": {Name: "jmp", Type: ebpf.ProgramArray, KeySize: 4, ValueSize: 4, MaxEntries: 2,
				Contents: []ebpf.MapKV{{Key: uint32(0), Value: "target"}}},
			"rb": {Name: "rb", Type: ebpf.RingBuf, MaxEntries: uint32(os.Getpagesize())},
			// Used by Go only, for the other kinds of memory.
			"hom": {Name: "hom", Type: ebpf.HashOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 2,
				InnerMap: counter("a"), Contents: []ebpf.MapKV{{Key: uint32(0), Value: "a"}}},
			"q":   {Name: "q", Type: ebpf.Queue, ValueSize: 8, MaxEntries: 4},
			"pc":  {Name: "pc", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 1},
			"lru": {Name: "lru", Type: ebpf.LRUHash, KeySize: 4, ValueSize: 8, MaxEntries: 4},
		},
		Programs: map[string]*ebpf.ProgramSpec{
			"count": prog("count", countIn(asm.LoadMapPtr(asm.R1, 0).WithReference("m"))),
			"inner": prog("inner", countIn(
				asm.LoadMapPtr(asm.R1, 0).WithReference("outer"),
				asm.Mov.Reg(asm.R2, asm.RFP),
				asm.Add.Imm(asm.R2, -4),
				asm.FnMapLookupElem.Call(),
				asm.JEq.Imm(asm.R0, 0, "miss"),
				asm.Mov.Reg(asm.R1, asm.R0),
			)),
			"tail": prog("tail", asm.Instructions{
				asm.LoadMapPtr(asm.R2, 0).WithReference("jmp"),
				asm.Mov.Imm(asm.R3, 0),
				asm.FnTailCall.Call(),
				asm.Mov.Imm(asm.R0, 100),
				asm.Return(),
			}),
			"target": prog("target", asm.Instructions{asm.Mov.Imm(asm.R0, 20), asm.Return()}),
			"ring": prog("ring", asm.Instructions{
				asm.Mov.Imm(asm.R1, 7),
				asm.StoreMem(asm.RFP, -8, asm.R1, asm.DWord),
				asm.LoadMapPtr(asm.R1, 0).WithReference("rb"),
				asm.Mov.Reg(asm.R2, asm.RFP),
				asm.Add.Imm(asm.R2, -8),
				asm.Mov.Imm(asm.R3, 8),
				asm.Mov.Imm(asm.R4, 0),
				asm.FnRingbufOutput.Call(),
				asm.Mov.Imm(asm.R0, 0),
				asm.Return(),
			}),
		},
	}
}

func newLifetimeCollection(t testing.TB, opts bpfvm.ProgramOptions) *bpfvm.Collection {
	t.Helper()
	coll, err := bpfvm.NewCollectionWithOptions(lifetimeSpec(), bpfvm.CollectionOptions{Programs: opts, NumCPU: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(coll.Close)
	return coll
}

var lifetimePacket = make([]byte, 64)

func runProg(p *bpfvm.Program) (uint32, error) {
	return p.Run(&bpfvm.RunOptions{Data: lifetimePacket})
}

// wantRun runs p and checks its result.
func wantRun(t *testing.T, p *bpfvm.Program, want uint32) {
	t.Helper()
	if got, err := runProg(p); err != nil || got != want {
		t.Errorf("run %s: %d, %v; want %d", p.Name(), got, err, want)
	}
}

// isClosed reports whether err is the sentinel of a closed object, in each
// of the forms callers may test for.
func isClosed(err error) bool {
	return errors.Is(err, bpfvm.ErrClosed) && errors.Is(err, os.ErrClosed) && errors.Is(err, unix.EBADF)
}

// waitReclaimed waits for the frees that the last references deferred.
func waitReclaimed(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for maps.Reclaim() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("deferred frees still pending after 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

// mapOps are the Go-side operations on a map, each returning its error.
// Keys and values have the sizes of the lifetime maps (4 and 8 bytes; 4 for
// the map ids and program ids of outer and jmp).
func mapOps(m *bpfvm.Map) map[string]func() error {
	vsize := max(int(m.ValueSize()), 1)
	value := func() []byte { return make([]byte, vsize) }
	return map[string]func() error{
		"Lookup":          func() error { return m.Lookup(uint32(0), value()) },
		"LookupAndDelete": func() error { return m.LookupAndDelete(uint32(0), value()) },
		"Put":             func() error { return m.Put(uint32(1), value()) },
		"Update":          func() error { return m.Update(uint32(1), value(), bpfvm.UpdateExist) },
		"Delete":          func() error { return m.Delete(uint32(1)) },
		"NextKey": func() error {
			var k uint32
			return m.NextKey(nil, &k)
		},
		"Iterate": func() error {
			var k uint32
			it := m.Iterate()
			for it.Next(&k, value()) {
			}
			return it.Err()
		},
		"BatchLookup": func() error {
			var c bpfvm.MapBatchCursor
			_, err := m.BatchLookup(&c, make([]uint32, 2), make([]byte, 2*vsize), nil)
			return err
		},
		"BatchLookupAndDelete": func() error {
			var c bpfvm.MapBatchCursor
			_, err := m.BatchLookupAndDelete(&c, make([]uint32, 2), make([]byte, 2*vsize), nil)
			return err
		},
		"BatchUpdate": func() error {
			_, err := m.BatchUpdate([]uint32{1}, value(), nil)
			return err
		},
		"BatchDelete": func() error {
			_, err := m.BatchDelete([]uint32{1}, nil)
			return err
		},
	}
}

// progOps are the operations on a program that run it.
func progOps(p *bpfvm.Program) map[string]func() error {
	return map[string]func() error{
		"Run": func() error { _, err := runProg(p); return err },
		"Test": func() error {
			_, _, err := p.Test(lifetimePacket)
			return err
		},
		"Benchmark": func() error {
			_, _, err := p.Benchmark(lifetimePacket, 2, nil)
			return err
		},
		"Execute": func() error {
			_, err := p.Execute(&bpfvm.RunOptions{Data: lifetimePacket, RunContext: context.Background()})
			return err
		},
	}
}

// Every operation on a closed map, program, collection or ring buffer
// reader fails with ErrClosed; closing again is harmless.
func TestClosedObjectsFail(t *testing.T) {
	for _, cfg := range lifetimeConfigs {
		t.Run(lifetimeConfigName(cfg), func(t *testing.T) {
			for _, how := range []string{"one by one", "collection"} {
				coll := newLifetimeCollection(t, cfg)
				ring, err := bpfvm.NewRingReader(coll.Maps["rb"])
				if err != nil {
					t.Fatal(err)
				}
				if how == "collection" {
					coll.Close()
					coll.Close()
				}
				for name, m := range coll.Maps {
					if how == "one by one" {
						if err := m.Close(); err != nil {
							t.Errorf("close %s: %v", name, err)
						}
					}
					if err := m.Close(); err != nil {
						t.Errorf("%s: second close: %v", name, err)
					}
					for op, f := range mapOps(m) {
						if err := f(); !isClosed(err) {
							t.Errorf("%s: map %s: %s: %v, want ErrClosed", how, name, op, err)
						}
					}
					if m.Name() != name || m.ID() == 0 {
						t.Errorf("%s: metadata of closed map %s: %q %d", how, name, m.Name(), m.ID())
					}
				}
				for name, p := range coll.Programs {
					if how == "one by one" {
						if err := p.Close(); err != nil {
							t.Errorf("close %s: %v", name, err)
						}
					}
					if err := p.Close(); err != nil {
						t.Errorf("%s: second close of %s: %v", how, name, err)
					}
					for op, f := range progOps(p) {
						if err := f(); !isClosed(err) {
							t.Errorf("%s: program %s: %s: %v, want ErrClosed", how, name, op, err)
						}
					}
					if _, _, ok := p.NativeCode(); ok {
						t.Errorf("%s: program %s: native code of a closed program", how, name)
					}
				}
				if _, err := ring.Read(); !isClosed(err) {
					t.Errorf("%s: read of a closed ring buffer: %v", how, err)
				}
				if err := ring.Close(); err != nil {
					t.Error(err)
				}
				if _, err := ring.Read(); !isClosed(err) {
					t.Errorf("%s: read of a closed reader: %v", how, err)
				}
			}
		})
	}
	t.Run("closed reader", func(t *testing.T) {
		coll := newLifetimeCollection(t, bpfvm.ProgramOptions{})
		rd, err := bpfvm.NewRingReader(coll.Maps["rb"])
		if err != nil {
			t.Fatal(err)
		}
		rd.Close()
		rd.Close()
		wantRun(t, coll.Programs["ring"], 0)
		if _, err := rd.Read(); !isClosed(err) {
			t.Errorf("read: %v", err)
		}
		if n := rd.Available(); n != 0 {
			t.Errorf("available: %d", n)
		}
	})
	t.Run("closed values", func(t *testing.T) {
		coll := newLifetimeCollection(t, bpfvm.ProgramOptions{})
		other := newLifetimeCollection(t, bpfvm.ProgramOptions{})
		a, target := other.Maps["a"], other.Programs["target"]
		a.Close()
		target.Close()
		if err := coll.Maps["outer"].Put(uint32(1), a); !isClosed(err) {
			t.Errorf("closed map into a map of maps: %v", err)
		}
		if err := coll.Maps["jmp"].Put(uint32(1), target); !isClosed(err) {
			t.Errorf("closed program into a prog_array: %v", err)
		}
	})
}

// A map closed by its user keeps working for the programs that reference
// it, and a map of maps keeps its inner maps working until they leave it;
// after the last reference the memory goes, and memory allocated next is
// not written by the runs that used to see it.
func TestClosedObjectsStillReferenced(t *testing.T) {
	for _, cfg := range lifetimeConfigs {
		t.Run(lifetimeConfigName(cfg), func(t *testing.T) {
			coll := newLifetimeCollection(t, cfg)
			count, inner, tail := coll.Programs["count"], coll.Programs["inner"], coll.Programs["tail"]

			// Map m, closed, is still the program's.
			coll.Maps["m"].Close()
			wantRun(t, count, 1)
			wantRun(t, count, 2)

			// Inner map a, closed, still works through outer[0]; so
			// does outer, closed too, for the program that references it.
			// (Checked mode does not let programs write inner maps yet:
			// its regions are the program's own maps.)
			innerRun := func(want uint32) {
				t.Helper()
				if !cfg.NoVerify {
					wantRun(t, inner, want)
				}
			}
			a, outer := coll.Maps["a"], coll.Maps["outer"]
			aID := a.ID()
			innerRun(1)
			a.Close()
			innerRun(2)
			// Still alive: it can be stored again by id.
			if err := outer.Put(uint32(1), aID); err != nil {
				t.Errorf("put a live inner map by id: %v", err)
			}
			if err := outer.Delete(uint32(1)); err != nil {
				t.Error(err)
			}
			// Out of the outer maps, it is gone: lookups miss, and its id
			// names nothing once the last reference is dropped.
			for _, o := range []*bpfvm.Map{outer, coll.Maps["hom"]} {
				if err := o.Delete(uint32(0)); err != nil {
					t.Error(err)
				}
			}
			innerRun(0)
			waitReclaimed(t)
			if err := outer.Put(uint32(0), aID); !errors.Is(err, maps.ErrInvalid) {
				t.Errorf("put a freed inner map by id: %v, want ErrInvalid", err)
			}
			outer.Close()
			innerRun(0)

			// Program target, closed, is still called through jmp[0]
			// until it leaves the slot.
			target, jmp := coll.Programs["target"], coll.Maps["jmp"]
			targetID := target.ID()
			target.Close()
			wantRun(t, tail, 20)
			if _, err := runProg(target); !isClosed(err) {
				t.Errorf("run of a closed tail-call target: %v", err)
			}
			if err := jmp.Delete(uint32(0)); err != nil {
				t.Error(err)
			}
			wantRun(t, tail, 100)
			waitReclaimed(t)
			if err := jmp.Put(uint32(0), targetID); !errors.Is(err, maps.ErrInvalid) {
				t.Errorf("put a freed program by id: %v, want ErrInvalid", err)
			}

			// The ring buffer, closed, still takes records.
			coll.Maps["rb"].Close()
			wantRun(t, coll.Programs["ring"], 0)

			// Memory freed above is reused by new collections: the
			// programs still running must not write it.
			canary := newCanary(t)
			for range 100 {
				runProg(count)
				runProg(inner)
				runProg(tail)
			}
			canary.check(t)
			wantRun(t, count, 103)
		})
	}
}

// Closing a prog_array (its user's reference) empties it, as in the kernel,
// so a program in its own array does not keep both alive.
func TestClosedProgArrayEmpties(t *testing.T) {
	for _, cfg := range lifetimeConfigs {
		t.Run(lifetimeConfigName(cfg), func(t *testing.T) {
			coll := newLifetimeCollection(t, cfg)
			tail := coll.Programs["tail"]
			if err := coll.Maps["jmp"].Put(uint32(1), tail); err != nil {
				t.Fatal(err)
			}
			wantRun(t, tail, 20)
			coll.Maps["jmp"].Close()
			wantRun(t, tail, 100)
			tail.Close()
			waitReclaimed(t)
		})
	}
}

// canary is a collection whose maps hold a known pattern that nothing may
// change.
type canary struct {
	coll *bpfvm.Collection
	want [][]byte
}

const canaryEntries = 16

func newCanary(t testing.TB) *canary {
	t.Helper()
	coll, err := bpfvm.NewCollection(&ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{
		"array": {Name: "array", Type: ebpf.Array, KeySize: 4, ValueSize: 64, MaxEntries: canaryEntries},
		"hash":  {Name: "hash", Type: ebpf.Hash, KeySize: 4, ValueSize: 64, MaxEntries: canaryEntries},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(coll.Close)
	c := &canary{coll: coll}
	for i := range canaryEntries {
		v := bytes.Repeat([]byte{byte(i*7 + 1)}, 64)
		c.want = append(c.want, v)
		for _, m := range coll.Maps {
			if err := m.Put(uint32(i), v); err != nil {
				t.Fatal(err)
			}
		}
	}
	return c
}

func (c *canary) check(t testing.TB) {
	t.Helper()
	for name, m := range c.coll.Maps {
		for i, want := range c.want {
			got := make([]byte, 64)
			if err := m.Lookup(uint32(i), got); err != nil || !bytes.Equal(got, want) {
				t.Errorf("canary %s[%d] changed: %x, %v", name, i, got, err)
			}
		}
	}
}

func (c *canary) close() { c.coll.Close() }

// lifetimeKinds are the objects the stress test closes under load: close
// closes one, and runs and ops say which runs and Go-side operations must
// then fail with ErrClosed.
var lifetimeKinds = []struct {
	name  string
	close func(t *testing.T, c *bpfvm.Collection, rd *maps.RingReader)
	runs  []string // programs whose runs fail once closed
	maps  []string // maps whose operations fail once closed ("*": all)
}{
	{name: "map", close: func(_ *testing.T, c *bpfvm.Collection, _ *maps.RingReader) { c.Maps["m"].Close() }, maps: []string{"m"}},
	{name: "go-only map", close: func(_ *testing.T, c *bpfvm.Collection, _ *maps.RingReader) { c.Maps["h"].Close() }, maps: []string{"h"}},
	{name: "program", close: func(_ *testing.T, c *bpfvm.Collection, _ *maps.RingReader) { c.Programs["count"].Close() }, runs: []string{"count"}},
	{name: "collection", close: func(_ *testing.T, c *bpfvm.Collection, _ *maps.RingReader) { c.Close() },
		runs: []string{"count", "inner", "tail", "target", "ring"}, maps: []string{"*"}},
	{name: "outer map", close: func(_ *testing.T, c *bpfvm.Collection, _ *maps.RingReader) { c.Maps["outer"].Close() }, maps: []string{"outer"}},
	{name: "inner map", close: func(t *testing.T, c *bpfvm.Collection, _ *maps.RingReader) {
		c.Maps["a"].Close()
		// Go-side batch deletes may have emptied the slot already.
		for _, o := range []string{"outer", "hom"} {
			if err := c.Maps[o].Delete(uint32(0)); err != nil && !errors.Is(err, maps.ErrKeyNotExist) {
				t.Error(err)
			}
		}
	}, maps: []string{"a"}},
	{name: "prog_array program", close: func(t *testing.T, c *bpfvm.Collection, _ *maps.RingReader) {
		c.Programs["target"].Close()
		if err := c.Maps["jmp"].Delete(uint32(0)); err != nil && !errors.Is(err, maps.ErrKeyNotExist) {
			t.Error(err)
		}
	}, runs: []string{"target"}},
	{name: "prog_array", close: func(_ *testing.T, c *bpfvm.Collection, _ *maps.RingReader) { c.Maps["jmp"].Close() }, maps: []string{"jmp"}},
	{name: "ring buffer", close: func(_ *testing.T, c *bpfvm.Collection, _ *maps.RingReader) { c.Maps["rb"].Close() }, maps: []string{"rb"}},
	{name: "ring reader", close: func(_ *testing.T, _ *bpfvm.Collection, rd *maps.RingReader) { rd.Close() }},
}

// Objects of every kind are closed while programs run on both engines,
// ring buffer readers read and Go code operates on the maps: nothing
// crashes, a canary collection created before and canaries created after
// each close (in the memory just freed) never change, every operation on a
// closed object fails with ErrClosed, and other failures are only the
// ordinary ones (a key missing, a map full). Bounded to about 3 s.
func TestLifetimeStress(t *testing.T) {
	budget := 2 * time.Second
	if testing.Short() {
		budget = time.Second / 2
	}
	end := time.Now().Add(budget)
	left := len(lifetimeKinds) * len(lifetimeConfigs)
	old := newCanary(t)
	for _, kind := range lifetimeKinds {
		for _, cfg := range lifetimeConfigs {
			// What is left of the budget, shared by the subtests left;
			// each does at least one round.
			per := time.Until(end) / time.Duration(left)
			left--
			t.Run(kind.name+"/"+lifetimeConfigName(cfg), func(t *testing.T) {
				rounds := 0
				for deadline := time.Now().Add(per); rounds == 0 || time.Now().Before(deadline); rounds++ {
					stressRound(t, kind.name, cfg, rounds)
					if t.Failed() {
						return
					}
				}
			})
		}
	}
	waitReclaimed(t)
	old.check(t)
}

func stressRound(t *testing.T, kindName string, cfg bpfvm.ProgramOptions, round int) {
	var kind = lifetimeKinds[0]
	for _, k := range lifetimeKinds {
		if k.name == kindName {
			kind = k
		}
	}
	coll, err := bpfvm.NewCollectionWithOptions(lifetimeSpec(), bpfvm.CollectionOptions{Programs: cfg, NumCPU: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	rd, err := bpfvm.NewRingReader(coll.Maps["rb"])
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()

	closedRuns, closedMaps := map[string]bool{}, map[string]bool{}
	for _, n := range kind.runs {
		closedRuns[n] = true
	}
	for _, n := range kind.maps {
		closedMaps[n] = true
		if n == "*" {
			for name := range coll.Maps {
				closedMaps[name] = true
			}
		}
	}
	var closed atomic.Bool    // set once kind.close has returned
	var allClosed atomic.Bool // set when the collection is about to close
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var errs []error
	fail := func(format string, args ...any) {
		errMu.Lock()
		if len(errs) < 10 {
			errs = append(errs, fmt.Errorf(format, args...))
		}
		errMu.Unlock()
	}
	// check judges the outcome of an operation on an object that kind
	// closes (mustClose) or not, started after the close or not.
	check := func(what string, err error, afterClose, mustClose bool, allowed ...error) {
		switch {
		case afterClose && mustClose && !isClosed(err):
			fail("%s after close: %v, want ErrClosed", what, err)
		case isClosed(err) && !mustClose && !allClosed.Load():
			fail("%s: %v, though it was not closed", what, err)
		case err != nil && !isClosed(err) && !isAny(err, allowed):
			fail("%s: %v", what, err)
		}
	}
	loop := func(f func(afterClose bool)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				f(closed.Load())
			}
		}()
	}
	// Runs of every program, from two goroutines.
	names := []string{"inner", "count", "tail", "target", "ring"}
	if cfg.NoVerify {
		names = names[1:] // checked mode does not let programs write inner maps yet
	}
	for g := range 2 {
		loop(func(afterClose bool) {
			for _, name := range names[g:] {
				_, err := runProg(coll.Programs[name])
				check("run "+name, err, afterClose, closedRuns[name])
			}
		})
	}
	// Go-side operations on every map, from two goroutines.
	allowed := []error{maps.ErrKeyNotExist, maps.ErrFull, maps.ErrInvalid, maps.ErrNotSupported, maps.ErrKeyExist}
	var opMaps [2][]string
	for _, name := range slices.Sorted(maps_.Keys(coll.Maps)) {
		if m := coll.Maps[name]; m.KeySize() != 4 || m.Type() == ebpf.PerCPUArray {
			// The ring buffer, the queue and per-CPU values take other
			// shapes (ErrClosed: TestClosedObjectsFail).
			continue
		}
		opMaps[len(opMaps[0])%2] = append(opMaps[len(opMaps[0])%2], name)
	}
	for _, names := range opMaps {
		loop(func(afterClose bool) {
			for _, name := range names {
				for op, f := range mapOps(coll.Maps[name]) {
					check("map "+name+": "+op, f(), afterClose, closedMaps[name], allowed...)
				}
			}
		})
	}
	// A reader, and readers that come and go.
	loop(func(afterClose bool) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		_, err := rd.ReadContext(ctx)
		cancel()
		check("read", err, afterClose, kind.name == "ring reader" || closedMaps["rb"], context.DeadlineExceeded)
	})
	loop(func(afterClose bool) {
		r, err := bpfvm.NewRingReader(coll.Maps["rb"])
		if err != nil {
			fail("new reader: %v", err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Microsecond)
		_, err = r.ReadContext(ctx)
		cancel()
		r.Close()
		check("read (new reader)", err, afterClose, closedMaps["rb"], context.DeadlineExceeded)
	})

	time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
	kind.close(t, coll, rd)
	closed.Store(true)
	// New objects may get the memory just freed.
	fresh := newCanary(t)
	time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
	allClosed.Store(true)
	coll.Close()
	time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
	close(stop)
	wg.Wait()
	fresh.check(t)
	fresh.close()
	for _, err := range errs {
		t.Errorf("round %d: %v", round, err)
	}
}

func isAny(err error, targets []error) bool {
	for _, target := range targets {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// An inner map removed from its outer map and closed during a run stays
// usable by that run, as the kernel's RCU keeps it: the run writes the
// value it looked up before, after the removal, and that write lands in the
// inner map, not in memory allocated meanwhile; the map goes once the run
// has left.
func TestInnerMapRemovedMidRun(t *testing.T) {
	const hostHelper = 10000
	for _, cfg := range lifetimeConfigs[:2] { // checked mode: see TestClosedObjectsStillReferenced
		t.Run(lifetimeConfigName(cfg), func(t *testing.T) {
			spec := lifetimeSpec()
			spec.Programs["midrun"] = &ebpf.ProgramSpec{Name: "midrun", Type: ebpf.XDP, License: "GPL", Instructions: asm.Instructions{
				// r7 = &outer[0][0], or return 0.
				asm.StoreImm(asm.RFP, -4, 0, asm.Word),
				asm.LoadMapPtr(asm.R1, 0).WithReference("outer"),
				asm.Mov.Reg(asm.R2, asm.RFP),
				asm.Add.Imm(asm.R2, -4),
				asm.FnMapLookupElem.Call(),
				asm.JEq.Imm(asm.R0, 0, "miss"),
				asm.Mov.Reg(asm.R1, asm.R0),
				asm.Mov.Reg(asm.R2, asm.RFP),
				asm.Add.Imm(asm.R2, -4),
				asm.FnMapLookupElem.Call(),
				asm.JEq.Imm(asm.R0, 0, "miss"),
				asm.Mov.Reg(asm.R7, asm.R0),
				// The host removes and closes the inner map.
				asm.BuiltinFunc(hostHelper).Call(),
				asm.Mov.Imm(asm.R1, 0x55),
				asm.StoreMem(asm.R7, 0, asm.R1, asm.DWord),
				asm.Mov.Imm(asm.R0, 1),
				asm.Return(),
				asm.Mov.Imm(asm.R0, 0).WithSymbol("miss"),
				asm.Return(),
			}}
			var coll *bpfvm.Collection
			var fresh *canary
			var pendingInside int
			remove := func(*vm.Env, uint64, uint64, uint64, uint64, uint64) (uint64, error) {
				coll.Maps["a"].Close()
				for _, o := range []string{"outer", "hom"} {
					if err := coll.Maps[o].Delete(uint32(0)); err != nil {
						return 0, err
					}
				}
				fresh = newCanary(t)
				pendingInside = maps.Reclaim()
				return 0, nil
			}
			opts := cfg
			opts.Helpers = map[int32]vm.Helper{hostHelper: remove}
			opts.HelperProtos = map[int32]*verifier.Proto{hostHelper: {Name: "remove_inner"}}
			var err error
			coll, err = bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: opts, NumCPU: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer coll.Close()
			aID := coll.Maps["a"].ID()
			wantRun(t, coll.Programs["midrun"], 1)
			if pendingInside == 0 {
				t.Error("inner map freed while a run held its value")
			}
			fresh.check(t)
			waitReclaimed(t)
			if err := coll.Maps["outer"].Put(uint32(0), aID); !errors.Is(err, maps.ErrInvalid) {
				t.Errorf("put of the freed inner map by id: %v, want ErrInvalid", err)
			}
			wantRun(t, coll.Programs["midrun"], 0)
			fresh.check(t)
		})
	}
}

// Closing from a helper, inside a run of the object closed, neither
// deadlocks nor pulls memory from under the run: it finishes, and later
// operations fail with ErrClosed.
func TestCloseFromHelper(t *testing.T) {
	const hostHelper = 10001
	for _, what := range []string{"collection", "program", "map"} {
		for _, cfg := range lifetimeConfigs[:2] {
			t.Run(what+"/"+lifetimeConfigName(cfg), func(t *testing.T) {
				spec := lifetimeSpec()
				// The host closes something, then the run counts in m.
				body := append(asm.Instructions{asm.BuiltinFunc(hostHelper).Call()},
					countIn(asm.LoadMapPtr(asm.R1, 0).WithReference("m"))...)
				spec.Programs["closer"] = &ebpf.ProgramSpec{Name: "closer", Type: ebpf.XDP, License: "GPL", Instructions: body}
				var coll *bpfvm.Collection
				closeIt := func(*vm.Env, uint64, uint64, uint64, uint64, uint64) (uint64, error) {
					switch what {
					case "collection":
						coll.Close()
					case "program":
						coll.Programs["closer"].Close()
					case "map":
						coll.Maps["m"].Close()
					}
					return 0, nil
				}
				opts := cfg
				opts.Helpers = map[int32]vm.Helper{hostHelper: closeIt}
				opts.HelperProtos = map[int32]*verifier.Proto{hostHelper: {Name: "close_it"}}
				var err error
				coll, err = bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: opts, NumCPU: 1})
				if err != nil {
					t.Fatal(err)
				}
				defer coll.Close()
				done := make(chan struct{})
				go func() {
					defer close(done)
					wantRun(t, coll.Programs["closer"], 1)
				}()
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("run that closed its own collection did not return")
				}
				_, err = runProg(coll.Programs["closer"])
				if what == "map" {
					if err != nil {
						t.Errorf("run after its map was closed: %v", err)
					}
				} else if !isClosed(err) {
					t.Errorf("run after close: %v, want ErrClosed", err)
				}
				waitReclaimed(t)
			})
		}
	}
}
