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

// redirectType describes the redirect maps: bpf_redirect_map takes them
// all, lookups take devmaps and xskmaps (not cpumaps), nothing else does.
// Their creation rules are newRedirectMap's.
func redirectType(t Type) typeInfo {
	info := typeInfo{new: newRedirectMap, helpers: redirectHelpers, onlyHelpers: true}
	switch t {
	case DevMap, DevMapHash:
		// The kernel's lookup gives the device's own entry.
		info.kernelStruct, info.progReadOnly = "bpf_dtab", true
	case CPUMap:
		info.kernelStruct, info.helpers = "bpf_cpu_map", redirectOnly
	case XSKMap:
		info.kernelStruct, info.socketValues = "xsk_map", true
	}
	return info
}

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
	m, err := New(backing, opts)
	if err != nil {
		return nil, err
	}
	r := &redirectMap{Map: m, spec: spec}
	rebind(m, r)
	return r, nil
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
