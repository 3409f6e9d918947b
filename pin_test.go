package bpfvm_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
)

// pinSpec is a collection with a map pinned by name ("counts", whose max
// entries are maxEntries), an unpinned one ("plain") and an XDP program
// returning XDP_PASS.
func pinSpec(maxEntries uint32) *ebpf.CollectionSpec {
	return &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{
			"counts": {Name: "counts", Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: maxEntries, Pinning: ebpf.PinByName},
			"plain":  {Name: "plain", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1},
		},
		Programs: map[string]*ebpf.ProgramSpec{
			"prog": {Name: "prog", Type: ebpf.XDP, License: "GPL", Instructions: asm.Instructions{
				asm.Mov.Imm(asm.R0, 2),
				asm.Return(),
			}},
		},
	}
}

// pinMap is what the pinning scenario does with a map: *ebpf.Map and
// *bpfvm.Map both have these methods.
type pinMap interface {
	Put(key, value any) error
	Lookup(key, valueOut any) error
	Pin(path string) error
	Unpin() error
	IsPinned() bool
	Close() error
}

// pinProg is what the scenario does with a program.
type pinProg interface {
	Pin(path string) error
	Unpin() error
	IsPinned() bool
	Close() error
}

// pinColl is a loaded collection of either back end.
type pinColl struct {
	maps  func(name string) pinMap
	prog  pinProg
	run   func(p pinProg) (uint32, error)
	close func()
}

// pinBackend loads collections with MapOptions.PinPath and pinned objects.
type pinBackend struct {
	load       func(spec *ebpf.CollectionSpec, dir string) (pinColl, error)
	loadMap    func(path string, opts *ebpf.LoadPinOptions) (pinMap, error)
	loadProg   func(path string, opts *ebpf.LoadPinOptions) (pinProg, error)
	runProgram func(p pinProg) (uint32, error)
}

func bpfvmPins(ns *bpfvm.Pins) pinBackend {
	run := func(p pinProg) (uint32, error) {
		return p.(*bpfvm.Program).Run(&bpfvm.RunOptions{Data: make([]byte, 64)})
	}
	return pinBackend{
		load: func(spec *ebpf.CollectionSpec, dir string) (pinColl, error) {
			coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Maps: bpfvm.MapOptions{PinPath: dir, Pins: ns}, NumCPU: 2})
			if err != nil {
				return pinColl{}, err
			}
			return pinColl{maps: func(n string) pinMap { return coll.Maps[n] }, prog: coll.Programs["prog"], run: run, close: coll.Close}, nil
		},
		loadMap: func(path string, opts *ebpf.LoadPinOptions) (pinMap, error) {
			return ns.LoadPinnedMap(path, opts)
		},
		loadProg: func(path string, opts *ebpf.LoadPinOptions) (pinProg, error) {
			return ns.LoadPinnedProgram(path, opts)
		},
		runProgram: run,
	}
}

func kernelPins() pinBackend {
	run := func(p pinProg) (uint32, error) {
		return p.(*ebpf.Program).Run(&ebpf.RunOptions{Data: make([]byte, 64)})
	}
	return pinBackend{
		load: func(spec *ebpf.CollectionSpec, dir string) (pinColl, error) {
			coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{Maps: ebpf.MapOptions{PinPath: dir}})
			if err != nil {
				return pinColl{}, err
			}
			return pinColl{maps: func(n string) pinMap { return coll.Maps[n] }, prog: coll.Programs["prog"], run: run, close: coll.Close}, nil
		},
		loadMap: func(path string, opts *ebpf.LoadPinOptions) (pinMap, error) {
			return ebpf.LoadPinnedMap(path, opts)
		},
		loadProg: func(path string, opts *ebpf.LoadPinOptions) (pinProg, error) {
			return ebpf.LoadPinnedProgram(path, opts)
		},
		runProgram: run,
	}
}

