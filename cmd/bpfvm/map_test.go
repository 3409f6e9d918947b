package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
)

const mapsObj = "testdata/maps_cli.o"

// perCPUZeros is bpftool's BTF dump of a zero per-CPU u32 on every CPU.
func perCPUZeros(indent string) string {
	var b strings.Builder
	for cpu := range runtime.NumCPU() {
		if cpu > 0 {
			b.WriteString("},{")
		}
		b.WriteString("\n" + indent + "        \"cpu\": " + strconv.Itoa(cpu) + ",\n" + indent + "        \"value\": 0\n" + indent + "    ")
	}
	return b.String()
}

// TestMapCommands checks map dump, lookup, update, delete, getnext and
// show on the maps of an object as loaded, with the output bpftool 7.1
// prints for the same maps in the kernel (recorded from it, see
// TestMapCommandsVsBpftool for the live comparison).
func TestMapCommands(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
	}{
		// BTF-formatted, in bpftool's json_writer layout even without -j.
		{[]string{"map", "dump", mapsObj, "counters"}, 0, "[{\n        \"key\": 0,\n        \"value\": 0\n    },{\n        \"key\": 1,\n        \"value\": 0\n    },{\n" +
			"        \"key\": 2,\n        \"value\": 0\n    },{\n        \"key\": 3,\n        \"value\": 0\n    }\n]\n"},
		{[]string{"map", "dump", mapsObj, "name", "flows"}, 0, "[]\n"},
		{[]string{"map", "dump", mapsObj, ".data"}, 0, "[{\n        \"value\": {\n            \".data\": [{\n                    \"runs\": 7\n                }\n            ]\n        }\n    }\n]\n"},
		{[]string{"map", "dump", mapsObj, ".rodata"}, 0, "[{\n        \"value\": {\n            \".rodata\": [{\n                    \"count.____fmt\": \"len %d runs %u\"\n                }\n            ]\n        }\n    }\n]\n"},
		{[]string{"map", "dump", mapsObj, "percpu"}, 0, "[{\n        \"key\": 0,\n        \"values\": [{" + perCPUZeros("        ") + "}\n        ]\n    },{\n" +
			"        \"key\": 1,\n        \"values\": [{" + perCPUZeros("        ") + "}\n        ]\n    }\n]\n"},
		// Without BTF: hex and the count.
		{[]string{"map", "dump", mapsObj, "raw"}, 0, "Found 0 elements\n"},
		{[]string{"map", "lookup", mapsObj, "counters", "key", "0", "0", "0", "0"}, 0, "{\n    \"key\": 0,\n    \"value\": 0\n}\n"},
		{[]string{"map", "lookup", mapsObj, "raw", "key", "1", "0", "0", "0"}, 1, "key:\n01 00 00 00\n\nNot found\n"},
		{[]string{"map", "lookup", mapsObj, "flows", "key", "hex", "01", "02", "03", "04", "05", "06", "07", "08", "09", "0a", "0b", "0x0c"}, 1,
			"key:\n01 02 03 04 05 06 07 08  09 0a 0b 0c\n\nNot found\n"},
		{[]string{"-j", "map", "lookup", mapsObj, "counters", "key", "0", "0", "0", "0"}, 0,
			`{"key":["0x00","0x00","0x00","0x00"],"value":["0x00","0x00","0x00","0x00","0x00","0x00","0x00","0x00"],"formatted":{"key":0,"value":0}}` + "\n"},
		{[]string{"-j", "map", "lookup", mapsObj, "raw", "key", "20", "0", "0", "0"}, 1, "null\n"},
		{[]string{"-j", "map", "dump", mapsObj, ".data"}, 0, `[{"key":["0x00","0x00","0x00","0x00"],"value":["0x07","0x00","0x00","0x00"],"formatted":{"value":{".data":[{"runs":7}]}}}]` + "\n"},
		{[]string{"map", "getnext", mapsObj, "counters"}, 0, "key: None\nnext key:\n00 00 00 00\n"},
		{[]string{"map", "getnext", mapsObj, "counters", "key", "1", "0", "0", "0"}, 0, "key:\n01 00 00 00\nnext key:\n02 00 00 00\n"},
		{[]string{"-j", "map", "getnext", mapsObj, "counters", "key", "1", "0", "0", "0"}, 0, `{"key":["0x01","0x00","0x00","0x00"],"next_key":["0x02","0x00","0x00","0x00"]}` + "\n"},
		{[]string{"map", "getnext", mapsObj, "counters", "key", "3", "0", "0", "0"}, 1, ""},
		{[]string{"-j", "map", "update", mapsObj, "counters", "key", "1", "0", "0", "0", "value", "5", "0", "0", "0", "0", "0", "0", "0"}, 0, "null\n"},
		{[]string{"map", "update", mapsObj, "counters", "key", "1", "0", "0", "0", "value", "5", "0", "0", "0"}, 2, ""},
		{[]string{"map", "update", mapsObj, "counters", "key", "9", "0", "0", "0", "value", "5", "0", "0", "0", "0", "0", "0", "0"}, 1, ""},
		{[]string{"map", "update", mapsObj, "flows", "value", "hex", "01"}, 2, ""},
		{[]string{"map", "delete", mapsObj, "counters", "key", "1", "0", "0", "0"}, 1, ""},
		{[]string{"map", "delete", mapsObj, "raw", "key", "1", "0", "0", "0"}, 1, ""},
		{[]string{"map", "dump", mapsObj, "nope"}, 2, ""},
		{[]string{"map", "frob", mapsObj, "counters"}, 2, ""},
	} {
		code, stdout, stderr := runCLI(t, "", tc.args...)
		if code != tc.code || stdout != tc.stdout {
			t.Errorf("bpfvm %s: exit %d (want %d), stderr %q\n%s\nwant\n%s", strings.Join(tc.args, " "), code, tc.code, stderr, stdout, tc.stdout)
		}
	}
	if _, stdout, _ := runCLI(t, "", "map", "show", mapsObj, "counters"); !regexp.MustCompile(`^\d+: array  name counters  flags 0x0\n\tkey 4B  value 8B  max_entries 4  memlock 0B\n$`).MatchString(stdout) {
		t.Errorf("map show: %q", stdout)
	}
	// The error messages, as bpftool's.
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"map", "getnext", mapsObj, "counters", "key", "3", "0", "0", "0"}, "can't get next key: No such file or directory"},
		{[]string{"map", "update", mapsObj, "counters", "key", "1", "0", "0", "0", "value", "5", "0", "0", "0"}, "value expected 8 bytes got 4"},
		{[]string{"map", "update", mapsObj, "counters", "key", "9", "0", "0", "0", "value", "5", "0", "0", "0", "0", "0", "0", "0"}, "update failed: Argument list too long"},
		{[]string{"map", "delete", mapsObj, "counters", "key", "1", "0", "0", "0"}, "delete failed: Invalid argument"},
		{[]string{"map", "delete", mapsObj, "raw", "key", "1", "0", "0", "0"}, "delete failed: No such file or directory"},
		{[]string{"map", "lookup", mapsObj, "raw", "key", "1", "0", "x", "0"}, "error parsing byte: x"},
		{[]string{"map", "lookup", mapsObj, "raw"}, "did not find key"},
		{[]string{"map", "update", mapsObj, "flows", "value", "hex", "01"}, "value expected 48 bytes got 1"},
	} {
		if _, _, stderr := runCLI(t, "", tc.args...); !strings.Contains(stderr, tc.stderr) {
			t.Errorf("bpfvm %s: stderr %q, want %q", strings.Join(tc.args, " "), stderr, tc.stderr)
		}
	}
}

