package verifier

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/bpfvm/bpfvm/isa"
)

// LineInfo is one BTF line_info record: the source line whose code starts
// at an instruction, which the log shows before it at levels 1 and 2.
type LineInfo struct {
	Insn    int    // the first instruction of the line
	File    string // the source file's name as BTF holds it
	Line    string // the source text
	LineNum uint32 // the line's number in File
	Column  uint32 // the column the code starts at (0: unknown)
}

// logger collects the verifier log as the kernel's bpf_verifier_log does
// with a buffer of limit bytes (0: unlimited). The log is a stream of
// positions: rewinding (reset) drops what came after a position, as level 1
// does when a path ends. A log that outgrows the buffer keeps its last
// limit-1 bytes (the kernel's rotating log), or with fixed its first
// (BPF_LOG_FIXED), and truncated reports it, as the kernel's ENOSPC, even
// when a rewind later made it fit: what counts is the most it ever held.
type logger struct {
	level int
	limit int
	fixed bool
	// buf holds positions start to end of the log; max is the furthest
	// end ever reached, the kernel's len_max.
	buf        []byte
	start, end int
	max        int
	// open is the length of an instruction line still waiting for the
	// registers that follow it (0 when no line is open); cut says that
	// something else was logged after the instruction line (the registers
	// then get a line of their own).
	open int
	cut  bool
	// lines are the program's line_info records by instruction, and
	// lastLine is 1 + the index of the one printed last (0: none yet),
	// the kernel's prev_linfo, which rewinds leave alone as they do there.
	lines    []LineInfo
	lastLine int
}

func (l *logger) printf(format string, args ...any) {
	if l.level == 0 {
		return
	}
	s := fmt.Sprintf(format, args...)
	if l.open > 0 {
		l.open, l.cut = 0, true
		s = "\n" + s
	}
	l.write(s)
}

// write appends s at the end of the log.
func (l *logger) write(s string) {
	l.end += len(s)
	l.max = max(l.max, l.end)
	room := l.limit - 1 // the kernel's buffer ends with a NUL
	switch {
	case l.limit <= 0:
		l.buf = append(l.buf, s...)
	case l.fixed:
		if n := room - len(l.buf); n > 0 {
			l.buf = append(l.buf, s[:min(n, len(s))]...)
		}
	default:
		l.buf = append(l.buf, s...)
		if over := len(l.buf) - room; over > 0 {
			// Drop the oldest bytes; compact once they are most of buf.
			l.start += over
			if over >= len(l.buf)/2 {
				l.buf = append(l.buf[:0], l.buf[over:]...)
			} else {
				l.buf = l.buf[over:]
			}
		}
	}
}

// mark is the log's position for a later reset. Inside an instruction line
// still open for its registers it is one byte further: the kernel ends the
// line before it queues a branch and then writes the registers over the
// newline, so its rewind keeps the first byte of them (a space, or the
// newline when nothing followed).
func (l *logger) mark() int {
	if l.open > 0 {
		return l.end + 1
	}
	return l.end
}

// reset rewinds the log to pos, dropping what was written after it (the
// kernel's bpf_vlog_reset).
func (l *logger) reset(pos int) {
	if pos >= l.end {
		return
	}
	l.end, l.open = pos, 0
	switch {
	case pos >= l.start:
		l.buf = l.buf[:min(len(l.buf), pos-l.start)]
	default:
		l.start, l.buf = pos, l.buf[:0]
	}
}

// truncated reports whether the log ever outgrew its buffer.
func (l *logger) truncated() bool { return l.limit > 0 && l.max+1 > l.limit }

// trueSize is the buffer the whole log needs, with its NUL: the kernel's
// log_true_size.
func (l *logger) trueSize() int {
	if l.max == 0 {
		return 0
	}
	return l.max + 1
}

// String returns the log as the buffer holds it.
func (l *logger) String() string { return string(l.buf) }

// insn logs an instruction in the kernel's "pc: (op) text" form, after its
// source line when a new one starts there. The line stays open for the
// registers the instruction touched, which the kernel prints at level 1
// as at level 2 (print_insn_state under BPF_LOG_LEVEL).
func (l *logger) insn(pc int, insns []isa.Instruction) {
	l.sourceLine(pc)
	line := fmt.Sprintf("%d: (%02x) %s", pc, insns[pc].Op, isa.Format(insns, pc, nil))
	l.printf("%s", line)
	l.open, l.cut = len(line), false
}

