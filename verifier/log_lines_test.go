package verifier

import (
	"testing"

	"bpfvm/isa"
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
			l.closeInsn("")
		}
		if got := l.String(); got != tc.want {
			t.Errorf("pcs %v:\n%s\nwant\n%s", tc.pcs, got, tc.want)
		}
	}
}
