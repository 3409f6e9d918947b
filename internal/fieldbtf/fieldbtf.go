// Package fieldbtf builds the BTF of map values with special fields for
// tests: the special structs as clang writes them from the uapi headers,
// tagged kernel pointers, and value structs laid out by byte offsets.
package fieldbtf

import "github.com/cilium/ebpf/btf"

// Integer types of the values.
var (
	U32 = &btf.Int{Name: "u32", Size: 4}
	U64 = &btf.Int{Name: "u64", Size: 8}
)

// Special is a special struct (bpf_spin_lock, bpf_timer…) of size bytes:
// opaque words, as in the uapi headers.
func Special(name string, size uint32) *btf.Struct {
	elem, n := btf.Type(U64), size/8
	if size%8 != 0 {
		elem, n = U32, size/4
	}
	return &btf.Struct{Name: name, Size: size, Members: []btf.Member{{Name: "__opaque", Type: &btf.Array{Index: U32, Type: elem, Nelems: n}}}}
}

// Tagged is a pointer to target with a type tag (kptr, kptr_untrusted…).
func Tagged(tag string, target btf.Type) *btf.Pointer {
	return &btf.Pointer{Target: &btf.TypeTag{Value: tag, Type: target}}
}

// Member is a member of a value struct at a byte offset.
type Member struct {
	Off  uint32
	Type btf.Type
}

// Value is a struct of size bytes with the members, named a, b, c….
func Value(name string, size uint32, ms ...Member) *btf.Struct {
	s := &btf.Struct{Name: name, Size: size}
	for i, m := range ms {
		s.Members = append(s.Members, btf.Member{Name: string(rune('a' + i)), Type: m.Type, Offset: btf.Bits(m.Off * 8)})
	}
	return s
}
