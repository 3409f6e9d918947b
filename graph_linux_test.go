package bpfvm_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// graphRun is testdata/libbpf/graphrun, built with gcc against libbpf-dev:
// the kernel side of the graph tests, which needs libbpf's loading (one
// BTF object for the maps and the programs: cilium/ebpf v0.22 loads them
// as separate objects, so the kernel's graph type matching refuses every
// list and rbtree call of an object it loads). "" when it cannot be built
// or the kernel cannot be asked.
func graphRun(t *testing.T) string {
	t.Helper()
	if !haveKernel(t) {
		return ""
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Log("kernel oracle skipped: no gcc")
		return ""
	}
	bin := filepath.Join(t.TempDir(), "graphrun")
	if out, err := exec.Command(gcc, "-O1", "-o", bin, "testdata/libbpf/graphrun.c", "-lbpf").CombinedOutput(); err != nil {
		t.Logf("kernel oracle skipped: building graphrun (needs libbpf-dev): %v\n%s", err, out)
		return ""
	}
	out, err := exec.Command(bin, "-v", "testdata/graph_fail.o", "ok_control").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Logf("kernel oracle skipped: the kernel does not load the control program: %v\n%s", err, out)
		return ""
	}
	return bin
}

// kernelGraphRuns runs the steps ("prog" or "prog:len") in one load of obj
// in the kernel and returns each run's result.
func kernelGraphRuns(t *testing.T, bin, obj string, steps []string) []string {
	t.Helper()
	out, err := exec.Command(bin, append([]string{obj}, steps...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("graphrun %v: %v\n%s", steps, err, out)
	}
	var res []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			res = append(res, f[1])
		}
	}
	return res
}

// kernelGraphVerdict loads prog of obj alone in the kernel: "" when it
// loads, else the lines of the log's error (after the last instruction).
func kernelGraphVerdict(t *testing.T, bin, obj, prog string) (bool, []string) {
	t.Helper()
	out, err := exec.Command(bin, "-v", obj, prog).CombinedOutput()
	if err != nil {
		t.Fatalf("graphrun -v %s: %v\n%s", prog, err, out)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if lines[0] == "ok" {
		return true, nil
	}
	var msg []string
	for i := len(lines) - 1; i > 0; i-- {
		l := lines[i]
		if l == "" || strings.HasPrefix(l, "processed ") || strings.HasPrefix(l, "verification time") || strings.HasPrefix(l, "stack depth") {
			continue
		}
		if c := strings.IndexByte(l, ':'); c > 0 && strings.Trim(l[:c], "0123456789") == "" {
			break // an instruction line: the error is below it
		}
		msg = append([]string{l}, msg...)
	}
	return false, msg
}
