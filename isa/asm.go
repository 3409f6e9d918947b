package isa

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// SyntaxError reports a line Assemble could not translate.
type SyntaxError struct {
	Line   int    // 1-based line number
	Source string // the line, comments and verifier-log prefix included
	Err    error
}

// Error names the line, the problem and the offending source.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d: %v (in %q)", e.Line, e.Err, strings.TrimSpace(e.Source))
}

// Unwrap returns the underlying problem.
func (e *SyntaxError) Unwrap() error { return e.Err }

// Assemble translates eBPF assembly to instructions, one slot per element
// (LD_IMM64 takes two). Each line is read in either of two dialects:
//
//   - The Linux verifier-log syntax that Format prints, for example
//     "r1 = *(u32 *)(r2 +4)" or "if w1 s< w2 goto pc-7", optionally after
//     a log prefix such as "12: (b7) " so that Dump output, bpftool dumps
//     and verifier logs assemble back. The prefix's opcode must match the
//     instruction; "(18)" also marks "r1 = 0x0" as an LD_IMM64, which the
//     kernel prints without the " ll" that Format adds.
//   - The uBPF / bpf_conformance syntax, for example "ldxw %r1, [%r2+4]",
//     "jgt %r1, 5, +3", "lock fetch add32 [%r10-4], %r1" or "call local f".
//
// Jump and call targets are either relative ("pc+3", "+3", "-7") or labels
// defined by a line "name:"; a label may also prefix an instruction on the
// same line. As in bpf_conformance, the label "exit", unless defined,
// names the first exit instruction. "call name" is a bpf-to-bpf call when
// name is a label and otherwise a call of the kernel helper of that name.
//
// Comments start with ";", "//", or "#" at the start of a line or after
// white space (a "#" inside "call bpf_map_lookup_elem#1" is part of the
// instruction). Immediates are decimal or 0x-prefixed hexadecimal and may
// be negative; a 32-bit immediate is any value from -2^31 to 2^32-1 and is
// stored as its low 32 bits, so 0x89abcdef is a valid bit pattern.
// Offsets must fit in an int16 and registers are r0 to r10.
//
// Assemble checks syntax and ranges only; use Validate for the structural
// checks the kernel makes. Errors are *SyntaxError values naming the line.
func Assemble(src string) ([]Instruction, error) {
	a := assembler{labels: make(map[string]int), firstExit: -1}
	for i, line := range strings.Split(src, "\n") {
		if err := a.line(line); err != nil {
			return nil, &SyntaxError{Line: i + 1, Source: line, Err: err}
		}
	}
	if err := a.resolve(); err != nil {
		return nil, err
	}
	return a.prog, nil
}

// fixupKind says which field of an instruction a label resolves into.
type fixupKind uint8

const (
	fixOff  fixupKind = iota // jump: 16-bit offset
	fixImm                   // gotol, bpf-to-bpf call, subprog address: 32-bit imm
	fixCall                  // "call name": a local call or else a helper by name
)

// fixup is a reference to a label, resolved once all labels are known.
type fixup struct {
	slot   int
	label  string
	kind   fixupKind
	line   int
	source string
}

type assembler struct {
	prog      []Instruction
	labels    map[string]int
	firstExit int // slot of the first exit, the implicit "exit" label
	fixups    []fixup
	lineNo    int
}

// line assembles one source line.
func (a *assembler) line(src string) error {
	a.lineNo++
	text := strings.TrimSpace(stripComment(src))
	prefixOp, text, hasPrefix, err := stripLogPrefix(text)
	if err != nil {
		return err
	}
	if !hasPrefix {
		if label, rest, ok := cutLabel(text); ok {
			if _, dup := a.labels[label]; dup {
				return fmt.Errorf("label %q defined twice", label)
			}
			a.labels[label] = len(a.prog)
			text = rest
		}
	}
	if text == "" {
		if hasPrefix {
			return errors.New("missing instruction after log prefix")
		}
		return nil
	}
	p := parser{s: text, prefixOp: prefixOp}
	insns, err := p.instruction()
	if err != nil {
		return err
	}
	if hasPrefix && insns[0].Op != uint8(prefixOp) {
		return fmt.Errorf("log prefix opcode (%02x) does not match instruction opcode (%02x)", prefixOp, insns[0].Op)
	}
	if p.label != "" {
		a.fixups = append(a.fixups, fixup{slot: len(a.prog), label: p.label, kind: p.labelKind, line: a.lineNo, source: src})
	}
	if insns[0].Op == OpExit && a.firstExit < 0 {
		a.firstExit = len(a.prog)
	}
	a.prog = append(a.prog, insns...)
	return nil
}

// resolve patches label references now that every label is known.
func (a *assembler) resolve() error {
	for _, f := range a.fixups {
		target, ok := a.labels[f.label]
		if !ok && f.label == "exit" && a.firstExit >= 0 {
			target, ok = a.firstExit, true
		}
		ins := &a.prog[f.slot]
		if !ok {
			if f.kind == fixCall {
				if id, ok := HelperID(f.label); ok {
					ins.Src = Register(CallHelper)
					ins.Imm = id
					continue
				}
				return &SyntaxError{Line: f.line, Source: f.source, Err: fmt.Errorf("%q is neither a label nor a helper function", f.label)}
			}
			return &SyntaxError{Line: f.line, Source: f.source, Err: fmt.Errorf("undefined label %q", f.label)}
		}
		rel := target - f.slot - 1
		switch f.kind {
		case fixOff:
			if rel < math.MinInt16 || rel > math.MaxInt16 {
				return &SyntaxError{Line: f.line, Source: f.source, Err: fmt.Errorf("label %q is %d instructions away, beyond a 16-bit offset (use gotol)", f.label, rel)}
			}
			ins.Off = int16(rel)
		default:
			if rel < math.MinInt32 || rel > math.MaxInt32 {
				return &SyntaxError{Line: f.line, Source: f.source, Err: fmt.Errorf("label %q is out of range", f.label)}
			}
			ins.Imm = int32(rel)
		}
	}
	return nil
}

// stripComment removes a ";", "//" or "#" comment. A "#" only starts a
// comment at the start of the line or after white space, since the kernel
// writes helper calls as "call name#id".
func stripComment(s string) string {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ';':
			return s[:i]
		case '/':
			if i+1 < len(s) && s[i+1] == '/' {
				return s[:i]
			}
		case '#':
			if i == 0 || s[i-1] == ' ' || s[i-1] == '\t' {
				return s[:i]
			}
		}
	}
	return s
}

