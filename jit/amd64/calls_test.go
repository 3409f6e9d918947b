//go:build amd64 && linux

package amd64

import (
	"errors"
	"fmt"
	"testing"

	"github.com/bpfvm/bpfvm/interp"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/vm"
)

// testHelpers: 1 returns a mix of its arguments and checks env.FP; 2 fails;
// 3 adds a region (the second page of the data) for the rest of the run.
func testHelpers(log *[]uint64) interp.HelperFunc {
	return func(id int32) vm.Helper {
		switch id {
		case 1:
			return func(e *vm.Env, r1, r2, r3, r4, r5 uint64) (uint64, error) {
				if log != nil {
					*log = append(*log, r1, r2, r3, r4, r5, e.FP)
				}
				return r1*3 + r2*5 + r3*7 + r4*11 + r5*13, nil
			}
		case 2:
			return func(e *vm.Env, r1, r2, r3, r4, r5 uint64) (uint64, error) {
				return 0, fmt.Errorf("helper failed with %d", r1)
			}
		case 3:
			return func(e *vm.Env, r1, r2, r3, r4, r5 uint64) (uint64, error) {
				e.Regions = append(e.Regions[:len(e.Regions):len(e.Regions)], vm.Region{Start: r1, End: r1 + r2, Writable: true})
				return 0, nil
			}
		}
		return nil
	}
}

func TestHelpers(t *testing.T) {
	var ilog, jlog []uint64
	src := `
		r6 = 6
		r7 = 7
		r8 = 8
		r9 = 9
		r1 = 1
		r2 = 2
		r3 = 3
		r4 = 4
		r5 = 5
		call 1
		*(u64 *)(r10 - 8) = r0
		r0 += r1
		r0 += r2
		r0 += r3
		r0 += r4
		r0 += r5
		r0 += r6
		r0 += r7
		r0 += r8
		r0 += r9
		call sub
		exit
	sub:
		r6 = 60
		r1 = r10
		call 1
		exit
	`
	prog := mustAssemble(t, src)
	for _, checked := range []bool{true, false} {
		ilog, jlog = nil, nil
		ip, _ := interp.New(prog, testHelpers(&ilog))
		jp, err := Compile(prog, testHelpers(&jlog), Options{Modes: Checked | Unchecked})
		if err != nil {
			t.Fatal(err)
		}
		te := newEnv(t, checked, 0)
		io := runOn(ip, te, nil, 0, 0, 0)
		jo := runOn(jp, te, nil, 0, 0, 0)
		if io.r0 != jo.r0 || errString(io.err) != errString(jo.err) || fmt.Sprint(ilog) != fmt.Sprint(jlog) {
			t.Fatalf("interp %v %v, jit %v %v", io, ilog, jo, jlog)
		}
		jp.Close()
	}
	// A failing helper stops the run with its error, naming the call.
	prog = mustAssemble(t, "r1 = 42\n r0 = 1\n call 2\n exit")
	jp, err := Compile(prog, testHelpers(nil), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer jp.Close()
	te := newEnv(t, true, 0)
	_, err = jp.Run(te.env, 0, 0, 0)
	var re *vm.RunError
	if !errors.As(err, &re) || re.PC != 2 || re.Err.Error() != "helper failed with 42" {
		t.Fatalf("got %v", err)
	}
	// Unknown helpers are rejected at compile time, as by interp.New.
	if _, err := Compile(mustAssemble(t, "call 99\n exit"), testHelpers(nil), Options{}); !errors.Is(err, vm.ErrHelper) {
		t.Fatalf("unknown helper: %v", err)
	}
}

// TestHelperRegions: a helper that grants a region makes later accesses to
// it valid in checked mode.
func TestHelperRegions(t *testing.T) {
	prog := mustAssemble(t, `
		r6 = r1
		r6 += 64
		*(u64 *)(r6 + 0) = 1
		exit
	`)
	prog2 := mustAssemble(t, `
		r6 = r1
		r6 += 64
		r1 = r6
		r2 = 64
		call 3
		*(u64 *)(r6 + 0) = 1
		r0 = *(u64 *)(r6 + 0)
		exit
	`)
	for _, p := range [][]isa.Instruction{prog, prog2} {
		diff(t, diffCase{prog: p, helpers: testHelpers(nil), size: 64, checkedOnly: true,
			setup: func(te *testEnv) {
				// A bigger buffer, of which the run may only touch 64 bytes.
				m, err := vm.Alloc(4096)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { m.Free() })
				te.data, te.addr = m, m.Addr()
			},
			reset: func(te *testEnv) {
				te.env.Regions = []vm.Region{{Start: te.addr, End: te.addr + 64, Writable: true}}
			}})
	}
}

