package main

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// processedLine is the kernel's statistics line that ends a verifier log.
var processedLine = regexp.MustCompile(`^processed \d+ insns \(limit 1000000\) max_states_per_insn \d+ total_states \d+ peak_states \d+ mark_read \d+$`)

// badInputs writes the inputs no command may crash on, by name.
func badInputs(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	obj, err := os.ReadFile("../../testdata/loops.o")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	files := map[string][]byte{
		"empty.o":       nil,
		"short.o":       []byte("\x7fEL"),
		"header.o":      obj[:64],
		"truncated.o":   obj[:len(obj)/8],
		"random.o":      random,
		"elf-random.o":  append([]byte("\x7fELF"), random...),
		"random.bin":    random[:1001],
		"random.s":      random,
		"text.o":        []byte("not an object\n"),
		"empty.bin":     nil,
		"empty.csv":     nil,
		"bad-field.csv": []byte("no_such_field\n1\n"),
	}
	paths := map[string]string{"dir": dir, "missing.o": filepath.Join(dir, "missing.o")}
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths[name] = p
	}
	return paths
}

// TestBadInput runs every command on inputs that are not objects: each is
// refused (exit status 1) with a message naming the file, never a panic.
func TestBadInput(t *testing.T) {
	in := badInputs(t)
	commands := [][]string{
		{"dump", "F"},
		{"dump", "--xlated", "F"},
		{"run", "F", "-p", "x"},
		{"verify", "F"},
		{"veristat", "F"},
		{"veristat", "--kernel", "F"},
		{"map", "dump", "F", "m"},
		{"prog", "run", "F", "p"},
		{"batch", "F", "-"},
	}
	for name, path := range in {
		if strings.HasSuffix(name, ".bin") || strings.HasSuffix(name, ".s") || strings.HasSuffix(name, ".csv") {
			continue
		}
		for _, cmd := range commands {
			args := replaceArg(cmd, "F", path)
			code, stdout, stderr := runCLI(t, "", args...)
			if code != 1 || !strings.Contains(stderr, path) || strings.Contains(stderr, "usage:") {
				t.Errorf("bpfvm %s (%s): exit %d, want 1 and a message naming the file; stderr %q", strings.Join(cmd, " "), name, code, stderr)
			}
			if cmd[0] == "veristat" && !strings.Contains(stdout, "Skipped 1 files") {
				t.Errorf("bpfvm %s (%s): no summary counting the file as skipped:\n%s", strings.Join(cmd, " "), name, stdout)
			}
		}
	}
	// The non-ELF files are reported as such, as bpftool does.
	for _, name := range []string{"empty.o", "short.o", "random.o", "text.o", "truncated.o", "dir"} {
		code, _, stderr := runCLI(t, "", "run", in[name], "-p", "x")
		if want := in[name] + ": "; code != 1 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "not an ELF object") {
			t.Errorf("%s: exit %d, stderr %q, want %q...not an ELF object", name, code, stderr, want)
		}
	}
	// Raw instructions, assembly and CSV files.
	for _, tc := range []struct {
		args []string
	}{
		{[]string{"run", "--type", "raw", in["random.bin"]}},
		{[]string{"run", "--type", "raw", in["random.s"]}},
		{[]string{"run", "--type", "raw", in["empty.bin"]}},
		{[]string{"run", "--type", "raw", in["dir"]}},
		{[]string{"verify", in["random.bin"]}},
		{[]string{"verify", "--type", "tc", in["random.s"]}},
		{[]string{"verify", in["empty.bin"]}},
		{[]string{"veristat", "-C", in["empty.csv"], in["empty.csv"]}},
		{[]string{"veristat", "-C", in["bad-field.csv"], in["bad-field.csv"]}},
		{[]string{"veristat", "-C", in["random.o"], in["random.o"]}},
		{[]string{"veristat", "-C", in["missing.o"], in["missing.o"]}},
		{[]string{"conformance", in["random.o"]}},
		{[]string{"conformance", in["missing.o"]}},
	} {
		code, _, stderr := runCLI(t, "", tc.args...)
		if code != 1 || strings.Contains(stderr, "usage:") {
			t.Errorf("bpfvm %s: exit %d, want 1 without usage:, stderr %q", strings.Join(tc.args, " "), code, stderr)
		}
	}
	// Random bytes as a conformance plugin's program.
	if code, _, _ := runCLI(t, string(bytes.Repeat([]byte("zz"), 100)), "plugin"); code == 0 {
		t.Errorf("plugin took a non-hex program")
	}
}

func replaceArg(args []string, from, to string) []string {
	out := append([]string(nil), args...)
	for i, a := range out {
		if a == from {
			out[i] = to
		}
	}
	return out
}

