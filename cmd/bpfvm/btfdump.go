package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"

	"github.com/cilium/ebpf/btf"
)

// errBTFKind is a BTF type a map's key or value cannot be printed as.
var errBTFKind = errors.New("unsupported BTF kind")

// hasBTF reports whether a map's key or value type is known, so bpftool
// prints its entries formatted (a void key, as of .data, is not).
func hasBTF(t btf.Type) bool {
	if t == nil {
		return false
	}
	_, void := t.(*btf.Void)
	return !void
}

// btfDump writes data as a value of type t, as bpftool's btf_dumper:
// integers as numbers, enums by name, structs as objects, arrays as
// arrays and char arrays holding a string as strings. plain is bpftool's
// plain-text mode (map dump without -j): pointers as "%p" strings, 128-bit
// and bitfield integers as hex numbers, unprintable chars as hex.
func btfDump(j *jsonWriter, t btf.Type, data []byte, plain bool) error {
	return btfDumpBits(j, t, data, 0, plain)
}

func btfDumpBits(j *jsonWriter, t btf.Type, data []byte, bitOff uint32, plain bool) error {
	t = btf.UnderlyingType(t) // typedefs and qualifiers
	if size, err := btf.Sizeof(t); err == nil && len(data) < size {
		// Bad BTF (a member past its struct) must not read past data.
		return fmt.Errorf("%v: %d bytes for a %d byte type", t, len(data), size)
	}
	switch t := t.(type) {
	case *btf.Int:
		return btfInt(j, t, data, bitOff, plain)
	case *btf.Float:
		switch t.Size {
		case 4:
			j.raw(strconv.FormatFloat(float64(math.Float32frombits(binary.LittleEndian.Uint32(data))), 'g', -1, 32))
		case 8:
			j.raw(strconv.FormatFloat(math.Float64frombits(binary.LittleEndian.Uint64(data)), 'g', -1, 64))
		default:
			return fmt.Errorf("float of %d bytes: %w", t.Size, errBTFKind)
		}
	case *btf.Enum:
		v := readUint(data[:t.Size])
		if t.Size < 8 && t.Size > 0 {
			// Compared sign-extended, as bpftool reads it as signed.
			shift := 64 - 8*t.Size
			v = uint64(int64(v<<shift) >> shift)
		}
		for _, e := range t.Values {
			ev := e.Value
			if t.Size < 8 && t.Size > 0 {
				shift := 64 - 8*t.Size
				ev = uint64(int64(ev<<shift) >> shift)
			}
			if ev == v {
				j.str(e.Name)
				return nil
			}
		}
		j.int(int64(v))
	case *btf.Pointer:
		v := binary.LittleEndian.Uint64(data)
		if plain {
			if v == 0 {
				j.str("(nil)")
			} else {
				j.str(fmt.Sprintf("0x%x", v))
			}
		} else {
			j.uint(v)
		}
	case *btf.Struct:
		return btfMembers(j, t.Members, data, plain)
	case *btf.Union:
		return btfMembers(j, t.Members, data, plain)
	case *btf.Array:
		return btfArray(j, t, data, plain)
	case *btf.Var:
		j.startObject()
		j.name(t.Name)
		if err := btfDumpBits(j, t.Type, data, bitOff, plain); err != nil {
			return err
		}
		j.endObject()
	case *btf.Datasec:
		j.startObject()
		j.name(t.Name)
		j.startArray()
		for _, v := range t.Vars {
			if int(v.Offset+v.Size) > len(data) {
				return fmt.Errorf("%s: variable at %d past the %d byte value", t.Name, v.Offset, len(data))
			}
			if err := btfDumpBits(j, v.Type, data[v.Offset:v.Offset+v.Size], 0, plain); err != nil {
				return err
			}
		}
		j.endArray()
		j.endObject()
	default:
		j.raw(`"(unsupported-kind)"`)
		return fmt.Errorf("%v: %w", t, errBTFKind)
	}
	return nil
}

