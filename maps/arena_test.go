package maps

import (
	"errors"
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"
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
