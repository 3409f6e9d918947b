package helper

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// The BTF pretty-printer of bpf_snprintf_btf and bpf_seq_printf_btf
// (kernel/trace/bpf_trace.c): a typed object shown as the kernel's
// btf_type_snprintf_show shows it (kernel/bpf/btf.c's btf_show), byte for
// byte: "(type){" and one ".member = (type)value," per line, indented a
// space per level, members of value zero left out (BTF_F_ZERO shows
// them; a struct or array all of whose members are zero is left out
// whole), bitfields in hex, char arrays as 'c' up to their NUL, enums
// by name, pointers hashed (BTF_F_PTR_RAW: the address); BTF_F_COMPACT
// puts it on one line, BTF_F_NONAME drops the names.
var btfShowHelpers = []Helper{
	{Proto: Proto{Name: "bpf_snprintf_btf", Args: [5]ArgType{ArgWriteMem, ArgConstSize, ArgMem, ArgConstSize, ArgAnything}}, Func: helperSnprintfBTF},
	{Proto: Proto{Name: "bpf_seq_printf_btf", Args: [5]ArgType{ArgBTFID, ArgMem, ArgConstSizeOrZero, ArgAnything}, ArgBTF: [5]string{"seq_file"}}, Func: helperSeqPrintfBTF},
}

// The flags of struct btf_ptr's printing (BTF_F_*).
const (
	btfCompact = 1 << iota
	btfNoName
	btfPtrRaw
	btfZero
	btfFlagsAll = btfCompact | btfNoName | btfPtrRaw | btfZero
)

// btfPtrSize is the size of struct btf_ptr { void *ptr; __u32 type_id;
// __u32 flags; }.
const btfPtrSize = 16

// helperSnprintfBTF is bpf_snprintf_btf(str, size, ptr, ptr_size,
// flags): the object *ptr names shown into str (NUL-terminated, cut to
// size), and the length the whole would take without the NUL.
func helperSnprintfBTF(e *vm.Env, r1, r2, r3, r4, r5 uint64) (uint64, error) {
	if _, err := memArg(e, r1, uint32(r2), true); err != nil {
		return 0, err
	}
	text, errno, err := btfShowArg(e, r3, r4, r5)
	if err != nil || errno != 0 {
		return neg(errno), err
	}
	out := vm.Slice(r1, r2)
	n := copy(out[:len(out)-1], text)
	out[n] = 0
	return uint64(len(text)), nil
}

// helperSeqPrintfBTF is bpf_seq_printf_btf(seq, ptr, ptr_size, flags):
// the object shown to the iterator's seq_file (Trace.Seq).
func helperSeqPrintfBTF(e *vm.Env, r1, r2, r3, r4, _ uint64) (uint64, error) {
	text, errno, err := btfShowArg(e, r2, r3, r4)
	if err != nil || errno != 0 {
		return neg(errno), err
	}
	if seq := runner.Of(e).Trace().Seq; seq != nil {
		seq.WriteString(text)
	}
	return 0, nil
}

// btfShowArg shows the object of the struct btf_ptr at ptr (bpf_btf_printf_prepare's checks).
func btfShowArg(e *vm.Env, ptr, size, flags uint64) (string, int64, error) {
	if size != 0 {
		if _, err := memArg(e, ptr, uint32(size), false); err != nil {
			return "", 0, err
		}
	}
	if flags&^btfFlagsAll != 0 || size != btfPtrSize {
		return "", einval, nil
	}
	b := vm.Slice(ptr, btfPtrSize)
	obj, id := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint32(b[8:])
	r := runner.Of(e)
	spec := r.Program().KernelTypes
	if spec == nil {
		return "", einval, nil
	}
	if int32(id) <= 0 {
		return "", einval, nil
	}
	t, err := spec.TypeByID(btf.TypeID(id))
	if err != nil {
		return "", enoent, nil
	}
	s := &btfShow{flags: flags, read: func(addr, n uint64) ([]byte, bool) {
		if readableSpan(e, addr) >= n {
			return vm.Slice(addr, n), true
		}
		return r.Trace().Read(addr, n, false)
	}}
	size0, err := btf.Sizeof(t)
	if err != nil {
		size0 = 0
	}
	data, ok := s.read(obj, uint64(size0))
	if !ok {
		return "", efault, nil
	}
	s.show(t, t, data, 0)
	return s.out.String(), 0, nil
}

