package main

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
)

// kernelLog loads one program of an object into the running kernel at a
// log level and returns its verifier log; ok is false without bpf().
func kernelLog(t *testing.T, obj, prog string, level ebpf.LogLevel) (string, bool) {
	t.Helper()
	if os.Getuid() != 0 || rlimit.RemoveMemlock() != nil {
		return "", false
	}
	spec, err := openObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	for name := range spec.Programs {
		if name != prog {
			delete(spec.Programs, name)
		}
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{LogLevel: level, LogSizeStart: 1 << 20}})
	if err == nil {
		defer coll.Close()
		return coll.Programs[prog].VerifierLog, true
	}
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		return strings.Join(ve.Log, "\n"), true
	}
	t.Logf("kernel: %v", err)
	return "", false
}

// ourLog verifies one program of an object here at a log level.
func ourLog(t *testing.T, obj, prog string, level int) string {
	t.Helper()
	spec, err := openObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	l := loadOne(obj, spec, prog, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{LogLevel: bpfvm.LogLevel(level)}})
	defer l.close()
	var ve *bpfvm.VerifierError
	switch {
	case l.err == nil:
		return l.prog.VerifierLog
	case errors.As(l.err, &ve):
		return strings.Join(ve.Log, "\n")
	}
	t.Fatal(l.err)
	return ""
}

var insnLine = regexp.MustCompile(`^(\d+): \(`)

// sourceTrace is where a log shows source lines: each "; line @ file:N"
// and the number of each instruction line, in order.
func sourceTrace(log string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.HasPrefix(l, "; ") {
			out = append(out, l)
		} else if m := insnLine.FindStringSubmatch(l); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// TestVerifierSourceLines compares where the verifier log shows BTF source
// lines ("; text @ file.c:N", the kernel's verbose_linfo) with the running
// kernel's log, at levels 1 and 2, on programs both walk the same way.
func TestVerifierSourceLines(t *testing.T) {
	for _, tc := range []struct {
		obj, prog string
		level     int
		want      string // a line ours must hold, with or without the kernel
	}{
		{"testdata/mixed.o", "rejected", 1, "; unsigned char *data = (void *)(long)ctx->data; @ mixed.c:16"},
		{"testdata/mixed.o", "rejected", 2, "; return data[0]; @ mixed.c:17"},
		{"testdata/maps_cli.o", "count", 2, "; if (data + sizeof(struct flow) <= end) { @ maps_cli.c:69"},
		{"../../testdata/subprog.o", "subprog_entry", 2, "; "},
		{"../../testdata/loops.o", "bad_iter_leak", 1, "; "},
		{"../../testdata/loops.o", "bad_iter_deref_null", 2, "; "},
	} {
		ours := ourLog(t, tc.obj, tc.prog, tc.level)
		if !strings.Contains(ours, "\n"+tc.want) {
			t.Errorf("%s/%s level %d: no %q in\n%s", tc.obj, tc.prog, tc.level, tc.want, ours)
		}
		klog, ok := kernelLog(t, tc.obj, tc.prog, ebpf.LogLevel(tc.level))
		if !ok {
			continue
		}
		if got, want := sourceTrace(ours), sourceTrace(klog); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s/%s level %d: source lines and instructions\nours:\n%s\nkernel:\n%s", tc.obj, tc.prog, tc.level, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestVerifierLevel1Log compares whole level-1 logs with the kernel's: an
// accepted function leaves nothing but the statistics (and a global
// function's "is safe" line), a rejected program only the path that
// failed, with the branch it was queued at, as the kernel's rewinds leave
// it.
func TestVerifierLevel1Log(t *testing.T) {
	for _, tc := range []struct {
		obj, prog string
		want      string // the log before the statistics
	}{
		{"testdata/logs.o", "branches", ""},
		{"testdata/maps_cli.o", "count", ""},
		{"testdata/logs.o", "with_global", "Func#1 ('check') is safe for any args that match its prototype\n"},
		{"testdata/logs.o", "late_reject", "\n; return p[8]; @ logs.c:34\n12: (71) r0 = *(u8 *)(r1 +8)\ninvalid access to packet, off=8 size=1, R1(id=0,off=8,r=4)\n"},
		{"testdata/logs.o", "queued_reject", "7: (15) if r2 == 0x1 goto pc+5 13: R0=2 R1=pkt(r=4) R2=1 R3=pkt(off=4,r=4) R10=fp0\n" +
			"; return p[9]; @ logs.c:52\n13: (71) r0 = *(u8 *)(r1 +9)\ninvalid access to packet, off=9 size=1, R1(id=0,off=9,r=4)\n"},
	} {
		ours, _ := splitLog(ourLog(t, tc.obj, tc.prog, 1))
		if !strings.HasSuffix(ours, tc.want) || tc.want == "" && ours != "" {
			t.Errorf("%s: level 1 log ends\n%q\nwant\n%q", tc.prog, ours, tc.want)
		}
		klog, ok := kernelLog(t, tc.obj, tc.prog, ebpf.LogLevelBranch)
		if !ok {
			continue
		}
		kbody, _ := splitLog(klog)
		// The kernel explains some errors on a second line bpfvm does
		// not print (the verifier's messages are compared elsewhere).
		if !strings.HasPrefix(kbody, ours) || strings.Count(kbody[len(ours):], "\n") > 1 {
			t.Errorf("%s: level 1 log\n%s\nkernel's\n%s", tc.prog, ours, kbody)
		}
	}
}

// splitLog splits a log before its "processed N insns" line.
func splitLog(log string) (body, stats string) {
	if i := strings.Index(log, "processed "); i >= 0 && (i == 0 || log[i-1] == '\n') {
		return log[:i], log[i:]
	}
	return log, ""
}

// TestVerifierLevel2Branches checks how a level-2 log shows a branch
// taken from the queue, against the kernel's: a blank line, "from X to
// Y:" with the registers, the registers again at Y (print_insn_state),
// then Y's source line and instruction.
func TestVerifierLevel2Branches(t *testing.T) {
	const want = "\n\nfrom 7 to 13: R0=2 R1=pkt(r=4) R2=1 R3=pkt(off=4,r=4) R10=fp0\n13: R0=2 R1=pkt(r=4) R2=1 R3=pkt(off=4,r=4) R10=fp0\n" +
		"; return p[9]; @ logs.c:52\n13: (71) r0 = *(u8 *)(r1 +9)\ninvalid access to packet, off=9 size=1, R1(id=0,off=9,r=4)\n"
	if ours := ourLog(t, "testdata/logs.o", "queued_reject", 2); !strings.Contains(ours, want) {
		t.Errorf("ours lacks\n%s\nin\n%s", want, ours)
	}
	if klog, ok := kernelLog(t, "testdata/logs.o", "queued_reject", ebpf.LogLevelInstruction); ok && !strings.Contains(klog, want) {
		t.Errorf("the kernel's lacks\n%s\nin\n%s", want, klog)
	}
}