// stripLogPrefix removes a verifier-log prefix "12: (b7) " and returns its opcode.
func stripLogPrefix(s string) (op int, rest string, ok bool, err error) {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i == 0 || i >= len(s) || s[i] != ':' {
		return 0, s, false, nil
	}
	rest = strings.TrimLeft(s[i+1:], " \t")
	if len(rest) < 4 || rest[0] != '(' || rest[3] != ')' || !isHexDigit(rest[1]) || !isHexDigit(rest[2]) {
		return 0, s, false, errors.New("malformed log prefix: want \"N: (op) \"")
	}
	op = hexValue(rest[1])<<4 | hexValue(rest[2])
	return op, strings.TrimSpace(rest[4:]), true, nil
}

// cutLabel splits "name: rest" into the label and the rest of the line.
func cutLabel(s string) (label, rest string, ok bool) {
	n := identLen(s)
	if n == 0 || n >= len(s) || s[n] != ':' {
		return "", s, false
	}
	label = s[:n]
	if _, _, isReg := parseRegisterName(label); isReg {
		return "", s, false
	}
	return label, strings.TrimSpace(s[n+1:]), true
}

func isDigit(c byte) bool    { return '0' <= c && c <= '9' }
func isHexDigit(c byte) bool { return isDigit(c) || 'a' <= c|0x20 && c|0x20 <= 'f' }
func isIdentStart(c byte) bool {
	return 'a' <= c|0x20 && c|0x20 <= 'z' || c == '_' || c == '.' || c == '$'
}
func isIdentChar(c byte) bool { return isIdentStart(c) || isDigit(c) }

func hexValue(c byte) int {
	if isDigit(c) {
		return int(c - '0')
	}
	return int(c|0x20-'a') + 10
}

// identLen returns the length of the identifier at the start of s.
func identLen(s string) int {
	if s == "" || !isIdentStart(s[0]) {
		return 0
	}
	n := 1
	for n < len(s) && isIdentChar(s[n]) {
		n++
	}
	return n
}

// parseRegisterName parses "r3", "w3" or "%r3" and reports whether s is
// spelled as a register. Numbers beyond R10 come back as they are (capped at
// 255) so that callers can report them as invalid registers.
func parseRegisterName(s string) (reg Register, wide byte, ok bool) {
	s = strings.TrimPrefix(s, "%")
	if len(s) < 2 || (s[0] != 'r' && s[0] != 'w') {
		return 0, 0, false
	}
	n := 0
	for _, c := range []byte(s[1:]) {
		if !isDigit(c) {
			return 0, 0, false
		}
		n = min(n*10+int(c-'0'), 255)
	}
	return Register(n), s[0], true
}

// parser reads one instruction. Both dialects share it: the first word
// decides which grammar applies.
type parser struct {
	s        string
	pos      int
	prefixOp int // opcode of the log prefix, if any

	label     string // label referenced by the instruction, if any
	labelKind fixupKind
}

func (p *parser) skipSpace() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t') {
		p.pos++
	}
}

// peek returns the next non-blank byte, or 0 at the end.
func (p *parser) peek() byte {
	p.skipSpace()
	if p.pos < len(p.s) {
		return p.s[p.pos]
	}
	return 0
}

func (p *parser) atEnd() bool { return p.peek() == 0 }

// accept consumes lit if it comes next.
func (p *parser) accept(lit string) bool {
	p.skipSpace()
	if strings.HasPrefix(p.s[p.pos:], lit) {
		p.pos += len(lit)
		return true
	}
	return false
}

func (p *parser) expect(lit string) error {
	if !p.accept(lit) {
		return p.unexpected(fmt.Sprintf("%q", lit))
	}
	return nil
}

// unexpected describes what the parser found where it wanted something else.
func (p *parser) unexpected(want string) error {
	p.skipSpace()
	if p.pos >= len(p.s) {
		return fmt.Errorf("expected %s at end of line", want)
	}
	rest := p.s[p.pos:]
	if len(rest) > 20 {
		rest = rest[:20] + "..."
	}
	return fmt.Errorf("expected %s at %q", want, rest)
}

func (p *parser) end() error {
	if !p.atEnd() {
		return p.unexpected("end of instruction")
	}
	return nil
}

// finish returns err, or checks that the line ended when err is nil.
func (p *parser) finish(err error) error {
	if err != nil {
		return err
	}
	return p.end()
}

// word consumes an identifier, or returns "" without consuming anything.
func (p *parser) word() string {
	p.skipSpace()
	n := identLen(p.s[p.pos:])
	w := p.s[p.pos : p.pos+n]
	p.pos += n
	return w
}

// peekWord returns the next identifier without consuming it.
func (p *parser) peekWord() string {
	p.skipSpace()
	return p.s[p.pos : p.pos+identLen(p.s[p.pos:])]
}

// register consumes a register if one comes next.
func (p *parser) register() (reg Register, wide byte, ok bool, err error) {
	p.skipSpace()
	start := p.pos
	if p.pos < len(p.s) && p.s[p.pos] == '%' {
		p.pos++
	}
	n := identLen(p.s[p.pos:])
	name := p.s[start : p.pos+n]
	reg, wide, ok = parseRegisterName(name)
	if !ok {
		p.pos = start
		return 0, 0, false, nil
	}
	p.pos += n
	if reg > MaxRegister {
		return 0, 0, false, fmt.Errorf("invalid register %q", name)
	}
	return reg, wide, true, nil
}

func (p *parser) needRegister() (Register, byte, error) {
	reg, wide, ok, err := p.register()
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		return 0, 0, p.unexpected("register")
	}
	return reg, wide, nil
}

// sameRegister reads a register that must equal reg, as in "r1 = -r1". A
// wide of 0 accepts either spelling, since the kernel writes r1 even for
// 32-bit byte-order conversions.
func (p *parser) sameRegister(reg Register, wide byte) error {
	r, w, err := p.needRegister()
	if err != nil {
		return err
	}
	if r != reg || wide != 0 && w != wide {
		return fmt.Errorf("operand %c%d must be the destination register", w, r)
	}
	return nil
}

// number consumes an optionally signed decimal or 0x-prefixed hexadecimal
// integer. ok is false when no number comes next.
func (p *parser) number() (neg bool, mag uint64, ok bool, err error) {
	p.skipSpace()
	start := p.pos
	if p.pos < len(p.s) && (p.s[p.pos] == '-' || p.s[p.pos] == '+') {
		neg = p.s[p.pos] == '-'
		p.pos++
		p.skipSpace()
	}
	base := uint64(10)
	if strings.HasPrefix(p.s[p.pos:], "0x") || strings.HasPrefix(p.s[p.pos:], "0X") {
		base = 16
		p.pos += 2
	}
	digits := p.pos
	overflow := false
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		var d uint64
		switch {
		case isDigit(c):
			d = uint64(c - '0')
		case base == 16 && isHexDigit(c):
			d = uint64(hexValue(c))
		default:
			goto done
		}
		if mag > (math.MaxUint64-d)/base {
			overflow = true
		}
		mag = mag*base + d
		p.pos++
	}
