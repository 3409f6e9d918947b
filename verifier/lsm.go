package verifier

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/progtype"
)

// LSM programs and sleepable programs: the attach rules of the kernel's
// bpf_check_attach_target and bpf_lsm_verify_prog, the return value
// ranges of check_return_code, and what sleeping changes (no RCU read
// section: check_ptr_to_btf_access, check_map_prog_compatibility).

// resolveLSM finds the function of LSM hook name (bpf_lsm_<name>) in the
// kernel's BTF, as the kernel's bpf_check_attach_target and
// bpf_lsm_verify_prog for BPF_LSM_MAC and BPF_LSM_CGROUP programs.
func resolveLSM(spec *btf.Spec, target *AttachTarget, name string) (*AttachTarget, error) {
	fname := progtype.LSMHookPrefix + name
	var fn *btf.Func
	if err := spec.TypeByName(fname, &fn); err != nil {
		return nil, fmt.Errorf("%w: LSM hook %s: %w", ErrAttachTarget, name, err)
	}
	proto, ok := fn.Type.(*btf.FuncProto)
	if !ok {
		return nil, fmt.Errorf("%w: %s has no prototype", ErrAttachTarget, fname)
	}
	if err := trampolineProto(fname, proto); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAttachTarget, err)
	}
	id, _ := spec.TypeID(fn)
	if progtype.LSMHookDisabled(name) {
		return nil, fmt.Errorf("%w: attach_btf_id %d points to disabled hook %s", ErrAttachTarget, id, fname)
	}
	target.Name, target.Proto, target.Hook = fname, proto, name
	return target, nil
}

// checkSleepable checks a sleepable program (BPF_F_SLEEPABLE) as the
// kernel's check_attach_btf_id: only some types may sleep
// (can_be_sleepable), LSM programs only at the hooks the kernel lists,
// fentry, fexit and fmod_ret programs only at functions on the kernel's
// error injection list, which bpfvm does not know: it refuses them.
// Syscall programs must be sleepable.
func (v *verifier) checkSleepable() error {
	if v.pt.Name == progtype.Syscall.Name && !v.sleepable {
		return v.errorf(0, "Syscall programs can only be sleepable")
	}
	if !v.sleepable {
		return nil
	}
	if !v.pt.Sleepable {
		return v.errorf(0, "Only fentry/fexit/fmod_ret, lsm, iter, uprobe, and struct_ops programs can be sleepable")
	}
	tg := v.opts.Attach
	if tg == nil {
		return nil
	}
	switch {
	case tg.Attach == ebpf.AttachTraceIter:
		return nil
	case tg.Hook != "" && progtype.LSMHookSleepable(tg.Hook):
		return nil
	}
	return v.errorf(0, "%s is not sleepable", tg.Name)
}

// sleepableMap reports whether sleepable programs may use maps of type t
// (check_map_prog_compatibility): arrays, hashes, ring buffers, queues,
// stacks, local storage, maps of maps and arenas, whose elements outlive
// an RCU grace period or are not freed while programs run.
func sleepableMap(t maps.Type) bool {
	switch ebpf.MapType(t) {
	case ebpf.Hash, ebpf.LRUHash, ebpf.Array, ebpf.PerCPUHash, ebpf.PerCPUArray, ebpf.LRUCPUHash,
		ebpf.ArrayOfMaps, ebpf.HashOfMaps, ebpf.RingBuf, ebpf.UserRingbuf, ebpf.InodeStorage,
		ebpf.SkStorage, ebpf.TaskStorage, ebpf.CgroupStorage, ebpf.Queue, ebpf.Stack, ebpf.Arena:
		return true
	}
	return false
}

// returnRange is the range check_return_code enforces on R0 at the exit
// of a program attached to the target (LSM programs, by hook),
// whether only its low 32 bits count, and whether there is one; ok false
// leaves the program type's (progtype.Type.CheckReturn).
func (v *verifier) returnRange() (lo, hi int64, bits32, check, ok bool) {
	tg := v.opts.Attach
	if tg == nil || tg.Proto == nil {
		return 0, 0, false, false, false
	}
	switch tg.Attach {
	case ebpf.AttachLSMMac, ebpf.AttachLSMCgroup:
		lo, hi, bits32, check := progtype.LSMReturn(tg.Attach, tg.Hook, isVoid(btf.UnderlyingType(tg.Proto.Return)))
		return lo, hi, bits32, check, true
	}
	return 0, 0, false, false, false
}

// retvalLoad is what loading the return value slot of an lsm program's
// context gives (the kernel's is_retval access): a scalar within the
// hook's return range (void hooks have no return value slot).
func (v *verifier) retvalLoad(size int) Reg {
	tg := v.opts.Attach
	lo, hi, ok := progtype.LSMRetval(tg.Hook, isVoid(btf.UnderlyingType(tg.Proto.Return)))
	if !ok || tg.Attach != ebpf.AttachLSMMac {
		return v.loadedScalar(size)
	}
	// __mark_reg_s32_range: both the 64-bit and the 32-bit signed bounds
	// meet the range; then a narrow load's zero extension, as for any
	// context load.
	r := unknownScalar()
	r.Smin, r.Smax = lo, hi
	r.S32min, r.S32max = int32(lo), int32(hi)
	r.Scalar.Sync()
	r.Scalar.Truncate(size)
	return r
}
