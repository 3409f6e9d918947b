package verifier_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/verifier"
)

// Fragments of the tail call cases: tailR9 tail-calls slot 0 of map 1
// with the context in r9; pktR6 loads data into r6 and data_end into r7
// and checks 8 bytes (out of range: goto out).
const (
	tailR9 = "r1 = r9\nr2 = map[fd:1] ll\nr3 = 0\ncall bpf_tail_call#12\n"
	pktR6  = "r6 = *(u32 *)(r1 +0)\nr7 = *(u32 *)(r1 +4)\nr2 = r6\nr2 += 8\nif r2 > r7 goto out\n"
)

// TestSelftestFramePointers covers pointers into a function's stack that
// could outlive the function: spilled into a caller's frame (by callees
// and callbacks, at every depth), returned in R0, stored as bytes
// (variable offsets, atomics, map values), which leaves a scalar.
func TestSelftestFramePointers(t *testing.T) {
	const spillErr = "cannot spill pointers to stack into stack frame of the caller"
	arr := []maps.Spec{arrayMap}
	// cbLoop calls cb through bpf_loop with r3 = fp-8 of the caller as
	// its context; cbEach through bpf_for_each_map_elem over map 0.
	const (
		cbLoop = "*(u64 *)(r10 -8) = 0\nr1 = 1\nr2 = subprog[cb] ll\nr3 = r10\nr3 += -8\nr4 = 0\ncall bpf_loop#181\nr0 = 0\nexit\n"
		cbEach = "*(u64 *)(r10 -8) = 0\nr1 = map[fd:0] ll\nr2 = subprog[cb] ll\nr3 = r10\nr3 += -8\nr4 = 0\ncall bpf_for_each_map_elem#164\nr0 = 0\nexit\n"
	)
	runCases(t, []vcase{
		// The shape: the caller dereferences the callee's frame.
		{name: "callee fp into caller", asm: "r1 = r10\nr1 += -8\ncall f\nr0 = *(u64 *)(r10 -8)\nr0 = *(u64 *)(r0 +0)\nexit\nf: r2 = r10\nr2 += -8\n*(u64 *)(r1 +0) = r2\nr0 = 0\nexit", err: spillErr, kmsg: true},
		{name: "callee fp into caller not read", asm: "r1 = r10\nr1 += -8\ncall f\nr0 = 0\nexit\nf: r2 = r10\n*(u64 *)(r1 +0) = r2\nr0 = 0\nexit", err: spillErr, kmsg: true},
		{name: "caller fp back into caller", asm: "r1 = r10\nr1 += -8\ncall f\nr0 = 0\nexit\nf: *(u64 *)(r1 +0) = r1\nr0 = 0\nexit", err: spillErr, kmsg: true},
		{name: "caller fp into caller other slot", asm: "r1 = r10\nr1 += -16\ncall f\nr0 = 0\nexit\nf: r2 = r1\nr2 += 8\n*(u64 *)(r1 +0) = r2\nr0 = 0\nexit", err: spillErr, kmsg: true},
		{name: "frame 2 fp into frame 0", asm: "r1 = r10\nr1 += -8\ncall f\nr0 = 0\nexit\nf: call g\nr0 = 0\nexit\ng: r2 = r10\nr2 += -16\n*(u64 *)(r1 +0) = r2\nr0 = 0\nexit", err: spillErr, kmsg: true},
		{name: "frame 2 fp into frame 1", asm: "call f\nr0 = 0\nexit\nf: r1 = r10\nr1 += -8\ncall g\nr0 = *(u64 *)(r10 -8)\nr0 = 0\nexit\ng: r2 = r10\nr2 += -8\n*(u64 *)(r1 +0) = r2\nr0 = 0\nexit", err: spillErr, kmsg: true},
		{name: "frame 1 fp into frame 0 from frame 2", asm: "r1 = r10\nr1 += -8\ncall f\nr0 = 0\nexit\nf: r2 = r10\nr2 += -8\ncall g\nr0 = 0\nexit\ng: *(u64 *)(r1 +0) = r2\nr0 = 0\nexit", err: spillErr, kmsg: true},
		{name: "narrow spill into caller", asm: "r1 = r10\nr1 += -8\ncall f\nr0 = 0\nexit\nf: r2 = r10\n*(u32 *)(r1 +0) = r2\nr0 = 0\nexit", err: "invalid size of register spill", kmsg: true},
		// A frame's own stack keeps any stack pointer.
		{name: "callee fp into own stack", asm: "call f\nr0 = 0\nexit\nf: *(u64 *)(r10 -16) = 5\nr2 = r10\nr2 += -16\n*(u64 *)(r10 -8) = r2\nr3 = *(u64 *)(r10 -8)\nr0 = *(u64 *)(r3 +0)\nexit"},
		{name: "caller fp into callee stack", asm: "*(u64 *)(r10 -8) = 5\nr1 = r10\nr1 += -8\ncall f\nexit\nf: *(u64 *)(r10 -8) = r1\nr3 = *(u64 *)(r10 -8)\nr0 = *(u64 *)(r3 +0)\nexit"},
		{name: "caller keeps its own fp", asm: "*(u64 *)(r10 -16) = 5\nr1 = r10\nr1 += -16\n*(u64 *)(r10 -8) = r1\ncall f\nr1 = *(u64 *)(r10 -8)\nr0 = *(u64 *)(r1 +0)\nexit\nf: r0 = 0\nexit"},
		{name: "ctx into caller stack", asm: "r2 = r1\nr1 = r10\nr1 += -8\ncall f\nr1 = *(u64 *)(r10 -8)\nr0 = *(u32 *)(r1 +12)\nexit\nf: *(u64 *)(r1 +0) = r2\nr0 = 0\nexit"},
		// Callbacks write into their caller's stack through the context.
		{name: "bpf_loop cb fp into caller", asm: cbLoop + "cb: r3 = r10\nr3 += -8\n*(u64 *)(r2 +0) = r3\nr0 = 0\nexit", err: spillErr, kmsg: true},
		{name: "bpf_loop cb ctx into caller", asm: cbLoop + "cb: *(u64 *)(r2 +0) = r2\nr0 = 0\nexit", err: spillErr, kmsg: true},
		{name: "bpf_loop cb scalar into caller", asm: cbLoop + "cb: *(u64 *)(r2 +0) = r1\nr0 = 0\nexit"},
		{name: "for_each cb fp into caller", maps: arr, asm: cbEach + "cb: r1 = r10\nr1 += -8\n*(u64 *)(r4 +0) = r1\nr0 = 0\nexit", err: spillErr, kmsg: true},
		{name: "for_each cb value into caller", maps: arr, asm: cbEach + "cb: *(u64 *)(r4 +0) = r3\nr0 = 0\nexit"},
		{name: "bpf_loop cb subprog fp into caller", asm: cbLoop + "cb: r1 = r2\ncall f\nr0 = 0\nexit\nf: r2 = r10\nr2 += -8\n*(u64 *)(r1 +0) = r2\nr0 = 0\nexit", err: spillErr, kmsg: true},
		// Written as bytes, a stack pointer is a scalar to whoever reads it.
		{name: "var-offset store into caller", asm: "r1 = r10\nr1 += -16\ncall f\nr0 = 0\nexit\nf: r0 = *(u32 *)(r1 +0)\nr0 &= 8\nr1 += r0\nr2 = r10\n*(u64 *)(r1 +0) = r2\nr0 = 0\nexit"},
		{name: "var-offset store into caller deref", asm: "r1 = r10\nr1 += -16\ncall f\nr0 = *(u64 *)(r10 -16)\nr0 = *(u64 *)(r0 +0)\nexit\nf: r0 = *(u32 *)(r1 +0)\nr0 &= 8\nr1 += r0\nr2 = r10\n*(u64 *)(r1 +0) = r2\nr0 = 0\nexit", err: "R0 invalid mem access 'scalar'", kmsg: true},
		{name: "atomic xchg into caller deref", asm: "*(u64 *)(r10 -8) = 0\nr1 = r10\nr1 += -8\ncall f\nr0 = *(u64 *)(r10 -8)\nr0 = *(u64 *)(r0 +0)\nexit\nf: r2 = r10\nr2 = atomic64_xchg((u64 *)(r1 +0), r2)\nr0 = 0\nexit", err: "R0 invalid mem access 'scalar'", kmsg: true},
		{name: "callee fp into map value deref", maps: arr, asm: "call f\n" + lookup4 + "if r0 == 0 goto out\nr1 = *(u64 *)(r0 +0)\nr0 = *(u64 *)(r1 +0)\nout: r0 = 0\nexit\nf: " + lookup4 + "if r0 == 0 goto o2\nr1 = r10\n*(u64 *)(r0 +0) = r1\no2: r0 = 0\nexit", err: "R1 invalid mem access 'scalar'", kmsg: true},
		{name: "callee fp into map value", maps: arr, asm: "call f\nr0 = 0\nexit\nf: " + lookup4 + "if r0 == 0 goto o2\nr1 = r10\n*(u64 *)(r0 +0) = r1\no2: r0 = 0\nexit"},
		{name: "fp into map value unpriv", unpriv: true, maps: arr, asm: lookup4 + "if r0 == 0 goto o\nr1 = r10\n*(u64 *)(r0 +0) = r1\no: r0 = 0\nexit", err: "R1 leaks addr into map"},
		// Returned in R0.
		{name: "return own fp", asm: "call f\nr0 = 0\nexit\nf: r0 = r10\nexit", err: "cannot return stack pointer to the caller", kmsg: true},
		{name: "return own fp 2 deep", asm: "call f\nr0 = 0\nexit\nf: call g\nr0 = 0\nexit\ng: r0 = r10\nr0 += -8\nexit", err: "cannot return stack pointer to the caller", kmsg: true},
		{name: "return caller fp 2 deep", asm: "r1 = r10\nr1 += -8\ncall f\nr0 = 0\nexit\nf: call g\nr0 = 0\nexit\ng: r0 = r1\nexit", err: "cannot return stack pointer to the caller", kmsg: true},
		{name: "bpf_loop cb returns fp", asm: cbLoop + "cb: r0 = r10\nexit", err: "cannot return stack pointer to the caller", kmsg: true},
	})
}

