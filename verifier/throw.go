package verifier

import (
	"fmt"
	"sort"
	"strings"

	"github.com/bpfvm/bpfvm/isa"
)

// Exceptions (the kernel's bpf_throw): a call of bpf_throw ends its path
// as an exit of the whole program would, from any frame, and the program
// returns what its exception callback returns for the cookie (without
// one, the cookie itself). The exception callback is a global function
// the main function names in a BTF decl tag "exception_callback:<name>";
// it is verified on its own, with one scalar argument, and its exit is
// checked as the program's. What the kernel refuses, as it does:
// bpf_throw holding references (nothing releases them on the way out)
// or a lock, or from a callback (of bpf_loop and friends, or the
// exception callback itself), and direct calls of the exception callback.

// exceptionTag prefixes the decl tag that names the exception callback.
const exceptionTag = "exception_callback:"

// ExceptionCallback returns the first instruction of the exception
// callback that funcs (a program's BTF func_info, FuncInfo.Tags) name for
// the program, and whether there is one. It does not check the rules the
// verifier applies (findExceptionCB): an unverified program's runs use it
// as it is.
func ExceptionCallback(funcs []FuncInfo) (int, bool) {
	name, n := exceptionName(funcs)
	if n != 1 {
		return 0, false
	}
	for _, f := range funcs {
		if f.Name == name && f.Start > 0 {
			return f.Start, true
		}
	}
	return 0, false
}

// exceptionName returns the callback the main function's decl tags name,
// and how many tags name one.
func exceptionName(funcs []FuncInfo) (string, int) {
	if len(funcs) == 0 {
		return "", 0
	}
	var name string
	n := 0
	for _, t := range funcs[0].Tags {
		if s, ok := strings.CutPrefix(t, exceptionTag); ok {
			name = s
			n++
		}
	}
	return name, n
}

// findExceptionCB finds the exception callback the main function names
// and makes it a function of its own (the kernel's
// bpf_find_exception_callback_insn_off in add_subprog_and_kfunc), with
// the kernel's messages for what is wrong. v.excb is its function's index
// (0: none).
func (v *verifier) findExceptionCB() error {
	name, n := exceptionName(v.opts.Funcs)
	switch {
	case n == 0:
		return nil
	case n > 1:
		return v.errorf(0, "multiple exception callback tags for main subprog")
	}
	var fi *FuncInfo
	for i := range v.opts.Funcs {
		if v.opts.Funcs[i].Name == name {
			fi = &v.opts.Funcs[i]
			break
		}
	}
	if fi == nil {
		return v.errorf(0, "exception callback '%s' could not be found in BTF", name)
	}
	if !fi.Global {
		return v.errorf(0, "exception callback '%s' must have global linkage", name)
	}
	if fi.Start == 0 {
		return v.errorf(0, "invalid exception callback insn_off in func_info: 0")
	}
	if fi.Start < 0 || fi.Start >= len(v.insns) {
		return v.errorf(0, "exception callback type id not found in func_info")
	}
	v.subs = splitSubprog(v.subs, fi.Start)
	v.excb = subprogAt(v.subs, fi.Start)
	return nil
}

// splitSubprog makes start the first instruction of a function of subs.
func splitSubprog(subs []subprog, start int) []subprog {
	i := sort.Search(len(subs), func(i int) bool { return subs[i].Start >= start })
	if i < len(subs) && subs[i].Start == start {
		return subs
	}
	prev := &subs[i-1]
	s := subprog{Start: start, End: prev.End}
	prev.End = start
	return append(subs[:i], append([]subprog{s}, subs[i:]...)...)
}

// markExceptionCB has the exception callback verified with the global
// functions (verifyGlobals), whether or not anything throws, as the
// kernel verifies it.
func (v *verifier) markExceptionCB() {
	if v.excb > 0 && v.excb < len(v.funcs) {
		v.funcs[v.excb].called = true
	}
}

// checkExceptionEntry applies the kernel's rules for the exception
// callback's prototype (do_check_common): a global function's, with one
// scalar argument.
func (v *verifier) checkExceptionEntry(sub int) error {
	if sub != v.excb || v.excb == 0 {
		return nil
	}
	v.prepareArgs(sub)
	m := &v.funcs[sub]
	if m.protoErr != "" {
		return v.errorf(v.subs[sub].Start, "%s", m.protoErr)
	}
	if len(m.args) != 1 || m.args[0].kind != globalScalar {
		return v.errorf(v.subs[sub].Start, "exception cb only supports single integer argument")
	}
	return nil
}

