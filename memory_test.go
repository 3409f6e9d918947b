package bpfvm_test

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
)

// memOps are what Memory is compared on, for our maps and the kernel's.
type memOps interface {
	Memory() (memory, error)
	Freeze() error
	Lookup(key, valueOut any) error
	Put(key, value any) error
}

type memory interface {
	ReadOnly() bool
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
}

type kernelMem struct{ *ebpf.Map }

func (k kernelMem) Memory() (memory, error) {
	mm, err := k.Map.Memory()
	if err != nil {
		return nil, err
	}
	return mm, nil
}

type ourMem struct{ *bpfvm.Map }

func (o ourMem) Memory() (memory, error) {
	mm, err := o.Map.Memory()
	if err != nil {
		return nil, err
	}
	return mm, nil
}

// memClass names an outcome of Memory, Freeze or a write, for comparing
// ours with the kernel's.
func memClass(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ebpf.ErrReadOnly):
		return "read-only"
	case errors.Is(err, ebpf.ErrNotSupported):
		return "not supported"
	case errors.Is(err, syscall.EACCES):
		return "EACCES"
	case errors.Is(err, syscall.EINVAL):
		return "EINVAL"
	case errors.Is(err, syscall.EPERM):
		return "EPERM"
	case errors.Is(err, syscall.EBUSY):
		return "EBUSY"
	}
	return "other: " + err.Error()
}

// TestMemoryKernel compares Map.Memory with cilium/ebpf's on a kernel map:
// which flags give a writable, read-only or no mapping, that a writable
// mapping keeps Freeze out (EBUSY) while a read-only one does not, and that
// writes through the Memory are the map's values.
func TestMemoryKernel(t *testing.T) {
	const (
		rdonly     = 1 << 3
		wronly     = 1 << 4
		rdonlyProg = 1 << 7
		wronlyProg = 1 << 8
		mmapable   = 1 << 10
	)
	for _, tc := range []struct {
		name   string
		flags  uint32
		freeze bool // before Memory
	}{
		{"not mmapable", 0, false},
		{"mmapable", mmapable, false},
		{"frozen", mmapable, true},
		{"rdonly", mmapable | rdonly, false},
		{"wronly", mmapable | wronly, false},
		{"rdonly prog", mmapable | rdonlyProg, false},
		{"rdonly prog frozen", mmapable | rdonlyProg, true},
		{"wronly prog", mmapable | wronlyProg, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &ebpf.MapSpec{Name: "m", Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 4, Flags: tc.flags}
			// steps returns what each step gave.
			steps := func(m memOps) string {
				var out []string
				if tc.freeze {
					out = append(out, "freeze "+memClass(m.Freeze()))
				}
				mm, err := m.Memory()
				out = append(out, "memory "+memClass(err))
				if err != nil {
					out = append(out, "freeze "+memClass(m.Freeze()))
					return fmt.Sprint(out)
				}
				out = append(out, fmt.Sprint("read-only ", mm.ReadOnly()))
				// Write value 2 through the memory (values are 8
				// bytes apart); read it back through a lookup
				// where the map can be read.
				_, werr := mm.WriteAt([]byte{9, 0, 0, 0}, 16)
				out = append(out, "write "+memClass(werr))
				var v uint32
				lerr := m.Lookup(uint32(2), &v)
				out = append(out, fmt.Sprint("lookup ", memClass(lerr), " ", v))
				if err := m.Put(uint32(1), uint32(5)); err == nil {
					b := make([]byte, 4)
					mm.ReadAt(b, 8)
					out = append(out, fmt.Sprint("read ", b))
				}
				out = append(out, "freeze "+memClass(m.Freeze()))
				return fmt.Sprint(out)
			}
			ours := steps(ourMem{newOurMap(t, spec.Copy(), 1)})
			t.Log(ours)
			if os.Getuid() != 0 {
				return
			}
			km := kernelMap(t, spec)
			if km == nil {
				t.Skip("no kernel map")
			}
			if kern := steps(kernelMem{km}); kern != ours {
				t.Errorf("ours   %s\nkernel %s", ours, kern)
			}
		})
	}
}

