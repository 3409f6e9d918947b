package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/cilium/ebpf/btf"
	"golang.org/x/arch/x86/x86asm"

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
	case kind == "jited" && js.enabled():
		jw := js.writer(stdout)
		if err := d.jited(stdout, o, jw); err != nil {
			return err
		}
		return jw.flush()
	case kind == "jited":
		return d.jited(stdout, o, nil)
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
	// calls are the kallsyms symbols of bpf-to-bpf calls' targets, by
	// the call's slot, which bpftool appends to the call ("call
	// pc+3#bpf_prog_TAG_NAME") where it can read kallsyms.
	calls map[int]string
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
	d.calls = map[int]string{}
	funcs := d.jitFuncs(len(d.insns))
	for pc := 0; pc < len(d.insns); pc = d.next(pc) {
		if !d.insns[pc].IsLocalCall() {
			continue
		}
		target := pc + 1 + int(d.insns[pc].Imm)
		for fi, f := range funcs {
			if f.start == target && fi > 0 {
				end := len(d.insns)
				if fi+1 < len(funcs) {
					end = min(funcs[fi+1].start, end)
				}
				d.calls[pc] = "#bpf_prog_" + d.funcTag(fi, f.start, end) + "_" + f.name
			}
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
		fmt.Fprintf(w, "%4d: %s%s\n", pc, d.text[pc], d.calls[pc])
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
			writeLineJSON(j, l, o.linum)
		}
		j.name("disasm")
		j.str(d.text[pc] + d.calls[pc])
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

// jited prints the machine code as bpftool prog dump jited prints it
// (jit_disasm.c): per function, its prototype from func info and its
// symbol, then each x86 instruction as "%4x:\t" and its text, the offset
// from the function's start, with the source line of the BPF instruction
// it starts before it ("; line", [file:... line_num:N line_col:M] with
// linum) and, with opcodes, its bytes on the next line ("\n\t" and "%02x "
// each); a blank line after each function. The text is objdump's AT&T
// layout (libbfd's, bpftool's other disassembler), branch targets as
// offsets in the function (bpftool's with the image at address 0: bpfvm's
// code addresses are private to the process and change from run to run).
// The symbol is the kernel's kallsyms name, bpf_prog_TAG_NAME (funcTag).
// In JSON, an object
// per function: "name", and "insns" with "pc", "operation", "operands"
// and "opcodes", as bpftool -j (after "proto", the prototype).
func (d *xlatedDump) jited(w io.Writer, o progDumpOptions, j *jsonWriter) error {
	code, offsets, ok := d.prog.NativeCode()
	if !ok {
		return fmt.Errorf("program %s runs on the interpreter: no machine code", d.prog.Name())
	}
	funcs := d.jitFuncs(len(offsets))
	if j != nil {
		j.startArray()
	}
	for fi, f := range funcs {
		lo := 0
		if fi > 0 && f.start < len(offsets) {
			lo = int(offsets[f.start])
		}
		hi := len(code)
		if fi+1 < len(funcs) && funcs[fi+1].start < len(offsets) {
			hi = int(offsets[funcs[fi+1].start])
		}
		// Which BPF instruction each native offset starts, for line info.
		starts := map[int]int{}
		for pc := f.start; pc < len(d.insns) && pc < len(offsets) && (fi+1 == len(funcs) || pc < funcs[fi+1].start); pc = d.next(pc) {
			if _, dup := starts[int(offsets[pc])]; !dup {
				starts[int(offsets[pc])] = pc
			}
		}
		end := len(d.insns)
		if fi+1 < len(funcs) {
			end = min(funcs[fi+1].start, end)
		}
		sym := "bpf_prog_" + d.funcTag(fi, f.start, end) + "_" + f.name
		if j != nil {
			j.startObject()
			if sig, ok := d.funcs[f.start]; ok {
				j.name("proto")
				j.str(sig)
			}
			j.name("name")
			j.str(sym)
			j.name("insns")
			j.startArray()
		} else {
			if sig, ok := d.funcs[f.start]; ok {
				fmt.Fprintf(w, "%s:\n", sig)
			}
			fmt.Fprintf(w, "%s:\n", sym)
		}
		shown := map[int]bool{}
		for off := lo; off < hi; {
			n, text, rel := decodeX86(code[off:hi], off-lo)
			var line *verifier.LineInfo
			if pc, ok := starts[off]; ok && !shown[pc] {
				if l, ok := d.lines[pc]; ok {
					line = &l
				}
				shown[pc] = true
			}
			if j != nil {
				j.startObject()
				if line != nil {
					writeLineJSON(j, *line, o.linum)
				}
				j.name("pc")
				j.str(fmt.Sprintf("0x%x", off-lo))
				op, operands := splitX86(text, rel)
				j.name("operation")
				j.str(op)
				j.name("operands")
				j.startArray()
				if len(operands) == 0 {
					j.raw("null")
				}
				for _, a := range operands {
					j.str(a)
				}
				j.endArray()
				if o.opcodes {
					j.name("opcodes")
					j.startArray()
					for _, c := range code[off : off+n] {
						j.str("0x" + hex2(c))
					}
					j.endArray()
				}
				j.endObject()
			} else {
				if line != nil {
					fmt.Fprintf(w, "; %s\n", lineText(*line, o.linum))
				}
				fmt.Fprintf(w, "%4x:\t%s", off-lo, text)
				if o.opcodes {
					io.WriteString(w, "\n\t")
					for _, c := range code[off : off+n] {
						fmt.Fprintf(w, "%02x ", c)
					}
				}
				io.WriteString(w, "\n")
			}
			off += n
		}
		if j != nil {
			j.endArray()
			j.endObject()
		} else {
			io.WriteString(w, "\n")
		}
	}
	if j != nil {
		j.endArray()
	}
	return nil
}

// funcTag is the tag in the kallsyms name of function fi, which spans
// instructions [start, end) of the xlated program: the program's tag
// (Program.Info) for the main function, which the kernel names after the
// program as loaded; for a subprogram, the tag the kernel gives it when it
// JIT-compiles it, of its instructions after the rewrites. That one equals
// the kernel's where the rewritten instructions do, i.e. where the
// function calls no helper (whose immediates are the kernel's function
// addresses there) and references no map (their addresses).
func (d *xlatedDump) funcTag(fi, start, end int) string {
	if fi == 0 {
		if info, err := d.prog.Info(); err == nil {
			return info.Tag
		}
	}
	if start > end {
		start = end
	}
	return isa.Tag(d.insns[start:end])
}

// jitFunc is a function of the program: where its instructions start and
// its name.
type jitFunc struct {
	start int
	name  string
}

// jitFuncs are the program's functions, from its func info, or the whole
// program as one function when it has none.
func (d *xlatedDump) jitFuncs(n int) []jitFunc {
	var out []jitFunc
	for _, f := range d.prog.XlatedFuncInfo() {
		if f.Start < n {
			out = append(out, jitFunc{f.Start, f.Name})
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].start < out[b].start })
	if len(out) == 0 || out[0].start != 0 {
		out = append([]jitFunc{{0, d.prog.Name()}}, out...)
	}
	return out
}

