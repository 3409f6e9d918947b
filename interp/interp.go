// Package interp is the eBPF interpreter: it runs a pre-decoded program over
// memory outside the Go heap, with bpf-to-bpf calls, helpers and two memory
// modes. In checked mode every load and store is validated against the
// regions of the run's vm.Env (for programs that were not verified); in
// unchecked mode accesses go straight to memory (for verified programs).
package interp

import (
	"fmt"
	"math/bits"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/vm"
)

// HelperFunc resolves a helper id to its implementation; nil means unknown.
type HelperFunc func(id int32) vm.Helper

// Program is a program ready to run on the interpreter. It is immutable and
// safe for concurrent use; each run brings its own vm.Env and stack.
type Program struct {
	code    []insn
	helpers []vm.Helper // indexed by helper id
	resolve HelperFunc  // for callx to a helper id
}

// New validates and pre-decodes prog. LD_IMM64 constants must already be
// resolved (map handles and value addresses); PseudoFunc constants keep their
// relative form and are turned into function values here. Every helper the
// program calls must be known to helpers, or New fails naming the call.
func New(prog []isa.Instruction, helpers HelperFunc) (*Program, error) {
	if err := isa.ValidateXlated(prog); err != nil {
		return nil, err
	}
	code, err := decode(prog)
	if err != nil {
		return nil, err
	}
	table, err := Helpers(prog, helpers)
	if err != nil {
		return nil, err
	}
	for pc := range code {
		if in := &code[pc]; in.op == opLdImm64 && prog[pc].Src == isa.Register(isa.PseudoFunc) {
			in.imm = int64(FuncValue(pc + 1 + int(prog[pc].Imm)))
		}
	}
	return &Program{code: code, resolve: helpers, helpers: table}, nil
}

// Helpers resolves the helper calls of prog into a table indexed by helper
// id (nil where no call needs it); a call helpers does not know is an error
// naming the instruction and the helper. Both engines call helpers through
// such a table.
func Helpers(prog []isa.Instruction, helpers HelperFunc) ([]vm.Helper, error) {
	var table []vm.Helper
	for pc := 0; pc < len(prog); pc++ {
		ins := prog[pc]
		if ins.IsLdImm64() {
			pc++
			continue
		}
		if ins.Op != isa.OpCall || ins.Src != isa.Register(isa.CallHelper) {
			continue
		}
		id := ins.Imm
		var h vm.Helper
		if helpers != nil && id >= 0 {
			h = helpers(id)
		}
		if h == nil {
			return nil, fmt.Errorf("insn %d: %w %s", pc, vm.ErrHelper, isa.HelperLabel(id))
		}
		if int(id) >= len(table) {
			table = append(table, make([]vm.Helper, int(id)+1-len(table))...)
		}
		table[id] = h
	}
	return table, nil
}

// funcTag marks register values that name a subprogram (PseudoFunc): the low
// bits are the instruction index. It lies in the non-canonical x86-64 address
// range, so it can never be mistaken for a pointer.
const funcTag = 0xbfbf_0000_0000_0000

// FuncValue returns the register value that names the subprogram at pc.
func FuncValue(pc int) uint64 { return funcTag | uint64(pc) }

// Len returns the number of instruction slots.
func (p *Program) Len() int { return len(p.code) }

type frame struct {
	ret            int
	r6, r7, r8, r9 uint64
	fp             uint64
}

// maxLoops is the per-run may_goto budget of the kernel's BPF_MAX_LOOPS.
const maxLoops = 1 << 23

// Run runs the program with R1 and R2 set as given. env.Stack should span
// vm.MaxFrames*vm.StackSize bytes (less limits the call depth); budget, when
// not zero, limits the number of instructions executed.
func (p *Program) Run(env *vm.Env, r1, r2 uint64, budget uint64) (uint64, error) {
	return p.runWith(env, 0, [5]uint64{r1, r2}, budget)
}

