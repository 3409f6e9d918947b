package verifier

import (
	"testing"

	"github.com/bpfvm/bpfvm/isa"
)

// TestLogSourceLines prints line_info records as the kernel's
// verbose_linfo: before the first instruction each covers, once for a run
// of records of one file and line, again when a jump comes back.
func TestLogSourceLines(t *testing.T) {
	lines := []LineInfo{
		{Insn: 0, File: "/src/a.c", Line: "\tint x = 1;", LineNum: 3},
		{Insn: 1, File: "/src/a.c", Line: "\tint x = 1;", LineNum: 3}, // another column
		{Insn: 2, File: "/src/a.c", Line: "  return x;", LineNum: 4},
		{Insn: 4, File: "b.h", Line: "x++;", LineNum: 3},
	}
	insns := make([]isa.Instruction, 6)
	for i := range insns {
		insns[i] = isa.Instruction{Op: isa.OpExit}
	}
	for _, tc := range []struct {
		pcs  []int
		want string
	}{
		{[]int{0, 1, 2, 3}, "; int x = 1; @ a.c:3\n0: (95) exit\n1: (95) exit\n; return x; @ a.c:4\n2: (95) exit\n3: (95) exit\n"},
		{[]int{2, 0, 2}, "; return x; @ a.c:4\n2: (95) exit\n; int x = 1; @ a.c:3\n0: (95) exit\n; return x; @ a.c:4\n2: (95) exit\n"},
		// Same number, another file: printed.
		{[]int{3, 4, 5}, "; return x; @ a.c:4\n3: (95) exit\n; x++; @ b.h:3\n4: (95) exit\n5: (95) exit\n"},
	} {
		l := logger{level: 1, lines: lines}
		for _, pc := range tc.pcs {
			l.insn(pc, insns)
			l.closeInsn("", pc+1)
		}
		if got := l.String(); got != tc.want {
			t.Errorf("pcs %v:\n%s\nwant\n%s", tc.pcs, got, tc.want)
		}
	}
}

// TestLogBuffer keeps a log that outgrows its buffer as the kernel's does:
// the last limit-1 bytes (rotating) or the first (fixed), rewinds that
// reach before what is kept, and the true size of the whole.
func TestLogBuffer(t *testing.T) {
	for _, tc := range []struct {
		name      string
		limit     int
		fixed     bool
		ops       func(l *logger)
		want      string
		truncated bool
		trueSize  int
	}{
		{"unlimited", 0, false, func(l *logger) { l.write("abcdef") }, "abcdef", false, 7},
		{"fits", 7, false, func(l *logger) { l.write("abc"); l.write("def") }, "abcdef", false, 7},
		{"rotating", 5, false, func(l *logger) { l.write("abc"); l.write("defg") }, "defg", true, 8},
		{"fixed", 5, true, func(l *logger) { l.write("abc"); l.write("defg") }, "abcd", true, 8},
		{"rewind fits again", 5, false, func(l *logger) { l.write("abc"); p := l.mark(); l.write("defghij"); l.reset(p); l.write("x") }, "x", true, 11},
		{"rewind within", 5, false, func(l *logger) { l.write("abcdef"); l.reset(5); l.write("X") }, "cdeX", true, 7},
		{"fixed rewind", 5, true, func(l *logger) { l.write("abcdef"); l.reset(2); l.write("XY") }, "abXY", true, 7},
		{"empty", 5, false, func(l *logger) {}, "", false, 0},
	} {
		l := logger{level: 1, limit: tc.limit, fixed: tc.fixed}
		tc.ops(&l)
		if l.String() != tc.want || l.truncated() != tc.truncated || l.trueSize() != tc.trueSize {
			t.Errorf("%s: %q truncated %v true size %d, want %q %v %d", tc.name, l.String(), l.truncated(), l.trueSize(), tc.want, tc.truncated, tc.trueSize)
		}
	}
}
