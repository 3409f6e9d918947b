// Package maps implements eBPF maps in memory outside the Go heap, so that
// interpreted and native programs can hold raw pointers to keys and values.
//
// Every map has a handle: the address of a small off-heap header, standing
// where the kernel has a struct bpf_map pointer (the result of LD_IMM64 with a
// map pseudo source, or of a lookup in a map of maps). FromHandle turns it
// back into the Map.
//
// Each map has two faces. Programs (through helpers) use raw pointers and
// their runner's CPU number; lookups take no lock. Go code uses byte slices,
// with per-CPU values as all CPUs' values concatenated, each rounded up to 8
// bytes as in the kernel's syscall interface.
package maps

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/internal/errs"
	"github.com/bpfvm/bpfvm/vm"
)

// Errors returned by map operations. Each also matches the errno the
// kernel returns for it and, where there is one, cilium/ebpf's sentinel for
// it (ebpf.ErrKeyNotExist, ebpf.ErrKeyExist, ebpf.ErrNotSupported) and the
// os package's, so that errors.Is checks written against cilium/ebpf hold.
var (
	ErrKeyNotExist error = errs.New("key does not exist", syscall.ENOENT, ebpf.ErrKeyNotExist)
	ErrKeyExist    error = errs.New("key already exists", syscall.EEXIST, ebpf.ErrKeyExist)
	ErrFull        error = errs.New("map is full", syscall.E2BIG)
	ErrNoSpace     error = errs.New("no space left", syscall.ENOSPC)
	ErrInvalid     error = errs.New("invalid argument", syscall.EINVAL)
	// ErrNotSupported is the kernel's EOPNOTSUPP for an operation a map
	// type lacks.
	ErrNotSupported error = errs.New("operation not supported", syscall.EOPNOTSUPP, ebpf.ErrNotSupported)
	// ErrBusy is EBUSY: Freeze during a Go-side write or while a writable
	// Memory of the map exists.
	ErrBusy error = errs.New("resource busy", syscall.EBUSY)
	// ErrPermission is a Go-side access the map refuses: a write to a
	// frozen or BPF_F_RDONLY map, a read of a BPF_F_WRONLY one (EPERM).
	ErrPermission error = errs.New("operation not permitted", syscall.EPERM, os.ErrPermission)
	// ErrAgain is a ring buffer without room for a record: try again once
	// the consumer has caught up.
	ErrAgain error = errs.New("resource temporarily unavailable", syscall.EAGAIN)
	// ErrClosed is the use of a closed map, program, collection or reader.
	// It matches os.ErrClosed, and EBADF, which cilium/ebpf returns for a
	// closed file descriptor (sys.ErrClosedFd).
	ErrClosed error = errs.New("use of closed object", os.ErrClosed, syscall.EBADF)
	// ErrFlushed is what a reader's read returns, once, after Flush and
	// the records there were.
	ErrFlushed = errors.New("data was flushed")
)

// Update flags, as in the kernel's BPF_ANY, BPF_NOEXIST and BPF_EXIST.
const (
	UpdateAny     uint64 = 0
	UpdateNoExist uint64 = 1
	UpdateExist   uint64 = 2
	UpdateLock    uint64 = 4 // BPF_F_LOCK
)

// Map flags, as in the kernel's BPF_F_*.
const (
	FlagNoPrealloc  uint32 = 1 << 0  // BPF_F_NO_PREALLOC
	FlagNoCommonLRU uint32 = 1 << 1  // BPF_F_NO_COMMON_LRU
	FlagNumaNode    uint32 = 1 << 2  // BPF_F_NUMA_NODE (accepted, ignored)
	FlagRdonly      uint32 = 1 << 3  // BPF_F_RDONLY (syscall side)
	FlagWronly      uint32 = 1 << 4  // BPF_F_WRONLY (syscall side)
	FlagZeroSeed    uint32 = 1 << 6  // BPF_F_ZERO_SEED: hash maps hash with seed 0
	FlagRdonlyProg  uint32 = 1 << 7  // BPF_F_RDONLY_PROG
	FlagWronlyProg  uint32 = 1 << 8  // BPF_F_WRONLY_PROG
	FlagMmapable    uint32 = 1 << 10 // BPF_F_MMAPABLE
	// FlagPreserveElems is BPF_F_PRESERVE_ELEMS, for perf event arrays
	// only.
	FlagPreserveElems uint32 = 1 << 11
	// FlagInnerMap is BPF_F_INNER_MAP: an array used as a map-of-maps
	// template lets inner arrays have any max_entries.
	FlagInnerMap uint32 = 1 << 12
)

// Spec describes a map to create.
type Spec struct {
	Name       string
	Type       Type
	KeySize    uint32
	ValueSize  uint32
	MaxEntries uint32
	Flags      uint32
	// MapExtra is the kernel's map_extra: for bloom filters the number of
	// hash functions (0 means 5). Other types require 0.
	MapExtra uint64
	// InnerMap describes the maps a map of maps holds.
	InnerMap *Spec
	// Key and Value are the BTF types of a key and a value (cilium/ebpf's
	// MapSpec.Key and Value) as the kernel takes them (btf_key_type_id
	// and btf_value_type_id), both nil for a map without BTF, which a
	// creation retried without BTF is. The value's special fields
	// (Fields) are found in Value, as the kernel's map_check_btf finds
	// them in the value type it is given; socket storages require both,
	// with an integer key (map_check_btf), for their Go-side dumps. Key
	// may be nil with a Value for an array holding a data section.
	Key, Value btf.Type
}

