package verifier_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/verifier"
)

// BTF types for global function prototypes.
var (
	btfInt    = &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	btfU64    = &btf.Int{Name: "u64", Size: 8}
	btfXDPMd  = &btf.Struct{Name: "xdp_md", Size: 24}
	btfSkBuff = &btf.Struct{Name: "__sk_buff", Size: 192}
	btfPair   = &btf.Struct{Name: "pair", Size: 8, Members: []btf.Member{{Name: "a", Type: btfInt}, {Name: "b", Type: btfInt, Offset: 32}}}
)

// global returns a global function with a prototype.
func global(name string, ret btf.Type, params ...btf.Type) *btf.Func {
	ps := make([]btf.FuncParam, len(params))
	for i, p := range params {
		ps[i] = btf.FuncParam{Name: string(rune('a' + i)), Type: p}
	}
	return &btf.Func{Name: name, Linkage: btf.GlobalFunc, Type: &btf.FuncProto{Return: ret, Params: ps}}
}

// tagged gives a function's parameters decl tags.
func tagged(fn *btf.Func, tags ...[]string) *btf.Func {
	fn.ParamTags = tags
	return fn
}

// TestGlobalFunctions covers global functions as the kernel verifies them
// (btf_prepare_func_args, btf_check_subprog_call, do_check_subprogs): once,
// on their own, with arguments typed from BTF; calls are checked against
// the prototype and return an unknown scalar.
func TestGlobalFunctions(t *testing.T) {
	ptrInt := &btf.Pointer{Target: btfInt}
	ptrPair := &btf.Pointer{Target: btfPair}
	ptrXDP := &btf.Pointer{Target: btfXDPMd}
	ptrSkb := &btf.Pointer{Target: btfSkBuff}
	voidPtr := &btf.Pointer{Target: (*btf.Void)(nil)}
	scalarG := map[int]*btf.Func{1: global("g", btfInt, btfU64)}
	ctxG := map[int]*btf.Func{1: global("g", btfInt, ptrXDP)}
	intG := map[int]*btf.Func{1: global("g", btfInt, ptrInt)}
	pairG := map[int]*btf.Func{1: global("g", btfInt, ptrPair)}
	const lookupHash = "*(u64 *)(r10 -8) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -8\ncall bpf_map_lookup_elem#1\n"
	const stackArg = "*(u64 *)(r10 -8) = 0\nr1 = r10\nr1 += -8\ncall g\n"
	tc := ebpf.SchedCLS
	pa := []maps.Spec{arrayMap, progArray}
	runCases(t, []vcase{
		{name: "scalar argument", funcs: scalarG, asm: "r1 = 5\ncall g\nr0 = 0\nexit\ng: r0 = r1\nexit"},
		{name: "scalar argument is unknown inside", funcs: scalarG, asm: "r1 = 0\ncall g\nr0 = 0\nexit\ng: r0 = 0\nif r1 == 0 goto o\nr1 = 0\nr0 = *(u64 *)(r1 +0)\no: exit",
			err: "R1 invalid mem access 'scalar'", kmsg: true},
		{name: "scalar argument given a pointer", funcs: scalarG, asm: "call g\nr0 = 0\nexit\ng: r0 = 0\nexit",
			err: "R1 is not a scalar", kmsg: true},
		{name: "scalar argument not set", funcs: scalarG, asm: "r1 = r10\ncall g\nr0 = 0\nexit\ng: r0 = 0\nexit",
			err: "Caller passes invalid args into func#1 ('g')", kmsg: true},
		{name: "ctx argument", funcs: ctxG, asm: "call g\nexit\ng: r0 = *(u32 *)(r1 +12)\nr0 &= 1\nexit"},
		{name: "ctx argument by skb name in tc", typ: tc, funcs: map[int]*btf.Func{1: global("g", btfInt, ptrSkb)}, asm: "call g\nexit\ng: r0 = *(u32 *)(r1 +0)\nr0 = 0\nexit"},
		{name: "ctx argument given a scalar", funcs: ctxG, asm: "r1 = 0\ncall g\nr0 = 0\nexit\ng: r0 = *(u32 *)(r1 +12)\nexit",
			err: "arg#0 expects pointer to ctx", kmsg: true},
		{name: "ctx argument given a moved ctx", funcs: ctxG, asm: "r1 += 4\ncall g\nr0 = 0\nexit\ng: r0 = 0\nexit",
			err: "dereference of modified ctx ptr R1 off=4 disallowed", kmsg: true},
		{name: "ctx struct of another program type is memory", funcs: map[int]*btf.Func{1: global("g", btfInt, ptrSkb)}, asm: "call g\nr0 = 0\nexit\ng: r0 = 0\nexit",
			err: "R1 type=ctx expected=fp", kmsg: true},
		{name: "arg:ctx on void pointer", funcs: map[int]*btf.Func{1: tagged(global("g", btfInt, voidPtr), []string{"arg:ctx"})}, asm: "call g\nexit\ng: r0 = *(u32 *)(r1 +12)\nr0 = 0\nexit"},
		{name: "int pointer dereferenced unchecked", funcs: intG, asm: stackArg + "r0 = 0\nexit\ng: r0 = *(u32 *)(r1 +0)\nexit",
			err: "R1 invalid mem access 'mem_or_null'", kmsg: true},
		{name: "int pointer checked", funcs: intG, asm: stackArg + "r0 = 0\nexit\ng: r0 = 0\nif r1 == 0 goto o\nr0 = *(u32 *)(r1 +0)\n*(u32 *)(r1 +0) = 7\no: exit"},
		{name: "int pointer past its size", funcs: intG, asm: stackArg + "r0 = 0\nexit\ng: r0 = 0\nif r1 == 0 goto o\nr0 = *(u32 *)(r1 +4)\no: exit",
			err: "invalid access to memory, mem_size=4 off=4 size=4", kmsg: true},
		{name: "struct pointer sized by BTF", funcs: pairG, asm: stackArg + "r0 = 0\nexit\ng: r0 = 0\nif r1 == 0 goto o\nr0 = *(u32 *)(r1 +4)\no: exit"},
		{name: "int pointer given NULL", funcs: intG, asm: "r1 = 0\ncall g\nr0 = 0\nexit\ng: r0 = 0\nexit"},
		{name: "int pointer given uninitialised stack, privileged", funcs: intG, asm: "r1 = r10\nr1 += -8\ncall g\nr0 = 0\nexit\ng: r0 = 0\nexit"},
		{name: "int pointer given a stack pointer with a variable offset", funcs: intG, asm: "r2 = *(u32 *)(r1 +12)\n*(u64 *)(r10 -16) = 0\n*(u64 *)(r10 -8) = 0\nr2 &= 8\nr1 = r10\nr1 += -16\nr1 += r2\ncall g\nr0 = 0\nexit\ng: r0 = 0\nexit"},
		{name: "int pointer given too little stack", funcs: pairG, asm: "*(u32 *)(r10 -4) = 0\nr1 = r10\nr1 += -4\ncall g\nr0 = 0\nexit\ng: r0 = 0\nexit",
			err: "Caller passes invalid args into func#1 ('g')", kmsg: true},
		{name: "int pointer given ctx", funcs: intG, asm: "call g\nr0 = 0\nexit\ng: r0 = 0\nexit",
			err: "R1 type=ctx expected=fp", kmsg: true},
		{name: "int pointer given a map value", funcs: intG, maps: []maps.Spec{arrayMap},
			asm: lookup4 + "r1 = r0\ncall g\nr0 = 0\nexit\ng: r0 = 0\nexit"},
		{name: "arg:nonnull given a map value maybe NULL", funcs: map[int]*btf.Func{1: tagged(global("g", btfInt, ptrInt), []string{"arg:nonnull"})}, maps: []maps.Spec{hashMap},
			asm: lookupHash + "r1 = r0\ncall g\nr0 = 0\nexit\ng: r0 = *(u32 *)(r1 +0)\nexit", err: "arg#0 is expected to be non-NULL", kmsg: true},
		{name: "arg:nonnull dereferenced unchecked", funcs: map[int]*btf.Func{1: tagged(global("g", btfInt, ptrInt), []string{"arg:nonnull"})},
			asm: stackArg + "r0 = 0\nexit\ng: r0 = *(u32 *)(r1 +0)\nexit"},
		{name: "callee writes the caller's stack", funcs: intG,
			asm: stackArg + "r0 = *(u64 *)(r10 -8)\nif r0 == 0 goto o\nr1 = 0\nr0 = *(u64 *)(r1 +0)\no: r0 = 0\nexit\ng: r0 = 0\nexit",
			err: "R1 invalid mem access 'scalar'", kmsg: true},
		{name: "callee never sees the caller's stack", funcs: map[int]*btf.Func{1: global("g", btfInt)},
			asm: "*(u64 *)(r10 -8) = r1\ncall g\nr0 = 0\nexit\ng: r1 = *(u64 *)(r10 -8)\nr0 = *(u32 *)(r1 +0)\nexit", err: "R1 invalid mem access 'scalar'", kmsg: true},
		{name: "R0 after the call is unknown", funcs: map[int]*btf.Func{1: global("g", btfInt)},
			asm: "call g\nif r0 == 0 goto o\nr1 = 0\nr0 = *(u64 *)(r1 +0)\no: r0 = 0\nexit\ng: r0 = 0\nexit", err: "R1 invalid mem access 'scalar'", kmsg: true},
		{name: "R1 clobbered by the call", funcs: scalarG, asm: "r1 = 1\ncall g\nr0 = r1\nexit\ng: r0 = 0\nexit", err: "R1 !read_ok", kmsg: true},
		{name: "callee returns a pointer", funcs: ctxG, asm: "call g\nr0 = 0\nexit\ng: r0 = r1\nexit",
			err: "At subprogram exit the register R0 is not a scalar value (ctx)", kmsg: true},
		{name: "callee returns nothing", funcs: map[int]*btf.Func{1: global("g", btfInt)}, asm: "call g\nr0 = 0\nexit\ng: exit", err: "R0 !read_ok", kmsg: true},
		{name: "void return", funcs: map[int]*btf.Func{1: global("g", (*btf.Void)(nil))}, asm: "call g\nr0 = 0\nexit\ng: r0 = 0\nexit",
			err: "Global function g() doesn't return scalar. Only those are supported.", kmsg: true},
		{name: "pointer return", funcs: map[int]*btf.Func{1: global("g", ptrInt)}, asm: "call g\nr0 = 0\nexit\ng: r0 = 0\nexit",
			err: "Global function g() doesn't return scalar. Only those are supported.", kmsg: true},
		{name: "struct by value", funcs: map[int]*btf.Func{1: global("g", btfInt, btfPair)}, asm: "call g\nr0 = 0\nexit\ng: r0 = 0\nexit",
			err: "Arg#0 type STRUCT in g() is not supported yet.", kmsg: true},
		{name: "six arguments", funcs: map[int]*btf.Func{1: global("g", btfInt, btfU64, btfU64, btfU64, btfU64, btfU64, btfU64)}, asm: "call g\nr0 = 0\nexit\ng: r0 = 0\nexit",
			err: "Global function g() with 6 > 5 args. Buggy compiler.", kmsg: true},
		{name: "void pointer", funcs: map[int]*btf.Func{1: global("g", btfInt, voidPtr)}, asm: "r1 = 0\ncall g\nr0 = 0\nexit\ng: r0 = 0\nexit",
			err: "arg#0 reference type('UNKNOWN ') size cannot be determined: -22", kmsg: true},
		{name: "tag on a scalar", funcs: map[int]*btf.Func{1: tagged(global("g", btfInt, btfU64), []string{"arg:nonnull"})}, asm: "r1 = 0\ncall g\nr0 = 0\nexit\ng: r0 = 0\nexit",
			err: "arg#0 has pointer tag, but is not a pointer type", kmsg: true},
		{name: "unknown tag", funcs: map[int]*btf.Func{1: tagged(global("g", btfInt, ptrInt), []string{"arg:whatever"})}, asm: "r1 = 0\ncall g\nr0 = 0\nexit\ng: r0 = 0\nexit",
			err: "arg#0 has unsupported set of tags", kmsg: true},
		{name: "ctx and nonnull", funcs: map[int]*btf.Func{1: tagged(global("g", btfInt, ptrXDP), []string{"arg:ctx", "arg:nonnull"})}, asm: "call g\nr0 = 0\nexit\ng: r0 = 0\nexit",
			err: "arg#0 has invalid combination of tags", kmsg: true},
		{name: "uncalled global is not verified", funcs: map[int]*btf.Func{1: global("g", btfInt)},
			asm: "r0 = 0\nif r0 == 0 goto o\ncall g\no: exit\ng: r0 = *(u64 *)(r10 -8)\nexit"},
		{name: "global calling global", funcs: map[int]*btf.Func{1: global("g", btfInt, btfU64), 2: global("h", btfInt, ptrInt)},
			asm: "r1 = 1\ncall g\nexit\ng: r1 = 0\ncall h\nexit\nh: r0 = *(u32 *)(r1 +0)\nexit", err: "R1 invalid mem access 'mem_or_null'", kmsg: true},
		{name: "static calling global", funcs: map[int]*btf.Func{2: global("h", btfInt, btfU64)},
			asm: "call f\nexit\nf: r1 = 2\ncall h\nexit\nh: r0 = r1\nr0 &= 1\nexit"},
		{name: "packet pointers survive a global function that keeps the packet", funcs: map[int]*btf.Func{1: global("g", btfInt)},
			asm: "r6 = *(u32 *)(r1 +0)\nr7 = *(u32 *)(r1 +4)\nr2 = r6\nr2 += 8\nif r2 > r7 goto out\ncall g\nr0 = *(u8 *)(r6 +0)\nout: r0 = 0\nexit\ng: r0 = 0\nexit"},
		{name: "global function moving the packet invalidates packet pointers", funcs: map[int]*btf.Func{1: global("g", btfInt, ptrXDP)},
			asm: "r6 = *(u32 *)(r1 +0)\nr7 = *(u32 *)(r1 +4)\nr2 = r6\nr2 += 8\nif r2 > r7 goto out\ncall g\nr0 = *(u8 *)(r6 +0)\nout: r0 = 0\nexit\n" +
				"g: r2 = 0\ncall bpf_xdp_adjust_head#44\nr0 = 0\nexit", err: "R6 invalid mem access 'scalar'", kmsg: true},
		{name: "global function tail-calling invalidates packet pointers", typ: tc, maps: pa, funcs: map[int]*btf.Func{1: global("g", btfInt, ptrSkb)},
			asm: "r6 = *(u32 *)(r1 +76)\nr7 = *(u32 *)(r1 +80)\nr2 = r6\nr2 += 8\nif r2 > r7 goto out\ncall g\nr0 = *(u8 *)(r6 +0)\nout: r0 = 0\nexit\n" +
				"g: r2 = map[fd:1] ll\nr3 = 0\ncall bpf_tail_call#12\nr0 = 0\nexit", err: "R6 invalid mem access 'scalar'", kmsg: true},
		{name: "global function calling a packet mover through a static one", funcs: map[int]*btf.Func{1: global("g", btfInt, ptrXDP)},
			asm: "r6 = *(u32 *)(r1 +0)\nr7 = *(u32 *)(r1 +4)\nr2 = r6\nr2 += 8\nif r2 > r7 goto out\ncall g\nr0 = *(u8 *)(r6 +0)\nout: r0 = 0\nexit\n" +
				"g: call f\nr0 = 0\nexit\nf: r2 = 0\ncall bpf_xdp_adjust_head#44\nr0 = 0\nexit", err: "R6 invalid mem access 'scalar'", kmsg: true},
		{name: "LD_ABS in a void static function", typ: tc, funcs: map[int]*btf.Func{1: {Name: "f", Linkage: btf.StaticFunc, Type: &btf.FuncProto{Return: (*btf.Void)(nil)}}},
			asm: "r6 = r1\ncall f\nr0 = 0\nexit\nf: r0 = *(u8 *)skb[0]\nexit", err: "LD_ABS is only allowed in functions that return 'int'.", kmsg: true},
		{name: "tail call in a void static function", typ: tc, maps: pa, funcs: map[int]*btf.Func{1: {Name: "f", Linkage: btf.StaticFunc, Type: &btf.FuncProto{Return: (*btf.Void)(nil)}}},
			asm: "call f\nr0 = 0\nexit\nf: r2 = map[fd:1] ll\nr3 = 0\ncall bpf_tail_call#12\nexit", err: "tail_call is only allowed in functions that return 'int'.", kmsg: true},
		{name: "LD_ABS in a subprogram without BTF", typ: tc, noBTF: true,
			asm: "r6 = r1\ncall f\nr0 = 0\nexit\nf: r0 = *(u8 *)skb[0]\nexit", err: "LD_ABS is not allowed in subprogs without BTF", kmsg: true},
		{name: "tail call in a subprogram without BTF", typ: tc, maps: pa, noBTF: true,
			asm: "call f\nr0 = 0\nexit\nf: r2 = map[fd:1] ll\nr3 = 0\ncall bpf_tail_call#12\nexit", err: "tail_call is not allowed in subprogs without BTF", kmsg: true},
		{name: "LD_ABS in a global function", typ: tc, funcs: map[int]*btf.Func{1: global("g", btfInt, ptrSkb)},
			asm: "call g\nr0 = 0\nexit\ng: r6 = r1\nr0 = *(u8 *)skb[0]\nexit"},
		{name: "arg:nullable on memory", funcs: map[int]*btf.Func{1: tagged(global("g", btfInt, ptrInt), []string{"arg:nullable"})}, asm: "r1 = 0\ncall g\nr0 = 0\nexit\ng: r0 = 0\nexit",
			err: "arg#0 has invalid combination of tags", kmsg: true},
		{name: "arg:trusted, BTF-typed pointers not modelled", funcs: map[int]*btf.Func{1: tagged(global("g", btfInt, ptrInt), []string{"arg:trusted"})}, asm: "r1 = 0\ncall g\nr0 = 0\nexit\ng: r0 = 0\nexit",
			err: "arg#0 tag arg:trusted is not supported by bpfvm yet", klog: "Caller passes invalid args into func#1 ('g')"},
		{name: "arg:ctx on another type", funcs: map[int]*btf.Func{1: tagged(global("g", btfInt, ptrInt), []string{"arg:ctx"})}, asm: "call g\nr0 = 0\nexit\ng: r0 = 0\nexit",
			err: "arg#0 should be `struct xdp_md *`", kmsg: true},
		{name: "ctx argument given a packet pointer", funcs: ctxG, asm: "r1 = *(u32 *)(r1 +0)\ncall g\nr0 = 0\nexit\ng: r0 = 0\nexit",
			err: "arg#0 expects pointer to ctx", kmsg: true},
		{name: "int pointer given a non-zero scalar", funcs: intG, asm: "r1 = 8\ncall g\nr0 = 0\nexit\ng: r0 = 0\nexit",
			err: "R1 type=scalar expected=fp", kmsg: true},
		// The kernel (6.18) lets a NULL constant through to an
		// arg:nonnull argument, whose callee then dereferences it
		// unchecked: bpfvm refuses it.
		{name: "arg:nonnull given NULL", funcs: map[int]*btf.Func{1: tagged(global("g", btfInt, ptrInt), []string{"arg:nonnull"})}, noKernel: true,
			asm: "r1 = 0\ncall g\nr0 = 0\nexit\ng: r0 = *(u32 *)(r1 +0)\nexit", err: "arg#0 is expected to be non-NULL"},
		{name: "recursive global function", funcs: map[int]*btf.Func{1: global("g", btfInt)}, asm: "call g\nexit\ng: call g\nexit",
			err: "the call stack of 8 frames is too deep !", kmsg: true},
		{name: "mutually recursive global functions", funcs: map[int]*btf.Func{1: global("g", btfInt), 2: global("h", btfInt)}, asm: "call g\nexit\ng: call h\nexit\nh: call g\nexit",
			err: "the call stack of 8 frames is too deep !", kmsg: true},
		{name: "global functions nine frames deep", funcs: deep(8), asm: globalChain(8), err: "the call stack of 8 frames is too deep !", kmsg: true},
		{name: "global functions eight frames deep", funcs: deep(7), asm: globalChain(7)},
		{name: "subprograms without BTF", noBTF: true, asm: "r1 = 1\ncall f\nexit\nf: r0 = r1\nexit"},
	})
}