func TestLocalCalls(t *testing.T) {
	srcs := []string{
		// Callee-saved registers and frames.
		`
		r6 = 1
		r7 = 2
		r8 = 3
		r9 = 4
		*(u64 *)(r10 - 8) = r6
		r1 = 10
		call f
		r0 += r6
		r0 += r7
		r0 += r8
		r0 += r9
		r1 = *(u64 *)(r10 - 8)
		r0 += r1
		exit
	f:
		r6 = 100
		r7 = 200
		r8 = 300
		r9 = 400
		*(u64 *)(r10 - 8) = r1
		r2 = r10
		r0 = *(u64 *)(r2 + 504)
		r1 = *(u64 *)(r10 - 8)
		r0 += r1
		exit
	`,
		// Recursion until the depth limit.
		`
		r1 = 0
		call f
		exit
	f:
		r1 += 1
		r0 = r1
		if r1 > 20 goto out
		call f
	out:
		exit
	`,
		// Bounded recursion: depth 7 is the last allowed.
		`
		r1 = 0
		call f
		exit
	f:
		r1 += 1
		r0 = r1
		if r1 >= 7 goto out
		call f
		r0 += 100
	out:
		exit
	`,
		// callx to a subprogram and to a helper id.
		`
		r2 = 5
		r6 = 1
		callx r2
		r6 = r0
		exit
	`,
	}
	for i, src := range srcs {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			diff(t, diffCase{prog: mustAssemble(t, src), helpers: func(id int32) vm.Helper {
				if id == 5 {
					return func(_ *vm.Env, r1, _, _, _, _ uint64) (uint64, error) { return r1 + 77, nil }
				}
				return nil
			}})
		})
	}
	// callx to a subprogram, through a function value.
	prog := []isa.Instruction{}
	f := isa.LdImm64(isa.R2, isa.PseudoFunc, 0)
	f[0].Imm = 3 // slot 1 + 1 + 3 = 5
	prog = append(prog, f[:]...)
	prog = append(prog,
		insn(isa.OpCallX, isa.R2, 0, 0, 0), // 2
		insn(isa.ClassALU64|isa.ALUAdd, isa.R0, 0, 0, 1),
		exitInsn,
		insn(isa.ClassALU64|isa.ALUMov, isa.R0, 0, 0, 41), // 5
		exitInsn)
	diff(t, diffCase{prog: prog})
	// callx to nothing.
	diff(t, diffCase{prog: append(ldImm(isa.R2, 1<<40), insn(isa.OpCallX, isa.R2, 0, 0, 0), exitInsn)})
}

func TestBudget(t *testing.T) {
	srcs := map[string]string{
		"ja": `
		r0 = 0
	l:
		r0 += 1
		if r0 > 100 goto out
		goto l
	out:
		exit
	`,
		"cond": `
		r0 = 0
	l:
		r0 += 1
		if r0 < 100 goto l
		exit
	`,
		"calls": `
		r6 = 0
	l:
		call f
		r6 += 1
		if r6 < 20 goto l
		r0 = r6
		exit
	f:
		r0 = 1
		exit
	`,
		"mixed": `
		r0 = 0
		r1 = 0
	l:
		r0 += 1
		if r0 < 10 goto l
		r0 = 0
		r1 += 1
		if r1 < 10 goto l
		goto next
	next:
		r1 = 0
	l2:
		r1 += 1
		if r1 > 50 goto out
		goto l2
	out:
		exit
	`,
	}
	for name, src := range srcs {
		t.Run(name, func(t *testing.T) {
			prog := mustAssemble(t, src)
			for budget := uint64(0); budget < 400; budget++ {
				diff(t, diffCase{prog: prog, budget: budget, sameErr: budgetPC(prog)})
				if t.Failed() {
					t.Fatalf("budget %d", budget)
				}
			}
		})
	}
}

