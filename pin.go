package bpfvm

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"syscall"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/maps"
)

// PinType is how a MapSpec's map is pinned: cilium/ebpf's type, so that
// specs from bpf2go and ELF objects (__uint(pinning, LIBBPF_PIN_BY_NAME))
// keep their value.
type PinType = ebpf.PinType

// Pin types, cilium/ebpf's.
const (
	PinNone   = ebpf.PinNone
	PinByName = ebpf.PinByName
)

// LoadPinOptions control loading a pinned object: ReadOnly or WriteOnly
// give a map reference that may only read or only write its contents from
// Go (as the kernel's BPF_F_RDONLY and BPF_F_WRONLY file flags); Flags are
// those bits raw. It is cilium/ebpf's type.
type LoadPinOptions = ebpf.LoadPinOptions

// MapOptions control creating a collection's maps, as cilium/ebpf's
// (CollectionOptions.Maps).
type MapOptions struct {
	// PinPath is the directory of the maps whose spec has Pinning
	// PinByName: each is PinPath/name in Pins, reused if it is there and
	// compatible (else loading fails with an error wrapping
	// ErrMapIncompatible), otherwise created and pinned there.
	PinPath string
	// LoadPinOptions are used when reusing a pinned map.
	LoadPinOptions LoadPinOptions
	// Pins is the pin namespace of the collection's maps and programs: where
	// PinByName maps are looked up and pinned, and what their Pin methods
	// pin into. bpfvm has no BPF file system, so a PinByName map without
	// Pins fails to load, saying so, rather than being silently left
	// unpinned.
	Pins *Pins
}

// Pins is a pin namespace: what the kernel's BPF file system (bpffs) is to
// cilium/ebpf, a set of paths each holding a map or a program, which lives
// as long as its pin and not as long as the Map or Program that pinned it.
// Paths are names: cleaned (filepath.Clean), with no directories to make,
// and "/sys/fs/bpf/app/counts" is as good as any. Each Pins is separate;
// bpfvm keeps no namespace of its own. It is safe for concurrent use.
//
// Maps and programs of a collection loaded with MapOptions.Pins pin into
// it with their Pin methods, and LoadPinnedMap and LoadPinnedProgram
// return new references to what it holds, as cilium/ebpf's functions of
// those names do for bpffs.
type Pins struct {
	mu     sync.Mutex
	objs   map[string]pinned
	closed bool
}

// pinned is the namespace's own reference to a pinned object: a clone of
// the Map or Program that pinned it.
type pinned struct {
	m *Map
	p *Program
}

func (o pinned) close() {
	if o.m != nil {
		o.m.Close()
	}
	if o.p != nil {
		o.p.Close()
	}
}

// NewPins returns an empty pin namespace (as is the zero Pins).
func NewPins() *Pins { return &Pins{objs: map[string]pinned{}} }

// Paths returns the pinned paths, sorted.
func (ns *Pins) Paths() []string {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	paths := make([]string, 0, len(ns.objs))
	for p := range ns.objs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths
}

// Close unpins everything, as unmounting a BPF file system: objects that
// nothing else holds are freed. Later pins and loads fail with ErrClosed.
func (ns *Pins) Close() error {
	ns.mu.Lock()
	objs := ns.objs
	ns.objs, ns.closed = nil, true
	ns.mu.Unlock()
	for _, o := range objs {
		o.close()
	}
	return nil
}

// LoadPinnedMap returns a new reference to the map pinned at path, as
// cilium/ebpf's LoadPinnedMap: it fails with an error wrapping
// os.ErrNotExist (the kernel's ENOENT) when nothing is pinned there, and
// when a program is. opts (may be nil) can restrict the reference to
// reading or writing.
func (ns *Pins) LoadPinnedMap(path string, opts *LoadPinOptions) (*Map, error) {
	access, err := fileFlags(opts)
	if err != nil {
		return nil, fmt.Errorf("load pinned map %s: %w", path, err)
	}
	o, path, err := ns.get(path)
	if err != nil {
		return nil, fmt.Errorf("load pinned map %s: %w", path, err)
	}
	if o.m == nil {
		return nil, fmt.Errorf("%s is not a Map", path)
	}
	m, err := o.m.Clone()
	if err != nil {
		return nil, fmt.Errorf("load pinned map %s: %w", path, err)
	}
	m.access, m.pin = access, pinState{ns: ns, path: path}
	return m, nil
}