// TestGlobalFunctionsVerifiedOnce checks that a global function called
// from several places is verified once, the kernel's instruction count and
// log lines.
func TestGlobalFunctionsVerifiedOnce(t *testing.T) {
	const src = "r1 = 1\ncall g\nr6 = r0\nr1 = 2\ncall g\nr6 += r0\nr1 = 3\ncall g\nr0 = r6\nr0 &= 1\nexit\n" +
		"g: r0 = r1\nif r0 > 1 goto a\nr0 += 1\na: r0 += 2\nexit"
	insns, err := isa.Assemble(src)
	if err != nil {
		t.Fatal(err)
	}
	funcs := []verifier.FuncInfo{
		{Start: 0, Name: "main", Proto: &btf.FuncProto{Return: btfInt}},
		verifier.NewFuncInfo(11, global("g", btfInt, btfU64)),
	}
	// Level 2: level 1 keeps none of an accepted function's lines.
	res, err := verifier.Verify(insns, verifier.Options{Type: progType(ebpf.XDP), Funcs: funcs, LogLevel: 2})
	if err != nil {
		t.Fatalf("%v\n%s", err, res.Log)
	}
	// main: 11 instructions on its one path; g: 5 on the fall-through,
	// then the pending branch's 2: no state was remembered at 14 (a
	// state is only every 2 jumps and 8 instructions), as in the kernel.
	if got, want := res.Stats.Processed, 11+5+2; got != want {
		t.Errorf("processed %d, want %d\n%s", got, want, res.Log)
	}
	if k, ok := kernelProcessed(t, ebpf.XDP, insns, funcs); ok && k != res.Stats.Processed {
		t.Errorf("processed %d, the kernel %d", res.Stats.Processed, k)
	}
	for line, n := range map[string]int{"Func#1 ('g') is global and assumed valid.": 3, "Validating g() func#1...": 1, "Func#1 ('g') is safe for any args that match its prototype": 1} {
		if got := strings.Count(res.Log, line); got != n {
			t.Errorf("%q %d times in the log, want %d\n%s", line, got, n, res.Log)
		}
	}
	static := append([]verifier.FuncInfo(nil), funcs...)
	static[1].Global = false
	res2, err := verifier.Verify(insns, verifier.Options{Type: progType(ebpf.XDP), Funcs: static})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Stats.Processed <= res.Stats.Processed {
		t.Errorf("static: processed %d, global %d: want more when followed at each call", res2.Stats.Processed, res.Stats.Processed)
	}
	// The funcs must describe the functions.
	for _, bad := range [][]verifier.FuncInfo{funcs[:1], {funcs[0], {Start: 10, Name: "g"}}} {
		if _, err := verifier.Verify(insns, verifier.Options{Type: progType(ebpf.XDP), Funcs: bad}); err == nil {
			t.Errorf("accepted with func_info %+v", bad)
		}
	}
}