// mapsScript fills maps, runs the program on a packet and prints maps: the
// sequence TestBatch and TestMapCommandsVsBpftool run.
var mapsScript = []string{
	"map update name counters key 0 0 0 0 value 40 0 0 0 0 0 0 0",
	"map update name raw key hex 01 00 00 00 value hex 0a 0b 0c 0d 0e 0f 10 11 12 13 14 15 16 17 18 19 1a 1b 1c 1d",
	"prog run name count data_in PKT data_out - repeat 2",
	"map dump name counters",
	"map lookup name flows key 10 0 0 1 80 0 6 97 98 99 100 0",
	// Hash order is the seed's: a dump of one element, for a fixed output.
	"map lookup name raw key 1 0 0 0",
	"map delete name raw key 1 0 0 0",
	"map dump name raw",
	"map getnext name raw",
}

// mapsPacket is what the script's packet starts with: a struct flow
// {10.0.0.1, port 80, proto 6, "abcd"} and zeros to 20 bytes.
var mapsPacket = []byte{10, 0, 0, 1, 80, 0, 6, 'a', 'b', 'c', 'd', 0, 0, 0, 0, 0, 0, 0, 0, 0}

// normalizeRun blanks what differs between runs: the durations.
func normalizeRun(s string) string {
	s = regexp.MustCompile(`duration( \(average\))?: \d+ns`).ReplaceAllString(s, "duration$1: Nns")
	return regexp.MustCompile(`"duration":\d+`).ReplaceAllString(s, `"duration":N`)
}

