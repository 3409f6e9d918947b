package maps

import (
	"errors"
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm/vm"
)

// Arenas are created under the kernel's rules (arena_map_alloc), compared
// with the kernel where bpf() is permitted.
func TestArenaCreate(t *testing.T) {
	ok := Spec{Type: Arena, MaxEntries: 4, Flags: FlagMmapable, MapExtra: 1 << 32}
	with := func(f func(*Spec)) Spec { s := ok; f(&s); return s }
	cases := []struct {
		name string
		spec Spec
		err  error
	}{
		{"ok", ok, nil},
		{"no address", with(func(s *Spec) { s.MapExtra = 0 }), nil},
		{"flags", with(func(s *Spec) { s.Flags |= FlagSegvOnFault | FlagNoUserConv }), nil},
		{"not mmapable", with(func(s *Spec) { s.Flags = 0 }), ErrInvalid},
		{"other flag", with(func(s *Spec) { s.Flags |= FlagNoPrealloc }), ErrInvalid},
		{"key", with(func(s *Spec) { s.KeySize = 4 }), ErrInvalid},
		{"value", with(func(s *Spec) { s.ValueSize = 4 }), ErrInvalid},
		{"no pages", with(func(s *Spec) { s.MaxEntries = 0 }), ErrInvalid},
		{"unaligned address", with(func(s *Spec) { s.MapExtra = 1<<32 + 1 }), ErrInvalid},
		{"crosses 4 GiB", with(func(s *Spec) { s.MapExtra = 1<<32 - 4096 }), ErrRange},
		{"over 4 GiB", with(func(s *Spec) { s.MaxEntries = 1<<20 + 1; s.MapExtra = 0 }), ErrFull},
	}
	kernel := os.Geteuid() == 0 && rlimit.RemoveMemlock() == nil
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := New(c.spec, Options{})
			if c.err == nil && err != nil || c.err != nil && !errors.Is(err, c.err) {
				t.Errorf("error %v, want %v", err, c.err)
			}
			if err == nil {
				m.Close()
			}
			if !kernel {
				return
			}
			km, kerr := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Arena, KeySize: c.spec.KeySize, ValueSize: c.spec.ValueSize, MaxEntries: c.spec.MaxEntries, Flags: c.spec.Flags, MapExtra: c.spec.MapExtra})
			if kerr == nil {
				km.Close()
			}
			if (kerr == nil) != (err == nil) {
				t.Errorf("kernel: %v, bpfvm %v", kerr, err)
			}
		})
	}
}

// Pages are handed out first fit, at a given address when asked, zeroed,
// and freed as the kernel's arena_alloc_pages and arena_free_pages.
func TestArenaPages(t *testing.T) {
	m, err := New(Spec{Name: "a", Type: Arena, MaxEntries: 4, Flags: FlagMmapable, MapExtra: 1 << 32}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	a := m.(*ArenaMap)
	const base = 1 << 32
	steps := []struct {
		name       string
		alloc      bool
		addr       uint64
		n          uint32
		node       int32
		flags      uint64
		want       uint64
		freeN      uint32
		freeAddrAt uint64
	}{
		{name: "first", alloc: true, n: 1, node: -1, want: base},
		{name: "second", alloc: true, n: 2, node: -1, want: base + 4096},
		{name: "taken address", alloc: true, addr: base + 4096, n: 1, node: -1, want: 0},
		{name: "free address", alloc: true, addr: base + 3*4096, n: 1, node: -1, want: base + 3*4096},
		{name: "full", alloc: true, n: 1, node: -1, want: 0},
		{name: "too many", alloc: true, n: 5, node: -1, want: 0},
		{name: "flags", alloc: true, n: 1, node: -1, flags: 1, want: 0},
		{name: "bad node", alloc: true, n: 1, node: 7, want: 0},
		{name: "unaligned", alloc: true, addr: base + 1, n: 1, node: -1, want: 0},
		{name: "free middle", freeAddrAt: base + 4096 + 100, freeN: 2},
		{name: "after free", alloc: true, n: 2, node: 0, want: base + 4096},
		{name: "free past the end", freeAddrAt: base + 3*4096, freeN: 9},
		{name: "after clamp", alloc: true, n: 1, node: -1, want: base + 3*4096},
	}
	for _, s := range steps {
		if !s.alloc {
			a.FreePages(s.freeAddrAt, s.freeN)
			continue
		}
		got := a.AllocPages(s.addr, s.n, s.node, s.flags)
		if got != s.want {
			t.Errorf("%s: %#x, want %#x", s.name, got, s.want)
		}
	}
	v := a.UserView()
	if v.End-v.Start != 4*4096 {
		t.Errorf("user view of %d bytes", v.End-v.Start)
	}
}

// The page table the engines test follows the allocator and user space's
// faults: a page is the arena's once allocated or touched by user space
// (unless BPF_F_SEGV_ON_FAULT), and no longer once freed; a touched page
// cannot be allocated again.
func TestArenaPageTable(t *testing.T) {
	for _, segv := range []bool{false, true} {
		s := Spec{Type: Arena, MaxEntries: 4, Flags: FlagMmapable, MapExtra: 1 << 32}
		if segv {
			s.Flags |= FlagSegvOnFault
		}
		m, err := New(s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		a := m.(*ArenaMap)
		held := func(page uint64) bool { return vm.ArenaMapped(a.Base(), int64(page*ArenaPage), 1) }
		if held(1) || held(0) {
			t.Errorf("segv=%v: pages held before any allocation", segv)
		}
		if u := a.AllocPages(1<<32+ArenaPage, 1, -1, 0); u != 1<<32+ArenaPage || !held(1) || held(2) {
			t.Errorf("segv=%v: allocated %#x, page 1 held %v, page 2 %v", segv, u, held(1), held(2))
		}
		err = a.UserTouch(2*ArenaPage+8, 16)
		if segv != (err != nil) || segv && !errors.Is(err, ErrFault) || held(2) == segv {
			t.Errorf("segv=%v: touch of page 2: %v, held %v", segv, err, held(2))
		}
		if !segv && a.AllocPages(1<<32+2*ArenaPage, 1, -1, 0) != 0 {
			t.Errorf("a page user space touched was allocated again")
		}
		a.FreePages(1<<32+ArenaPage, 2)
		if held(1) || held(2) {
			t.Errorf("segv=%v: freed pages still held", segv)
		}
		// Guards and pages past the arena's are never held.
		if vm.ArenaMapped(a.Base(), -8, 8) || held(4) || vm.ArenaMapped(a.Base(), 1<<32-8, 16) {
			t.Errorf("segv=%v: guard or page past the arena held", segv)
		}
		m.Close()
	}
}