// Repeat runs the program n times (at least once) as n calls of Run with
// the same arguments would, and returns the last run's R0; between, when
// set, is called between two runs. It stops at the first error, of a run
// or of between.
func (p *Program) Repeat(env *vm.Env, r1, r2, budget uint64, n uint32, between func() error) (uint64, error) {
	for {
		v, err := p.runWith(env, 0, [5]uint64{r1, r2}, budget)
		if n <= 1 || err != nil {
			return v, err
		}
		n--
		if between != nil {
			if err := between(); err != nil {
				return 0, err
			}
		}
	}
}

// Call runs the subprogram named by fn (a FuncValue, as bpf_loop and
// bpf_for_each_map_elem receive their callbacks) with arguments r1-r5 and
// returns its R0. It is meant for helpers: the callback runs on the stack
// below the frame of the function that called the helper (env.FP).
func (p *Program) Call(env *vm.Env, fn uint64, r1, r2, r3, r4, r5 uint64) (uint64, error) {
	if fn&^0xffff_ffff != funcTag || fn&0xffff_ffff >= uint64(len(p.code)) {
		return 0, fmt.Errorf("%w: callback %#x is not a function", vm.ErrMemory, fn)
	}
	saved, fp := env.Stack, env.FP
	if env.FP < env.Stack.Start+vm.StackSize {
		return 0, vm.ErrCallDepth
	}
	env.Stack.End = env.FP - vm.StackSize
	v, err := p.runWith(env, int(fn&0xffff_ffff), [5]uint64{r1, r2, r3, r4, r5}, 0)
	env.Stack, env.FP = saved, fp
	return v, err
}

// Slices of instructions between checks of the run's context: the first
// is firstSlice, the next sized by how long the last took (vm.NextSlice).
const (
	firstSlice = 1 << 10 // a few microseconds of plain ALU code, 0.1 ms of page faults
	minSlice   = 1 << 8
	maxSlice   = 1 << 22
)

// pacer sizes the slices between checks of the run's context.
type pacer struct {
	slice uint64 // instructions in the current slice
	last  int64  // the clock at the last check (0: none yet)
	lastN uint64 // instructions executed at the last check
}

// checkLimits is the slow path of the budget check: the budget itself, and
// the run's context when it can be cancelled.
func checkLimits(env *vm.Env, n, budget uint64, limit *uint64, pace *pacer) error {
	if n > budget {
		return vm.ErrBudget
	}
	if env.Context != nil {
		now := vm.Now()
		if err := env.Stopped(now); err != nil {
			return err
		}
		if pace.last != 0 {
			pace.slice = uint64(vm.NextSlice(int64(n-pace.lastN), now-pace.last, minSlice, maxSlice))
		}
		pace.last, pace.lastN = now, n
	}
	*limit = min(budget, n+pace.slice)
	return nil
}

