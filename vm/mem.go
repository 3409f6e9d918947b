package vm

import (
	"fmt"
	"os"
	"unsafe"
)

// Mem is memory outside the Go heap, mapped with the OS's own call (mmap,
// VirtualAlloc: mem_unix.go, mem_windows.go). Programs (interpreted
// or native) hold raw addresses into it; the garbage collector neither scans
// nor moves it, and checkptr instrumentation does not apply to it.
type Mem struct {
	b []byte
}

// populateMax is the largest allocation whose pages are populated when it
// is mapped. The kernel's map memory is there from the map's creation
// (vmalloc'd arrays, preallocated hash elements); mapped lazily, a
// program's first run paid a page fault for each page it touched first (a
// stack page, an array value, a hash bucket and element: 10 faults, half of
// a single run's time). Larger areas, maps sized for the worst case, still
// fault in as used, so that they cost only the memory they use.
const populateMax = 1 << 20

// Alloc maps size bytes of zeroed read-write memory, rounded up to whole
// pages; on Linux, pages of an area up to populateMax bytes are populated
// up front, as the kernel's map memory is.
func Alloc(size int) (*Mem, error) {
	if size <= 0 {
		return nil, fmt.Errorf("alloc %d bytes: size must be positive", size)
	}
	page := os.Getpagesize()
	size = (size + page - 1) &^ (page - 1)
	b, err := mapMemory(size)
	if err != nil {
		return nil, fmt.Errorf("map %d bytes: %w", size, err)
	}
	return &Mem{b: b}, nil
}

// Bytes returns the whole mapping.
func (m *Mem) Bytes() []byte { return m.b }

// Addr returns the address of the first byte.
func (m *Mem) Addr() uint64 { return uint64(uintptr(unsafe.Pointer(&m.b[0]))) }

// Free unmaps the memory. The Mem must not be used afterwards.
func (m *Mem) Free() error {
	if m.b == nil {
		return nil
	}
	err := unmapMemory(m.b)
	m.b = nil
	return err
}

// Ptr converts an address held in a BPF register into a pointer. The
// double indirection keeps go vet's unsafeptr check and checkptr quiet: the
// address is never the result of arithmetic on a Go pointer, and all memory a
// program may address lives outside the Go heap.
func Ptr(addr uint64) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&addr))
}

// Addr returns the address of p as a register value.
func Addr(p unsafe.Pointer) uint64 { return uint64(uintptr(p)) }

// Slice views n bytes of off-heap memory at addr as a byte slice (nil for
// n == 0). The memory must stay allocated while the slice is in use.
func Slice(addr, n uint64) []byte {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(Ptr(addr)), n)
}

// Reserve maps size bytes of zeroed memory whose pages are only there
// once touched, without reserving swap where the OS allows (Linux's
// MAP_NORESERVE): for large windows used sparsely (arenas).
func Reserve(size int) (*Mem, error) {
	if size <= 0 {
		return nil, fmt.Errorf("reserve %d bytes: size must be positive", size)
	}
	page := os.Getpagesize()
	size = (size + page - 1) &^ (page - 1)
	b, err := reserveMemory(size)
	if err != nil {
		return nil, fmt.Errorf("reserve %d bytes: %w", size, err)
	}
	return &Mem{b: b}, nil
}