done:
	if p.pos == digits || (p.pos < len(p.s) && isIdentChar(p.s[p.pos])) {
		p.pos = start
		return false, 0, false, nil
	}
	if overflow {
		return false, 0, false, fmt.Errorf("number %s out of range", p.s[start:p.pos])
	}
	return neg, mag, true, nil
}

// imm32 reads a 32-bit immediate: -2^31 to 2^32-1, kept as its low 32 bits.
func (p *parser) imm32() (int32, bool, error) {
	start := p.pos
	neg, mag, ok, err := p.number()
	if !ok || err != nil {
		return 0, ok, err
	}
	if neg && mag > 1<<31 || !neg && mag > math.MaxUint32 {
		return 0, false, fmt.Errorf("immediate %s out of 32-bit range", strings.TrimSpace(p.s[start:p.pos]))
	}
	if neg {
		return int32(-int64(mag)), true, nil
	}
	return int32(uint32(mag)), true, nil
}

func (p *parser) needImm32() (int32, error) {
	v, ok, err := p.imm32()
	if err == nil && !ok {
		err = p.unexpected("immediate")
	}
	return v, err
}

// imm64 reads a 64-bit immediate: -2^63 to 2^64-1.
func (p *parser) imm64() (uint64, bool, error) {
	start := p.pos
	neg, mag, ok, err := p.number()
	if !ok || err != nil {
		return 0, ok, err
	}
	if neg {
		if mag > 1<<63 {
			return 0, false, fmt.Errorf("immediate %s out of 64-bit range", strings.TrimSpace(p.s[start:p.pos]))
		}
		return -mag, true, nil
	}
	return mag, true, nil
}

// offset reads a signed 16-bit offset.
func (p *parser) offset() (int16, bool, error) {
	start := p.pos
	neg, mag, ok, err := p.number()
	if !ok || err != nil {
		return 0, ok, err
	}
	if neg && mag > 1<<15 || !neg && mag > math.MaxInt16 {
		return 0, false, fmt.Errorf("offset %s out of 16-bit range", strings.TrimSpace(p.s[start:p.pos]))
	}
	if neg {
		return int16(-int64(mag)), true, nil
	}
	return int16(mag), true, nil
}

// signedOffset reads an offset that must start with + or -, as in "(r1 +4)".
// A missing offset is zero.
func (p *parser) signedOffset() (int16, error) {
	if c := p.peek(); c != '+' && c != '-' {
		return 0, nil
	}
	off, ok, err := p.offset()
	if err == nil && !ok {
		err = p.unexpected("offset")
	}
	return off, err
}

// target reads a jump target: "pc+N", "+N", "-N", "N" or a label. kind
// fixOff reads a 16-bit offset; the others a 32-bit one, as gotol and
// calls keep it in imm.
func (p *parser) target(kind fixupKind) (int32, error) {
	if p.hasPCPrefix() {
		p.pos += len("pc")
	}
	if kind == fixOff {
		off, ok, err := p.offset()
		if ok || err != nil {
			return int32(off), err
		}
	} else {
		start := p.pos
		neg, mag, ok, err := p.number()
		if err != nil {
			return 0, err
		}
		if ok {
			if neg && mag > 1<<31 || !neg && mag > math.MaxInt32 {
				return 0, fmt.Errorf("target %s out of 32-bit range", strings.TrimSpace(p.s[start:p.pos]))
			}
			if neg {
				return int32(-int64(mag)), nil
			}
			return int32(mag), nil
		}
	}
	label := p.word()
	if label == "" {
		return 0, p.unexpected("jump target")
	}
	if _, _, isReg := parseRegisterName(label); isReg {
		return 0, fmt.Errorf("register %s is not a jump target", label)
	}
	p.label, p.labelKind = label, kind
	return 0, nil
}

// hasPCPrefix reports whether "pc+" or "pc-" comes next.
func (p *parser) hasPCPrefix() bool {
	p.skipSpace()
	rest := p.s[p.pos:]
	return strings.HasPrefix(rest, "pc+") || strings.HasPrefix(rest, "pc-")
}

// instruction parses the whole line.
func (p *parser) instruction() ([]Instruction, error) {
	if p.peek() == '*' {
		return one(p.kernelStore())
	}
	if _, _, ok := parseRegisterName(p.peekWord()); ok {
		return p.kernelAssign()
	}
	save := p.pos
	mnemonic := strings.ToLower(p.word())
	switch mnemonic {
	case "":
		return nil, p.unexpected("instruction")
	case "exit":
		return one(Instruction{Op: OpExit}, p.end())
	case "goto", "ja":
		off, err := p.target(fixOff)
		return one(Instruction{Op: OpJA, Off: int16(off)}, p.finish(err))
	case "gotol", "ja32":
		imm, err := p.target(fixImm)
		return one(Instruction{Op: OpJA32, Imm: imm}, p.finish(err))
	case "may_goto":
		off, err := p.target(fixOff)
		return one(Instruction{Op: OpMayGoto, Off: int16(off)}, p.finish(err))
	case "call", "callx":
		return one(p.call(mnemonic == "callx"))
	case "if":
		return one(p.kernelCond())
	case "lock":
		if p.peek() == '*' {
			return one(p.kernelLock())
		}
		return one(p.conformanceLock())
	case "store_release":
		return one(p.kernelStoreRelease())
	}
	p.pos = save
	return p.conformance()
}

// one adapts a single-instruction result.
func one(ins Instruction, err error) ([]Instruction, error) {
	if err != nil {
		return nil, err
	}
	return []Instruction{ins}, nil
}