// TestExitCodes checks the convention across commands: 0 ok, 1 a program
// or input refused, 2 a wrong command line; and the messages.
func TestExitCodes(t *testing.T) {
	const mixed, loops = "testdata/mixed.o", "../../testdata/loops.o"
	pkt := "--data-hex=" + strings.Repeat("00", 14)
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string // a regular expression
		stderr string // a substring
	}{
		// Each program on its own: the others' failures do not matter.
		{[]string{"run", loops, "-p", "forever", pkt}, 0, `^Return value: \d+, duration: \d+ns\n$`, ""},
		{[]string{"run", mixed, "-p", "ok", pkt}, 0, `^Return value: 2, duration: \d+ns\n$`, ""},
		{[]string{"run", mixed, "-p", "unspec"}, 0, `^Return value: 1, duration: \d+ns\n$`, ""},
		{[]string{"run", mixed, "-p", "ok", pkt, "--repeat", "3"}, 0, `^Return value: 2, duration \(average\): \d+ns\n$`, ""},
		// Refused programs name the file and the program, and types by
		// their kernel names.
		{[]string{"run", mixed, "-p", "rejected", pkt}, 1, `^$`, "testdata/mixed.o: program rejected: load program: invalid access to packet"},
		{[]string{"run", mixed, "-p", "probe"}, 1, `^$`, "testdata/mixed.o: program probe: insn 2: unknown helper bpf_task_pt_regs#175"},
		{[]string{"run", "testdata/unsupported_map.o", "-p", "report", pkt}, 1, `^$`, "testdata/unsupported_map.o: program report: map socks: type user_ringbuf:"},
		{[]string{"verify", "testdata/unsupported_map.o"}, 1, `^$`, "map socks: type user_ringbuf:"},
		{[]string{"run", mixed, "-p", "ok"}, 1, `^$`, "testdata/mixed.o: program ok: "},
		// dump --xlated: each program on its own too.
		{[]string{"dump", "--xlated", mixed}, 1, `(?s)ok \(xlated, 2 insns, verified=true\):.*unspec \(xlated, 2 insns, verified=false\):`,
			"bpfvm dump: testdata/mixed.o: program rejected: load program: invalid access to packet"},
		{[]string{"dump", "--xlated", "-p", "ok", mixed}, 0, `ok \(xlated`, ""},
		// An object without programs.
		{[]string{"verify", "testdata/maps_only.o"}, 1, `^$`, "testdata/maps_only.o: no programs"},
		{[]string{"run", "testdata/maps_only.o"}, 1, `^$`, "testdata/maps_only.o: no programs"},
		{[]string{"veristat", "testdata/maps_only.o"}, 0, `Done. Processed 1 files, 0 programs.`, ""},
		// Wrong command lines.
		{[]string{"run", mixed}, 2, `^$`, "usage: -p PROG is required; programs: ok, probe, rejected, unspec"},
		{[]string{"run", mixed, "-p", "nope"}, 2, `^$`, `usage: no program "nope" in testdata/mixed.o`},
		{[]string{"verify", "-p", "nope", mixed}, 2, `^$`, `usage: no program "nope"`},
		{[]string{"verify", "-l", "9", mixed}, 2, `^$`, "usage: -l 9"},
		{[]string{"veristat", "-s", "nope", mixed}, 2, `^$`, `usage: unknown sort field "nope"`},
		{[]string{"veristat", "-e", "nope", mixed}, 2, `^$`, `usage: unknown field "nope"`},
		{[]string{"veristat", "-o", "xml", mixed}, 2, `^$`, "usage: -o must be table, csv or json"},
		{[]string{"version", "x"}, 2, `^$`, "usage:"},
		// Help: every engine, and status 0.
		{[]string{"run", "-h"}, 0, `^$`, "engine: default, interp, jit"},
		{[]string{"verify", "-h"}, 0, `^$`, "-l int"},
		// bench with a filter that matches nothing says so.
		{[]string{"bench", "--run", "no_such_benchmark"}, 1, `^$`, `--run "no_such_benchmark" matches no benchmark`},
	} {
		code, stdout, stderr := runCLI(t, "", tc.args...)
		if code != tc.code || !regexp.MustCompile(tc.stdout).MatchString(stdout) || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("bpfvm %s: exit %d (want %d)\nstdout %q (want %q)\nstderr %q (want %q)",
				strings.Join(tc.args, " "), code, tc.code, stdout, tc.stdout, stderr, tc.stderr)
		}
	}
}

// TestRunDataOut writes the output packet to stdout for -, as bpftool does
// (before the return value), and to a file otherwise.
func TestRunDataOut(t *testing.T) {
	obj, err := filepath.Abs("testdata/mixed.o")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	pkt := "--data-hex=" + strings.Repeat("ab", 20)
	code, stdout, stderr := runCLI(t, "", "run", obj, "-p", "ok", pkt, "--data-out", "-")
	// bpftool's hex_print: offset, tab, 2-byte groups, "| " and ASCII.
	want := regexp.MustCompile(`^0000000\t(abab ){8}\| \.{8} \.{8}\n0000010\tabab abab {31}\| \.{4}\nReturn value: 2, duration: \d+ns\n$`)
	if code != 0 || !want.MatchString(stdout) {
		t.Fatalf("exit %d, stderr %q, stdout %q", code, stderr, stdout)
	}
	if _, err := os.Stat("-"); err == nil {
		t.Errorf("--data-out - created a file named -")
	}
	code, stdout, stderr = runCLI(t, "", "run", obj, "-p", "ok", pkt, "--data-out", "out.bin")
	if b, err := os.ReadFile("out.bin"); code != 0 || err != nil || !bytes.Equal(b, bytes.Repeat([]byte{0xab}, 20)) || strings.Contains(stdout, "data_out") {
		t.Errorf("exit %d, stderr %q, stdout %q, file %x (%v)", code, stderr, stdout, b, err)
	}
}