// kernelProcessed loads a program of maps-free instructions into the
// running kernel with func_info and returns the instructions it processed.
func kernelProcessed(t *testing.T, typ ebpf.ProgramType, insns []isa.Instruction, funcs []verifier.FuncInfo) (int, bool) {
	t.Helper()
	if os.Getuid() != 0 || rlimit.RemoveMemlock() != nil {
		return 0, false
	}
	kinsns, err := asm.AppendInstructions(nil, bytes.NewReader(isa.EncodeProgram(insns)), binary.LittleEndian, "linux")
	if err != nil {
		t.Fatal(err)
	}
	withFuncInfo(kinsns, funcs)
	p, err := ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{Type: typ, Instructions: kinsns, License: "GPL"}, ebpf.ProgramOptions{LogLevel: ebpf.LogLevelStats})
	if err != nil {
		t.Logf("kernel: %v", err)
		return 0, false
	}
	defer p.Close()
	var n int
	for _, l := range strings.Split(p.VerifierLog, "\n") {
		if _, err := fmt.Sscanf(l, "processed %d insns", &n); err == nil {
			return n, true
		}
	}
	return 0, false
}

// deep declares functions 1..n global, each taking nothing.
func deep(n int) map[int]*btf.Func {
	m := map[int]*btf.Func{}
	for i := 1; i <= n; i++ {
		m[i] = global(fmt.Sprintf("g%d", i), btfInt)
	}
	return m
}

// globalChain is a program whose entry calls g1, which calls g2, ..., gn.
func globalChain(n int) string {
	var b strings.Builder
	b.WriteString("call g1\nexit\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "g%d: call g%d\nexit\n", i, i+1)
	}
	fmt.Fprintf(&b, "g%d: r0 = 0\nexit\n", n)
	return b.String()
}