// call parses the operands of call and callx in both dialects.
func (p *parser) call(callx bool) (Instruction, error) {
	if reg, _, ok, err := p.register(); err != nil || ok {
		return Instruction{Op: OpCallX, Dst: reg}, p.finish(err)
	}
	if callx {
		return Instruction{}, p.unexpected("register")
	}
	ins := Instruction{Op: OpCall}
	save := p.pos
	switch mode := p.word(); mode {
	case "local": // bpf_conformance: call local <label or offset>
		ins.Src = Register(CallLocal)
		imm, err := p.target(fixImm)
		ins.Imm = imm
		return ins, p.finish(err)
	case "helper", "runtime": // bpf_conformance: call helper N, call runtime N (kfunc)
		if mode == "runtime" {
			ins.Src = Register(CallKfunc)
		}
		imm, err := p.needImm32()
		ins.Imm = imm
		return ins, p.finish(err)
	}
	p.pos = save
	if p.hasPCPrefix() {
		imm, err := p.target(fixImm)
		ins.Src = Register(CallLocal)
		ins.Imm = imm
		return ins, p.finish(err)
	}
	if imm, ok, err := p.imm32(); err != nil || ok {
		ins.Imm = imm
		return ins, p.finish(err)
	}
	// "name#id" as the kernel prints helper and kfunc calls, or a bare name.
	name := p.word()
	if name == "kernel" && p.accept("-function") {
		name = kfuncName
	}
	if name == "" {
		return ins, p.unexpected("call target")
	}
	if p.accept("#") {
		if name == kfuncName {
			ins.Src = Register(CallKfunc)
		}
		imm, err := p.needImm32()
		ins.Imm = imm
		if id, ok := KfuncID(name); ok {
			// A kfunc bpfvm knows, by name: its id here, not the
			// kernel's BTF id a pasted log shows.
			ins.Src, ins.Imm = Register(CallKfunc), id
		}
		return ins, p.finish(err)
	}
	if _, _, isReg := parseRegisterName(name); isReg {
		return ins, fmt.Errorf("invalid call target %q", name)
	}
	ins.Src = Register(CallLocal)
	p.label, p.labelKind = name, fixCall
	return ins, p.end()
}

// sizeOp reads a C type name as printed in memory operands: u8 to u64, and
// s8 to s32 when signed loads are allowed.
func (p *parser) sizeOp(allowSigned bool) (size uint8, signed bool, err error) {
	w := p.word()
	switch w {
	case "u8", "s8":
		size = SizeB
	case "u16", "s16":
		size = SizeH
	case "u32", "s32":
		size = SizeW
	case "u64":
		size = SizeDW
	default:
		return 0, false, fmt.Errorf("invalid access size %q", w)
	}
	signed = w[0] == 's'
	if signed && !allowSigned {
		return 0, false, fmt.Errorf("signed access size %q is only valid for loads", w)
	}
	return size, signed, nil
}

// castOp reads "(u32 *)".
func (p *parser) castOp(allowSigned bool) (size uint8, signed bool, err error) {
	if err := p.expect("("); err != nil {
		return 0, false, err
	}
	if size, signed, err = p.sizeOp(allowSigned); err != nil {
		return 0, false, err
	}
	if err := p.expect("*"); err != nil {
		return 0, false, err
	}
	return size, signed, p.expect(")")
}

// kernelAddr reads "(r1 +4)".
func (p *parser) kernelAddr() (Register, int16, error) {
	if err := p.expect("("); err != nil {
		return 0, 0, err
	}
	reg, _, err := p.needRegister()
	if err != nil {
		return 0, 0, err
	}
	off, err := p.signedOffset()
	if err != nil {
		return 0, 0, err
	}
	return reg, off, p.expect(")")
}

// kernelMem reads "(u32 *)(r1 +4)".
func (p *parser) kernelMem(allowSigned bool) (size uint8, signed bool, reg Register, off int16, err error) {
	if size, signed, err = p.castOp(allowSigned); err != nil {
		return
	}
	reg, off, err = p.kernelAddr()
	return
}

// kernelStore parses "*(u32 *)(r10 -4) = r1" and "*(u32 *)(r10 -4) = 5".
func (p *parser) kernelStore() (Instruction, error) {
	if err := p.expect("*"); err != nil {
		return Instruction{}, err
	}
	size, _, dst, off, err := p.kernelMem(false)
	if err != nil {
		return Instruction{}, err
	}
	if err := p.expect("="); err != nil {
		return Instruction{}, err
	}
	ins := Instruction{Dst: dst, Off: off}
	if src, _, ok, err := p.register(); err != nil || ok {
		ins.Op, ins.Src = ClassSTX|ModeMEM|size, src
		return ins, p.finish(err)
	}
	imm, err := p.needImm32()
	ins.Op, ins.Imm = ClassST|ModeMEM|size, imm
	return ins, p.finish(err)
}

// kernelLock parses "lock *(u64 *)(r10 -8) += r1".
func (p *parser) kernelLock() (Instruction, error) {
	if err := p.expect("*"); err != nil {
		return Instruction{}, err
	}
	size, _, dst, off, err := p.kernelMem(false)
	if err != nil {
		return Instruction{}, err
	}
	ins := Instruction{Op: ClassSTX | ModeATOMIC | size, Dst: dst, Off: off}
	switch {
	case p.accept("+="):
		ins.Imm = AtomicAdd
	case p.accept("|="):
		ins.Imm = AtomicOr
	case p.accept("&="):
		ins.Imm = AtomicAnd
	case p.accept("^="):
		ins.Imm = AtomicXor
	default:
		return ins, p.unexpected("+=, |=, &= or ^=")
	}
	src, _, err := p.needRegister()
	ins.Src = src
	return ins, p.finish(err)
}

// kernelStoreRelease parses "store_release((u64 *)(r1 +0), r2)".
func (p *parser) kernelStoreRelease() (Instruction, error) {
	if err := p.expect("("); err != nil {
		return Instruction{}, err
	}
	size, _, dst, off, err := p.kernelMem(false)
	if err != nil {
		return Instruction{}, err
	}
	if err := p.expect(","); err != nil {
		return Instruction{}, err
	}
	src, _, err := p.needRegister()
	if err != nil {
		return Instruction{}, err
	}
	ins := Instruction{Op: ClassSTX | ModeATOMIC | size, Dst: dst, Src: src, Off: off, Imm: AtomicStoreRelease}
	return ins, p.finish(p.expect(")"))
}

// kernelCond parses "if r1 > 0x5 goto pc+3" after the "if".
func (p *parser) kernelCond() (Instruction, error) {
	dst, wide, err := p.needRegister()
	if err != nil {
		return Instruction{}, err
	}
	class := ClassJMP
	if wide == 'w' {
		class = ClassJMP32
	}
	op, ok := p.jumpOperator()
	if !ok {
		return Instruction{}, p.unexpected("comparison operator")
	}
	ins := Instruction{Op: class | op, Dst: dst}
	if src, srcWide, ok, err := p.register(); err != nil {
		return ins, err
	} else if ok {
		if srcWide != wide {
			return ins, fmt.Errorf("cannot compare %c%d with %c%d", wide, dst, srcWide, src)
		}
		ins.Op |= SrcX
		ins.Src = src
	} else if ins.Imm, err = p.needImm32(); err != nil {
		return ins, err
	}
	if p.word() != "goto" {
		return ins, errors.New(`expected "goto" after the comparison`)
	}
	off, err := p.target(fixOff)
	ins.Off = int16(off)
	return ins, p.finish(err)
}