// LoadPinnedProgram returns a new reference to the program pinned at path,
// as cilium/ebpf's LoadPinnedProgram: it fails with an error wrapping
// os.ErrNotExist when nothing is pinned there, and when a map is. opts may
// be nil; ReadOnly and WriteOnly change nothing for a program (as in the
// kernel, which accepts them), both at once fail with EINVAL.
func (ns *Pins) LoadPinnedProgram(path string, opts *LoadPinOptions) (*Program, error) {
	if _, err := fileFlags(opts); err != nil {
		return nil, fmt.Errorf("load pinned program %s: %w", path, err)
	}
	o, path, err := ns.get(path)
	if err != nil {
		return nil, fmt.Errorf("load pinned program %s: %w", path, err)
	}
	if o.p == nil {
		return nil, fmt.Errorf("%s is not a Program", path)
	}
	p, err := o.p.Clone()
	if err != nil {
		return nil, fmt.Errorf("load pinned program %s: %w", path, err)
	}
	p.ref.pin = pinState{ns: ns, path: path}
	return p, nil
}

// get returns the object at path, and the path cleaned.
func (ns *Pins) get(path string) (pinned, string, error) {
	if path == "" {
		return pinned{}, path, syscall.ENOENT
	}
	path = filepath.Clean(path)
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.closed {
		return pinned{}, path, ErrClosed
	}
	o, ok := ns.objs[path]
	if !ok {
		return pinned{}, path, syscall.ENOENT
	}
	return o, path, nil
}

// fileFlags returns the access restriction opts ask for (maps.FlagRdonly
// or maps.FlagWronly), with the kernel's EINVAL for both at once or for
// other flags.
func fileFlags(opts *LoadPinOptions) (uint32, error) {
	flags := opts.Marshal()
	if flags&^(maps.FlagRdonly|maps.FlagWronly) != 0 || flags&maps.FlagRdonly != 0 && flags&maps.FlagWronly != 0 {
		return 0, fmt.Errorf("file flags %#x: %w", flags, syscall.EINVAL)
	}
	return flags, nil
}

// pinState is where a Map or Program reference is pinned: its namespace
// (the collection's MapOptions.Pins, or the one it was loaded from) and
// its path there, "" when not pinned. ns.mu guards path.
type pinState struct {
	ns   *Pins
	path string
}

// pin pins o (a fresh reference the namespace then owns, made by hold) at
// path, with cilium/ebpf's rules for an object already pinned at cur: the
// same path is nothing to do, another moves the pin there (renaming cur,
// as cilium/ebpf renames the bpffs file), and a path already taken fails
// with EEXIST.
func (s *pinState) pin(path string, hold func() (pinned, error)) error {
	if path == "" {
		return fmt.Errorf("given pinning path cannot be empty")
	}
	if s.ns == nil {
		return fmt.Errorf("pin %s: no pin namespace: bpfvm has no BPF file system; load the collection with MapOptions.Pins (NewPins)", path)
	}
	ns := s.ns
	path = filepath.Clean(path)
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.closed {
		return fmt.Errorf("pin %s: %w", path, ErrClosed)
	}
	if ns.objs == nil {
		ns.objs = map[string]pinned{} // the zero Pins
	}
	if s.path == path {
		return nil
	}
	if _, ok := ns.objs[path]; ok {
		return fmt.Errorf("pin %s: %w", path, syscall.EEXIST)
	}
	if o, ok := ns.objs[s.path]; ok && s.path != "" {
		// Rename, whatever is pinned there now, as the file system would.
		delete(ns.objs, s.path)
		ns.objs[path] = o
		s.path = path
		return nil
	}
	o, err := hold()
	if err != nil {
		return fmt.Errorf("pin %s: %w", path, err)
	}
	ns.objs[path] = o
	s.path = path
	return nil
}

// unpin removes the pin at the reference's path, whatever it holds now (as
// removing the bpffs file would), and releases the namespace's reference.
// Unpinning what is not pinned, or a path already gone, is not an error.
func (s *pinState) unpin() error {
	if s.ns == nil {
		return nil
	}
	s.ns.mu.Lock()
	o, ok := s.ns.objs[s.path]
	if ok && s.path != "" {
		delete(s.ns.objs, s.path)
	}
	s.path = ""
	s.ns.mu.Unlock()
	if ok {
		o.close()
	}
	return nil
}

