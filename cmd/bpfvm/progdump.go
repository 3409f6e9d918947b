package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/verifier"
)

// progDumpOptions are bpftool prog dump's keywords.
type progDumpOptions struct {
	opcodes, linum, visual bool
}

// runProgDump is bpftool prog dump xlated|jited on one program of an
// object, loaded on its own:
//
//	bpfvm prog dump xlated FILE.o [name] PROG [opcodes] [linum] [visual]
//	bpfvm prog dump jited FILE.o [name] PROG [opcodes] [linum]
func runProgDump(args []string, stdout io.Writer, js *jsonOutput) error {
	if len(args) < 3 || args[0] != "xlated" && args[0] != "jited" {
		return usageErr("usage: bpfvm prog dump { xlated | jited } FILE.o [name] PROG [opcodes] [linum] [visual]")
	}
	kind, path := args[0], args[1]
	name, rest := progRef(args[2:])
	var o progDumpOptions
	for _, a := range rest {
		kw, err := keyword(a, []string{"opcodes", "linum", "visual"})
		if err != nil {
			return err
		}
		switch kw {
		case "opcodes":
			o.opcodes = true
		case "linum":
			o.linum = true
		case "visual":
			o.visual = true
		}
	}
	if o.visual && kind == "jited" {
		return usageErr("visual is for xlated only")
	}
	spec, err := openObject(path)
	if err != nil {
		return err
	}
	if spec.Programs[name] == nil {
		return usageErr("no program %q in %s; programs: %s", name, path, strings.Join(specNames(spec), ", "))
	}
	l := loadOne(path, spec, name, bpfvm.CollectionOptions{})
	if l.err != nil {
		return l.err
	}
	defer l.close()
	d := newXlatedDump(l.prog)
	switch {
	case kind == "jited":
		return d.jited(stdout, o)
	case o.visual:
		d.dot(stdout, o)
		return nil
	case js.enabled():
		jw := js.writer(stdout)
		d.json(jw, o)
		return jw.flush()
	}
	d.plain(stdout, o)
	return nil
}

// xlatedDump is a program's rewritten instructions with their bpftool
// text, line and func info by instruction.
type xlatedDump struct {
	prog  *bpfvm.Program
	insns []isa.Instruction
	text  []string // bpftool's "(op) text" by instruction slot
	lines map[int]verifier.LineInfo
	funcs map[int]string // the C prototype of a function starting here
}

func newXlatedDump(p *bpfvm.Program) *xlatedDump {
	d := &xlatedDump{prog: p, insns: p.XlatedInstructions(), lines: map[int]verifier.LineInfo{}, funcs: map[int]string{}}
	d.text = make([]string, len(d.insns))
	for pc := 0; pc < len(d.insns); pc++ {
		ins := d.insns[pc]
		text := isa.Format(d.insns, pc, nil)
		if ins.IsLdImm64() && (ins.Src == isa.Register(isa.PseudoMapFD) || ins.Src == isa.Register(isa.PseudoMapValue)) {
			// bpftool names maps by id: map[id:N], map[id:N][0]+OFF.
			if maps := p.Maps(); int(ins.Imm) < len(maps) {
				text = fmt.Sprintf("r%d = map[id:%d]", ins.Dst, maps[ins.Imm].ID())
				if ins.Src == isa.Register(isa.PseudoMapValue) && pc+1 < len(d.insns) {
					text += fmt.Sprintf("[0]+%d", uint32(d.insns[pc+1].Imm))
				}
			}
		}
		d.text[pc] = fmt.Sprintf("(%02x) %s", uint8(ins.Op), text)
		if ins.IsLdImm64() {
			pc++
		}
	}
	for _, l := range p.XlatedLineInfo() {
		if _, dup := d.lines[l.Insn]; !dup {
			d.lines[l.Insn] = l
		}
	}
	for _, f := range p.XlatedFuncInfo() {
		if f.Proto != nil {
			d.funcs[f.Start] = funcSignature(f.Name, f.Proto)
		}
	}
	return d
}