// sourceLine logs the line_info record that covers pc, as the kernel's
// verbose_linfo: "; " and the source text without its indentation, " @ ",
// the file's base name and the line number; not when the record printed
// last is the same, or names the same file and line (clang emits several
// records for the columns of one line), so a run of instructions of one
// line shows it once and a line that a jump comes back to shows again.
func (l *logger) sourceLine(pc int) {
	if len(l.lines) == 0 {
		return
	}
	// The last record starting at or before pc.
	i := sort.Search(len(l.lines), func(i int) bool { return l.lines[i].Insn > pc }) - 1
	if i < 0 || i+1 == l.lastLine {
		return
	}
	li := &l.lines[i]
	if l.lastLine > 0 {
		if prev := &l.lines[l.lastLine-1]; prev.File == li.File && prev.LineNum == li.LineNum {
			return
		}
	}
	l.printf("; %s @ %s:%d\n", strings.TrimLeft(li.Line, " \t\n\v\f\r"), path.Base(li.File), li.LineNum)
	l.lastLine = i + 1
}

// closeInsn ends an open instruction line with the state it changed,
// aligned as the kernel aligns it ("; R1=ctx() R2=pkt(r=0)"). When
// something else was logged after the instruction, the state gets a line
// of its own, numbered with the next instruction, next, as the kernel's
// print_insn_state does.
func (l *logger) closeInsn(state string, next int) {
	pos := l.open
	if pos == 0 {
		if l.cut && state != "" {
			l.printf("%d: %s\n", next, state)
		}
		l.cut = false
		return
	}
	l.open = 0
	if state == "" {
		l.printf("\n")
		return
	}
	pad := (max(pos+4, 40)+7)&^7 - pos - 2
	l.printf("%s; %s\n", strings.Repeat(" ", pad), state)
}

// regTypeString names a register's type with its flags, as the kernel's
// reg_type_str.
func regTypeString(r *Reg) string {
	var prefix string
	for _, f := range typeFlagNames {
		if r.Flags&f.flag != 0 {
			prefix += f.name
		}
	}
	name := prefix + r.Type.String()
	if r.maybeNull() {
		if r.Type == PtrToBTFID {
			return name + "or_null_"
		}
		name += "_or_null"
	}
	return name
}

// typeFlagNames are the prefixes of flags in type names, in the kernel's
// order.
var typeFlagNames = [...]struct {
	flag uint8
	name string
}{{Rdonly, "rdonly_"}, {Ringbuf, "ringbuf_"}, {RCU, "rcu_"}, {Untrusted, "untrusted_"}, {Trusted, "trusted_"}}

// regString prints a register's value in the kernel's log syntax.
func (v *verifier) regString(r *Reg) string {
	switch r.Type {
	case NotInit:
		return "?"
	case ScalarValue:
		return scalarRegString(r)
	case PtrToStack:
		if r.IsConst() {
			return fmt.Sprintf("fp%d", int64(r.Off)+int64(r.Const()))
		}
	}
	var parts []string
	if r.ID != 0 {
		parts = append(parts, fmt.Sprintf("id=%d", r.ID))
	}
	if r.RefID != 0 {
		parts = append(parts, fmt.Sprintf("ref_obj_id=%d", r.RefID))
	}
	if r.Off != 0 || r.Type.isPacket() && r.Off != 0 {
		parts = append(parts, fmt.Sprintf("off=%d", r.Off))
	}
	if r.Type.isPacket() {
		parts = append(parts, fmt.Sprintf("r=%d", r.Range))
	}
	if r.Map != nil {
		parts = append(parts, fmt.Sprintf("map=%s,ks=%d,vs=%d", r.Map.Name, r.Map.Spec.KeySize, r.Map.Spec.ValueSize))
	}
	if r.Type == PtrToMem {
		parts = append(parts, fmt.Sprintf("sz=%d", r.MemSize))
	}
	if !r.IsConst() {
		// The variable part of the offset, without the "scalar(...)" frame.
		s := r.Scalar.String()
		s = strings.TrimSuffix(strings.TrimPrefix(s, "scalar("), ")")
		if s != "" {
			parts = append(parts, s)
		}
	}
	name := regTypeString(r)
	if r.Type == PtrToBTFID {
		name += v.btfName(r)
	}
	return name + "(" + strings.Join(parts, ",") + ")"
}

// scalarRegString prints a scalar register as the kernel's print_reg_state:
// "P" first when it is precise, then the constant, or "scalar(" with the
// id that links it to its copies ahead of its ranges.
func scalarRegString(r *Reg) string {
	s := r.Scalar.String()
	if r.ID != 0 && strings.HasPrefix(s, "scalar(") {
		sep := ","
		if s == "scalar()" {
			sep = ""
		}
		s = fmt.Sprintf("scalar(id=%d%s%s", linkBase(r.ID), sep, s[len("scalar("):])
	}
	if r.Precise {
		s = "P" + s
	}
	return s
}