// pinScenario pins, reloads compatible and incompatible specs, moves,
// loads and unpins, and returns what each step gave: the transcript the
// kernel and bpfvm must agree on.
func pinScenario(t *testing.T, b pinBackend, dir string) []string {
	var log []string
	step := func(name string, err error, extra ...any) {
		s := name + ": " + outcome(err)
		for _, e := range extra {
			s += fmt.Sprint(" ", e)
		}
		log = append(log, s)
	}
	counts := filepath.Join(dir, "counts")

	c1, err := b.load(pinSpec(16), dir)
	if err != nil {
		t.Fatal(err)
	}
	m1 := c1.maps("counts")
	step("first load", nil, "pinned", m1.IsPinned(), "plain pinned", c1.maps("plain").IsPinned())
	step("put", m1.Put(uint32(1), uint64(42)))
	c1.close()

	c2, err := b.load(pinSpec(16), dir)
	step("reload compatible", err)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.close()
	var v uint64
	m2 := c2.maps("counts")
	step("lookup after reload", m2.Lookup(uint32(1), &v), v, "pinned", m2.IsPinned())

	_, err = b.load(pinSpec(32), dir)
	step("reload incompatible", err)

	lm, err := b.loadMap(counts, nil)
	step("load pinned map", err)
	if err == nil {
		v = 0
		step("lookup pinned map", lm.Lookup(uint32(1), &v), v, "pinned", lm.IsPinned())
		step("pin same path", lm.Pin(counts))
		lm.Close()
	}
	_, err = b.loadMap(filepath.Join(dir, "missing"), nil)
	step("load missing", err)

	ro, err := b.loadMap(counts, &ebpf.LoadPinOptions{ReadOnly: true})
	step("load read-only", err)
	if err == nil {
		v = 0
		step("read-only lookup", ro.Lookup(uint32(1), &v), v)
		step("read-only put", ro.Put(uint32(2), uint64(1)))
		ro.Close()
	}
	_, err = b.loadMap(counts, &ebpf.LoadPinOptions{ReadOnly: true, WriteOnly: true})
	step("load read-write-only", err)

	plain := c2.maps("plain")
	step("pin over taken path", plain.Pin(counts), "pinned", plain.IsPinned())
	other := filepath.Join(dir, "other")
	step("pin plain", plain.Pin(other), "pinned", plain.IsPinned())
	moved := filepath.Join(dir, "moved")
	step("move pin", plain.Pin(moved))
	_, err = b.loadMap(other, nil)
	step("load old path", err)
	mv, err := b.loadMap(moved, nil)
	step("load moved path", err)
	if err == nil {
		mv.Close()
	}
	step("unpin moved", plain.Unpin(), "pinned", plain.IsPinned())

	step("pin program", c2.prog.Pin(filepath.Join(dir, "prog")), "pinned", c2.prog.IsPinned())
	_, err = b.loadMap(filepath.Join(dir, "prog"), nil)
	step("load program as map", err)
	_, err = b.loadProg(counts, nil)
	step("load map as program", err)
	_, err = b.loadProg(filepath.Join(dir, "prog"), &ebpf.LoadPinOptions{ReadOnly: true})
	step("load read-only program", err)
	lp, err := b.loadProg(filepath.Join(dir, "prog"), nil)
	step("load pinned program", err)
	if err == nil {
		ret, err := b.runProgram(lp)
		step("run pinned program", err, ret, "pinned", lp.IsPinned())
		step("unpin program", lp.Unpin(), "pinned", lp.IsPinned(), "other reference", c2.prog.IsPinned())
		lp.Close()
	}

	step("unpin", m2.Unpin(), "pinned", m2.IsPinned())
	step("unpin again", m2.Unpin())
	_, err = b.loadMap(counts, nil)
	step("load unpinned", err)
	c3, err := b.load(pinSpec(32), dir)
	step("load after unpin", err)
	if err == nil {
		v = 0
		step("lookup fresh map", c3.maps("counts").Lookup(uint32(1), &v), v)
		step("unpin fresh map", c3.maps("counts").Unpin())
		c3.close()
	}
	return log
}

// outcome names an error by the sentinels the scenario tells apart.
func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ebpf.ErrKeyNotExist):
		return "no key"
	case errors.Is(err, ebpf.ErrMapIncompatible):
		return "incompatible"
	case errors.Is(err, os.ErrNotExist):
		return "ENOENT"
	case errors.Is(err, os.ErrExist):
		return "EEXIST"
	case errors.Is(err, os.ErrPermission):
		return "EPERM"
	case errors.Is(err, syscall.EINVAL):
		return "EINVAL"
	case strings.Contains(err.Error(), "is not a"):
		return "wrong type"
	}
	return "error " + err.Error()
}

