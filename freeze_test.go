package bpfvm_test

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/maps"
)

// errClass names the kernel errno an error stands for, ours or the
// kernel's, so that the two can be compared.
func errClass(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, unix.EPERM):
		return "EPERM"
	case errors.Is(err, unix.EBUSY):
		return "EBUSY"
	case errors.Is(err, unix.ENOENT), errors.Is(err, ebpf.ErrKeyNotExist), errors.Is(err, maps.ErrKeyNotExist):
		return "ENOENT"
	case errors.Is(err, unix.EINVAL), errors.Is(err, maps.ErrInvalid):
		return "EINVAL"
	case errors.Is(err, ebpf.ErrNotSupported), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.Errno(524)),
		errors.Is(err, maps.ErrNotSupported), errors.Is(err, bpfvm.ErrNotSupported):
		return "ENOTSUPP"
	}
	return "other: " + err.Error()
}

// freezeOps are the Go-side operations compared between our map and the
// kernel's: the same calls on cilium/ebpf's Map.
type freezeOps interface {
	Update(key, value any, flags ebpf.MapUpdateFlags) error
	Delete(key any) error
	LookupAndDelete(key, valueOut any) error
	Lookup(key, valueOut any) error
	NextKey(key, nextKeyOut any) error
	Freeze() error
	BatchUpdate(keys, values any) (int, error)
	BatchDelete(keys any) (int, error)
	BatchLookup(keysOut, valuesOut any) (int, error)
	BatchLookupAndDelete(keysOut, valuesOut any) (int, error)
}

type kernelOps struct{ m *ebpf.Map }

func (k kernelOps) Update(key, value any, f ebpf.MapUpdateFlags) error {
	return k.m.Update(key, value, f)
}
func (k kernelOps) Delete(key any) error             { return k.m.Delete(key) }
func (k kernelOps) LookupAndDelete(key, v any) error { return k.m.LookupAndDelete(key, v) }
func (k kernelOps) Lookup(key, v any) error          { return k.m.Lookup(key, v) }
func (k kernelOps) NextKey(key, next any) error      { return k.m.NextKey(key, next) }
func (k kernelOps) Freeze() error                    { return k.m.Freeze() }
func (k kernelOps) BatchUpdate(keys, values any) (int, error) {
	return k.m.BatchUpdate(keys, values, nil)
}
func (k kernelOps) BatchDelete(keys any) (int, error) { return k.m.BatchDelete(keys, nil) }
func (k kernelOps) BatchLookup(keys, values any) (int, error) {
	return k.m.BatchLookup(new(ebpf.MapBatchCursor), keys, values, nil)
}
func (k kernelOps) BatchLookupAndDelete(keys, values any) (int, error) {
	return k.m.BatchLookupAndDelete(new(ebpf.MapBatchCursor), keys, values, nil)
}

type ourOps struct{ m *bpfvm.Map }

func (o ourOps) Update(key, value any, f ebpf.MapUpdateFlags) error {
	return o.m.Update(key, value, bpfvm.MapUpdateFlags(f))
}
func (o ourOps) Delete(key any) error                      { return o.m.Delete(key) }
func (o ourOps) LookupAndDelete(key, v any) error          { return o.m.LookupAndDelete(key, v) }
func (o ourOps) Lookup(key, v any) error                   { return o.m.Lookup(key, v) }
func (o ourOps) NextKey(key, next any) error               { return o.m.NextKey(key, next) }
func (o ourOps) Freeze() error                             { return o.m.Freeze() }
func (o ourOps) BatchUpdate(keys, values any) (int, error) { return o.m.BatchUpdate(keys, values, nil) }
func (o ourOps) BatchDelete(keys any) (int, error)         { return o.m.BatchDelete(keys, nil) }
func (o ourOps) BatchLookup(keys, values any) (int, error) {
	return o.m.BatchLookup(new(bpfvm.MapBatchCursor), keys, values, nil)
}
func (o ourOps) BatchLookupAndDelete(keys, values any) (int, error) {
	return o.m.BatchLookupAndDelete(new(bpfvm.MapBatchCursor), keys, values, nil)
}