// jumpOperator reads a comparison, trying longer operators first.
func (p *parser) jumpOperator() (uint8, bool) {
	for _, c := range [...]struct {
		text string
		op   uint8
	}{
		{"s>=", JumpSGE}, {"s<=", JumpSLE}, {"s>", JumpSGT}, {"s<", JumpSLT},
		{"==", JumpEQ}, {"!=", JumpNE}, {">=", JumpGE}, {"<=", JumpLE},
		{">", JumpGT}, {"<", JumpLT}, {"&", JumpSet},
	} {
		if p.accept(c.text) {
			return c.op, true
		}
	}
	return 0, false
}

// aluOperator reads a compound assignment operator; off is 1 for the
// signed division and modulo forms.
func (p *parser) aluOperator() (op uint8, off int16, ok bool) {
	for _, c := range [...]struct {
		text string
		op   uint8
		off  int16
	}{
		{"s>>=", ALUArsh, 0}, {"s/=", ALUDiv, 1}, {"s%=", ALUMod, 1},
		{"<<=", ALULsh, 0}, {">>=", ALURsh, 0}, {"+=", ALUAdd, 0}, {"-=", ALUSub, 0},
		{"*=", ALUMul, 0}, {"/=", ALUDiv, 0}, {"|=", ALUOr, 0}, {"&=", ALUAnd, 0},
		{"%=", ALUMod, 0}, {"^=", ALUXor, 0},
	} {
		if p.accept(c.text) {
			return c.op, c.off, true
		}
	}
	return 0, 0, false
}

// kernelAssign parses the instructions that start with a destination
// register: ALU operations, moves, loads, atomics that fetch, LD_IMM64.
func (p *parser) kernelAssign() ([]Instruction, error) {
	dst, wide, err := p.needRegister()
	if err != nil {
		return nil, err
	}
	class := ClassALU64
	if wide == 'w' {
		class = ClassALU
	}
	if op, off, ok := p.aluOperator(); ok {
		ins := Instruction{Op: class | op, Dst: dst, Off: off}
		return one(p.aluSource(ins, wide))
	}
	if p.peek() == '=' && strings.HasPrefix(p.s[p.pos:], "==") || !p.accept("=") {
		return nil, p.unexpected("assignment operator")
	}
	switch c := p.peek(); {
	case c == '-':
		save := p.pos
		p.pos++
		if _, _, ok, err := p.register(); err != nil {
			return nil, err
		} else if ok {
			p.pos = save + 1
			err := p.sameRegister(dst, wide)
			return one(Instruction{Op: class | ALUNeg, Dst: dst}, p.finish(err))
		}
		p.pos = save
	case c == '(':
		// "(s8)r2": sign-extending move.
		p.pos++
		var off int16
		switch w := p.word(); w {
		case "s8":
			off = 8
		case "s16":
			off = 16
		case "s32":
			off = 32
		default:
			return nil, fmt.Errorf("invalid sign-extension type %q", w)
		}
		if err := p.expect(")"); err != nil {
			return nil, err
		}
		ins := Instruction{Op: class | ALUMov | SrcX, Dst: dst, Off: off}
		return one(p.aluSource(ins, wide))
	case c == '*':
		p.pos++
		return one(p.kernelLoad(dst))
	}
	if reg, srcWide, ok, err := p.register(); err != nil {
		return nil, err
	} else if ok {
		if srcWide != wide {
			return nil, fmt.Errorf("cannot assign %c%d to %c%d", srcWide, reg, wide, dst)
		}
		return one(Instruction{Op: class | ALUMov | SrcX, Dst: dst, Src: reg}, p.end())
	}
	if isIdentStart(p.peek()) {
		return p.kernelFunctionForm(dst, wide)
	}
	return p.kernelImmediate(dst, wide)
}

// aluSource completes an ALU instruction with a register or an immediate.
func (p *parser) aluSource(ins Instruction, wide byte) (Instruction, error) {
	if reg, srcWide, ok, err := p.register(); err != nil {
		return ins, err
	} else if ok {
		if srcWide != wide {
			return ins, fmt.Errorf("mixed 32-bit and 64-bit registers (%c%d, %c%d)", wide, ins.Dst, srcWide, reg)
		}
		ins.Op |= SrcX
		ins.Src = reg
		return ins, p.end()
	}
	if ins.Op&SrcX != 0 {
		return ins, p.unexpected("register")
	}
	imm, err := p.needImm32()
	ins.Imm = imm
	return ins, p.finish(err)
}

// kernelImmediate parses "r0 = 5" and "r0 = 0x1122334455667788 ll".
func (p *parser) kernelImmediate(dst Register, wide byte) ([]Instruction, error) {
	start := p.pos
	v, ok, err := p.imm64()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, p.unexpected("register, immediate or expression")
	}
	ll := p.word()
	if ll != "" && ll != "ll" {
		return nil, fmt.Errorf("unexpected %q after immediate", ll)
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	if ll == "ll" || p.prefixOp == int(OpLdImm64) {
		if wide != 'r' {
			return nil, fmt.Errorf("64-bit immediate load into 32-bit register w%d", dst)
		}
		pair := LdImm64(dst, 0, v)
		return pair[:], nil
	}
	p.pos = start
	imm, err := p.needImm32()
	if err != nil {
		return nil, fmt.Errorf("%w; add \"ll\" for a 64-bit immediate load", err)
	}
	class := ClassALU64
	if wide == 'w' {
		class = ClassALU
	}
	return []Instruction{{Op: class | ALUMov, Dst: dst, Imm: imm}}, nil
}

// kernelLoad parses a load after "rD = *": "(u32 *)(r2 +4)" or "(u8 *)skb[...]".
func (p *parser) kernelLoad(dst Register) (Instruction, error) {
	size, signed, err := p.castOp(true)
	if err != nil {
		return Instruction{}, err
	}
	if p.accept("skb") {
		if signed {
			return Instruction{}, errors.New("packet loads are unsigned")
		}
		if dst != R0 {
			return Instruction{}, fmt.Errorf("packet loads write r0, not r%d", dst)
		}
		if err := p.expect("["); err != nil {
			return Instruction{}, err
		}
		ins := Instruction{Op: ClassLD | ModeABS | size}
		if src, _, ok, err := p.register(); err != nil {
			return ins, err
		} else if ok {
			ins.Op = ClassLD | ModeIND | size
			ins.Src = src
			if p.peek() == '-' {
				// "skb[r1 - 2]" is "skb[r1 + -2]".
				ins.Imm, err = p.needImm32()
			} else if err = p.expect("+"); err == nil {
				ins.Imm, err = p.needImm32()
			}
			if err != nil {
				return ins, err
			}
		} else if ins.Imm, err = p.needImm32(); err != nil {
			return ins, err
		}
		return ins, p.finish(p.expect("]"))
	}
	src, off, err := p.kernelAddr()
	if err != nil {
		return Instruction{}, err
	}
	mode := ModeMEM
	if signed {
		mode = ModeMEMSX
	}
	return Instruction{Op: ClassLDX | mode | size, Dst: dst, Src: src, Off: off}, p.end()
}