// TestVerifyOutput checks verify's default output (verdicts only; a
// rejection's context ending with the kernel's statistics line) and -l.
func TestVerifyOutput(t *testing.T) {
	const loops = "../../testdata/loops.o"
	for _, tc := range []struct {
		args      []string
		code      int
		first     string // the first line
		minLines  int
		maxLines  int
		processed bool // ends with the processed line
		contains  string
	}{
		{args: []string{"verify", "../../testdata/jhash.o"}, first: "jhash_entry: accepted", minLines: 1, maxLines: 1},
		{args: []string{"verify", "-p", "forever", loops}, first: "forever: accepted", minLines: 1, maxLines: 1},
		{args: []string{"verify", "-p", "bad_iter_leak", loops}, code: 1, first: "bad_iter_leak: rejected: Unreleased reference id=1 alloc_insn=4",
			minLines: 3, maxLines: contextLines + 2, processed: true, contains: "\nUnreleased reference id=1 alloc_insn=4\nprocessed "},
		{args: []string{"verify", "-l", "0", "-p", "bad_iter_leak", loops}, code: 1, first: "bad_iter_leak: rejected: Unreleased reference id=1 alloc_insn=4", minLines: 1, maxLines: 1},
		// Level 1 keeps nothing of an accepted program, as the kernel's.
		{args: []string{"verify", "-l", "1", "-p", "forever", loops}, first: "forever: accepted", minLines: 2, maxLines: 2, processed: true},
		{args: []string{"verify", "-l", "1", "-p", "bad_iter_leak", loops}, code: 1, first: "bad_iter_leak: rejected: Unreleased reference id=1 alloc_insn=4", minLines: 4, maxLines: 1000, processed: true},
		{args: []string{"verify", "-l", "5", "-p", "forever", loops}, first: "forever: accepted", minLines: 6, maxLines: 6, contains: "\nverification time "},
		{args: []string{"verify", "-l", "6", "-p", "forever", loops}, first: "forever: accepted", minLines: 10, maxLines: 1000, contains: "\nverification time "},
		{args: []string{"verify", "-l", "2", "-p", "forever", loops}, first: "forever: accepted", minLines: 10, maxLines: 1000, processed: true},
		// Programs the verifier has no rules for are not "accepted".
		{args: []string{"verify", "-p", "unspec", "testdata/mixed.o"}, first: "unspec: " + notVerified, minLines: 1, maxLines: 1},
		{args: []string{"verify", "-l", "1", "-p", "unspec", "testdata/mixed.o"}, first: "unspec: " + notVerified, minLines: 1, maxLines: 1},
		// Every program of a file, each on its own.
		{args: []string{"verify", "-l", "0", "testdata/mixed.o"}, code: 1, first: "ok: accepted", minLines: 3, maxLines: 3, contains: "\nrejected: rejected: invalid access to packet"},
	} {
		code, stdout, stderr := runCLI(t, "", tc.args...)
		lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		name := strings.Join(tc.args, " ")
		if code != tc.code || lines[0] != tc.first || len(lines) < tc.minLines || len(lines) > tc.maxLines {
			t.Errorf("bpfvm %s: exit %d (want %d), %d lines (want %d to %d), first %q (want %q); stderr %q",
				name, code, tc.code, len(lines), tc.minLines, tc.maxLines, lines[0], tc.first, stderr)
		}
		if last := lines[len(lines)-1]; tc.processed != processedLine.MatchString(last) {
			t.Errorf("bpfvm %s: last line %q, want the processed line: %v", name, last, tc.processed)
		}
		if !strings.Contains(stdout, tc.contains) {
			t.Errorf("bpfvm %s: output lacks %q:\n%s", name, tc.contains, stdout)
		}
	}
	// The rest of mixed.o: the syscall program calls a helper bpfvm lacks and fails to load, named on stderr.
	_, stdout, stderr := runCLI(t, "", "verify", "testdata/mixed.o")
	if !strings.Contains(stderr, "bpfvm verify: testdata/mixed.o: program probe: insn 2: unknown helper bpf_task_pt_regs#175") ||
		!strings.Contains(stdout, "unspec: "+notVerified) || strings.Contains(stdout, "unspec: accepted") {
		t.Errorf("stdout %q, stderr %q", stdout, stderr)
	}
}

// veristatRow finds the fields of a table row by file and program.
func veristatRow(out, file, prog string) []string {
	for _, l := range strings.Split(out, "\n") {
		f := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(l), -1)
		if len(f) >= 2 && f[0] == file && f[1] == prog {
			return f
		}
	}
	return nil
}

