package loader

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// Map flags from linux/bpf.h.
const (
	flagNoPrealloc = 1 << 0 // BPF_F_NO_PREALLOC
	flagRdonlyProg = 1 << 7 // BPF_F_RDONLY_PROG
)

func testdata(name string) string { return filepath.Join("..", "testdata", name) }

func mustLoad(t *testing.T, name string) *ebpf.CollectionSpec {
	t.Helper()
	spec, err := LoadCollectionSpec(testdata(name))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func mustRead(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(testdata(name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// objects lists the compiled corpus.
func objects(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob(testdata("*.o"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no testdata objects (run go generate ./testdata/): %v", err)
	}
	return paths
}

// wantMap is the part of a MapSpec the tests pin down.
type wantMap struct {
	typ                        ebpf.MapType
	key, value, maxEntries, fl uint32
	pinning                    ebpf.PinType
}

func checkMaps(t *testing.T, spec *ebpf.CollectionSpec, want map[string]wantMap) {
	t.Helper()
	for name, w := range want {
		ms := spec.Maps[name]
		if ms == nil {
			t.Errorf("map %s missing", name)
			continue
		}
		got := wantMap{ms.Type, ms.KeySize, ms.ValueSize, ms.MaxEntries, ms.Flags, ms.Pinning}
		if got != w {
			t.Errorf("map %s: got %+v, want %+v", name, got, w)
		}
		if ms.Extra != nil {
			t.Errorf("map %s: Extra left set (%d bytes)", name, ms.Extra.Len())
		}
	}
}

// checkMapLoads asserts every map-load instruction references a MapSpec by
// name in the shape cilium/ebpf uses for BTF maps: LdImmDW with
// src=BPF_PSEUDO_MAP_FD and a zero constant, to be filled in with the fd.
// It returns the referenced map names per program.
func checkMapLoads(t *testing.T, spec *ebpf.CollectionSpec) map[string][]string {
	t.Helper()
	refs := make(map[string][]string)
	for pname, p := range spec.Programs {
		for i, ins := range p.Instructions {
			if !ins.IsLoadFromMap() {
				continue
			}
			ref := ins.Reference()
			if spec.Maps[ref] == nil {
				t.Errorf("%s[%d]: %v references unknown map %q", pname, i, ins, ref)
				continue
			}
			if strings.HasPrefix(ref, ".") {
				continue // data sections are direct value loads
			}
			if ins.Src != asm.PseudoMapFD || ins.Constant != 0 || ins.OpCode != asm.LoadImmOp(asm.DWord) {
				t.Errorf("%s[%d]: %v: want LdImmDW src=%v constant 0", pname, i, ins, asm.PseudoMapFD)
			}
			refs[pname] = append(refs[pname], ref)
		}
	}
	return refs
}

func TestBTFMaps(t *testing.T) {
	spec := mustLoad(t, "btf_maps.o")
	checkMaps(t, spec, map[string]wantMap{
		"counters": {ebpf.Array, 4, 8, 4, 0, ebpf.PinNone},
		"seen":     {ebpf.Hash, 4, 8, 64, 0, ebpf.PinNone},
		"bytes":    {ebpf.PerCPUArray, 4, 8, 1, 0, ebpf.PinNone},
	})
	for _, name := range []string{"counters", "seen", "bytes"} {
		if ms := spec.Maps[name]; ms.Key == nil || ms.Value == nil {
			t.Errorf("map %s: missing key/value BTF", name)
		}
	}

	refs := checkMapLoads(t, spec)
	want := []string{"counters", "bytes", "seen", "seen"}
	if got := refs["btf_maps_entry"]; !slices.Equal(got, want) {
		t.Errorf("map loads: got %v, want %v", got, want)
	}
}

func TestGlobals(t *testing.T) {
	spec := mustLoad(t, "globals.o")

	le64 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	for _, tt := range []struct {
		section  string
		flags    uint32
		contents []byte // nil: don't check
	}{
		{".rodata", flagRdonlyProg, []byte{7, 0, 0, 0, 42, 0, 0, 0}},
		{".data", 0, le64(100)},
		{".bss", 0, nil},
	} {
		t.Run(tt.section, func(t *testing.T) {
			ms := spec.Maps[tt.section]
			if ms == nil {
				t.Fatalf("no MapSpec for %s", tt.section)
			}
			if ms.Type != ebpf.Array || ms.KeySize != 4 || ms.ValueSize != 8 || ms.MaxEntries != 1 {
				t.Errorf("got %v key %d value %d max %d, want a single-entry Array of 8 bytes",
					ms.Type, ms.KeySize, ms.ValueSize, ms.MaxEntries)
			}
			if ms.Flags != tt.flags {
				t.Errorf("flags %#x, want %#x", ms.Flags, tt.flags)
			}
			if tt.contents == nil {
				return
			}
			if len(ms.Contents) != 1 {
				t.Fatalf("%d Contents entries, want 1", len(ms.Contents))
			}
			if got, _ := ms.Contents[0].Value.([]byte); !bytes.Equal(got, tt.contents) {
				t.Errorf("contents %x, want %x", got, tt.contents)
			}
		})
	}

	for _, name := range []string{"step", "magic", "runs", "total"} {
		if spec.Variables[name] == nil {
			t.Errorf("variable %s missing", name)
		}
	}

	// magic is at offset 4 of .rodata: the kernel wants the offset in the
	// upper half of the LdImmDW constant.
	type load struct {
		ref string
		off int64
	}
	var got []load
	for _, ins := range spec.Programs["globals_entry"].Instructions {
		if ins.IsLoadFromMap() {
			if ins.Src != asm.PseudoMapValue {
				t.Errorf("%v: src %v, want %v", ins, ins.Src, asm.PseudoMapValue)
			}
			got = append(got, load{ins.Reference(), ins.Constant >> 32})
		}
	}
	for _, want := range []load{{".bss", 0}, {".data", 0}, {".rodata", 0}, {".rodata", 4}} {
		if !slices.Contains(got, want) {
			t.Errorf("no value load of %s+%d in %v", want.ref, want.off, got)
		}
	}
}

func TestSubprograms(t *testing.T) {
	spec := mustLoad(t, "subprog.o")

	if len(spec.Programs) != 1 {
		t.Errorf("programs %v, want only subprog_entry", slices.Sorted(maps.Keys(spec.Programs)))
	}
	p := spec.Programs["subprog_entry"]
	if p == nil {
		t.Fatal("subprog_entry missing")
	}
	if p.Type != ebpf.XDP {
		t.Errorf("type %v, want XDP", p.Type)
	}

	offsets, err := p.Instructions.SymbolOffsets()
	if err != nil {
		t.Fatal(err)
	}
	if offsets["subprog_entry"] != 0 {
		t.Errorf("entry at %d, want 0", offsets["subprog_entry"])
	}
	for _, fn := range []string{"fill_buf", "sum_bytes", "mix", "scale"} {
		if off, ok := offsets[fn]; !ok || off == 0 {
			t.Errorf("subprogram %s not linked after the entry (offsets %v)", fn, offsets)
		}
	}

	var calls []string
	for _, ins := range p.Instructions {
		if ins.IsFunctionCall() {
			calls = append(calls, ins.Reference())
		}
	}
	// Entry calls fill_buf, sum_bytes and mix; mix calls sum_bytes and scale.
	for _, fn := range []string{"fill_buf", "sum_bytes", "mix", "scale"} {
		if !slices.Contains(calls, fn) {
			t.Errorf("no call to %s in %v", fn, calls)
		}
	}
}

func TestLegacyMaps(t *testing.T) {
	for _, tt := range []struct {
		file  string
		maps  map[string]wantMap
		loads map[string][]string
	}{
		{
			file: "legacy_maps",
			maps: map[string]wantMap{
				"proto_count": {ebpf.Hash, 4, 8, 256, flagNoPrealloc, ebpf.PinNone},
				"totals":      {ebpf.Array, 4, 8, 2, 0, ebpf.PinNone},
				"scratch":     {ebpf.PerCPUArray, 4, 16, 1, 0, ebpf.PinNone},
			},
			loads: map[string][]string{
				"legacy_maps_entry": {"proto_count", "proto_count", "totals", "totals"},
			},
		},
		{
			file: "legacy_elf_maps",
			maps: map[string]wantMap{
				"pkt_count":  {ebpf.Array, 4, 8, 1, 0, ebpf.PinByName},
				"class_map":  {ebpf.Hash, 4, 4, 8, flagNoPrealloc, ebpf.PinNone},
				"map_in_map": {ebpf.ArrayOfMaps, 4, 4, 1, 0, ebpf.PinNone},
			},
			loads: map[string][]string{
				"cls_entry": {"pkt_count", "class_map"},
				"act_entry": {"pkt_count"},
			},
		},
		{
			// Symbols without st_size: the entry size comes from the section.
			file: "legacy_asm_maps",
			maps: map[string]wantMap{
				"counts": {ebpf.Array, 4, 8, 4, 0, ebpf.PinNone},
				"limits": {ebpf.Hash, 4, 4, 16, flagNoPrealloc, ebpf.PinNone},
			},
			loads: map[string][]string{
				"legacy_asm_entry": {"counts", "limits"},
			},
		},
		{
			// 28-byte samples/bpf definitions with zero extra fields.
			file: "legacy_padded_maps",
			maps: map[string]wantMap{
				"hits": {ebpf.PerCPUHash, 4, 8, 32, 0, ebpf.PinNone},
				"last": {ebpf.Array, 4, 4, 1, 0, ebpf.PinNone},
			},
			loads: map[string][]string{
				"legacy_padded_entry": {"last", "hits", "hits"},
			},
		},
		{
			// A BTF map and a legacy one in one object.
			file: "legacy_mixed_maps",
			maps: map[string]wantMap{
				"btf_counts": {ebpf.Array, 4, 8, 1, 0, ebpf.PinNone},
				"old_counts": {ebpf.Array, 4, 8, 1, 0, ebpf.PinNone},
			},
			loads: map[string][]string{
				"legacy_mixed_entry": {"btf_counts", "old_counts"},
			},
		},
		{
			// iproute2's bpf_elf_map at 28 bytes (older Cilium: id and
			// pinning) and 32, program symbols without size or type.
			file: "legacy_old_style",
			maps: map[string]wantMap{
				"counts": {ebpf.Array, 4, 8, 4, 0, ebpf.PinNone},
				"totals": {ebpf.Hash, 4, 8, 8, 0, ebpf.PinByName},
				"mid":    {ebpf.Array, 4, 4, 2, 0, ebpf.PinNone},
			},
			loads: map[string][]string{
				"xdp_count": {"counts"},
				"xdp_drop":  nil,
				"sock_mid":  {"mid"},
				"kp":        nil,
			},
		},
	} {
		// Both byte orders: the -eb objects are big-endian.
		for _, file := range []string{tt.file + ".o", tt.file + "-eb.o"} {
			t.Run(file, func(t *testing.T) {
				spec := mustLoad(t, file)
				if len(spec.Maps) != len(tt.maps) {
					t.Errorf("maps %v, want %d", slices.Sorted(maps.Keys(spec.Maps)), len(tt.maps))
				}
				checkMaps(t, spec, tt.maps)

				refs := checkMapLoads(t, spec)
				for prog, want := range tt.loads {
					if spec.Programs[prog] == nil {
						t.Errorf("program %s missing", prog)
					}
					if got := refs[prog]; !slices.Equal(got, want) {
						t.Errorf("%s map loads: got %v, want %v", prog, got, want)
					}
				}
			})
		}
	}
}

func TestLegacyElfMapInMap(t *testing.T) {
	for _, file := range []string{"legacy_elf_maps.o", "legacy_elf_maps-eb.o"} {
		t.Run(file, func(t *testing.T) { testLegacyElfMapInMap(t, mustLoad(t, file)) })
	}
}

func testLegacyElfMapInMap(t *testing.T, spec *ebpf.CollectionSpec) {
	outer := spec.Maps["map_in_map"]

	// inner_id 2 names class_map (id 2) as the template...
	inner := outer.InnerMap
	if inner == nil {
		t.Fatal("map_in_map has no InnerMap")
	}
	if inner.Type != ebpf.Hash || inner.KeySize != 4 || inner.ValueSize != 4 || inner.MaxEntries != 8 ||
		inner.Flags != flagNoPrealloc || inner.Pinning != ebpf.PinNone {
		t.Errorf("InnerMap %v (pinning %v), want class_map's shape unpinned", inner, inner.Pinning)
	}
	if inner == spec.Maps["class_map"] {
		t.Error("InnerMap aliases class_map's MapSpec, want a copy")
	}

	// ...and tc stores class_map at its inner_idx (0).
	want := []ebpf.MapKV{{Key: uint32(0), Value: "class_map"}}
	if !slices.Equal(outer.Contents, want) {
		t.Errorf("Contents %v, want %v", outer.Contents, want)
	}
}

func TestPanicRecovered(t *testing.T) {
	_, err := LoadCollectionSpecFromReader(panicReader{}, "panic.o")
	var pe *panicError
	if !errors.As(err, &pe) {
		t.Fatalf("got %v, want a recovered panic", err)
	}
	checkError(t, err, "panic.o")
	if want := ownPackage + ".panicReader.ReadAt"; pe.function != want {
		t.Errorf("panic attributed to %s, want %s", pe.function, want)
	}
}

// panicReader stands in for a dependency that panics on bad input.
type panicReader struct{}

func (panicReader) ReadAt([]byte, int64) (int, error) { panic("boom") }

// TestMatchesCilium checks the wrapper changes nothing cilium/ebpf already
// gets right: programs are identical, and so are maps apart from the legacy
// fix-ups.
func TestMatchesCilium(t *testing.T) {
	for _, path := range objects(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			theirs, err := ebpf.LoadCollectionSpec(path)
			if err != nil {
				t.Skipf("cilium/ebpf alone: %v", err)
			}
			ours, err := LoadCollectionSpec(path)
			if err != nil {
				t.Fatal(err)
			}

			if a, b := slices.Sorted(maps.Keys(ours.Programs)), slices.Sorted(maps.Keys(theirs.Programs)); !slices.Equal(a, b) {
				t.Fatalf("programs %v, cilium/ebpf %v", a, b)
			}
			for name, p := range ours.Programs {
				insns := p.Instructions
				if n := len(theirs.Programs[name].Instructions); exceptionCallbackName(p) != "" && len(insns) > n {
					// The exception callback, which cilium/ebpf leaves out.
					insns = insns[:n]
				}
				a, b := fmt.Sprintf("%v", insns), fmt.Sprintf("%v", theirs.Programs[name].Instructions)
				if a != b {
					t.Errorf("program %s differs:\n%s\ncilium/ebpf:\n%s", name, a, b)
				}
			}

			for name, ms := range ours.Maps {
				tm := theirs.Maps[name]
				if tm == nil {
					t.Errorf("map %s not in cilium/ebpf's spec", name)
					continue
				}
				if ms.Type != tm.Type || ms.KeySize != tm.KeySize || ms.ValueSize != tm.ValueSize ||
					ms.MaxEntries != tm.MaxEntries || ms.Flags != tm.Flags {
					t.Errorf("map %s: %v, cilium/ebpf %v", name, ms, tm)
				}
			}
		})
	}
}

func TestLegacyMapErrors(t *testing.T) {
	// sectionOffset returns the file offset of a section's first byte.
	sectionOffset := func(t *testing.T, data []byte, name string) int {
		t.Helper()
		f, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		sec := f.Section(name)
		if sec == nil {
			t.Fatalf("no section %s", name)
		}
		return int(sec.Offset)
	}
	put32 := func(data []byte, off int, v uint32) { binary.LittleEndian.PutUint32(data[off:], v) }

	for _, tt := range []struct {
		name   string
		file   string
		mutate func(t *testing.T, data []byte)
		want   string
	}{
		{
			name: "short entries",
			file: "invalid_legacy_maps.o",
			want: `section maps: entry "short_map" is 12 bytes, want 20 (bpf_map_def) to 36 (bpf_elf_map)`,
		},
		{
			name: "dangling inner_id",
			file: "legacy_elf_maps.o",
			mutate: func(t *testing.T, data []byte) {
				// class_map is the second entry; give it id 3.
				put32(data, sectionOffset(t, data, "maps")+36+20, 3)
			},
			want: "map map_in_map: inner_id 2 matches no map's id",
		},
		{
			name: "symbol size disagrees with the section",
			file: "legacy_maps.o",
			mutate: func(t *testing.T, data []byte) {
				setSymbolSize(t, data, "totals", 12)
			},
			want: `section maps: entry "totals" is 12 bytes, other entries are 20`,
		},
		{
			name: "misaligned symbol",
			file: "legacy_asm_maps.o",
			mutate: func(t *testing.T, data []byte) {
				setSymbolValue(t, data, "limits", 8)
			},
			want: `section maps: entry "limits" at offset 8 is not on a 20-byte boundary`,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data := mustRead(t, tt.file)
			if tt.mutate != nil {
				tt.mutate(t, data)
			}
			_, err := LoadCollectionSpecFromReader(bytes.NewReader(data), tt.file)
			if err == nil {
				t.Fatal("no error")
			}
			want := "load " + tt.file + ": " + tt.want
			if err.Error() != want {
				t.Errorf("error:\n got %s\nwant %s", err, want)
			}
		})
	}
}

// TestLegacyMapTails checks how the fields after a 28-byte definition's
// first 20 bytes read: as iproute2's bpf_elf_map (id, pinning), or, with
// BPF_F_NUMA_NODE, as samples/bpf's bpf_map_def (inner_map_idx, numa_node,
// ignored: bpfvm has one node).
func TestLegacyMapTails(t *testing.T) {
	for _, tt := range []struct {
		name          string
		flags, f5, f6 uint32
		wantFlags     uint32
		wantPin       ebpf.PinType
	}{
		{"zero", 0, 0, 0, 0, ebpf.PinNone},
		{"iproute2 PIN_GLOBAL_NS", 0, 7, 2, 0, ebpf.PinByName},
		{"iproute2 PIN_OBJECT_NS", 0, 7, 1, 0, ebpf.PinNone},
		{"samples numa_node", numaNode, 0, 2, numaNode, ebpf.PinNone},
	} {
		t.Run(tt.name, func(t *testing.T) {
			data := mustRead(t, "legacy_padded_maps.o")
			f, err := elf.NewFile(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			off := int(f.Section("maps").Offset) // hits, the first entry
			binary.LittleEndian.PutUint32(data[off+16:], tt.flags)
			binary.LittleEndian.PutUint32(data[off+20:], tt.f5)
			binary.LittleEndian.PutUint32(data[off+24:], tt.f6)
			spec, err := LoadCollectionSpecFromReader(bytes.NewReader(data), "legacy_padded_maps.o")
			if err != nil {
				t.Fatal(err)
			}
			if m := spec.Maps["hits"]; m.Flags != tt.wantFlags || m.Pinning != tt.wantPin || m.Extra != nil {
				t.Errorf("hits: flags %#x pinning %v extra %v, want %#x %v none", m.Flags, m.Pinning, m.Extra, tt.wantFlags, tt.wantPin)
			}
		})
	}
}

// TestOldSectionNames checks the program types of the old section names
// and the functions found through symbols without size or type.
func TestOldSectionNames(t *testing.T) {
	spec := mustLoad(t, "legacy_old_style.o")
	for _, tt := range []struct {
		prog, section string
		typ           ebpf.ProgramType
		insns         int
	}{
		{"xdp_count", "xdp_prog", ebpf.XDP, 11},
		{"xdp_drop", "xdp_prog", ebpf.XDP, 2},
		{"sock_mid", "socket1", ebpf.SocketFilter, 11},
		{"kp", "kprobe/sys_write", ebpf.Kprobe, 2},
	} {
		p := spec.Programs[tt.prog]
		if p == nil {
			t.Errorf("%s: missing", tt.prog)
			continue
		}
		if p.SectionName != tt.section || p.Type != tt.typ || len(p.Instructions) != tt.insns {
			t.Errorf("%s: section %s type %v %d insns, want %s %v %d", tt.prog, p.SectionName, p.Type, len(p.Instructions), tt.section, tt.typ, tt.insns)
		}
	}
}

// symbolEntry returns the file offset of the named symbol's symtab entry in
// a little-endian ELF64 object.
func symbolEntry(t *testing.T, data []byte, name string) int {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(syms, func(s elf.Symbol) bool { return s.Name == name })
	if i < 0 {
		t.Fatalf("no symbol %s", name)
	}
	// Symbols skips the null symbol at index 0.
	return int(f.SectionByType(elf.SHT_SYMTAB).Offset) + (i+1)*elf.Sym64Size
}

func setSymbolSize(t *testing.T, data []byte, name string, size uint64) {
	binary.LittleEndian.PutUint64(data[symbolEntry(t, data, name)+16:], size)
}

func setSymbolValue(t *testing.T, data []byte, name string, value uint64) {
	binary.LittleEndian.PutUint64(data[symbolEntry(t, data, name)+8:], value)
}

func TestLoadMissingFile(t *testing.T) {
	_, err := LoadCollectionSpec(testdata("does_not_exist.o"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("got %v, want ErrNotExist", err)
	}
	if !strings.HasPrefix(err.Error(), "load "+testdata("does_not_exist.o")+": ") {
		t.Errorf("error %q does not name the file", err)
	}
}

func TestPatchedReader(t *testing.T) {
	base := []byte("0123456789")
	pr := &patchedReader{bytes.NewReader(base), []patch{{off: 2, data: []byte("ab")}, {off: 8, data: []byte("xyz")}}}

	for _, tt := range []struct {
		off  int64
		n    int
		want string
	}{
		{0, 10, "01ab4567xy"},
		{3, 2, "b4"},
		{4, 3, "456"},
		{9, 1, "y"},
		{1, 2, "1a"},
		{7, 5, "7xy"}, // short read at EOF: the patch past EOF stays invisible
	} {
		buf := make([]byte, tt.n)
		n, _ := pr.ReadAt(buf, tt.off)
		if got := string(buf[:n]); got != tt.want {
			t.Errorf("ReadAt(%d, %d) = %q, want %q", tt.off, tt.n, got, tt.want)
		}
	}
}

// checkError asserts err is a single line that names the object.
func checkError(t testing.TB, err error, name string) {
	t.Helper()
	msg := err.Error()
	if strings.ContainsAny(msg, "\r\n") {
		t.Errorf("error spans lines: %q", msg)
	}
	if !strings.HasPrefix(msg, "load "+name+": ") {
		t.Errorf("error %q does not start with %q", msg, "load "+name+": ")
	}
}

func TestTruncated(t *testing.T) {
	for _, path := range objects(t) {
		data := mustRead(t, filepath.Base(path))
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// Every length up to 1 KiB covers the headers, then a stride
			// through the rest, then the last bytes.
			var cuts []int
			for n := 0; n < len(data); {
				cuts = append(cuts, n)
				switch {
				case n < 1024:
					n++
				case n < len(data)-64:
					n += 7
				default:
					n++
				}
			}
			for _, n := range cuts {
				spec, err := LoadCollectionSpecFromReader(bytes.NewReader(data[:n]), name)
				if err == nil {
					// Section headers sit at the end of clang's output, so
					// no prefix can be a valid object.
					t.Fatalf("cut at %d/%d: no error, got %d programs", n, len(data), len(spec.Programs))
				}
				checkError(t, err, name)
			}
		})
	}
}

// ownPackage is this package's import path.
var ownPackage = reflect.TypeFor[loadError]().PkgPath()

// maxFuzzObject bounds FuzzLoadCollectionSpec's inputs: the fuzzer
// minimises every new interesting input by removing bytes, one parse each,
// which for a large object took the whole default 60 s of
// -fuzzminimizetime while execs/s showed 0. Larger objects are neither
// seeds nor inputs; run the campaign with a short -fuzzminimizetime as
// well (README.md, "Testing").
const maxFuzzObject = 12 << 10

func FuzzLoadCollectionSpec(f *testing.F) {
	for _, path := range objects(f) {
		if data := mustRead(f, filepath.Base(path)); len(data) <= maxFuzzObject {
			f.Add(data)
		}
	}
	f.Add([]byte{})
	f.Add([]byte("\x7fELF"))

	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzObject {
			return
		}
		spec, err := LoadCollectionSpecFromReader(bytes.NewReader(data), "fuzz.o")
		if err != nil {
			checkError(t, err, "fuzz.o")
			// Panics in dependencies are input problems turned into
			// errors; a panic in this package is a bug.
			var pe *panicError
			if errors.As(err, &pe) && strings.HasPrefix(pe.function, ownPackage+".") {
				t.Fatal(err)
			}
			return
		}
		if spec == nil {
			t.Fatal("nil spec without error")
		}
	})
}

