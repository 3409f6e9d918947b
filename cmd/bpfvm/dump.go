package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/arch/x86/x86asm"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/loader"
	"github.com/bpfvm/bpfvm/maps"
)

func loadSpec(path string) (*ebpf.CollectionSpec, error) {
	return loader.LoadCollectionSpec(path)
}

func sorted(s []string) []string {
	sort.Strings(s)
	return s
}

func runDump(args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("dump", stderr)
	progName := fs.String("p", "", "dump only this program")
	xlated := fs.Bool("xlated", false, "show the programs as they run: verified and rewritten (context conversion, inlined helpers)")
	jited := fs.Bool("jited", false, "show the x86-64 machine code the JIT generates, interleaved with the instructions")
	js := addJSONFlags(fs, true)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("want exactly one object file, got %d", len(pos))
	}
	spec, err := openObject(pos[0])
	if err != nil {
		return err
	}
	var names []string
	for name := range spec.Programs {
		if *progName == "" || name == *progName {
			names = append(names, name)
		}
	}
	if *progName != "" && len(names) == 0 {
		return usageErr("no program %q in %s", *progName, pos[0])
	}
	sort.Strings(names)

	doc := dumpJSON{Programs: []dumpProgJSON{}, Maps: []dumpMapJSON{}}
	for _, name := range names {
		p := spec.Programs[name]
		insns, _, err := bpfvm.EncodeProgram(p)
		n := -1
		if err == nil {
			n = len(insns)
		}
		doc.Programs = append(doc.Programs, dumpProgJSON{Name: name, Section: p.SectionName, Type: progTypeName(p.Type), Insns: n})
	}
	var mapNames []string
	for name := range spec.Maps {
		mapNames = append(mapNames, name)
	}
	for _, name := range sorted(mapNames) {
		m := spec.Maps[name]
		doc.Maps = append(doc.Maps, dumpMapJSON{name, maps.Type(m.Type).String(), m.KeySize, m.ValueSize, m.MaxEntries, m.Flags})
	}
	if !js.enabled() {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PROGRAM\tSECTION\tTYPE\tINSNS")
		for _, p := range doc.Programs {
			n := "?"
			if p.Insns >= 0 {
				n = fmt.Sprint(p.Insns)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Name, p.Section, p.Type, n)
		}
		tw.Flush()
		if len(doc.Maps) > 0 {
			fmt.Fprintln(stdout)
			fmt.Fprintln(tw, "MAP\tTYPE\tKEY\tVALUE\tMAX_ENTRIES\tFLAGS")
			for _, m := range doc.Maps {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%#x\n", m.Name, m.Type, m.KeySize, m.ValueSize, m.MaxEntries, m.Flags)
			}
			tw.Flush()
		}
	}
	failed := false
	for i, name := range names {
		var insns []dumpInsn
		var err error
		if *xlated || *jited {
			var head string
			head, insns, err = xlatedInsns(pos[0], spec, name, *jited)
			if err == nil && !js.enabled() {
				fmt.Fprintf(stdout, "\n%s\n", head)
			}
		} else {
			if !js.enabled() {
				fmt.Fprintf(stdout, "\n%s:\n", name) // the entry symbol; subprograms print their own
			}
			if insns, err = disassemble(spec.Programs[name]); err != nil {
				err = loadErr(pos[0], spec, name, err)
			}
		}
		if err != nil {
			// The others still print.
			if js.enabled() {
				doc.Programs[i].Error = err.Error()
			} else {
				fmt.Fprintf(stderr, "bpfvm dump: %v\n", err)
			}
			failed = true
			continue
		}
		if js.enabled() {
			// bpftool's disasm starts with the opcode.
			for k := range insns {
				insns[k].Disasm = fmt.Sprintf("(%02x) %s", insns[k].Op, insns[k].Disasm)
			}
			doc.Programs[i].Xlated = insns
		} else {
			printInsns(stdout, insns)
		}
	}
	if js.enabled() {
		if err := js.write(stdout, doc); err != nil {
			return err
		}
	}
	if failed {
		return exitError(1)
	}
	return nil
}

// dumpJSON is dump's JSON document: the programs (each with its
// instructions, in bpftool prog dump -j's shape) and the maps.
type dumpJSON struct {
	Programs []dumpProgJSON `json:"programs"`
	Maps     []dumpMapJSON  `json:"maps"`
}

type dumpProgJSON struct {
	Name    string     `json:"name"`
	Section string     `json:"section"`
	Type    string     `json:"type"`
	Insns   int        `json:"insns"` // -1 when the program cannot be encoded
	Error   string     `json:"error,omitempty"`
	Xlated  []dumpInsn `json:"xlated,omitempty"`
}

type dumpMapJSON struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	KeySize    uint32 `json:"key_size"`
	ValueSize  uint32 `json:"value_size"`
	MaxEntries uint32 `json:"max_entries"`
	Flags      uint32 `json:"flags"`
}

// dumpInsn is one instruction as dump prints it; the JSON fields are
// bpftool prog dump xlated -j's (src, disasm) and jited's (ops).
type dumpInsn struct {
	Sym    string   `json:"sym,omitempty"` // a function starting here
	Src    string   `json:"src,omitempty"` // the BTF source line, when it changes
	PC     int      `json:"-"`
	Op     uint8    `json:"-"`
	Disasm string   `json:"disasm"`
	Native []string `json:"ops,omitempty"` // the machine code, one x86 instruction each
}

