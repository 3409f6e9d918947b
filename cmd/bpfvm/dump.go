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

	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROGRAM\tSECTION\tTYPE\tINSNS")
	for _, name := range names {
		p := spec.Programs[name]
		insns, _, err := bpfvm.EncodeProgram(p)
		n := "?"
		if err == nil {
			n = fmt.Sprint(len(insns))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, p.SectionName, p.Type, n)
	}
	tw.Flush()
	if len(spec.Maps) > 0 {
		fmt.Fprintln(stdout)
		fmt.Fprintln(tw, "MAP\tTYPE\tKEY\tVALUE\tMAX_ENTRIES\tFLAGS")
		var mapNames []string
		for name := range spec.Maps {
			mapNames = append(mapNames, name)
		}
		for _, name := range sorted(mapNames) {
			m := spec.Maps[name]
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%#x\n", name, m.Type, m.KeySize, m.ValueSize, m.MaxEntries, m.Flags)
		}
		tw.Flush()
	}
	if *xlated || *jited {
		return dumpXlated(stdout, stderr, pos[0], spec, names, *jited)
	}
	failed := false
	for _, name := range names {
		fmt.Fprintf(stdout, "\n%s:\n", name) // the entry symbol; subprograms print their own
		if err := disassemble(stdout, spec.Programs[name]); err != nil {
			// The others still print.
			fmt.Fprintf(stderr, "bpfvm dump: %v\n", loadErr(pos[0], spec, name, err))
			failed = true
		}
	}
	if failed {
		return exitError(1)
	}
	return nil
}

// dumpXlated loads each program on its own (creating its maps and
// verifying it) and prints the instructions it runs, like bpftool prog
// dump xlated. A program that fails to load is reported on stderr, and
// the others are still printed.
func dumpXlated(w, stderr io.Writer, path string, spec *ebpf.CollectionSpec, names []string, jited bool) error {
	failed := false
	for _, name := range names {
		l := loadOne(path, spec, name, bpfvm.CollectionOptions{})
		if l.err != nil {
			fmt.Fprintf(stderr, "bpfvm dump: %v\n", l.err)
			failed = true
			continue
		}
		coll, p := l.coll, l.prog
		insns := p.XlatedInstructions()
		code, offsets, native := p.NativeCode()
		if jited && !native {
			coll.Close()
			fmt.Fprintf(stderr, "bpfvm dump: %s: program %s runs on the interpreter: no machine code\n", path, name)
			failed = true
			continue
		}
		if jited {
			info := p.JITInfo()
			fmt.Fprintf(w, "\n%s (jited, %d bytes of x86-64 in %d pages of %s memory, %d native calls, verified=%v):\n",
				name, len(code), info.Pages, info.Tier, info.NativeCalls, p.Verified())
		} else {
			fmt.Fprintf(w, "\n%s (xlated, %d insns, verified=%v):\n", name, len(insns), p.Verified())
		}
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
			fmt.Fprintf(w, "%5d: (%02x) %s\n", pc, ins.Op, text)
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
				printNative(w, code, int(offsets[start]), end)
			}
		}
		coll.Close()
	}
	if failed {
		return exitError(1)
	}
	return nil
}

// disassemble prints a program in the kernel's log syntax with the names of
// functions and, where BTF line info exists, the source lines.
func disassemble(w io.Writer, p *ebpf.ProgramSpec) error {
	insns, refs, err := bpfvm.EncodeProgram(p)
	if err != nil {
		return err
	}
	// Walk the cilium instructions alongside the slots for their metadata.
	meta := make(map[int]asm.Instruction, len(p.Instructions))
	iter := p.Instructions.Iterate()
	for iter.Next() {
		meta[int(iter.Offset)] = *iter.Ins
	}
	var lastSrc string
	for pc := 0; pc < len(insns); pc++ {
		ins := insns[pc]
		if m, ok := meta[pc]; ok {
			if sym := m.Symbol(); sym != "" && pc != 0 {
				fmt.Fprintf(w, "%s:\n", sym)
			}
			if src := m.Source(); src != nil {
				if s := strings.TrimSpace(src.String()); s != "" && s != lastSrc {
					fmt.Fprintf(w, "; %s\n", s)
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
		fmt.Fprintf(w, "%5d: (%02x) %s\n", pc, ins.Op, text)
		if ins.IsLdImm64() {
			pc++
		}
	}
	return nil
}

// printNative disassembles code[start:end] with golang.org/x/arch's x86asm,
// one instruction per line in GNU syntax with its offset.
func printNative(w io.Writer, code []byte, start, end int) {
	for off := start; off < end && off < len(code); {
		inst, err := x86asm.Decode(code[off:end], 64)
		if err != nil || inst.Len == 0 {
			fmt.Fprintf(w, "\t%6x:  (bad) %02x\n", off, code[off])
			off++
			continue
		}
		fmt.Fprintf(w, "\t%6x:  % -24x %s\n", off, code[off:off+inst.Len], x86asm.GNUSyntax(inst, uint64(off), nil))
		off += inst.Len
	}
}