// TestPacketLoadBudget: an LD_ABS/LD_IND out of bounds returns 0 from the
// function it is in, and budgeted code charges exactly what ran, so both
// engines stop at the same instruction for every budget.
func TestPacketLoadBudget(t *testing.T) {
	prog := mustAssemble(t, `
		r6 = 0
		r8 = 0
	l:
		r7 = r6
		call f
		r8 += r0
		r6 += 1
		if r6 < 20 goto l
		r0 = r8
		exit
	f:
		r0 = *(u8 *)skb[r7 + 0]
		r0 += 1
		r0 = *(u16 *)skb[r7 + 3]
		r0 += 1
		exit
	`)
	init := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	// f returns the u16 at r7+3, plus 1, where both loads are in bounds,
	// else 0 from the load that fails.
	var want uint64
	for r7 := 0; r7+5 <= len(init); r7++ {
		want += uint64(init[r7+3])<<8 | uint64(init[r7+4]) + 1
	}
	for _, opts := range []Options{{}, {Blind: true}, {Far: true}} {
		for budget := uint64(0); budget < 300; budget++ {
			io, _ := diff(t, diffCase{prog: prog, size: len(init), init: init, budget: budget, sameErr: budgetPC(prog), jit: opts})
			if t.Failed() {
				t.Fatalf("%+v: budget %d", opts, budget)
			}
			if budget == 0 && (io.err != nil || io.r0 != want) {
				t.Fatalf("no budget: %v", io)
			}
		}
	}
}