// checkThrow verifies a call of bpf_throw(cookie): the path ends there, as
// at an exit of the program (the kernel's process_bpf_exit_full with
// exception_exit). Without an exception callback the cookie becomes the
// return value, so it must be one the program type may return.
func (v *verifier) checkThrow(pc int) (bool, error) {
	if err := v.checkCallInLock(pc, isa.KfuncThrow, true); err != nil {
		return false, err
	}
	if v.opts.Unprivileged {
		return false, v.errorf(pc, "calling kernel function bpf_throw is not allowed")
	}
	// The kernel asks for a scalar before it asks for an initialised
	// register.
	if v.cur.cur().Regs[1].Type != ScalarValue {
		return false, v.errorf(pc, "R1 is not a scalar")
	}
	r1, err := v.readReg(pc, isa.R1)
	if err != nil {
		return false, err
	}
	if v.excb == 0 && v.pt.CheckReturn {
		if r1.Smin < v.pt.ReturnMin || r1.Smax > v.pt.ReturnMax {
			return false, v.errorf(pc, "At program exit the register R1 has%s should have been in [%d, %d]", signedBounds(r1), v.pt.ReturnMin, v.pt.ReturnMax)
		}
		v.markRegPrecise(isa.R1)
	}
	if err := v.checkThrowLeak(pc); err != nil {
		return false, err
	}
	return true, nil
}

// checkThrowLeak refuses a throw while the path holds references:
// nothing on the way out releases them (check_reference_leak with
// exception_exit). The kernel lists them all.
func (v *verifier) checkThrowLeak(pc int) error {
	var lines []string
	for _, r := range v.cur.Refs {
		if r.Lock == nil {
			lines = append(lines, fmt.Sprintf("Unreleased reference id=%d alloc_insn=%d", r.ID, r.Insn))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	for _, l := range lines[:len(lines)-1] {
		v.log.printf("%s\n", l)
	}
	v.log.printf("%s\n", lines[len(lines)-1])
	last := v.errorf(pc, "bpf_throw would lead to reference leak")
	return &Error{Insn: pc, Msg: strings.Join(append(lines, last.(*Error).Msg), "\n")}
}

// checkGlobalThrow applies the throw's rule at a call of a global
// function that may throw (it, or a function it calls, calls bpf_throw):
// the caller's references would leak, which the kernel refuses at the
// call.
func (v *verifier) checkGlobalThrow(pc, sub int) error {
	if !v.mayThrow(sub, make([]bool, len(v.subs))) {
		return nil
	}
	return v.checkThrowLeak(pc)
}

// mayThrow reports whether function sub, or one it calls, calls
// bpf_throw.
func (v *verifier) mayThrow(sub int, seen []bool) bool {
	if seen[sub] {
		return false
	}
	seen[sub] = true
	s := v.subs[sub]
	for pc := s.Start; pc < s.End; pc++ {
		ins := v.insns[pc]
		if ins.Op == isa.OpCall && ins.Src == isa.Register(isa.CallKfunc) && ins.Imm == isa.KfuncThrow {
			return true
		}
		if ins.IsLocalCall() && v.mayThrow(subprogAt(v.subs, pc+1+int(ins.Imm)), seen) {
			return true
		}
	}
	return false
}

// checkThrowSites applies the rules the kernel checks on the call graph
// once the program is verified (check_max_stack_depth_subprog): no
// bpf_throw in a callback or what it calls, no call of the exception
// callback. The walk starts at the main function and at the exception
// callback, and goes through the functions in instruction order.
func (v *verifier) checkThrowSites() error {
	if !v.throws() && v.excb == 0 {
		return nil
	}
	// Each function once as called from a callback and once not.
	var visited [2][]bool
	visited[0], visited[1] = make([]bool, len(v.subs)), make([]bool, len(v.subs))
	var walk func(sub int, inCallback bool) error
	walk = func(sub int, inCallback bool) error {
		inCallback = inCallback || v.subs[sub].Callback || (sub == v.excb && v.excb != 0)
		k := 0
		if inCallback {
			k = 1
		}
		if visited[k][sub] {
			return nil
		}
		visited[k][sub] = true
		s := v.subs[sub]
		for pc := s.Start; pc < s.End; pc++ {
			ins := v.insns[pc]
			if ins.Op == isa.OpCall && ins.Src == isa.Register(isa.CallKfunc) && ins.Imm == isa.KfuncThrow && ins.Off == 0 && inCallback {
				return v.errorf(pc, "bpf_throw kfunc (insn %d) cannot be called from callback subprog %d", pc, sub)
			}
			if !ins.IsLocalCall() && !ins.IsPseudoFunc() {
				if ins.IsLdImm64() {
					pc++
				}
				continue
			}
			callee := subprogAt(v.subs, pc+1+int(ins.Imm))
			if callee == v.excb && v.excb != 0 {
				return v.errorf(pc, "insn %d cannot call exception cb directly", pc)
			}
			if err := walk(callee, inCallback); err != nil {
				return err
			}
			if ins.IsLdImm64() {
				pc++
			}
		}
		return nil
	}
	if err := walk(0, false); err != nil {
		return err
	}
	if v.excb != 0 {
		return walk(v.excb, true)
	}
	return nil
}

// throws reports whether the program calls bpf_throw anywhere.
func (v *verifier) throws() bool {
	for _, ins := range v.insns {
		if ins.Op == isa.OpCall && ins.Src == isa.Register(isa.CallKfunc) && ins.Imm == isa.KfuncThrow {
			return true
		}
	}
	return false
}
