package bpfvm

import (
	"fmt"
	"slices"

	"github.com/cilium/ebpf"
)

// withVariables returns the spec of map name with the values of the
// collection's variables in that data section written over its contents,
// as cilium/ebpf does at load: users configure `const volatile` globals by
// setting CollectionSpec.Variables before loading. The caller's spec is
// left unchanged.
func withVariables(spec *ebpf.CollectionSpec, name string) (*ebpf.MapSpec, error) {
	ms := spec.Maps[name]
	var data []byte
	for _, v := range spec.Variables {
		if v.SectionName != name || v.Value == nil {
			continue
		}
		if data == nil {
			if len(ms.Contents) != 1 {
				return nil, fmt.Errorf("map %s: variable %s: data section with %d keys, want one", name, v.Name, len(ms.Contents))
			}
			b, ok := ms.Contents[0].Value.([]byte)
			if key, isU32 := ms.Contents[0].Key.(uint32); !ok || !isU32 || key != 0 {
				return nil, fmt.Errorf("map %s: variable %s: data section contents are not one byte slice at key 0", name, v.Name)
			}
			data = slices.Clone(b)
		}
		end := uint64(v.Offset) + uint64(len(v.Value))
		if end > uint64(len(data)) {
			return nil, fmt.Errorf("map %s: variable %s exceeds the section", name, v.Name)
		}
		copy(data[v.Offset:end], v.Value)
	}
	if data == nil {
		return ms, nil
	}
	cp := *ms
	cp.Contents = []ebpf.MapKV{{Key: uint32(0), Value: data}}
	return &cp, nil
}