// TestVeristat checks per-program rows whatever the other programs do,
// unverified programs shown as such, --kernel without a panic, the
// summary and -q.
func TestVeristat(t *testing.T) {
	code, stdout, stderr := runCLI(t, "", "veristat", "-e", "file,prog,verdict,insns", "testdata/mixed.o", "../../testdata/loops.o")
	if code != 1 || !strings.Contains(stderr, "bpfvm veristat: testdata/mixed.o: program probe: insn 2: unknown helper bpf_task_pt_regs#175") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	for _, tc := range []struct{ file, prog, verdict, insns string }{
		{"mixed.o", "ok", "success", "2"},
		{"mixed.o", "rejected", "failure", "2"},
		{"mixed.o", "probe", "error", "N/A"},
		{"mixed.o", "unspec", "not verified", "N/A"},
		{"loops.o", "bad_iter_leak", "failure", "7"},
		{"loops.o", "forever", "success", "15"},
	} {
		row := veristatRow(stdout, tc.file, tc.prog)
		if len(row) != 4 || row[2] != tc.verdict || row[3] != tc.insns {
			t.Errorf("%s/%s: row %q, want %s %s", tc.file, tc.prog, row, tc.verdict, tc.insns)
		}
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if n := len(lines); n < 3 || !strings.HasPrefix(lines[n-2], "----") ||
		lines[n-1] != "Done. Processed 2 files, 19 programs. Skipped 0 files, 0 programs." {
		t.Errorf("no closing rule and summary:\n%s", stdout)
	}
	// -q: nothing on stderr; CSV: no summary.
	code, stdout, stderr = runCLI(t, "", "veristat", "-q", "-o", "csv", "testdata/mixed.o")
	if code != 1 || stderr != "" || strings.Contains(stdout, "Done.") || !strings.Contains(stdout, "mixed.o,unspec,not verified,") {
		t.Errorf("-q -o csv: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	// --kernel never panics: the kernel's load errors are rows.
	code, stdout, stderr = runCLI(t, "", "veristat", "--kernel", "-e", "file,prog,verdict,kernel_verdict", "testdata/mixed.o", "testdata/unsupported_map.o")
	kernel := kernelAvailable()
	for _, tc := range []struct{ file, prog, verdict, kernel string }{
		{"mixed.o", "ok", "success", "success"},
		{"mixed.o", "rejected", "failure", "failure"},
		{"mixed.o", "probe", "error", "success"},
		{"mixed.o", "unspec", "not verified", "error"},
		{"unsupported_map.o", "report", "error", "success"},
	} {
		want := tc.kernel
		if !kernel {
			want = "n/a"
		}
		if row := veristatRow(stdout, tc.file, tc.prog); len(row) != 4 || row[2] != tc.verdict || row[3] != want {
			t.Errorf("--kernel %s/%s: row %q, want %s %s", tc.file, tc.prog, row, tc.verdict, want)
		}
	}
	if code != 1 || kernel && !strings.Contains(stderr, "testdata/mixed.o: program unspec: kernel: program type unspec: not loadable") {
		t.Errorf("--kernel: exit %d, stderr %q", code, stderr)
	}
}

// TestVeristatParallel gives the same output on one job as on every core,
// and a progress line for long runs.
func TestVeristatParallel(t *testing.T) {
	files := []string{"../../testdata/loops.o", "../../testdata/subprog.o", "../../testdata/xdp_parse.o", "../../testdata/globals.o", "testdata/mixed.o"}
	args := append([]string{"veristat", "-q", "-e", "file,prog,verdict,insns,states"}, files...)
	_, one, _ := runCLI(t, "", append(args, "-j", "1")...)
	_, all, _ := runCLI(t, "", append(args, "-j", "8")...)
	if one != all || !strings.Contains(one, "Processed 5 files") {
		t.Errorf("-j 1:\n%s\n-j 8:\n%s", one, all)
	}
	var progress bytes.Buffer
	results := veristatFiles(append(files, "../../testdata/jhash.o"), veristatOptions{}, 1, &progress, 0, time.Millisecond)
	if len(results) != 6 || len(results[5].rows) != 1 || results[5].rows[0]["verdict"] != "success" {
		t.Errorf("results %v", results)
	}
	if !regexp.MustCompile(`\rveristat: \d/6 files, .*\rveristat: 6/6 files, done\n$`).MatchString(progress.String()) {
		t.Errorf("progress %q", progress.String())
	}
	// On jobs goroutines, that many files are verified at once.
	for _, jobs := range []int{1, 3} {
		heavy := []string{"../../testdata/jhash.o", "../../testdata/jhash.o", "../../testdata/jhash.o", "../../testdata/jhash.o", "../../testdata/jhash.o", "../../testdata/jhash.o"}
		if got := maxOverlap(veristatFiles(heavy, veristatOptions{}, jobs, nil, time.Hour, time.Hour)); got != jobs {
			t.Errorf("-j %d: at most %d files at once", jobs, got)
		}
	}
}

// maxOverlap is how many of the files were being verified at once, at
// most.
func maxOverlap(results []fileStats) int {
	most := 0
	for _, r := range results {
		n := 0
		for _, o := range results {
			if !o.start.After(r.start) && o.end.After(r.start) {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// TestVeristatCompare prints +0 (+0.00%) for equal values, as the kernel's
// veristat does, and percentages from 0.
func TestVeristatCompare(t *testing.T) {
	dir := t.TempDir()
	base, next := filepath.Join(dir, "a.csv"), filepath.Join(dir, "b.csv")
	os.WriteFile(base, []byte("file_name,prog_name,verdict,total_insns,total_states\nx.o,p,success,100,0\nx.o,q,failure,7,5\n"), 0o644)
	os.WriteFile(next, []byte("file_name,prog_name,verdict,total_insns,total_states\nx.o,p,success,100,3\nx.o,q,success,14,0\n"), 0o644)
	code, stdout, stderr := runCLI(t, "", "veristat", "-C", base, next)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, tc := range []struct {
		prog string
		want []string
	}{
		{"p", []string{"success", "success", "MATCH", "100", "100", "+0 (+0.00%)", "0", "3", "+3 (+100.00%)"}},
		{"q", []string{"failure", "success", "MISMATCH", "7", "14", "+7 (+100.00%)", "5", "0", "-5 (-100.00%)"}},
	} {
		row := veristatRow(stdout, "x.o", tc.prog)
		if len(row) != 11 || strings.Join(row[2:], "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: row %q, want %q", tc.prog, row, tc.want)
		}
	}
	// A real run compared with itself: no differences in the counts.
	csv := filepath.Join(dir, "loops.csv")
	_, out, _ := runCLI(t, "", "veristat", "-o", "csv", "-e", "file,prog,verdict,insns", "../../testdata/loops.o")
	os.WriteFile(csv, []byte(out), 0o644)
	_, stdout, _ = runCLI(t, "", "veristat", "-C", csv, csv)
	if strings.Count(stdout, "+0 (+0.00%)") != 15 {
		t.Errorf("self-compare:\n%s", stdout)
	}
}

// TestVersion prints the module version, Go's and the engines.
func TestVersion(t *testing.T) {
	code, stdout, stderr := runCLI(t, "", "version")
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "bpfvm ") ||
		lines[1] != "go: "+runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH || !strings.HasPrefix(lines[2], "engines: interp") {
		t.Fatalf("exit %d, stderr %q, stdout %q", code, stderr, stdout)
	}
	if jit := runtime.GOARCH == "amd64" && runtime.GOOS == "linux"; jit != strings.HasSuffix(lines[2], ", jit") {
		t.Errorf("engines %q on %s/%s", lines[2], runtime.GOOS, runtime.GOARCH)
	}
}

// TestHexDump prints bytes as bpftool prog run's hex_print, compared with
// the output of bpftool 7.1 for the same bytes.
func TestHexDump(t *testing.T) {
	telnet, err := os.ReadFile("../../examples/xdp_filter/telnet.pkt")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, ""},
		{"telnet.pkt", telnet, "0000000\t0200 0000 0002 0200 0000 0001 0800 4500 | ........ ......E.\n" +
			"0000010\t0028 0001 0000 4006 66cd 0a00 0001 0a00 | .(....@. f.......\n" +
			"0000020\t0002 9c40 0017 0000 0001 0000 0000 5002 | ...@.... ......P.\n" +
			"0000030\tffff 0000 0000                          | ......\n"},
		{"24 zeros", make([]byte, 24), "0000000\t0000 0000 0000 0000 0000 0000 0000 0000 | ........ ........\n" +
			"0000010\t0000 0000 0000 0000                     | ........ \n"},
		{"odd", []byte("abc"), "0000000\t6162 63" + strings.Repeat(" ", 33) + "| abc\n"},
	} {
		var b bytes.Buffer
		hexDump(&b, tc.in)
		if b.String() != tc.want {
			t.Errorf("%s:\n%q\nwant\n%q", tc.name, b.String(), tc.want)
		}
	}
}

// TestJSONOutput checks -j/--json/--pretty, before the command as with
// bpftool (bpfvm -j run ...) or after it, and errors as {"error": ...}.
func TestJSONOutput(t *testing.T) {
	const mixed = "testdata/mixed.o"
	pkt := "--data-hex=" + strings.Repeat("ab", 20)
	for _, tc := range []struct {
		args []string
		code int
		want string // a regular expression for the compact document
	}{
		{[]string{"-j", "version"}, 0, `^\{"version":"[^"]+","go_version":"go[^"]+","platform":"` + runtime.GOOS + "/" + runtime.GOARCH + `","engines":\["interp"(,"jit")?\]\}\n$`},
		{[]string{"run", mixed, "-p", "ok", pkt, "-j"}, 0, `^\{"retval":2,"duration":\d+\}\n$`},
		{[]string{"-j", "run", mixed, "-p", "ok", pkt, "--data-out", "-"}, 0, `^\{"data_out":\[(171,){19}171\],"retval":2,"duration":\d+\}\n$`},
		{[]string{"run", "--json", mixed, "-p", "nope"}, 2, `^\{"error":"usage: no program \\"nope\\" in testdata/mixed.o; programs: ok, probe, rejected, unspec"\}\n$`},
		{[]string{"-j", "run", "testdata/missing.o", "-p", "x"}, 1, `^\{"error":"open testdata/missing.o: no such file or directory"\}\n$`},
		{[]string{"verify", "-j", mixed}, 1, `^\[\{"program":"ok","verdict":"accepted"\},` +
			`\{"program":"probe","verdict":"error","error":"testdata/mixed.o: program probe: insn 2: unknown helper bpf_task_pt_regs#175"\},` +
			`\{"program":"rejected","verdict":"rejected","error":"invalid access to packet, off=0 size=1, R1\(id=0,off=0,r=0\)","log":\[.*"; return data\[0\]; @ mixed.c:17",.*"processed 2 insns \(limit 1000000\) [^"]*"\]\},` +
			`\{"program":"unspec","verdict":"not verified"\}\]\n$`},
		{[]string{"-j", "dump", "-p", "ok", mixed}, 0, `^\{"programs":\[\{"name":"ok","section":"xdp","type":"xdp","insns":2,"xlated":\[\{"src":"return XDP_PASS;","disasm":"\(b7\) r0 = 2"\},\{"disasm":"\(95\) exit"\}\]\}\],"maps":\[\]\}\n$`},
		{[]string{"-j", "dump", "--xlated", mixed}, 1, `"name":"probe","section":"syscall","type":"syscall","insns":8,"error":"testdata/mixed.o: program probe: insn 2: unknown helper bpf_task_pt_regs#175"`},
		// veristat: -o json, and --json (-j is its jobs) as bpfvm -j.
		{[]string{"veristat", "-q", "-o", "json", "-e", "file,prog,verdict,insns", mixed}, 1, `^\[\{"file_name":"mixed.o","prog_name":"ok","verdict":"success","total_insns":2\},` +
			`\{"file_name":"mixed.o","prog_name":"probe","verdict":"error","total_insns":null\},` +
			`\{"file_name":"mixed.o","prog_name":"rejected","verdict":"failure","total_insns":2\},` +
			`\{"file_name":"mixed.o","prog_name":"unspec","verdict":"not verified","total_insns":null\}\]\n$`},
		{[]string{"-j", "veristat", "-q", "-e", "prog,verdict", "-f", "ok", mixed}, 0, `^\[\{"prog_name":"ok","verdict":"success"\}\]\n$`},
		{[]string{"-j", "dump", "testdata/unsupported_map.o"}, 0, `"maps":\[\{"name":"socks","type":"user_ringbuf","key_size":0,"value_size":0,"max_entries":\d+,"flags":0\}\]`},
	} {
		code, stdout, stderr := runCLI(t, "", tc.args...)
		if code != tc.code || !regexp.MustCompile(tc.want).MatchString(stdout) {
			t.Errorf("bpfvm %s: exit %d (want %d)\nstdout %q\nwant %q\nstderr %q", strings.Join(tc.args, " "), code, tc.code, stdout, tc.want, stderr)
		}
		if stderr != "" {
			t.Errorf("bpfvm %s: stderr %q in JSON mode", strings.Join(tc.args, " "), stderr)
		}
		if !json.Valid([]byte(stdout)) {
			t.Errorf("bpfvm %s: not one JSON document: %q", strings.Join(tc.args, " "), stdout)
		}
	}
	// --pretty (-p before the command): bpftool's four-space indent.
	code, stdout, _ := runCLI(t, "", "-p", "run", mixed, "-p", "ok", pkt)
	if want := regexp.MustCompile("^\\{\n    \"retval\": 2,\n    \"duration\": \\d+\n\\}\n$"); code != 0 || !want.MatchString(stdout) {
		t.Errorf("-p run: exit %d, %q", code, stdout)
	}
}

// veristatProgs returns the program column of a veristat table, in order.
func veristatProgs(out string) []string {
	var progs []string
	lines := strings.Split(out, "\n")
	for _, l := range lines[min(2, len(lines)):] {
		f := strings.Fields(l)
		if len(f) < 2 || strings.HasPrefix(l, "----") || f[0] == "Done." {
			continue
		}
		progs = append(progs, f[1])
	}
	return progs
}

// TestVeristatFilters checks -f (name globs, statistic comparisons,
// denials, @file), -s with veristat's order suffixes and -n, with the
// kernel's veristat's rules, and the summary's counts.
func TestVeristatFilters(t *testing.T) {
	const mixed, loops = "testdata/mixed.o", "../../testdata/loops.o"
	filterFile := filepath.Join(t.TempDir(), "filters")
	os.WriteFile(filterFile, []byte("# comment\n\nloops.o/for_*\n!for_const\n"), 0o644)
	for _, tc := range []struct {
		args    []string
		progs   string // the programs in the table, in order
		summary string
	}{
		// A glob matches the file or the program name.
		{[]string{"-f", "ok", mixed, loops}, "ok", "Processed 2 files, 1 programs. Skipped 0 files, 18 programs."},
		// A glob without / lets every file through to check its programs.
		{[]string{"-f", "mixed.o", mixed, loops}, "ok probe rejected unspec", "Processed 2 files, 4 programs. Skipped 0 files, 15 programs."},
		{[]string{"-f", "*.o/*_sum", mixed, loops}, "for_sum loop_sum", "Processed 2 files, 2 programs. Skipped 0 files, 17 programs."},
		{[]string{"-f", "/*iter*", loops}, "bad_iter_deref_null bad_iter_leak bad_iter_uninit", "Processed 1 files, 3 programs. Skipped 0 files, 12 programs."},
		{[]string{"-f", "mix*/", mixed, loops}, "ok probe rejected unspec", "Processed 1 files, 4 programs. Skipped 1 files, 0 programs."},
		// Denials win; a file denial drops the whole file.
		{[]string{"-f", "!loops.o", mixed, loops}, "ok probe rejected unspec", "Processed 1 files, 4 programs. Skipped 1 files, 0 programs."},
		{[]string{"-f", "!*e*", mixed}, "", "Processed 0 files, 0 programs. Skipped 1 files, 0 programs."},
		{[]string{"-f", "!/*e*", mixed}, "ok", "Processed 1 files, 1 programs. Skipped 0 files, 3 programs."},
		{[]string{"-f", "@" + filterFile, loops}, "for_array for_empty for_nested for_sum", "Processed 1 files, 4 programs. Skipped 0 files, 11 programs."},
		// Statistics: the rows shown; the programs were processed.
		{[]string{"-f", "insns>235", loops}, "for_const", "Processed 1 files, 15 programs."},
		{[]string{"-f", "insns>=178", "-f", "insns<9", loops}, "bad_iter_leak bad_iter_uninit for_array for_const for_nested", "Processed 1 files, 15 programs."},
		{[]string{"-f", "verdict=failure", loops}, "bad_iter_deref_null bad_iter_leak bad_iter_uninit", "Processed 1 files, 15 programs."},
		// N/A matches no comparison.
		{[]string{"-f", "!verdict==success", "-f", "!insns<>2", mixed}, "probe rejected unspec", "Processed 1 files, 4 programs."},
		{[]string{"-f", "insns=2", mixed}, "ok rejected", "Processed 1 files, 4 programs."},
		{[]string{"-f", "states=1", "-f", "!verdict=s", loops}, "bad_iter_deref_null bad_iter_uninit", "Processed 1 files, 15 programs."},
		// Sorting: numbers descending by default, ^ ascending, v descending.
		{[]string{"-s", "insns", "-n", "3", loops}, "for_const for_nested for_array", "Processed 1 files, 15 programs."},
		{[]string{"-s", "insns^", "-n", "2", loops}, "bad_iter_uninit bad_iter_leak", "Processed 1 files, 15 programs."},
		{[]string{"-s", "verdict,insns^", "-n", "4", loops}, "bad_iter_uninit bad_iter_leak bad_iter_deref_null forever", "Processed 1 files, 15 programs."},
		{[]string{"-s", "verdictv,insns^", "-n", "2", loops}, "forever loop_empty", "Processed 1 files, 15 programs."},
		{[]string{"-s", "prog_name:desc", "-n", "2", loops}, "repeat loop_sum", "Processed 1 files, 15 programs."},
	} {
		args := append([]string{"veristat", "-q", "-e", "file,prog,verdict,insns"}, tc.args...)
		_, stdout, stderr := runCLI(t, "", args...)
		if got := strings.Join(veristatProgs(stdout), " "); got != tc.progs || !strings.Contains(stdout, "Done. "+tc.summary) {
			t.Errorf("bpfvm %s:\nprograms %q, want %q (summary %q)\n%s%s", strings.Join(args, " "), got, tc.progs, tc.summary, stdout, stderr)
		}
	}
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"-f", "nope>1"}, `usage: filter "nope>1": unknown statistic "nope"`},
		{[]string{"-f", "insns>many"}, `usage: filter "insns>many": "many" is not an integer`},
		{[]string{"-f", "prog=1"}, `usage: filter "prog=1": prog_name is not a number`},
		{[]string{"-f", "@/no/such/file"}, "filters: open /no/such/file"},
		{[]string{"-s", "insns:up"}, `usage: sort field "insns": unknown order "up"`},
		{[]string{"-v", "-q"}, "usage: -v and -q are exclusive"},
		{[]string{"-C", "-R", "a", "b"}, "usage: -C and -R are exclusive"},
	} {
		args := append(append([]string{"veristat"}, tc.args...), mixed)
		if code, _, stderr := runCLI(t, "", args...); code != 2 || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("bpfvm %s: exit %d, stderr %q, want 2 and %q", strings.Join(args, " "), code, stderr, tc.stderr)
		}
	}
}