// next is the slot after the instruction at pc.
func (d *xlatedDump) next(pc int) int {
	if d.insns[pc].IsLdImm64() {
		return pc + 2
	}
	return pc + 1
}

// encoding is an instruction's bytes, both slots of an ld_imm64.
func (d *xlatedDump) encoding(pc int) []byte {
	return isa.EncodeProgram(d.insns[pc:min(d.next(pc), len(d.insns))])
}

// lineText is bpftool's source line: without indentation, with linum the
// file, line and column.
func lineText(l verifier.LineInfo, linum bool) string {
	s := strings.TrimLeft(l.Line, " \t\n\v\f\r")
	if linum {
		s += fmt.Sprintf(" [file:%s line_num:%d line_col:%d]", l.File, l.LineNum, l.Column)
	}
	return s
}

// plain prints bpftool prog dump xlated's text: prototypes, source lines
// and "%4u: (op) text", with opcodes the instruction's bytes below it.
func (d *xlatedDump) plain(w io.Writer, o progDumpOptions) {
	for pc := 0; pc < len(d.insns); pc = d.next(pc) {
		if sig, ok := d.funcs[pc]; ok {
			fmt.Fprintf(w, "%s:\n", sig)
		}
		if l, ok := d.lines[pc]; ok {
			fmt.Fprintf(w, "; %s\n", lineText(l, o.linum))
		}
		fmt.Fprintf(w, "%4d: %s\n", pc, d.text[pc])
		if o.opcodes {
			b := d.encoding(pc)
			s := fprintHex(b[:8])
			if len(b) > 8 {
				s += " " + fprintHex(b[8:])
			}
			fmt.Fprintf(w, "       %s\n", s)
		}
	}
}

// json writes bpftool -j prog dump xlated's array: proto, src (with
// linum file, line_num, line_col), disasm and with opcodes the fields.
func (d *xlatedDump) json(j *jsonWriter, o progDumpOptions) {
	j.startArray()
	for pc := 0; pc < len(d.insns); pc = d.next(pc) {
		j.startObject()
		if sig, ok := d.funcs[pc]; ok {
			j.name("proto")
			j.str(sig)
		}
		if l, ok := d.lines[pc]; ok {
			j.name("src")
			j.str(strings.TrimLeft(l.Line, " \t\n\v\f\r"))
			if o.linum {
				j.name("file")
				j.str(l.File)
				if l.LineNum != 0 {
					j.name("line_num")
					j.uint(uint64(l.LineNum))
				}
				if l.Column != 0 {
					j.name("line_col")
					j.uint(uint64(l.Column))
				}
			}
		}
		j.name("disasm")
		j.str(d.text[pc])
		if o.opcodes {
			b := d.encoding(pc)
			j.name("opcodes")
			j.startObject()
			j.name("code")
			j.str("0x" + hex2(b[0]))
			j.name("src_reg")
			j.str(fmt.Sprintf("0x%x", b[1]>>4))
			j.name("dst_reg")
			j.str(fmt.Sprintf("0x%x", b[1]&15))
			j.name("off")
			j.hexBytes(b[2:4])
			j.name("imm")
			if len(b) > 8 {
				j.hexBytes(append(append([]byte(nil), b[4:8]...), b[8:]...))
			} else {
				j.hexBytes(b[4:8])
			}
			j.endObject()
		}
		j.endObject()
	}
	j.endArray()
}