// newOurMap creates a map through a collection, the public way.
func newOurMap(t *testing.T, spec *ebpf.MapSpec, ncpu int) *bpfvm.Map {
	t.Helper()
	coll, err := bpfvm.NewCollectionWithOptions(&ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{spec.Name: spec}},
		bpfvm.CollectionOptions{NumCPU: ncpu})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(coll.Close)
	return coll.Maps[spec.Name]
}

// kernelMap creates the same map in the kernel, or returns nil where bpf()
// is not permitted.
func kernelMap(t *testing.T, spec *ebpf.MapSpec) *ebpf.Map {
	t.Helper()
	if os.Getuid() != 0 || rlimit.RemoveMemlock() != nil {
		return nil
	}
	m, err := ebpf.NewMap(spec.Copy())
	if err != nil {
		t.Logf("kernel map: %v", err)
		return nil
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestFreezeKernel compares Map.Freeze and the syscall-side permission
// flags with the kernel's BPF_MAP_FREEZE, BPF_F_RDONLY and BPF_F_WRONLY:
// each step's result on our map and the kernel's, for each map type.
func TestFreezeKernel(t *testing.T) {
	ncpu := 4
	if n, err := ebpf.PossibleCPU(); err == nil {
		ncpu = n
	}
	inner := &ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1}
	type step struct {
		name string
		do   func(m freezeOps, s *ebpf.MapSpec) error
	}
	zeroKey := func(s *ebpf.MapSpec) any {
		if s.KeySize == 0 {
			return nil
		}
		return make([]byte, s.KeySize)
	}
	value := func(s *ebpf.MapSpec) any {
		if s.Type == ebpf.PerCPUArray || s.Type == ebpf.PerCPUHash || s.Type == ebpf.LRUCPUHash {
			return make([]uint64, ncpu)
		}
		return make([]byte, s.ValueSize)
	}
	valueOut := func(s *ebpf.MapSpec) any {
		if s.Type == ebpf.PerCPUArray || s.Type == ebpf.PerCPUHash || s.Type == ebpf.LRUCPUHash {
			return new([]uint64)
		}
		return make([]byte, s.ValueSize)
	}
	update := step{"update", func(m freezeOps, s *ebpf.MapSpec) error { return m.Update(zeroKey(s), value(s), ebpf.UpdateAny) }}
	freeze := step{"freeze", func(m freezeOps, s *ebpf.MapSpec) error { return m.Freeze() }}
	deleteKey := step{"delete", func(m freezeOps, s *ebpf.MapSpec) error { return m.Delete(zeroKey(s)) }}
	lookupAndDelete := step{"lookup and delete", func(m freezeOps, s *ebpf.MapSpec) error {
		return m.LookupAndDelete(zeroKey(s), valueOut(s))
	}}
	lookup := step{"lookup", func(m freezeOps, s *ebpf.MapSpec) error { return m.Lookup(zeroKey(s), valueOut(s)) }}
	nextKey := step{"next key", func(m freezeOps, s *ebpf.MapSpec) error { return m.NextKey(nil, make([]byte, s.KeySize)) }}
	batchUpdate := step{"batch update", func(m freezeOps, s *ebpf.MapSpec) error {
		_, err := m.BatchUpdate([]uint32{0}, []uint64{0})
		return err
	}}
	batchDelete := step{"batch delete", func(m freezeOps, s *ebpf.MapSpec) error {
		_, err := m.BatchDelete([]uint32{0})
		return err
	}}
	batchLookup := step{"batch lookup", func(m freezeOps, s *ebpf.MapSpec) error {
		_, err := m.BatchLookup(make([]uint32, 2), make([]uint64, 2))
		return err
	}}
	batchLookupAndDelete := step{"batch lookup and delete", func(m freezeOps, s *ebpf.MapSpec) error {
		_, err := m.BatchLookupAndDelete(make([]uint32, 2), make([]uint64, 2))
		return err
	}}
	frozen := []step{update, freeze, freeze, update, deleteKey, lookupAndDelete, lookup, nextKey}
	batches := []step{update, freeze, batchUpdate, batchDelete, batchLookupAndDelete, batchLookup}
	flagged := []step{lookup, nextKey, update, deleteKey, lookupAndDelete, batchUpdate, batchLookup, freeze, update}
	cases := []struct {
		name  string
		spec  ebpf.MapSpec
		steps []step
		want  []string // our results, checked without a kernel too
	}{
		{"array", ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 2}, frozen,
			[]string{"ok", "ok", "EPERM", "EPERM", "EPERM", "EPERM", "ok", "ok"}},
		{"array rdonly_prog", ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1, Flags: maps.FlagRdonlyProg}, frozen,
			[]string{"ok", "ok", "EPERM", "EPERM", "EPERM", "EPERM", "ok", "ok"}},
		{"array wronly_prog", ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1, Flags: maps.FlagWronlyProg}, frozen,
			[]string{"ok", "ok", "EPERM", "EPERM", "EPERM", "EPERM", "ok", "ok"}},
		{"percpu array", ebpf.MapSpec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 2}, frozen,
			[]string{"ok", "ok", "EPERM", "EPERM", "EPERM", "EPERM", "ok", "ok"}},
		{"hash", ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 2}, frozen,
			[]string{"ok", "ok", "EPERM", "EPERM", "EPERM", "EPERM", "ok", "ok"}},
		{"percpu hash", ebpf.MapSpec{Type: ebpf.PerCPUHash, KeySize: 4, ValueSize: 8, MaxEntries: 2}, frozen,
			[]string{"ok", "ok", "EPERM", "EPERM", "EPERM", "EPERM", "ok", "ok"}},
		{"lru hash", ebpf.MapSpec{Type: ebpf.LRUHash, KeySize: 4, ValueSize: 8, MaxEntries: 2}, frozen,
			[]string{"ok", "ok", "EPERM", "EPERM", "EPERM", "EPERM", "ok", "ok"}},
		{"queue", ebpf.MapSpec{Type: ebpf.Queue, ValueSize: 8, MaxEntries: 2},
			[]step{update, freeze, freeze, update, lookupAndDelete, lookup},
			[]string{"ok", "ok", "EPERM", "EPERM", "EPERM", "ok"}},
		{"stack", ebpf.MapSpec{Type: ebpf.Stack, ValueSize: 8, MaxEntries: 2},
			[]step{update, freeze, freeze, update, lookupAndDelete, lookup},
			[]string{"ok", "ok", "EPERM", "EPERM", "EPERM", "ok"}},
		{"prog array", ebpf.MapSpec{Type: ebpf.ProgramArray, KeySize: 4, ValueSize: 4, MaxEntries: 2},
			[]step{freeze, freeze, update, deleteKey},
			[]string{"ok", "EPERM", "EPERM", "EPERM"}},
		{"array of maps", ebpf.MapSpec{Type: ebpf.ArrayOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 2, InnerMap: inner},
			[]step{freeze, freeze, update, deleteKey, lookup},
			[]string{"ok", "EPERM", "EPERM", "EPERM", "ENOENT"}},
		{"hash of maps", ebpf.MapSpec{Type: ebpf.HashOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 2, InnerMap: inner},
			[]step{freeze, freeze, update, deleteKey, lookup},
			[]string{"ok", "EPERM", "EPERM", "EPERM", "ENOENT"}},
		{"ringbuf", ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: 4096},
			[]step{freeze, freeze},
			[]string{"ok", "EPERM"}},
		{"devmap", ebpf.MapSpec{Type: ebpf.DevMap, KeySize: 4, ValueSize: 4, MaxEntries: 2},
			[]step{freeze, freeze, update, deleteKey},
			[]string{"ok", "EPERM", "EPERM", "EPERM"}},
		{"devmap hash", ebpf.MapSpec{Type: ebpf.DevMapHash, KeySize: 4, ValueSize: 4, MaxEntries: 2},
			[]step{freeze, freeze, update, deleteKey},
			[]string{"ok", "EPERM", "EPERM", "EPERM"}},
		{"cpumap", ebpf.MapSpec{Type: ebpf.CPUMap, KeySize: 4, ValueSize: 4, MaxEntries: 2},
			[]step{freeze, freeze, update, deleteKey},
			[]string{"ok", "EPERM", "EPERM", "EPERM"}},
		{"xskmap", ebpf.MapSpec{Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: 2},
			[]step{freeze, freeze, update, deleteKey},
			[]string{"ok", "EPERM", "EPERM", "EPERM"}},
		{"array batches", ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 2}, batches,
			[]string{"ok", "ok", "EPERM", "EPERM", "EPERM", "ok"}},
		{"hash batches", ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 2}, batches,
			[]string{"ok", "ok", "EPERM", "EPERM", "EPERM", "ENOENT"}},
		{"hash rdonly", ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 2, Flags: maps.FlagRdonly}, flagged,
			[]string{"ENOENT", "ENOENT", "EPERM", "EPERM", "EPERM", "EPERM", "ENOENT", "EPERM", "EPERM"}},
		{"hash wronly", ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 2, Flags: maps.FlagWronly}, flagged,
			[]string{"EPERM", "EPERM", "ok", "ok", "EPERM", "ok", "EPERM", "ok", "EPERM"}},
		{"array rdonly", ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 2, Flags: maps.FlagRdonly}, flagged,
			[]string{"ok", "ok", "EPERM", "EPERM", "EPERM", "EPERM", "ok", "EPERM", "EPERM"}},
	}
	compared, agreed := 0, 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.spec.Name = "m"
			ours := ourOps{newOurMap(t, &c.spec, ncpu)}
			var kern freezeOps
			if k := kernelMap(t, &c.spec); k != nil {
				kern = kernelOps{k}
			}
			for i, s := range c.steps {
				got := errClass(s.do(ours, &c.spec))
				if got != c.want[i] {
					t.Errorf("step %d (%s): ours %s, want %s", i, s.name, got, c.want[i])
				}
				if kern == nil {
					continue
				}
				k := errClass(s.do(kern, &c.spec))
				compared++
				if k != got {
					t.Errorf("step %d (%s): ours %s, kernel %s", i, s.name, got, k)
				} else {
					agreed++
				}
			}
		})
	}
	t.Logf("kernel comparisons: %d, agreeing: %d", compared, agreed)
}