// TestGlobMatch matches as veristat's glob_matches: * only.
func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		s, pat string
		want   bool
	}{
		{"", "", true}, {"a", "", false}, {"", "*", true}, {"abc", "*", true},
		{"abc", "a*", true}, {"abc", "*c", true}, {"abc", "a*c", true}, {"abc", "*b*", true},
		{"abc", "*d*", false}, {"abc", "ab", false}, {"ab", "abc", false}, {"a?c", "a?c", true},
		{"abc", "a?c", false}, {"aXbXc", "a*b*c", true}, {"acb", "a*b*c", false}, {"abcbc", "a**bc", true},
	} {
		if got := globMatch(tc.s, tc.pat); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v", tc.s, tc.pat, got)
		}
	}
}

// TestVeristatVerbose checks -v (each program's log, veristat's
// PROCESSING header, at -l), and -t's flag reaching the verifier.
func TestVeristatVerbose(t *testing.T) {
	const mixed = "testdata/mixed.o"
	for _, tc := range []struct {
		args []string
		want string // a regular expression
		not  string
	}{
		{[]string{"-v", "-f", "/ok"}, `^PROCESSING testdata/mixed.o/ok, DURATION US: \d+, VERDICT: success, VERIFIER LOG:\n` +
			`verification time \d+ usec\nstack depth 0\nprocessed 2 insns .*\n(.*\n)*\nFile `, ""},
		{[]string{"-v", "-l", "2", "-f", "/ok"}, `\n0: \(b7\) r0 = 2 +; R0=2\n`, ""},
		{[]string{"-v", "-f", "/rejected"}, `VERDICT: failure, VERIFIER LOG:\n(.*\n)*invalid access to packet, off=0 size=1, R1\(id=0,off=0,r=0\)\n`, ""},
		{[]string{"-v", "-f", "/probe"}, `VERDICT: error, VERIFIER LOG:\ntestdata/mixed.o: program probe: insn 2: unknown helper bpf_task_pt_regs#175\n`, ""},
		{[]string{"-v", "-f", "nope/"}, `^Skipping 'testdata/mixed.o' due to filters...\n`, "PROCESSING"},
		// Without -v, -l changes nothing, as in veristat.
		{[]string{"-l", "2", "-f", "/ok"}, `^File `, "PROCESSING"},
	} {
		args := append(append([]string{"veristat"}, tc.args...), mixed)
		_, stdout, _ := runCLI(t, "", args...)
		if !regexp.MustCompile(tc.want).MatchString(stdout) || tc.not != "" && strings.Contains(stdout, tc.not) {
			t.Errorf("bpfvm %s:\n%s\nwant %q, not %q", strings.Join(args, " "), stdout, tc.want, tc.not)
		}
	}
	// -t and -r reach the verifier as load flags it takes (BPF_F_TEST_STATE_FREQ
	// and BPF_F_TEST_REG_INVARIANTS): the same verdicts.
	args := []string{"veristat", "-q", "-o", "csv", "-e", "prog,verdict", "../../testdata/loops.o"}
	_, plain, _ := runCLI(t, "", args...)
	for _, flag := range []string{"-t", "-r"} {
		if _, out, _ := runCLI(t, "", append(args, flag)...); out != plain || !strings.Contains(out, "for_sum,success") {
			t.Errorf("%s:\n%s\nwithout:\n%s", flag, out, plain)
		}
	}
}