// TestPinKernel runs the pinning scenario on bpfvm, and on the kernel
// through cilium/ebpf where bpffs is mounted and bpf() is permitted, and
// compares the transcripts.
func TestPinKernel(t *testing.T) {
	ns := bpfvm.NewPins()
	defer ns.Close()
	ours := pinScenario(t, bpfvmPins(ns), "/sys/fs/bpf/bpfvm-test")
	if left := ns.Paths(); len(left) != 0 {
		t.Errorf("pins left: %v", left)
	}
	if os.Getuid() != 0 || rlimit.RemoveMemlock() != nil {
		t.Skip("bpf() not permitted")
	}
	dir, err := os.MkdirTemp("/sys/fs/bpf", "bpfvm-pin-")
	if err != nil {
		t.Skipf("no bpffs: %v", err)
	}
	defer os.RemoveAll(dir)
	theirs := pinScenario(t, kernelPins(), dir)
	for i := range max(len(ours), len(theirs)) {
		var o, k string
		if i < len(ours) {
			o = ours[i]
		}
		if i < len(theirs) {
			k = theirs[i]
		}
		if o != k {
			t.Errorf("step %d: bpfvm %q, kernel %q", i, o, k)
		}
	}
	t.Logf("%d steps compared:\n%s", len(theirs), strings.Join(theirs, "\n"))
}

// TestPinErrors: what has no kernel counterpart, bpfvm's namespace itself.
func TestPinErrors(t *testing.T) {
	spec := pinSpec(16)
	_, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Maps: bpfvm.MapOptions{PinPath: "/sys/fs/bpf/x"}})
	if err == nil || !strings.Contains(err.Error(), "MapOptions.Pins") {
		t.Errorf("PinPath without Pins: %v", err)
	}
	_, err = bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Maps: bpfvm.MapOptions{Pins: bpfvm.NewPins()}})
	if err == nil || !strings.Contains(err.Error(), "missing MapOptions.PinPath") {
		t.Errorf("Pins without PinPath: %v", err)
	}
	spec.Maps["counts"].Pinning = ebpf.PinNone
	coll, err := bpfvm.NewCollection(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	if err := coll.Maps["counts"].Pin("/sys/fs/bpf/x"); err == nil || !strings.Contains(err.Error(), "no pin namespace") {
		t.Errorf("Pin without a namespace: %v", err)
	}
	if err := coll.Maps["counts"].Unpin(); err != nil || coll.Maps["counts"].IsPinned() {
		t.Errorf("Unpin without a namespace: %v", err)
	}

	// Closing the namespace releases what it holds.
	ns := bpfvm.NewPins()
	coll2, err := bpfvm.NewCollectionWithOptions(pinSpec(16), bpfvm.CollectionOptions{Maps: bpfvm.MapOptions{PinPath: "/p", Pins: ns}})
	if err != nil {
		t.Fatal(err)
	}
	if err := coll2.Programs["prog"].Pin("/p/prog"); err != nil {
		t.Fatal(err)
	}
	if got := ns.Paths(); strings.Join(got, " ") != "/p/counts /p/prog" {
		t.Errorf("paths %v", got)
	}
	coll2.Close()
	p, err := ns.LoadPinnedProgram("/p//prog", nil) // cleaned
	if err != nil {
		t.Fatal(err)
	}
	if ret, err := p.Run(&bpfvm.RunOptions{Data: make([]byte, 64)}); err != nil || ret != 2 {
		t.Errorf("pinned program after its collection closed: %d, %v", ret, err)
	}
	ns.Close()
	if ret, err := p.Run(&bpfvm.RunOptions{Data: make([]byte, 64)}); err != nil || ret != 2 {
		t.Errorf("loaded reference after unpinning: %d, %v", ret, err)
	}
	p.Close()
	if _, err := p.Run(&bpfvm.RunOptions{Data: make([]byte, 64)}); !errors.Is(err, bpfvm.ErrClosed) {
		t.Errorf("run after the last reference closed: %v", err)
	}
	if _, err := ns.LoadPinnedMap("/p/counts", nil); !errors.Is(err, bpfvm.ErrClosed) {
		t.Errorf("load from a closed namespace: %v", err)
	}

	// The zero Pins is an empty namespace.
	var zero bpfvm.Pins
	coll3, err := bpfvm.NewCollectionWithOptions(pinSpec(16), bpfvm.CollectionOptions{Maps: bpfvm.MapOptions{PinPath: "/z", Pins: &zero}})
	if err != nil {
		t.Fatal(err)
	}
	coll3.Close()
	if got := zero.Paths(); len(got) != 1 || got[0] != "/z/counts" {
		t.Errorf("zero Pins: paths %v", got)
	}
	zero.Close()
}