// btfShow is the state of one showing (the kernel's struct btf_show).
type btfShow struct {
	flags uint64
	read  func(addr, n uint64) ([]byte, bool)
	out   strings.Builder
	// depth is the nesting level; depthCheck, when set, is the level
	// whose members a first, silent pass looks at for a value to show
	// (depthToShow: the deepest level one was found at).
	depth, depthCheck, depthToShow int
	// member is the struct member being shown (nil: none, or an array
	// element: arrayMember); typ the type being shown (resolved) and
	// ref the type it was named by.
	member      *btf.Member
	typ, ref    btf.Type
	arrayMember bool
	// arrayChar says the array shown holds chars; arrayDone that its NUL
	// was seen.
	arrayChar, arrayDone bool
}

func (s *btfShow) print(format string, args ...any) {
	if s.depthCheck == 0 {
		fmt.Fprintf(&s.out, format, args...)
	}
}

func (s *btfShow) indent() string {
	if s.flags&btfCompact != 0 {
		return ""
	}
	return strings.Repeat(" ", min(s.depth, 32))
}

func (s *btfShow) newline() string {
	if s.flags&btfCompact != 0 {
		return ""
	}
	return "\n"
}

func (s *btfShow) delim() string {
	if s.depth == 0 {
		return ""
	}
	if _, union := s.typ.(*btf.Union); union && s.flags&btfCompact != 0 {
		return "|"
	}
	return ","
}

// value shows a value unless it is zero (nonzero false) below the top,
// without BTF_F_ZERO: btf_show_type_value.
func (s *btfShow) value(text string, nonzero bool) {
	if nonzero || s.flags&btfZero != 0 || s.depth == 0 {
		s.values(text)
	}
}

// values shows a value whatever it is: btf_show_type_values.
func (s *btfShow) values(text string) {
	s.print("%s%s%s%s%s", s.indent(), s.name(), text, s.delim(), s.newline())
	if s.depth > s.depthToShow {
		s.depthToShow = s.depth
	}
}

// skipQualifiers skips const, volatile, restrict and type tags, not
// typedefs (btf_type_skip_qualifiers).
func skipQualifiers(t btf.Type) btf.Type {
	for range 32 {
		switch q := t.(type) {
		case *btf.Const:
			t = q.Type
		case *btf.Volatile:
			t = q.Type
		case *btf.Restrict:
			t = q.Type
		case *btf.TypeTag:
			t = q.Type
		default:
			return t
		}
	}
	return t
}

// skipModifiers skips typedefs too (btf_type_skip_modifiers).
func skipModifiers(t btf.Type) btf.Type {
	for range 32 {
		if td, ok := t.(*btf.Typedef); ok {
			t = td.Type
			continue
		}
		q := skipQualifiers(t)
		if q == t {
			return t
		}
		t = q
	}
	return t
}

// name is "[.member = ](type)" and the opening bracket of what is shown
// (btf_show_name).
func (s *btfShow) name() string {
	if s.arrayMember {
		return ""
	}
	t, member := s.ref, ""
	if m := s.member; m != nil {
		member, t = m.Name, m.Type
	}
	if t == nil {
		return ""
	}
	var name *string
	typedef, array, ptr := false, false, false
	parens, ptrs, arrays := "", 0, 0
	i := 0
	for ; i < 10; i++ {
		var next btf.Type
		switch x := t.(type) {
		case *btf.Typedef:
			if name == nil {
				n := x.Name
				name = &n
			}
			typedef, next = true, x.Type
		case *btf.Array:
			array, parens = true, "["
			arrays++
			next = x.Type
		case *btf.Pointer:
			ptr = true
			ptrs++
			next = x.Target
		}
		if next == nil {
			break
		}
		t = skipQualifiers(next)
	}
	if i == 10 {
		return ""
	}
	if name == nil {
		n := t.TypeName()
		name = &n
	}
	prefix := ""
	switch x := t.(type) {
	case *btf.Struct, *btf.Union:
		prefix = "struct"
		if _, ok := x.(*btf.Union); ok {
			prefix = "union"
		}
		if !array {
			parens = "{"
		}
	case *btf.Enum:
		prefix = "enum"
	}
	if ptr {
		parens = ""
	}
	if typedef {
		prefix = ""
	}
	if s.flags&btfNoName != 0 {
		return parens
	}
	var b strings.Builder
	if member != "" {
		b.WriteString("." + member + " = ")
	}
	b.WriteString("(" + prefix)
	if prefix != "" && *name != "" {
		b.WriteString(" ")
	}
	b.WriteString(*name)
	if ptrs > 0 {
		b.WriteString(" " + strings.Repeat("*", min(ptrs, 10)))
	}
	b.WriteString(strings.Repeat("[]", min(arrays, 10)) + ")" + parens)
	return b.String()
}

