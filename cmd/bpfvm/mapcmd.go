package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/maps"
)

// session is an object loaded for map commands and program runs: its
// maps live as long as the session, so a batch sees what earlier lines
// did to them.
type session struct {
	path  string
	spec  *ebpf.CollectionSpec
	coll  *bpfvm.Collection
	ncpu  int
	trace io.Writer // bpf_trace_printk output; nil discards it
	// closeTrace closes the trace file.
	closeTrace func()
	out        io.Writer
	jw         *jsonWriter // JSON mode: where the commands write their values
}

// openSession loads an object's maps and the programs named (none for
// map commands), and those of maybe the object has (programs that map
// update may put in a program array), with one value per CPU of the
// machine in per-CPU maps, as bpftool shows the kernel's.
func openSession(path string, progs, maybe []string, engine bpfvm.Engine, trace io.Writer) (*session, error) {
	spec, err := openObject(path)
	if err != nil {
		return nil, err
	}
	ncpu := runtime.NumCPU()
	if progs == nil {
		progs = []string{}
	}
	for _, p := range progs {
		if spec.Programs[p] == nil {
			return nil, usageErr("no program %q in %s; programs: %s", p, path, strings.Join(specNames(spec), ", "))
		}
	}
	for _, p := range maybe {
		if spec.Programs[p] != nil && !contains(progs, p) {
			progs = append(progs, p)
		}
	}
	opts := bpfvm.CollectionOptions{ProgramNames: progs, NumCPU: ncpu, Programs: bpfvm.ProgramOptions{Output: trace, Engine: engine}}
	coll, err := bpfvm.NewCollectionWithOptions(spec, opts)
	if err != nil {
		name := ""
		if len(progs) == 1 {
			name = progs[0]
		}
		if name != "" {
			return nil, loadErr(path, spec, name, err)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &session{path: path, spec: spec, coll: coll, ncpu: ncpu, trace: trace, closeTrace: func() {}}, nil
}

func (s *session) close() {
	s.coll.Close()
	s.closeTrace()
}

// sessionFlags are the flags of the commands that open a session: JSON
// output and where trace output goes.
type sessionFlags struct {
	js    *jsonOutput
	trace *string
	// engine runs the session's programs (the default: the JIT).
	engine bpfvm.Engine
}

func addSessionFlags(fs *flag.FlagSet) sessionFlags {
	return sessionFlags{
		js:    addJSONFlags(fs, true),
		trace: fs.String("trace", "-", "where bpf_trace_printk output goes, as trace_pipe shows it: - for stderr, a file, or none"),
	}
}

// start opens a session for a command's output: text on stdout, or JSON
// into a writer on it, and trace output where the flags say.
func (f sessionFlags) start(path string, progs, maybe []string, stdout, stderr io.Writer) (*session, error) {
	traceOut, closeTrace, err := openTrace(*f.trace, stderr)
	if err != nil {
		return nil, err
	}
	s, err := openSession(path, progs, maybe, f.engine, traceOut)
	if err != nil {
		closeTrace()
		return nil, err
	}
	s.out, s.closeTrace = stdout, closeTrace
	if f.js.enabled() {
		s.jw = f.js.writer(stdout)
	}
	return s, nil
}

// runMap is bpftool's map command on the maps of an object as loaded
// (initial values from the ELF: .data, .rodata, array contents).
func runMap(args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("map", stderr)
	flags := addSessionFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: bpfvm map { dump | lookup | update | delete | getnext } FILE.o [name] MAP [key [hex] BYTES] [value [hex] BYTES] [any | noexist | exist]`)
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usageErr("want a subcommand and an object file")
	}
	sub, path := pos[0], pos[1]
	if !contains(mapSubcommands, sub) {
		return usageErr("unknown map subcommand %q (want %s)", sub, strings.Join(mapSubcommands, ", "))
	}
	s, err := flags.start(path, nil, valueNames(pos[2:]), stdout, stderr)
	if err != nil {
		return err
	}
	defer s.close()
	err = s.mapCommand(append([]string{sub}, pos[2:]...))
	if s.jw != nil && (err == nil || errors.Is(err, errNotFound)) {
		if ferr := s.jw.flush(); ferr != nil {
			return ferr
		}
	}
	return err
}

// mapSubcommands are the map commands, as bpftool's.
var mapSubcommands = []string{"dump", "lookup", "update", "delete", "getnext", "show", "list", "load"}

// errNotFound is a lookup or getnext that found no element: the output
// says so, and the status is 1, as bpftool's.
var errNotFound = exitError(1)

// mapCommand runs one map subcommand: dump, show, lookup, update, delete
// or getnext, then the map and its arguments.
func (s *session) mapCommand(args []string) error {
	if len(args) == 0 {
		return usageErr("map: want a subcommand")
	}
	sub, args := args[0], args[1:]
	if !contains(mapSubcommands, sub) {
		return usageErr("unknown map subcommand %q (want %s)", sub, strings.Join(mapSubcommands, ", "))
	}
	if sub == "show" || sub == "list" {
		return s.mapShow(args)
	}
	m, spec, args, err := s.mapRef(args)
	if err != nil {
		return err
	}
	switch sub {
	case "dump":
		if len(args) != 0 {
			return usageErr("map dump: unexpected %q", args[0])
		}
		return s.mapDump(m, spec)
	case "lookup":
		e, err := parseElem(args, m, true, false, false)
		if err != nil {
			return err
		}
		return s.mapLookup(m, spec, e.key)
	case "update":
		args, err := s.valueRefs(m, args)
		if err != nil {
			return err
		}
		e, err := parseElem(args, m, true, true, true)
		if err != nil {
			return err
		}
		value := any(e.value)
		if isPerCPU(m.Type()) {
			// As bpftool: the value goes to every CPU.
			vals := make([][]byte, s.ncpu)
			for i := range vals {
				vals[i] = e.value
			}
			value = vals
		}
		if err := m.Update(e.key, value, e.flags); err != nil {
			return fmt.Errorf("update failed: %s", strerror(err))
		}
		if s.jw != nil {
			s.jw.raw("null")
		}
		return nil
	case "delete":
		e, err := parseElem(args, m, true, false, false)
		if err != nil {
			return err
		}
		if err := m.Delete(e.key); err != nil {
			return fmt.Errorf("delete failed: %s", strerror(err))
		}
		if s.jw != nil {
			s.jw.raw("null")
		}
		return nil
	case "load":
		// load [file] FILE: the elements of a bpftool -j map dump.
		if len(args) > 0 && args[0] == "file" {
			args = args[1:]
		}
		if len(args) != 1 {
			return usageErr("map load: want one JSON file (bpftool -j map dump's output)")
		}
		n, err := s.mapLoad(m, args[0])
		if err != nil {
			return err
		}
		if s.jw != nil {
			s.jw.startObject()
			s.jw.name("updated")
			s.jw.int(int64(n))
			s.jw.endObject()
		} else {
			fmt.Fprintf(s.out, "Updated %d element%s\n", n, map[bool]string{true: "", false: "s"}[n == 1])
		}
		return nil
	case "getnext":
		var key []byte
		if len(args) > 0 {
			e, err := parseElem(args, m, true, false, false)
			if err != nil {
				return err
			}
			key = e.key
		}
		next := make([]byte, m.KeySize())
		var kArg any
		if key != nil {
			kArg = key
		}
		if err := m.NextKey(kArg, next); err != nil {
			return fmt.Errorf("can't get next key: %s", strerror(err))
		}
		if s.jw != nil {
			s.jw.startObject()
			s.jw.name("key")
			if key != nil {
				s.jw.hexBytes(key)
			} else {
				s.jw.raw("null")
			}
			s.jw.name("next_key")
			s.jw.hexBytes(next)
			s.jw.endObject()
			return nil
		}
		if key != nil {
			fmt.Fprintf(s.out, "key:\n%s\n", fprintHex(key))
		} else {
			fmt.Fprintln(s.out, "key: None")
		}
		fmt.Fprintf(s.out, "next key:\n%s\n", fprintHex(next))
		return nil
	}
	return usageErr("unknown map subcommand %q", sub)
}

// jsonElem is an element as bpftool -j map dump writes it: key and value
// as arrays of bytes ("0x01" strings or numbers), per-CPU values as
// {"cpu", "value"} objects.
type jsonElem struct {
	Key    []jsonByte `json:"key"`
	Value  []jsonByte `json:"value"`
	Values []struct {
		CPU   int        `json:"cpu"`
		Value []jsonByte `json:"value"`
	} `json:"values"`
}

// jsonByte is a byte written as "0x1f", "31" or 31.
type jsonByte byte

func (b *jsonByte) UnmarshalJSON(data []byte) error {
	s := strings.Trim(string(data), `"`)
	v, err := strconv.ParseUint(s, 0, 8)
	if err != nil {
		return fmt.Errorf("byte %s: %w", data, err)
	}
	*b = jsonByte(v)
	return nil
}

func bytesOf(b []jsonByte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = byte(c)
	}
	return out
}

// mapLoad updates a map with the elements of a JSON file in bpftool -j
// map dump's shape, so that a dump taken from the kernel (or from bpfvm)
// fills the map again; it returns how many it updated.
func (s *session) mapLoad(m *bpfvm.Map, path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var elems []jsonElem
	if err := json.Unmarshal(b, &elems); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	for i, e := range elems {
		key := bytesOf(e.Key)
		if len(key) != int(m.KeySize()) {
			return i, fmt.Errorf("%s: element %d: key of %d bytes, the map's are %d", path, i, len(key), m.KeySize())
		}
		var value any
		switch {
		case e.Values != nil:
			if !isPerCPU(m.Type()) {
				return i, fmt.Errorf("%s: element %d: per-CPU values for a %s map", path, i, maps.Type(m.Type()).String())
			}
			vals := make([][]byte, s.ncpu)
			for _, v := range e.Values {
				if v.CPU < 0 || v.CPU >= s.ncpu {
					return i, fmt.Errorf("%s: element %d: CPU %d of %d", path, i, v.CPU, s.ncpu)
				}
				vals[v.CPU] = bytesOf(v.Value)
			}
			for c := range vals {
				if len(vals[c]) != int(m.ValueSize()) {
					return i, fmt.Errorf("%s: element %d: CPU %d: value of %d bytes, the map's are %d", path, i, c, len(vals[c]), m.ValueSize())
				}
			}
			value = vals
		default:
			v := bytesOf(e.Value)
			if len(v) != int(m.ValueSize()) {
				return i, fmt.Errorf("%s: element %d: value of %d bytes, the map's are %d", path, i, len(v), m.ValueSize())
			}
			value = v
			if isPerCPU(m.Type()) {
				vals := make([][]byte, s.ncpu)
				for c := range vals {
					vals[c] = v
				}
				value = vals
			}
		}
		if err := m.Update(key, value, bpfvm.UpdateAny); err != nil {
			return i, fmt.Errorf("%s: element %d: update failed: %s", path, i, strerror(err))
		}
	}
	return len(elems), nil
}

// mapRef takes a map reference: "name MAP" as bpftool's, or just MAP.
func (s *session) mapRef(args []string) (*bpfvm.Map, *ebpf.MapSpec, []string, error) {
	if len(args) > 0 && args[0] == "name" {
		args = args[1:]
	}
	if len(args) == 0 {
		return nil, nil, nil, usageErr("map: want a map name; maps: %s", strings.Join(s.mapNames(), ", "))
	}
	m := s.coll.Maps[args[0]]
	if m == nil {
		return nil, nil, nil, usageErr("no map %q in %s; maps: %s", args[0], s.path, strings.Join(s.mapNames(), ", "))
	}
	return m, s.spec.Maps[args[0]], args[1:], nil
}

func (s *session) mapNames() []string {
	var names []string
	for n := range s.coll.Maps {
		names = append(names, n)
	}
	return sorted(names)
}

// mapShow lists the maps as bpftool map show does: "ID: TYPE  name NAME
// flags 0xF" then key, value and max entries.
func (s *session) mapShow(args []string) error {
	names := s.mapNames()
	if len(args) > 0 {
		_, _, rest, err := s.mapRef(args)
		if err != nil {
			return err
		}
		if len(rest) > 0 {
			return usageErr("map show: unexpected %q", rest[0])
		}
		names = []string{args[len(args)-1]}
	}
	if s.jw != nil && len(args) == 0 {
		s.jw.startArray()
	}
	for _, n := range names {
		m := s.coll.Maps[n]
		if s.jw != nil {
			s.jw.startObject()
			s.jw.name("id")
			s.jw.uint(uint64(m.ID()))
			s.jw.name("type")
			s.jw.str(maps.Type(m.Type()).String())
			s.jw.name("name")
			s.jw.str(n)
			s.jw.name("flags")
			s.jw.uint(uint64(m.Flags()))
			s.jw.name("bytes_key")
			s.jw.uint(uint64(m.KeySize()))
			s.jw.name("bytes_value")
			s.jw.uint(uint64(m.ValueSize()))
			s.jw.name("max_entries")
			s.jw.uint(uint64(m.MaxEntries()))
			s.jw.name("frozen")
			s.jw.uint(b2u(m.IsFrozen()))
			s.jw.endObject()
			continue
		}
		fmt.Fprintf(s.out, "%d: %s  name %s  flags 0x%x\n", m.ID(), maps.Type(m.Type()).String(), n, m.Flags())
		fmt.Fprintf(s.out, "\tkey %dB  value %dB  max_entries %d  memlock 0B\n", m.KeySize(), m.ValueSize(), m.MaxEntries())
		if m.IsFrozen() {
			fmt.Fprintln(s.out, "\tfrozen")
		}
	}
	if s.jw != nil && len(args) == 0 {
		s.jw.endArray()
	}
	return nil
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// entry is a map element read for printing: one value, or one per CPU.
type entry struct {
	key    []byte
	value  []byte
	values [][]byte // per-CPU maps
}

// read looks an element up; ok is false when it does not exist.
func (s *session) read(m *bpfvm.Map, key []byte) (entry, error) {
	e := entry{key: key}
	var err error
	if isPerCPU(m.Type()) {
		err = m.Lookup(key, &e.values)
	} else {
		e.value = make([]byte, m.ValueSize())
		err = m.Lookup(key, e.value)
	}
	return e, err
}

// mapDump prints every element, as bpftool map dump: formatted by the
// key's and value's BTF when the map has it (a JSON-like layout even
// without -j), as hex bytes otherwise, with the count at the end.
func (s *session) mapDump(m *bpfvm.Map, spec *ebpf.MapSpec) error {
	btfOut := s.jw
	plainBTF := false
	if btfOut == nil && hasBTF(spec.Value) {
		btfOut, plainBTF = newJSONWriter(s.out, true), true
	}
	if btfOut != nil {
		btfOut.startArray()
	}
	n := 0
	var prev any
	for {
		key := make([]byte, m.KeySize())
		if err := m.NextKey(prev, key); err != nil {
			if !errors.Is(err, maps.ErrKeyNotExist) && m.KeySize() > 0 {
				return fmt.Errorf("map %s: %s", m.Name(), strerror(err))
			}
			break
		}
		prev = key
		e, err := s.read(m, key)
		if err != nil {
			// Empty slots of program arrays and maps of maps are not
			// elements, as bpftool skips them.
			if errors.Is(err, maps.ErrKeyNotExist) && (isMapOfMaps(m.Type()) || m.Type() == ebpf.ProgramArray) {
				continue
			}
			s.printEntryError(btfOut, m, key, err)
			continue
		}
		n++
		switch {
		case s.jw != nil:
			s.printEntryJSON(s.jw, m, spec, e)
		case plainBTF:
			if err := s.dumpBTF(btfOut, m, spec, e, true); err != nil {
				return fmt.Errorf("map %s: %w", m.Name(), err)
			}
		default:
			s.printEntryPlain(m, e)
		}
	}
	if btfOut != nil {
		btfOut.endArray()
		if plainBTF {
			return btfOut.flush()
		}
		return nil
	}
	plural := "s"
	if n == 1 {
		plural = ""
	}
	fmt.Fprintf(s.out, "Found %d element%s\n", n, plural)
	return nil
}

// mapLookup prints one element, as bpftool map lookup.
func (s *session) mapLookup(m *bpfvm.Map, spec *ebpf.MapSpec, key []byte) error {
	e, err := s.read(m, key)
	switch {
	case errors.Is(err, maps.ErrKeyNotExist):
		if s.jw != nil {
			s.jw.raw("null")
		} else {
			fmt.Fprintf(s.out, "key:\n%s\n\nNot found\n", fprintHex(key))
		}
		return errNotFound
	case err != nil:
		return fmt.Errorf("lookup failed: %s", strerror(err))
	case s.jw != nil:
		s.printEntryJSON(s.jw, m, spec, e)
	case hasBTF(spec.Value):
		jw := newJSONWriter(s.out, true)
		if err := s.dumpBTF(jw, m, spec, e, true); err != nil {
			return fmt.Errorf("map %s: %w", m.Name(), err)
		}
		return jw.flush()
	default:
		s.printEntryPlain(m, e)
	}
	return nil
}

// dumpBTF writes an element formatted by BTF: {"key": ..., "value": ...},
// or "values" with one {"cpu", "value"} per CPU (bpftool's do_dump_btf).
func (s *session) dumpBTF(j *jsonWriter, m *bpfvm.Map, spec *ebpf.MapSpec, e entry, plain bool) error {
	j.startObject()
	if hasBTF(spec.Key) {
		j.name("key")
		if err := btfDump(j, spec.Key, e.key, plain); err != nil {
			return err
		}
	}
	value := func(v []byte) error { return btfDump(j, spec.Value, v, plain) }
	if e.values == nil {
		j.name("value")
		if err := value(e.value); err != nil {
			return err
		}
	} else if err := writeValues(j, e.values, value); err != nil {
		return err
	}
	j.endObject()
	return nil
}

// writeValues writes a per-CPU element's "values": [{"cpu": N, "value":
// ...}, ...], each value as value writes it.
func writeValues(j *jsonWriter, values [][]byte, value func([]byte) error) error {
	j.name("values")
	j.startArray()
	for cpu, v := range values {
		j.startObject()
		j.name("cpu")
		j.int(int64(cpu))
		j.name("value")
		if err := value(v); err != nil {
			return err
		}
		j.endObject()
	}
	j.endArray()
	return nil
}

// printEntryJSON writes an element as bpftool -j: hex bytes, and the BTF
// formatting under "formatted".
func (s *session) printEntryJSON(j *jsonWriter, m *bpfvm.Map, spec *ebpf.MapSpec, e entry) {
	j.startObject()
	j.name("key")
	j.hexBytes(e.key)
	if e.values == nil {
		j.name("value")
		j.hexBytes(e.value)
		if isMapOfMaps(m.Type()) && len(e.value) >= 4 {
			j.name("inner_map_id")
			j.uint(readUint(e.value[:4]))
		}
	} else {
		writeValues(j, e.values, func(v []byte) error { j.hexBytes(v); return nil })
	}
	if hasBTF(spec.Value) {
		j.name("formatted")
		// A value BTF cannot print is left as it stands, as bpftool's.
		s.dumpBTF(j, m, spec, e, false)
	}
	j.endObject()
}

// printEntryPlain prints an element as bpftool without BTF: "key:" and
// "value:" with hex bytes, on one line when both are short.
func (s *session) printEntryPlain(m *bpfvm.Map, e entry) {
	ks, vs := len(e.key), int(m.ValueSize())
	var b strings.Builder
	if e.values == nil {
		breakNames := ks > 16 || vs > 16
		single := ks+vs <= 24 && !breakNames
		sep := " "
		if breakNames {
			sep = "\n"
		}
		if ks > 0 {
			b.WriteString("key:" + sep + fprintHex(e.key))
			if single {
				b.WriteString("  ")
			} else {
				b.WriteString("\n")
			}
		}
		if vs > 0 {
			if isMapOfMaps(m.Type()) {
				fmt.Fprintf(&b, "inner_map_id:%s%d ", sep, readUint(e.value[:4]))
			} else {
				b.WriteString("value:" + sep + fprintHex(e.value))
			}
		}
		b.WriteString("\n")
	} else {
		if ks > 0 {
			b.WriteString("key:\n" + fprintHex(e.key) + "\n")
		}
		sep := " "
		if vs > 16 {
			sep = "\n"
		}
		for cpu, v := range e.values {
			fmt.Fprintf(&b, "value (CPU %02d):%s%s\n", cpu, sep, fprintHex(v))
		}
	}
	io.WriteString(s.out, b.String())
}

// printEntryError reports an element that could not be read, as bpftool.
func (s *session) printEntryError(j *jsonWriter, m *bpfvm.Map, key []byte, err error) {
	if s.jw != nil {
		j.startObject()
		j.name("key")
		j.hexBytes(key)
		j.name("value")
		j.startObject()
		j.name("error")
		j.str(strerror(err))
		j.endObject()
		j.endObject()
		return
	}
	msg := strerror(err)
	if errors.Is(err, maps.ErrKeyNotExist) {
		msg = "<no entry>"
	}
	breakNames := len(key) > 16 || len(msg) > 16
	single := len(key)+len(msg) <= 24 && !breakNames
	sep := " "
	if breakNames {
		sep = "\n"
	}
	mid := "\n"
	if single {
		mid = "  "
	}
	fmt.Fprintf(s.out, "key:%s%s%svalue:%s%s\n", sep, fprintHex(key), mid, sep, msg)
}

// fprintHex formats bytes as bpftool's fprint_hex: two hex digits each,
// a space between, two after every 8 and a newline after every 16.
func fprintHex(b []byte) string {
	var s strings.Builder
	for i, c := range b {
		switch {
		case i == 0:
		case i%16 == 0:
			s.WriteByte('\n')
		case i%8 == 0:
			s.WriteString("  ")
		default:
			s.WriteByte(' ')
		}
		s.WriteString(hex2(c))
	}
	return s.String()
}

// elem is a parsed key, value and update flags.
type elem struct {
	key, value []byte
	flags      bpfvm.MapUpdateFlags
}

// parseElem parses bpftool's "key [hex] BYTES... value [hex] BYTES...
// [any|noexist|exist]", in any order, each part at most once; wantKey and
// wantValue say which parts the command takes.
func parseElem(args []string, m *bpfvm.Map, wantKey, wantValue, wantFlags bool) (elem, error) {
	var e elem
	gotKey, gotValue, gotFlags := false, false, false
	for len(args) > 0 {
		var err error
		switch args[0] {
		case "key":
			if !wantKey || gotKey {
				return e, usageErr("duplicate key")
			}
			e.key, args, err = parseBytes(args[1:], "key", int(m.KeySize()))
			gotKey = true
		case "value":
			if !wantValue {
				return e, usageErr("unnecessary value")
			}
			if gotValue {
				return e, usageErr("duplicate value")
			}
			e.value, args, err = parseBytes(args[1:], "value", int(m.ValueSize()))
			gotValue = true
		case "any", "noexist", "exist":
			if !wantFlags || gotFlags {
				return e, usageErr("flags specified multiple times: %s", args[0])
			}
			e.flags = map[string]bpfvm.MapUpdateFlags{"any": bpfvm.UpdateAny, "noexist": bpfvm.UpdateNoExist, "exist": bpfvm.UpdateExist}[args[0]]
			args, gotFlags = args[1:], true
		default:
			return e, usageErr("expected key or value, got: %s", args[0])
		}
		if err != nil {
			return e, err
		}
	}
	switch {
	case wantKey && !gotKey && m.KeySize() > 0:
		return e, usageErr("did not find key")
	case wantValue && !gotValue:
		return e, usageErr("did not find value")
	}
	return e, nil
}

// parseBytes takes n bytes, each a C integer (0x10, 020, 16) or, after
// "hex", two hex digits with or without 0x, as bpftool's parse_bytes.
func parseBytes(args []string, name string, n int) ([]byte, []string, error) {
	base := 0
	if len(args) > 0 && args[0] == "hex" {
		base, args = 16, args[1:]
	}
	out := make([]byte, 0, n)
	for len(out) < n && len(args) > 0 {
		s := args[0]
		if base == 16 {
			s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
		}
		v, err := strconv.ParseUint(s, base, 8)
		if err != nil {
			return nil, nil, usageErr("error parsing byte: %s", args[0])
		}
		out = append(out, byte(v))
		args = args[1:]
	}
	if len(out) != n {
		return nil, nil, usageErr("%s expected %d bytes got %d", name, n, len(out))
	}
	return out, args, nil
}

func isPerCPU(t ebpf.MapType) bool {
	switch t {
	case ebpf.PerCPUHash, ebpf.PerCPUArray, ebpf.LRUCPUHash, ebpf.PerCPUCGroupStorage:
		return true
	}
	return false
}

func isMapOfMaps(t ebpf.MapType) bool { return t == ebpf.ArrayOfMaps || t == ebpf.HashOfMaps }

// valueNames are the names in "value name NAME" of map update arguments:
// programs among them are loaded, for program arrays to hold.
func valueNames(args []string) []string {
	var names []string
	for i := 0; i+2 < len(args); i++ {
		if args[i] == "value" && args[i+1] == "name" {
			names = append(names, args[i+2])
		}
	}
	return names
}

// valueRefs turns the value of a map update into bytes where bpftool
// takes a reference: a map for maps of maps ("value id N", "name NAME" or
// "pinned PATH"), a program for program arrays (also "tag TAG"). Maps of
// maps and program arrays hold ids here, as the kernel's hold what the
// file descriptors refer to; bpfvm has no bpffs, so nothing is pinned.
func (s *session) valueRefs(m *bpfvm.Map, args []string) ([]string, error) {
	progs := m.Type() == ebpf.ProgramArray
	if !progs && !isMapOfMaps(m.Type()) {
		return args, nil
	}
	i := slices.Index(args, "value")
	if i < 0 {
		return args, nil // parseElem says what is missing
	}
	if i+1 >= len(args) {
		if progs {
			return nil, usageErr("not enough value arguments for map of progs")
		}
		return nil, usageErr("not enough value arguments for map in map")
	}
	if m.ValueSize() != 4 {
		return nil, fmt.Errorf("value smaller than 4B for map in map?")
	}
	kinds := "'id', 'name' or 'pinned'"
	if progs {
		kinds = "'id', 'tag', 'name' or 'pinned'"
	}
	kind := args[i+1]
	if kind != "id" && kind != "name" && kind != "pinned" && !(progs && kind == "tag") {
		return nil, usageErr("expected %s, got: '%s'?", kinds, kind)
	}
	if i+2 >= len(args) {
		return nil, usageErr("expected %s", kinds)
	}
	ref := args[i+2]
	var id uint32
	switch {
	case kind == "pinned":
		return nil, fmt.Errorf("bpf obj get (%s): %s: bpfvm has no bpffs; refer to it by name or id", ref, errnoText(syscall.ENOENT))
	case kind == "tag":
		return nil, fmt.Errorf("no program with tag %s: bpfvm has no program tags; refer to it by name or id", ref)
	case kind == "id":
		n, err := strconv.ParseUint(ref, 0, 32)
		if err != nil {
			return nil, usageErr("can't parse %s as ID", ref)
		}
		id = uint32(n)
		found := false
		if progs {
			for _, p := range s.coll.Programs {
				found = found || p.ID() == id
			}
		} else {
			for _, mm := range s.coll.Maps {
				found = found || mm.ID() == id
			}
		}
		if !found {
			what := "get map by id"
			if progs {
				what = "get by id"
			}
			return nil, fmt.Errorf("%s (%d): %s", what, id, errnoText(syscall.ENOENT))
		}
	case progs:
		p := s.coll.Programs[ref]
		if p == nil {
			return nil, fmt.Errorf("can't find prog %s in %s", ref, s.path)
		}
		id = p.ID()
	default:
		mm := s.coll.Maps[ref]
		if mm == nil {
			return nil, fmt.Errorf("can't find map %s in %s", ref, s.path)
		}
		id = mm.ID()
	}
	out := slices.Clone(args[:i+1])
	for _, b := range binary.NativeEndian.AppendUint32(nil, id) {
		out = append(out, strconv.Itoa(int(b)))
	}
	return append(out, args[i+3:]...), nil
}

// strerror names a map error as the C library's strerror names its errno,
// as bpftool prints it.
func strerror(err error) string {
	for _, e := range []struct {
		err   error
		errno syscall.Errno
	}{
		{maps.ErrKeyNotExist, syscall.ENOENT}, {maps.ErrKeyExist, syscall.EEXIST}, {maps.ErrFull, syscall.E2BIG},
		{maps.ErrNoSpace, syscall.ENOSPC}, {maps.ErrInvalid, syscall.EINVAL}, {maps.ErrNotSupported, syscall.EOPNOTSUPP},
		{maps.ErrPermission, syscall.EPERM}, {maps.ErrBusy, syscall.EBUSY}, {maps.ErrAgain, syscall.EAGAIN},
	} {
		if errors.Is(err, e.err) {
			return errnoText(e.errno)
		}
	}
	return err.Error()
}

// errnoText is an errno as the C library's strerror says it.
func errnoText(e syscall.Errno) string {
	msg := e.Error()
	return strings.ToUpper(msg[:1]) + msg[1:]
}
