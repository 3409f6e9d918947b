package verifier

import (
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/progtype"
)

// bpf_spin_lock and bpf_spin_unlock: a program holds at most one map
// value's lock at a time, releases the lock it took, calls no helper or
// kernel function but bpf_spin_unlock while holding it (static functions
// only), and neither exits the program nor uses LD_ABS inside the locked
// region, as the kernel's process_spin_lock, do_check and
// check_resource_leak require. The held lock is a Ref of the state, as the
// kernel keeps it among the references (REF_TYPE_LOCK): the map and the id
// of the value pointer it was taken through, which pruning compares.

// helperSpinUnlock is the id of bpf_spin_unlock, the one helper a program
// holding a lock may call.
const helperSpinUnlock = 94

// heldLock returns the lock the state holds, or nil.
func (st *State) heldLock() *Ref {
	for i := range st.Refs {
		if st.Refs[i].Lock != nil {
			return &st.Refs[i]
		}
	}
	return nil
}

// checkCallInLock refuses a call of a helper (id, or a kernel function
// when kfunc is set) while the state holds a lock.
func (v *verifier) checkCallInLock(pc int, id int32, kfunc bool) error {
	if v.cur.heldLock() != nil && (kfunc && !graphLockAllowed(id) || !kfunc && id != helperSpinUnlock) {
		return v.errorf(pc, "function calls are not allowed while holding a lock")
	}
	return nil
}

// checkLockLeak refuses what ends the program or the function while the
// state holds a lock (check_resource_leak): what names it.
func (v *verifier) checkLockLeak(pc int, what string) error {
	if v.cur.heldLock() != nil {
		return v.errorf(pc, "%s cannot be used inside bpf_spin_lock-ed region", what)
	}
	return nil
}

// checkSectionLeak refuses what ends the program inside an RCU read
// section or with preemption disabled (check_resource_leak, after the
// references).
func (v *verifier) checkSectionLeak(pc int, what string) error {
	switch {
	case v.cur.RCULock:
		return v.errorf(pc, "%s cannot be used inside bpf_rcu_read_lock-ed region", what)
	case v.cur.PreemptDepth > 0:
		return v.errorf(pc, "%s cannot be used inside bpf_preempt_disable-ed region", what)
	}
	return nil
}

// checkMapLockUse refuses a program type that may not use a map whose
// values have a bpf_spin_lock (check_map_prog_compatibility).
func (v *verifier) checkMapLockUse(pc int, m *MapInfo) error {
	if v.pt == progtype.SocketFilter && hasField(v.mapFields(m), maps.SpinLock) {
		return v.errorf(pc, "socket filter progs cannot use bpf_spin_lock yet")
	}
	return nil
}

// hasField reports whether fields hold one of kind k.
func hasField(fields []maps.Field, k maps.FieldKind) bool {
	for _, f := range fields {
		if f.Kind == k {
			return true
		}
	}
	return false
}

// spinLockArg checks the argument of bpf_spin_lock (lock) or
// bpf_spin_unlock: a map value pointer at its value's bpf_spin_lock, at a
// constant offset; it takes or releases the lock in the state.
func (v *verifier) spinLockArg(pc int, regno isa.Register, reg *Reg, lock bool) error {
	if reg.Type != PtrToMapValue || reg.maybeNull() {
		// The kernel also takes allocated objects (ptr_), which bpfvm
		// does not have.
		return v.errorf(pc, "R%d type=%s expected=map_value, ptr_", regno, regTypeString(reg))
	}
	if !reg.Scalar.Var.IsConst() {
		return v.errorf(pc, "R%d doesn't have constant offset. bpf_spin_lock has to be at the constant offset", regno)
	}
	m := reg.Map
	if m.Spec.Value == nil {
		return v.errorf(pc, "map '%s' has to have BTF in order to use bpf_spin_lock", m.Name)
	}
	var at *maps.Field
	for _, f := range v.mapFields(m) {
		if f.Kind == maps.SpinLock {
			at = &f // the kernel keeps the last one's offset
		}
	}
	if at == nil {
		return v.errorf(pc, "map '%s' has no valid bpf_spin_lock", m.Name)
	}
	if off := int64(reg.Scalar.Var.Value) + int64(reg.Off); off != int64(at.Offset) {
		return v.errorf(pc, "off %d doesn't point to 'struct bpf_spin_lock' that is at %d", off, at.Offset)
	}
	held := v.cur.heldLock()
	if lock {
		if held != nil {
			return v.errorf(pc, "Locking two bpf_spin_locks are not allowed")
		}
		v.cur.Refs = append(v.cur.Refs, Ref{ID: reg.ID, Insn: pc, Lock: m})
		return nil
	}
	if held == nil {
		return v.errorf(pc, "bpf_spin_unlock without taking a lock")
	}
	if held.ID != reg.ID || held.Lock != m {
		return v.errorf(pc, "bpf_spin_unlock of different lock")
	}
	for i := range v.cur.Refs {
		if &v.cur.Refs[i] == held {
			v.cur.Refs = append(v.cur.Refs[:i], v.cur.Refs[i+1:]...)
			break
		}
	}
	// What the lock protected is no longer safe to touch.
	v.cur.invalidateNonOwning()
	return nil
}
