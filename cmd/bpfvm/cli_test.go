package main

import (
	"bytes"
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
		{[]string{"run", mixed, "-p", "probe"}, 1, `^$`, "testdata/mixed.o: program probe: program type kprobe: not supported"},
		{[]string{"run", "testdata/stack_map.o", "-p", "report", pkt}, 1, `^$`, "testdata/stack_map.o: program report: map stacks: type stack_trace:"},
		{[]string{"verify", "testdata/stack_map.o"}, 1, `^$`, "map stacks: type stack_trace:"},
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
		{[]string{"veristat", "-o", "xml", mixed}, 2, `^$`, "usage: -o must be table or csv"},
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
	want := regexp.MustCompile(`^data_out:\n(ab ){15}ab\n(ab ){3}ab\nReturn value: 2, duration: \d+ns\n$`)
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
		{args: []string{"verify", "-l", "1", "-p", "forever", loops}, first: "forever: accepted", minLines: 10, maxLines: 1000, processed: true},
		{args: []string{"verify", "-l", "1", "-p", "bad_iter_leak", loops}, code: 1, first: "bad_iter_leak: rejected: Unreleased reference id=1 alloc_insn=4", minLines: 4, maxLines: 1000, processed: true},
		{args: []string{"verify", "-l", "5", "-p", "forever", loops}, first: "forever: accepted", minLines: 10, maxLines: 1000, contains: "\nverification time "},
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
	// The rest of mixed.o: the kprobe fails to load, named on stderr.
	_, stdout, stderr := runCLI(t, "", "verify", "testdata/mixed.o")
	if !strings.Contains(stderr, "bpfvm verify: testdata/mixed.o: program probe: program type kprobe: not supported") ||
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
	if code != 1 || !strings.Contains(stderr, "bpfvm veristat: testdata/mixed.o: program probe: program type kprobe: not supported") {
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
	code, stdout, stderr = runCLI(t, "", "veristat", "--kernel", "-e", "file,prog,verdict,kernel_verdict", "testdata/mixed.o", "testdata/stack_map.o")
	kernel := kernelAvailable()
	for _, tc := range []struct{ file, prog, verdict, kernel string }{
		{"mixed.o", "ok", "success", "success"},
		{"mixed.o", "rejected", "failure", "failure"},
		{"mixed.o", "probe", "error", "success"},
		{"mixed.o", "unspec", "not verified", "error"},
		{"stack_map.o", "report", "error", "success"},
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
	results := veristatFiles(append(files, "../../testdata/jhash.o"), false, 1, &progress, 0, time.Millisecond)
	if len(results) != 6 || len(results[5].rows) != 1 || results[5].rows[0]["verdict"] != "success" {
		t.Errorf("results %v", results)
	}
	if !regexp.MustCompile(`\rveristat: \d/6 files, .*\rveristat: 6/6 files, done\n$`).MatchString(progress.String()) {
		t.Errorf("progress %q", progress.String())
	}
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