// TestVerifyPanicIsInternalError checks that a panic inside the verifier
// becomes an *InternalError naming the instruction, which is no rejection.
func TestVerifyPanicIsInternalError(t *testing.T) {
	insns, err := isa.Assemble("r0 = 0\nr1 = 1\nr0 += r1\nexit")
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int{0, 2, 3} {
		t.Run(fmt.Sprint(at), func(t *testing.T) {
			_, err := verifier.VerifyHook(insns, verifier.Options{Type: progtype.XDP}, func(pc int) {
				if pc == at {
					panic("forced")
				}
			})
			var ie *verifier.InternalError
			switch {
			case !errors.As(err, &ie):
				t.Fatalf("error %v is no *InternalError", err)
			case !errors.Is(err, verifier.ErrInternal):
				t.Errorf("error %v does not wrap ErrInternal", err)
			case errors.Is(err, verifier.ErrRejected):
				t.Errorf("error %v wraps ErrRejected", err)
			case ie.Insn != at || ie.Panic != "forced" || len(ie.Stack) == 0:
				t.Errorf("error %+v, want insn %d, the panic's value and a stack", ie, at)
			}
		})
	}
}

// TestSelftestTailCallFrames covers bpf_tail_call from subprograms: the
// target returns to the subprogram's caller with its own R0 after possibly
// changing the packet, so the caller sees R0 unknown and its packet
// pointers invalid; callbacks, references and the stack below a subprogram
// that tail-calls.
func TestSelftestTailCallFrames(t *testing.T) {
	pa := []maps.Spec{arrayMap, progArray}
	rb := []maps.Spec{arrayMap, progArray, ringbuf}
	const (
		r0Scalar = "R0 invalid mem access 'scalar'"
		r6Scalar = "R6 invalid mem access 'scalar'"
		// derefR0 dereferences the call's R0 unless it is 0.
		derefR0 = "if r0 == 0 goto out\nr0 = *(u64 *)(r0 +0)\nout: r0 = 0\nexit\n"
		// loopCtx calls cb through bpf_loop with the context spilled at
		// fp-8 as the callback's context.
		loopCtx = "*(u64 *)(r10 -8) = r1\nr1 = 1\nr2 = subprog[cb] ll\nr3 = r10\nr3 += -8\nr4 = 0\ncall bpf_loop#181\n"
	)
	runCases(t, []vcase{
		// The shape: a map value pointer kept across the tail call
		// is what the subprogram returns, unless the target runs.
		{name: "map value across tail call", maps: pa, asm: "call f\n*(u64 *)(r0 +0) = 1\nr0 = 0\nexit\nf: r9 = r1\n" + lookup4 + "if r0 == 0 goto o\nr6 = r0\n" + tailR9 + "r0 = r6\nexit\no: r0 = 0\nexit", err: r0Scalar, kmsg: true},
		{name: "map value across tail call null checked", maps: pa, asm: "call f\nif r0 == 0 goto o\n*(u64 *)(r0 +0) = 1\no: r0 = 0\nexit\nf: r9 = r1\n" + lookup4 + "if r0 == 0 goto o2\nr6 = r0\n" + tailR9 + "r0 = r6\nexit\no2: r0 = 0\nexit", err: r0Scalar, kmsg: true},
		{name: "constant after tail call", maps: pa, asm: "call f\nr1 = r0\nr0 = 0\nif r1 == 3 goto o\nr0 = *(u64 *)(r0 +0)\no: exit\nf: r9 = r1\n" + tailR9 + "r0 = 3\nexit", err: r0Scalar, kmsg: true},
		{name: "range after tail call", maps: pa, asm: "r9 = r1\n" + lookup4 + "if r0 == 0 goto out\nr6 = r0\nr1 = r9\ncall f\nr6 += r0\nr0 = *(u8 *)(r6 +0)\nout: r0 = 0\nexit\nf: r9 = r1\n" + tailR9 + "r0 = 0\nexit", err: "math between map_value pointer and register with unbounded min value is not allowed", kmsg: true},
		{name: "tail call two deep returned", maps: pa, asm: "call f\n" + derefR0 + "f: call g\nexit\ng: r9 = r1\n" + tailR9 + "r0 = 0\nexit", err: r0Scalar, kmsg: true},
		{name: "tail call two deep not returned", maps: pa, asm: "call f\n" + derefR0 + "f: call g\nr0 = 0\nexit\ng: r9 = r1\n" + tailR9 + "r0 = 0\nexit"},
		{name: "tail call never reached", maps: pa, asm: "r9 = r1\nr1 = 0\ncall f\n" + derefR0 + "f: if r1 == 0 goto z\n" + tailR9 + "z: r0 = 0\nexit"},
		{name: "tail call in main", maps: pa, asm: "r9 = r1\n" + tailR9 + "r0 = 0\nexit"},
		{name: "callee-saved kept", maps: pa, asm: "*(u64 *)(r10 -8) = 0\nr6 = r10\ncall f\nr0 = *(u64 *)(r6 -8)\nexit\nf: r9 = r1\n" + tailR9 + "r0 = 0\nexit"},
		// Packet pointers of the callers are invalid after the target ran.
		{name: "pkt after tail call", maps: pa, asm: "r9 = r1\n" + pktR6 + "r1 = r9\ncall f\nr0 = *(u8 *)(r6 +0)\nout: r0 = 0\nexit\nf: r9 = r1\n" + tailR9 + "r0 = 0\nexit", err: r6Scalar, kmsg: true},
		{name: "pkt after tail call two deep", maps: pa, asm: "r9 = r1\n" + pktR6 + "r1 = r9\ncall f\nr0 = *(u8 *)(r6 +0)\nout: r0 = 0\nexit\nf: call g\nr0 = 0\nexit\ng: r9 = r1\n" + tailR9 + "r0 = 0\nexit", err: r6Scalar, kmsg: true},
		{name: "pkt spilled after tail call", maps: pa, asm: "r9 = r1\n" + pktR6 + "*(u64 *)(r10 -8) = r6\nr1 = r9\ncall f\nr6 = *(u64 *)(r10 -8)\nr0 = *(u8 *)(r6 +0)\nout: r0 = 0\nexit\nf: r9 = r1\n" + tailR9 + "r0 = 0\nexit", err: r6Scalar, kmsg: true},
		{name: "pkt in callee after failed tail call", maps: pa, asm: "r9 = r1\n" + pktR6 + "r1 = r6\nr2 = r9\ncall f\nout: r0 = 0\nexit\nf: r8 = r1\nr9 = r2\n" + tailR9 + "r0 = *(u8 *)(r8 +0)\nr0 = 0\nexit"},
		{name: "pkt after tail call in main", maps: pa, asm: "r9 = r1\n" + pktR6 + tailR9 + "r0 = *(u8 *)(r6 +0)\nout: r0 = 0\nexit"},
		{name: "pkt reloaded after tail call", maps: pa, asm: "r9 = r1\n" + pktR6 + "r1 = r9\ncall f\n" + "r1 = r9\n" + pktR6 + "r0 = *(u8 *)(r6 +0)\nout: r0 = 0\nexit\nf: r9 = r1\n" + tailR9 + "r0 = 0\nexit"},
		// Callbacks: the target's R0 would be the callback's result.
		{name: "tail call in bpf_loop callback", maps: pa, asm: loopCtx + "r0 = 0\nexit\ncb: r9 = *(u64 *)(r2 +0)\n" + tailR9 + "r0 = 0\nexit", err: "tail call from a callback"},
		{name: "tail call in callback's subprog", maps: pa, asm: loopCtx + "r0 = 0\nexit\ncb: r1 = *(u64 *)(r2 +0)\ncall f\nr0 = 0\nexit\nf: r9 = r1\n" + tailR9 + "r0 = 0\nexit", err: "cannot tail call within callback", kmsg: true},
		{name: "tail call in callback's subprog returned", maps: pa, asm: loopCtx + "r0 = 0\nexit\ncb: r1 = *(u64 *)(r2 +0)\ncall f\nexit\nf: r9 = r1\n" + tailR9 + "r0 = 0\nexit", err: "At callback return the register R0 has"},
		{name: "tail call in callback's subprog masked", maps: pa, asm: loopCtx + "r0 = 0\nexit\ncb: r1 = *(u64 *)(r2 +0)\ncall f\nr0 &= 1\nexit\nf: r9 = r1\n" + tailR9 + "r0 = 0\nexit", err: "cannot tail call within callback", kmsg: true},
		// The kernel's tailcall_callback_2: a tail call elsewhere does not
		// taint a callback that reaches none.
		{name: "tail call beside a callback", maps: pa, asm: "r6 = r1\ncall f\nr1 = r6\n" + loopCtx + "r0 = 0\nexit\ncb: r0 = 0\nexit\nf: r9 = r1\n" + tailR9 + "r0 = 0\nexit"},
		{name: "tail call in for_each callback's subprog", maps: pa, asm: "*(u64 *)(r10 -8) = r1\nr1 = map[fd:0] ll\nr2 = subprog[cb] ll\nr3 = r10\nr3 += -8\nr4 = 0\ncall bpf_for_each_map_elem#164\nr0 = 0\nexit\ncb: r1 = *(u64 *)(r4 +0)\ncall f\nr0 = 0\nexit\nf: r9 = r1\n" + tailR9 + "r0 = 0\nexit", err: "cannot tail call within callback", kmsg: true},
		{name: "tail call in for_each callback", maps: pa, asm: "*(u64 *)(r10 -8) = r1\nr1 = map[fd:0] ll\nr2 = subprog[cb] ll\nr3 = r10\nr3 += -8\nr4 = 0\ncall bpf_for_each_map_elem#164\nr0 = 0\nexit\ncb: r9 = *(u64 *)(r4 +0)\n" + tailR9 + "r0 = 0\nexit", err: "tail call from a callback"},
		{name: "pkt after callback's tail call", maps: pa, asm: "r9 = r1\n" + pktR6 + "*(u64 *)(r10 -8) = r9\nr1 = 1\nr2 = subprog[cb] ll\nr3 = r10\nr3 += -8\nr4 = 0\ncall bpf_loop#181\nr0 = *(u8 *)(r6 +0)\nout: r0 = 0\nexit\ncb: r1 = *(u64 *)(r2 +0)\ncall f\nr0 = 0\nexit\nf: r9 = r1\n" + tailR9 + "r0 = 0\nexit", err: r6Scalar, kmsg: true},
		// References: only a tail call from the entry function ends the
		// program with them held.
		{name: "reference held in main", maps: rb, asm: "r9 = r1\nr1 = map[fd:2] ll\nr2 = 8\nr3 = 0\ncall bpf_ringbuf_reserve#131\nif r0 == 0 goto o\nr6 = r0\n" + tailR9 + "r1 = r6\nr2 = 0\ncall bpf_ringbuf_discard#133\no: r0 = 0\nexit", err: "tail_call would lead to reference leak", kmsg: true},
		{name: "reference held by the caller", maps: rb, asm: "r9 = r1\nr1 = map[fd:2] ll\nr2 = 8\nr3 = 0\ncall bpf_ringbuf_reserve#131\nif r0 == 0 goto o\nr6 = r0\nr1 = r9\ncall f\nr1 = r6\nr2 = 0\ncall bpf_ringbuf_discard#133\no: r0 = 0\nexit\nf: r9 = r1\n" + tailR9 + "r0 = 0\nexit"},
		// The stack below a subprogram that tail-calls.
		{name: "stack below tail call 248", maps: pa, asm: "*(u64 *)(r10 -240) = 0\ncall f\nr0 = 0\nexit\nf: r9 = r1\n" + tailR9 + "r0 = 0\nexit"},
		{name: "stack below tail call 256", maps: pa, asm: "*(u64 *)(r10 -256) = 0\ncall f\nr0 = 0\nexit\nf: r9 = r1\n" + tailR9 + "r0 = 0\nexit", err: "tail_calls are not allowed when call stack of previous frames is 256 bytes. Too large", kmsg: true},
		{name: "stack below tail call 264", maps: pa, asm: "*(u64 *)(r10 -264) = 0\ncall f\nr0 = 0\nexit\nf: r9 = r1\n" + tailR9 + "r0 = 0\nexit", err: "tail_calls are not allowed when call stack of previous frames is 272 bytes. Too large", kmsg: true},
		{name: "stack below tail call two frames", maps: pa, asm: "*(u64 *)(r10 -128) = 0\ncall f\nr0 = 0\nexit\nf: *(u64 *)(r10 -128) = 0\ncall g\nr0 = 0\nexit\ng: r9 = r1\n" + tailR9 + "r0 = 0\nexit", err: "tail_calls are not allowed when call stack of previous frames is 256 bytes. Too large", kmsg: true},
		{name: "stack of the tail-calling subprog", maps: pa, asm: "*(u64 *)(r10 -128) = 0\ncall f\nr0 = 0\nexit\nf: *(u64 *)(r10 -256) = 0\nr9 = r1\n" + tailR9 + "r0 = 0\nexit"},
		{name: "stack below unreached tail call", maps: pa, asm: "*(u64 *)(r10 -256) = 0\nr1 = 0\ncall f\nr0 = 0\nexit\nf: if r1 == 0 goto z\n" + tailR9 + "z: r0 = 0\nexit", err: "tail_calls are not allowed when call stack of previous frames is 256 bytes. Too large", kmsg: true},
		// A callback counts as a call from the function taking its address.
		{name: "callback stack combined", asm: "*(u64 *)(r10 -512) = 0\nr1 = 1\nr2 = subprog[cb] ll\nr3 = 0\nr4 = 0\ncall bpf_loop#181\nr0 = 0\nexit\ncb: *(u64 *)(r10 -8) = 0\nr0 = 0\nexit", err: "combined stack size of 2 calls is 528. Too large", kmsg: true},
		{name: "callback stack combined at limit", asm: "*(u64 *)(r10 -256) = 0\nr1 = 1\nr2 = subprog[cb] ll\nr3 = 0\nr4 = 0\ncall bpf_loop#181\nr0 = 0\nexit\ncb: *(u64 *)(r10 -256) = 0\nr0 = 0\nexit"},
	})
}

