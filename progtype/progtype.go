// Package progtype describes program types: the layout of the context a
// program receives in R1, which fields it may read and write, which of them
// are pointers into the packet, and how test runs present their input. The
// runtime uses it to run programs, the verifier to check context accesses,
// and the rewrite to convert them. Host applications describe their own
// program types with it to embed eBPF as an extension language.
package progtype

import (
	"fmt"
)

// Kind says what a context field holds.
type Kind uint8

// Field kinds.
const (
	// Scalar is plain data stored in the context.
	Scalar Kind = iota
	// PacketData loads the address of the first packet byte.
	PacketData
	// PacketEnd loads the address one past the last packet byte.
	PacketEnd
	// PacketMeta loads the address of the packet's metadata area.
	PacketMeta
)

func (k Kind) String() string {
	switch k {
	case Scalar:
		return "scalar"
	case PacketData:
		return "pkt"
	case PacketEnd:
		return "pkt_end"
	case PacketMeta:
		return "pkt_meta"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Field is one field of a context structure.
type Field struct {
	Name string
	// Offset and Size of the field in the context as the program sees it.
	Offset, Size uint32
	Read, Write  bool
	// Narrow allows loads of a leading part of the field (the kernel's
	// bpf_ctx_narrow_access_ok), e.g. the low byte of a u32.
	Narrow bool
	Kind   Kind
}

// Type describes a program type.
type Type struct {
	// Name as in the kernel ("xdp", "sched_cls") or chosen by the host.
	Name string
	// ContextSize is the size of the context structure; 0 means R1 points
	// at the input data and R2 holds its length (programs of unspecified
	// type, as in the ISA conformance suite).
	ContextSize uint32
	// Fields of the context; bytes outside every field are inaccessible.
	Fields []Field
	// ContextNames are the BTF struct names that stand for the context in
	// a function's prototype (the kernel's ctx type and the kernel struct
	// it projects, "xdp_md" and "xdp_buff"): a global function's argument
	// pointing at one of them is the context.
	ContextNames []string
	// MinData is the smallest input a test run accepts.
	MinData int
	// NetworkHeader makes the packet start after the 14-byte Ethernet header
	// (socket filters see the packet from the network header on).
	NetworkHeader bool
	// Helpers reports whether programs of this type may call a helper; nil
	// allows every helper.
	Helpers func(id int32) bool
	// ReturnMin and ReturnMax bound R0 at exit (checked by the verifier)
	// when ReturnMax > ReturnMin.
	ReturnMin, ReturnMax int64
	// Setup fills the context before a run from the input frame and the
	// packet the program sees (lengths, protocol); nil for none.
	Setup func(ctx, frame, pkt []byte)
}

// Field returns the field containing [off, off+size), or nil.
func (t *Type) Field(off, size uint32) *Field {
	for i := range t.Fields {
		f := &t.Fields[i]
		if off >= f.Offset && off+size <= f.Offset+f.Size {
			return f
		}
	}
	return nil
}

// Access checks a context access of size bytes at off and returns the field.
// Whole-field accesses are always allowed; narrower loads only for Narrow
// fields at the field's start (little-endian: the low bytes); pointer fields
// only as whole 32-bit or 64-bit loads.
func (t *Type) Access(off, size uint32, write bool) (*Field, error) {
	f := t.Field(off, size)
	if f == nil {
		return nil, fmt.Errorf("invalid bpf_context access off=%d size=%d", off, size)
	}
	switch {
	case write && !f.Write, !write && !f.Read:
		return nil, fmt.Errorf("invalid bpf_context access off=%d size=%d", off, size)
	case f.Kind != Scalar && (write || size < 4 || off != f.Offset):
		return nil, fmt.Errorf("invalid bpf_context access off=%d size=%d", off, size)
	case f.Kind == Scalar && size != f.Size && !(f.Narrow && !write) && !fieldArray(f):
		return nil, fmt.Errorf("invalid bpf_context access off=%d size=%d", off, size)
	}
	return f, nil
}

// fieldArray reports whether f is an array of u32 (cb[5], ip6[4]), where
// each element is accessed as a whole u32.
func fieldArray(f *Field) bool { return f.Size > 8 && f.Size%4 == 0 }

// Validate checks a host-defined type for mistakes.
func (t *Type) Validate() error {
	if t.Name == "" {
		return fmt.Errorf("program type without a name")
	}
	for i, f := range t.Fields {
		if f.Size == 0 || f.Offset+f.Size > t.ContextSize {
			return fmt.Errorf("program type %s: field %s (off %d size %d) outside a %d byte context", t.Name, f.Name, f.Offset, f.Size, t.ContextSize)
		}
		if f.Kind != Scalar && f.Size != 4 && f.Size != 8 {
			return fmt.Errorf("program type %s: pointer field %s must be 4 or 8 bytes", t.Name, f.Name)
		}
		for _, g := range t.Fields[:i] {
			if f.Offset < g.Offset+g.Size && g.Offset < f.Offset+f.Size {
				return fmt.Errorf("program type %s: fields %s and %s overlap", t.Name, g.Name, f.Name)
			}
		}
	}
	return nil
}