// start begins showing t (resolved) named by ref.
func (s *btfShow) start(t, ref btf.Type) { s.typ, s.ref = t, ref }

func (s *btfShow) end() { s.typ, s.ref = nil, nil }

// show shows the value of type ref (t resolved from it through
// modifiers) in data, bitsOffset bits in.
func (s *btfShow) show(t, ref btf.Type, data []byte, bitsOffset uint32) {
	switch x := skipModifiers(t).(type) {
	case *btf.Int:
		s.showInt(x, ref, data, bitsOffset)
	case *btf.Pointer:
		s.start(x, ref)
		p := le(data, 8)
		if s.flags&btfPtrRaw != 0 {
			s.value(fmt.Sprintf("0x%016x", p), p != 0)
		} else {
			s.value(fmt.Sprintf("0x%016x", hashPointer(p)), p != 0)
		}
		s.end()
	case *btf.Array:
		s.showChecked(func() { s.showArray(x, ref, data, bitsOffset) })
	case *btf.Struct:
		s.showChecked(func() { s.showStruct(x, x.Members, ref, data) })
	case *btf.Union:
		s.showChecked(func() { s.showStruct(x, x.Members, ref, data) })
	case *btf.Enum:
		s.showEnum(x, ref, data)
	default:
		s.print("<unsupported kind:%d>", btfKind(x)) // helper/syscall.go
	}
}

// showChecked shows an aggregate, after a silent pass for a member to
// show below the top without BTF_F_ZERO (btf_struct_show,
// btf_array_show).
func (s *btfShow) showChecked(show func()) {
	if s.depth > 0 && s.flags&btfZero == 0 {
		m := s.member
		if s.depthCheck == 0 {
			s.depthCheck, s.depthToShow = s.depth+1, 0
		}
		show()
		s.member = m
		if s.depthCheck != s.depth+1 {
			return
		}
		s.depthCheck = 0
		if s.depthToShow <= s.depth {
			return
		}
	}
	show()
}

func (s *btfShow) startAggr(t, ref btf.Type) {
	s.start(t, ref)
	s.print("%s%s%s", s.indent(), s.name(), s.newline())
	s.depth++
}

func (s *btfShow) endAggr(suffix string) {
	s.depth--
	s.print("%s%s%s%s", s.indent(), suffix, s.delim(), s.newline())
	s.end()
}

func (s *btfShow) showStruct(t btf.Type, ms []btf.Member, ref btf.Type, data []byte) {
	s.startAggr(t, ref)
	for i := range ms {
		m := &ms[i]
		s.member = m
		off := uint32(m.Offset)
		bytes, bits := off/8, off%8
		var d []byte
		if int(bytes) <= len(data) {
			d = data[bytes:]
		}
		if m.BitfieldSize > 0 {
			s.start(m.Type, m.Type)
			s.showBits(d, bits, uint32(m.BitfieldSize))
			s.end()
		} else {
			s.show(m.Type, m.Type, d, bits)
		}
		s.member = nil
	}
	s.endAggr("}")
}

func (s *btfShow) showArray(a *btf.Array, ref btf.Type, data []byte, bitsOffset uint32) {
	elem := skipModifiers(a.Type)
	size := 0
	switch elem.(type) {
	case *btf.Int, *btf.Enum, *btf.Struct, *btf.Union, *btf.Float:
		size, _ = btf.Sizeof(elem)
	}
	s.arrayChar, s.arrayDone = false, false
	if _, ok := elem.(*btf.Int); ok && size == 1 {
		s.arrayChar = true
	}
	s.startAggr(a, ref)
	for i := uint32(0); i < a.Nelems; i++ {
		s.arrayMember, s.member = true, nil
		s.show(elem, a.Type, data, bitsOffset)
		if len(data) >= size {
			data = data[size:]
		}
		s.arrayMember, s.member = false, nil
		if s.arrayDone {
			break
		}
	}
	s.arrayChar, s.arrayDone = false, false
	s.endAggr("]")
}

