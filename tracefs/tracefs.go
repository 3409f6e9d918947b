// Package tracefs describes tracepoint records: the layout of the record a
// tracepoint program (BPF_PROG_TYPE_TRACEPOINT) receives as its context,
// from the event's tracefs format file
// (/sys/kernel/tracing/events/<category>/<name>/format) where the host has
// one, else from the kernel BTF's struct trace_event_raw_<name>, and
// records built from field values for a program's test runs.
package tracefs

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cilium/ebpf/btf"
)

// ErrInvalidFormat is wrapped by the errors of format files that cannot be
// parsed.
var ErrInvalidFormat = errors.New("invalid tracepoint format")

// ErrNotFound is wrapped when neither tracefs nor the BTF describe an
// event.
var ErrNotFound = errors.New("tracepoint not found")

// Format is the layout of a tracepoint's record.
type Format struct {
	// Name is the event's name, ID its tracefs id (0 from BTF).
	Name string
	ID   uint32
	// Fields are the record's fields in order, the common ones
	// (common_type, common_flags, common_preempt_count, common_pid)
	// first.
	Fields []Field
}

// Field is one field of a record.
type Field struct {
	Name string
	// Type is the field's C type as the format file gives it ("pid_t",
	// "char[16]", "__data_loc char[]").
	Type         string
	Offset, Size int
	Signed       bool
	// DataLoc says the field is a __data_loc: a u32 of the dynamic
	// data's length << 16 | its offset in the record.
	DataLoc bool
}

// Field returns the field called name, or nil.
func (f *Format) Field(name string) *Field {
	for i := range f.Fields {
		if f.Fields[i].Name == name {
			return &f.Fields[i]
		}
	}
	return nil
}

// Size is the size of the record's fixed part: the end of its last field.
func (f *Format) Size() int {
	n := 0
	for _, fl := range f.Fields {
		n = max(n, fl.Offset+fl.Size)
	}
	return n
}

// Parse reads a tracefs format file.
func Parse(r io.Reader) (*Format, error) {
	f := &Format{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(s, "name:"):
			f.Name = strings.TrimSpace(strings.TrimPrefix(s, "name:"))
		case strings.HasPrefix(s, "ID:"):
			id, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(s, "ID:")), 10, 32)
			if err != nil {
				return nil, fmt.Errorf("%w: line %d: ID: %w", ErrInvalidFormat, line, err)
			}
			f.ID = uint32(id)
		case strings.HasPrefix(s, "field:"):
			fl, err := parseField(s)
			if err != nil {
				return nil, fmt.Errorf("%w: line %d: %w", ErrInvalidFormat, line, err)
			}
			f.Fields = append(f.Fields, fl)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidFormat, err)
	}
	if f.Name == "" || len(f.Fields) == 0 {
		return nil, fmt.Errorf("%w: no name or no fields", ErrInvalidFormat)
	}
	return f, nil
}

// parseField parses "field:<decl>;\toffset:N;\tsize:N;\tsigned:N;".
func parseField(s string) (Field, error) {
	parts := strings.Split(s, ";")
	if len(parts) < 4 {
		return Field{}, fmt.Errorf("field %q: want declaration, offset, size and signed", s)
	}
	decl := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(parts[0]), "field:"))
	var fl Field
	for _, p := range parts[1:4] {
		k, v, ok := strings.Cut(strings.TrimSpace(p), ":")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 0 || n > 1<<16 {
			return Field{}, fmt.Errorf("field %q: bad %q", decl, p)
		}
		switch k {
		case "offset":
			fl.Offset = n
		case "size":
			fl.Size = n
		case "signed":
			fl.Signed = n != 0
		default:
			return Field{}, fmt.Errorf("field %q: unknown %q", decl, k)
		}
	}
	// The name is the declaration's last identifier once array bounds
	// are dropped: "char prev_comm[16]", "const char * filename",
	// "__data_loc char[] name".
	var bare strings.Builder
	depth := 0
	for _, c := range decl {
		switch {
		case c == '[':
			depth++
		case c == ']':
			depth--
		case depth == 0:
			bare.WriteRune(c)
		}
	}
	name := strings.TrimSpace(bare.String())
	i := strings.LastIndexAny(name, " *")
	if i < 0 || i == len(name)-1 || depth != 0 {
		return Field{}, fmt.Errorf("field %q: no name", decl)
	}
	fl.Name = name[i+1:]
	at := strings.LastIndex(decl, fl.Name)
	if at < 0 {
		return Field{}, fmt.Errorf("field %q: name split by array bounds", decl)
	}
	fl.Type = strings.TrimSpace(decl[:at]) + decl[at+len(fl.Name):]
	fl.Type = strings.ReplaceAll(fl.Type, " [", "[")
	fl.DataLoc = strings.HasPrefix(decl, "__data_loc")
	return fl, nil
}

// Dirs are where tracefs is looked for, in order.
var Dirs = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}

// Load finds the layout of event category/name: its tracefs format file
// where tracefs is mounted, else the kernel BTF's struct
// trace_event_raw_<name> (spec may be nil to use tracefs only).
func Load(spec *btf.Spec, category, name string) (*Format, error) {
	if strings.ContainsAny(category+name, "/\x00") || category == ".." || name == ".." {
		return nil, fmt.Errorf("tracepoint %s/%s: %w", category, name, ErrNotFound)
	}
	for _, d := range Dirs {
		b, err := os.ReadFile(filepath.Join(d, "events", category, name, "format"))
		if err == nil {
			return Parse(bytes.NewReader(b))
		}
	}
	if spec == nil {
		return nil, fmt.Errorf("tracepoint %s/%s: no tracefs and no BTF: %w", category, name, ErrNotFound)
	}
	return FromBTF(spec, name)
}

