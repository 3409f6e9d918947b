package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/bpfvm/bpfvm"
)

// libbfdDisasm builds testdata/libbfd/dis.c, a disassembler on binutils'
// libopcodes as bpftool links it, or skips the test where gcc or
// binutils-dev is missing.
func libbfdDisasm(t *testing.T) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("needs gcc and binutils-dev (libopcodes) for libbfd's disassembly")
	}
	bin := filepath.Join(t.TempDir(), "dis")
	if out, err := exec.Command(gcc, "-o", bin, "testdata/libbfd/dis.c", "-lopcodes", "-lbfd").CombinedOutput(); err != nil {
		t.Skipf("needs binutils-dev (libopcodes) for libbfd's disassembly: %v: %s", err, out)
	}
	return bin
}

// libbfdLines disassembles image with dis: per offset, the text bpftool
// prints and the pieces bpftool -j records.
func libbfdLines(t *testing.T, dis string, image []byte) map[int][2]string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "image")
	if err := os.WriteFile(f, image, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(dis, f).Output()
	if err != nil {
		t.Fatalf("libbfd disassembly: %v", err)
	}
	lines := map[int][2]string{}
	for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		f := strings.SplitN(l, "\t", 3)
		var pc int
		if len(f) != 3 {
			t.Fatalf("libbfd disassembly: line %q", l)
		}
		fmt.Sscanf(f[0], "%x", &pc)
		lines[pc] = [2]string{f[1], f[2]}
	}
	return lines
}

// compareLibbfd checks that decodeX86 and splitX86 give, for every
// instruction of image, the text and the JSON pieces of bpftool's libbfd
// disassembler; it returns how many instructions it compared.
func compareLibbfd(t *testing.T, dis, what string, image []byte) int {
	t.Helper()
	want := libbfdLines(t, dis, image)
	n, bad := 0, 0
	for off := 0; off < len(image); {
		size, text, rel := decodeX86(image[off:], off)
		op, operands := splitX86(text, rel)
		pieces := strings.Join(append([]string{op}, operands...), "\x1f")
		if w := want[off]; w != [2]string{text, pieces} && bad < 10 {
			t.Errorf("%s %#x % x: bpfvm %q %q, libbfd %q %q", what, off, image[off:off+size], text, pieces, w[0], w[1])
			bad++
		}
		n++
		off += size
	}
	return n
}

// TestJitedMatchesLibbfd checks the jited dump's disassembler
// instruction by instruction against binutils' libopcodes, which bpftool
// links: on the machine code bpfvm's JIT emits for a set of objects, and
// on the kernel's JIT image of testdata/dump.o where bpftool and root are.
func TestJitedMatchesLibbfd(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the JIT is linux/amd64's")
	}
	dis := libbfdDisasm(t)
	total := 0
	for _, file := range []string{
		"testdata/dump.o", "../../testdata/btf_maps.o", "../../testdata/rewrites.o",
		"../../testdata/helpers_loop.o", "../../testdata/jhash.o", "../../testdata/helpers_skb.o",
		"../../testdata/helpers_maps.o", "../../testdata/btfptr.o",
	} {
		coll, err := bpfvm.LoadCollection(file)
		if err != nil {
			t.Fatal(err)
		}
		for name, p := range coll.Programs {
			if code, _, ok := p.NativeCode(); ok {
				total += compareLibbfd(t, dis, file+" "+name, code)
			}
		}
		coll.Close()
	}
	t.Logf("%d instructions of bpfvm's JIT agree with libbfd", total)
	if total < 1000 {
		t.Errorf("only %d instructions compared", total)
	}

	kernel := 0
	for _, obj := range []string{"testdata/dump.o", "../../testdata/btf_maps.o", "../../testdata/jhash.o", "../../testdata/helpers_skb.o"} {
		pin := kernelDumpPin(t, obj)
		image := filepath.Join(t.TempDir(), "image")
		if out, err := exec.Command("bpftool", "prog", "dump", "jited", "pinned", pin, "file", image).CombinedOutput(); err != nil {
			t.Skipf("bpftool prog dump jited file: %v: %s", err, out)
		}
		b, err := os.ReadFile(image)
		if err != nil {
			t.Fatal(err)
		}
		kernel += compareLibbfd(t, dis, obj+" in the kernel", b)
	}
	t.Logf("%d instructions of the kernel's JIT agree with libbfd", kernel)
}