// TestSelftestMetaRanges covers the comparisons that grant a range to
// pkt_meta: only against the packet data pointer as loaded, in every
// operand order and operator; 32-bit compares, pkt_end, moved and variable
// data pointers grant nothing.
func TestSelftestMetaRanges(t *testing.T) {
	// r2 = data_meta, r3 = data, r4 = meta + 8 (r4 checked against r3).
	const pre = "r2 = *(u32 *)(r1 +8)\nr3 = *(u32 *)(r1 +0)\nr4 = r2\nr4 += 8\n"
	meta := func(name, body, err string) vcase {
		c := vcase{name: name, asm: pre + body + "\nout: r0 = 0\nexit", err: err}
		c.kmsg = err != ""
		return c
	}
	const bad = "invalid access to packet, off=0 size=1, R2(id=0,off=0,r=0)"
	var cases []vcase
	// Each orientation and operator: the good branch reads the last byte
	// of its range (8 bytes, 9 for a strict bound); against a moved data
	// pointer nothing is granted.
	forms := []struct{ name, cmp, ok string }{
		{"meta > data", "if r4 > r3 goto out\n", "r0 = *(u64 *)(r2 +0)"},
		{"meta >= data", "if r4 >= r3 goto out\n", "r0 = *(u8 *)(r2 +8)"},
		{"meta < data", "if r4 < r3 goto ok\ngoto out\nok: ", "r0 = *(u8 *)(r2 +8)"},
		{"meta <= data", "if r4 <= r3 goto ok\ngoto out\nok: ", "r0 = *(u64 *)(r2 +0)"},
		{"data < meta", "if r3 < r4 goto out\n", "r0 = *(u64 *)(r2 +0)"},
		{"data <= meta", "if r3 <= r4 goto out\n", "r0 = *(u8 *)(r2 +8)"},
		{"data > meta", "if r3 > r4 goto ok\ngoto out\nok: ", "r0 = *(u8 *)(r2 +8)"},
		{"data >= meta", "if r3 >= r4 goto ok\ngoto out\nok: ", "r0 = *(u64 *)(r2 +0)"},
	}
	for _, f := range forms {
		cases = append(cases,
			meta(f.name, f.cmp+f.ok, ""),
			meta(f.name+" data+64k", "r3 += 65535\n"+f.cmp+"r0 = *(u8 *)(r2 +0)", bad),
			meta(f.name+" data+1", "r3 += 1\n"+f.cmp+"r0 = *(u8 *)(r2 +0)", bad),
			meta(f.name+" data-8", "r3 += -8\n"+f.cmp+"r0 = *(u8 *)(r2 +0)", bad),
			meta(f.name+" data+var", "r5 = *(u32 *)(r1 +12)\nr5 &= 0xff\nr3 += r5\n"+f.cmp+"r0 = *(u8 *)(r2 +0)", bad),
		)
	}
	cases = append(cases,
		// The shape: meta + N <= data' with data' far ahead,
		// then a write 64 KiB past data_meta.
		meta("issue write past meta", "r3 += 0x7fff\nr3 += 0x7fff\nr4 = r2\nr4 += 0xfffe\nif r4 > r3 goto out\n*(u8 *)(r2 +0) = 1", bad),
		// Moved back to where it was: untouched again.
		meta("data moved back", "r3 += 8\nr3 += -8\nif r4 > r3 goto out\nr0 = *(u64 *)(r2 +0)", ""),
		meta("data copied", "r5 = r3\nif r4 > r5 goto out\nr0 = *(u64 *)(r2 +0)", ""),
		meta("data var add then sub", "r5 = *(u32 *)(r1 +12)\nr5 &= 0xff\nr3 += r5\nr3 -= r5\nif r4 > r3 goto out\nr0 = *(u8 *)(r2 +0)", bad),
		// Ranges already proven for data do not make it untouched.
		meta("data checked then moved", "r5 = *(u32 *)(r1 +4)\nr6 = r3\nr6 += 16\nif r6 > r5 goto out\nr3 += 8\nif r4 > r3 goto out\nr0 = *(u8 *)(r2 +0)", bad),
		// Variable meta against untouched data.
		meta("variable meta", "r5 = *(u32 *)(r1 +12)\nr5 &= 0xff\nr2 += r5\nr4 = r2\nr4 += 8\nif r4 > r3 goto out\nr0 = *(u64 *)(r2 +0)", ""),
		meta("variable meta past", "r5 = *(u32 *)(r1 +12)\nr5 &= 0xff\nr2 += r5\nr4 = r2\nr4 += 8\nif r4 > r3 goto out\nr0 = *(u8 *)(r2 +8)", "invalid access to packet, off=8 size=1, R2(id=1,off=8,r=8)"),
		// Nothing else grants a meta range.
		meta("meta vs end", "r5 = *(u32 *)(r1 +4)\nif r4 > r5 goto out\nr0 = *(u8 *)(r2 +0)", bad),
		meta("meta 32-bit", "if w4 > w3 goto out\nr0 = *(u8 *)(r2 +0)", bad),
		meta("meta signed", "if r4 s> r3 goto out\nr0 = *(u8 *)(r2 +0)", bad),
		meta("meta == data", "if r4 == r3 goto ok\ngoto out\nok: r0 = *(u8 *)(r2 +0)", bad),
		meta("meta vs meta", "if r4 > r2 goto out\nr0 = *(u8 *)(r2 +0)", bad),
		// pkt against a moved pkt_end is impossible: pkt_end takes no
		// arithmetic.
		meta("pkt_end moved", "r5 = *(u32 *)(r1 +4)\nr5 += 8\nr0 = 0", "R5 pointer arithmetic on pkt_end prohibited"),
	)
	runCases(t, cases)
}

