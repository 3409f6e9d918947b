package runner

import (
	"encoding/binary"
	"fmt"

	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/vm"
)

// The socket an sk_lookup program selects with bpf_sk_assign (the
// kernel's bpf_sk_lookup_kern.selected_sk and no_reuseport). The context's
// sk field reads it; the test run reports its cookie in the context output
// (bpf_sk_lookup.cookie) and Output.Selected, and clears it before each
// repetition, as the kernel's bpf_prog_test_run_sk_lookup does.

// SelectSocket makes addr (a struct bpf_sock of the run's world, 0 for
// none) the run's selected socket.
func (r *Runner) SelectSocket(addr uint64, noReuseport bool) {
	r.ns.selected, r.ns.noReuseport = addr, noReuseport
	r.setSelectedShadow(addr)
}

// Selected returns the address of the run's selected socket, 0 for none.
func (r *Runner) Selected() uint64 { return r.ns.selected }

// setSelectedShadow makes verified programs' context sk loads (rewritten
// to the shadow slot of the run's socket) read addr.
func (r *Runner) setSelectedShadow(addr uint64) {
	if r.prog != nil && r.prog.Verified {
		*(*uint64)(vm.Ptr(r.buf.Addr() + Shadow(r.prog.Type) + ShadowSocket)) = addr
	}
}

// resetSelected clears the selection before a repetition.
func (r *Runner) resetSelected() {
	if r.ns.selected != 0 {
		r.ns.selected, r.ns.noReuseport = 0, false
		r.setSelectedShadow(r.sock)
	}
}

// bpf_sk_lookup's cookie field.
const skLookupCookie = 0

// finishSKLookup ends an sk_lookup test run: the selected socket's cookie
// goes to the context (the sk field's place, a union with cookie) and
// Output.Selected. A socket of a reuseport group selected without
// BPF_SK_LOOKUP_F_NO_REUSEPORT fails the run, as the kernel's test run,
// which has no packet to pick a group member with, fails with EOPNOTSUPP.
func finishSKLookup(r *Runner, ctx []byte, out *Output) error {
	binary.LittleEndian.PutUint64(ctx[skLookupCookie:], 0)
	if r.ns.selected == 0 {
		return nil
	}
	ref, ok := r.Sock(r.ns.selected)
	if !ok || ref.Socket == nil {
		return fmt.Errorf("sk_lookup: selected socket %#x is not the world's", r.ns.selected)
	}
	if ref.Socket.Reuseport && !r.ns.noReuseport {
		return fmt.Errorf("sk_lookup: selected socket %d is in a reuseport group and the test run has no packet to pick one with: %w",
			r.SockCookie(ref), progtype.ErrNotSupported)
	}
	out.Selected = r.SockCookie(ref)
	binary.LittleEndian.PutUint64(ctx[skLookupCookie:], out.Selected)
	return nil
}