// kernelFunctionForm parses the right-hand sides spelled as a word:
// byte swaps, fetching atomics, load_acquire, addr_space_cast and the
// pseudo LD_IMM64 forms.
func (p *parser) kernelFunctionForm(dst Register, wide byte) ([]Instruction, error) {
	w := p.word()
	switch w {
	case "be16", "be32", "be64", "le16", "le32", "le64", "bswap16", "bswap32", "bswap64":
		op := ClassALU | ALUEnd | EndToLE
		switch w[0] {
		case 'b':
			if w[1] == 'e' {
				op = ClassALU | ALUEnd | EndToBE
			} else {
				op = ClassALU64 | ALUEnd
			}
		}
		imm := int32(16)
		switch w[len(w)-2:] {
		case "32":
			imm = 32
		case "64":
			imm = 64
		}
		err := p.sameRegister(dst, 0)
		return one(Instruction{Op: op, Dst: dst, Imm: imm}, p.finish(err))
	case "load_acquire":
		if err := p.expect("("); err != nil {
			return nil, err
		}
		size, _, src, off, err := p.kernelMem(false)
		if err != nil {
			return nil, err
		}
		ins := Instruction{Op: ClassSTX | ModeATOMIC | size, Dst: dst, Src: src, Off: off, Imm: AtomicLoadAcquire}
		return one(ins, p.finish(p.expect(")")))
	case "addr_space_cast":
		return one(p.addrSpaceCast(dst, wide))
	case "map", "map_value", "btf_id", "subprog":
		if wide != 'r' {
			return nil, fmt.Errorf("64-bit immediate load into 32-bit register w%d", dst)
		}
		return p.pseudoLoad(w, dst)
	}
	if name, ok := strings.CutPrefix(w, "atomic64_"); ok {
		return one(p.kernelAtomic(dst, name, true))
	}
	if name, ok := strings.CutPrefix(w, "atomic_"); ok {
		return one(p.kernelAtomic(dst, name, false))
	}
	return nil, fmt.Errorf("unknown operation %q", w)
}

// kernelAtomic parses the operands of "rS = atomic64_fetch_add((u64 *)(rD +off), rS)",
// atomic_xchg and atomic_cmpxchg. is64 is set for the atomic64_ spelling,
// which the kernel uses for 64-bit accesses only.
func (p *parser) kernelAtomic(dst Register, name string, is64 bool) (Instruction, error) {
	var imm int32
	switch name {
	case "fetch_add":
		imm = AtomicAdd | AtomicFetch
	case "fetch_or":
		imm = AtomicOr | AtomicFetch
	case "fetch_and":
		imm = AtomicAnd | AtomicFetch
	case "fetch_xor":
		imm = AtomicXor | AtomicFetch
	case "xchg":
		imm = AtomicXchg
	case "cmpxchg":
		imm = AtomicCmpXchg
	default:
		return Instruction{}, fmt.Errorf("unknown atomic operation %q", name)
	}
	if err := p.expect("("); err != nil {
		return Instruction{}, err
	}
	size, _, mem, off, err := p.kernelMem(false)
	if err != nil {
		return Instruction{}, err
	}
	if is64 != (size == SizeDW) {
		return Instruction{}, errors.New("atomic64_ operations need a u64 operand and atomic_ ones a smaller one")
	}
	if err := p.expect(","); err != nil {
		return Instruction{}, err
	}
	if imm == AtomicCmpXchg {
		// cmpxchg compares with and writes r0: "r0 = atomic_cmpxchg(mem, r0, rS)".
		if dst != R0 {
			return Instruction{}, errors.New("cmpxchg writes r0")
		}
		if err := p.sameRegister(R0, 0); err != nil {
			return Instruction{}, err
		}
		if err := p.expect(","); err != nil {
			return Instruction{}, err
		}
	}
	src, _, err := p.needRegister()
	if err != nil {
		return Instruction{}, err
	}
	if imm != AtomicCmpXchg && src != dst {
		return Instruction{}, fmt.Errorf("fetching atomics write their source register: r%d = ...(..., r%d) must name one register", dst, src)
	}
	ins := Instruction{Op: ClassSTX | ModeATOMIC | size, Dst: mem, Src: src, Off: off, Imm: imm}
	return ins, p.finish(p.expect(")"))
}

// addrSpaceCast parses "addr_space_cast(r2, 0, 1)" after the name.
func (p *parser) addrSpaceCast(dst Register, wide byte) (Instruction, error) {
	if wide != 'r' {
		return Instruction{}, errors.New("addr_space_cast needs 64-bit registers")
	}
	if err := p.expect("("); err != nil {
		return Instruction{}, err
	}
	src, _, err := p.needRegister()
	if err != nil {
		return Instruction{}, err
	}
	var spaces [2]uint32
	for i := range spaces {
		if err := p.expect(","); err != nil {
			return Instruction{}, err
		}
		start := p.pos
		neg, mag, ok, err := p.number()
		if err != nil {
			return Instruction{}, err
		}
		if !ok || neg || mag > math.MaxUint16 {
			p.pos = start
			return Instruction{}, p.unexpected("address space 0 to 65535")
		}
		spaces[i] = uint32(mag)
	}
	ins := Instruction{Op: ClassALU64 | ALUMov | SrcX, Dst: dst, Src: src, Off: 1, Imm: int32(spaces[0]<<16 | spaces[1])}
	return ins, p.finish(p.expect(")"))
}

