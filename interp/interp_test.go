package interp

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/vm"
)

// env returns an environment with a stack and, when size > 0, a writable
// data region; it returns the data address.
func testEnv(t testing.TB, checked bool, size int) (*vm.Env, uint64) {
	t.Helper()
	stack, err := vm.Alloc(vm.MaxFrames * vm.StackSize)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stack.Free() })
	env := &vm.Env{
		Checked: checked,
		Stack:   vm.Region{Start: stack.Addr(), End: stack.Addr() + vm.MaxFrames*vm.StackSize, Writable: true},
	}
	var addr uint64
	if size > 0 {
		data, err := vm.Alloc(size)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { data.Free() })
		addr = data.Addr()
		env.Regions = []vm.Region{{Start: addr, End: addr + uint64(size), Writable: true}}
		env.Packet = env.Regions[0]
	}
	return env, addr
}

func mov(dst isa.Register, imm int32) isa.Instruction {
	return isa.Instruction{Op: isa.ClassALU64 | isa.ALUMov | isa.SrcK, Dst: dst, Imm: imm}
}

func alu(op uint8, dst, src isa.Register) isa.Instruction {
	return isa.Instruction{Op: isa.ClassALU64 | op | isa.SrcX, Dst: dst, Src: src}
}

func ldx(size uint8, dst, src isa.Register, off int16) isa.Instruction {
	return isa.Instruction{Op: isa.ClassLDX | isa.ModeMEM | size, Dst: dst, Src: src, Off: off}
}

func stx(size uint8, dst, src isa.Register, off int16) isa.Instruction {
	return isa.Instruction{Op: isa.ClassSTX | isa.ModeMEM | size, Dst: dst, Src: src, Off: off}
}

var exit = isa.Instruction{Op: isa.OpExit}

