package verifier

import (
	"fmt"

	"github.com/bpfvm/bpfvm/isa"
)

// checkKfuncCall verifies a call of a kernel function (src 2, the immediate
// is bpfvm's kfunc id, isa.Kfunc*). bpfvm knows the open-coded number
// iterator's three functions; any other id is rejected as the kernel
// rejects a kfunc it cannot find.
func (v *verifier) checkKfuncCall(pc int, id int32) error {
	if err := v.checkCallInLock(pc, id, true); err != nil {
		return err
	}
	name := isa.KfuncName(id)
	if name == "" || v.opts.Unprivileged {
		// The kernel lets only CAP_BPF loads call kernel functions.
		return v.errorf(pc, "calling kernel function %s is not allowed", kfuncText(id, name))
	}
	f := v.cur.cur()
	it, err := v.readReg(pc, isa.R1)
	if err != nil {
		return err
	}
	switch id {
	case isa.KfuncIterNumNew:
		for _, r := range []isa.Register{isa.R2, isa.R3} {
			reg, err := v.readReg(pc, r)
			if err != nil {
				return err
			}
			if reg.Type != ScalarValue {
				return v.errorf(pc, "R%d is not a scalar", r)
			}
		}
		slot, err := v.iterSlot(pc, it)
		if err != nil {
			return err
		}
		if slot.Types[0] == StackIter {
			return v.errorf(pc, "expected uninitialized iter_num as arg #0")
		}
		ref := v.newID()
		v.cur.Refs = append(v.cur.Refs, Ref{ID: ref, Insn: pc})
		*slot = Slot{Iter: IterSlot{Ref: ref, State: IterActive}}
		for i := range slot.Types {
			slot.Types[i] = StackIter
		}
		clearCallerSaved(f)
		f.Regs[0] = unknownScalar()
		return nil
	case isa.KfuncIterNumNext:
		slot, err := v.initializedIter(pc, it)
		if err != nil {
			return err
		}
		return v.iterNext(pc, slot)
	case isa.KfuncIterNumDestroy:
		slot, err := v.initializedIter(pc, it)
		if err != nil {
			return err
		}
		if !v.cur.releaseRef(slot.Iter.Ref) {
			return v.errorf(pc, "verifier internal error: iterator without a reference")
		}
		*slot = Slot{}
		clearCallerSaved(f)
		f.Regs[0] = Reg{Type: NotInit}
		return nil
	}
	return v.errorf(pc, "calling kernel function %s is not allowed", kfuncText(id, name))
}

// kfuncText names a kfunc in messages.
func kfuncText(id int32, name string) string {
	if name == "" {
		return fmt.Sprint(id)
	}
	return name
}

// clearCallerSaved marks R1-R5 unreadable after a call.
func clearCallerSaved(f *Frame) {
	for r := isa.R1; r <= isa.R5; r++ {
		f.Regs[r] = Reg{Type: NotInit}
	}
}