// kernelDumpPin loads obj in the kernel with bpftool and pins it, or
// skips where bpftool or root is missing.
func kernelDumpPin(t *testing.T, obj string) string {
	t.Helper()
	bpftool, err := exec.LookPath("bpftool")
	if err != nil || os.Getuid() != 0 {
		t.Skip("needs bpftool and root for the kernel's side")
	}
	pin := filepath.Join("/sys/fs/bpf", "bpfvm-jited-"+filepath.Base(t.TempDir()))
	if out, err := exec.Command(bpftool, "prog", "load", obj, pin).CombinedOutput(); err != nil {
		t.Skipf("bpftool prog load: %v: %s", err, out)
	}
	t.Cleanup(func() { os.Remove(pin) })
	return pin
}

// jitedShape is a jited dump without its instructions: prototypes,
// symbols, source lines and blank lines, and the instruction and opcode
// lines as their layout ("%4x:\t", "\t%02x ").
func jitedShape(s string) string {
	s = regexp.MustCompile(`(?m)^ *[0-9a-f]+:\t.*$`).ReplaceAllString(s, "INSN")
	s = regexp.MustCompile(`(?m)^\t([0-9a-f]{2} )+$`).ReplaceAllString(s, "OPCODES")
	return regexp.MustCompile(`(INSN\n(OPCODES\n)?)+`).ReplaceAllString(s, "INSNS\n")
}

// TestJitedShapeKernel compares prog dump jited with bpftool's on the
// kernel's program, side by side: every line but the instructions (whose
// machine code differs) is the same, the kallsyms symbols with the
// kernel's tags included, for each keyword set and in JSON the keys.
func TestJitedShapeKernel(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the JIT is linux/amd64's")
	}
	const obj = "testdata/dump.o"
	pin := kernelDumpPin(t, obj)
	if out, _ := exec.Command("bpftool", "version").Output(); !bytes.Contains(out, []byte("libbfd")) && !bytes.Contains(out, []byte("llvm")) {
		t.Skipf("bpftool has no disassembler (%s)", bytes.TrimSpace(out))
	}
	for _, opts := range [][]string{nil, {"opcodes", "linum"}} {
		kout, err := exec.Command("bpftool", append([]string{"prog", "dump", "jited", "pinned", pin}, opts...)...).Output()
		if err != nil {
			t.Fatal(err)
		}
		_, ours, _ := runCLI(t, "", append([]string{"prog", "dump", "jited", obj, "pick"}, opts...)...)
		if jitedShape(ours) != jitedShape(string(kout)) {
			t.Errorf("prog dump jited %v:\nbpfvm\n%s\nbpftool\n%s", opts, jitedShape(ours), jitedShape(string(kout)))
		}
		kj, err := exec.Command("bpftool", append([]string{"-j", "prog", "dump", "jited", "pinned", pin}, opts...)...).Output()
		if err != nil {
			t.Fatal(err)
		}
		_, oj, _ := runCLI(t, "", append([]string{"-j", "prog", "dump", "jited", obj, "pick"}, opts...)...)
		if jsonShape(oj) != jsonShape(string(kj)) {
			t.Errorf("-j prog dump jited %v:\nbpfvm\n%s\nbpftool\n%s", opts, jsonShape(oj), jsonShape(string(kj)))
		}
	}
}

// jsonShape is a jited JSON dump with the values of each instruction
// ("pc", "operation", "operands", "opcodes") taken out and the
// instructions without source lines dropped, the rest as it is.
func jsonShape(s string) string {
	s = regexp.MustCompile(`"pc":"[^"]*","operation":"[^"]*","operands":\[[^\]]*\](,"opcodes":\[[^\]]*\])?`).ReplaceAllString(s, "I")
	return regexp.MustCompile(`\{I\},?`).ReplaceAllString(s, "")
}