// TestFreezeErrors checks that the errors are errors.Is-able the ways
// cilium/ebpf's are, and name the map.
func TestFreezeErrors(t *testing.T) {
	m := newOurMap(t, &ebpf.MapSpec{Name: "cfg", Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1}, 1)
	if m.IsFrozen() {
		t.Fatal("frozen at creation")
	}
	if err := m.Freeze(); err != nil {
		t.Fatal(err)
	}
	if !m.IsFrozen() {
		t.Fatal("not frozen after Freeze")
	}
	err := m.Put(uint32(0), uint32(1))
	for _, target := range []error{bpfvm.ErrPermission, os.ErrPermission, unix.EPERM} {
		if !errors.Is(err, target) {
			t.Errorf("Put on a frozen map: %v is not %v", err, target)
		}
	}
	// A frozen map is not writable, which freezing needs: EPERM in the
	// kernel (TestFreezeKernel), not EBUSY.
	err = m.Freeze()
	for _, target := range []error{bpfvm.ErrPermission, unix.EPERM} {
		if !errors.Is(err, target) {
			t.Errorf("second Freeze: %v is not %v", err, target)
		}
	}
	if want := "map cfg: "; err == nil || len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
		t.Errorf("error %q does not name the map", err)
	}
	m.Close()
	if err := m.Freeze(); !errors.Is(err, bpfvm.ErrClosed) {
		t.Errorf("Freeze on a closed map: %v, want ErrClosed", err)
	}
}

