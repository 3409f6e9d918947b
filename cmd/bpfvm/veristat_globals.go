package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/maps"
)

// varPreset is one veristat -G expression: a global variable, or a path
// into one (members and array elements: "cfg.inner[1].c"), and the value
// to give it before the programs load.
type varPreset struct {
	expr string // as given, for messages
	// name is the variable, path what follows it (".a", "[2]").
	name, path string
	// value is an integer, or enum names an enumerator of the type.
	value int64
	enum  string
}

// varPresets are the -G expressions, in order.
type varPresets []varPreset

func (p *varPresets) String() string { return "" }

// add takes one -G: "VAR = VALUE", or @FILE with one a line (blank lines
// and lines starting with # skipped), as veristat reads them.
func (p *varPresets) add(s string) error {
	if file, ok := strings.CutPrefix(s, "@"); ok {
		lines, err := listFile(file)
		if err != nil {
			return fmt.Errorf("failed to open presets in '%s': %w", file, err)
		}
		for _, line := range lines {
			if err := p.add1(line); err != nil {
				return err
			}
		}
		return nil
	}
	return p.add1(s)
}

func (p *varPresets) add1(s string) error {
	lhs, rhs, ok := strings.Cut(s, "=")
	lhs, rhs = strings.TrimSpace(lhs), strings.TrimSpace(rhs)
	if !ok || lhs == "" || rhs == "" || strings.ContainsAny(lhs, " \t") || strings.ContainsAny(rhs, " \t") {
		return fmt.Errorf("failed to parse expression '%s'", s)
	}
	pr := varPreset{expr: s, name: lhs}
	if i := strings.IndexAny(lhs, ".["); i >= 0 {
		pr.name, pr.path = lhs[:i], lhs[i:]
	}
	if pr.name == "" {
		return fmt.Errorf("failed to parse expression '%s'", s)
	}
	if rhs[0] == '-' || rhs[0] >= '0' && rhs[0] <= '9' {
		// As strtoll with base 0 (0x, 0 for octal), and past its range
		// as strtoull.
		v, err := strconv.ParseInt(rhs, 0, 64)
		if errors.Is(err, strconv.ErrRange) && rhs[0] != '-' {
			var u uint64
			u, err = strconv.ParseUint(rhs, 0, 64)
			v = int64(u)
		}
		if err != nil {
			return fmt.Errorf("failed to parse value '%s'", rhs)
		}
		pr.value = v
	} else {
		pr.enum = rhs
	}
	*p = append(*p, pr)
	return nil
}

// apply sets the presets' variables in spec, as veristat sets them in the
// object's data sections before loading: only integers and enums
// (enumerators by name), a value that fits the variable's size, no
// bitfields. A preset that names no variable of the object is left out
// with a note, as veristat does.
func (p varPresets) apply(spec *ebpf.CollectionSpec) (notes []string, _ error) {
	for _, pr := range p {
		vs := spec.Variables[pr.name]
		if vs == nil || vs.Type == nil {
			notes = append(notes, fmt.Sprintf("Global variable preset %s has not been applied", pr.name+pr.path))
			continue
		}
		off, t, err := presetTarget(vs.Type.Type, pr)
		if err != nil {
			return notes, err
		}
		size, err := btf.Sizeof(t)
		if err != nil {
			return notes, fmt.Errorf("variable %s: %w", pr.name, err)
		}
		v, err := presetValue(t, pr, size)
		if err != nil {
			return notes, err
		}
		if vs.Value == nil {
			vs.Value = make([]byte, vs.Size())
		}
		if off+size > len(vs.Value) {
			return notes, fmt.Errorf("variable %s: %s is out of its %d bytes", pr.name, pr.path, len(vs.Value))
		}
		for i := range size {
			vs.Value[off+i] = byte(uint64(v) >> (8 * i)) // little-endian, as the BPF target
		}
	}
	return notes, nil
}

// presetTarget follows a preset's path of members and indexes from the
// variable's type to the offset and type of what it sets.
func presetTarget(t btf.Type, pr varPreset) (int, btf.Type, error) {
	off, path := 0, pr.path
	t = btf.UnderlyingType(t)
	for path != "" {
		switch path[0] {
		case '.':
			end := strings.IndexAny(path[1:], ".[") + 1
			if end == 0 {
				end = len(path)
			}
			name := path[1:end]
			path = path[end:]
			moff, mt, err := findMember(t, name)
			if err != nil {
				return 0, nil, fmt.Errorf("could not find member %s for variable %s: %w", name, pr.name, err)
			}
			off += moff
			t = mt
		case '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return 0, nil, fmt.Errorf("failed to parse expression '%s'", pr.expr)
			}
			idx := path[1:end]
			path = path[end+1:]
			arr, ok := t.(*btf.Array)
			if !ok {
				return 0, nil, fmt.Errorf("variable %s: %s is not an array", pr.name, pr.expr)
			}
			n, err := strconv.ParseUint(idx, 0, 32)
			if err != nil {
				return 0, nil, fmt.Errorf("failed to parse array index '%s' of variable %s", idx, pr.name)
			}
			if n >= uint64(arr.Nelems) {
				return 0, nil, fmt.Errorf("array index %d is out of bounds for variable %s: %d elements", n, pr.name, arr.Nelems)
			}
			esize, err := btf.Sizeof(arr.Type)
			if err != nil {
				return 0, nil, fmt.Errorf("variable %s: %w", pr.name, err)
			}
			off += int(n) * esize
			t = btf.UnderlyingType(arr.Type)
		default:
			return 0, nil, fmt.Errorf("failed to parse expression '%s'", pr.expr)
		}
	}
	return off, t, nil
}

