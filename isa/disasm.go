package isa

//go:generate go run ./internal/genhelpers -header /usr/include/linux/bpf.h -o helpers.go

import (
	"fmt"
	"io"
)

// HelperNamer returns the name of the helper function with the given id, or
// the empty string when the id is unknown. Runtimes with their own helper
// set pass one to Format and Dump; HelperName is the kernel's.
type HelperNamer func(id int32) string

// HelperName returns the Linux kernel's name of helper function id, such as
// "bpf_map_lookup_elem" for 1, or the empty string for an unknown id.
func HelperName(id int32) string {
	if id < 0 || int(id) >= len(helperNames) {
		return ""
	}
	return helperNames[id]
}

// HelperLabel names helper id for messages as the kernel's log does:
// "bpf_map_lookup_elem#1", or "#99999" for an unknown id.
func HelperLabel(id int32) string {
	return fmt.Sprintf("%s#%d", HelperName(id), id)
}

// HelperID returns the id of the kernel helper function called name, such
// as 1 for "bpf_map_lookup_elem". It is the inverse of HelperName.
func HelperID(name string) (int32, bool) {
	if name == "" {
		return 0, false
	}
	for id, n := range helperNames {
		if n == name {
			return int32(id), true
		}
	}
	return 0, false
}

// kfuncName is what the kernel prints for a kfunc call whose name it cannot
// resolve; Format always prints it since kfunc ids are BTF ids, not helpers.
const kfuncName = "kernel-function"

// Format returns the text of the instruction at slot pc of prog in the
// syntax of the Linux verifier log (kernel/bpf/disasm.c), without the
// "pc: (op) " prefix that Dump adds. helper names helper calls; nil means
// HelperName.
//
// Format returns the empty string for the second slot of an LD_IMM64 and
// for a pc outside prog. Where the kernel's text would be ambiguous or
// lossy, Format follows the LLVM and bpftool spellings so that Assemble
// reads every valid instruction back unchanged:
//
//   - LD_IMM64 ends in " ll": "r0 = 0x1122334455667788 ll".
//   - Pseudo LD_IMM64 sources print as "map[fd:N]" (PseudoMapFD),
//     "map_value[fd:N]+OFF" (PseudoMapValue), "btf_id[N]" (PseudoBTFID),
//     "subprog[+N]" (PseudoFunc), "map[idx:N]" (PseudoMapIdx) and
//     "map_value[idx:N]+OFF" (PseudoMapIdxValue). A nonzero upper
//     immediate of the other forms prints as a "+N" suffix too.
//   - kfunc calls print as "call NAME#ID" for the kfuncs bpfvm knows (ID is
//     bpfvm's id, see KfuncID), otherwise as "call kernel-function#ID", the
//     kernel's text when it has no BTF to name the function.
//   - callx, which the kernel does not accept, prints as LLVM's "callx r2".
//
// Instructions with an undefined opcode print as the kernel's "BUG_..."
// text; their reserved fields are not shown.
func Format(prog []Instruction, pc int, helper HelperNamer) string {
	if pc < 0 || pc >= len(prog) || isSecondSlot(prog, pc) {
		return ""
	}
	if helper == nil {
		helper = HelperName
	}
	return format(prog, pc, helper)
}

// Dump writes prog to w one instruction per line in the verifier log's form
// "pc: (op) text", for example "0: (b7) r0 = 0". The second slots of
// LD_IMM64 instructions get no line of their own. helper is as for Format.
func Dump(w io.Writer, prog []Instruction, helper HelperNamer) error {
	if helper == nil {
		helper = HelperName
	}
	for pc := 0; pc < len(prog); pc++ {
		if _, err := fmt.Fprintf(w, "%d: (%02x) %s\n", pc, prog[pc].Op, format(prog, pc, helper)); err != nil {
			return fmt.Errorf("dump insn %d: %w", pc, err)
		}
		if prog[pc].IsLdImm64() {
			pc++
		}
	}
	return nil
}

// isSecondSlot reports whether slot pc holds the upper half of an LD_IMM64.
// Slots pair up the way Validate pairs them: the first slot after a run of
// LD_IMM64 opcodes that is not one starts an instruction, so pc is a second
// slot exactly when an odd number of LD_IMM64 opcodes precede it.
func isSecondSlot(prog []Instruction, pc int) bool {
	n := 0
	for i := pc - 1; i >= 0 && prog[i].IsLdImm64(); i-- {
		n++
	}
	return n%2 == 1
}