// TestBatch runs the script: maps keep what earlier lines did, the
// program sees and changes them, trace output goes to its file.
func TestBatch(t *testing.T) {
	dir := t.TempDir()
	pkt := filepath.Join(dir, "pkt")
	os.WriteFile(pkt, mapsPacket, 0o644)
	script := filepath.Join(dir, "script")
	os.WriteFile(script, []byte("# a comment\n"+strings.ReplaceAll(strings.Join(mapsScript, "\n"), "PKT", pkt)+"\n"), 0o644)
	traceFile := filepath.Join(dir, "trace")
	code, stdout, stderr := runCLI(t, "", "batch", "--trace", traceFile, mapsObj, script)
	want := "0000000\t0a00 0001 5000 0661 6263 6400 0000 0000 | ....P..a bcd.....\n" +
		"0000010\t0000 0000                               | ....\n" +
		"Return value: 2, duration (average): Nns\n" +
		"[{\n        \"key\": 0,\n        \"value\": 42\n    },{\n        \"key\": 1,\n        \"value\": 0\n    },{\n" +
		"        \"key\": 2,\n        \"value\": 0\n    },{\n        \"key\": 3,\n        \"value\": 0\n    }\n]\n" +
		"{\n    \"key\": {\n        \"addr\": 16777226,\n        \"port\": 80,\n        \"proto\": 6,\n        \"tag\": \"abcd\"\n    },\n" +
		"    \"value\": {\n        \"packets\": 1,\n        \"delta\": -5,\n        \"color\": \"BLUE\",\n        \"seen\": true,\n" +
		"        \"name\": \"pkt\",\n        \"hist\": [1,2,3\n        ],\n        \"ptr\": \"(nil)\"\n    }\n}\n" +
		"key:\n01 00 00 00\nvalue:\n0a 0b 0c 0d 0e 0f 10 11  12 13 14 15 16 17 18 19\n1a 1b 1c 1d\n" +
		"key:\n14 00 00 00\nvalue:\n01 02 03 00 00 00 00 00  00 00 00 00 00 00 00 00\n00 00 00 00\nFound 1 element\n" +
		"key: None\nnext key:\n14 00 00 00\n" +
		"processed 9 commands\n"
	if code != 0 || normalizeRun(stdout) != want {
		t.Errorf("exit %d, stderr %q\n%s\nwant\n%s", code, stderr, normalizeRun(stdout), want)
	}
	trace, _ := os.ReadFile(traceFile)
	if !regexp.MustCompile(`^( +[^ ]+-\d+ +\[000\] \.{5} +\d+\.\d{6}: bpf_trace_printk: len 20 runs [89]\n){2}$`).Match(trace) {
		t.Errorf("trace %q", trace)
	}
	// JSON: bpftool batch's [{"command": [...], "output": ...}].
	code, stdout, _ = runCLI(t, "", "-j", "batch", "--trace", "none", mapsObj, script)
	if code != 0 || !strings.HasPrefix(normalizeRun(stdout), `[{"command":["map","update","name","counters","key","0","0","0","0","value","40","0","0","0","0","0","0","0"],"output":null},`) ||
		!strings.Contains(normalizeRun(stdout), `"output":{"data_out":[10,0,0,1,80,0,6,97,98,99,100,0,0,0,0,0,0,0,0,0],"retval":2,"duration":N}}`) {
		t.Errorf("-j batch: exit %d\n%s", code, stdout)
	}
	// A failing line stops the batch and names the line.
	code, _, stderr = runCLI(t, "map dump name counters\nmap lookup name counters key 1\n", "batch", mapsObj, "-")
	if code != 2 || !strings.Contains(stderr, "-:2: usage: key expected 4 bytes got 1") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// TestProgRun checks bpftool's keyword syntax, ctx_in and ctx_out,
// compared with bpftool 7.1's output for the same context.
func TestProgRun(t *testing.T) {
	dir := t.TempDir()
	pkt, ctx := filepath.Join(dir, "pkt"), filepath.Join(dir, "ctx")
	os.WriteFile(pkt, mapsPacket, 0o644)
	// struct xdp_md with data_end 20: the whole packet is linear.
	os.WriteFile(ctx, []byte{0, 0, 0, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 0o644)
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
	}{
		{[]string{"prog", "run", mapsObj, "count", "data_in", pkt, "ctx_in", ctx, "ctx_out", "-"}, 0,
			"0000000\t0000 0000 1400 0000 0000 0000 0000 0000 | ........ ........\n0000010\t0000 0000 0000 0000                     | ........ \nReturn value: 2, duration: Nns\n"},
		{[]string{"-j", "prog", "run", mapsObj, "name", "count", "data_in", pkt, "ctx_in", ctx, "ctx_out", "-", "rep", "3"}, 0,
			`{"ctx_out":[0,0,0,0,20,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"retval":2,"duration":N}` + "\n"},
		{[]string{"run", mapsObj, "-p", "count", "--data", pkt, "--ctx-in", ctx, "--ctx-out", "-", "--trace", "none"}, 0,
			"0000000\t0000 0000 1400 0000 0000 0000 0000 0000 | ........ ........\n0000010\t0000 0000 0000 0000                     | ........ \nReturn value: 2, duration: Nns\n"},
		// bpftool: "failed to run program: No space left on device".
		{[]string{"prog", "run", mapsObj, "count", "data_in", pkt, "ctx_in", ctx, "ctx_out", "-", "ctx_size_out", "8"}, 1, ""},
		{[]string{"prog", "run", mapsObj, "count", "data_in", pkt, "d", "-"}, 2, ""},
		{[]string{"prog", "run", mapsObj, "count", "data_in", "-", "ctx_in", "-"}, 2, ""},
		{[]string{"prog", "run", mapsObj, "count", "repeat", "x"}, 2, ""},
		{[]string{"prog", "run", mapsObj, "nope"}, 2, ""},
	} {
		code, stdout, stderr := runCLI(t, "", tc.args...)
		if code != tc.code || normalizeRun(stdout) != tc.stdout {
			t.Errorf("bpfvm %s: exit %d (want %d), stderr %q\n%q\nwant\n%q", strings.Join(tc.args, " "), code, tc.code, stderr, stdout, tc.stdout)
		}
	}
	_, _, stderr := runCLI(t, "", "prog", "run", mapsObj, "count", "data_in", pkt, "ctx_in", ctx, "ctx_out", "-", "ctx_size_out", "8")
	if !strings.Contains(stderr, "failed to run program: ") || !strings.Contains(stderr, "no space left on device") {
		t.Errorf("stderr %q", stderr)
	}
	// trace_printk goes to stderr by default, as trace_pipe shows it.
	_, _, stderr = runCLI(t, "", "prog", "run", mapsObj, "count", "data_in", pkt, "repeat", "2")
	if !regexp.MustCompile(`^( +[^ ]+-\d+ +\[000\] \.{5} +\d+\.\d{6}: bpf_trace_printk: len 20 runs [89]\n){2}$`).MatchString(stderr) {
		t.Errorf("trace on stderr: %q", stderr)
	}
}

// TestMapCommandsVsBpftool runs the script with bpftool on the kernel and
// with bpfvm, and compares the outputs line by line, where bpftool and
// bpf() are here (root).
func TestMapCommandsVsBpftool(t *testing.T) {
	bpftool, err := exec.LookPath("bpftool")
	if err != nil || os.Getuid() != 0 {
		t.Skip("needs bpftool and root")
	}
	pin := filepath.Join("/sys/fs/bpf", "bpfvm-test-"+filepath.Base(t.TempDir()))
	if err := os.Mkdir(pin, 0o700); err != nil {
		t.Skipf("bpffs: %v", err)
	}
	defer os.RemoveAll(pin)
	if out, err := exec.Command(bpftool, "prog", "loadall", mapsObj, pin, "pinmaps", pin).CombinedOutput(); err != nil {
		t.Skipf("bpftool prog loadall: %v: %s", err, out)
	}
	dir := t.TempDir()
	pkt := filepath.Join(dir, "pkt")
	os.WriteFile(pkt, mapsPacket, 0o644)
	var ours []string
	for _, line := range mapsScript {
		line = strings.ReplaceAll(line, "PKT", pkt)
		words := strings.Fields(line)
		// bpftool names the pinned object: pinned PATH for name X.
		kargs := append([]string{words[0], words[1], "pinned", filepath.Join(pin, words[3])}, words[4:]...)
		kout, _ := exec.Command(bpftool, kargs...).Output()
		ours = append(ours, line)
		script := filepath.Join(dir, "script")
		os.WriteFile(script, []byte(strings.Join(ours, "\n")+"\n"), 0o644)
		_, out, stderr := runCLI(t, "", "batch", "--trace", "none", mapsObj, script)
		// The output of the last line: after the previous lines' output.
		_, prev, _ := runCLI(t, "", "batch", "--trace", "none", mapsObj, writeLines(t, dir, ours[:len(ours)-1]))
		got := strings.TrimSuffix(normalizeRun(out), "processed "+strconv.Itoa(len(ours))+" commands\n")
		got = strings.TrimPrefix(got, strings.TrimSuffix(normalizeRun(prev), "processed "+strconv.Itoa(len(ours)-1)+" commands\n"))
		want := string(kout)
		// bpftool 7.1 prints a NULL pointer unquoted, which is not JSON.
		want = strings.ReplaceAll(want, `"ptr": (nil)`, `"ptr": "(nil)"`)
		if normalizeRun(got) != normalizeRun(want) {
			t.Errorf("%s: bpfvm (stderr %q)\n%s\nbpftool\n%s", line, stderr, got, want)
		}
	}
}

func writeLines(t *testing.T, dir string, lines []string) string {
	p := filepath.Join(dir, "prev")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBTFDump prints BTF kinds as bpftool's btf_dumper, in -j and plain
// modes.
func TestBTFDump(t *testing.T) {
	u8 := &btf.Int{Name: "unsigned char", Size: 1}
	char := &btf.Int{Name: "char", Size: 1, Encoding: btf.Char}
	s16 := &btf.Int{Name: "short", Size: 2, Encoding: btf.Signed}
	u32 := &btf.Int{Name: "unsigned int", Size: 4}
	u128 := &btf.Int{Name: "__u128", Size: 16}
	enum := &btf.Enum{Name: "e", Size: 4, Signed: true, Values: []btf.EnumValue{{Name: "NEG", Value: 0xffffffff}, {Name: "ONE", Value: 1}}}
	for _, tc := range []struct {
		name  string
		typ   btf.Type
		data  []byte
		json  string
		plain string
	}{
		{"signed", s16, []byte{0xfe, 0xff}, "-2", "-2"},
		{"enum signed", enum, []byte{0xff, 0xff, 0xff, 0xff}, `"NEG"`, `"NEG"`},
		{"enum unnamed", enum, []byte{7, 0, 0, 0}, "7", "7"},
		{"char", char, []byte{'x'}, `"x"`, `"x"`},
		{"char unprintable", char, []byte{1}, `"\u0001"`, "0x1"},
		{"u128", u128, []byte{1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0}, `"0x20000000000000001"`, "0x20000000000000001"},
		{"char string", &btf.Array{Type: char, Nelems: 4}, []byte("ab\x00z"), `"ab"`, `"ab"`},
		{"char array without NUL", &btf.Array{Type: char, Nelems: 2}, []byte("ab"), `["a","b"]`, `["a","b"]`},
		{"u8 array", &btf.Array{Type: u8, Nelems: 2}, []byte{1, 2}, "[1,2]", "[1,2]"},
		{"bitfields", &btf.Struct{Name: "s", Size: 4, Members: []btf.Member{
			{Name: "a", Type: u32, Offset: 0, BitfieldSize: 3},
			{Name: "b", Type: u32, Offset: 3, BitfieldSize: 13},
			{Name: "c", Type: &btf.Typedef{Name: "t", Type: u32}, Offset: 0},
		}}, []byte{0xff, 0x00, 0x00, 0x80}, `{"a":"0x7","b":"0x1f","c":2147483903}`, `{"a":0x7,"b":0x1f,"c":2147483903}`},
		{"union", &btf.Union{Name: "u", Size: 2, Members: []btf.Member{{Name: "x", Type: s16}, {Name: "y", Type: u8}}}, []byte{0xff, 0xff}, `{"x":-1,"y":255}`, `{"x":-1,"y":255}`},
		{"pointer", &btf.Pointer{Target: u8}, []byte{0x10, 0, 0, 0, 0, 0, 0, 0}, "16", `"0x10"`},
		{"float", &btf.Float{Name: "double", Size: 8}, []byte{0, 0, 0, 0, 0, 0, 0xf8, 0x3f}, "1.5", "1.5"},
		{"const volatile", &btf.Const{Type: &btf.Volatile{Type: u32}}, []byte{5, 0, 0, 0}, "5", "5"},
	} {
		for _, mode := range []struct {
			plain bool
			want  string
		}{{false, tc.json}, {true, tc.plain}} {
			var b strings.Builder
			j := newJSONWriter(&b, false)
			if err := btfDump(j, tc.typ, tc.data, mode.plain); err != nil {
				t.Errorf("%s: %v", tc.name, err)
				continue
			}
			j.flush()
			if got := strings.TrimSuffix(b.String(), "\n"); got != mode.want {
				t.Errorf("%s (plain %v): %s, want %s", tc.name, mode.plain, got, mode.want)
			}
		}
	}
	// Short data never reads past the buffer.
	if err := btfDump(newJSONWriter(&strings.Builder{}, false), u32, []byte{1}, false); err == nil {
		t.Errorf("a 4-byte int from 1 byte printed")
	}
}

// TestMapLoad fills maps from JSON in bpftool -j map dump's shape: a dump
// from bpfvm (or from the kernel's bpftool) loads back, per-CPU values
// too, and malformed elements are refused by index.
func TestMapLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(s), 0o644)
		return p
	}
	counters := write("counters.json", `[{"key":["0x00","0x00","0x00","0x00"],"value":["0x09",0,0,0,0,0,0,"1"]},{"key":[2,0,0,0],"value":[3,0,0,0,0,0,0,0],"formatted":{"key":2,"value":3}}]`)
	percpu := write("percpu.json", `[{"key":[1,0,0,0],"values":[`+func() string {
		var v []string
		for cpu := range runtime.NumCPU() {
			v = append(v, `{"cpu":`+strconv.Itoa(cpu)+`,"value":[`+strconv.Itoa(cpu+1)+`,0,0,0]}`)
		}
		return strings.Join(v, ",")
	}()+`]}]`)
	script := "map load name counters file " + counters + "\nmap dump name counters\nmap load name percpu " + percpu + "\nmap lookup name percpu key 1 0 0 0\n"
	code, stdout, stderr := runCLI(t, script, "batch", mapsObj, "-")
	if code != 0 || !strings.HasPrefix(stdout, "Updated 2 elements\n[{\n        \"key\": 0,\n        \"value\": 72057594037927945\n    },{\n        \"key\": 1,\n        \"value\": 0\n    },{\n        \"key\": 2,\n        \"value\": 3\n") ||
		!strings.Contains(stdout, "\"cpu\": 0,\n            \"value\": 1\n") {
		t.Errorf("exit %d, stderr %q\n%s", code, stderr, stdout)
	}
	// A dump loads back as it was.
	_, first, _ := runCLI(t, "map load name counters "+counters+"\nmap dump name counters\n", "-j", "batch", mapsObj, "-")
	var doc []struct {
		Output json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal([]byte(first), &doc); err != nil || len(doc) != 2 {
		t.Fatalf("%v: %s", err, first)
	}
	again := write("again.json", string(doc[1].Output))
	_, second, _ := runCLI(t, "map load name counters "+again+"\nmap dump name counters\n", "-j", "batch", mapsObj, "-")
	var doc2 []struct {
		Output json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal([]byte(second), &doc2); err != nil || len(doc2) != 2 || string(doc2[1].Output) != string(doc[1].Output) {
		t.Errorf("dump, load, dump (%v):\n%s\n%s", err, first, second)
	}
	for _, tc := range []struct{ json, err string }{
		{`[{"key":[0,0,0],"value":[1,0,0,0,0,0,0,0]}]`, "element 0: key of 3 bytes, the map's are 4"},
		{`[{"key":[0,0,0,0],"value":[1,0,0,0,0,0,0,0]},{"key":[1,0,0,0],"value":[1]}]`, "element 1: value of 1 bytes, the map's are 8"},
		{`[{"key":[0,0,0,0],"values":[{"cpu":0,"value":[1,0,0,0,0,0,0,0]}]}]`, "element 0: per-CPU values for a array map"},
		{`[{"key":["0x100",0,0,0],"value":[1,0,0,0,0,0,0,0]}]`, `byte "0x100"`},
		{`{"key":[]}`, "cannot unmarshal object"},
		{`[{"key":[9,0,0,0],"value":[1,0,0,0,0,0,0,0]}]`, "element 0: update failed: Argument list too long"},
	} {
		f := write("bad.json", tc.json)
		if code, _, stderr := runCLI(t, "map load name counters "+f+"\n", "batch", mapsObj, "-"); code != 1 || !strings.Contains(stderr, tc.err) {
			t.Errorf("%s: exit %d, stderr %q, want %q", tc.json, code, stderr, tc.err)
		}
	}
}