// writeLineJSON writes a line info record's fields as bpftool's
// btf_dump_linfo_json: "src", and with linum "file", "line_num",
// "line_col".
func writeLineJSON(j *jsonWriter, l verifier.LineInfo, linum bool) {
	j.name("src")
	j.str(strings.TrimLeft(l.Line, " \t\n\v\f\r"))
	if linum {
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

// decodeX86 decodes the x86-64 instruction at the start of code, at pc
// in its function, and returns its length and its text in objdump's
// layout: the mnemonic padded to six columns and a space, then the AT&T
// operands, branch targets as offsets in the function; and whether its
// operand is a branch target (which bpftool's JSON keeps in one piece).
// The text is that of GNU objdump 2.40 (libbfd, what bpftool links),
// which TestJitedMatchesLibbfd checks instruction by instruction:
// x86asm's GNU syntax is an older objdump's, so the differences are
// mended here (gnuText).
func decodeX86(code []byte, pc int) (n int, text string, rel bool) {
	inst, err := x86asm.Decode(code, 64)
	if err != nil || inst.Len == 0 {
		return 1, "(bad)", false
	}
	for _, a := range inst.Args {
		if _, ok := a.(x86asm.Rel); ok {
			rel = true
		}
	}
	text = x86asm.GNUSyntax(inst, uint64(pc), nil)
	op, args, _ := strings.Cut(text, " ")
	// Prefixes ("lock", "rep") stay with the mnemonic, as objdump's.
	for contains(x86Prefixes, op) && args != "" {
		var next string
		next, args, _ = strings.Cut(args, " ")
		op += " " + next
	}
	op, args = gnuText(inst, code, pc, op, args)
	if args == "" {
		return inst.Len, op, rel
	}
	return inst.Len, fmt.Sprintf("%-6s %s", op, args), rel
}

// gnuMnemonics are the mnemonics binutils 2.40 spells differently from
// x86asm's GNU syntax: no operand-size suffix on near branches in 64-bit
// mode, movabs for a move of a 64-bit immediate, movslq for movsxd.
var gnuMnemonics = map[string]string{
	"callq": "call", "retq": "ret", "jmpq": "jmp", "leaveq": "leave", "movsxd": "movslq",
}

// gnuText mends x86asm's GNU syntax where objdump 2.40 differs: the
// mnemonics above; a SIB byte without an index (r12 and rsp bases) printed
// with no %riz; an encoded zero displacement and an index's scale of 1
// printed; negative
// immediates printed as the operand's unsigned value; and RIP-relative
// operands followed by their address as a comment. Addresses (branch
// targets, that comment) are printed as bpftool's libbfd callback prints
// them, generic_print_address's "0x%08x", where objdump drops the zeros.
func gnuText(inst x86asm.Inst, code []byte, pc int, op, args string) (string, string) {
	if m, ok := gnuMnemonics[op]; ok {
		op = m
	}
	if op == "mov" && inst.Opcode>>24 >= 0xb8 && inst.Opcode>>24 <= 0xbf && inst.DataSize == 64 {
		op = "movabs"
	}
	args = strings.ReplaceAll(args, ",%riz)", ")")
	rip := ""
	for _, a := range inst.Args {
		switch a := a.(type) {
		case x86asm.Imm:
			if int64(a) < 0 {
				bits := immBits(inst)
				u := uint64(a)
				if bits < 64 {
					u &= 1<<bits - 1
				}
				args = strings.Replace(args, fmt.Sprintf("$-%#x", -int64(a)), fmt.Sprintf("$%#x", u), 1)
			}
		case x86asm.Rel:
			// libbfd's generic_print_address: at least 8 digits.
			args = fmt.Sprintf("0x%08x", uint64(int64(pc+inst.Len)+int64(a)))
		case x86asm.Mem:
			if a.Base == x86asm.RIP {
				rip = fmt.Sprintf("        # 0x%08x", uint64(int64(pc+inst.Len)+a.Disp))
			}
			// objdump prints an encoded displacement even when it is 0
			// (always there for rbp and r13 bases), and the scale of
			// an index even when it is 1.
			if a.Disp == 0 && a.Base != 0 && hasDisp(code) {
				args = strings.Replace(args, "(%"+strings.ToLower(a.Base.String()), "0x0(%"+strings.ToLower(a.Base.String()), 1)
			}
			if a.Base == 0 && a.Index == 0 && a.Disp < 0 {
				// An absolute address (a per-CPU offset off %gs).
				args = strings.Replace(args, fmt.Sprintf("-%#x", -a.Disp), fmt.Sprintf("%#x", uint64(a.Disp)), 1)
			}
			if a.Index != 0 && a.Scale == 1 {
				idx := ",%" + strings.ToLower(a.Index.String())
				args = strings.Replace(args, idx+")", idx+",1)", 1)
			}
		}
	}
	return op, args + rip
}

// hasDisp reports whether the instruction at the start of code, which has
// a memory operand, encodes a displacement: its ModRM byte's mod is 1 or
// 2. The ModRM byte follows the legacy prefixes, a REX prefix and the
// opcode (one byte, two after 0x0f, three after 0x0f 0x38 or 0x0f 0x3a):
// the encodings JITs emit (no VEX).
func hasDisp(code []byte) bool {
	i := 0
	for i < len(code) && strings.IndexByte("\x66\x67\xf0\xf2\xf3\x2e\x36\x3e\x26\x64\x65", code[i]) >= 0 {
		i++
	}
	if i < len(code) && code[i]&0xf0 == 0x40 {
		i++
	}
	switch {
	case i+1 < len(code) && code[i] == 0x0f && (code[i+1] == 0x38 || code[i+1] == 0x3a):
		i += 3
	case i < len(code) && code[i] == 0x0f:
		i += 2
	default:
		i++
	}
	if i >= len(code) {
		return false
	}
	mod := code[i] >> 6
	return mod == 1 || mod == 2
}

// immBits is the width objdump prints an instruction's immediate at: its
// operand size, a byte for byte operations.
func immBits(inst x86asm.Inst) int {
	for _, a := range inst.Args {
		if r, ok := a.(x86asm.Reg); ok && r >= x86asm.AL && r <= x86asm.R15B {
			return 8
		}
	}
	if inst.MemBytes == 1 {
		return 8
	}
	if inst.DataSize == 0 {
		return 64
	}
	return inst.DataSize
}

// x86Prefixes are the prefixes x86asm writes as words before a mnemonic.
var x86Prefixes = []string{"lock", "rep", "repn", "data16", "addr32", "rex", "rex.w"}

// splitX86 splits a disassembled instruction as bpftool's JSON does with
// libbfd, which records each piece libbfd prints as an operand: the
// operation (the first word; with a prefix, the prefix, and the mnemonic
// with its padding becomes the first operand), then per operand an empty
// piece (the text before libbfd's first style marker) and its pieces:
// "$", "-", "(", ")", ",", ":" and "*" apart from registers and numbers,
// with "," between operands. A branch target (rel) is one piece, the
// address libbfd's print_address_func prints. A RIP-relative operand's
// comment is "        # " and the address.
func splitX86(text string, rel bool) (string, []string) {
	op, args, _ := strings.Cut(text, " ")
	var out []string
	if contains(x86Prefixes, op) {
		// "lock add    %rdi,..." : the mnemonic and its padding.
		m, rest, _ := strings.Cut(strings.TrimLeft(args, " "), " ")
		pad := len(rest) - len(strings.TrimLeft(rest, " "))
		out = append(out, m+strings.Repeat(" ", pad+1))
		args = rest
	}
	args = strings.TrimLeft(args, " ")
	if args == "" {
		return op, out
	}
	if rel {
		return op, append(out, args)
	}
	comment := ""
	if i := strings.Index(args, "        # "); i >= 0 {
		args, comment = args[:i], args[i+len("        # "):]
	}
	depth, from := 0, 0
	operand := func(s string) {
		out = append(out, "")
		tok := 0
		for i := 0; i < len(s); i++ {
			if strings.IndexByte("$-(),:*", s[i]) >= 0 {
				if tok < i {
					out = append(out, s[tok:i])
				}
				out = append(out, s[i:i+1])
				tok = i + 1
			}
		}
		if tok < len(s) {
			out = append(out, s[tok:])
		}
	}
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				operand(args[from:i])
				out = append(out, ",")
				from = i + 1
			}
		}
	}
	operand(args[from:])
	if comment != "" {
		out = append(out, "        # ", comment)
	}
	return op, out
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