// TestMemoryPrograms: what a program writes into a data section is in its
// Memory at once, and what Go writes there the program reads, with no map
// operation in between.
func TestMemoryPrograms(t *testing.T) {
	coll, err := bpfvm.NewCollection(dropinSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	mm, err := coll.Maps[".bss"].Memory()
	if err != nil {
		t.Fatal(err)
	}
	if mm.ReadOnly() || mm.Size() != 8 {
		t.Fatalf(".bss memory: read-only %v, %d bytes", mm.ReadOnly(), mm.Size())
	}
	if _, err := mm.WriteAt([]byte{41, 0, 0, 0, 0, 0, 0, 0}, 0); err != nil { // runs
		t.Fatal(err)
	}
	if _, err := coll.Programs["xdp_count"].Run(&bpfvm.RunOptions{Data: make([]byte, 14)}); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 8)
	if _, err := mm.ReadAt(b, 0); err != nil || b[0] != 42 {
		t.Errorf("runs after a run: %v, %v; want 42", b, err)
	}
	var runs uint64
	if err := coll.Variables["runs"].Get(&runs); err != nil || runs != 42 {
		t.Errorf("Variables[runs] = %d, %v", runs, err)
	}
	// The .rodata memory is read-only; its variable too.
	ro, err := coll.Maps[".rodata"].Memory()
	if err != nil || !ro.ReadOnly() {
		t.Fatalf(".rodata memory: %v, %v", ro, err)
	}
	if _, err := ro.WriteAt([]byte{0}, 0); !errors.Is(err, bpfvm.ErrReadOnly) || !errors.Is(err, ebpf.ErrReadOnly) {
		t.Errorf("write to .rodata memory: %v", err)
	}
	if err := coll.Variables["verdict"].Set(uint32(1)); !errors.Is(err, ebpf.ErrReadOnly) {
		t.Errorf("Set of a .rodata variable: %v", err)
	}
	// Bad input.
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"read past the end", func() error { _, err := mm.ReadAt(make([]byte, 9), 0); return err }()},
		{"write past the end", func() error { _, err := mm.WriteAt(make([]byte, 9), 0); return err }()},
		{"read at a negative offset", func() error { _, err := mm.ReadAt(b, -1); return err }()},
		{"write at the end", func() error { _, err := mm.WriteAt(b, 8); return err }()},
		{"set with the wrong size", coll.Variables["runs"].Set(uint32(1))},
		{"get with the wrong size", coll.Variables["runs"].Get(new(uint32))},
	} {
		if tc.err == nil {
			t.Errorf("%s: nil error", tc.name)
		}
	}
}

// TestVariablesFreeze: the data sections' Variables hold writable
// mappings, so freezing .data or .bss fails with EBUSY, as with
// cilium/ebpf's collection on the kernel; .rodata is frozen at load.
func TestVariablesFreeze(t *testing.T) {
	freezes := func(maps map[string]interface{ Freeze() error }) string {
		var out []string
		for _, name := range []string{".bss", ".data", ".rodata", "counts"} {
			out = append(out, name+" "+memClass(maps[name].Freeze()))
		}
		return fmt.Sprint(out)
	}
	coll, err := bpfvm.NewCollection(dropinSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	ms := map[string]interface{ Freeze() error }{}
	for name, m := range coll.Maps {
		ms[name] = m
	}
	ours := freezes(ms)
	if want := "[.bss EBUSY .data EBUSY .rodata EPERM counts ok]"; ours != want {
		t.Errorf("freezes: %s, want %s", ours, want)
	}
	if kcoll := kernelCollection(t, dropinObject); kcoll != nil {
		kms := map[string]interface{ Freeze() error }{}
		for name, m := range kcoll.Maps {
			kms[name] = m
		}
		if kern := freezes(kms); kern != ours {
			t.Errorf("freezes: ours %s, kernel %s", ours, kern)
		}
	}
}

// TestAssignVariables: Variables assign by tag like programs and maps,
// with cilium/ebpf's errors for missing ones.
func TestAssignVariables(t *testing.T) {
	var objs struct {
		Runs *bpfvm.Variable `ebpf:"runs"`
	}
	if err := bpfvm.LoadAndAssign(dropinSpec(t), &objs, nil); err != nil {
		t.Fatal(err)
	}
	if err := objs.Runs.Set(uint64(3)); err != nil {
		t.Error(err)
	}
	var missing struct {
		X *bpfvm.Variable `ebpf:"nope"`
	}
	err := bpfvm.LoadAndAssign(dropinSpec(t), &missing, nil)
	if want := "assign values: field X: unknown variable nope"; err == nil || err.Error() != want {
		t.Errorf("%v, want %s", err, want)
	}
	coll, err := bpfvm.NewCollection(dropinSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	err = coll.Assign(&missing)
	if want := `assign values: field X: missing variable "nope"`; err == nil || err.Error() != want {
		t.Errorf("%v, want %s", err, want)
	}
	if !kernelAllowed(t) {
		return
	}
	var kmissing struct {
		X *ebpf.Variable `ebpf:"nope"`
	}
	if kerr := dropinSpec(t).LoadAndAssign(&kmissing, nil); kerr == nil || kerr.Error() != "assign values: field X: unknown variable nope" {
		t.Errorf("cilium/ebpf: %v", kerr)
	}
}

// TestMemoryReleased: a writable Memory stops keeping Freeze out once it
// is garbage collected (the kernel's munmap, which cilium/ebpf does in its
// cleanup), here of a clone, whose Memory is its own.
func TestMemoryReleased(t *testing.T) {
	m := newOurMap(t, &ebpf.MapSpec{Name: "m", Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1, Flags: 1 << 10}, 1)
	func() {
		clone, err := m.Clone()
		if err != nil {
			t.Fatal(err)
		}
		defer clone.Close()
		if _, err := clone.Memory(); err != nil {
			t.Fatal(err)
		}
		if err := m.Freeze(); !errors.Is(err, syscall.EBUSY) {
			t.Fatalf("freeze with a writable Memory: %v, want EBUSY", err)
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		err := m.Freeze()
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			t.Fatalf("freeze after the Memory was collected: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
}