// jited prints the machine code as bpftool prog dump jited: prototypes and
// source lines before the code of their instructions, one x86
// instruction a line, its bytes with opcodes.
func (d *xlatedDump) jited(w io.Writer, o progDumpOptions) error {
	code, offsets, ok := d.prog.NativeCode()
	if !ok {
		return fmt.Errorf("program %s runs on the interpreter: no machine code", d.prog.Name())
	}
	for pc := 0; pc < len(d.insns); pc = d.next(pc) {
		if sig, ok := d.funcs[pc]; ok {
			fmt.Fprintf(w, "%s:\n", sig)
		}
		if l, ok := d.lines[pc]; ok {
			fmt.Fprintf(w, "; %s\n", lineText(l, o.linum))
		}
		if pc >= len(offsets) {
			continue
		}
		end := len(code)
		if n := d.next(pc); n < len(offsets) {
			end = int(offsets[n])
		}
		for _, line := range nativeLines(code, int(offsets[pc]), end) {
			if !o.opcodes {
				// "off:  bytes  asm": keep the offset and the text.
				off, rest, _ := strings.Cut(line, ":  ")
				if i := strings.Index(rest, "  "); i >= 0 && len(rest) > 25 {
					rest = strings.TrimLeft(rest[24:], " ")
				}
				line = off + ":\t" + rest
			}
			fmt.Fprintf(w, "%s\n", line)
		}
	}
	return nil
}

// dot prints the control flow graph in Graphviz's dot language, as bpftool
// prog dump xlated visual: a cluster per function, its basic blocks as
// records between ENTRY and EXIT, an edge per way out of each block.
func (d *xlatedDump) dot(w io.Writer, o progDumpOptions) {
	fmt.Fprintf(w, "digraph \"DOT graph for eBPF program\" {\n")
	for fi, f := range d.cfgFuncs() {
		fmt.Fprintf(w, "subgraph \"cluster_%d\" {\n\tstyle=\"dashed\";\n\tcolor=\"black\";\n\tlabel=\"func_%d ()\";\n", fi, fi)
		heads := d.blockHeads(f)
		// Blocks: 0 is ENTRY, 1 EXIT, then 2... in order.
		fmt.Fprintf(w, "\tfn_%d_bb_0 [shape=Mdiamond,style=filled,label=\"ENTRY\"];\n\n", fi)
		for bi, head := range heads {
			tail := f.end
			if bi+1 < len(heads) {
				tail = heads[bi+1] - 1
			}
			var rows []string
			for pc := head; pc <= tail && pc < len(d.insns); pc = d.next(pc) {
				row := fmt.Sprintf("%4d: %s", pc-f.start, dotEscape(d.text[pc])) + "\\l\\\n"
				if o.opcodes {
					b := d.encoding(pc)
					s := fprintHex(b[:8])
					if len(b) > 8 {
						s += " " + fprintHex(b[8:])
					}
					row += "\\ \\ \\ \\ " + s + "\\l\\\n"
				}
				rows = append(rows, row)
			}
			fmt.Fprintf(w, "\tfn_%d_bb_%d [shape=record,style=filled,label=\"{%s}\"];\n\n", fi, bi+2, strings.Join(rows, " | "))
		}
		fmt.Fprintf(w, "\tfn_%d_bb_1 [shape=Mdiamond,style=filled,label=\"EXIT\"];\n\n", fi)
		edge := func(from, to int) {
			fmt.Fprintf(w, "\tfn_%d_bb_%d:s -> fn_%d_bb_%d:n [style=\"solid,bold\", color=black, weight=10, constraint=true];\n", fi, from, fi, to)
		}
		block := func(pc int) int {
			i := sort.SearchInts(heads, pc)
			if i < len(heads) && heads[i] == pc {
				return i + 2
			}
			return 1
		}
		edge(0, 2)
		for bi, head := range heads {
			tail := f.end
			if bi+1 < len(heads) {
				tail = heads[bi+1] - 1
			}
			next := bi + 3
			if bi+1 == len(heads) {
				next = 1
			}
			last := lastInsn(d, head, tail)
			ins := d.insns[last]
			op := uint8(ins.Op) & 0xf0
			switch {
			case !isJump(ins) || op == 0x80 || op == 0x90: // call, exit: fall through, as bpftool draws them
				edge(bi+2, next)
			case op == 0x00: // ja
				edge(bi+2, block(last+int(ins.Off)+1))
			default:
				edge(bi+2, next)
				edge(bi+2, block(last+int(ins.Off)+1))
			}
		}
		fmt.Fprintf(w, "\tfn_%d_bb_0:s -> fn_%d_bb_1:n [style=\"invis\", constraint=true];\n}\n", fi, fi)
	}
	fmt.Fprintf(w, "}\n")
}

