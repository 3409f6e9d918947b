package isa

// MaxInstructions is the largest program Validate accepts, the kernel's limit
// for privileged loads (BPF_COMPLEXITY_LIMIT_INSNS).
const MaxInstructions = 1_000_000

// Validate checks the structure of a program the way the kernel does before
// verification: known opcodes, reserved fields zero, valid registers,
// LD_IMM64 complete, jumps and calls inside the program and never into the
// second slot of an LD_IMM64, and a last instruction that cannot fall
// through. It says nothing about memory safety; that is the verifier's job.
//
// Like the kernel, it leaves to the verifier's walk what the kernel checks
// only on the paths it explores: the reserved fields of most instructions
// (CheckFields) and writes to R10 ("frame pointer is read only"). Code the
// verifier never reaches may hold them; it is made dead before it could
// run.
func Validate(prog []Instruction) error { return validate(prog, false, checkLoad) }

// CheckFields checks what the kernel checks of an instruction when its
// verifier reaches it, before anything else: the reserved fields of ALU,
// jump, store and atomic instructions and an LD_IMM64's offset. Validate
// leaves these to the verifier.
func CheckFields(ins Instruction) error {
	if err := validateOne(ins, checkFields); err != nil {
		return err
	}
	return nil
}

// ValidateXlated is Validate for programs after rewriting, which may also
// hold the internal instructions rewrites emit (OpCPUIndex, OpMayGotoTimed,
// OpIterNumNext, OpDead, OpNospec, OpMaskedALU): what the engines accept; the loaders never do. It
// also refuses what Validate leaves to the verifier, so that the engines
// never run a write to R10, verified or not.
func ValidateXlated(prog []Instruction) error { return validate(prog, true, checkAll) }

// How much validateOne checks.
const (
	checkLoad   = iota // what the kernel checks of every instruction at load
	checkFields        // and the reserved fields (explored paths only)
	checkAll           // and writes to R10 (explored paths only)
)

// validate checks prog up to level lvl; internal allows the rewrites'
// instructions.
func validate(prog []Instruction, internal bool, lvl int) error {
	n := len(prog)
	if n == 0 {
		return insnErr(0, "empty program")
	}
	if n > MaxInstructions {
		return insnErr(0, "program has %d instructions, more than %d", n, MaxInstructions)
	}
	// second[i] marks slots holding the upper half of an LD_IMM64.
	second := make([]bool, n)
	for i := 0; i < n; i++ {
		if prog[i].IsLdImm64() {
			if i+1 >= n {
				return insnErr(i, "invalid bpf_ld_imm64 insn")
			}
			second[i+1] = true
			i++
		}
	}
	for i := 0; i < n; i++ {
		ins := prog[i]
		if second[i] {
			if ins.Op != 0 || ins.Dst != 0 || ins.Src != 0 || ins.Off != 0 {
				return insnErr(i-1, "invalid bpf_ld_imm64 insn")
			}
			// Map pointers have no offset, so their upper half must be
			// zero. The kernel ignores it for function pointers, and for
			// BTF ids it names the module's BTF, which the verifier
			// checks; value loads hold the offset there.
			switch uint8(prog[i-1].Src) {
			case PseudoMapFD, PseudoMapIdx:
				if ins.Imm != 0 {
					return insnErr(i-1, "unrecognized bpf_ld_imm64 insn")
				}
			}
			continue
		}
		if internal && ins.Op == OpDead {
			if ins.Dst != 0 || ins.Src != 0 || ins.Off != 0 || ins.Imm != 0 {
				return insnErr(i, "internal dead code uses reserved fields")
			}
			continue
		}
		if internal && ins.Op == OpNospec {
			if ins.Dst != 0 || ins.Src != 0 || ins.Off != 0 || ins.Imm != 0 {
				return insnErr(i, "internal speculation barrier uses reserved fields")
			}
			continue
		}
		if internal && ins.Op == OpMaskedALU {
			if ins.Dst >= R10 || ins.Src > MaxRegister || ins.Off&^(MaskSub|MaskNeg|MaskOffDst|MaskImm) != 0 {
				return insnErr(i, "internal masked pointer arithmetic uses invalid fields")
			}
			continue
		}
		if internal && ins.Op == OpCPUIndex {
			if ins.Src != 0 || ins.Off != 0 || ins.Imm != 0 || ins.Dst > MaxRegister || ins.Dst == R10 {
				return insnErr(i, "internal cpu index uses reserved fields")
			}
			continue
		}
		if internal && ins.IsProbe() {
			if ins.Dst > MaxRegister || ins.Src > MaxRegister || ins.Dst == R10 || ins.Imm != 0 {
				return insnErr(i, "internal probe load uses invalid registers")
			}
			continue
		}
		if internal && ins.IsArena() {
			if ins.Dst > MaxRegister || ins.Src > MaxRegister || ins.Class() == ClassLDX && ins.Dst == R10 {
				return insnErr(i, "internal arena access uses invalid registers")
			}
			continue
		}
		if internal && ins.IsTrusted() {
			if ins.Dst > MaxRegister || ins.Src > MaxRegister || ins.Class() == ClassLDX && ins.Dst == R10 {
				return insnErr(i, "internal trusted access uses invalid registers")
			}
			continue
		}
		if internal && (ins.Op == OpMayGotoTimed && ins.Src == 0 && ins.Dst == 0 && ins.Imm > 0 || ins.IsIterNumNext()) {
			// Checked like may_goto below (its jump target).
		} else if err := validateOne(ins, lvl); err != nil {
			return insnErr(i, "%s", err.msg)
		}
		if t, ok := ins.JumpTarget(i); ok {
			if t < 0 || t >= n {
				return insnErr(i, "jump out of range from insn %d to %d", i, t)
			}
			if second[t] {
				return insnErr(i, "jump into the middle of ld_imm64 at insn %d", t)
			}
		}
		if ins.IsLocalCall() || ins.IsPseudoFunc() {
			t := i + 1 + int(ins.Imm)
			if t < 0 || t >= n {
				return insnErr(i, "call out of range from insn %d to %d", i, t)
			}
			if second[t] {
				return insnErr(i, "call into the middle of ld_imm64 at insn %d", t)
			}
		}
	}
	last := prog[n-1]
	if second[n-1] {
		last = prog[n-2]
	}
	if last.Op != OpExit && last.Op != OpJA && last.Op != OpJA32 && !(internal && last.Op == OpDead) {
		return insnErr(n-1, "last insn is not an exit or jmp")
	}
	return nil
}