// printInsns prints instructions in the kernel's log syntax: function
// labels, source lines as "; " comments, "pc: (op) text", and machine code
// indented below its instruction.
func printInsns(w io.Writer, insns []dumpInsn) {
	for _, in := range insns {
		if in.Sym != "" {
			fmt.Fprintf(w, "%s:\n", in.Sym)
		}
		if in.Src != "" {
			fmt.Fprintf(w, "; %s\n", in.Src)
		}
		fmt.Fprintf(w, "%5d: (%02x) %s\n", in.PC, in.Op, in.Disasm)
		for _, n := range in.Native {
			fmt.Fprintf(w, "\t%s\n", n)
		}
	}
}

// xlatedInsns loads one program on its own (creating its maps and
// verifying it) and returns the instructions it runs, like bpftool prog
// dump xlated, or with the machine code, like dump jited; head describes
// the program.
func xlatedInsns(path string, spec *ebpf.CollectionSpec, name string, jited bool) (head string, _ []dumpInsn, _ error) {
	l := loadOne(path, spec, name, bpfvm.CollectionOptions{})
	if l.err != nil {
		return "", nil, l.err
	}
	defer l.close()
	p := l.prog
	insns := p.XlatedInstructions()
	code, offsets, native := p.NativeCode()
	if jited && !native {
		return "", nil, fmt.Errorf("%s: program %s runs on the interpreter: no machine code", path, name)
	}
	if jited {
		info := p.JITInfo()
		head = fmt.Sprintf("%s (jited, %d bytes of x86-64 in %d pages of %s memory, %d native calls, verified=%v):",
			name, len(code), info.Pages, info.Tier, info.NativeCalls, p.Verified())
	} else {
		head = fmt.Sprintf("%s (xlated, %d insns, verified=%v):", name, len(insns), p.Verified())
	}
	var out []dumpInsn
	for pc := 0; pc < len(insns); pc++ {
		ins := insns[pc]
		text := isa.Format(insns, pc, nil)
		if ins.IsLdImm64() && (ins.Src == isa.Register(isa.PseudoMapFD) || ins.Src == isa.Register(isa.PseudoMapValue)) {
			if maps := p.Maps(); int(ins.Imm) < len(maps) {
				text = fmt.Sprintf("r%d = map[%s]", ins.Dst, maps[ins.Imm].Name())
				if ins.Src == isa.Register(isa.PseudoMapValue) {
					text += fmt.Sprintf(" + %d", uint32(insns[pc+1].Imm))
				}
			}
		}
		d := dumpInsn{PC: pc, Op: uint8(ins.Op), Disasm: text}
		start, next := pc, pc+1
		if ins.IsLdImm64() {
			pc++
			next++
		}
		if jited && start < len(offsets) {
			end := len(code)
			if next < len(offsets) {
				end = int(offsets[next])
			}
			d.Native = nativeLines(code, int(offsets[start]), end)
		}
		out = append(out, d)
	}
	return head, out, nil
}

// disassemble returns a program's instructions in the kernel's log syntax
// with the names of functions and, where BTF line info exists, the source
// lines.
func disassemble(p *ebpf.ProgramSpec) ([]dumpInsn, error) {
	insns, refs, err := bpfvm.EncodeProgram(p)
	if err != nil {
		return nil, err
	}
	var out []dumpInsn
	// Walk the cilium instructions alongside the slots for their metadata.
	meta := make(map[int]asm.Instruction, len(p.Instructions))
	iter := p.Instructions.Iterate()
	for iter.Next() {
		meta[int(iter.Offset)] = *iter.Ins
	}
	var lastSrc string
	for pc := 0; pc < len(insns); pc++ {
		ins := insns[pc]
		d := dumpInsn{PC: pc, Op: uint8(ins.Op)}
		if m, ok := meta[pc]; ok {
			if sym := m.Symbol(); sym != "" && pc != 0 {
				d.Sym = sym
			}
			if src := m.Source(); src != nil {
				if s := strings.TrimSpace(src.String()); s != "" && s != lastSrc {
					d.Src = s
					lastSrc = s
				}
			}
		}
		text := isa.Format(insns, pc, nil)
		if ins.IsLdImm64() && (ins.Src == isa.Register(isa.PseudoMapFD) || ins.Src == isa.Register(isa.PseudoMapValue)) {
			if idx := int(ins.Imm); idx >= 0 && idx < len(refs) {
				text = fmt.Sprintf("r%d = map[%s]", ins.Dst, refs[idx])
				if ins.Src == isa.Register(isa.PseudoMapValue) {
					text = fmt.Sprintf("r%d = map[%s] + %d", ins.Dst, refs[idx], uint32(insns[pc+1].Imm))
				}
			}
		}
		d.Disasm = text
		out = append(out, d)
		if ins.IsLdImm64() {
			pc++
		}
	}
	return out, nil
}

// nativeLines disassembles code[start:end] with golang.org/x/arch's
// x86asm, one instruction a line in GNU syntax with its offset.
func nativeLines(code []byte, start, end int) []string {
	var out []string
	for off := start; off < end && off < len(code); {
		inst, err := x86asm.Decode(code[off:end], 64)
		if err != nil || inst.Len == 0 {
			out = append(out, fmt.Sprintf("%6x:  (bad) %02x", off, code[off]))
			off++
			continue
		}
		out = append(out, fmt.Sprintf("%6x:  % -24x %s", off, code[off:off+inst.Len], x86asm.GNUSyntax(inst, uint64(off), nil)))
		off += inst.Len
	}
	return out
}
