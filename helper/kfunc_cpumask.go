package helper

import (
	"encoding/binary"
	"math/bits"
	"runtime"

	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// cpumaskKfuncs are BPF cpumasks (kernel/bpf/cpumask.c, registered for
// tracing, struct_ops and syscall programs). A struct bpf_cpumask is an
// object of the kernel object table (kobj.go): a struct cpumask of
// cpumaskWords longs, then its refcount, allocated by bpf_cpumask_create
// and freed when its last reference goes. The queries also read any other
// struct cpumask a program holds a pointer to (a task's cpus_ptr, a
// cpumask on the stack): the run's own memory, or the world's.
var cpumaskKfuncs = []Kfunc{
	{Name: "bpf_cpumask_create", Decl: "struct bpf_cpumask *bpf_cpumask_create(void)", Flags: KfAcquire | KfRetNull, Hooks: cpumaskHooks, Func: kfuncCpumaskCreate},
	{Name: "bpf_cpumask_release", Decl: "void bpf_cpumask_release(struct bpf_cpumask *cpumask)", Flags: KfRelease, Hooks: cpumaskHooks, Func: kfuncCpumaskRelease},
	{Name: "bpf_cpumask_acquire", Decl: "struct bpf_cpumask *bpf_cpumask_acquire(struct bpf_cpumask *cpumask)", Flags: KfAcquire | KfTrustedArgs, Hooks: cpumaskHooks, Func: kfuncCpumaskAcquire},
	{Name: "bpf_cpumask_first", Decl: "u32 bpf_cpumask_first(const struct cpumask *cpumask)", Flags: KfRCU, Hooks: cpumaskHooks, Func: cpumaskQuery(func(m, _ cpumask, n uint32) uint64 { return uint64(m.first(n, false)) })},
	{Name: "bpf_cpumask_first_zero", Decl: "u32 bpf_cpumask_first_zero(const struct cpumask *cpumask)", Flags: KfRCU, Hooks: cpumaskHooks, Func: cpumaskQuery(func(m, _ cpumask, n uint32) uint64 { return uint64(m.first(n, true)) })},
	{Name: "bpf_cpumask_first_and", Decl: "u32 bpf_cpumask_first_and(const struct cpumask *src1, const struct cpumask *src2)", Flags: KfRCU, Hooks: cpumaskHooks, Func: cpumaskQuery2(func(a, b cpumask, n uint32) uint64 { return uint64(a.and(b).first(n, false)) })},
	{Name: "bpf_cpumask_set_cpu", Decl: "void bpf_cpumask_set_cpu(u32 cpu, struct bpf_cpumask *cpumask)", Flags: KfRCU, Hooks: cpumaskHooks, Func: cpumaskBit(true, true)},
	{Name: "bpf_cpumask_clear_cpu", Decl: "void bpf_cpumask_clear_cpu(u32 cpu, struct bpf_cpumask *cpumask)", Flags: KfRCU, Hooks: cpumaskHooks, Func: cpumaskBit(true, false)},
	{Name: "bpf_cpumask_test_cpu", Decl: "bool bpf_cpumask_test_cpu(u32 cpu, const struct cpumask *cpumask)", Flags: KfRCU, Hooks: cpumaskHooks, Func: kfuncCpumaskTestCPU},
	{Name: "bpf_cpumask_test_and_set_cpu", Decl: "bool bpf_cpumask_test_and_set_cpu(u32 cpu, struct bpf_cpumask *cpumask)", Flags: KfRCU, Hooks: cpumaskHooks, Func: cpumaskBit(false, true)},
	{Name: "bpf_cpumask_test_and_clear_cpu", Decl: "bool bpf_cpumask_test_and_clear_cpu(u32 cpu, struct bpf_cpumask *cpumask)", Flags: KfRCU, Hooks: cpumaskHooks, Func: cpumaskBit(false, false)},
	{Name: "bpf_cpumask_setall", Decl: "void bpf_cpumask_setall(struct bpf_cpumask *cpumask)", Flags: KfRCU, Hooks: cpumaskHooks, Func: cpumaskFill(true)},
	{Name: "bpf_cpumask_clear", Decl: "void bpf_cpumask_clear(struct bpf_cpumask *cpumask)", Flags: KfRCU, Hooks: cpumaskHooks, Func: cpumaskFill(false)},
	{Name: "bpf_cpumask_and", Decl: "bool bpf_cpumask_and(struct bpf_cpumask *dst, const struct cpumask *src1, const struct cpumask *src2)", Flags: KfRCU, Hooks: cpumaskHooks, Func: cpumaskOp(cpumask.and, true)},
	{Name: "bpf_cpumask_or", Decl: "void bpf_cpumask_or(struct bpf_cpumask *dst, const struct cpumask *src1, const struct cpumask *src2)", Flags: KfRCU, Hooks: cpumaskHooks, Func: cpumaskOp(cpumask.or, false)},
	{Name: "bpf_cpumask_xor", Decl: "void bpf_cpumask_xor(struct bpf_cpumask *dst, const struct cpumask *src1, const struct cpumask *src2)", Flags: KfRCU, Hooks: cpumaskHooks, Func: cpumaskOp(cpumask.xor, false)},
	{Name: "bpf_cpumask_equal", Decl: "bool bpf_cpumask_equal(const struct cpumask *src1, const struct cpumask *src2)", Flags: KfRCU, Hooks: cpumaskHooks, Func: cpumaskQuery2(func(a, b cpumask, n uint32) uint64 { return b2u(a.xor(b).empty(n)) })},
	{Name: "bpf_cpumask_intersects", Decl: "bool bpf_cpumask_intersects(const struct cpumask *src1, const struct cpumask *src2)", Flags: KfRCU, Hooks: cpumaskHooks, Func: cpumaskQuery2(func(a, b cpumask, n uint32) uint64 { return b2u(!a.and(b).empty(n)) })},
	{Name: "bpf_cpumask_subset", Decl: "bool bpf_cpumask_subset(const struct cpumask *src1, const struct cpumask *src2)", Flags: KfRCU, Hooks: cpumaskHooks, Func: cpumaskQuery2(func(a, b cpumask, n uint32) uint64 { return b2u(a.andNot(b).empty(n)) })},
	{Name: "bpf_cpumask_empty", Decl: "bool bpf_cpumask_empty(const struct cpumask *cpumask)", Flags: KfRCU, Hooks: cpumaskHooks, Func: cpumaskQuery(func(m, _ cpumask, n uint32) uint64 { return b2u(m.empty(n)) })},
	{Name: "bpf_cpumask_full", Decl: "bool bpf_cpumask_full(const struct cpumask *cpumask)", Flags: KfRCU, Hooks: cpumaskHooks, Func: cpumaskQuery(func(m, _ cpumask, n uint32) uint64 { return b2u(m.weight(n) == n) })},
	{Name: "bpf_cpumask_copy", Decl: "void bpf_cpumask_copy(struct bpf_cpumask *dst, const struct cpumask *src)", Flags: KfRCU, Hooks: cpumaskHooks, Func: kfuncCpumaskCopy},
	{Name: "bpf_cpumask_any_distribute", Decl: "u32 bpf_cpumask_any_distribute(const struct cpumask *cpumask)", Flags: KfRCU, Hooks: cpumaskHooks, Func: kfuncCpumaskAnyDistribute},
	{Name: "bpf_cpumask_any_and_distribute", Decl: "u32 bpf_cpumask_any_and_distribute(const struct cpumask *src1, const struct cpumask *src2)", Flags: KfRCU, Hooks: cpumaskHooks, Func: kfuncCpumaskAnyAndDistribute},
	{Name: "bpf_cpumask_weight", Decl: "u32 bpf_cpumask_weight(const struct cpumask *cpumask)", Flags: KfRCU, Hooks: cpumaskHooks, Func: cpumaskQuery(func(m, _ cpumask, n uint32) uint64 { return uint64(m.weight(n)) })},
	{Name: "bpf_cpumask_populate", Decl: "int bpf_cpumask_populate(struct cpumask *cpumask, void *src, size_t src__sz)", Flags: KfRCU, Hooks: cpumaskHooks, Func: kfuncCpumaskPopulate},
}

// cpumaskHooks are the program types cpumask.c registers its set for.
const cpumaskHooks = HookTracing | HookStructOps | HookSyscall

// cpumaskWords is the size of a struct cpumask in longs (x86-64's NR_CPUS
// of 256 bits); a struct bpf_cpumask has its refcount after them.
const (
	cpumaskWords   = 4
	cpumaskBytes   = 8 * cpumaskWords
	bpfCpumaskSize = cpumaskBytes + 8
)

// cpumask is a struct cpumask's bits.
type cpumask [cpumaskWords]uint64

// nrCPUIDs is the kernel's nr_cpu_ids: the CPUs bits of cpumasks stand
// for, those of the host bpfvm runs on.
func nrCPUIDs() uint32 { return uint32(min(runtime.NumCPU(), 64*cpumaskWords)) }

// valid clears the bits at and past n.
func (m cpumask) valid(n uint32) cpumask {
	for i := range m {
		lo := uint32(64 * i)
		switch {
		case lo >= n:
			m[i] = 0
		case n-lo < 64:
			m[i] &= 1<<(n-lo) - 1
		}
	}
	return m
}

func (m cpumask) and(o cpumask) cpumask {
	for i := range m {
		m[i] &= o[i]
	}
	return m
}

func (m cpumask) andNot(o cpumask) cpumask {
	for i := range m {
		m[i] &^= o[i]
	}
	return m
}

func (m cpumask) or(o cpumask) cpumask {
	for i := range m {
		m[i] |= o[i]
	}
	return m
}

func (m cpumask) xor(o cpumask) cpumask {
	for i := range m {
		m[i] ^= o[i]
	}
	return m
}

// weight counts the set bits below n.
func (m cpumask) weight(n uint32) uint32 {
	w := 0
	for _, x := range m.valid(n) {
		w += bits.OnesCount64(x)
	}
	return uint32(w)
}

func (m cpumask) empty(n uint32) bool { return m.weight(n) == 0 }

// first is the first set (zero: clear) bit below n, n if none
// (cpumask_first returns nr_cpu_ids then).
func (m cpumask) first(n uint32, zero bool) uint32 {
	for c := range n {
		if (m[c/64]>>(c%64)&1 == 1) != zero {
			return c
		}
	}
	return n
}

// readCpumask reads the struct cpumask at addr: a cpumask object, the
// run's own memory, or the world's; a pointer to none of these (the
// kernel would read memory bpfvm does not model) reads as empty.
func readCpumask(e *vm.Env, addr uint64) cpumask {
	var m cpumask
	var b []byte
	if lookupKobj(addr, kobjCpumask) != nil {
		b = vm.Slice(addr, cpumaskBytes)
	} else if b = ownMemory(e, addr, cpumaskBytes); b == nil && kernelAddress(addr) {
		b, _ = runner.Of(e).Trace().Read(addr, cpumaskBytes, false)
	}
	if len(b) >= cpumaskBytes {
		for i := range m {
			m[i] = binary.LittleEndian.Uint64(b[8*i:])
		}
	}
	return m
}

// writeCpumask writes the bits of the cpumask object at addr; a pointer
// that is not one is left alone (the verifier lets only struct
// bpf_cpumask pointers here, which only cpumask objects are).
func writeCpumask(addr uint64, m cpumask) {
	if lookupKobj(addr, kobjCpumask) == nil {
		return
	}
	b := vm.Slice(addr, cpumaskBytes)
	for i, x := range m {
		binary.LittleEndian.PutUint64(b[8*i:], x)
	}
}

// kfuncCpumaskCreate is bpf_cpumask_create(): an empty cpumask with one
// reference, or NULL when memory is short.
func kfuncCpumaskCreate(*vm.Env, uint64, uint64, uint64, uint64, uint64) (uint64, error) {
	addr := newKobj(kobjCpumask, bpfCpumaskSize, 0)
	if addr != 0 {
		binary.LittleEndian.PutUint32(vm.Slice(addr+cpumaskBytes, 4), 1) // usage
	}
	return addr, nil
}

// kfuncCpumaskRelease is bpf_cpumask_release(cpumask).
func kfuncCpumaskRelease(_ *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	if lookupKobj(r1, kobjCpumask) != nil {
		putKobj(r1)
	}
	return 0, nil
}

// kfuncCpumaskAcquire is bpf_cpumask_acquire(cpumask): cpumask, with
// another reference.
func kfuncCpumaskAcquire(_ *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	if lookupKobj(r1, kobjCpumask) != nil {
		getKobj(r1)
	}
	return r1, nil
}

// cpumaskQuery is a query of the cpumask in R1.
func cpumaskQuery(f func(m, _ cpumask, n uint32) uint64) vm.Helper {
	return func(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
		return f(readCpumask(e, r1), cpumask{}, nrCPUIDs()), nil
	}
}

// cpumaskQuery2 is a query of the cpumasks in R1 and R2.
func cpumaskQuery2(f func(a, b cpumask, n uint32) uint64) vm.Helper {
	return func(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
		return f(readCpumask(e, r1), readCpumask(e, r2), nrCPUIDs()), nil
	}
}

// cpumaskBit sets (set) or clears a CPU's bit (R1) of the cpumask in
// R2; test makes it return whether the bit was set. A CPU past
// nr_cpu_ids changes nothing and tests false.
func cpumaskBit(void, set bool) vm.Helper {
	return func(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
		cpu := uint32(r1)
		if cpu >= nrCPUIDs() {
			return 0, nil
		}
		m := readCpumask(e, r2)
		was := m[cpu/64]>>(cpu%64)&1 == 1
		if set {
			m[cpu/64] |= 1 << (cpu % 64)
		} else {
			m[cpu/64] &^= 1 << (cpu % 64)
		}
		writeCpumask(r2, m)
		if void {
			return 0, nil
		}
		return b2u(was), nil
	}
}

// kfuncCpumaskTestCPU is bpf_cpumask_test_cpu(cpu, cpumask).
func kfuncCpumaskTestCPU(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
	cpu := uint32(r1)
	if cpu >= nrCPUIDs() {
		return 0, nil
	}
	m := readCpumask(e, r2)
	return m[cpu/64] >> (cpu % 64) & 1, nil
}

// cpumaskFill sets (setall) or clears every CPU's bit.
func cpumaskFill(set bool) vm.Helper {
	return func(_ *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
		var m cpumask
		if set {
			for i := range m {
				m[i] = ^uint64(0)
			}
			m = m.valid(nrCPUIDs())
		}
		writeCpumask(r1, m)
		return 0, nil
	}
}

// cpumaskOp is dst (R1) = op(src1, src2); ret makes it return whether
// the result has a bit set (bpf_cpumask_and).
func cpumaskOp(op func(a, b cpumask) cpumask, ret bool) vm.Helper {
	return func(e *vm.Env, r1, r2, r3, _, _ uint64) (uint64, error) {
		n := nrCPUIDs()
		m := op(readCpumask(e, r2), readCpumask(e, r3)).valid(n)
		writeCpumask(r1, m)
		if !ret {
			return 0, nil
		}
		return b2u(!m.empty(n)), nil
	}
}

// kfuncCpumaskCopy is bpf_cpumask_copy(dst, src).
func kfuncCpumaskCopy(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
	writeCpumask(r1, readCpumask(e, r2).valid(nrCPUIDs()))
	return 0, nil
}

// anyDistribute is a set bit of m below n chosen at random, n if none
// (the kernel spreads its choices over the set bits; which one is not
// part of the contract).
func anyDistribute(e *vm.Env, m cpumask, n uint32) uint64 {
	w := m.weight(n)
	if w == 0 {
		return uint64(n)
	}
	k := runner.Of(e).Random() % w
	for c := range n {
		if m[c/64]>>(c%64)&1 == 1 {
			if k == 0 {
				return uint64(c)
			}
			k--
		}
	}
	return uint64(n)
}

// kfuncCpumaskAnyDistribute is bpf_cpumask_any_distribute(cpumask).
func kfuncCpumaskAnyDistribute(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	return anyDistribute(e, readCpumask(e, r1), nrCPUIDs()), nil
}

// kfuncCpumaskAnyAndDistribute is bpf_cpumask_any_and_distribute(a, b).
func kfuncCpumaskAnyAndDistribute(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
	return anyDistribute(e, readCpumask(e, r1).and(readCpumask(e, r2)), nrCPUIDs()), nil
}

// kfuncCpumaskPopulate is bpf_cpumask_populate(cpumask, src, src__sz):
// the bits of nr_cpu_ids CPUs from src, -EACCES when src is shorter than
// their longs.
func kfuncCpumaskPopulate(e *vm.Env, r1, r2, r3, _, _ uint64) (uint64, error) {
	n := nrCPUIDs()
	need := uint64((n + 63) / 64 * 8)
	if r3 < need {
		return neg(eacces), nil
	}
	src, err := e.Bytes(r2, need, false)
	if err != nil {
		return 0, err
	}
	var m cpumask
	for i := range need / 8 {
		m[i] = binary.LittleEndian.Uint64(src[8*i:])
	}
	writeCpumask(r1, m.valid(n))
	return 0, nil
}
