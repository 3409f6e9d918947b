package helper

import "github.com/bpfvm/bpfvm/vm"

// kfuncThrow is bpf_throw(cookie) (kernel/bpf/helpers.c): it never
// returns. The run stops with a *vm.Thrown, which unwinds all frames on
// both engines; the runner catches it (runner.Runner.Catch) and makes the
// exception callback's result, or the cookie without one, the program's.
func kfuncThrow(_ *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	return 0, &vm.Thrown{Cookie: r1}
}

// throwKfuncs is bpf_throw, in kernel/bpf/helpers.c's generic set. The
// verifier has rules of its own for it (verifier/throw.go).
var throwKfuncs = []Kfunc{
	{Name: "bpf_throw", Decl: "void bpf_throw(u64 cookie)", Hooks: HooksGeneric, Func: kfuncThrow},
}