// pinned reports whether the reference has a pinned path.
func (s *pinState) pinned() bool {
	if s.ns == nil {
		return false
	}
	s.ns.mu.Lock()
	defer s.ns.mu.Unlock()
	return s.path != ""
}

// Pin pins the map at path in its pin namespace (MapOptions.Pins, or the
// Pins it was loaded from), as cilium/ebpf's Map.Pin pins it on bpffs: the
// map then lives until it is unpinned, however many references close. A
// map already pinned elsewhere moves there; a path that holds an object
// fails with an error wrapping os.ErrExist (EEXIST); a map without a
// namespace cannot be pinned, and says so.
func (m *Map) Pin(path string) error {
	return m.pin.pin(path, func() (pinned, error) {
		c, err := m.Clone()
		if err != nil {
			return pinned{}, err
		}
		c.access = 0
		return pinned{m: c}, nil
	})
}

// Unpin removes the map's pin (see Pins), releasing what the pin held;
// unpinning a map that is not pinned returns nil.
func (m *Map) Unpin() error { return m.pin.unpin() }

// IsPinned reports whether the map has a pinned path.
func (m *Map) IsPinned() bool { return m.pin.pinned() }

// Pin pins the program at path in its pin namespace, as Map.Pin: it then
// stays runnable, and callable from prog_arrays, until unpinned.
func (p *Program) Pin(path string) error {
	return p.ref.pin.pin(path, func() (pinned, error) {
		c, err := p.Clone()
		if err != nil {
			return pinned{}, err
		}
		// A pinned program outlives its collection, so it keeps the
		// collection's runners.
		if !c.run.HoldCPUs() {
			c.Close()
			return pinned{}, fmt.Errorf("program %s: %w", p.name, ErrClosed)
		}
		return pinned{p: c}, nil
	})
}

// Unpin removes the program's pin; unpinning a program that is not pinned
// returns nil.
func (p *Program) Unpin() error { return p.ref.pin.unpin() }

// IsPinned reports whether the program has a pinned path.
func (p *Program) IsPinned() bool { return p.ref.pin.pinned() }

// newPinnedMap creates a map of ncpu CPUs in domain d and the namespace of opts, with
// cilium/ebpf's rules for a spec pinned by name: the map pinned at
// PinPath/name is reused if it is compatible (and gets the spec's initial
// contents), else one is created and pinned there.
func newPinnedMap(spec *ebpf.MapSpec, opts MapOptions, ncpu int, d *maps.Domain) (_ *Map, err error) {
	if spec.InnerMap != nil && spec.InnerMap.Pinning != PinNone {
		return nil, fmt.Errorf("map %s: inner maps cannot be pinned", spec.Name)
	}
	var path string
	switch spec.Pinning {
	case PinNone:
	case PinByName:
		if spec.Name == "" {
			return nil, fmt.Errorf("map: pin by name: missing Name")
		}
		if opts.PinPath == "" {
			return nil, fmt.Errorf("map %s: pin by name: missing MapOptions.PinPath", spec.Name)
		}
		if opts.Pins == nil {
			return nil, fmt.Errorf("map %s: pin by name: missing MapOptions.Pins: bpfvm has no BPF file system, pins live in a Pins namespace (NewPins)", spec.Name)
		}
		path = filepath.Join(opts.PinPath, spec.Name)
		m, err := opts.Pins.LoadPinnedMap(path, &opts.LoadPinOptions)
		if err == nil {
			s, err := createSpec(spec, ncpu)
			if err == nil {
				err = m.compatible(s, ncpu)
			}
			if err == nil {
				err = m.finalize(spec)
			}
			if err != nil {
				m.Close()
				return nil, fmt.Errorf("map %s: use pinned map %s: %w", spec.Name, spec.Name, err)
			}
			return m, nil
		}
		if !errors.Is(err, syscall.ENOENT) {
			return nil, fmt.Errorf("map %s: load pinned map: %w", spec.Name, err)
		}
	default:
		return nil, fmt.Errorf("map %s: pin type %d: %w", spec.Name, int(spec.Pinning), ErrNotSupported)
	}
	m, err := createMap(spec, ncpu, d)
	if err != nil {
		return nil, err
	}
	m.pin.ns = opts.Pins
	if path != "" {
		if err := m.Pin(path); err != nil {
			m.Close()
			return nil, fmt.Errorf("map %s: pin map to %s: %w", spec.Name, path, err)
		}
	}
	return m, nil
}