func (s *btfShow) showInt(t *btf.Int, ref btf.Type, data []byte, bitsOffset uint32) {
	s.start(t, ref)
	defer s.end()
	bits := t.Size * 8
	if bitsOffset != 0 {
		s.showBits(data, bitsOffset, bits)
		return
	}
	signed := t.Encoding&btf.Signed != 0
	v := le(data, int(t.Size))
	switch bits {
	case 128:
		s.showInt128(le(data, 8), le(data[min(8, len(data)):], 8))
	case 64:
		if signed {
			s.value(fmt.Sprint(int64(v)), v != 0)
		} else {
			s.value(fmt.Sprint(v), v != 0)
		}
	case 32:
		if signed {
			s.value(fmt.Sprint(int32(v)), v != 0)
		} else {
			s.value(fmt.Sprint(uint32(v)), v != 0)
		}
	case 16:
		if signed {
			s.value(fmt.Sprint(int16(v)), v != 0)
		} else {
			s.value(fmt.Sprint(uint16(v)), v != 0)
		}
	case 8:
		if s.arrayChar {
			if s.arrayDone {
				return
			}
			if v == 0 {
				s.arrayDone = true
				return
			}
			if c := byte(v); c >= 0x20 && c < 0x7f || c >= 0xa0 {
				// The kernel's isprint: ASCII and Latin-1's
				// printable halves, the byte itself printed.
				s.value("'"+string([]byte{c})+"'", true)
				return
			}
		}
		if signed {
			s.value(fmt.Sprint(int8(v)), v != 0)
		} else {
			s.value(fmt.Sprint(uint8(v)), v != 0)
		}
	default:
		s.showBits(data, 0, bits)
	}
}

// showBits shows nbits bits from bit off of data in hex
// (btf_bitfield_show).
func (s *btfShow) showBits(data []byte, off, nbits uint32) {
	var b [16]byte
	copy(b[:], data[:min(len(data), int((off+nbits+7)/8))])
	lo, hi := binary.LittleEndian.Uint64(b[:]), binary.LittleEndian.Uint64(b[8:])
	// Shift right by off, keep nbits.
	if off > 0 {
		lo = lo>>off | hi<<(64-off)
		hi >>= off
	}
	switch {
	case nbits < 64:
		lo &= 1<<nbits - 1
		hi = 0
	case nbits < 128:
		hi &= 1<<(nbits-64) - 1
	}
	s.showInt128(lo, hi)
}

func (s *btfShow) showInt128(lo, hi uint64) {
	if hi == 0 {
		s.value(fmt.Sprintf("0x%x", lo), lo != 0)
		return
	}
	s.values(fmt.Sprintf("0x%x%016x", hi, lo))
}

func (s *btfShow) showEnum(t *btf.Enum, ref btf.Type, data []byte) {
	s.start(t, ref)
	defer s.end()
	if t.Size == 8 {
		v := le(data, 8)
		for _, e := range t.Values {
			if e.Value == v {
				s.value(e.Name, true)
				return
			}
		}
		if t.Signed {
			s.value(fmt.Sprint(int64(v)), v != 0)
		} else {
			s.value(fmt.Sprint(v), v != 0)
		}
		return
	}
	v := uint32(le(data, 4))
	for _, e := range t.Values {
		if uint32(e.Value) == v {
			s.value(e.Name, true)
			return
		}
	}
	if t.Signed {
		s.value(fmt.Sprint(int32(v)), v != 0)
	} else {
		s.value(fmt.Sprint(v), v != 0)
	}
}

// le reads n little-endian bytes of data (zeros past its end).
func le(data []byte, n int) uint64 {
	var b [8]byte
	copy(b[:], data[:min(len(data), n, 8)])
	return binary.LittleEndian.Uint64(b[:])
}

// hashPointer stands for %p's hashed pointer: 32 bits of a hash of the
// address (the kernel's keyed siphash, whose key no one outside has).
func hashPointer(p uint64) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], p)
	h.Write(b[:])
	return h.Sum64() & 0xffffffff
}