func TestMemoryModes(t *testing.T) {
	// r0 = *(u64 *)(r1 + off) for a 16-byte buffer.
	tests := []struct {
		name    string
		off     int16
		wantErr bool
	}{
		{"in bounds", 8, false},
		{"past the end", 9, true},
		{"before the start", -1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New([]isa.Instruction{ldx(isa.SizeDW, isa.R0, isa.R1, tt.off), exit}, nil)
			if err != nil {
				t.Fatal(err)
			}
			env, addr := testEnv(t, true, 16)
			_, err = p.Run(env, addr, 16, 0)
			if tt.wantErr {
				var re *vm.RunError
				if !errors.As(err, &re) || !errors.Is(err, vm.ErrMemory) || re.PC != 0 {
					t.Fatalf("got %v, want a memory error at insn 0", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCheckedNullAndWild(t *testing.T) {
	p, err := New([]isa.Instruction{mov(isa.R2, 7), stx(isa.SizeW, isa.R1, isa.R2, 0), mov(isa.R0, 0), exit}, nil)
	if err != nil {
		t.Fatal(err)
	}
	env, _ := testEnv(t, true, 0)
	for _, addr := range []uint64{0, 0xdeadbeef, 1 << 63} {
		if _, err := p.Run(env, addr, 0, 0); !errors.Is(err, vm.ErrMemory) {
			t.Errorf("store to %#x: got %v, want ErrMemory", addr, err)
		}
	}
}

func TestStackAndUnchecked(t *testing.T) {
	prog := []isa.Instruction{
		mov(isa.R1, 42),
		stx(isa.SizeDW, isa.R10, isa.R1, -8),
		ldx(isa.SizeDW, isa.R0, isa.R10, -8),
		exit,
	}
	p, err := New(prog, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, checked := range []bool{true, false} {
		env, _ := testEnv(t, checked, 0)
		got, err := p.Run(env, 0, 0, 0)
		if err != nil || got != 42 {
			t.Errorf("checked=%v: got %d, %v; want 42", checked, got, err)
		}
	}
}

func TestBudget(t *testing.T) {
	// An infinite loop: ja -1.
	p, err := New([]isa.Instruction{{Op: isa.OpJA, Off: -1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	env, _ := testEnv(t, true, 0)
	if _, err := p.Run(env, 0, 0, 1000); !errors.Is(err, vm.ErrBudget) {
		t.Fatalf("got %v, want ErrBudget", err)
	}
}

func TestCallDepth(t *testing.T) {
	// A function that calls itself forever.
	p, err := New([]isa.Instruction{{Op: isa.OpCall, Src: isa.Register(isa.CallLocal), Imm: -1}, exit}, nil)
	if err != nil {
		t.Fatal(err)
	}
	env, _ := testEnv(t, true, 0)
	if _, err := p.Run(env, 0, 0, 0); !errors.Is(err, vm.ErrCallDepth) {
		t.Fatalf("got %v, want ErrCallDepth", err)
	}
}

func TestCallsPreserveCalleeSaved(t *testing.T) {
	prog := []isa.Instruction{
		mov(isa.R6, 6),
		mov(isa.R1, 20),
		{Op: isa.OpCall, Src: isa.Register(isa.CallLocal), Imm: 2}, // -> 5
		alu(isa.ALUAdd, isa.R0, isa.R6),
		exit,
		// subprogram: r6 clobbered, uses its own stack frame.
		mov(isa.R6, 100),
		stx(isa.SizeDW, isa.R10, isa.R1, -8),
		ldx(isa.SizeDW, isa.R0, isa.R10, -8),
		alu(isa.ALUAdd, isa.R0, isa.R1),
		exit,
	}
	p, err := New(prog, nil)
	if err != nil {
		t.Fatal(err)
	}
	env, _ := testEnv(t, true, 0)
	got, err := p.Run(env, 0, 0, 0)
	if err != nil || got != 46 {
		t.Fatalf("got %d, %v; want 46", got, err)
	}
}

func TestHelpers(t *testing.T) {
	add := func(_ *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) { return r1 + r2, nil }
	fail := errors.New("boom")
	failing := func(*vm.Env, uint64, uint64, uint64, uint64, uint64) (uint64, error) { return 0, fail }
	helpers := func(id int32) vm.Helper {
		switch id {
		case 1:
			return add
		case 2:
			return failing
		}
		return nil
	}
	call := func(id int32) isa.Instruction { return isa.Instruction{Op: isa.OpCall, Imm: id} }

	p, err := New([]isa.Instruction{mov(isa.R1, 3), mov(isa.R2, 4), call(1), exit}, helpers)
	if err != nil {
		t.Fatal(err)
	}
	env, _ := testEnv(t, true, 0)
	if got, err := p.Run(env, 0, 0, 0); err != nil || got != 7 {
		t.Fatalf("got %d, %v; want 7", got, err)
	}

	p, err = New([]isa.Instruction{call(2), exit}, helpers)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(env, 0, 0, 0); !errors.Is(err, fail) {
		t.Fatalf("got %v, want the helper's error", err)
	}

	if _, err := New([]isa.Instruction{call(99), exit}, helpers); !errors.Is(err, vm.ErrHelper) {
		t.Fatalf("unknown helper: got %v, want ErrHelper", err)
	}
}

func TestLdAbsOutOfBoundsExits(t *testing.T) {
	// r0 = 5; r0 = *(u32 *)skb[100] on a 16-byte packet ends with r0 = 0.
	prog := []isa.Instruction{
		mov(isa.R0, 5),
		{Op: isa.ClassLD | isa.ModeABS | isa.SizeW, Imm: 100},
		exit,
	}
	p, err := New(prog, nil)
	if err != nil {
		t.Fatal(err)
	}
	env, addr := testEnv(t, true, 16)
	if got, err := p.Run(env, addr, 16, 0); err != nil || got != 0 {
		t.Fatalf("got %d, %v; want 0", got, err)
	}
}

func TestAtomicAlignment(t *testing.T) {
	// lock *(u64 *)(r1 + 4) += r2 is misaligned.
	prog := []isa.Instruction{
		mov(isa.R2, 1),
		{Op: isa.ClassSTX | isa.ModeATOMIC | isa.SizeDW, Dst: isa.R1, Src: isa.R2, Off: 4, Imm: isa.AtomicAdd},
		mov(isa.R0, 0),
		exit,
	}
	p, err := New(prog, nil)
	if err != nil {
		t.Fatal(err)
	}
	env, addr := testEnv(t, true, 16)
	if _, err := p.Run(env, addr, 16, 0); !errors.Is(err, vm.ErrMemory) {
		t.Fatalf("got %v, want ErrMemory", err)
	}
}

func TestNoAllocationPerRun(t *testing.T) {
	prog := []isa.Instruction{mov(isa.R0, 0), mov(isa.R1, 1000),
		alu(isa.ALUAdd, isa.R0, isa.R1),
		{Op: isa.ClassALU64 | isa.ALUSub | isa.SrcK, Dst: isa.R1, Imm: 1},
		{Op: isa.ClassJMP | isa.JumpNE | isa.SrcK, Dst: isa.R1, Off: -3},
		exit}
	p, err := New(prog, nil)
	if err != nil {
		t.Fatal(err)
	}
	env, _ := testEnv(t, false, 0)
	allocs := testing.AllocsPerRun(10, func() { p.Run(env, 0, 0, 0) })
	if allocs != 0 {
		t.Fatalf("%v allocations per run, want 0", allocs)
	}
}

func TestCancel(t *testing.T) {
	// An endless loop stops with the context's error.
	p, err := New([]isa.Instruction{{Op: isa.OpJA, Off: -1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	env, _ := testEnv(t, true, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	env.Context = ctx
	start := time.Now()
	_, err = p.Run(env, 0, 0, 0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("stopped after %v", d)
	}
}