func btfMembers(j *jsonWriter, members []btf.Member, data []byte, plain bool) error {
	j.startObject()
	for _, m := range members {
		j.name(m.Name)
		off := uint32(m.Offset)
		if int(off/8) > len(data) {
			return fmt.Errorf("member %s at bit %d past the %d byte value", m.Name, off, len(data))
		}
		if m.BitfieldSize > 0 {
			btfBits(j, data[off/8:], off%8, uint32(m.BitfieldSize), plain)
			continue
		}
		if err := btfDumpBits(j, m.Type, data[off/8:], off%8, plain); err != nil {
			return err
		}
	}
	j.endObject()
	return nil
}

func btfArray(j *jsonWriter, t *btf.Array, data []byte, plain bool) error {
	if s, ok := charString(t, data); ok {
		j.str(s)
		return nil
	}
	elem, err := btf.Sizeof(t.Type)
	if err != nil {
		return err
	}
	j.startArray()
	for i := range int(t.Nelems) {
		if err := btfDumpBits(j, t.Type, data[i*elem:], 0, plain); err != nil {
			return err
		}
	}
	j.endArray()
	return nil
}

// charString returns a char array's string when it holds one: printable
// characters up to a NUL within the array (bpftool's is_str_array).
func charString(t *btf.Array, data []byte) (string, bool) {
	if t.Nelems == 0 {
		return "", false
	}
	elem := btf.QualifiedType(t.Type) // typedefs of char do not count
	i, ok := elem.(*btf.Int)
	if !ok || i.Size != 1 || i.Encoding != btf.Char && i.Name != "char" {
		return "", false
	}
	for n, c := range data[:t.Nelems] {
		if c == 0 {
			return string(data[:n]), true
		}
		if c <= 0x1f || c >= 0x7f {
			return "", false
		}
	}
	return "", false
}

func btfInt(j *jsonWriter, t *btf.Int, data []byte, bitOff uint32, plain bool) error {
	if bitOff != 0 {
		btfBits(j, data, bitOff, 8*t.Size, plain)
		return nil
	}
	switch {
	case t.Size == 16:
		lo, hi := binary.LittleEndian.Uint64(data), binary.LittleEndian.Uint64(data[8:])
		j.raw(hex128(hi, lo, plain))
	case t.Encoding == btf.Bool:
		j.raw(strconv.FormatBool(data[0] != 0))
	case t.Encoding == btf.Char:
		c := data[0]
		switch {
		case c >= 0x20 && c < 0x7f:
			j.str(string(rune(c)))
		case plain:
			j.raw(fmt.Sprintf("0x%x", c))
		default:
			j.raw(fmt.Sprintf(`"\u00%02x"`, c))
		}
	case t.Encoding == btf.Signed:
		v := readUint(data[:t.Size])
		shift := 64 - 8*t.Size
		j.int(int64(v<<shift) >> shift)
	case t.Size <= 8:
		j.uint(readUint(data[:t.Size]))
	default:
		return fmt.Errorf("int of %d bytes: %w", t.Size, errBTFKind)
	}
	return nil
}

// btfBits prints a bitfield, as bpftool does, as a hex number: quoted
// outside plain mode, where JSON numbers could not hold 128 bits.
func btfBits(j *jsonWriter, data []byte, bitOff, bits uint32, plain bool) {
	n := int((bitOff + bits + 7) / 8)
	v := new(big.Int)
	for i := min(n, len(data)) - 1; i >= 0; i-- {
		v.Lsh(v, 8).Or(v, big.NewInt(int64(data[i])))
	}
	v.Rsh(v, uint(bitOff))
	v.And(v, new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(bits)), big.NewInt(1)))
	s := "0x" + v.Text(16)
	if !plain {
		s = strconv.Quote(s)
	}
	j.raw(s)
}

func hex128(hi, lo uint64, plain bool) string {
	s := fmt.Sprintf("0x%x", lo)
	if hi != 0 {
		s = fmt.Sprintf("0x%x%016x", hi, lo)
	}
	if !plain {
		s = strconv.Quote(s)
	}
	return s
}

// readUint reads a little-endian unsigned integer of 1 to 8 bytes.
func readUint(b []byte) uint64 {
	var v uint64
	for i := len(b) - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}