// TestFreezeRace freezes maps while goroutines write to them from Go: each
// Freeze either fails with EBUSY (a write was in flight) or succeeds, and
// once one has succeeded no write may land: the value read after it stays.
func TestFreezeRace(t *testing.T) {
	for round := range 50 {
		m := newOurMap(t, &ebpf.MapSpec{Name: fmt.Sprint("race", round), Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 16}, 1)
		var stop atomic.Bool
		var wg sync.WaitGroup
		var landed atomic.Uint64 // writes that succeeded after Freeze returned
		var frozenAt atomic.Bool
		for w := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := uint64(1); !stop.Load(); i++ {
					after := frozenAt.Load()
					err := m.Put(uint32(w), i)
					switch {
					case err == nil && after:
						landed.Add(1)
					case err != nil && !errors.Is(err, bpfvm.ErrPermission):
						t.Errorf("Put: %v", err)
						return
					}
				}
			}()
		}
		for {
			err := m.Freeze()
			if err == nil {
				frozenAt.Store(true)
				break
			}
			if !errors.Is(err, bpfvm.ErrBusy) {
				t.Fatalf("Freeze: %v", err)
			}
		}
		var before [3]uint64
		for w := range 3 {
			_ = m.Lookup(uint32(w), &before[w])
		}
		for range 1000 {
			if err := m.Put(uint32(0), uint64(0)); !errors.Is(err, bpfvm.ErrPermission) {
				t.Fatalf("Put after Freeze: %v", err)
			}
		}
		stop.Store(true)
		wg.Wait()
		if n := landed.Load(); n != 0 {
			t.Fatalf("%d writes landed after Freeze returned", n)
		}
		for w := range 3 {
			var v uint64
			_ = m.Lookup(uint32(w), &v)
			if v != before[w] {
				t.Fatalf("key %d changed after Freeze: %d, then %d", w, before[w], v)
			}
		}
	}
}

