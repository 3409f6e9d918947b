package maps

import (
	"fmt"
	"unsafe"
)

// Redirect map types, the targets of bpf_redirect_map.
const (
	DevMap     Type = 14
	CPUMap     Type = 16
	XSKMap     Type = 17
	DevMapHash Type = 25
)

// The redirect types: bpf_redirect_map takes them all, lookups take
// devmaps and xskmaps (not cpumaps), nothing else does.
var (
	// devMapInfo is devmaps and devmap_hashes, whose elements the
	// kernel's lookup gives as the device's own.
	devMapInfo = typeInfo{maps: redirects{}, kernelStruct: "bpf_dtab", helpers: redirectHelpers, onlyHelpers: true, progReadOnly: true}
	cpuMapInfo = typeInfo{maps: redirects{}, kernelStruct: "bpf_cpu_map", helpers: redirectOnly, onlyHelpers: true}
	xskMapInfo = typeInfo{maps: redirects{}, kernelStruct: "xsk_map", helpers: redirectHelpers, onlyHelpers: true, socketValues: true}
)

// redirects creates redirect maps; their creation rules are
// newRedirectMap's.
type redirects struct{}

func (redirects) create(s Spec, o Options) (Map, error) { return newRedirectMap(s, o) }
func (redirects) check(Spec) error                      { return nil }

var (
	redirectHelpers = []string{"bpf_redirect_map", "bpf_map_lookup_elem"}
	redirectOnly    = []string{"bpf_redirect_map"}
)

// Redirect maps hold interface indexes (devmap), CPU numbers (cpumap) or
// socket slots (xskmap) that bpf_redirect_map records as the run's redirect
// target. bpfvm has no network devices, so they are stored as plain values:
// devmap, cpumap and xskmap as arrays, devmap_hash as a hash, with the
// kernel's key and value sizes.
func newRedirectMap(spec Spec, opts Options) (Map, error) {
	if spec.KeySize != 4 {
		return nil, fmt.Errorf("%s key size %d, want 4: %w", spec.Type, spec.KeySize, ErrInvalid)
	}
	if spec.ValueSize != 4 && spec.ValueSize != 8 {
		return nil, fmt.Errorf("%s value size %d, want 4 or 8: %w", spec.Type, spec.ValueSize, ErrInvalid)
	}
	backing := spec
	backing.Type = Array
	if spec.Type == DevMapHash {
		backing.Type = Hash
	}
	return newBacked(backing, opts, func(m Map) Map { return &redirectMap{Map: m, spec: spec} })
}

// redirectMap is an array or hash that reports its redirect map type.
type redirectMap struct {
	Map
	spec Spec
}

func (r *redirectMap) Spec() Spec { return r.spec }

// Lookup returns nil for an element whose first 4 bytes (the ifindex, the
// queue size or the socket) are zero: the kernel keeps no device, CPU or
// socket there, so its lookups and bpf_redirect_map miss.
func (r *redirectMap) Lookup(key unsafe.Pointer, cpu int) unsafe.Pointer {
	p := r.Map.Lookup(key, cpu)
	if p == nil || *(*uint32)(p) == 0 {
		return nil
	}
	return p
}