// findMember finds a struct or union member by name, looking into
// anonymous members as C does, and returns its byte offset and type.
func findMember(t btf.Type, name string) (int, btf.Type, error) {
	var members []btf.Member
	switch c := t.(type) {
	case *btf.Struct:
		members = c.Members
	case *btf.Union:
		members = c.Members
	default:
		return 0, nil, fmt.Errorf("%s is not a struct or union", t)
	}
	for _, m := range members {
		mt := btf.UnderlyingType(m.Type)
		if m.Name == name {
			if m.BitfieldSize != 0 {
				return 0, nil, fmt.Errorf("bitfield presets are not supported %s", name)
			}
			return int(m.Offset / 8), mt, nil
		}
		if m.Name == "" {
			if off, found, err := findMember(mt, name); err == nil {
				return int(m.Offset/8) + off, found, nil
			}
		}
	}
	return 0, nil, errors.New("no such member")
}

// presetValue checks a preset's value against the type it sets and
// returns the integer to store.
func presetValue(t btf.Type, pr varPreset, size int) (int64, error) {
	signed := true
	switch tt := t.(type) {
	case *btf.Int:
		signed = tt.Encoding&btf.Signed != 0
		if pr.enum != "" {
			return 0, fmt.Errorf("value %s is not supported for type %s", pr.enum, tt.Name)
		}
	case *btf.Enum:
		signed = tt.Signed
		if pr.enum != "" {
			for _, e := range tt.Values {
				if e.Name == pr.enum {
					return int64(e.Value), nil
				}
			}
			return 0, fmt.Errorf("failed to find integer value for enum element %s", pr.enum)
		}
	default:
		return 0, fmt.Errorf("setting value for type %s is not supported", typeName(t))
	}
	v := pr.value
	if size < 8 {
		// veristat's range: [-2^bits, 2^bits-1], bits the size's less
		// the sign bit of a signed type.
		bits := size*8 - 1
		if !signed {
			bits++
		}
		limit := int64(1) << bits
		if v >= limit || v < -limit {
			lo := int64(0)
			if signed {
				lo = -limit
			}
			return 0, fmt.Errorf("variable %s value %d is out of range [%d; %d]", typeName(t), v, lo, limit-1)
		}
	}
	return v, nil
}

// typeName is a BTF type's name, or its kind for an anonymous one.
func typeName(t btf.Type) string {
	if n := t.TypeName(); n != "" {
		return n
	}
	return fmt.Sprintf("%T", t)
}

// objectList expands the @FILE arguments of veristat's object list: a
// file naming objects, one a line (blank lines and # comments skipped).
func objectList(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		list, ok := strings.CutPrefix(a, "@")
		if !ok {
			out = append(out, a)
			continue
		}
		lines, err := listFile(list)
		if err != nil {
			return nil, fmt.Errorf("failed to open object files list in '%s': %w", list, err)
		}
		out = append(out, lines...)
	}
	return out, nil
}

// debugNotes are what -d says of an object as it opens it: its maps and
// programs as the loader sees them (veristat's -d shows libbpf's debug
// log, which says as much).
func debugNotes(file string, spec *ebpf.CollectionSpec) []string {
	var notes []string
	for _, name := range sortedMapNames(spec) {
		m := spec.Maps[name]
		notes = append(notes, fmt.Sprintf("bpfvm veristat: %s: map '%s': type %s, key %d, value %d, max_entries %d, flags %#x",
			file, name, maps.Type(m.Type).String(), m.KeySize, m.ValueSize, m.MaxEntries, m.Flags))
	}
	for _, name := range specNames(spec) {
		p := spec.Programs[name]
		notes = append(notes, fmt.Sprintf("bpfvm veristat: %s: program '%s': section '%s', type %s, attach type %s, %d insns",
			file, name, p.SectionName, progTypeName(p.Type), p.AttachType, len(p.Instructions)))
	}
	return notes
}

func sortedMapNames(spec *ebpf.CollectionSpec) []string {
	var names []string
	for n := range spec.Maps {
		names = append(names, n)
	}
	return sorted(names)
}

// dumpModes are veristat's --dump modes: xlated, jited or both.
type dumpModes uint8

const (
	dumpXlated dumpModes = 1 << iota
	dumpJited
)

func (d *dumpModes) String() string { return "" }

// IsBoolFlag lets --dump go without a value (xlated), as veristat's.
func (d *dumpModes) IsBoolFlag() bool { return true }

func (d *dumpModes) Set(s string) error {
	switch strings.ToLower(s) {
	case "true", "xlated":
		*d |= dumpXlated
	case "jited":
		*d |= dumpJited
	default:
		return fmt.Errorf("unrecognized dump mode '%s'", s)
	}
	return nil
}

// programDumps are a loaded program's dumps as veristat --dump prints
// them: "FILE/PROG DUMP JITED:" then bpftool prog dump jited's text, and
// the same for XLATED, each followed by a blank line.
func programDumps(p *bpfvm.Program, modes dumpModes, file, prog string) string {
	var b strings.Builder
	d := newXlatedDump(p)
	if modes&dumpJited != 0 {
		fmt.Fprintf(&b, "%s/%s DUMP JITED:\n", file, prog)
		if err := d.jited(&b, progDumpOptions{}, nil); err != nil {
			fmt.Fprintf(&b, "%v\n", err)
		}
		b.WriteString("\n")
	}
	if modes&dumpXlated != 0 {
		fmt.Fprintf(&b, "%s/%s DUMP XLATED:\n", file, prog)
		d.plain(&b, progDumpOptions{})
		b.WriteString("\n")
	}
	return b.String()
}
