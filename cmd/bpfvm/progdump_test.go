package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// normalizeKernelXlated maps what in bpftool's dump of the kernel's
// program depends on the host to what bpfvm prints, and nothing else:
//
//   - The kernel's fixups call bpf_get_prandom_u32 as its internal
//     bpf_user_rnd_u32, and bpftool shows a helper call's immediate as the
//     kernel has it, the function's distance from __bpf_call_base: a
//     number of the kernel's build (23440, 22592, ...), or 0 where the
//     kernel hides addresses. bpfvm has no kernel addresses and prints the
//     helper the program calls, by name and id, as bpftool does for the
//     helpers the kernel leaves alone.
//   - A bpf-to-bpf call carries the callee's kallsyms symbol
//     (#bpf_prog_<tag>_<name>) only where bpftool can read /proc/kallsyms
//     (root, kptr_restrict); bpfvm prints it always, with the kernel's
//     tag. Where the kernel's dump has none, bpftool printed the bare
//     "call pc+N", and the symbol is taken out of ours (sameCallSymbols).
//   - The opcode lines of calls hold the kernel's immediates and offsets.
func normalizeKernelXlated(s string) string {
	s = regexp.MustCompile(`call bpf_user_rnd_u32#-?\d+`).ReplaceAllString(s, "call bpf_get_prandom_u32#7")
	return regexp.MustCompile(`(?m)^ {7}85 [0-9a-f ]+\n`).ReplaceAllString(s, "")
}

// sameCallSymbols takes the callees' symbols out of our dump where the
// kernel's dump has none (bpftool could not read kallsyms).
func sameCallSymbols(ours, kernel string) string {
	if strings.Contains(kernel, "#bpf_prog_") {
		return ours
	}
	return regexp.MustCompile(`call pc([+-]\d+)#[\w.]+`).ReplaceAllString(ours, "call pc$1")
}

