//go:build linux

package bpfvm_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// kernelFirstTask runs iters.o's first_task in the kernel: a whole task
// walk starts at init_task (pid 0), as bpfvm's starts at the world's
// first task, and finds processes.
func kernelFirstTask(t *testing.T, spec *ebpf.CollectionSpec) {
	kc, err := ebpf.NewCollection(spec)
	if errors.Is(err, os.ErrPermission) {
		t.Skipf("kernel: %v", err)
	}
	if err != nil {
		t.Fatalf("kernel rejects: %v", err)
	}
	defer kc.Close()
	it, err := link.AttachIter(link.IterOptions{Program: kc.Programs["first_task"]})
	if err != nil {
		t.Skipf("kernel attach: %v", err)
	}
	defer it.Close()
	readIter(t, it)
	var first int32
	var n uint64
	if err := kc.Variables["first_pid"].Get(&first); err != nil {
		t.Fatal(err)
	}
	if err := kc.Variables["procs_n"].Get(&n); err != nil {
		t.Fatal(err)
	}
	if first != 0 || n < 2 {
		t.Errorf("kernel's task walk: first pid %d, %d processes; want 0 (init_task) and more", first, n)
	}
}

// kernelIterMaps runs iter_maps.o's iterators in the kernel: its map list,
// filtered to the test's maps (made there with the same specs), is
// bpfvm's; a map element iterator, where the kernel allows one, prints
// what bpfvm's does.
func kernelIterMaps(t *testing.T, spec *ebpf.CollectionSpec, wantList string) {
	// One program at a time: the kernel may refuse the others.
	only := func(name string) (*ebpf.Collection, error) {
		s := spec.Copy()
		for n := range s.Programs {
			if n != name {
				delete(s.Programs, n)
			}
		}
		return ebpf.NewCollection(s)
	}
	kc, err := only("dump_map")
	if errors.Is(err, os.ErrPermission) {
		t.Skipf("kernel: %v", err)
	}
	if err != nil {
		t.Fatalf("kernel rejects dump_map: %v", err)
	}
	defer kc.Close()
	prog := kc.Programs["dump_map"]
	var ms []*ebpf.Map
	for _, s := range iterMapSpecs {
		m, err := ebpf.NewMap(s)
		if err != nil {
			t.Fatalf("kernel map %s: %v", s.Name, err)
		}
		defer m.Close()
		ms = append(ms, m)
	}
	it, err := link.AttachIter(link.IterOptions{Program: prog})
	if err != nil {
		t.Skipf("kernel attach: %v", err)
	}
	defer it.Close()
	out, _ := readIter(t, it)
	var ours strings.Builder
	for _, l := range strings.SplitAfter(string(out), "\n") {
		if strings.HasPrefix(l, "itm_") {
			ours.WriteString(l)
		}
	}
	if ours.String() != wantList {
		t.Errorf("kernel's map list (filtered):\n%s\nbpfvm's:\n%s", ours.String(), wantList)
	}
	ec, err := only("dump_elem")
	if errors.Is(err, os.ErrPermission) {
		t.Logf("kernel refuses bpf_map_elem iterators: %v", err)
		return
	}
	if err != nil {
		t.Fatalf("kernel rejects dump_elem: %v", err)
	}
	defer ec.Close()
	elem := ec.Programs["dump_elem"]
	for i := range uint32(4) {
		ms[0].Put(i, uint64(10*(i+1)))
	}
	eit, err := link.AttachIter(link.IterOptions{Program: elem, Map: ms[0]})
	if err != nil {
		t.Fatalf("kernel attach dump_elem: %v", err)
	}
	defer eit.Close()
	eout, _ := readIter(t, eit)
	if want := "0: 10\n1: 20\n2: 30\n3: 40\nitm_arr end 3\n"; string(eout) != want {
		t.Errorf("kernel dump_elem: %q, want bpfvm's %q", eout, want)
	}
}
