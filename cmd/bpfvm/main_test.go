package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/bpfvm/bpfvm/isa"
)

// runCLI runs a command line; a panic fails the test with the command.
func runCLI(t *testing.T, stdin string, args ...string) (code int, _, _ string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("bpfvm %s: panic: %v", strings.Join(args, " "), r)
			code = -1
		}
	}()
	code = run(args, strings.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"run", "--no-such-flag", "../../examples/xdp_filter/xdp_filter.o"},
		{"run", "../../examples/xdp_filter/xdp_filter.o", "-p", "no_such_prog"},
		{"run", "../../examples/xdp_filter/xdp_filter.o"},
		{"run", "../../examples/xdp_filter/xdp_filter.o", "-p", "xdp_filter", "--engine", "warp"},
		{"dump"},
		{"conformance"},
	} {
		if code, _, stderr := runCLI(t, "", args...); code != 2 {
			t.Errorf("bpfvm %s: exit %d, want 2 (stderr %q)", strings.Join(args, " "), code, stderr)
		}
	}
}

func TestRunExample(t *testing.T) {
	code, stdout, stderr := runCLI(t, "", "run", "../../examples/xdp_filter/xdp_filter.o", "-p", "xdp_filter",
		"--data", "../../examples/xdp_filter/telnet.pkt", "--repeat", "10")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !regexp.MustCompile(`^Return value: 1, duration \(average\): \d+ns\n$`).MatchString(stdout) {
		t.Fatalf("unexpected output %q", stdout)
	}
}

func TestRunRaw(t *testing.T) {
	dir := t.TempDir()
	asm := filepath.Join(dir, "prog.s")
	// Both dialects in one file: r0 = the first 8 bytes of memory + length.
	src := "ldxdw %r0, [%r1]\nr0 += r2\nexit\n"
	if err := os.WriteFile(asm, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	prog, err := isa.Assemble(src)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "prog.bin")
	if err := os.WriteFile(bin, isa.EncodeProgram(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{asm, bin} {
		code, stdout, stderr := runCLI(t, "", "run", "--type", "raw", "--data-hex", "0100000000000000", file)
		if code != 0 || !strings.HasPrefix(stdout, "Return value: 9, duration: ") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", file, code, stdout, stderr)
		}
	}
}

func TestConformanceCommand(t *testing.T) {
	code, stdout, _ := runCLI(t, "", "conformance", "--engine", "interp", "../../testdata/bpf_conformance")
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != 0 || lines[len(lines)-1] != "313 passed, 0 failed" {
		t.Fatalf("exit %d, output:\n%s", code, stdout)
	}
	// A failing test makes the exit status 1 and prints a FAIL line.
	code, stdout, _ = runCLI(t, "", "conformance", "../../testdata/bpf_conformance/negative/incorrect_return_value_high_bits.data")
	if code != 1 || !strings.Contains(stdout, "FAIL incorrect_return_value_high_bits") || !strings.HasSuffix(stdout, "0 passed, 1 failed\n") {
		t.Fatalf("exit %d, output:\n%s", code, stdout)
	}
}

func TestPlugin(t *testing.T) {
	// mov r0, r2 (the memory length); exit
	code, stdout, stderr := runCLI(t, "bf20000000000000 9500000000000000", "plugin", "00010203")
	if code != 0 || stdout != "4\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// A reserved field set: an error on stderr and a non-zero exit.
	code, _, stderr = runCLI(t, "0700010001000000 9500000000000000", "plugin")
	if code == 0 || stderr == "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

func TestDump(t *testing.T) {
	code, stdout, stderr := runCLI(t, "", "dump", "../../testdata/subprog.o")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"PROGRAM", "xdp", "call pc", "exit", "; "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("dump output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestDumpXlatedAndJited(t *testing.T) {
	code, stdout, stderr := runCLI(t, "", "dump", "--xlated", "-p", "array_lookup", "../../testdata/map_perf.o")
	if code != 0 || !strings.Contains(stdout, "r1 = *(u64 *)(r1 +24)") {
		t.Fatalf("xlated: exit %d, stderr %q, output lacks the inlined lookup:\n%s", code, stderr, stdout)
	}
	// Hash lookups inline too (on the default engine, the JIT): no call
	// is left, and the seed and buckets come from the map header.
	code, stdout, stderr = runCLI(t, "", "dump", "--xlated", "-p", "hash_lookup", "../../testdata/map_perf.o")
	jit := runtime.GOARCH == "amd64" && runtime.GOOS == "linux"
	if code != 0 || jit && (strings.Contains(stdout, "call bpf_map_lookup_elem") || !strings.Contains(stdout, "r0 = *(u64 *)(r1 +40)")) {
		t.Fatalf("xlated hash: exit %d, stderr %q, output lacks the inlined lookup:\n%s", code, stderr, stdout)
	}
	// Code the verifier never reached (switch cases on a read-only global)
	// shows as dead.
	code, stdout, stderr = runCLI(t, "", "dump", "--xlated", "-p", "fmt", "../../testdata/helpers_fmt.o")
	if code != 0 || !strings.Contains(stdout, "(e4) dead ; not reached by the verifier") {
		t.Fatalf("xlated dead code: exit %d, stderr %q:\n%s", code, stderr, stdout)
	}
	if !jit {
		return // no machine code to dump
	}
	code, stdout, stderr = runCLI(t, "", "dump", "--jited", "../../examples/xdp_filter/xdp_filter.o")
	if code != 0 || !strings.Contains(stdout, "jited") || !strings.Contains(stdout, "mov") {
		t.Fatalf("jited: exit %d, stderr %q:\n%s", code, stderr, stdout)
	}
}

func TestBench(t *testing.T) {
	if runtime.GOARCH != "amd64" || runtime.GOOS != "linux" {
		t.Skip("bench compares the JIT, which runs on linux/amd64 only")
	}
	code, stdout, stderr := runCLI(t, "", "bench", "--repeat", "10")
	if code != 0 || !strings.Contains(stdout, "map_perf array") || !strings.Contains(stdout, "jhash") ||
		!strings.Contains(stdout, "ALU loop") || !strings.Contains(stdout, "jit far retpoline") || !strings.Contains(stdout, "get_prandom_u32") ||
		!strings.Contains(stdout, "percpu_array, repeat") {
		t.Fatalf("exit %d, stderr %q:\n%s", code, stderr, stdout)
	}
}