// TestSelftestLdAbsFrames covers LD_ABS and LD_IND in subprograms: a load
// outside the packet returns 0 to the caller, which must allow for it; in
// a callback it would return to the helper, which the kernel refuses.
func TestSelftestLdAbsFrames(t *testing.T) {
	arr := []maps.Spec{arrayMap}
	tc := ebpf.SchedCLS
	// f looks up map 0 and keeps the value across LD_ABS, returning it.
	const keep = "f: r6 = r1\n" + lookup4 + "if r0 == 0 goto z\nr7 = r0\nr0 = *(u8 *)skb[0]\nr0 = r7\nexit\nz: r0 = 0\nexit"
	runCases(t, []vcase{
		{name: "value kept across LD_ABS null-checked", typ: tc, maps: arr, asm: "call f\nif r0 == 0 goto o\n*(u64 *)(r0 +0) = 1\no: r0 = 0\nexit\n" + keep},
		{name: "value kept across LD_ABS unchecked", typ: tc, maps: arr, asm: "call f\n*(u64 *)(r0 +0) = 1\nr0 = 0\nexit\n" + keep, err: "R0 invalid mem access 'scalar'", kmsg: true},
		{name: "constant after LD_ABS", typ: tc, asm: "call f\nif r0 == 5 goto o\nr0 = *(u64 *)(r0 +0)\no: r0 = 0\nexit\nf: r6 = r1\nr0 = *(u8 *)skb[0]\nr0 = 5\nexit", err: "R0 invalid mem access 'scalar'", kmsg: true},
		{name: "0 or the constant after LD_ABS", typ: tc, asm: "call f\nif r0 == 5 goto o\nif r0 == 0 goto o\nr0 = *(u64 *)(r0 +0)\no: r0 = 0\nexit\nf: r6 = r1\nr0 = *(u8 *)skb[0]\nr0 = 5\nexit"},
		{name: "LD_IND two deep", typ: tc, asm: "call f\nif r0 == 5 goto o\nr0 = *(u64 *)(r0 +0)\no: r0 = 0\nexit\nf: call g\nexit\ng: r6 = r1\nr1 = 0\nr0 = *(u16 *)skb[r1 + 0]\nr0 = 5\nexit", err: "R0 invalid mem access 'scalar'", kmsg: true},
		{name: "LD_IND two deep not returned", typ: tc, asm: "call f\nif r0 == 5 goto o\nr0 = *(u64 *)(r0 +0)\no: r0 = 0\nexit\nf: call g\nr0 = 5\nexit\ng: r6 = r1\nr1 = 0\nr0 = *(u16 *)skb[r1 + 0]\nr0 = 5\nexit"},
		{name: "socket filter LD_ABS in subprog", typ: ebpf.SocketFilter, asm: "call f\nr0 = 0\nexit\nf: r6 = r1\nr0 = *(u32 *)skb[0]\nexit"},
		{name: "LD_ABS in callback", typ: tc, asm: "*(u64 *)(r10 -8) = r1\nr1 = 1\nr2 = subprog[cb] ll\nr3 = r10\nr3 += -8\nr4 = 0\ncall bpf_loop#181\nr0 = 0\nexit\ncb: r6 = *(u64 *)(r2 +0)\nr0 = *(u8 *)skb[0]\nr0 = 0\nexit", err: "BPF_LD_[ABS|IND] in a callback"},
	})
}