func format(prog []Instruction, pc int, helper HelperNamer) string {
	ins := prog[pc]
	if ins.Op == OpCPUIndex {
		return fmt.Sprintf("r%d = cpu_index", ins.Dst)
	}
	if ins.Op == OpNospec && ins == (Instruction{Op: OpNospec}) {
		return "nospec ; speculation barrier"
	}
	if ins.Op == OpMaskedALU {
		op := "+"
		if ins.Off&MaskSub != 0 {
			op = "-"
		}
		neg := ""
		if ins.Off&MaskNeg != 0 {
			neg = "-"
		}
		if ins.Off&MaskOffDst != 0 {
			return fmt.Sprintf("r%d = r%d %s mask(%sr%d, %d)", ins.Dst, ins.Src, op, neg, ins.Dst, uint32(ins.Imm))
		}
		return fmt.Sprintf("r%d %s= mask(%sr%d, %d)", ins.Dst, op, neg, ins.Src, uint32(ins.Imm))
	}
	if ins.Op == OpDead && ins == (Instruction{Op: OpDead}) {
		return "dead ; not reached by the verifier: stops the run"
	}
	if ins.IsIterNumNext() {
		return "r0 = bpf_iter_num_next(r1) ; inline"
	}
	switch ins.Class() {
	case ClassALU, ClassALU64:
		return formatALU(ins)
	case ClassJMP, ClassJMP32:
		return formatJump(ins, helper)
	case ClassLD:
		return formatLD(prog, pc)
	case ClassLDX:
		mode := ins.Op & 0xe0
		if mode == ModeMEM {
			return fmt.Sprintf("r%d = *(%s *)(r%d %+d)", ins.Dst, sizeName(ins.Op), ins.Src, ins.Off)
		}
		if mode == ModeTrusted {
			return fmt.Sprintf("r%d = *(trusted %s *)(r%d %+d)", ins.Dst, sizeName(ins.Op), ins.Src, ins.Off)
		}
		if mode == ModeArena {
			return fmt.Sprintf("r%d = *(arena %s *)(r%d %+d)", ins.Dst, sizeName(ins.Op), ins.Src, ins.Off)
		}
		if mode == ModeArenaSX && ins.Op&0x18 != SizeDW {
			return fmt.Sprintf("r%d = *(arena %s *)(r%d %+d)", ins.Dst, signedSizeName(ins.Op), ins.Src, ins.Off)
		}
		if ins.IsProbe() {
			name := sizeName(ins.Op)
			if mode == ModeProbeSX {
				name = signedSizeName(ins.Op)
			}
			return fmt.Sprintf("r%d = *(probe %s *)(r%d %+d)", ins.Dst, name, ins.Src, ins.Off)
		}
		if mode == ModeMEMSX && ins.Op&0x18 != SizeDW {
			return fmt.Sprintf("r%d = *(%s *)(r%d %+d)", ins.Dst, signedSizeName(ins.Op), ins.Src, ins.Off)
		}
		return fmt.Sprintf("BUG_ldx_%02x", ins.Op)
	case ClassST:
		if ins.Op&0xe0 == ModeTrusted {
			return fmt.Sprintf("*(trusted %s *)(r%d %+d) = %d", sizeName(ins.Op), ins.Dst, ins.Off, ins.Imm)
		}
		if ins.Op&0xe0 == ModeArena {
			return fmt.Sprintf("*(arena %s *)(r%d %+d) = %d", sizeName(ins.Op), ins.Dst, ins.Off, ins.Imm)
		}
		if ins.Op&0xe0 != ModeMEM {
			return fmt.Sprintf("BUG_st_%02x", ins.Op)
		}
		return fmt.Sprintf("*(%s *)(r%d %+d) = %d", sizeName(ins.Op), ins.Dst, ins.Off, ins.Imm)
	default: // ClassSTX
		return formatSTX(ins)
	}
}

// sizeName returns the C type the kernel prints for a load/store size.
func sizeName(op uint8) string {
	switch op & 0x18 {
	case SizeB:
		return "u8"
	case SizeH:
		return "u16"
	case SizeW:
		return "u32"
	default:
		return "u64"
	}
}

// signedSizeName is sizeName for sign-extending loads; there is no s64.
func signedSizeName(op uint8) string {
	switch op & 0x18 {
	case SizeB:
		return "s8"
	case SizeH:
		return "s16"
	default:
		return "s32"
	}
}

// aluOperators are the kernel's operator strings, indexed by ALU op >> 4.
var aluOperators = [16]string{
	ALUAdd >> 4: "+=", ALUSub >> 4: "-=", ALUMul >> 4: "*=", ALUDiv >> 4: "/=",
	ALUOr >> 4: "|=", ALUAnd >> 4: "&=", ALULsh >> 4: "<<=", ALURsh >> 4: ">>=",
	ALUMod >> 4: "%=", ALUXor >> 4: "^=", ALUMov >> 4: "=", ALUArsh >> 4: "s>>=",
}

