package progtype

import (
	"encoding/binary"
	"unsafe"

	"github.com/cilium/ebpf"
)

// Iter is an iterator program (BPF_PROG_TYPE_TRACING with BPF_TRACE_ITER,
// the iter/<target> sections, kernel/bpf/bpf_iter.c): run once per element
// of what its target walks (tasks, maps, a map's elements...), and once
// more at the end with the element NULL, printing to the reader's
// seq_file with bpf_seq_printf and bpf_seq_write. Its context is struct
// bpf_iter__<target>, typed by the prototype of the kernel's
// bpf_iter_<target> function (ProgramSpec.AttachTo names the target):
// struct bpf_iter_meta *meta first (the seq_file, the element's number),
// then the element, which may be NULL. It returns 0, or 1 to have the
// element shown again (bpfvm stops the walk there).
var Iter = &Type{
	Name:        "iter",
	ContextSize: IterContextSize,
	Attach:      ebpf.AttachTraceIter,
	BTFArgs:     true,
	Helpers:     tracingHelpers(ebpf.AttachTraceIter, false),
	CheckReturn: true,
	ReturnMin:   0,
	ReturnMax:   1,
	Sleepable:   true,
	Trace:       &TraceRun{},
	Setup:       iterSetup,
}

// IterContextSize is the size of an iterator run's context: the argument
// slots, then the struct bpf_iter_meta and the images of the objects the
// slots point to, which bpfvm lays out in the context's memory so that the
// program's loads through the pointers read them (IterArea).
const IterContextSize = 1 << 16

// IterArea is the offset in an iterator's context where what the argument
// slots point to starts: bpf_iter_meta, then the element's images.
const IterArea = 8 * MaxTracingArgs

// IterPointer is the value a context input holds for a pointer to off
// bytes into the run's context (IterArea and after): the run replaces it
// with the address there, so that the argument slots, the meta's seq_file
// and the images can point at each other wherever the run's memory is.
// The tag makes the value a non-canonical x86-64 address, which no real
// pointer is.
func IterPointer(off uint32) uint64 { return iterTag | uint64(off) }

const (
	iterTag  = 0xbf5e_0000_0000_0000
	iterMask = 0xffff_ffff_ffff_0000
)

// iterSetup relocates the IterPointers of an iterator's context.
func iterSetup(ctx, _, _ []byte, _ bool) error {
	if len(ctx) < IterContextSize {
		return nil
	}
	base := uint64(uintptr(unsafe.Pointer(&ctx[0])))
	for i := 0; i+8 <= IterContextSize; i += 8 {
		if v := binary.NativeEndian.Uint64(ctx[i:]); v&iterMask == iterTag {
			binary.NativeEndian.PutUint64(ctx[i:], base+v&^iterMask)
		}
	}
	return nil
}