// TestVeristatReplay checks -R (a CSV printed again, filtered and sorted)
// and that veristat's own CSV columns are read, and -C's CSV columns.
func TestVeristatReplay(t *testing.T) {
	dir := t.TempDir()
	// The kernel veristat's CSV header and rows, as veristat 0.5 writes them.
	csvFile := filepath.Join(dir, "veristat.csv")
	os.WriteFile(csvFile, []byte("file_name,prog_name,verdict,duration,total_insns,total_states,peak_states,max_states_per_insn,max_mark_read_len,prog_size,prog_size_jited,prog_type,attach_type,stack_depth,mem_peak\n"+
		"a.o,p1,success,10,100,5,5,1,0,20,120,xdp,xdp,8,0\n"+
		"a.o,p2,failure,20,300,9,8,2,0,30,0,xdp,xdp,0,0\n"+
		"b.o,p3,success,30,200,7,6,1,0,25,140,sched_cls,N/A,16,0\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-R", "-o", "csv", csvFile}, "file_name,prog_name,verdict,duration,total_insns,total_states,peak_states,max_states_per_insn,max_mark_read_len,prog_size,prog_size_jited,prog_type,attach_type,stack_depth,mem_peak\n" +
			"a.o,p1,success,10,100,5,5,1,0,20,120,xdp,xdp,8,0\na.o,p2,failure,20,300,9,8,2,0,30,0,xdp,xdp,0,0\nb.o,p3,success,30,200,7,6,1,0,25,140,sched_cls,N/A,16,0\n"},
		{[]string{"-R", "-o", "csv", "-e", "prog,insns,stack", "-s", "insns", csvFile}, "prog_name,total_insns,stack_depth\np2,300,0\np3,200,16\np1,100,8\n"},
		{[]string{"-R", "-o", "csv", "-e", "prog", "-f", "verdict=success", "-f", "!b.o", csvFile}, "prog_name\np1\n"},
		{[]string{"-R", "-o", "json", "-e", "prog,insns,prog_type", "-n", "1", csvFile}, `[{"prog_name":"p1","total_insns":100,"prog_type":"xdp"}]` + "\n"},
	} {
		code, stdout, stderr := runCLI(t, "", append([]string{"veristat"}, tc.args...)...)
		if code != 0 || stdout != tc.want {
			t.Errorf("veristat %s: exit %d, stderr %q\n%s\nwant\n%s", strings.Join(tc.args, " "), code, stderr, stdout, tc.want)
		}
	}
	// -C: veristat's NAME_base, NAME_comp, NAME_diff columns, and
	// filters and sorting on the variants.
	other := filepath.Join(dir, "other.csv")
	os.WriteFile(other, []byte("file_name,prog_name,verdict,total_insns\na.o,p1,success,150\na.o,p2,success,300\nb.o,p3,success,100\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-e", "verdict,insns"}, "file_name,prog_name,verdict_base,verdict_comp,verdict_diff,total_insns_base,total_insns_comp,total_insns_diff\n" +
			"a.o,p1,success,success,MATCH,100,150,+50 (+50.00%)\na.o,p2,failure,success,MISMATCH,300,300,+0 (+0.00%)\nb.o,p3,success,success,MATCH,200,100,-100 (-50.00%)\n"},
		{[]string{"-e", "prog,insns", "-f", "insns_diff<0"}, "file_name,prog_name,total_insns_base,total_insns_comp,total_insns_diff\nb.o,p3,200,100,-100 (-50.00%)\n"},
		{[]string{"-e", "prog,insns", "-f", "verdict_diff=mismatch"}, "file_name,prog_name,total_insns_base,total_insns_comp,total_insns_diff\na.o,p2,300,300,+0 (+0.00%)\n"},
		{[]string{"-e", "prog,insns", "-s", "|insns_pct|"}, "file_name,prog_name,total_insns_base,total_insns_comp,total_insns_diff\n" +
			"a.o,p1,100,150,+50 (+50.00%)\nb.o,p3,200,100,-100 (-50.00%)\na.o,p2,300,300,+0 (+0.00%)\n"},
		{[]string{"-e", "prog,insns", "-s", "insns_a^", "-n", "1"}, "file_name,prog_name,total_insns_base,total_insns_comp,total_insns_diff\na.o,p1,100,150,+50 (+50.00%)\n"},
	} {
		args := append(append([]string{"veristat", "-C", "-o", "csv"}, tc.args...), csvFile, other)
		code, stdout, stderr := runCLI(t, "", args...)
		if code != 0 || stdout != tc.want {
			t.Errorf("bpfvm %s: exit %d, stderr %q\n%s\nwant\n%s", strings.Join(args, " "), code, stderr, stdout, tc.want)
		}
	}
}

// kernelAvailable reports whether this process can load programs into the
// kernel (root, a bpf() that works: not under qemu-user, for one).
func kernelAvailable() bool {
	if os.Getuid() != 0 {
		return false
	}
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.SocketFilter, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}})
	if err != nil {
		return false
	}
	p.Close()
	return true
}
