package verifier

import (
	"fmt"
	"strings"

	"github.com/bpfvm/bpfvm/isa"
)

// logger collects the verifier log within a size limit.
type logger struct {
	level     int
	limit     int
	b         strings.Builder
	truncated bool
	// open is the length of an instruction line still waiting for the
	// state that follows it at level 2 (0 when no line is open).
	open int
}

func (l *logger) printf(format string, args ...any) {
	if l.level == 0 || l.truncated {
		return
	}
	s := fmt.Sprintf(format, args...)
	if l.open > 0 {
		l.open = 0
		s = "\n" + s
	}
	if l.limit > 0 && l.b.Len()+len(s) > l.limit {
		l.b.WriteString(s[:l.limit-l.b.Len()])
		l.truncated = true
		return
	}
	l.b.WriteString(s)
}

// String returns the log so far.
func (l *logger) String() string { return l.b.String() }

// insn logs an instruction in the kernel's "pc: (op) text" form. At level
// 2 the line stays open for the registers the instruction touched.
func (l *logger) insn(pc int, insns []isa.Instruction) {
	line := fmt.Sprintf("%d: (%02x) %s", pc, insns[pc].Op, isa.Format(insns, pc, nil))
	if l.level < 2 {
		l.printf("%s\n", line)
		return
	}
	l.printf("%s", line)
	l.open = len(line)
}

// closeInsn ends an open instruction line with the state it changed,
// aligned as the kernel aligns it ("; R1=ctx() R2=pkt(r=0)").
func (l *logger) closeInsn(state string) {
	pos := l.open
	if pos == 0 {
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
	name := r.Type.String()
	switch {
	case r.Type == PtrToMem && r.Flags&Ringbuf != 0:
		name = "ringbuf_mem"
	case r.Type == PtrToMem && r.Flags&Rdonly != 0:
		name = "rdonly_mem"
	}
	if r.maybeNull() {
		name += "_or_null"
	}
	return name
}

// regString prints a register's value in the kernel's log syntax.
func regString(r *Reg) string {
	switch r.Type {
	case NotInit:
		return "?"
	case ScalarValue:
		return r.Scalar.String()
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
	return regTypeString(r) + "(" + strings.Join(parts, ",") + ")"
}

// frameString prints a frame's initialised registers and stack.
func frameString(f *Frame) string {
	var parts []string
	for i := range f.Regs {
		if f.Regs[i].Type != NotInit {
			parts = append(parts, fmt.Sprintf("R%d=%s", i, regString(&f.Regs[i])))
		}
	}
	for i := range f.Stack {
		s := &f.Stack[i]
		if s.Types == [8]uint8{} {
			continue
		}
		parts = append(parts, fmt.Sprintf("fp%d=%s", -8*(i+1), slotString(s)))
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
			parts = append(parts, fmt.Sprintf("R%d=%s", r, regString(&f.Regs[r])))
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
				parts = append(parts, fmt.Sprintf("fp%d=%s", slot, slotString(&fr.Stack[i])))
			}
		}
	}
	return strings.Join(parts, " ")
}

// stateString prints the current frame's state; with frames > 0 each frame
// is prefixed with its number as the kernel does for calls.
func (v *verifier) stateString(st *State, _ bool) string {
	if len(st.Frames) == 1 {
		return frameString(st.Frames[0])
	}
	var b strings.Builder
	for i, f := range st.Frames {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "frame%d: %s", i, frameString(f))
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
