package app

// The map_in_map example of cilium/ebpf as a test: maps created from Go
// specs, a map of maps filled with them, iterated by id, each inner map
// opened by its id. bpfvm/mapinmap_test.go is this file with its imports
// switched.

import (
	"errors"
	"os"
	"syscall"
	"testing"

	ebpf "github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/rlimit"
)

// BPF_F_INNER_MAP lets inner maps of one map of maps differ in max entries.
const BPF_F_INNER_MAP = 0x1000

func TestMapInMap(t *testing.T) {
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Skipf("remove memlock: %v", err)
	}
	outerMapSpec := ebpf.MapSpec{
		Name:       "outer_map",
		Type:       ebpf.ArrayOfMaps,
		KeySize:    4,
		ValueSize:  4,
		MaxEntries: 5,
		Contents:   make([]ebpf.MapKV, 5),
		InnerMap: &ebpf.MapSpec{
			Name:       "inner_map",
			Type:       ebpf.Array,
			KeySize:    4,
			ValueSize:  4,
			Flags:      BPF_F_INNER_MAP,
			MaxEntries: 1,
		},
	}
	for i := uint32(0); i < outerMapSpec.MaxEntries; i++ {
		innerMapSpec := outerMapSpec.InnerMap.Copy()
		innerMapSpec.MaxEntries = i + 1
		innerMapSpec.Contents = make([]ebpf.MapKV, innerMapSpec.MaxEntries)
		for j := range innerMapSpec.Contents {
			innerMapSpec.Contents[uint32(j)] = ebpf.MapKV{Key: uint32(j), Value: uint32(0xCAFE)}
		}
		innerMap, err := ebpf.NewMap(innerMapSpec)
		if err != nil {
			if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.ENOSYS) || errors.Is(err, ebpf.ErrNotSupported) {
				t.Skipf("inner_map: %v", err)
			}
			t.Fatalf("inner_map: %v", err)
		}
		defer innerMap.Close()
		outerMapSpec.Contents[i] = ebpf.MapKV{Key: i, Value: innerMap}
	}
	outerMap, err := ebpf.NewMap(&outerMapSpec)
	if err != nil {
		t.Fatalf("outer_map: %v", err)
	}
	defer outerMap.Close()

	mapIter := outerMap.Iterate()
	var outerMapKey uint32
	var innerMapID ebpf.MapID
	n := 0
	for mapIter.Next(&outerMapKey, &innerMapID) {
		innerMap, err := ebpf.NewMapFromID(innerMapID)
		if err != nil {
			t.Fatal(err)
		}
		innerMapInfo, err := innerMap.Info()
		if err != nil {
			t.Fatal(err)
		}
		if innerMapInfo.Type != ebpf.Array || innerMapInfo.MaxEntries != outerMapKey+1 {
			t.Errorf("outerMapKey %d, innerMap.Info: %+v", outerMapKey, innerMapInfo)
		}
		var v uint32
		if err := innerMap.Lookup(outerMapKey, &v); err != nil || v != 0xCAFE {
			t.Errorf("inner map %d: %#x, %v", outerMapKey, v, err)
		}
		innerMap.Close()
		n++
	}
	if err := mapIter.Err(); err != nil || n != 5 {
		t.Errorf("%d inner maps, %v", n, err)
	}
	if _, err := ebpf.NewMapFromID(0); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("map id 0: %v", err)
	}
}
