// Package conformance reads and runs tests in the format of the eBPF ISA
// conformance suite (github.com/Alan-Jowett/bpf_conformance): a .data file
// with sections `-- asm`, `-- raw`, `-- mem`, `-- result` and `-- error`.
// The program runs with R1 pointing at a copy of the memory and R2 holding
// its length.
package conformance

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/bpfvm/bpfvm/isa"
)

// Test is one conformance test.
type Test struct {
	Name      string
	Asm       string
	Raw       []isa.Instruction // from the raw section, when present
	Mem       []byte
	Result    uint64
	HasResult bool
	// WantError is set when the test expects the program to be rejected or
	// to fail; Error is the expected message, which runners need not match.
	WantError bool
	Error     string
}

// Engine runs a program on a memory buffer and returns R0.
type Engine func(prog []isa.Instruction, mem []byte) (uint64, error)

// ParseFile reads one test file.
func ParseFile(path string) (*Test, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t.Name = strings.TrimSuffix(filepath.Base(path), ".data")
	return t, nil
}

// Parse parses the text of a test. Unknown sections are ignored.
func Parse(b []byte) (*Test, error) {
	t := &Test{}
	sections := map[string]*strings.Builder{}
	var cur *strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "-- "); ok {
			name = strings.TrimSpace(name)
			cur = &strings.Builder{}
			sections[name] = cur
			continue
		}
		if cur != nil {
			cur.WriteString(line)
			cur.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if s, ok := sections["asm"]; ok {
		t.Asm = s.String()
	}
	if s, ok := sections["raw"]; ok {
		raw, err := parseRaw(s.String())
		if err != nil {
			return nil, fmt.Errorf("raw section: %w", err)
		}
		t.Raw = raw
	}
	if s, ok := sections["mem"]; ok {
		mem, err := parseHexBytes(s.String())
		if err != nil {
			return nil, fmt.Errorf("mem section: %w", err)
		}
		t.Mem = mem
	}
	if s, ok := sections["result"]; ok {
		text := strings.TrimSpace(stripComments(s.String()))
		v, err := strconv.ParseUint(text, 0, 64)
		if err != nil {
			return nil, fmt.Errorf("result section: %w", err)
		}
		t.Result, t.HasResult = v, true
	}
	if s, ok := sections["error"]; ok {
		t.WantError = true
		t.Error = strings.TrimSpace(s.String())
	}
	return t, nil
}

func stripComments(s string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// parseRaw reads either lines of 64-bit words (0x5566778800000018, the
// instruction read as a little-endian integer) or lines of hex bytes.
func parseRaw(s string) ([]isa.Instruction, error) {
	s = stripComments(s)
	fields := strings.Fields(s)
	if len(fields) > 0 && strings.HasPrefix(fields[0], "0x") {
		prog := make([]isa.Instruction, 0, len(fields))
		for _, f := range fields {
			v, err := strconv.ParseUint(f, 0, 64)
			if err != nil {
				return nil, err
			}
			var b [8]byte
			for i := range b {
				b[i] = byte(v >> (8 * i))
			}
			prog = append(prog, isa.Decode(b[:]))
		}
		return prog, nil
	}
	b, err := parseHexBytes(s)
	if err != nil {
		return nil, err
	}
	return isa.DecodeProgram(b)
}

func parseHexBytes(s string) ([]byte, error) {
	var out []byte
	for _, f := range strings.Fields(stripComments(s)) {
		v, err := strconv.ParseUint(f, 16, 8)
		if err != nil {
			return nil, fmt.Errorf("byte %q: %w", f, err)
		}
		out = append(out, byte(v))
	}
	return out, nil
}

// Program returns the instructions to run: the raw section when present,
// otherwise the assembled asm section.
func (t *Test) Program() ([]isa.Instruction, error) {
	if t.Raw != nil {
		return t.Raw, nil
	}
	if strings.TrimSpace(t.Asm) == "" {
		return nil, errors.New("no program")
	}
	return isa.Assemble(t.Asm)
}

// Run runs the test on an engine; nil means it passed.
func (t *Test) Run(engine Engine) error {
	prog, err := t.Program()
	if err == nil {
		var got uint64
		got, err = engine(prog, t.Mem)
		if err == nil {
			switch {
			case t.WantError:
				return fmt.Errorf("returned %#x, want an error", got)
			case !t.HasResult:
				return errors.New("test has no result section")
			case got != t.Result:
				return fmt.Errorf("returned %#x, want %#x", got, t.Result)
			}
			return nil
		}
	}
	if t.WantError {
		return nil
	}
	return err
}

// Files returns the .data files named by paths, expanding directories (not
// recursively) and sorting the result.
func Files(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		m, err := filepath.Glob(filepath.Join(p, "*.data"))
		if err != nil {
			return nil, err
		}
		sort.Strings(m)
		files = append(files, m...)
	}
	return files, nil
}
