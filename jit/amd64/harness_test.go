//go:build amd64 && linux

package amd64

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/bpfvm/bpfvm/interp"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/vm"
)

type testEnv struct {
	env   *vm.Env
	stack *vm.Mem
	data  *vm.Mem
	addr  uint64
	size  int
}

// newEnv returns an environment with a stack and, when size > 0, a
// writable data region (also the packet).
func newEnv(t testing.TB, checked bool, size int) *testEnv {
	t.Helper()
	stack, err := vm.Alloc(vm.MaxFrames * vm.StackSize)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stack.Free() })
	te := &testEnv{stack: stack, size: size}
	te.env = &vm.Env{
		Checked: checked,
		Stack:   vm.Region{Start: stack.Addr(), End: stack.Addr() + vm.MaxFrames*vm.StackSize, Writable: true},
	}
	if size > 0 {
		data, err := vm.Alloc(size)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { data.Free() })
		te.data = data
		te.addr = data.Addr()
		te.env.Regions = []vm.Region{{Start: te.addr, End: te.addr + uint64(size), Writable: true}}
		te.env.Packet = te.env.Regions[0]
	}
	return te
}

func (te *testEnv) dataBytes() []byte {
	if te.data == nil {
		return nil
	}
	return te.data.Bytes()[:te.size]
}

// outcome is what a run leaves behind.
type outcome struct {
	r0    uint64
	err   error
	data  []byte
	stack []byte
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func (o outcome) String() string {
	return fmt.Sprintf("r0=%#x err=%s", o.r0, errString(o.err))
}

// engine runs a program on an environment.
type engine interface {
	Run(env *vm.Env, r1, r2, budget uint64) (uint64, error)
}

// runOn runs e on te starting from the memory contents init (nil: zeros).
func runOn(e engine, te *testEnv, init []byte, r1, r2, budget uint64) outcome {
	st := te.stack.Bytes()
	clear(st)
	if d := te.dataBytes(); d != nil {
		clear(d)
		copy(d, init)
	}
	v, err := e.Run(te.env, r1, r2, budget)
	o := outcome{r0: v, err: err, stack: bytes.Clone(st)}
	if d := te.dataBytes(); d != nil {
		o.data = bytes.Clone(d)
	}
	return o
}

type diffCase struct {
	prog    []isa.Instruction
	helpers interp.HelperFunc
	size    int    // data region
	init    []byte // initial data
	r1, r2  uint64 // 0 r1 means the data address
	budget  uint64
	setup   func(te *testEnv)
	reset   func(te *testEnv) // before each run

	checkedOnly bool
	jit         Options // compile options (Modes is set by the harness)
	// sameErr, when set, decides whether differing errors are equivalent.
	sameErr func(interpErr, jitErr error) bool
}

// diff runs the case on the interpreter and on the JIT, in both memory
// modes, and reports any difference.
func diff(t testing.TB, dc diffCase) (outcome, outcome) {
	t.Helper()
	var io, jo outcome
	for _, checked := range []bool{true, false} {
		io, jo = diffMode(t, dc, checked)
		if t.Failed() || errors.Is(io.err, vm.ErrMemory) || dc.checkedOnly {
			// An access that checked mode rejects would really happen
			// unchecked: memory unsafe.
			break
		}
	}
	return io, jo
}

func diffMode(t testing.TB, dc diffCase, checked bool) (outcome, outcome) {
	t.Helper()
	ip, err := interp.New(dc.prog, dc.helpers)
	if err != nil {
		t.Fatalf("interp: %v", err)
	}
	opts := dc.jit
	opts.Modes = Checked | Unchecked
	jp, err := Compile(dc.prog, dc.helpers, opts)
	if err != nil {
		t.Fatalf("jit: %v", err)
	}
	defer jp.Close()
	te := newEnv(t, checked, dc.size)
	te.env.CPU = 3
	var rng vm.Rand
	if dc.setup != nil {
		dc.setup(te)
	}
	r1 := dc.r1
	if r1 == 0 {
		r1 = te.addr
	}
	if dc.reset != nil {
		dc.reset(te)
	}
	rng.Seed(1, 2)
	te.env.Rand = &rng
	io := runOn(ip, te, dc.init, r1, dc.r2, dc.budget)
	irng := rng
	if dc.reset != nil {
		dc.reset(te)
	}
	rng.Seed(1, 2)
	jo := runOn(jp, te, dc.init, r1, dc.r2, dc.budget)
	if rng != irng {
		t.Errorf("generator state: interp %v, jit %v", irng, rng)
	}
	mode := "unchecked"
	if checked {
		mode = "checked"
	}
	sameErr := errString(io.err) == errString(jo.err) || dc.sameErr != nil && dc.sameErr(io.err, jo.err)
	if io.r0 != jo.r0 || !sameErr {
		t.Errorf("%s: interp %v, jit %v\n%s", mode, io, jo, listing(dc.prog))
		return io, jo
	}
	if !bytes.Equal(io.data, jo.data) {
		t.Errorf("%s: data differs:\ninterp %x\njit    %x\n%s", mode, io.data, jo.data, listing(dc.prog))
	}
	if !bytes.Equal(io.stack, jo.stack) {
		t.Errorf("%s: stack differs\n%s", mode, listing(dc.prog))
	}
	return io, jo
}

func listing(prog []isa.Instruction) string {
	var b bytes.Buffer
	isa.Dump(&b, prog, nil)
	return b.String()
}