// commonFields are the fields of struct trace_entry as tracefs names them.
var commonFields = []Field{
	{Name: "common_type", Type: "unsigned short", Offset: 0, Size: 2},
	{Name: "common_flags", Type: "unsigned char", Offset: 2, Size: 1},
	{Name: "common_preempt_count", Type: "unsigned char", Offset: 3, Size: 1},
	{Name: "common_pid", Type: "int", Offset: 4, Size: 4, Signed: true},
}

// FromBTF gives the layout of event name from the kernel BTF's struct
// trace_event_raw_<name>: the common fields, then its members but the
// trailing __data[]; u32 members called __data_loc_<field> are the
// __data_loc fields. Events of a class share its struct
// (trace_event_raw_<class>): name may be the class's.
func FromBTF(spec *btf.Spec, name string) (*Format, error) {
	var s *btf.Struct
	if err := spec.TypeByName("trace_event_raw_"+name, &s); err != nil {
		return nil, fmt.Errorf("tracepoint %s: %w: %w", name, ErrNotFound, err)
	}
	f := &Format{Name: name, Fields: append([]Field(nil), commonFields...)}
	for _, m := range s.Members {
		if m.Name == "ent" || m.Name == "__data" {
			continue
		}
		fl := Field{Name: m.Name, Offset: int(m.Offset.Bytes())}
		t := btf.UnderlyingType(m.Type)
		n, err := btf.Sizeof(t)
		if err != nil {
			return nil, fmt.Errorf("tracepoint %s: field %s: %w", name, m.Name, err)
		}
		fl.Size = n
		if i, ok := t.(*btf.Int); ok {
			fl.Signed = i.Encoding&btf.Signed != 0
		}
		if e, ok := t.(*btf.Enum); ok {
			fl.Signed = e.Signed
		}
		if strings.HasPrefix(m.Name, "__data_loc_") {
			fl.Name, fl.DataLoc, fl.Signed = strings.TrimPrefix(m.Name, "__data_loc_"), true, false
		}
		if a, ok := t.(*btf.Array); ok {
			if i, ok := btf.UnderlyingType(a.Type).(*btf.Int); ok && i.Size == 1 {
				// char arrays: tracefs says signed:0 for them.
				fl.Signed = false
			}
		}
		fl.Type = typeString(m.Type)
		f.Fields = append(f.Fields, fl)
	}
	return f, nil
}

func typeString(t btf.Type) string {
	if n := t.TypeName(); n != "" {
		return n
	}
	switch t := t.(type) {
	case *btf.Pointer:
		return typeString(t.Target) + " *"
	case *btf.Array:
		return fmt.Sprintf("%s[%d]", typeString(t.Type), t.Nelems)
	case *btf.Const:
		return "const " + typeString(t.Type)
	case *btf.Volatile:
		return typeString(t.Type)
	}
	return ""
}

// Record builds a record of the format from field values: unsigned or
// signed integers for numeric fields (stored in the field's size, little
// or big endian as the host), strings or byte slices for arrays (cut to
// the field, NUL-padded) and for __data_loc fields (appended after the
// fixed part, NUL-terminated, the field pointing at them). Fields not
// given are zero, common_pid included.
func (f *Format) Record(values map[string]any) ([]byte, error) {
	rec := make([]byte, f.Size())
	for name, v := range values {
		fl := f.Field(name)
		if fl == nil {
			return nil, fmt.Errorf("tracepoint %s: no field %s", f.Name, name)
		}
		var data []byte
		switch v := v.(type) {
		case string:
			data = []byte(v)
		case []byte:
			data = v
		}
		if fl.DataLoc {
			if data == nil {
				return nil, fmt.Errorf("tracepoint %s: field %s takes a string or bytes", f.Name, name)
			}
			data = append(append([]byte(nil), data...), 0)
			off := len(rec)
			if off > 0xffff || len(data) > 0xffff || fl.Size != 4 {
				return nil, fmt.Errorf("tracepoint %s: field %s: dynamic data too large", f.Name, name)
			}
			rec = append(rec, data...)
			binary.NativeEndian.PutUint32(rec[fl.Offset:], uint32(len(data))<<16|uint32(off))
			continue
		}
		dst := rec[fl.Offset : fl.Offset+fl.Size]
		if data != nil {
			clear(dst)
			copy(dst, data)
			continue
		}
		var u uint64
		switch v := v.(type) {
		case int:
			u = uint64(v)
		case int64:
			u = uint64(v)
		case int32:
			u = uint64(v)
		case uint:
			u = uint64(v)
		case uint64:
			u = v
		case uint32:
			u = uint64(v)
		default:
			return nil, fmt.Errorf("tracepoint %s: field %s: value of type %T", f.Name, name, v)
		}
		switch fl.Size {
		case 1:
			dst[0] = byte(u)
		case 2:
			binary.NativeEndian.PutUint16(dst, uint16(u))
		case 4:
			binary.NativeEndian.PutUint32(dst, uint32(u))
		case 8:
			binary.NativeEndian.PutUint64(dst, u)
		default:
			return nil, fmt.Errorf("tracepoint %s: field %s of %d bytes takes a string or bytes", f.Name, name, fl.Size)
		}
	}
	return rec, nil
}