// cfgFunc is a function's instruction slots, start to end inclusive.
type cfgFunc struct{ start, end int }

// cfgFuncs splits the program at the targets of bpf-to-bpf calls.
func (d *xlatedDump) cfgFuncs() []cfgFunc {
	starts := map[int]bool{0: true}
	for pc := 0; pc < len(d.insns); pc = d.next(pc) {
		ins := d.insns[pc]
		if ins.Op == isa.OpCall && ins.Src == isa.Register(1) { // BPF_PSEUDO_CALL
			if t := pc + int(ins.Imm) + 1; t > 0 && t < len(d.insns) {
				starts[t] = true
			}
		}
	}
	var s []int
	for pc := range starts {
		s = append(s, pc)
	}
	sort.Ints(s)
	var out []cfgFunc
	for i, start := range s {
		end := len(d.insns) - 1
		if i+1 < len(s) {
			end = s[i+1] - 1
		}
		out = append(out, cfgFunc{start, end})
	}
	return out
}

// blockHeads returns the first instruction of each basic block of f: its
// start, every jump target, and what follows a conditional jump.
func (d *xlatedDump) blockHeads(f cfgFunc) []int {
	heads := map[int]bool{f.start: true}
	for pc := f.start; pc <= f.end && pc < len(d.insns); pc = d.next(pc) {
		ins := d.insns[pc]
		op := uint8(ins.Op) & 0xf0
		if !isJump(ins) || op == 0x80 || op == 0x90 {
			continue
		}
		if t := pc + int(ins.Off) + 1; t >= f.start && t <= f.end {
			heads[t] = true
		}
		if op != 0x00 && pc+1 <= f.end {
			heads[pc+1] = true
		}
	}
	var out []int
	for pc := range heads {
		out = append(out, pc)
	}
	sort.Ints(out)
	return out
}

// lastInsn is the last instruction starting in [head, tail].
func lastInsn(d *xlatedDump, head, tail int) int {
	last := head
	for pc := head; pc <= tail && pc < len(d.insns); pc = d.next(pc) {
		last = pc
	}
	return last
}

func isJump(ins isa.Instruction) bool {
	c := ins.Class()
	return c == isa.ClassJMP || c == isa.ClassJMP32
}

// dotEscape escapes the characters dot records give a meaning to.
func dotEscape(s string) string {
	return strings.NewReplacer("<", `\<`, ">", `\>`, "|", `\|`, "&", `\&`, `"`, `\"`).Replace(s)
}

// funcSignature prints a function's prototype in C, as bpftool's
// btf_dumper_type_only: "int count(struct xdp_md * ctx)".
func funcSignature(name string, proto *btf.FuncProto) string {
	var params []string
	for _, p := range proto.Params {
		t := cTypeName(p.Type)
		if p.Name != "" {
			t += " " + p.Name
		}
		params = append(params, t)
	}
	if len(params) == 0 {
		params = []string{"void"}
	}
	return fmt.Sprintf("%s %s(%s)", cTypeName(proto.Return), name, strings.Join(params, ", "))
}

// cTypeName names a BTF type as C does, pointers with " *".
func cTypeName(t btf.Type) string {
	switch t := t.(type) {
	case nil, *btf.Void:
		return "void"
	case *btf.Pointer:
		return cTypeName(t.Target) + " *"
	case *btf.Const:
		return "const " + cTypeName(t.Type)
	case *btf.Volatile:
		return "volatile " + cTypeName(t.Type)
	case *btf.Restrict:
		return cTypeName(t.Type) + " restrict"
	case *btf.Struct:
		return "struct " + t.Name
	case *btf.Union:
		return "union " + t.Name
	case *btf.Enum:
		return "enum " + t.Name
	case *btf.Fwd:
		return t.Kind.String() + " " + t.Name
	}
	return t.TypeName()
}
