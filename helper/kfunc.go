package helper

import (
	"fmt"
	"sync"

	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/vm"
)

// Kfunc is a kernel function (kfunc) as bpfvm implements it: one entry of
// the kfunc registry, found by its BTF name. The verifier checks its calls
// generically (verifier/kfunc.go, the kernel's check_kfunc_call) from its
// prototype, Flags and Hooks; the engines call it as a helper with an
// internal id (isa.KfuncHelperBase + its isa.Kfunc id): see ToHelperCalls.
//
// A family of kfuncs is a slice of entries in a file of its own
// (kfunc_task.go, kfunc_cpumask.go ...), listed in kfuncFamilies; each
// name needs an id in isa/kfunc.go.
type Kfunc struct {
	// Name is the kernel's BTF name.
	Name string
	// ID is bpfvm's id for it (isa.KfuncID of Name), what calls carry in
	// their immediate once loaded; the registry fills it in.
	ID int32
	// Decl is the C declaration of the function, with the kernel's
	// argument names (their suffixes, __sz, __k, __nullable ..., mean what
	// they mean to the kernel). The verifier checks calls against the
	// prototype the target BTF (Options.KernelTypes) gives the function,
	// as the kernel does, and against Decl when the target BTF has none
	// (bpfvm's shipped BTF holds types, not functions).
	Decl string
	// Flags are the kernel's KF_* flags of the function.
	Flags KfuncFlags
	// Hooks are the kfunc hooks (program types) whose kfunc sets hold the
	// function: the kernel's register_btf_kfunc_id_set calls.
	Hooks KfuncHooks
	// Module is the kernel module defining the function, "" for vmlinux:
	// a target BTF without the function refuses its calls.
	Module string
	// Func implements it.
	Func vm.Helper

	// proto is Decl parsed.
	proto *btf.FuncProto
}

// DeclProto is the prototype Decl declares (parseDecl): its struct
// types are opaque structs named as the kernel's.
func (k *Kfunc) DeclProto() *btf.FuncProto { return k.proto }

// KfuncFlags are the kernel's KF_* flags of a kfunc (include/linux/btf.h).
type KfuncFlags uint32

// Kfunc flags.
const (
	// KfAcquire: the result carries a new reference (KF_ACQUIRE).
	KfAcquire KfuncFlags = 1 << iota
	// KfRelease: the referenced argument is released (KF_RELEASE).
	KfRelease
	// KfRetNull: the result may be NULL (KF_RET_NULL).
	KfRetNull
	// KfTrustedArgs: pointer arguments must be trusted or referenced
	// (KF_TRUSTED_ARGS).
	KfTrustedArgs
	// KfSleepable: only sleepable programs may call it (KF_SLEEPABLE).
	KfSleepable
	// KfDestructive: the call may crash the machine (KF_DESTRUCTIVE).
	KfDestructive
	// KfRCU: pointer arguments may also be RCU pointers (KF_RCU).
	KfRCU
	// KfIterNew, KfIterNext, KfIterDestroy: an open-coded iterator's
	// constructor, step and destructor (KF_ITER_*).
	KfIterNew
	KfIterNext
	KfIterDestroy
	// KfRCUProtected: calls must be inside an RCU read section
	// (KF_RCU_PROTECTED).
	KfRCUProtected
	// KfFastcall: the call preserves the registers it does not use
	// (KF_FASTCALL).
	KfFastcall
)

// KfuncHooks is a set of the kernel's kfunc hooks (enum btf_kfunc_hook):
// groups of program types that share kfunc sets.
type KfuncHooks uint32

// Kfunc hooks.
const (
	// HookCommon is every program type (BPF_PROG_TYPE_UNSPEC's set).
	HookCommon KfuncHooks = 1 << iota
	HookXDP
	HookTC
	HookStructOps
	// HookTracing: tracing (fentry, fexit, fmod_ret, tp_btf), tracepoint,
	// raw tracepoint, perf event and LSM programs.
	HookTracing
	HookSyscall
	// HookCgroup: the cgroup program types and sock_ops.
	HookCgroup
	HookSchedAct
	HookSkSkb
	HookSocketFilter
	HookLWT
	HookNetfilter
	HookKprobe
)

// HooksGeneric are the hooks of kernel/bpf/helpers.c's generic_kfunc_set.
const HooksGeneric = HookTracing | HookTC | HookXDP | HookStructOps | HookSyscall | HookCgroup