func (p *Program) runWith(env *vm.Env, entry int, args [5]uint64, budget uint64) (ret uint64, err error) {
	// A tail-called program gets what is left below its caller's frames.
	maxDepth := int(min((env.Stack.End-env.Stack.Start)/vm.StackSize, vm.MaxFrames))
	if maxDepth < 1 {
		return 0, &vm.RunError{PC: entry, Err: vm.ErrCallDepth}
	}
	if budget == 0 {
		budget = ^uint64(0)
	}
	// limit is where the next slow check happens: the budget, or sooner
	// when the run can be cancelled, so that cancellation is noticed within
	// a slice of instructions.
	limit := budget
	pace := pacer{slice: firstSlice}
	if env.Context != nil && env.Context.Done() != nil {
		limit = min(budget, firstSlice)
	}
	code := p.code
	checked := env.Checked
	var (
		r       [11]uint64
		frames  [vm.MaxFrames]frame
		depth   int
		pc      = entry
		n       uint64 // instructions executed
		loops   uint64 = maxLoops
		scratch uint64
	)
	r[1], r[2], r[3], r[4], r[5] = args[0], args[1], args[2], args[3], args[4]
	r[10] = env.Stack.End
	if checked {
		// Checks allow the stack from this frame up (vm.Env.LiveStack):
		// env.FP follows R10 through calls and returns.
		env.FP = r[10]
	}
	fail := func(e error) (uint64, error) {
		return 0, &vm.RunError{PC: pc - 1, Err: e}
	}
	for {
		in := &code[pc]
		pc++
		n++
		switch in.op {
		// 64-bit ALU.
		case opAdd64K:
			r[in.dst] += uint64(in.imm)
		case opAdd64X:
			r[in.dst] += r[in.src]
		case opSub64K:
			r[in.dst] -= uint64(in.imm)
		case opSub64X:
			r[in.dst] -= r[in.src]
		case opMul64K:
			r[in.dst] *= uint64(in.imm)
		case opMul64X:
			r[in.dst] *= r[in.src]
		case opDiv64K:
			r[in.dst] = udiv64(r[in.dst], uint64(in.imm))
		case opDiv64X:
			r[in.dst] = udiv64(r[in.dst], r[in.src])
		case opSdiv64K:
			r[in.dst] = uint64(sdiv64(int64(r[in.dst]), in.imm))
		case opSdiv64X:
			r[in.dst] = uint64(sdiv64(int64(r[in.dst]), int64(r[in.src])))
		case opMod64K:
			r[in.dst] = umod64(r[in.dst], uint64(in.imm))
		case opMod64X:
			r[in.dst] = umod64(r[in.dst], r[in.src])
		case opSmod64K:
			r[in.dst] = uint64(smod64(int64(r[in.dst]), in.imm))
		case opSmod64X:
			r[in.dst] = uint64(smod64(int64(r[in.dst]), int64(r[in.src])))
		case opOr64K:
			r[in.dst] |= uint64(in.imm)
		case opOr64X:
			r[in.dst] |= r[in.src]
		case opAnd64K:
			r[in.dst] &= uint64(in.imm)
		case opAnd64X:
			r[in.dst] &= r[in.src]
		case opLsh64K:
			r[in.dst] <<= uint64(in.imm) & 63
		case opLsh64X:
			r[in.dst] <<= r[in.src] & 63
		case opRsh64K:
			r[in.dst] >>= uint64(in.imm) & 63
		case opRsh64X:
			r[in.dst] >>= r[in.src] & 63
		case opArsh64K:
			r[in.dst] = uint64(int64(r[in.dst]) >> (uint64(in.imm) & 63))
		case opArsh64X:
			r[in.dst] = uint64(int64(r[in.dst]) >> (r[in.src] & 63))
		case opXor64K:
			r[in.dst] ^= uint64(in.imm)
		case opXor64X:
			r[in.dst] ^= r[in.src]
		case opMov64K:
			r[in.dst] = uint64(in.imm)
		case opMov64X:
			r[in.dst] = r[in.src]
		case opMovsx8_64:
			r[in.dst] = uint64(int64(int8(r[in.src])))
		case opMovsx16_64:
			r[in.dst] = uint64(int64(int16(r[in.src])))
		case opMovsx32_64:
			r[in.dst] = uint64(int64(int32(r[in.src])))
		case opNeg64:
			r[in.dst] = -r[in.dst]

		// 32-bit ALU: results are zero-extended.
		case opAdd32K:
			r[in.dst] = uint64(uint32(r[in.dst]) + uint32(in.imm))
		case opAdd32X:
			r[in.dst] = uint64(uint32(r[in.dst]) + uint32(r[in.src]))
		case opSub32K:
			r[in.dst] = uint64(uint32(r[in.dst]) - uint32(in.imm))
		case opSub32X:
			r[in.dst] = uint64(uint32(r[in.dst]) - uint32(r[in.src]))
		case opMul32K:
			r[in.dst] = uint64(uint32(r[in.dst]) * uint32(in.imm))
		case opMul32X:
			r[in.dst] = uint64(uint32(r[in.dst]) * uint32(r[in.src]))
		case opDiv32K:
			r[in.dst] = uint64(udiv32(uint32(r[in.dst]), uint32(in.imm)))
		case opDiv32X:
			r[in.dst] = uint64(udiv32(uint32(r[in.dst]), uint32(r[in.src])))
		case opSdiv32K:
			r[in.dst] = uint64(uint32(sdiv32(int32(r[in.dst]), int32(in.imm))))
		case opSdiv32X:
			r[in.dst] = uint64(uint32(sdiv32(int32(r[in.dst]), int32(r[in.src]))))
		case opMod32K:
			r[in.dst] = uint64(umod32(uint32(r[in.dst]), uint32(in.imm)))
		case opMod32X:
			r[in.dst] = uint64(umod32(uint32(r[in.dst]), uint32(r[in.src])))
		case opSmod32K:
			r[in.dst] = uint64(uint32(smod32(int32(r[in.dst]), int32(in.imm))))
		case opSmod32X:
			r[in.dst] = uint64(uint32(smod32(int32(r[in.dst]), int32(r[in.src]))))
		case opOr32K:
			r[in.dst] = uint64(uint32(r[in.dst]) | uint32(in.imm))
		case opOr32X:
			r[in.dst] = uint64(uint32(r[in.dst]) | uint32(r[in.src]))
		case opAnd32K:
			r[in.dst] = uint64(uint32(r[in.dst]) & uint32(in.imm))
		case opAnd32X:
			r[in.dst] = uint64(uint32(r[in.dst]) & uint32(r[in.src]))
		case opLsh32K:
			r[in.dst] = uint64(uint32(r[in.dst]) << (uint32(in.imm) & 31))
		case opLsh32X:
			r[in.dst] = uint64(uint32(r[in.dst]) << (uint32(r[in.src]) & 31))
		case opRsh32K:
			r[in.dst] = uint64(uint32(r[in.dst]) >> (uint32(in.imm) & 31))
		case opRsh32X:
			r[in.dst] = uint64(uint32(r[in.dst]) >> (uint32(r[in.src]) & 31))
		case opArsh32K:
			r[in.dst] = uint64(uint32(int32(r[in.dst]) >> (uint32(in.imm) & 31)))
		case opArsh32X:
			r[in.dst] = uint64(uint32(int32(r[in.dst]) >> (uint32(r[in.src]) & 31)))
		case opXor32K:
			r[in.dst] = uint64(uint32(r[in.dst]) ^ uint32(in.imm))
		case opXor32X:
			r[in.dst] = uint64(uint32(r[in.dst]) ^ uint32(r[in.src]))
		case opMov32K:
			r[in.dst] = uint64(uint32(in.imm))
		case opMov32X:
			r[in.dst] = uint64(uint32(r[in.src]))
		case opMovsx8_32:
			r[in.dst] = uint64(uint32(int32(int8(r[in.src]))))
		case opMovsx16_32:
			r[in.dst] = uint64(uint32(int32(int16(r[in.src]))))
		case opNeg32:
			r[in.dst] = uint64(-uint32(r[in.dst]))

		// Byte order.
		case opLe16:
			r[in.dst] = uint64(uint16(r[in.dst]))
		case opLe32:
			r[in.dst] = uint64(uint32(r[in.dst]))
		case opLe64:
		case opSwap16:
			r[in.dst] = uint64(bits.ReverseBytes16(uint16(r[in.dst])))
		case opSwap32:
			r[in.dst] = uint64(bits.ReverseBytes32(uint32(r[in.dst])))
		case opSwap64:
			r[in.dst] = bits.ReverseBytes64(r[in.dst])

		case opCPUIndex:
			r[in.dst] = uint64(env.CPU)
		case opDead:
			return fail(vm.ErrDeadCode)
		case opNospec:
		case opMasked:
			r[in.dst] = isa.MaskedALU(isa.Instruction{Off: int16(in.off), Imm: int32(in.imm)}, r[in.dst], r[in.src])

		// Loads and stores.
		case opLdImm64:
			r[in.dst] = uint64(in.imm)
			pc++
		case opLdxB, opLdxH, opLdxW, opLdxDW, opLdxSB, opLdxSH, opLdxSW:
			addr := r[in.src] + uint64(in.off)
			if checked {
				v, err := env.Load(addr, ldxSize[in.op-opLdxB])
				if err != nil {
					return fail(err)
				}
				r[in.dst] = extend(in.op, v)
				break
			}
			switch in.op {
			case opLdxB:
				r[in.dst] = uint64(*(*uint8)(vm.Ptr(addr)))
			case opLdxH:
				r[in.dst] = uint64(*(*uint16)(vm.Ptr(addr)))
			case opLdxW:
				r[in.dst] = uint64(*(*uint32)(vm.Ptr(addr)))
			case opLdxDW:
				r[in.dst] = *(*uint64)(vm.Ptr(addr))
			case opLdxSB:
				r[in.dst] = uint64(int64(*(*int8)(vm.Ptr(addr))))
			case opLdxSH:
				r[in.dst] = uint64(int64(*(*int16)(vm.Ptr(addr))))
			case opLdxSW:
				r[in.dst] = uint64(int64(*(*int32)(vm.Ptr(addr))))
			}
		case opStB, opStH, opStW, opStDW, opStxB, opStxH, opStxW, opStxDW:
			addr := r[in.dst] + uint64(in.off)
			v := uint64(in.imm)
			size := in.op - opStB
			if in.op >= opStxB {
				v = r[in.src]
				size = in.op - opStxB
			}
			if checked {
				if err := env.Store(addr, ldSize[size], v); err != nil {
					return fail(err)
				}
				break
			}
			switch size {
			case 0:
				*(*uint8)(vm.Ptr(addr)) = uint8(v)
			case 1:
				*(*uint16)(vm.Ptr(addr)) = uint16(v)
			case 2:
				*(*uint32)(vm.Ptr(addr)) = uint32(v)
			default:
				*(*uint64)(vm.Ptr(addr)) = v
			}
		case opLdAbsB, opLdAbsH, opLdAbsW, opLdIndB, opLdIndH, opLdIndW:
			off := uint64(in.imm)
			size := uint64(1) << (in.op - opLdAbsB)
			if in.op >= opLdIndB {
				off = uint64(int64(int32(uint32(r[in.src]) + uint32(in.imm))))
				size = 1 << (in.op - opLdIndB)
			}
			v, ok := vm.LoadPacket(env, off, size)
			r[0] = v
			if ok {
				break
			}
			// Out of bounds: the kernel's expansion of the load returns 0
			// from the current function, not from the program.
			if depth == 0 {
				return 0, nil
			}
			depth--
			f := &frames[depth]
			pc, r[6], r[7], r[8], r[9], r[10] = f.ret, f.r6, f.r7, f.r8, f.r9, f.fp
			if checked {
				env.FP = r[10]
			}

		// Atomics.
		case opAtomicAdd32, opAtomicOr32, opAtomicAnd32, opAtomicXor32,
			opAtomicFetchAdd32, opAtomicFetchOr32, opAtomicFetchAnd32, opAtomicFetchXor32,
			opAtomicXchg32, opAtomicCmpXchg32:
			addr := r[in.dst] + uint64(in.off)
			if checked {
				if err := checkAtomic(env, addr, 4); err != nil {
					return fail(err)
				}
			}
			atomic32(in, vm.Ptr(addr), &r)
		case opAtomicAdd64, opAtomicOr64, opAtomicAnd64, opAtomicXor64,
			opAtomicFetchAdd64, opAtomicFetchOr64, opAtomicFetchAnd64, opAtomicFetchXor64,
			opAtomicXchg64, opAtomicCmpXchg64:
			addr := r[in.dst] + uint64(in.off)
			if checked {
				if err := checkAtomic(env, addr, 8); err != nil {
					return fail(err)
				}
			}
			atomic64(in, vm.Ptr(addr), &r)
		case opLoadAcqB, opLoadAcqH, opLoadAcqW, opLoadAcqDW:
			addr := r[in.src] + uint64(in.off)
			size := ldSize[in.op-opLoadAcqB]
			if checked {
				if err := checkAtomic(env, addr, size); err != nil {
					return fail(err)
				}
			}
			r[in.dst] = loadAcquire(vm.Ptr(addr), size)
		case opStoreRelB, opStoreRelH, opStoreRelW, opStoreRelDW:
			addr := r[in.dst] + uint64(in.off)
			size := ldSize[in.op-opStoreRelB]
			if checked {
				if err := checkAtomic(env, addr, size); err != nil {
					return fail(err)
				}
			}
			storeRelease(vm.Ptr(addr), size, r[in.src])

		// Jumps. Backward jumps are where a runaway program spends its
		// budget, so that is where the budget is checked.
		case opJA:
			if in.off < 0 && n > limit {
				if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
					return fail(err)
				}
			}
			pc += int(in.off)
		case opJeqK:
			if r[in.dst] == uint64(in.imm) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJeqX:
			if r[in.dst] == r[in.src] {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJgtK:
			if r[in.dst] > uint64(in.imm) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJgtX:
			if r[in.dst] > r[in.src] {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJgeK:
			if r[in.dst] >= uint64(in.imm) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJgeX:
			if r[in.dst] >= r[in.src] {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJsetK:
			if r[in.dst]&uint64(in.imm) != 0 {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJsetX:
			if r[in.dst]&r[in.src] != 0 {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJneK:
			if r[in.dst] != uint64(in.imm) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJneX:
			if r[in.dst] != r[in.src] {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJsgtK:
			if int64(r[in.dst]) > in.imm {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJsgtX:
			if int64(r[in.dst]) > int64(r[in.src]) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJsgeK:
			if int64(r[in.dst]) >= in.imm {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJsgeX:
			if int64(r[in.dst]) >= int64(r[in.src]) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJltK:
			if r[in.dst] < uint64(in.imm) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJltX:
			if r[in.dst] < r[in.src] {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJleK:
			if r[in.dst] <= uint64(in.imm) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJleX:
			if r[in.dst] <= r[in.src] {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJsltK:
			if int64(r[in.dst]) < in.imm {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJsltX:
			if int64(r[in.dst]) < int64(r[in.src]) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJsleK:
			if int64(r[in.dst]) <= in.imm {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJsleX:
			if int64(r[in.dst]) <= int64(r[in.src]) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJeq32K:
			if uint32(r[in.dst]) == uint32(in.imm) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJeq32X:
			if uint32(r[in.dst]) == uint32(r[in.src]) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJgt32K:
			if uint32(r[in.dst]) > uint32(in.imm) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJgt32X:
			if uint32(r[in.dst]) > uint32(r[in.src]) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJge32K:
			if uint32(r[in.dst]) >= uint32(in.imm) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJge32X:
			if uint32(r[in.dst]) >= uint32(r[in.src]) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJset32K:
			if uint32(r[in.dst])&uint32(in.imm) != 0 {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJset32X:
			if uint32(r[in.dst])&uint32(r[in.src]) != 0 {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJne32K:
			if uint32(r[in.dst]) != uint32(in.imm) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJne32X:
			if uint32(r[in.dst]) != uint32(r[in.src]) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJsgt32K:
			if int32(r[in.dst]) > int32(in.imm) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJsgt32X:
			if int32(r[in.dst]) > int32(r[in.src]) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJsge32K:
			if int32(r[in.dst]) >= int32(in.imm) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJsge32X:
			if int32(r[in.dst]) >= int32(r[in.src]) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJlt32K:
			if uint32(r[in.dst]) < uint32(in.imm) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJlt32X:
			if uint32(r[in.dst]) < uint32(r[in.src]) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJle32K:
			if uint32(r[in.dst]) <= uint32(in.imm) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJle32X:
			if uint32(r[in.dst]) <= uint32(r[in.src]) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJslt32K:
			if int32(r[in.dst]) < int32(in.imm) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJslt32X:
			if int32(r[in.dst]) < int32(r[in.src]) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJsle32K:
			if int32(r[in.dst]) <= int32(in.imm) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opJsle32X:
			if int32(r[in.dst]) <= int32(r[in.src]) {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			}
		case opMayGoto:
			// Until the rewrite expands may_goto into a stack countdown,
			// the interpreter keeps the kernel's per-run loop budget.
			if loops == 0 {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
			} else {
				loops--
			}

		case opMayGotoTimed:
			// The rewrite's may_goto: the frame's hidden countdown.
			cp := (*uint64)(vm.Ptr(r[10] - uint64(-vm.MayGotoCount)))
			c := *cp
			if c == 0 {
				if in.off < 0 && n > limit {
					if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
						return fail(err)
					}
				}
				pc += int(in.off)
				break
			}
			if c--; c == 0 {
				c = mayGotoRefill(r[10], uint64(in.imm))
			}
			*cp = c

		case opLdxTB, opLdxTH, opLdxTW, opLdxTDW:
			r[in.dst] = vm.LoadSized(r[in.src]+uint64(in.off), ldSize[in.op-opLdxTB])
		case opStTB, opStTH, opStTW, opStTDW:
			vm.StoreSized(r[in.dst]+uint64(in.off), ldSize[in.op-opStTB], uint64(in.imm))
		// Arena accesses: a page the arena does not hold reads 0 and
		// drops writes.
		case opLdxAB, opLdxAH, opLdxAW, opLdxADW:
			w, size := int64(uint32(r[in.src]))+int64(in.off), ldSize[in.op-opLdxAB]
			r[in.dst] = 0
			if vm.ArenaMapped(env.Arena, w, size) {
				r[in.dst] = vm.LoadSized(env.Arena+uint64(w), size)
			}
		case opLdxASB, opLdxASH, opLdxASW:
			w, size := int64(uint32(r[in.src]))+int64(in.off), ldSize[in.op-opLdxASB]
			r[in.dst] = 0
			if vm.ArenaMapped(env.Arena, w, size) {
				r[in.dst] = extend(opLdxSB+(in.op-opLdxASB), vm.LoadSized(env.Arena+uint64(w), size))
			}
		case opStxAB, opStxAH, opStxAW, opStxADW:
			w, size := int64(uint32(r[in.dst]))+int64(in.off), ldSize[in.op-opStxAB]
			if vm.ArenaMapped(env.Arena, w, size) {
				vm.StoreSized(env.Arena+uint64(w), size, r[in.src])
			}
		case opStAB, opStAH, opStAW, opStADW:
			w, size := int64(uint32(r[in.dst]))+int64(in.off), ldSize[in.op-opStAB]
			if vm.ArenaMapped(env.Arena, w, size) {
				vm.StoreSized(env.Arena+uint64(w), size, uint64(in.imm))
			}
		case opAtomicA32:
			if w := int64(uint32(r[in.dst])) + int64(in.off); vm.ArenaMapped(env.Arena, w, 4) {
				op := insn{op: uint8(in.imm), src: in.src}
				atomic32(&op, vm.Ptr(env.Arena+uint64(w)), &r)
			}
		case opAtomicA64:
			if w := int64(uint32(r[in.dst])) + int64(in.off); vm.ArenaMapped(env.Arena, w, 8) {
				op := insn{op: uint8(in.imm), src: in.src}
				atomic64(&op, vm.Ptr(env.Arena+uint64(w)), &r)
			}
		case opCastUser:
			if lo := uint32(r[in.src]); lo != 0 {
				r[in.dst] = env.ArenaUser | uint64(lo)
			} else {
				r[in.dst] = 0
			}
		case opLdxPB, opLdxPH, opLdxPW, opLdxPDW:
			r[in.dst] = env.Probe(r[in.src]+uint64(in.off), ldSize[in.op-opLdxPB])
		case opLdxPSB, opLdxPSH, opLdxPSW:
			v := env.Probe(r[in.src]+uint64(in.off), ldSize[in.op-opLdxPSB])
			r[in.dst] = extend(opLdxSB+(in.op-opLdxPSB), v)

		case opIterNumNext:
			// Verified programs run checked keep the rewrite's
			// instruction: its iterator is checked as the kfunc's
			// argument would be.
			if checked {
				if err := env.Check(r[1], 8, true); err != nil {
					return fail(err)
				}
			}
			r[0] = iterNumNext(r[1])

		// Calls.
		case opCall:
			h := p.helpers[in.imm]
			env.FP = r[10]
			v, err := h(env, r[1], r[2], r[3], r[4], r[5])
			if err != nil {
				tc, ok := err.(*vm.TailCall)
				if !ok {
					return fail(err)
				}
				// The target replaces the current function: it runs on this
				// frame's stack space and its result is this function's.
				saved := env.Stack
				env.Stack.End = r[10]
				v, err = tc.Target.Run(env, r[1], 0, max(budget-min(n, budget), 1))
				env.Stack = saved
				if err != nil {
					return 0, err
				}
				if depth == 0 {
					return v, nil
				}
				depth--
				f := &frames[depth]
				pc, r[6], r[7], r[8], r[9], r[10] = f.ret, f.r6, f.r7, f.r8, f.r9, f.fp
				if checked {
					env.FP = r[10]
				}
				r[0] = v
				break
			}
			r[0] = v
		case opCallX:
			target := r[in.dst]
			if target&^0xffff_ffff == funcTag && target&0xffff_ffff < uint64(len(code)) {
				scratch = target & 0xffff_ffff
			} else {
				// Not a subprogram: bpf_conformance's callx names a helper id.
				var h vm.Helper
				if target <= 1<<31-1 && p.resolve != nil {
					h = p.resolve(int32(target))
				}
				if h == nil {
					return fail(fmt.Errorf("%w: callx to %#x", vm.ErrHelper, target))
				}
				v, err := h(env, r[1], r[2], r[3], r[4], r[5])
				if err != nil {
					return fail(err)
				}
				r[0] = v
				break
			}
			fallthrough
		case opCallLocal:
			if in.op == opCallLocal {
				scratch = uint64(pc + int(in.off))
			}
			if depth+1 >= maxDepth {
				return fail(vm.ErrCallDepth)
			}
			if n > limit {
				if err := checkLimits(env, n, budget, &limit, &pace); err != nil {
					return fail(err)
				}
			}
			frames[depth] = frame{ret: pc, r6: r[6], r7: r[7], r8: r[8], r9: r[9], fp: r[10]}
			depth++
			r[10] -= vm.StackSize
			if checked {
				env.FP = r[10]
			}
			pc = int(scratch)
		case opExit:
			if depth == 0 {
				return r[0], nil
			}
			depth--
			f := &frames[depth]
			pc, r[6], r[7], r[8], r[9], r[10] = f.ret, f.r6, f.r7, f.r8, f.r9, f.fp
			if checked {
				env.FP = r[10] // the callee's frame is dead
			}
		default:
			return fail(fmt.Errorf("%w: internal opcode %d", isa.ErrInvalidProgram, in.op))
		}
	}
}

// ldSize maps a size index (B, H, W, DW) to bytes.
var ldSize = [4]uint64{1, 2, 4, 8}

// ldxSize maps opLdxB..opLdxSW to bytes.
var ldxSize = [7]uint64{1, 2, 4, 8, 1, 2, 4}

// extend sign-extends the result of a checked MEMSX load.
func extend(op uint8, v uint64) uint64 {
	switch op {
	case opLdxSB:
		return uint64(int64(int8(v)))
	case opLdxSH:
		return uint64(int64(int16(v)))
	case opLdxSW:
		return uint64(int64(int32(v)))
	}
	return v
}

func udiv64(a, b uint64) uint64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func umod64(a, b uint64) uint64 {
	if b == 0 {
		return a
	}
	return a % b
}

func udiv32(a, b uint32) uint32 {
	if b == 0 {
		return 0
	}
	return a / b
}

func umod32(a, b uint32) uint32 {
	if b == 0 {
		return a
	}
	return a % b
}

// Signed division truncates toward zero; INT_MIN / -1 is INT_MIN and
// INT_MIN % -1 is 0, which is what Go computes without trapping.
func sdiv64(a, b int64) int64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func smod64(a, b int64) int64 {
	if b == 0 {
		return a
	}
	return a % b
}

func sdiv32(a, b int32) int32 {
	if b == 0 {
		return 0
	}
	return a / b
}

func smod32(a, b int32) int32 {
	if b == 0 {
		return a
	}
	return a % b
}