// jumpOperators are the kernel's comparison strings, indexed by jump op >> 4.
var jumpOperators = [16]string{
	JumpEQ >> 4: "==", JumpGT >> 4: ">", JumpGE >> 4: ">=", JumpSet >> 4: "&",
	JumpNE >> 4: "!=", JumpSGT >> 4: "s>", JumpSGE >> 4: "s>=", JumpLT >> 4: "<",
	JumpLE >> 4: "<=", JumpSLT >> 4: "s<", JumpSLE >> 4: "s<=",
}

func formatALU(ins Instruction) string {
	class := ins.Class()
	op := ins.Op & 0xf0
	x := ins.Op&SrcX != 0
	w := byte('r')
	if class == ClassALU {
		w = 'w'
	}
	switch op {
	case ALUEnd:
		// The kernel prints r for byte-order conversions even in the ALU class.
		if class == ClassALU64 {
			if x {
				return fmt.Sprintf("BUG_alu64_%02x", ins.Op)
			}
			return fmt.Sprintf("r%d = bswap%d r%d", ins.Dst, ins.Imm, ins.Dst)
		}
		order := "le"
		if x {
			order = "be"
		}
		return fmt.Sprintf("r%d = %s%d r%d", ins.Dst, order, ins.Imm, ins.Dst)
	case ALUNeg:
		return fmt.Sprintf("%c%d = -%c%d", w, ins.Dst, w, ins.Dst)
	case 0xe0, 0xf0:
		return fmt.Sprintf("BUG_alu_%02x", ins.Op)
	}
	operator := aluOperators[op>>4]
	if (op == ALUDiv || op == ALUMod) && ins.Off == 1 {
		operator = "s" + operator
	}
	if !x {
		return fmt.Sprintf("%c%d %s %d", w, ins.Dst, operator, ins.Imm)
	}
	if op == ALUMov {
		if class == ClassALU64 && ins.Off == 1 {
			// BPF_ADDR_SPACE_CAST: imm holds the source and destination
			// address spaces in its upper and lower 16 bits.
			return fmt.Sprintf("r%d = addr_space_cast(r%d, %d, %d)", ins.Dst, ins.Src, uint32(ins.Imm)>>16, uint16(ins.Imm))
		}
		switch ins.Off {
		case 8, 16, 32:
			return fmt.Sprintf("%c%d = (s%d)%c%d", w, ins.Dst, ins.Off, w, ins.Src)
		}
	}
	return fmt.Sprintf("%c%d %s %c%d", w, ins.Dst, operator, w, ins.Src)
}

func formatJump(ins Instruction, helper HelperNamer) string {
	class := ins.Class()
	op := ins.Op & 0xf0
	x := ins.Op&SrcX != 0
	w := byte('r')
	if class == ClassJMP32 {
		w = 'w'
	}
	switch op {
	case JumpA:
		switch {
		case x:
		case class == ClassJMP:
			return fmt.Sprintf("goto pc%+d", ins.Off)
		default:
			return fmt.Sprintf("gotol pc%+d", ins.Imm)
		}
	case JumpCall:
		if class != ClassJMP {
			break
		}
		if x {
			return fmt.Sprintf("callx r%d", ins.Dst)
		}
		switch ins.Src {
		case Register(CallLocal):
			return fmt.Sprintf("call pc%+d", ins.Imm)
		case Register(CallKfunc):
			name := KfuncName(ins.Imm)
			if name == "" {
				name = kfuncName
			}
			return fmt.Sprintf("call %s#%d", name, ins.Imm)
		}
		name := helper(ins.Imm)
		if name == "" {
			name = "unknown"
		}
		return fmt.Sprintf("call %s#%d", name, ins.Imm)
	case JumpExit:
		if class == ClassJMP && !x {
			return "exit"
		}
	case JumpCond:
		if class == ClassJMP && !x && ins.Src == 0 {
			return fmt.Sprintf("may_goto pc%+d", ins.Off)
		}
		if ins.Op == OpMayGotoTimed && ins.Src == 0 && ins.Dst == 0 && ins.Imm > 0 {
			return fmt.Sprintf("may_goto pc%+d ; timed, %dus", ins.Off, ins.Imm)
		}
	case 0xf0:
	default:
		if x {
			return fmt.Sprintf("if %c%d %s %c%d goto pc%+d", w, ins.Dst, jumpOperators[op>>4], w, ins.Src, ins.Off)
		}
		return fmt.Sprintf("if %c%d %s 0x%x goto pc%+d", w, ins.Dst, jumpOperators[op>>4], uint32(ins.Imm), ins.Off)
	}
	return fmt.Sprintf("BUG_jmp_%02x", ins.Op)
}