// TestYield runs a long loop in small chunks: the result must not change.
func TestYield(t *testing.T) {
	prog := mustAssemble(t, `
		r0 = 0
		r1 = 0
	l:
		r0 += r1
		r1 += 1
		if r1 < 3000000 goto l
		exit
	`)
	p, err := Compile(prog, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	te := newEnv(t, true, 0)
	got, err := p.Run(te.env, 0, 0, 0)
	want := uint64(3000000) * 2999999 / 2
	if err != nil || got != want {
		t.Fatalf("got %d, %v; want %d", got, err, want)
	}
	// Over budget: conditional back edges check it too, as in the
	// interpreter, and the error names the jump.
	_, err = p.Run(te.env, 0, 0, 1000)
	var re *vm.RunError
	if !errors.As(err, &re) || !errors.Is(err, vm.ErrBudget) || re.PC != 4 {
		t.Fatalf("got %v, want ErrBudget at insn 4", err)
	}
}

func TestPacketLoads(t *testing.T) {
	for _, size := range []uint8{isa.SizeB, isa.SizeH, isa.SizeW} {
		for _, imm := range []int32{0, 1, 2, 3, 12, 13, 14, 15, 16, -1, -0x80000000, 0x7fffffff} {
			for _, ind := range []bool{false, true} {
				for _, r := range []uint64{0, 1, 2, 0xffffffff, 0x1_0000_0003, 0xfffffffffffffff0} {
					var prog []isa.Instruction
					prog = append(prog, ldImm(isa.R0, 0x1234)...)
					prog = append(prog, ldImm(isa.R7, r)...)
					if ind {
						prog = append(prog, insn(isa.ClassLD|isa.ModeIND|size, 0, isa.R7, 0, imm))
					} else {
						prog = append(prog, insn(isa.ClassLD|isa.ModeABS|size, 0, 0, 0, imm))
					}
					prog = append(prog, insn(isa.ClassALU64|isa.ALUAdd, isa.R0, 0, 0, 1), exitInsn)
					init := []byte{0x81, 0x92, 0xa3, 0xb4, 0xc5, 0xd6, 0xe7, 0xf8, 9, 10, 11, 12, 13, 14, 15, 16}
					diff(t, diffCase{prog: prog, size: 16, init: init})
					if !ind {
						break
					}
				}
			}
		}
	}
	// An empty packet.
	diff(t, diffCase{prog: []isa.Instruction{insn(isa.ClassLD|isa.ModeABS|isa.SizeB, 0, 0, 0, 0), exitInsn},
		setup: func(te *testEnv) { te.env.Packet = vm.Region{} }})
	// Negative offsets naming headers (vm.LoadPacket), in the entry and
	// in a callee, where a miss returns 0 from the callee.
	headers := func(te *testEnv) {
		te.env.MacHeader, te.env.NetHeader = te.env.Packet.Start, te.env.Packet.Start+4
	}
	for _, size := range []uint8{isa.SizeB, isa.SizeH, isa.SizeW} {
		for _, imm := range []int32{vm.SKFLLOff, vm.SKFLLOff + 3, vm.SKFLLOff + 12, vm.SKFLLOff + 15, vm.SKFLLOff - 1,
			vm.SKFNetOff, vm.SKFNetOff + 8, vm.SKFNetOff + 11, vm.SKFNetOff + 12, vm.SKFNetOff - 1, -1, -0x1000} {
			for _, blind := range []bool{false, true} {
				var prog []isa.Instruction
				prog = append(prog, ldImm(isa.R0, 0x1234)...)
				prog = append(prog, insn(isa.ClassJMP|isa.JumpCall, 0, isa.Register(isa.CallLocal), 0, 2),
					insn(isa.ClassALU64|isa.ALUAdd, isa.R0, 0, 0, 1), exitInsn,
					insn(isa.ClassLD|isa.ModeABS|size, 0, 0, 0, imm),
					insn(isa.ClassALU64|isa.ALUAdd, isa.R0, 0, 0, 0x100), exitInsn)
				init := []byte{0x81, 0x92, 0xa3, 0xb4, 0xc5, 0xd6, 0xe7, 0xf8, 9, 10, 11, 12, 13, 14, 15, 16}
				io, _ := diff(t, diffCase{prog: prog, size: 16, init: init, setup: headers, jit: Options{Blind: blind}})
				if size == isa.SizeB && (imm == vm.SKFLLOff+3 && io.r0 != 0xb4+0x101 || imm == vm.SKFNetOff+11 && io.r0 != 16+0x101 || imm == -1 && io.r0 != 1) {
					t.Errorf("offset %#x: %v", imm, io)
				}
			}
		}
	}
}

func TestMayGoto(t *testing.T) {
	diff(t, diffCase{prog: mustAssemble(t, `
		r0 = 0
	l:
		r0 += 1
		may_goto out
		goto l
	out:
		exit
	`)})
	// may_goto jumping backward.
	prog := []isa.Instruction{
		insn(isa.ClassALU64|isa.ALUMov, isa.R0, 0, 0, 0),
		insn(isa.ClassALU64|isa.ALUAdd, isa.R0, 0, 0, 1), // 1
		insn(isa.ClassJMP|isa.JumpGT, isa.R0, 0, 2, 3),   // 2
		insn(isa.OpMayGoto, 0, 0, -3, 0),                 // 3: after the budget is gone, go back
		exitInsn,                                         // 4
		exitInsn,                                         // 5
	}
	diff(t, diffCase{prog: prog})
}

// TestCtxAccess emulates a context whose fields the program sees
// differently from how they are stored.
func TestCtxAccess(t *testing.T) {
	var writes []string
	access := func(e *vm.Env, off, size uint64, write bool, val uint64) (uint64, error) {
		if write {
			writes = append(writes, fmt.Sprintf("%d/%d=%#x", off, size, val))
			if off == 8 {
				return 0, errors.New("read-only field")
			}
			return 0, nil
		}
		if off >= 16 {
			return 0, &vm.MemoryError{Addr: e.Ctx.Start + off, Size: size}
		}
		return 0xf0f0_f0f0_8000_0000 | off<<8 | size, nil
	}
	srcs := []string{`
		r2 = *(u32 *)(r1 + 0)
		r3 = *(u8 *)(r1 + 1)
		r4 = *(s16 *)(r1 + 2)
		r5 = *(s32 *)(r1 + 4)
		r0 = *(u64 *)(r1 + 8)
		r0 += r2
		r0 += r3
		r0 += r4
		r0 += r5
		*(u32 *)(r1 + 4) = r0
		*(u16 *)(r1 + 2) = 0x1234
		exit
	`, `
		*(u64 *)(r1 + 8) = 1
		exit
	`, `
		r0 = *(u64 *)(r1 + 16)
		exit
	`, `
		r2 = 1
		lock *(u32 *)(r1 + 0) += r2
		exit
	`}
	for i, src := range srcs {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			var iw []string
			diff(t, diffCase{prog: mustAssemble(t, src), size: 64, checkedOnly: true, setup: func(te *testEnv) {
				te.env.Ctx = vm.Region{Start: te.addr, End: te.addr + 16, Writable: true}
				te.env.CtxAccess = func(e *vm.Env, off, size uint64, write bool, val uint64) (uint64, error) {
					return access(e, off, size, write, val)
				}
			}})
			iw, writes = writes, nil
			_ = iw
		})
	}
}