// TestProgDump checks prog dump xlated (plain, linum, opcodes, visual,
// JSON) and jited, and compares the xlated dumps with bpftool's on the
// kernel for a program both rewrite alike, where bpftool and root are.
func TestProgDump(t *testing.T) {
	const obj = "testdata/dump.o"
	for _, tc := range []struct {
		args []string
		want string // a regular expression
	}{
		{[]string{"prog", "dump", "xlated", obj, "pick"}, `^int pick\(struct xdp_md \* ctx\):\n; unsigned int r = bpf_get_prandom_u32\(\);\n   0: \(85\) call bpf_get_prandom_u32#7\n   1: \(b7\) r1 = 1\n; if \(r & 1\)\n   2: \(bf\) r2 = r0\n`},
		{[]string{"prog", "dump", "xlated", obj, "name", "pick", "linum"}, `\n; if \(r & 1\) \[file:\./dump\.c line_num:16 line_col:\d+\]\n`},
		{[]string{"prog", "dump", "xlated", obj, "pick", "opcodes"}, `\n   1: \(b7\) r1 = 1\n       b7 01 00 00 01 00 00 00\n`},
		{[]string{"prog", "dump", "xlated", obj, "pick", "visual"}, `^digraph "DOT graph for eBPF program" \{\nsubgraph "cluster_0" \{\n(.*\n)*subgraph "cluster_1" \{\n(.*\n)*\tfn_1_bb_0:s -> fn_1_bb_1:n \[style="invis", constraint=true\];\n\}\n\}\n$`},
		{[]string{"-j", "prog", "dump", "xlated", obj, "pick", "opcodes"}, `^\[\{"proto":"int pick\(struct xdp_md \* ctx\)","src":"unsigned int r = bpf_get_prandom_u32\(\);","disasm":"\(85\) call bpf_get_prandom_u32#7","opcodes":\{"code":"0x85","src_reg":"0x0","dst_reg":"0x0","off":\["0x00","0x00"\],"imm":\["0x07","0x00","0x00","0x00"\]\}\},`},
		// bpftool's jited layout (jit_disasm.c): prototype, symbol
		// (bpf_prog_TAG_NAME, the kernel's tags), "; line", "%4x:\t"
		// and libbfd's text, per function from 0, a blank line after
		// each; in JSON libbfd's pieces (TestJitedMatchesLibbfd).
		{[]string{"prog", "dump", "jited", obj, "pick"}, `^int pick\(struct xdp_md \* ctx\):\nbpf_prog_1bb3411ceb31d8bf_pick:\n; unsigned int r = bpf_get_prandom_u32\(\);\n   0:\tcall   0x[0-9a-f]{8,16}\n   5:\tmov    \$0x1,%edi\n(?s:.*)\n\nint twice\(int x\):\nbpf_prog_a34f10eea333b81d_twice:\n; static __attribute__\(\(noinline\)\) int twice\(int x\)\n   0:\t`},
		{[]string{"prog", "dump", "jited", obj, "pick", "opcodes", "linum"}, `^int pick\(struct xdp_md \* ctx\):\nbpf_prog_1bb3411ceb31d8bf_pick:\n; unsigned int r = bpf_get_prandom_u32\(\); \[file:\./dump\.c line_num:15 line_col:19\]\n   0:\tcall   0x[0-9a-f]{8,16}\n\te8( [0-9a-f]{2}){4} \n   5:\tmov    \$0x1,%edi\n\tbf 01 00 00 00 \n`},
		{[]string{"-j", "prog", "dump", "jited", obj, "pick", "opcodes"}, `^\[\{"proto":"int pick\(struct xdp_md \* ctx\)","name":"bpf_prog_1bb3411ceb31d8bf_pick","insns":\[\{"src":"unsigned int r = bpf_get_prandom_u32\(\);","pc":"0x0","operation":"call","operands":\["0x[0-9a-f]{8,16}"\],"opcodes":\["0xe8",("0x[0-9a-f]{2}",){3}"0x[0-9a-f]{2}"\]\},\{"pc":"0x5","operation":"mov","operands":\["","\$","0x1",",","","%edi"\],"opcodes":\["0xbf","0x01","0x00","0x00","0x00"\]\}`},
	} {
		if slices.Contains(tc.args, "jited") && (runtime.GOARCH != "amd64" || runtime.GOOS != "linux") {
			continue // no machine code here
		}
		code, stdout, stderr := runCLI(t, "", tc.args...)
		if code != 0 || !regexp.MustCompile(tc.want).MatchString(stdout) {
			t.Errorf("bpfvm %s: exit %d, stderr %q\n%s\nwant %q", strings.Join(tc.args, " "), code, stderr, stdout, tc.want)
		}
	}
	for _, args := range [][]string{
		{"prog", "dump", "xlated", obj, "nope"},
		{"prog", "dump", "xlated", obj, "pick", "frob"},
		{"prog", "dump", "jited", obj, "pick", "visual"},
		{"prog", "dump", "source", obj, "pick"},
	} {
		if code, _, _ := runCLI(t, "", args...); code != 2 {
			t.Errorf("bpfvm %s: exit %d, want 2", strings.Join(args, " "), code)
		}
	}
	bpftool, err := exec.LookPath("bpftool")
	if err != nil || os.Getuid() != 0 {
		t.Skip("needs bpftool and root for the comparison")
	}
	pin := filepath.Join("/sys/fs/bpf", "bpfvm-dump-"+filepath.Base(t.TempDir()))
	if out, err := exec.Command(bpftool, "prog", "load", obj, pin).CombinedOutput(); err != nil {
		t.Skipf("bpftool prog load: %v: %s", err, out)
	}
	defer os.Remove(pin)
	for _, opts := range [][]string{nil, {"linum"}, {"opcodes"}, {"visual"}} {
		kout, err := exec.Command(bpftool, append([]string{"prog", "dump", "xlated", "pinned", pin}, opts...)...).Output()
		if err != nil {
			t.Fatal(err)
		}
		_, ours, _ := runCLI(t, "", append([]string{"prog", "dump", "xlated", obj, "pick"}, opts...)...)
		if normalizeKernelXlated(sameCallSymbols(ours, string(kout))) != normalizeKernelXlated(string(kout)) {
			t.Errorf("prog dump xlated %v:\nbpfvm\n%s\nbpftool\n%s", opts, ours, kout)
		}
	}
	kout, _ := exec.Command(bpftool, "-j", "prog", "dump", "xlated", "pinned", pin).Output()
	if _, ours, _ := runCLI(t, "", "-j", "prog", "dump", "xlated", obj, "pick"); normalizeKernelXlated(sameCallSymbols(ours, string(kout))) != normalizeKernelXlated(string(kout)) {
		t.Errorf("-j prog dump xlated:\nbpfvm\n%s\nbpftool\n%s", ours, kout)
	}
}