// requireBPF skips the test unless this process may create BPF objects.
func requireBPF(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("bpf() needs root")
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOSYS) || errors.Is(err, ebpf.ErrNotSupported) {
		t.Skipf("bpf() not permitted: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
}

// ipv4Packet is an Ethernet frame carrying a 28-byte IPv4/UDP packet; skb
// test runs need a well-formed network header.
var ipv4Packet = []byte{
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x08, 0x00,
	0x45, 0x00, 0x00, 0x1c, 0, 0, 0, 0, 0x40, 0x11, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8,
	0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
}

// TestKernelLoad loads the legacy objects into the kernel: NewCollection
// creating every map and the verifier accepting the programs proves the
// MapSpecs and map references are right. The programs are then run once to
// see they use the maps they should.
func TestKernelLoad(t *testing.T) {
	requireBPF(t)

	lookup := func(t *testing.T, m *ebpf.Map, key uint32, out any) {
		t.Helper()
		if err := m.Lookup(key, out); err != nil {
			t.Fatalf("lookup %d: %v", key, err)
		}
	}
	run := func(t *testing.T, p *ebpf.Program, data []byte) uint32 {
		t.Helper()
		ret, err := p.Run(&ebpf.RunOptions{Data: data})
		if err != nil {
			t.Fatal(err)
		}
		return ret
	}

	for _, tt := range []struct {
		file    string
		prepare func(*ebpf.CollectionSpec)
		check   func(*testing.T, *ebpf.Collection)
	}{
		{
			file: "legacy_maps.o",
			check: func(t *testing.T, c *ebpf.Collection) {
				if ret := run(t, c.Programs["legacy_maps_entry"], ipv4Packet); ret != 28 {
					t.Errorf("returned %d, want 28", ret)
				}
				var n uint64
				lookup(t, c.Maps["proto_count"], 0x45, &n)
				if n != 1 {
					t.Errorf("proto_count[0x45] = %d, want 1", n)
				}
				lookup(t, c.Maps["totals"], 1, &n)
				if n != 28 {
					t.Errorf("totals[1] = %d, want 28", n)
				}
			},
		},
		{
			file: "legacy_elf_maps.o",
			// No bpffs to pin to here; TestLegacyMaps covers Pinning.
			prepare: func(spec *ebpf.CollectionSpec) { spec.Maps["pkt_count"].Pinning = ebpf.PinNone },
			check: func(t *testing.T, c *ebpf.Collection) {
				if ret := int32(run(t, c.Programs["cls_entry"], ipv4Packet)); ret != -1 {
					t.Errorf("cls_entry returned %d, want -1 (TC_ACT_UNSPEC)", ret)
				}
				var n uint64
				lookup(t, c.Maps["pkt_count"], 0, &n)
				if n != 1 {
					t.Errorf("pkt_count[0] = %d, want 1", n)
				}

				// map_in_map[0] must hold class_map, as tc would set it up.
				var id uint32
				lookup(t, c.Maps["map_in_map"], 0, &id)
				info, err := c.Maps["class_map"].Info()
				if err != nil {
					t.Fatal(err)
				}
				if want, _ := info.ID(); ebpf.MapID(id) != want {
					t.Errorf("map_in_map[0] holds map %d, want class_map (%d)", id, want)
				}
			},
		},
		{
			file: "legacy_asm_maps.o",
			check: func(t *testing.T, c *ebpf.Collection) {
				p := c.Programs["legacy_asm_entry"]
				if ret := run(t, p, ipv4Packet); ret != 0 {
					t.Errorf("returned %d on empty maps, want 0", ret)
				}
				if err := c.Maps["limits"].Put(uint32(1), uint32(77)); err != nil {
					t.Fatal(err)
				}
				if ret := run(t, p, ipv4Packet); ret != 77 {
					t.Errorf("returned %d, want 77", ret)
				}
				var n uint64
				lookup(t, c.Maps["counts"], 1, &n)
				if n != 2 {
					t.Errorf("counts[1] = %d, want 2", n)
				}
			},
		},
		{
			file: "legacy_mixed_maps.o",
			check: func(t *testing.T, c *ebpf.Collection) {
				if ret := run(t, c.Programs["legacy_mixed_entry"], ipv4Packet); ret != 2 {
					t.Errorf("returned %d, want 2 (XDP_PASS)", ret)
				}
				var a, b uint64
				lookup(t, c.Maps["btf_counts"], 0, &a)
				lookup(t, c.Maps["old_counts"], 0, &b)
				if a != 1 || b != 2 {
					t.Errorf("btf_counts[0] = %d, old_counts[0] = %d; want 1, 2", a, b)
				}
			},
		},
		{
			file: "legacy_old_style.o",
			// No bpffs to pin to here; TestLegacyMaps covers Pinning.
			prepare: func(spec *ebpf.CollectionSpec) { spec.Maps["totals"].Pinning = ebpf.PinNone },
			check: func(t *testing.T, c *ebpf.Collection) {
				if ret := run(t, c.Programs["xdp_count"], ipv4Packet); ret != 2 {
					t.Errorf("xdp_count returned %d, want 2 (XDP_PASS)", ret)
				}
				if ret := run(t, c.Programs["xdp_drop"], ipv4Packet); ret != 1 {
					t.Errorf("xdp_drop returned %d, want 1 (XDP_DROP)", ret)
				}
				var n uint64
				lookup(t, c.Maps["counts"], 0, &n)
				if n != 1 {
					t.Errorf("counts[0] = %d, want 1", n)
				}
				if err := c.Maps["mid"].Put(uint32(1), uint32(9)); err != nil {
					t.Fatal(err)
				}
				if ret := run(t, c.Programs["sock_mid"], ipv4Packet); ret != 9 {
					t.Errorf("sock_mid returned %d, want 9", ret)
				}
			},
		},
		{
			file: "legacy_padded_maps.o",
			check: func(t *testing.T, c *ebpf.Collection) {
				pkt := make([]byte, 60)
				if ret := run(t, c.Programs["legacy_padded_entry"], pkt); ret != 2 {
					t.Errorf("returned %d, want 2 (XDP_PASS)", ret)
				}
				var last uint32
				lookup(t, c.Maps["last"], 0, &last)
				if last != 60 {
					t.Errorf("last[0] = %d, want 60", last)
				}
			},
		},
	} {
		t.Run(tt.file, func(t *testing.T) {
			spec := mustLoad(t, tt.file)
			if tt.prepare != nil {
				tt.prepare(spec)
			}
			coll, err := ebpf.NewCollection(spec)
			if err != nil {
				t.Fatalf("%+v", err)
			}
			defer coll.Close()
			tt.check(t, coll)
		})
	}
}