// budgetPC accepts the interpreter's budget errors at backward JA, which
// name the instruction before the jump's target (interp.go advances pc
// before it fails), where the JIT names the jump itself.
func budgetPC(prog []isa.Instruction) func(ie, je error) bool {
	return func(ie, je error) bool {
		var ir, jr *vm.RunError
		if !errors.As(ie, &ir) || !errors.As(je, &jr) || !errors.Is(ie, vm.ErrBudget) || !errors.Is(je, vm.ErrBudget) {
			return false
		}
		ins := prog[jr.PC]
		t, ok := ins.JumpTarget(jr.PC)
		return ok && ins.Op&0xf0 == isa.JumpA && t-1 == ir.PC
	}
}

func TestTailCall(t *testing.T) {
	target := mustAssemble(t, `
		r0 = *(u64 *)(r10 - 8)
		r0 += r1
		*(u64 *)(r10 - 16) = r0
		exit
	`)
	caller := mustAssemble(t, `
		r6 = r1
		*(u64 *)(r10 - 8) = 1000
		r0 = 7
		call f
		r0 += 5
		exit
	f:
		r1 = 3
		call 12
		r0 = 99
		exit
	`)
	for _, checked := range []bool{true, false} {
		var results []uint64
		for _, jitTarget := range []bool{false, true} {
			for _, jitCaller := range []bool{false, true} {
				var tgt vm.Program
				if jitTarget {
					p, err := Compile(target, nil, Options{Modes: Checked | Unchecked})
					if err != nil {
						t.Fatal(err)
					}
					defer p.Close()
					tgt = p
				} else {
					tgt, _ = interp.New(target, nil)
				}
				tc := &vm.TailCall{Target: tgt}
				helpers := func(id int32) vm.Helper {
					if id != 12 {
						return nil
					}
					return func(e *vm.Env, r1, r2, r3, r4, r5 uint64) (uint64, error) { return 0, tc }
				}
				var e engine
				if jitCaller {
					p, err := Compile(caller, helpers, Options{Modes: Checked | Unchecked})
					if err != nil {
						t.Fatal(err)
					}
					defer p.Close()
					e = p
				} else {
					e, _ = interp.New(caller, helpers)
				}
				te := newEnv(t, checked, 0)
				o := runOn(e, te, nil, 1, 0, 0)
				if o.err != nil {
					t.Fatal(o.err)
				}
				results = append(results, o.r0)
			}
		}
		for _, r := range results {
			if r != results[0] {
				t.Fatalf("checked=%v: results differ: %v", checked, results)
			}
		}
	}
}

