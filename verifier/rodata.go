package verifier

import (
	"encoding/binary"

	"github.com/bpfvm/bpfvm/maps"
)

// Loads from maps whose contents are fixed (MapInfo.Fixed: frozen and
// read-only to programs, .rodata and .kconfig) at a constant offset yield
// the value there, as the kernel's check_mem_access does with
// bpf_map_direct_read: branches such constants decide have one side dead,
// which is neither explored nor kept (rewrite.SanitizeDeadCode). Cilium's
// datapath configures itself that way.

// rodataLoad turns what a load through ptr yields into the constant the
// map holds there (zero-extended: sign-extending loads extend it after),
// when the map's contents are fixed and the offset is constant. Arrays are
// the maps with direct value access; for one of more than one value the
// kernel fails the load (array_map_direct_value_addr's ENOTSUPP, without a
// message).
func (v *verifier) rodataLoad(ptr *Reg, a access, res *Reg) error {
	if ptr.maybeNull() || !ptr.Map.Fixed() || !ptr.IsConst() || ptr.Map.Spec.Type != maps.Array {
		return nil
	}
	m := ptr.Map
	if m.Spec.MaxEntries != 1 || m.ReadOnlyValue == nil {
		return v.errorf(a.pc, "direct read from map %s of %d values is not supported", m.Name, m.Spec.MaxEntries)
	}
	off := int64(ptr.Off) + int64(a.off) + int64(ptr.Const())
	if off < 0 || off+int64(a.size) > int64(len(m.ReadOnlyValue)) {
		return v.errorf(a.pc, "invalid access to map value, value_size=%d off=%d size=%d", m.Spec.ValueSize, off, a.size)
	}
	b := m.ReadOnlyValue[off : off+int64(a.size)]
	var val uint64
	switch a.size {
	case 1:
		val = uint64(b[0])
	case 2:
		val = uint64(binary.NativeEndian.Uint16(b))
	case 4:
		val = uint64(binary.NativeEndian.Uint32(b))
	case 8:
		val = binary.NativeEndian.Uint64(b)
	default:
		return nil
	}
	*res = Reg{Type: ScalarValue, Scalar: Const(val)}
	return nil
}
