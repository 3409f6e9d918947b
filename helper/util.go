package helper

import (
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
	"github.com/cilium/ebpf/btf"
)

// More kernel errno values helpers return negated (see helper.go).
const (
	eacces   = 13
	efault   = 14
	erange   = 34
	enotsupp = 524 // the kernel-internal ENOTSUPP some helpers return
)

// neg returns errno e as a helper's negative return value.
func neg(e int64) uint64 { return uint64(-e) }

// readableSpan returns how many bytes from addr on a run may read: the rest
// of the stack or region holding addr, or 0. Unlike Env.Check it applies in
// unchecked mode too: helpers such as bpf_trace_printk's %s take arbitrary
// values that even verified programs may pass, and the kernel reads them
// with fault-tolerant copies.
func readableSpan(e *vm.Env, addr uint64) uint64 {
	if s := e.Stack; addr >= s.Start && addr < s.End {
		return s.End - addr
	}
	for _, r := range e.Regions {
		if addr >= r.Start && addr < r.End {
			return r.End - addr
		}
	}
	return 0
}

// probeRead returns n bytes at addr if the run may read them all, or nil,
// as the kernel's copy_from_kernel_nofault fails.
func probeRead(e *vm.Env, addr, n uint64) []byte {
	if n == 0 || readableSpan(e, addr) < n {
		return nil
	}
	return vm.Slice(addr, n)
}

// probeString reads a NUL-terminated string at addr of at most limit bytes
// including the NUL, as the kernel's strncpy_from_kernel_nofault: it
// returns the string and the bytes it occupies in a limit-sized buffer
// (len+1, or limit when truncated); ok is false on a fault before the end.
func probeString(e *vm.Env, addr uint64, limit int) (s []byte, used int, ok bool) {
	if limit <= 0 {
		return nil, 0, false
	}
	span := readableSpan(e, addr)
	n := min(span, uint64(limit))
	b := vm.Slice(addr, n)
	for i, c := range b {
		if c == 0 {
			return b[:i], i + 1, true
		}
	}
	if n == uint64(limit) {
		return b[:limit-1], limit, true
	}
	return nil, 0, false
}

// layoutOf returns what find reads out of the program's kernel BTF (the
// offsets of kernel structures a helper walks), built once per program
// under key (runner.Program.Layout); nil without BTF or when find finds
// too little.
func layoutOf[L any](p *runner.Program, key any, find func(*btf.Spec) *L) *L {
	l, _ := p.Layout(key, func(spec *btf.Spec) any {
		if spec == nil {
			return (*L)(nil)
		}
		return find(spec)
	}).(*L)
	return l
}