// TestCallbackCall runs subprograms from a helper with Call, as bpf_loop does.
func TestCallbackCall(t *testing.T) {
	// r2 = function value of "cb" (slot 8).
	prog := []isa.Instruction{
		insn(isa.ClassST|isa.ModeMEM|isa.SizeDW, isa.R10, 0, -8, 0),                 // 0
		insn(isa.ClassALU64|isa.ALUMov, isa.R1, 0, 0, 5),                            // 1
		{Op: isa.OpLdImm64, Dst: isa.R2, Src: isa.Register(isa.PseudoFunc), Imm: 5}, // 2: 3+5 = 8
		{}, // 3
		insn(isa.ClassALU64|isa.ALUMov|isa.SrcX, isa.R3, isa.R10, 0, 0),   // 4
		insn(isa.ClassALU64|isa.ALUAdd, isa.R3, 0, 0, -8),                 // 5
		insn(isa.OpCall, 0, 0, 0, 20),                                     // 6
		insn(isa.ClassLDX|isa.ModeMEM|isa.SizeDW, isa.R0, isa.R10, -8, 0), // 7 -- wait: fallthrough into cb
		exitInsn,
	}
	// Slot 8 is the exit above; put cb after it.
	prog = prog[:8]
	prog = append(prog,
		exitInsn, // 8
		insn(isa.ClassLDX|isa.ModeMEM|isa.SizeDW, isa.R4, isa.R2, 0, 0),   // 9: cb
		insn(isa.ClassALU64|isa.ALUAdd|isa.SrcX, isa.R4, isa.R1, 0, 0),    // 10
		insn(isa.ClassSTX|isa.ModeMEM|isa.SizeDW, isa.R2, isa.R4, 0, 0),   // 11
		insn(isa.ClassSTX|isa.ModeMEM|isa.SizeDW, isa.R10, isa.R4, -8, 0), // 12: own frame
		insn(isa.ClassALU64|isa.ALUMov, isa.R0, 0, 0, 0),                  // 13
		exitInsn, // 14
	)
	prog[2].Imm = 9 - 3
	var cur interface {
		Call(env *vm.Env, fn uint64, r1, r2, r3, r4, r5 uint64) (uint64, error)
	}
	helpers := func(id int32) vm.Helper {
		if id != 20 {
			return nil
		}
		// loop(n, fn, ctx): calls fn(i, ctx) n times.
		return func(e *vm.Env, n, fn, ctx, _, _ uint64) (uint64, error) {
			// The callback may use its caller's frames (as bpfvm's
			// enterCallbacks grants).
			saved := e.Regions
			e.Regions = append(e.Regions[:len(e.Regions):len(e.Regions)], vm.Region{Start: e.FP - vm.StackSize, End: e.Stack.End, Writable: true})
			defer func() { e.Regions = saved }()
			for i := range n {
				if _, err := cur.Call(e, fn, i, ctx, 0, 0, 0); err != nil {
					return 0, err
				}
			}
			return n, nil
		}
	}
	ip, err := interp.New(prog, helpers)
	if err != nil {
		t.Fatal(err)
	}
	jp, err := Compile(prog, helpers, Options{Modes: Checked | Unchecked})
	if err != nil {
		t.Fatal(err)
	}
	defer jp.Close()
	for _, checked := range []bool{true, false} {
		te := newEnv(t, checked, 0)
		cur = ip
		io := runOn(ip, te, nil, 0, 0, 0)
		cur = jp
		jo := runOn(jp, te, nil, 0, 0, 0)
		if io.r0 != jo.r0 || errString(io.err) != errString(jo.err) || string(io.stack) != string(jo.stack) {
			t.Fatalf("interp %v, jit %v", io, jo)
		}
		if io.r0 != 0+1+2+3+4 || io.err != nil {
			t.Fatalf("r0 = %d, %v", io.r0, io.err)
		}
	}
}