// HasBTF reports whether the spec has BTF for its key and value.
func (s Spec) HasBTF() bool { return s.Key != nil && s.Value != nil }

// Fields returns the special fields of the spec's values (ParseFields of
// Value), sorted by offset; nil without Value or fields.
func (s Spec) Fields() ([]Field, error) { return ParseFields(s.Value, s.ValueSize) }

// Options are the runtime facts a map is created with.
type Options struct {
	// NumCPU is the number of runners: per-CPU maps keep this many values
	// per key. At least 1.
	NumCPU int
	// Domain defers reuse of memory that running programs may still see.
	Domain *Domain
	// Programs gives program arrays references to the programs they hold,
	// as the kernel's prog_array holds its programs. Nil: program ids are
	// stored as they are.
	Programs ProgramRefs
}

// ProgramRefs takes and drops references to programs by id.
type ProgramRefs interface {
	// Acquire takes a reference to the program with the given id; false
	// when there is no such live program.
	Acquire(id uint32) bool
	// Release drops a reference taken by Acquire.
	Release(id uint32)
}

// Map is an eBPF map.
type Map interface {
	Spec() Spec
	// Handle is the value a program holds for this map.
	Handle() uint64
	// ID is the map's id, which maps of maps store (IDOf).
	ID() uint32

	// Acquire takes a reference that keeps the map's memory alive until
	// Release; it fails (false) once the map is being freed. Programs that
	// reference the map, maps of maps holding it, readers and Go-side
	// operations in progress hold references; runs do not (their epoch
	// domain protects them, see Defer).
	Acquire() bool
	// Release drops a reference taken by Acquire.
	Release()
	// Closed reports whether Close has been called.
	Closed() bool

	// Freeze makes the map read-only to Go code, as BPF_MAP_FREEZE (see
	// header.Freeze); Frozen reports whether it has been.
	Freeze() error
	Frozen() bool
	// BeginWrite starts a Go-side write (UpdateBytes, LookupAndDelete, a
	// Delete from Go), failing with ErrPermission once the map is frozen;
	// EndWrite ends it. Freeze fails while one is in progress.
	BeginWrite() error
	EndWrite()
	// MapWritable counts a writable direct mapping of the values (an
	// mmapable array's Memory), refused once frozen; Freeze fails while
	// one exists. UnmapWritable ends it.
	MapWritable() error
	UnmapWritable()

	// Lookup returns a pointer to the value of key for CPU cpu, or nil. The
	// pointer stays valid until the calling run leaves the map's Domain.
	// For maps of maps it returns the inner map's handle.
	Lookup(key unsafe.Pointer, cpu int) unsafe.Pointer
	// Update sets the value of key from a program (per-CPU maps: the cpu
	// slot only).
	Update(key, value unsafe.Pointer, flags uint64, cpu int) error
	// Delete removes key.
	Delete(key unsafe.Pointer) error

	// LookupBytes copies the value of key into value (per-CPU maps: every
	// CPU's value, each rounded up to 8 bytes).
	LookupBytes(key, value []byte) error
	// UpdateBytes sets the value of key from Go (per-CPU maps: every CPU).
	UpdateBytes(key, value []byte, flags uint64) error
	// LookupAndDelete copies the value of key into value and removes key.
	LookupAndDelete(key, value []byte) error
	// NextKey writes the key after key (the first key when key is nil) to
	// next, or returns ErrKeyNotExist at the end.
	NextKey(key, next []byte) error

	// Memory returns the off-heap spans programs may access, for checked-mode
	// access validation.
	Memory() []vm.Region
	// Close drops the creator's reference: the memory is freed once no
	// program, map of maps, reader or operation in progress holds the map
	// and no run can still see it. Closing twice does nothing. Go code that
	// may race with Close calls the other methods only while it holds a
	// reference (as bpfvm.Map does): after the last one they touch freed
	// memory.
	Close() error

	// free releases the memory; called once, after the last reference.
	free() error
}

// QueueStack is implemented by queue and stack maps (and by nothing else): the
// push, pop and peek helpers.
type QueueStack interface {
	Push(value unsafe.Pointer, flags uint64) error
	Pop(value unsafe.Pointer) error
	Peek(value unsafe.Pointer) error
}

// ValueSizeBytes returns the size of a value as Go code reads and writes it:
// for per-CPU maps, numCPU values each rounded up to 8 bytes.
func ValueSizeBytes(s Spec, numCPU int) int {
	if s.Type.PerCPU() {
		return int((s.ValueSize+7)&^7) * numCPU
	}
	return int(s.ValueSize)
}

// New creates a map from a spec.
func New(spec Spec, opts Options) (Map, error) {
	if opts.NumCPU < 1 {
		opts.NumCPU = 1
	}
	info, ok := spec.Type.info()
	if spec.MaxEntries == 0 && !info.sizedInBytes && !info.noEntries {
		return nil, fmt.Errorf("map %s: max_entries is zero: %w", spec.Name, ErrInvalid)
	}
	if err := validate(spec); err != nil {
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	if !ok {
		return nil, fmt.Errorf("map %s: type %s: %w", spec.Name, spec.Type, ErrNotSupported)
	}
	return info.maps.create(spec, opts)
}