// KfuncHook returns the hook of a program type (the kernel's
// bpf_prog_type_to_kfunc_hook), 0 for a type with none.
func KfuncHook(pt *progtype.Type) KfuncHooks {
	switch pt.Name {
	case "xdp":
		return HookXDP
	case "sched_cls":
		return HookTC
	case "tp_btf", "fentry", "fexit", "fmod_ret", "tracepoint", "raw_tracepoint", "perf_event", "lsm":
		return HookTracing
	case "syscall":
		return HookSyscall
	case "cgroup_skb", "cgroup_sock", "cgroup_device", "cgroup_sock_addr", "cgroup_sockopt", "cgroup_sysctl", "sock_ops":
		return HookCgroup
	case "sched_act":
		return HookSchedAct
	case "sk_skb":
		return HookSkSkb
	case "socket_filter":
		return HookSocketFilter
	case "lwt_in", "lwt_out", "lwt_xmit", "lwt_seg6local":
		return HookLWT
	case "netfilter":
		return HookNetfilter
	case "kprobe":
		return HookKprobe
	}
	return 0
}

// Allowed reports whether programs of type pt may call k (the kernel's
// btf_kfunc_is_allowed: the common set, then the type's hook's).
func (k *Kfunc) Allowed(pt *progtype.Type) bool {
	return k.Hooks&HookCommon != 0 || k.Hooks&KfuncHook(pt) != 0
}

// kfuncFamilies are the kfuncs bpfvm implements, by family.
var kfuncFamilies = [][]Kfunc{
	iterKfuncs,
	castKfuncs,
	rcuKfuncs,
	taskKfuncs,
	cgroupKfuncs,
	cpumaskKfuncs,
	dynptrKfuncs,
	throwKfuncs,
	arenaKfuncs,
	sleepKfuncs,
}

// kfuncRegistry indexes kfuncFamilies by id, filling in the ids.
var kfuncRegistry = sync.OnceValue(func() map[int32]*Kfunc {
	m := map[int32]*Kfunc{}
	structs := map[string]*btf.Struct{}
	for _, fam := range kfuncFamilies {
		for i := range fam {
			k := fam[i]
			id, ok := isa.KfuncID(k.Name)
			if !ok {
				panic(fmt.Sprintf("kfunc %s has no isa id", k.Name))
			}
			name, proto, err := parseDecl(k.Decl, structs)
			if err != nil || name != k.Name {
				panic(fmt.Sprintf("kfunc %s: bad declaration %q: %v", k.Name, k.Decl, err))
			}
			k.ID, k.proto = id, proto
			m[id] = &k
		}
	}
	return m
})

// LookupKfunc returns the kfunc with bpfvm id id, or nil.
func LookupKfunc(id int32) *Kfunc { return kfuncRegistry()[id] }

// castKfuncs are the casts to kernel types (kernel/bpf/helpers.c's
// common set).
var castKfuncs = []Kfunc{
	{Name: "bpf_cast_to_kern_ctx", Decl: "void *bpf_cast_to_kern_ctx(void *obj)", Flags: KfFastcall, Hooks: HookCommon, Func: kfuncCast},
	{Name: "bpf_rdonly_cast", Decl: "void *bpf_rdonly_cast(const void *obj__ign, u32 btf_id__k)", Flags: KfFastcall, Hooks: HookCommon, Func: kfuncCast},
}

// kfuncCast is bpf_cast_to_kern_ctx(ctx) and bpf_rdonly_cast(obj, btf_id):
// the pointer itself, which only the verifier sees with a new type (the
// kernel replaces the calls with r0 = r1). Loads through what they give
// are probe loads (verifier.InsnAux.Probe): the context's bytes where the
// kernel object's fields would be, 0 outside what the run may read.
func kfuncCast(_ *vm.Env, r1, _, _, _, _ uint64) (uint64, error) { return r1, nil }

// kfuncName names a kfunc id in errors.
func kfuncName(id int32) string {
	if name := isa.KfuncName(id); name != "" {
		return fmt.Sprintf("%s#%d", name, id)
	}
	return fmt.Sprintf("#%d", id)
}

// CheckKfuncs rejects calls of kfunc ids bpfvm does not implement and
// helper calls of the internal ids kfuncs run under.
func CheckKfuncs(insns []isa.Instruction) error {
	for pc, ins := range insns {
		if ins.Op != isa.OpCall {
			continue
		}
		switch uint8(ins.Src) {
		case isa.CallKfunc:
			if LookupKfunc(ins.Imm) == nil {
				return fmt.Errorf("insn %d: %w kfunc %s", pc, vm.ErrHelper, kfuncName(ins.Imm))
			}
		case isa.CallHelper:
			if isa.IsKfuncHelper(ins.Imm) {
				return fmt.Errorf("insn %d: %w %s", pc, vm.ErrHelper, isa.HelperLabel(ins.Imm))
			}
		}
	}
	return nil
}

// ToHelperCalls turns kfunc calls into calls of their internal helper ids,
// in place, once the verifier is done with them.
func ToHelperCalls(insns []isa.Instruction) {
	for pc := range insns {
		ins := &insns[pc]
		if ins.Op == isa.OpCall && ins.Src == isa.Register(isa.CallKfunc) {
			*ins = isa.Instruction{Op: isa.OpCall, Src: isa.Register(isa.CallHelper), Imm: isa.KfuncHelperBase + ins.Imm}
		}
	}
}
