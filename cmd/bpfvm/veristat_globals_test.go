package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestVeristatGlobals sets globals.o's variables with -G, as veristat
// does, and checks the verdicts and instruction counts they lead to (the
// kernel's, where it can load programs: the same object with the same
// presets through cilium/ebpf), and the refusals.
func TestVeristatGlobals(t *testing.T) {
	const obj = "testdata/globals.o"
	kernel := kernelAvailable()
	dir := t.TempDir()
	presetFile := filepath.Join(dir, "presets")
	os.WriteFile(presetFile, []byte("# comment\n\nmode = MODE_SAFE\n  small = 0x7f\n"), 0o644)
	for _, tc := range []struct {
		presets []string
		want    string // Verdict,Insns CSV columns, or a stderr substring for an error
		stderr  string // expected on stderr as well
	}{
		{nil, "success,28", ""},
		{[]string{"unsafe = 1"}, "failure,6", ""},
		{[]string{"unsafe=1"}, "failure,6", ""},
		{[]string{"mode = MODE_UNSAFE"}, "failure,9", ""},
		{[]string{"mode = 4"}, "failure,9", ""},
		{[]string{"mode = MODE_SAFE"}, "success,42", ""},
		{[]string{"@" + presetFile}, "success,42", ""},
		{[]string{"small = -1"}, "failure,14", ""},
		{[]string{"small = -128"}, "failure,14", ""},
		{[]string{"cfg.a = 7"}, "failure,17", ""},
		{[]string{"cfg.b = 9"}, "failure,19", ""}, // in an anonymous struct
		{[]string{"cfg.arr[2] = 5"}, "failure,22", ""},
		{[]string{"cfg.inner[1].c = 1"}, "failure,24", ""},
		{[]string{"cfg.inner[0].c = 1"}, "success,28", ""},
		{[]string{"cfg.a = 0x7", "mode = MODE_SAFE"}, "failure,17", ""},
		{[]string{"hits = 5"}, "success,28", ""},
		{[]string{"nosuch = 1"}, "success,28", "Global variable preset nosuch has not been applied"},
		{[]string{"small = 128"}, "", "variable signed char value 128 is out of range [-128; 127]"},
		{[]string{"cfg.a = 4294967296"}, "", "value 4294967296 is out of range [0; 4294967295]"},
		{[]string{"cfg.flag = 1"}, "", "bitfield presets are not supported"},
		{[]string{"mode = NOPE"}, "", "failed to find integer value for enum element NOPE"},
		{[]string{"unsafe = RED"}, "", "value RED is not supported for type int"},
		{[]string{"cfg = 1"}, "", "setting value for type"},
		{[]string{"cfg.arr[4] = 1"}, "", "array index 4 is out of bounds"},
		{[]string{"cfg.zz = 1"}, "", "could not find member zz for variable cfg"},
	} {
		args := []string{"veristat", "-o", "csv", "-e", "verdict,insns"}
		if kernel {
			args = append(args, "--kernel", "-e", "kernel_verdict,kernel_insns")
		}
		for _, p := range tc.presets {
			args = append(args, "-G", p)
		}
		args = append(args, obj)
		code, stdout, stderr := runCLI(t, "", args...)
		name := strings.Join(tc.presets, "; ")
		if tc.stderr != "" && !strings.Contains(stderr, tc.stderr) {
			t.Errorf("-G %q: stderr %q, want %q", name, stderr, tc.stderr)
		}
		if tc.want == "" {
			if code != 1 {
				t.Errorf("-G %q: exit %d, want 1", name, code)
			}
			continue
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if code != 0 || len(lines) != 2 {
			t.Errorf("-G %q: exit %d, stdout %q, stderr %q", name, code, stdout, stderr)
			continue
		}
		want := tc.want
		if kernel {
			want += "," + tc.want // the kernel's verdict and count are ours
		}
		if lines[1] != want {
			t.Errorf("-G %q: %s, want %s", name, lines[1], want)
		}
	}
	for _, bad := range []string{"x", "= 1", "x =", "x y = 1", "x = 1 2", "x = 12ab", "@/nonexistent"} {
		if code, _, _ := runCLI(t, "", "veristat", "-G", bad, obj); code != 2 {
			t.Errorf("-G %q: exit %d, want 2", bad, code)
		}
	}
}

// TestVeristatObjectList reads object files from an @FILE list and notes
// each object's maps and programs with -d.
func TestVeristatObjectList(t *testing.T) {
	list := filepath.Join(t.TempDir(), "objs")
	os.WriteFile(list, []byte("# objects\ntestdata/globals.o\n\ntestdata/mixed.o\n"), 0o644)
	code, stdout, stderr := runCLI(t, "", "veristat", "-d", "-e", "file,prog", "-o", "csv", "@"+list)
	if code != 1 { // mixed.o's kprobe does not load here
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{"globals.o,filter\n", "mixed.o,ok\n", "PROCESSING testdata/globals.o/filter"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	for _, want := range []string{"testdata/globals.o: map '.rodata': type array, key 4, value 40, max_entries 1, flags 0x80",
		"testdata/globals.o: program 'filter': section 'xdp', type xdp"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if code, _, _ := runCLI(t, "", "veristat", "@/nonexistent"); code != 1 {
		t.Errorf("@/nonexistent: exit %d, want 1", code)
	}
}

// TestVeristatDump prints the loaded programs' dumps, as veristat --dump:
// JITED before XLATED, each under "FILE/PROG DUMP MODE:".
func TestVeristatDump(t *testing.T) {
	code, stdout, stderr := runCLI(t, "", "veristat", "-o", "csv", "--dump", "--dump=JITED", "testdata/dump.o")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	j, x := strings.Index(stdout, "dump.o/pick DUMP JITED:\nint pick(struct xdp_md * ctx):\nbpf_prog_1bb3411ceb31d8bf_pick:\n"),
		strings.Index(stdout, "dump.o/pick DUMP XLATED:\nint pick(struct xdp_md * ctx):\n; unsigned int r = bpf_get_prandom_u32();\n   0: (85) call bpf_get_prandom_u32#7\n")
	if (j < 0 && runtime.GOARCH == "amd64" && runtime.GOOS == "linux") || x < 0 || j > x {
		t.Errorf("dumps at %d, %d:\n%s", j, x, stdout)
	}
	if code, _, _ := runCLI(t, "", "veristat", "--dump=source", "testdata/dump.o"); code != 2 {
		t.Errorf("--dump=source: exit %d, want 2", code)
	}
}