type validationError struct{ msg string }

func (e *validationError) Error() string { return e.msg }

func bad(msg string) *validationError { return &validationError{msg} }

// validateOne checks one instruction's opcode and, from level checkFields,
// its reserved fields.
func validateOne(ins Instruction, lvl int) *validationError {
	walked, fields := lvl >= checkAll, lvl >= checkFields
	if ins.Dst > MaxRegister || ins.Src > MaxRegister {
		return bad("invalid register")
	}
	class := ins.Class()
	switch class {
	case ClassALU, ClassALU64:
		return validateALU(ins, class, walked, fields)
	case ClassJMP, ClassJMP32:
		return validateJump(ins, class, fields)
	case ClassLD:
		return validateLD(ins, walked, fields)
	case ClassLDX:
		mode := ins.Op & 0xe0
		if mode != ModeMEM && !(mode == ModeMEMSX && ins.Op&0x18 != SizeDW) {
			return bad(unknownOpcode(ins.Op))
		}
		if ins.Imm != 0 {
			return bad("BPF_LDX uses reserved fields")
		}
		if walked && ins.Dst == R10 {
			return bad("frame pointer is read only")
		}
	case ClassST:
		if ins.Op&0xe0 != ModeMEM {
			return bad(unknownOpcode(ins.Op))
		}
		if fields && ins.Src != 0 {
			return bad("BPF_ST uses reserved fields")
		}
	case ClassSTX:
		switch ins.Op & 0xe0 {
		case ModeMEM:
			if fields && ins.Imm != 0 {
				return bad("BPF_STX uses reserved fields")
			}
		case ModeATOMIC:
			return validateAtomic(ins, walked, fields)
		default:
			return bad(unknownOpcode(ins.Op))
		}
	}
	return nil
}

func validateALU(ins Instruction, class uint8, walked, fields bool) *validationError {
	op := ins.Op & 0xf0
	x := ins.Op&SrcX != 0
	if walked && ins.Dst == R10 {
		return bad("frame pointer is read only")
	}
	switch op {
	case ALUEnd:
		if class == ClassALU64 && x {
			return bad(unknownOpcode(ins.Op))
		}
		if fields && (ins.Src != 0 || ins.Off != 0 || (ins.Imm != 16 && ins.Imm != 32 && ins.Imm != 64)) {
			return bad("BPF_END uses reserved fields")
		}
		return nil
	case ALUNeg:
		if x || fields && (ins.Src != 0 || ins.Off != 0 || ins.Imm != 0) {
			return bad("BPF_NEG uses reserved fields")
		}
		return nil
	case ALUMov:
		if !x {
			if fields && (ins.Src != 0 || ins.Off != 0) {
				return bad("BPF_MOV uses reserved fields")
			}
			return nil
		}
		if class == ClassALU64 && ins.Off == AddrSpaceCast {
			if fields && ins.Imm != CastToKernel && ins.Imm != CastToUser {
				return bad("addr_space_cast insn can only convert between address space 1 and 0")
			}
			return nil
		}
		ok := ins.Off == 0 || ins.Off == 8 || ins.Off == 16 || (ins.Off == 32 && class == ClassALU64)
		if fields && (ins.Imm != 0 || !ok) {
			return bad("BPF_MOV uses reserved fields")
		}
		return nil
	case ALUAdd, ALUSub, ALUMul, ALUOr, ALUAnd, ALULsh, ALURsh, ALUXor, ALUArsh, ALUDiv, ALUMod:
		offOK := ins.Off == 0 || ((op == ALUDiv || op == ALUMod) && ins.Off == 1)
		if fields && (!offOK || (x && ins.Imm != 0) || (!x && ins.Src != 0)) {
			return bad("BPF_ALU uses reserved fields")
		}
		return nil
	}
	return bad(unknownOpcode(ins.Op))
}

