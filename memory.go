package bpfvm

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"

	"github.com/bpfvm/bpfvm/internal/errs"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/vm"
)

// errAccess is the kernel's EACCES for a mapping the map's permissions
// refuse.
var errAccess = errs.New("permission denied", syscall.EACCES, os.ErrPermission)

// Memory is direct access to the values of a BPF_F_MMAPABLE array, shared
// with the programs that use it, as cilium/ebpf's Memory (an mmap of the
// map): reads and writes go to the values themselves, without a map
// operation, and are as coherent as the kernel's (word-sized copies, no
// synchronisation with running programs).
//
// A writable Memory counts as the kernel's writable mapping: while it is
// reachable, Freeze fails with an error wrapping ErrBusy. It keeps the
// map's memory alive, after Map.Close too, until it is garbage collected,
// as an mmap keeps a kernel map. Size is the values' size, where
// cilium/ebpf's is rounded up to whole pages.
type Memory struct {
	b  []byte
	ro bool
	// m is the map the values belong to; escaped says a Go pointer into
	// them was handed out (VariablePointer), after which the values
	// stay mapped until the process exits.
	m       maps.Map
	escaped atomic.Bool
}

// escape keeps the values mapped for as long as the process lives, as a
// pointer into them (which the garbage collector does not see) may outlive
// every Go reference to the Memory: it takes a reference to the map, and
// counts as a writable mapping if the Memory is writable, that nothing
// releases.
func (mm *Memory) escape() error {
	if mm.escaped.Load() {
		return nil
	}
	if !mm.m.Acquire() {
		return fmt.Errorf("memory: %w", ErrClosed)
	}
	if !mm.ro {
		if err := mm.m.MapWritable(); err != nil {
			mm.m.Release()
			return fmt.Errorf("memory: %w", err)
		}
	}
	if !mm.escaped.CompareAndSwap(false, true) {
		// Escaped meanwhile: drop this call's references.
		if !mm.ro {
			mm.m.UnmapWritable()
		}
		mm.m.Release()
	}
	return nil
}

// mapping is what a Memory's cleanup releases.
type mapping struct {
	m        maps.Map
	writable bool
}

// Memory returns direct access to the map's values, the same Memory on
// every call, as cilium/ebpf's Map.Memory: read-write, or read-only when
// the map is frozen or BPF_F_RDONLY_PROG (where the kernel refuses a
// writable mmap and cilium/ebpf maps it read-only). It fails with an error
// wrapping ErrNotSupported for maps without BPF_F_MMAPABLE, and with the
// kernel's errors for the syscall-side permissions: EACCES (matching
// os.ErrPermission) for BPF_F_WRONLY, EINVAL for BPF_F_RDONLY, whose
// read-only descriptor cannot be mapped shared.
func (m *Map) Memory() (*Memory, error) {
	if mm := m.memory.Load(); mm != nil {
		return mm, nil
	}
	if err := m.hold("memory"); err != nil {
		return nil, err
	}
	spec := m.m.Spec()
	if spec.Flags&maps.FlagMmapable == 0 || spec.Type != maps.Array && spec.Type != maps.Arena {
		m.m.Release()
		return nil, fmt.Errorf("map %s: Map was not created with the BPF_F_MMAPABLE flag: %w", m.name, ErrNotSupported)
	}
	switch flags := spec.Flags | m.access; {
	case flags&maps.FlagWronly != 0:
		m.m.Release()
		return nil, fmt.Errorf("map %s: memory: %w", m.name, errAccess)
	case flags&maps.FlagRdonly != 0:
		// The kernel's descriptor of such a map (or opened read-only) is read-only, so a
		// shared mapping of it is not VM_SHARED, which bpf_map_mmap
		// refuses.
		m.m.Release()
		return nil, fmt.Errorf("map %s: memory: %w", m.name, maps.ErrInvalid)
	}
	if fields, _ := spec.Fields(); len(fields) > 0 {
		// Programs' locks and pointers are not Go's to write
		// (bpf_map_mmap's ENOTSUPP).
		m.m.Release()
		return nil, fmt.Errorf("map %s: memory: values with special fields: %w", m.name, maps.ErrKernelNotSupported)
	}
	regions := m.m.Memory()
	if a, ok := m.m.(*maps.ArenaMap); ok {
		// The pages user space maps, not the window programs reach.
		regions = []vm.Region{a.UserView()}
	}
	if len(regions) != 1 {
		m.m.Release()
		return nil, fmt.Errorf("map %s: memory: %d value regions: %w", m.name, len(regions), ErrNotSupported)
	}
	ro := spec.Flags&maps.FlagRdonlyProg != 0 || m.m.Frozen()
	if !ro {
		if err := m.m.MapWritable(); err != nil {
			// Frozen since: the kernel's EPERM, after which
			// cilium/ebpf maps it read-only.
			ro = true
		}
	}
	r := regions[0]
	mm := &Memory{b: vm.Slice(r.Start, r.End-r.Start), ro: ro, m: m.m}
	runtime.AddCleanup(mm, func(mp mapping) {
		if mp.writable {
			mp.m.UnmapWritable()
		}
		mp.m.Release()
	}, mapping{m.m, !ro})
	if !m.memory.CompareAndSwap(nil, mm) {
		// Another call got there first; this one's cleanup releases
		// what it took.
		return m.memory.Load(), nil
	}
	return mm, nil
}

// Size returns the size of the values in bytes.
func (mm *Memory) Size() uint32 { return uint32(len(mm.b)) }

// ReadOnly reports whether the Memory may only be read.
func (mm *Memory) ReadOnly() bool { return mm.ro }

// bounds reports whether off and size lie within the values.
func (mm *Memory) bounds(off, size uint32) bool {
	return uint64(off)+uint64(size) <= uint64(len(mm.b))
}

// touch gives an arena the pages of n bytes at off that user space
// reaches (maps.ArenaMap.UserTouch), as the kernel's fault handler does
// for an arena's mapping; other maps' values are there already.
func (mm *Memory) touch(off int64, n int) error {
	a, ok := mm.m.(*maps.ArenaMap)
	if !ok {
		return nil
	}
	n = min(n, len(mm.b)-int(off))
	if err := a.UserTouch(uint64(off), uint64(n)); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	return nil
}

// ReadAt implements io.ReaderAt: it copies the values from off into p, and
// returns io.EOF if they end first.
func (mm *Memory) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off >= int64(len(mm.b)) {
		return 0, fmt.Errorf("read offset %d out of range", off)
	}
	if err := mm.touch(off, len(p)); err != nil {
		return 0, err
	}
	n := copy(p, mm.b[off:])
	runtime.KeepAlive(mm) // its cleanup may unmap the values
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// WriteAt implements io.WriterAt: it copies p into the values from off,
// and returns io.EOF if they end first. A read-only Memory fails with an
// error wrapping ErrReadOnly.
func (mm *Memory) WriteAt(p []byte, off int64) (int, error) {
	if mm.ro {
		return 0, fmt.Errorf("memory-mapped region not writable: %w", ErrReadOnly)
	}
	if off < 0 || off >= int64(len(mm.b)) {
		return 0, fmt.Errorf("write offset %d out of range", off)
	}
	if err := mm.touch(off, len(p)); err != nil {
		return 0, err
	}
	n := copy(mm.b[off:], p)
	runtime.KeepAlive(mm) // its cleanup may unmap the values
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