// frameString prints a frame's initialised registers and stack.
func (v *verifier) frameString(f *Frame) string {
	var parts []string
	for i := range f.Regs {
		if f.Regs[i].Type != NotInit {
			parts = append(parts, fmt.Sprintf("R%d=%s", i, v.regString(&f.Regs[i])))
		}
	}
	for i := range f.Stack {
		s := &f.Stack[i]
		if s.Types == [8]uint8{} || s.Types[0] == StackIter && s.Iter.Part != 0 {
			// An iterator shows at its first slot only, as the
			// kernel prints it.
			continue
		}
		parts = append(parts, fmt.Sprintf("fp%d=%s", -8*(i+1), v.slotString(s)))
	}
	return strings.Join(parts, " ")
}

// touchedString prints the registers an instruction read or wrote, and the
// stack slot it stored to or loaded from, after it ran: what the kernel's
// level-2 log shows after each instruction.
func (v *verifier) touchedString(ins isa.Instruction) string {
	f := v.cur.cur()
	use, def := usesDefs(ins)
	set := (use | def) &^ fpReg
	if ins.Dst == isa.R10 || ins.Src == isa.R10 && ins.Op&isa.SrcX != 0 || ins.Class() == isa.ClassLDX && ins.Src == isa.R10 {
		set |= fpReg
	}
	switch ins.Op {
	case isa.OpCall:
		set = reg(isa.R0)
	case isa.OpExit:
		return "" // the kernel prints exits bare
	}
	var parts []string
	for r := range f.Regs {
		if set&(1<<r) != 0 && f.Regs[r].Type != NotInit {
			parts = append(parts, fmt.Sprintf("R%d=%s", r, v.regString(&f.Regs[r])))
		}
	}
	// The stack slot behind a load or store through a stack pointer.
	var ptr isa.Register
	switch ins.Class() {
	case isa.ClassST, isa.ClassSTX:
		ptr = ins.Dst
	case isa.ClassLDX:
		ptr = ins.Src
	default:
		return strings.Join(parts, " ")
	}
	if p := &f.Regs[ptr]; p.Type == PtrToStack && p.IsConst() && int(p.Frame) < len(v.cur.Frames) {
		off := int(p.Off) + int(p.Const()) + int(ins.Off)
		if off < 0 && off >= -MaxStack {
			fr := v.cur.Frames[p.Frame]
			if i := (-off - 1) / 8; i < len(fr.Stack) {
				slot := -8 * (i + 1)
				parts = append(parts, fmt.Sprintf("fp%d=%s", slot, v.slotString(&fr.Stack[i])))
			}
		}
	}
	return strings.Join(parts, " ")
}

// stateString prints the current frame's state; with frames > 0 each frame
// is prefixed with its number as the kernel does for calls.
func (v *verifier) stateString(st *State, _ bool) string {
	if len(st.Frames) == 1 {
		return v.frameString(st.Frames[0])
	}
	var b strings.Builder
	for i, f := range st.Frames {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "frame%d: %s", i, v.frameString(f))
	}
	return b.String()
}

// logStats ends a log with the kernel's statistics: the "processed N
// insns" line at every level, as the kernel prints it, and with all (level
// 4) the time and stack depth before it and ours after it.
func (v *verifier) logStats(all bool) {
	var depths []string
	for _, d := range v.stats.StackDepth {
		depths = append(depths, fmt.Sprint(d))
	}
	l := &v.log
	l.level = max(l.level, 1)
	if all {
		l.printf("verification time %d usec\n", v.stats.Duration.Microseconds())
		l.printf("stack depth %s\n", strings.Join(depths, "+"))
	}
	l.printf("processed %d insns (limit %d) max_states_per_insn %d total_states %d peak_states %d mark_read %d\n",
		v.stats.Processed, MaxProcessed, v.stats.MaxStatesPerInsn, v.stats.TotalStates, v.stats.PeakStates, v.stats.MarkRead)
	if !all {
		return
	}
	l.printf("pending_branches_peak %d peak_memory %d bytes\n", v.stats.PendingBranchPeak, v.stats.PeakMemory)
	l.printf("insn_hist allocs %d entries %d peak %d precision_fallbacks %d\n", v.stats.HistoryAllocs, v.stats.HistoryEntries, v.stats.HistoryPeak, v.stats.PrecisionFallbacks)
}