func formatSTX(ins Instruction) string {
	switch ins.Op & 0xe0 {
	case ModeMEM:
		return fmt.Sprintf("*(%s *)(r%d %+d) = r%d", sizeName(ins.Op), ins.Dst, ins.Off, ins.Src)
	case ModeArena:
		return fmt.Sprintf("*(arena %s *)(r%d %+d) = r%d", sizeName(ins.Op), ins.Dst, ins.Off, ins.Src)
	case ModeATOMIC, ModeArenaAtomic:
	default:
		return fmt.Sprintf("BUG_%02x", ins.Op)
	}
	size := sizeName(ins.Op)
	if ins.Op&0xe0 == ModeArenaAtomic {
		size = "arena " + size
	}
	width := ""
	if ins.Op&0x18 == SizeDW {
		width = "64"
	}
	switch ins.Imm {
	case AtomicAdd, AtomicOr, AtomicAnd, AtomicXor:
		return fmt.Sprintf("lock *(%s *)(r%d %+d) %s r%d", size, ins.Dst, ins.Off, aluOperators[ins.Imm>>4], ins.Src)
	case AtomicAdd | AtomicFetch, AtomicOr | AtomicFetch, AtomicAnd | AtomicFetch, AtomicXor | AtomicFetch:
		return fmt.Sprintf("r%d = atomic%s_fetch_%s((%s *)(r%d %+d), r%d)", ins.Src, width, atomicOpName(ins.Imm&^AtomicFetch), size, ins.Dst, ins.Off, ins.Src)
	case AtomicXchg:
		return fmt.Sprintf("r%d = atomic%s_xchg((%s *)(r%d %+d), r%d)", ins.Src, width, size, ins.Dst, ins.Off, ins.Src)
	case AtomicCmpXchg:
		return fmt.Sprintf("r0 = atomic%s_cmpxchg((%s *)(r%d %+d), r0, r%d)", width, size, ins.Dst, ins.Off, ins.Src)
	case AtomicLoadAcquire:
		return fmt.Sprintf("r%d = load_acquire((%s *)(r%d %+d))", ins.Dst, size, ins.Src, ins.Off)
	case AtomicStoreRelease:
		return fmt.Sprintf("store_release((%s *)(r%d %+d), r%d)", size, ins.Dst, ins.Off, ins.Src)
	}
	return fmt.Sprintf("BUG_%02x", ins.Op)
}

// atomicOpName names the arithmetic of an atomic immediate without the fetch bit.
func atomicOpName(imm int32) string {
	switch imm {
	case AtomicAdd:
		return "add"
	case AtomicOr:
		return "or"
	case AtomicAnd:
		return "and"
	default:
		return "xor"
	}
}

func formatLD(prog []Instruction, pc int) string {
	ins := prog[pc]
	switch ins.Op & 0xe0 {
	case ModeABS:
		return fmt.Sprintf("r0 = *(%s *)skb[%d]", sizeName(ins.Op), ins.Imm)
	case ModeIND:
		return fmt.Sprintf("r0 = *(%s *)skb[r%d + %d]", sizeName(ins.Op), ins.Src, ins.Imm)
	case ModeIMM:
		if ins.Op&0x18 == SizeDW {
			break
		}
		fallthrough
	default:
		return fmt.Sprintf("BUG_ld_%02x", ins.Op)
	}
	if pc+1 >= len(prog) {
		return "BUG_ld_18 truncated"
	}
	hi := prog[pc+1].Imm
	// suffix prints an upper immediate that the form does not name itself.
	suffix := ""
	if hi != 0 {
		suffix = fmt.Sprintf("+%d", uint32(hi))
	}
	var value string
	switch uint8(ins.Src) {
	case 0:
		value = fmt.Sprintf("%#x", Imm64(ins, prog[pc+1]))
	case PseudoMapFD:
		value = fmt.Sprintf("map[fd:%d]%s", ins.Imm, suffix)
	case PseudoMapValue:
		value = fmt.Sprintf("map_value[fd:%d]+%d", ins.Imm, uint32(hi))
	case PseudoBTFID:
		value = fmt.Sprintf("btf_id[%d]%s", ins.Imm, suffix)
	case PseudoFunc:
		value = fmt.Sprintf("subprog[%+d]%s", ins.Imm, suffix)
	case PseudoMapIdx:
		value = fmt.Sprintf("map[idx:%d]%s", ins.Imm, suffix)
	case PseudoMapIdxValue:
		value = fmt.Sprintf("map_value[idx:%d]+%d", ins.Imm, uint32(hi))
	case PseudoMapField:
		value = fmt.Sprintf("map_field[idx:%d]+%d", ins.Imm, uint32(hi))
	default:
		return fmt.Sprintf("BUG_ld_18 src r%d", ins.Src)
	}
	return fmt.Sprintf("r%d = %s ll", ins.Dst, value)
}