// TestFreezeOnLoad: a collection freezes .rodata* and .kconfig once their
// contents are written, as cilium/ebpf does, and leaves other maps alone.
func TestFreezeOnLoad(t *testing.T) {
	arr := func(name string, flags uint32) *ebpf.MapSpec {
		return &ebpf.MapSpec{Name: name, Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: flags,
			Contents: []ebpf.MapKV{{Key: uint32(0), Value: uint32(7)}}}
	}
	spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{}}
	for _, s := range []*ebpf.MapSpec{arr(".rodata", maps.FlagRdonlyProg), arr(".rodata.cst16", maps.FlagRdonlyProg),
		arr(".kconfig", maps.FlagRdonlyProg), arr(".data", 0), arr(".bss", 0), arr("rodata", maps.FlagRdonlyProg)} {
		spec.Maps[s.Name] = s
	}
	coll, err := bpfvm.NewCollection(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	for name, frozen := range map[string]bool{".rodata": true, ".rodata.cst16": true, ".kconfig": true, ".data": false, ".bss": false, "rodata": false} {
		m := coll.Maps[name]
		var v uint32
		if err := m.Lookup(uint32(0), &v); err != nil || v != 7 {
			t.Errorf("%s: contents %d, %v; want 7", name, v, err)
		}
		if m.IsFrozen() != frozen {
			t.Errorf("%s: frozen %v, want %v", name, m.IsFrozen(), frozen)
		}
		if err := m.Put(uint32(0), uint32(8)); frozen != errors.Is(err, bpfvm.ErrPermission) {
			t.Errorf("%s: Put: %v", name, err)
		}
	}
}