func validateJump(ins Instruction, class uint8, fields bool) *validationError {
	op := ins.Op & 0xf0
	x := ins.Op&SrcX != 0
	switch op {
	case JumpA:
		if x || ins.Src != 0 || ins.Dst != 0 {
			return bad("BPF_JA uses reserved fields")
		}
		if fields && (class == ClassJMP && ins.Imm != 0 || class == ClassJMP32 && ins.Off != 0) {
			return bad("BPF_JA uses reserved fields")
		}
	case JumpCall:
		if class != ClassJMP {
			return bad(unknownOpcode(ins.Op))
		}
		if x { // callx: target address in dst
			if ins.Src != 0 || ins.Off != 0 || ins.Imm != 0 {
				return bad("BPF_CALL uses reserved fields")
			}
			return nil
		}
		// A kfunc call's offset selects the BTF of the module defining it.
		if fields && (ins.Dst != 0 || ins.Src > Register(CallKfunc) || ins.Off != 0 && ins.Src != Register(CallKfunc)) {
			return bad("BPF_CALL uses reserved fields")
		}
	case JumpExit:
		if class != ClassJMP || x {
			return bad(unknownOpcode(ins.Op))
		}
		if fields && (ins.Src != 0 || ins.Dst != 0 || ins.Off != 0 || ins.Imm != 0) {
			return bad("BPF_EXIT uses reserved fields")
		}
	case JumpCond:
		if class != ClassJMP || x {
			return bad(unknownOpcode(ins.Op))
		}
		if ins.Src != 0 || ins.Dst != 0 || ins.Imm != 0 {
			return bad("may_goto uses reserved fields")
		}
	case JumpEQ, JumpGT, JumpGE, JumpSet, JumpNE, JumpSGT, JumpSGE, JumpLT, JumpLE, JumpSLT, JumpSLE:
		if fields && (x && ins.Imm != 0 || !x && ins.Src != 0) {
			return bad("BPF_JMP/JMP32 uses reserved fields")
		}
	default:
		return bad(unknownOpcode(ins.Op))
	}
	return nil
}

func validateLD(ins Instruction, walked, fields bool) *validationError {
	mode := ins.Op & 0xe0
	size := ins.Op & 0x18
	switch mode {
	case ModeIMM:
		if size != SizeDW {
			return bad(unknownOpcode(ins.Op))
		}
		if ins.Src > Register(PseudoMapIdxValue) {
			return bad("unrecognized bpf_ld_imm64 insn")
		}
		if fields && ins.Off != 0 {
			return bad("BPF_LD_IMM64 uses reserved fields")
		}
		if walked && ins.Dst == R10 {
			return bad("frame pointer is read only")
		}
	case ModeABS, ModeIND:
		if size == SizeDW {
			return bad(unknownOpcode(ins.Op))
		}
		if ins.Dst != 0 || ins.Off != 0 || (mode == ModeABS && ins.Src != 0) {
			return bad("BPF_LD_[ABS|IND] uses reserved fields")
		}
	default:
		return bad(unknownOpcode(ins.Op))
	}
	return nil
}

func validateAtomic(ins Instruction, walked, fields bool) *validationError {
	size := ins.Op & 0x18
	switch ins.Imm {
	case AtomicAdd, AtomicOr, AtomicAnd, AtomicXor,
		AtomicAdd | AtomicFetch, AtomicOr | AtomicFetch, AtomicAnd | AtomicFetch, AtomicXor | AtomicFetch,
		AtomicXchg, AtomicCmpXchg:
		if size != SizeW && size != SizeDW {
			return bad("invalid atomic operand size")
		}
		if walked && ins.Imm&AtomicFetch != 0 && ins.Imm != AtomicCmpXchg && ins.Src == R10 {
			return bad("frame pointer is read only") // fetch forms write the old value to src
		}
	case AtomicLoadAcquire:
		if walked && ins.Dst == R10 {
			return bad("frame pointer is read only")
		}
	case AtomicStoreRelease:
	default:
		// Unknown operations of 1- and 2-byte atomics stay load errors:
		// only load-acquire and store-release have those sizes.
		if fields || size != SizeW && size != SizeDW {
			return bad("BPF_ATOMIC uses invalid atomic opcode")
		}
	}
	return nil
}

func unknownOpcode(op uint8) string {
	return "unknown opcode " + hex8(op)
}

func hex8(v uint8) string {
	const digits = "0123456789abcdef"
	return "0x" + string([]byte{digits[v>>4], digits[v&15]})
}