// TestSelftestPktEndMarks covers what the failing side of a comparison
// with pkt_end learns: the pointer is beyond (or at) the end, which decides
// later comparisons of it with pkt_end, in every operand order; copies
// keep the mark, arithmetic and 32-bit compares do not use it.
func TestSelftestPktEndMarks(t *testing.T) {
	// r4 = data + 8. first sends the failing side of a check to far,
	// where second jumps to bad (a bad read) unless it is decided.
	const (
		p8    = xdpPkt + "r4 = r2\nr4 += 8\n"
		dead  = "invalid read from stack R10 off=8 size=8"
		gtFar = "if r4 > r3 goto far\nr0 = 0\nexit\n"
		geFar = "if r4 >= r3 goto far\nr0 = 0\nexit\n"
	)
	c := func(name, first, second, err string) vcase {
		return vcase{name: name, asm: p8 + first + "far: " + second + "goto out\nbad: r0 = *(u64 *)(r10 +8)\nout: r0 = 0\nexit", err: err, kmsg: err != ""}
	}
	runCases(t, []vcase{
		// Beyond: the first check failed with pkt' > pkt_end.
		c("beyond then <=", gtFar, "if r4 <= r3 goto bad\n", ""),
		c("beyond then <", gtFar, "if r4 < r3 goto bad\n", ""),
		c("beyond then >", gtFar, "if r4 > r3 goto out\nr1 = 0\nif r1 == 0 goto bad\n", ""),
		c("beyond then >=", gtFar, "if r4 >= r3 goto out\nr1 = 0\nif r1 == 0 goto bad\n", ""),
		c("beyond then end >= pkt", gtFar, "if r3 >= r4 goto bad\n", ""),
		c("beyond then end > pkt", gtFar, "if r3 > r4 goto bad\n", ""),
		c("beyond by end < pkt", "if r3 < r4 goto far\nr0 = 0\nexit\n", "if r4 <= r3 goto bad\n", ""),
		c("beyond by pkt <= end fall-through", "if r4 <= r3 goto out\n", "if r4 <= r3 goto bad\n", ""),
		c("beyond by end >= pkt fall-through", "if r3 >= r4 goto out\n", "if r4 <= r3 goto bad\n", ""),
		// At: the first check failed with pkt' >= pkt_end.
		c("at then <", geFar, "if r4 < r3 goto bad\n", ""),
		c("at then end > pkt", geFar, "if r3 > r4 goto bad\n", ""),
		c("at then <=", geFar, "if r4 <= r3 goto bad\n", dead),
		c("at then end >= pkt", geFar, "if r3 >= r4 goto bad\n", dead),
		c("at by end <= pkt", "if r3 <= r4 goto far\nr0 = 0\nexit\n", "if r4 < r3 goto bad\n", ""),
		c("at by pkt < end fall-through", "if r4 < r3 goto out\n", "if r4 < r3 goto bad\n", ""),
		c("at by end > pkt fall-through", "if r3 > r4 goto out\n", "if r3 > r4 goto bad\n", ""),
		// The mark is the register's: a copy has it, another pointer not.
		c("copy keeps the mark", gtFar, "r5 = r4\nif r5 <= r3 goto bad\n", ""),
		c("spilled mark", gtFar, "*(u64 *)(r10 -8) = r4\nr5 = *(u64 *)(r10 -8)\nif r5 <= r3 goto bad\n", ""),
		c("other pointer unmarked", gtFar, "r5 = r2\nr5 += 8\nif r5 <= r3 goto bad\n", dead),
		// The kernel keeps the mark through arithmetic (data + 8 - 8 is
		// "beyond" the end, and the branch it takes at run time is never
		// verified); we drop it.
		{name: "arithmetic drops the mark", noKernel: true, asm: c("", gtFar, "r4 += -8\nif r4 <= r3 goto bad\n", "").asm, err: dead},
		c("32-bit compare undecided", gtFar, "if w4 <= w3 goto bad\n", dead),
		c("meta unmarked", "r5 = *(u32 *)(r1 +8)\nr5 += 8\nif r5 > r2 goto far\nr0 = 0\nexit\n", "if r5 <= r2 goto bad\n", dead),
		// The marked pointer has no range left.
		c("beyond pointer not readable", gtFar, "r0 = *(u8 *)(r4 -1)\nr1 = 0\nif r1 == 0 goto bad\n", "R4 offset is outside of the packet"),
	})
}
