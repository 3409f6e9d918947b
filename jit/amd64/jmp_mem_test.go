//go:build amd64 && linux

package amd64

import (
	"errors"
	"fmt"
	"testing"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/vm"
)

var jumpOps = []struct {
	name string
	op   uint8
}{
	{"jeq", isa.JumpEQ}, {"jgt", isa.JumpGT}, {"jge", isa.JumpGE}, {"jset", isa.JumpSet},
	{"jne", isa.JumpNE}, {"jsgt", isa.JumpSGT}, {"jsge", isa.JumpSGE}, {"jlt", isa.JumpLT},
	{"jle", isa.JumpLE}, {"jslt", isa.JumpSLT}, {"jsle", isa.JumpSLE},
}

// TestJumps records, for every value pair, whether a conditional jump is
// taken, forward and backward.
func TestJumps(t *testing.T) {
	for _, class := range []uint8{isa.ClassJMP, isa.ClassJMP32} {
		for _, j := range jumpOps {
			for _, x := range []bool{false, true} {
				name := fmt.Sprintf("%s%s/x=%v", j.name, map[uint8]string{isa.ClassJMP: "", isa.ClassJMP32: "32"}[class], x)
				t.Run(name, func(t *testing.T) {
					dst, src := isa.R3, isa.R4
					base := isa.R9
					prog := []isa.Instruction{insn(isa.ClassALU64|isa.ALUMov|isa.SrcX, base, isa.R1, 0, 0)}
					slot := int16(0)
					emit := func(a uint64, b uint64, imm int32) {
						prog = append(prog, ldImm(dst, a)...)
						prog = append(prog, ldImm(src, b)...)
						prog = append(prog, insn(isa.ClassALU64|isa.ALUMov, isa.R0, 0, 0, 1))
						op, s := class|j.op, isa.Register(0)
						if x {
							op |= isa.SrcX
							s = src
						}
						// forward: if cond goto +1; r0 = 2; store r0
						prog = append(prog, insn(op, dst, s, 1, imm))
						prog = append(prog, insn(isa.ClassALU64|isa.ALUMov, isa.R0, 0, 0, 2))
						prog = append(prog, insn(isa.ClassSTX|isa.ModeMEM|isa.SizeDW, base, isa.R0, slot*8, 0))
						slot++
						// backward: r5 = 0; L: r5 += 1; if r5 > 1 goto out; if cond goto L; out: store r5
						prog = append(prog, insn(isa.ClassALU64|isa.ALUMov, isa.R5, 0, 0, 0))
						prog = append(prog, insn(isa.ClassALU64|isa.ALUAdd, isa.R5, 0, 0, 1))
						prog = append(prog, insn(isa.ClassJMP|isa.JumpGT, isa.R5, 0, 1, 1))
						prog = append(prog, insn(op, dst, s, -3, imm))
						prog = append(prog, insn(isa.ClassSTX|isa.ModeMEM|isa.SizeDW, base, isa.R5, slot*8, 0))
						slot++
					}
					for _, a := range corner64 {
						if x {
							for _, b := range corner64 {
								emit(a, b, 0)
							}
						} else {
							for _, imm := range cornerImm {
								emit(a, 0, imm)
							}
						}
					}
					prog = append(prog, exitInsn)
					diff(t, diffCase{prog: prog, size: int(slot) * 8})
				})
			}
		}
	}
}