// pseudoLoad parses the pseudo LD_IMM64 forms that Format prints:
// map[fd:N], map_value[fd:N]+OFF, map[idx:N], map_value[idx:N]+OFF,
// btf_id[N] and subprog[+N], each optionally followed by +HI and "ll".
// bpftool's map[fd:N][0]+OFF is accepted for map values too.
func (p *parser) pseudoLoad(kind string, dst Register) ([]Instruction, error) {
	if err := p.expect("["); err != nil {
		return nil, err
	}
	var src uint8
	var lo int32
	var err error
	switch kind {
	case "map", "map_value":
		switch key := p.word(); key {
		case "fd":
			src = PseudoMapFD
		case "idx":
			src = PseudoMapIdx
		case "id":
			return nil, errors.New("map[id:N] names a map of a loaded program; use map[fd:N] or map[idx:N]")
		default:
			return nil, p.unexpected("fd or idx")
		}
		if err := p.expect(":"); err != nil {
			return nil, err
		}
		lo, err = p.needImm32()
	case "btf_id":
		src = PseudoBTFID
		lo, err = p.needImm32()
	case "subprog":
		src = PseudoFunc
		lo, err = p.target(fixImm)
	}
	if err != nil {
		return nil, err
	}
	if err := p.expect("]"); err != nil {
		return nil, err
	}
	value := kind == "map_value"
	if kind == "map" && p.accept("[0]") {
		value = true
	}
	if value {
		src++ // PseudoMapValue follows PseudoMapFD, PseudoMapIdxValue PseudoMapIdx
	}
	var hi int32
	if p.peek() == '+' {
		p.pos++
		if c := p.peek(); c == '-' || c == '+' {
			return nil, p.unexpected("unsigned offset")
		}
		if hi, err = p.needImm32(); err != nil {
			return nil, err
		}
	}
	if w := p.word(); w != "" && w != "ll" {
		return nil, fmt.Errorf("unexpected %q", w)
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	pair := LdImm64(dst, src, uint64(uint32(lo))|uint64(uint32(hi))<<32)
	return pair[:], nil
}

// conformance parses the uBPF / bpf_conformance dialect: a mnemonic and
// comma-separated operands, as in "ldxw %r1, [%r2+4]".
func (p *parser) conformance() ([]Instruction, error) {
	mnemonic := strings.ToLower(p.word())
	if mnemonic == "" {
		return nil, p.unexpected("instruction")
	}
	ops := p.operands()

	if ins, ok, err := p.conformanceALU(mnemonic, ops); ok || err != nil {
		return one(ins, err)
	}
	if op, ok := conformanceJumps[strings.TrimSuffix(mnemonic, "32")]; ok {
		class := ClassJMP
		if strings.HasSuffix(mnemonic, "32") {
			class = ClassJMP32
		}
		if err := wantOperands(mnemonic, ops, 3); err != nil {
			return nil, err
		}
		ins := Instruction{Op: class | op}
		var err error
		if ins.Dst, err = operandRegister(ops[0]); err != nil {
			return nil, err
		}
		src := &parser{s: ops[1]}
		if reg, _, ok, err := src.register(); err != nil {
			return nil, err
		} else if ok {
			ins.Op |= SrcX
			ins.Src = reg
		} else if ins.Imm, err = src.needImm32(); err != nil {
			return nil, err
		}
		if err := src.end(); err != nil {
			return nil, err
		}
		t := &parser{s: ops[2]}
		off, err := t.target(fixOff)
		if err != nil {
			return nil, err
		}
		if err := t.end(); err != nil {
			return nil, err
		}
		p.label, p.labelKind = t.label, t.labelKind
		ins.Off = int16(off)
		return []Instruction{ins}, nil
	}

	switch mnemonic {
	case "lddw":
		if err := wantOperands(mnemonic, ops, 2); err != nil {
			return nil, err
		}
		dst, err := operandRegister(ops[0])
		if err != nil {
			return nil, err
		}
		v := &parser{s: ops[1]}
		imm, ok, err := v.imm64()
		if err == nil && !ok {
			err = v.unexpected("immediate")
		}
		if err != nil {
			return nil, err
		}
		if err := v.end(); err != nil {
			return nil, err
		}
		pair := LdImm64(dst, 0, imm)
		return pair[:], nil
	case "ldabsb", "ldabsh", "ldabsw":
		if err := wantOperands(mnemonic, ops, 1); err != nil {
			return nil, err
		}
		imm, err := operandImm32(ops[0])
		return one(Instruction{Op: ClassLD | ModeABS | conformanceSize(mnemonic[5:]), Imm: imm}, err)
	case "ldindb", "ldindh", "ldindw":
		if err := wantOperands(mnemonic, ops, 2); err != nil {
			return nil, err
		}
		src, err := operandRegister(ops[0])
		if err != nil {
			return nil, err
		}
		imm, err := operandImm32(ops[1])
		return one(Instruction{Op: ClassLD | ModeIND | conformanceSize(mnemonic[5:]), Src: src, Imm: imm}, err)
	}

	if size, ok := conformanceSizes[strings.TrimPrefix(strings.TrimPrefix(mnemonic, "ldxs"), "ldx")]; ok && strings.HasPrefix(mnemonic, "ldx") {
		mode := ModeMEM
		if strings.HasPrefix(mnemonic, "ldxs") {
			if size == SizeDW {
				return nil, fmt.Errorf("unknown instruction %q", mnemonic)
			}
			mode = ModeMEMSX
		}
		if err := wantOperands(mnemonic, ops, 2); err != nil {
			return nil, err
		}
		dst, err := operandRegister(ops[0])
		if err != nil {
			return nil, err
		}
		src, off, err := operandMem(ops[1])
		return one(Instruction{Op: ClassLDX | mode | size, Dst: dst, Src: src, Off: off}, err)
	}
	if size, ok := conformanceSizes[strings.TrimPrefix(strings.TrimPrefix(mnemonic, "stx"), "st")]; ok && strings.HasPrefix(mnemonic, "st") {
		if err := wantOperands(mnemonic, ops, 2); err != nil {
			return nil, err
		}
		dst, off, err := operandMem(ops[0])
		if err != nil {
			return nil, err
		}
		ins := Instruction{Dst: dst, Off: off}
		if strings.HasPrefix(mnemonic, "stx") {
			ins.Op = ClassSTX | ModeMEM | size
			ins.Src, err = operandRegister(ops[1])
		} else {
			ins.Op = ClassST | ModeMEM | size
			ins.Imm, err = operandImm32(ops[1])
		}
		return one(ins, err)
	}
	return nil, fmt.Errorf("unknown instruction %q", mnemonic)
}

// conformanceJumps maps conditional jump mnemonics to their operations.
var conformanceJumps = map[string]uint8{
	"jeq": JumpEQ, "jgt": JumpGT, "jge": JumpGE, "jset": JumpSet, "jne": JumpNE,
	"jsgt": JumpSGT, "jsge": JumpSGE, "jlt": JumpLT, "jle": JumpLE, "jslt": JumpSLT, "jsle": JumpSLE,
}

// conformanceALUOps maps ALU mnemonics, without width suffix, to their
// operation and offset (1 for the signed division and modulo).
var conformanceALUOps = map[string]struct {
	op  uint8
	off int16
}{
	"add": {ALUAdd, 0}, "sub": {ALUSub, 0}, "mul": {ALUMul, 0}, "div": {ALUDiv, 0},
	"sdiv": {ALUDiv, 1}, "or": {ALUOr, 0}, "and": {ALUAnd, 0}, "lsh": {ALULsh, 0},
	"rsh": {ALURsh, 0}, "mod": {ALUMod, 0}, "smod": {ALUMod, 1}, "xor": {ALUXor, 0},
	"mov": {ALUMov, 0}, "arsh": {ALUArsh, 0},
	"movsx8": {ALUMov, 8}, "movsx16": {ALUMov, 16}, "movsx32": {ALUMov, 32},
}

// conformanceSizes maps load/store mnemonic suffixes to sizes.
var conformanceSizes = map[string]uint8{"b": SizeB, "h": SizeH, "w": SizeW, "dw": SizeDW}

func conformanceSize(suffix string) uint8 { return conformanceSizes[suffix] }

// conformanceALU parses ALU mnemonics: "add32 %r0, 1", "neg %r0",
// "be16 %r0", "bswap32 %r0", "movsx832 %r0, %r1". ok is false for
// other mnemonics.
func (p *parser) conformanceALU(mnemonic string, ops []string) (ins Instruction, ok bool, err error) {
	for _, end := range [...]struct {
		prefix string
		op     uint8
	}{
		{"le", ClassALU | ALUEnd | EndToLE}, {"be", ClassALU | ALUEnd | EndToBE},
		{"bswap", ClassALU64 | ALUEnd}, {"swap", ClassALU64 | ALUEnd},
	} {
		width, found := strings.CutPrefix(mnemonic, end.prefix)
		if !found || (width != "16" && width != "32" && width != "64") {
			continue
		}
		ins = Instruction{Op: end.op, Imm: int32(width[0]-'0')*10 + int32(width[1]-'0')}
		if err := wantOperands(mnemonic, ops, 1); err != nil {
			return ins, true, err
		}
		ins.Dst, err = operandRegister(ops[0])
		return ins, true, err
	}

	name, class := mnemonic, ClassALU64
	if n, found := strings.CutSuffix(mnemonic, "32"); found {
		name, class = n, ClassALU
	} else if n, found := strings.CutSuffix(mnemonic, "64"); found {
		name = n
	}
	if name == "neg" {
		if err := wantOperands(mnemonic, ops, 1); err != nil {
			return ins, true, err
		}
		ins = Instruction{Op: class | ALUNeg}
		ins.Dst, err = operandRegister(ops[0])
		return ins, true, err
	}
	alu, found := conformanceALUOps[name]
	if !found {
		return ins, false, nil
	}
	if err := wantOperands(mnemonic, ops, 2); err != nil {
		return ins, true, err
	}
	ins = Instruction{Op: class | alu.op, Off: alu.off}
	if ins.Dst, err = operandRegister(ops[0]); err != nil {
		return ins, true, err
	}
	src := &parser{s: ops[1]}
	if reg, _, isReg, err := src.register(); err != nil {
		return ins, true, err
	} else if isReg {
		ins.Op |= SrcX
		ins.Src = reg
	} else if strings.HasPrefix(name, "movsx") {
		return ins, true, fmt.Errorf("%s needs a source register", mnemonic)
	} else if ins.Imm, err = src.needImm32(); err != nil {
		return ins, true, err
	}
	return ins, true, src.end()
}

// conformanceLock parses "lock [fetch] op[32] [%rD+off], %rS" after "lock".
func (p *parser) conformanceLock() (Instruction, error) {
	fetch := false
	op := strings.ToLower(p.word())
	if op == "fetch" {
		fetch = true
		op = strings.ToLower(p.word())
	}
	if op == "" {
		return Instruction{}, errors.New("invalid number of operands for lock: want an operation")
	}
	mnemonic := "lock " + op
	if fetch {
		mnemonic = "lock fetch " + op
	}
	size := SizeDW
	if name, found := strings.CutSuffix(op, "32"); found {
		op, size = name, SizeW
	}
	var imm int32
	switch op {
	case "add":
		imm = AtomicAdd
	case "or":
		imm = AtomicOr
	case "and":
		imm = AtomicAnd
	case "xor":
		imm = AtomicXor
	case "xchg":
		imm = AtomicXchg
	case "cmpxchg":
		imm = AtomicCmpXchg
	default:
		return Instruction{}, fmt.Errorf("unknown atomic operation %q", op)
	}
	if fetch {
		imm |= AtomicFetch
	}
	ops := p.operands()
	if err := wantOperands(mnemonic, ops, 2); err != nil {
		return Instruction{}, err
	}
	dst, off, err := operandMem(ops[0])
	if err != nil {
		return Instruction{}, err
	}
	src, err := operandRegister(ops[1])
	return Instruction{Op: ClassSTX | ModeATOMIC | size, Dst: dst, Src: src, Off: off, Imm: imm}, err
}

// operands splits the rest of the line at commas.
func (p *parser) operands() []string {
	rest := strings.TrimSpace(p.s[p.pos:])
	p.pos = len(p.s)
	if rest == "" {
		return nil
	}
	ops := strings.Split(rest, ",")
	for i := range ops {
		ops[i] = strings.TrimSpace(ops[i])
	}
	return ops
}

func wantOperands(mnemonic string, ops []string, n int) error {
	if len(ops) != n {
		return fmt.Errorf("invalid number of operands for %s: want %d, got %d", mnemonic, n, len(ops))
	}
	return nil
}

func operandRegister(s string) (Register, error) {
	p := &parser{s: s}
	reg, _, err := p.needRegister()
	if err != nil {
		return 0, err
	}
	return reg, p.end()
}

func operandImm32(s string) (int32, error) {
	p := &parser{s: s}
	imm, err := p.needImm32()
	if err != nil {
		return 0, err
	}
	return imm, p.end()
}

// operandMem parses "[%r10-8]", "[%r1+0x2]" or "[%r1]".
func operandMem(s string) (Register, int16, error) {
	p := &parser{s: s}
	if err := p.expect("["); err != nil {
		return 0, 0, err
	}
	reg, _, err := p.needRegister()
	if err != nil {
		return 0, 0, err
	}
	off, err := p.signedOffset()
	if err != nil {
		return 0, 0, err
	}
	if err := p.expect("]"); err != nil {
		return 0, 0, err
	}
	return reg, off, p.end()
}
