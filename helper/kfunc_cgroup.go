package helper

import (
	"encoding/binary"
	"slices"

	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// cgroupKfuncs acquire, release and walk cgroups (kernel/bpf/helpers.c's
// generic set). A cgroup a program acquires by id is an object of the
// kernel object table (kobj.go) holding the id, reference counted; the
// cgroups of the world, which the run reads through tasks, are the
// kernel's, whose lifetime a run does not change.
var cgroupKfuncs = []Kfunc{
	{Name: "bpf_cgroup_acquire", Decl: "struct cgroup *bpf_cgroup_acquire(struct cgroup *cgrp)", Flags: KfAcquire | KfRCU | KfRetNull, Hooks: HooksGeneric, Func: kfuncCgroupAcquire},
	{Name: "bpf_cgroup_release", Decl: "void bpf_cgroup_release(struct cgroup *cgrp)", Flags: KfRelease, Hooks: HooksGeneric, Func: kfuncCgroupRelease},
	{Name: "bpf_cgroup_ancestor", Decl: "struct cgroup *bpf_cgroup_ancestor(struct cgroup *cgrp, int level)", Flags: KfAcquire | KfRCU | KfRetNull, Hooks: HooksGeneric, Func: kfuncCgroupAncestor},
	{Name: "bpf_cgroup_from_id", Decl: "struct cgroup *bpf_cgroup_from_id(u64 cgid)", Flags: KfAcquire | KfRetNull, Hooks: HooksGeneric, Func: kfuncCgroupFromID},
	{Name: "bpf_task_under_cgroup", Decl: "long bpf_task_under_cgroup(struct task_struct *task, struct cgroup *ancestor)", Flags: KfRCU, Hooks: HooksGeneric, Func: kfuncTaskUnderCgroup},
}

// cgroupObjSize is the size of a cgroup object: its id.
const cgroupObjSize = 8

// kfuncCgroupAcquire is bpf_cgroup_acquire(cgrp): cgrp, with a reference.
func kfuncCgroupAcquire(_ *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	if lookupKobj(r1, kobjCgroup) != nil && !getKobj(r1) {
		return 0, nil
	}
	return r1, nil
}

// kfuncCgroupRelease is bpf_cgroup_release(cgrp).
func kfuncCgroupRelease(_ *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	if lookupKobj(r1, kobjCgroup) != nil {
		putKobj(r1)
	}
	return 0, nil
}

// cgroupChain is the ids of the cgroup cg and its ancestors, the root's
// first (index = level), or nil for a cgroup the world does not know.
func cgroupChain(r *runner.Runner, cg uint64) []uint64 {
	t, _ := r.Task()
	if i := slices.Index(append(slices.Clip(t.Ancestors), t.CgroupID), cg); i >= 0 {
		return append(slices.Clip(t.Ancestors[:min(i, len(t.Ancestors))]), cg)
	}
	if cg == runner.RootCgroup {
		return []uint64{cg}
	}
	n := r.Net()
	known := cg == n.Cgroup || cg == n.AttachCgroup
	for _, c := range n.Cgroups {
		known = known || c.ID == cg
	}
	if !known {
		return nil
	}
	chain := []uint64{cg}
	for range len(n.Cgroups) + 1 {
		if chain[0] == runner.RootCgroup {
			break
		}
		parent := uint64(runner.RootCgroup)
		for _, c := range n.Cgroups {
			if c.ID == chain[0] && c.Parent != 0 {
				parent = c.Parent
			}
		}
		chain = append([]uint64{parent}, chain...)
	}
	return chain
}

// cgroupObject returns a new cgroup object for id with one reference, or
// NULL when the world has no such cgroup or memory is short.
func cgroupObject(r *runner.Runner, id uint64) uint64 {
	if cgroupChain(r, id) == nil {
		return 0
	}
	addr := newKobj(kobjCgroup, cgroupObjSize, id)
	if addr != 0 {
		binary.LittleEndian.PutUint64(vm.Slice(addr, 8), id)
	}
	return addr
}

// kfuncCgroupFromID is bpf_cgroup_from_id(cgid): the cgroup, referenced,
// or NULL.
func kfuncCgroupFromID(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	return cgroupObject(runner.Of(e), r1), nil
}

// cgroupID returns the id of a cgroup object, ok false for a pointer that
// is not one.
func cgroupID(addr uint64) (uint64, bool) {
	o := lookupKobj(addr, kobjCgroup)
	if o == nil {
		return 0, false
	}
	return o.id, true
}

// kfuncCgroupAncestor is bpf_cgroup_ancestor(cgrp, level): the ancestor
// at level (the root's 0), referenced, or NULL for a level out of range.
func kfuncCgroupAncestor(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
	id, ok := cgroupID(r1)
	if !ok {
		return 0, nil
	}
	r := runner.Of(e)
	chain := cgroupChain(r, id)
	level := int32(r2)
	if level < 0 || int(level) >= len(chain) {
		return 0, nil
	}
	return cgroupObject(r, chain[level]), nil
}

// kfuncTaskUnderCgroup is bpf_task_under_cgroup(task, ancestor): whether
// the task's cgroup is ancestor or below it. The world knows the current
// task's cgroup; other tasks are in the root cgroup.
func kfuncTaskUnderCgroup(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
	id, ok := cgroupID(r2)
	if !ok {
		return 0, nil
	}
	r := runner.Of(e)
	cg := uint64(runner.RootCgroup)
	if t, _ := r.Task(); r1 == r.Trace().TaskStruct {
		cg = t.CgroupID
	}
	for _, a := range cgroupChain(r, cg) {
		if a == id {
			return 1, nil
		}
	}
	return 0, nil
}