func mustAssemble(t testing.TB, src string) []isa.Instruction {
	t.Helper()
	prog, err := isa.Assemble(src)
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// TestMemory runs loads and stores of every size and kind over a buffer,
// in bounds, at the edges and out of bounds.
func TestMemory(t *testing.T) {
	type access struct {
		class, mode, size uint8
	}
	var accesses []access
	for _, size := range []uint8{isa.SizeB, isa.SizeH, isa.SizeW, isa.SizeDW} {
		accesses = append(accesses,
			access{isa.ClassLDX, isa.ModeMEM, size},
			access{isa.ClassST, isa.ModeMEM, size},
			access{isa.ClassSTX, isa.ModeMEM, size})
		if size != isa.SizeDW {
			accesses = append(accesses, access{isa.ClassLDX, isa.ModeMEMSX, size})
		}
	}
	init := make([]byte, 64)
	for i := range init {
		init[i] = byte(0x80 + i*7)
	}
	for _, ac := range accesses {
		for _, base := range []isa.Register{isa.R1, isa.R0, isa.R6, isa.R3} {
			for _, off := range []int16{-9, -8, -1, 0, 1, 3, 7, 32, 56, 57, 60, 63, 64, 1000, -32768, 32767} {
				name := fmt.Sprintf("%02x/r%d/%d", ac.class|ac.mode|ac.size, base, off)
				t.Run(name, func(t *testing.T) {
					val := isa.R2
					prog := []isa.Instruction{insn(isa.ClassALU64|isa.ALUMov|isa.SrcX, base, isa.R1, 0, 0)}
					prog = append(prog, ldImm(val, 0xfedc_ba98_7654_3210)...)
					prog = append(prog, insn(isa.ClassALU64|isa.ALUAdd, base, 0, 0, 8))
					imm, v := int32(0), val
					if ac.class == isa.ClassST {
						imm, v = -0x12345678, 0
					}
					prog = append(prog, insn(ac.class|ac.mode|ac.size, base, v, off, imm))
					if ac.class == isa.ClassLDX {
						// dst is base: load into base itself
						prog[len(prog)-1].Dst, prog[len(prog)-1].Src = isa.R5, base
					}
					prog = append(prog, insn(isa.ClassALU64|isa.ALUMov|isa.SrcX, isa.R0, isa.R5, 0, 0), exitInsn)
					diff(t, diffCase{prog: prog, size: 64, init: init})
				})
			}
		}
	}
}

// TestCheckedErrors checks the error of an out-of-bounds access: a
// *vm.RunError naming the instruction, wrapping vm.ErrMemory.
func TestCheckedErrors(t *testing.T) {
	prog := mustAssemble(t, `
		r2 = 1
		r3 = 2
		r0 = *(u64 *)(r1 + 0)
		r0 = *(u64 *)(r1 + 9)
		exit
	`)
	p, err := Compile(prog, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	te := newEnv(t, true, 16)
	_, err = p.Run(te.env, te.addr, 0, 0)
	var re *vm.RunError
	var me *vm.MemoryError
	if !errors.As(err, &re) || re.PC != 3 || !errors.Is(err, vm.ErrMemory) || !errors.As(err, &me) ||
		me.Addr != te.addr+9 || me.Size != 8 || me.Write {
		t.Fatalf("got %v, want a memory error at insn 3", err)
	}
	// Writes to a read-only region fail; reads succeed.
	te.env.Regions[0].Writable = false
	diff(t, diffCase{prog: mustAssemble(t, `
		r0 = *(u64 *)(r1 + 0)
		*(u32 *)(r1 + 4) = 1
		exit`), size: 16, setup: func(te *testEnv) { te.env.Regions[0].Writable = false }})
	// Stack: every frame offset, above the frame, below the stack.
	for _, off := range []int16{-512, -513, -8, -1, 0, 8, 3584, 3585} {
		diff(t, diffCase{prog: []isa.Instruction{
			insn(isa.ClassST|isa.ModeMEM|isa.SizeB, isa.R10, 0, off, 7),
			insn(isa.ClassLDX|isa.ModeMEM|isa.SizeB, isa.R0, isa.R10, off, 0),
			exitInsn,
		}})
		diff(t, diffCase{prog: []isa.Instruction{
			insn(isa.ClassALU64|isa.ALUMov|isa.SrcX, isa.R2, isa.R10, 0, 0),
			insn(isa.ClassST|isa.ModeMEM|isa.SizeDW, isa.R2, 0, off, 7),
			insn(isa.ClassLDX|isa.ModeMEM|isa.SizeDW, isa.R0, isa.R2, off, 0),
			exitInsn,
		}})
	}
	// Wild pointers never fault: they fail the run.
	for _, addr := range []uint64{0, 8, 0xffff_ffff_ffff_fff8, 0x8000_0000_0000_0000, 1 << 47} {
		diff(t, diffCase{prog: append(ldImm(isa.R2, addr),
			insn(isa.ClassLDX|isa.ModeMEM|isa.SizeDW, isa.R0, isa.R2, 0, 0), exitInsn), checkedOnly: true})
	}
}

// TestRegionsMany uses more regions than the inline table holds.
func TestRegionsMany(t *testing.T) {
	prog := mustAssemble(t, `
		r0 = *(u64 *)(r1 + 0)
		*(u64 *)(r2 + 0) = r0
		r0 = *(u64 *)(r2 + 8)
		exit`)
	p, err := Compile(prog, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	te := newEnv(t, true, 4096)
	var regions []vm.Region
	for i := range 300 {
		a := te.addr + uint64(i)*8
		regions = append(regions, vm.Region{Start: a, End: a + 8, Writable: i%2 == 1})
	}
	te.env.Regions = regions
	*(*uint64)(vm.Ptr(te.addr)) = 42
	got, err := p.Run(te.env, te.addr, te.addr+299*8, 0)
	var re *vm.RunError
	if !errors.As(err, &re) || re.PC != 2 {
		t.Fatalf("got %v, %v; want a memory error at insn 2", got, err)
	}
	if v := *(*uint64)(vm.Ptr(te.addr + 299*8)); v != 42 {
		t.Fatalf("store: %d", v)
	}
	_, err = p.Run(te.env, te.addr, te.addr+298*8, 0)
	if !errors.As(err, &re) || re.PC != 1 || !re.Err.(*vm.MemoryError).Write {
		t.Fatalf("got %v; want a write error at insn 1", err)
	}
}

func TestAtomics(t *testing.T) {
	ops := []struct {
		name string
		imm  int32
	}{
		{"add", isa.AtomicAdd}, {"or", isa.AtomicOr}, {"and", isa.AtomicAnd}, {"xor", isa.AtomicXor},
		{"fetch_add", isa.AtomicAdd | isa.AtomicFetch}, {"fetch_or", isa.AtomicOr | isa.AtomicFetch},
		{"fetch_and", isa.AtomicAnd | isa.AtomicFetch}, {"fetch_xor", isa.AtomicXor | isa.AtomicFetch},
		{"xchg", isa.AtomicXchg}, {"cmpxchg", isa.AtomicCmpXchg},
	}
	for _, size := range []uint8{isa.SizeW, isa.SizeDW} {
		for _, o := range ops {
			t.Run(fmt.Sprintf("%s%d", o.name, isa.SizeBytes(size)*8), func(t *testing.T) {
				for _, pr := range [][2]isa.Register{{isa.R1, isa.R2}, {isa.R1, isa.R0}, {isa.R0, isa.R1}, {isa.R3, isa.R3}, {isa.R6, isa.R9}} {
					dst, src := pr[0], pr[1]
					prog := []isa.Instruction{insn(isa.ClassALU64|isa.ALUMov|isa.SrcX, isa.R9, isa.R1, 0, 0)}
					if dst != isa.R9 {
						prog = append(prog, insn(isa.ClassALU64|isa.ALUMov|isa.SrcX, dst, isa.R1, 0, 0))
					}
					slot := int16(8)
					for i, v := range corner64 {
						cur := corner64[(i*7+3)%len(corner64)]
						if i%3 == 0 {
							cur = v // cmpxchg success
						}
						off := int16(8 * (i % 8))
						prog = append(prog, ldImm(isa.R5, cur)...)
						prog = append(prog, insn(isa.ClassSTX|isa.ModeMEM|isa.SizeDW, isa.R9, isa.R5, off, 0))
						if src != dst {
							prog = append(prog, ldImm(src, v)...)
						}
						if src != isa.R0 && dst != isa.R0 {
							prog = append(prog, ldImm(isa.R0, v)...)
						}
						prog = append(prog, insn(isa.ClassSTX|isa.ModeATOMIC|size, dst, src, off, o.imm))
						for _, r := range []isa.Register{isa.R0, src} {
							prog = append(prog, insn(isa.ClassSTX|isa.ModeMEM|isa.SizeDW, isa.R9, r, slot*8, 0))
							slot++
						}
						prog = append(prog, insn(isa.ClassLDX|isa.ModeMEM|isa.SizeDW, isa.R5, isa.R9, off, 0))
						prog = append(prog, insn(isa.ClassSTX|isa.ModeMEM|isa.SizeDW, isa.R9, isa.R5, slot*8, 0))
						slot++
					}
					prog = append(prog, exitInsn)
					diff(t, diffCase{prog: prog, size: int(slot) * 8})
					if t.Failed() {
						t.Fatalf("dst %v src %v", dst, src)
					}
				}
			})
		}
	}
	// Misaligned and out-of-bounds atomics fail as in the interpreter; so
	// do load-acquire and store-release, all sizes.
	for _, off := range []int16{0, 1, 2, 4, 6, 8, 12, 16, 60, 64} {
		for _, size := range []uint8{isa.SizeB, isa.SizeH, isa.SizeW, isa.SizeDW} {
			var imms = []int32{isa.AtomicLoadAcquire, isa.AtomicStoreRelease}
			if size == isa.SizeW || size == isa.SizeDW {
				imms = append(imms, isa.AtomicAdd, isa.AtomicCmpXchg, isa.AtomicXchg, isa.AtomicOr|isa.AtomicFetch)
			}
			for _, imm := range imms {
				dst, src := isa.R1, isa.R2
				if imm == isa.AtomicLoadAcquire {
					dst, src = isa.R2, isa.R1
				}
				prog := append(ldImm(isa.R2, 0x1122334455667788),
					insn(isa.ClassSTX|isa.ModeATOMIC|size, dst, src, off, imm),
					insn(isa.ClassALU64|isa.ALUMov|isa.SrcX, isa.R0, isa.R2, 0, 0),
					exitInsn)
				init := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
				diff(t, diffCase{prog: prog, size: 64, init: init})
			}
		}
	}
}
