package helper

import (
	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// dynptrHelpers are the dynptr helpers (kernel/bpf/helpers.c and, for the
// ring buffer's, kernel/bpf/ringbuf.c). The verifier tracks the dynptrs
// they make and take (verifier/dynptr.go); at run time a dynptr is the
// kernel's struct bpf_dynptr_kern, 16 bytes of the program's stack: the
// data pointer (0 for a NULL dynptr), then the size with the kind and the
// read-only bit in its top bits, then the offset into the data.
var dynptrHelpers = []Helper{
	{Proto: Proto{Name: "bpf_dynptr_from_mem", Args: [5]ArgType{ArgUninitMem, ArgConstSizeOrZero, ArgAnything, ArgDynptrLocalUninit}}, Func: helperDynptrFromMem},
	{Proto: Proto{Name: "bpf_ringbuf_reserve_dynptr", Args: [5]ArgType{ArgConstMapPtr, ArgAnything, ArgAnything, ArgDynptrRingbufUninit}}, Func: helperRingbufReserveDynptr},
	{Proto: Proto{Name: "bpf_ringbuf_submit_dynptr", Args: [5]ArgType{ArgDynptrRingbufRelease, ArgAnything}, Ret: RetVoid}, Func: helperRingbufSubmitDynptr},
	{Proto: Proto{Name: "bpf_ringbuf_discard_dynptr", Args: [5]ArgType{ArgDynptrRingbufRelease, ArgAnything}, Ret: RetVoid}, Func: helperRingbufDiscardDynptr},
	{Proto: Proto{Name: "bpf_dynptr_read", Args: [5]ArgType{ArgUninitMem, ArgConstSizeOrZero, ArgDynptr, ArgAnything, ArgAnything}}, Func: helperDynptrRead},
	{Proto: Proto{Name: "bpf_dynptr_write", Args: [5]ArgType{ArgDynptr, ArgAnything, ArgMem, ArgConstSizeOrZero, ArgAnything}}, Func: helperDynptrWrite},
	{Proto: Proto{Name: "bpf_dynptr_data", Args: [5]ArgType{ArgDynptr, ArgAnything, ArgConstAllocSizeOrZero}, Ret: RetDynptrMemOrNull}, Func: helperDynptrData},
}

// dynptrKfuncs are the dynptr kfuncs (kernel/bpf/helpers.c's common set,
// net/core/filter.c's skb and xdp sets). The verifier checks them with the
// dynptr rules (verifier/dynptr.go), not the generic ones.
var dynptrKfuncs = []Kfunc{
	{Name: "bpf_dynptr_from_skb", Decl: "int bpf_dynptr_from_skb(struct __sk_buff *s, u64 flags, struct bpf_dynptr *ptr__uninit)", Flags: KfTrustedArgs,
		Hooks: HookTC | HookSchedAct | HookSkSkb | HookSocketFilter | HookCgroup | HookLWT | HookNetfilter | HookTracing, Func: kfuncDynptrFromSkb},
	{Name: "bpf_dynptr_from_xdp", Decl: "int bpf_dynptr_from_xdp(struct xdp_md *x, u64 flags, struct bpf_dynptr *ptr__uninit)", Hooks: HookXDP, Func: kfuncDynptrFromXdp},
	{Name: "bpf_dynptr_slice", Decl: "void *bpf_dynptr_slice(const struct bpf_dynptr *p, u32 offset, void *buffer__opt, u32 buffer__szk)", Flags: KfRetNull, Hooks: HookCommon, Func: kfuncDynptrSlice},
	{Name: "bpf_dynptr_slice_rdwr", Decl: "void *bpf_dynptr_slice_rdwr(const struct bpf_dynptr *p, u32 offset, void *buffer__opt, u32 buffer__szk)", Flags: KfRetNull, Hooks: HookCommon, Func: kfuncDynptrSliceRdwr},
	{Name: "bpf_dynptr_adjust", Decl: "int bpf_dynptr_adjust(const struct bpf_dynptr *p, u32 start, u32 end)", Hooks: HookCommon, Func: kfuncDynptrAdjust},
	{Name: "bpf_dynptr_clone", Decl: "int bpf_dynptr_clone(const struct bpf_dynptr *p, struct bpf_dynptr *clone__uninit)", Hooks: HookCommon, Func: kfuncDynptrClone},
	{Name: "bpf_dynptr_size", Decl: "__u32 bpf_dynptr_size(const struct bpf_dynptr *p)", Hooks: HookCommon, Func: kfuncDynptrSize},
	{Name: "bpf_dynptr_is_null", Decl: "bool bpf_dynptr_is_null(const struct bpf_dynptr *p)", Hooks: HookCommon, Func: kfuncDynptrIsNull},
	{Name: "bpf_dynptr_is_rdonly", Decl: "bool bpf_dynptr_is_rdonly(const struct bpf_dynptr *p)", Hooks: HookCommon, Func: kfuncDynptrIsRdonly},
}

// Dynptr kinds (enum bpf_dynptr_type) and the layout of the size word.
const (
	dynptrLocal   = 1
	dynptrRingbuf = 2
	dynptrSKB     = 3
	dynptrXDP     = 4

	dynptrSizeMask  = 1<<24 - 1 // DYNPTR_SIZE_MASK, also DYNPTR_MAX_SIZE
	dynptrTypeShift = 28
	dynptrRdonlyBit = 1 << 31
)

// dynptrKern is struct bpf_dynptr_kern.
type dynptrKern struct {
	data   uint64
	size   uint32
	offset uint32
}

// dynptrAt returns the dynptr at addr, checked in checked mode: a program
// the verifier did not see may pass any pointer.
func dynptrAt(e *vm.Env, addr uint64) (*dynptrKern, error) {
	if err := e.Check(addr, 16, true); err != nil {
		return nil, err
	}
	return (*dynptrKern)(vm.Ptr(addr)), nil
}

func (d *dynptrKern) init(data uint64, kind uint32, size uint32) {
	d.data, d.size, d.offset = data, size|kind<<dynptrTypeShift, 0
}

func (d *dynptrKern) setNull()        { *d = dynptrKern{} }
func (d *dynptrKern) len() uint64     { return uint64(d.size & dynptrSizeMask) }
func (d *dynptrKern) kind() uint32    { return d.size >> dynptrTypeShift & 7 }
func (d *dynptrKern) rdonly() bool    { return d.size&dynptrRdonlyBit != 0 }
func (d *dynptrKern) setLen(n uint32) { d.size = d.size&^dynptrSizeMask | n }
func (d *dynptrKern) fits(off, n uint64) bool {
	// bpf_dynptr_check_off_len
	size := d.len()
	return n <= size && off <= size-n
}

// helperDynptrFromMem is bpf_dynptr_from_mem(data, size, flags, ptr): a
// local dynptr over size bytes of data; -E2BIG for more than 16 MiB - 1,
// -EINVAL for flags, and a NULL dynptr after either.
func helperDynptrFromMem(e *vm.Env, r1, r2, r3, r4, _ uint64) (uint64, error) {
	d, err := dynptrAt(e, r4)
	if err != nil {
		return 0, err
	}
	size := uint32(r2)
	switch {
	case size > dynptrSizeMask:
		d.setNull()
		return neg(e2big), nil
	case r3 != 0:
		d.setNull()
		return neg(einval), nil
	}
	d.init(r1, dynptrLocal, size)
	return 0, nil
}

// helperRingbufReserveDynptr is bpf_ringbuf_reserve_dynptr(ringbuf, size,
// flags, ptr): a ring buffer dynptr over a new sample, or a NULL one and
// -EINVAL (flags, or no room) or -E2BIG (size). Either way the program
// must submit or discard it.
func helperRingbufReserveDynptr(e *vm.Env, r1, r2, r3, r4, _ uint64) (uint64, error) {
	d, err := dynptrAt(e, r4)
	if err != nil {
		return 0, err
	}
	m, err := mapArg(e, r1)
	if err != nil {
		return 0, err
	}
	size := uint32(r2)
	rb, ok := m.(ringBuffer)
	switch {
	case r3 != 0 || !ok:
		d.setNull()
		return neg(einval), nil
	case size > dynptrSizeMask:
		d.setNull()
		return neg(e2big), nil
	}
	p := rb.Reserve(uint64(size))
	if p == nil {
		d.setNull()
		return neg(einval), nil
	}
	addr := vm.Addr(p)
	runner.Of(e).Reserve(e, rb, addr, uint64(size))
	d.init(addr, dynptrRingbuf, size)
	return 0, nil
}

// helperRingbufSubmitDynptr is bpf_ringbuf_submit_dynptr(ptr, flags).
func helperRingbufSubmitDynptr(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	return 0, ringCommitDynptr(e, r1, false)
}

// helperRingbufDiscardDynptr is bpf_ringbuf_discard_dynptr(ptr, flags).
func helperRingbufDiscardDynptr(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	return 0, ringCommitDynptr(e, r1, true)
}

// ringCommitDynptr submits or discards a ring buffer dynptr's sample,
// nothing for a NULL dynptr, and makes the dynptr NULL.
func ringCommitDynptr(e *vm.Env, addr uint64, discard bool) error {
	d, err := dynptrAt(e, addr)
	if err != nil {
		return err
	}
	if d.data == 0 {
		return nil
	}
	if err := ringCommit(e, d.data, discard); err != nil {
		return err
	}
	d.setNull()
	return nil
}

// skbDynptrBytes returns the n packet bytes at off of an skb dynptr, or
// nil past the packet (which may have shrunk since the dynptr was made).
func skbDynptrBytes(e *vm.Env, off, n uint64) []byte {
	pkt := runner.Of(e).PacketBytes()
	if off > 1<<31-1 || off+n > uint64(len(pkt)) {
		return nil
	}
	return pkt[off : off+n]
}

// helperDynptrRead is bpf_dynptr_read(dst, len, src, offset, flags).
func helperDynptrRead(e *vm.Env, r1, r2, r3, r4, r5 uint64) (uint64, error) {
	n, off := uint64(uint32(r2)), uint64(uint32(r4))
	to, err := e.Bytes(r1, n, true)
	if err != nil {
		return 0, err
	}
	d, err := dynptrAt(e, r3)
	if err != nil {
		return 0, err
	}
	if d.data == 0 || r5 != 0 {
		return neg(einval), nil
	}
	if !d.fits(off, n) {
		return neg(e2big), nil
	}
	off += uint64(d.offset)
	switch d.kind() {
	case dynptrLocal, dynptrRingbuf:
		from, err := e.Bytes(d.data+off, n, false)
		if err != nil {
			return 0, err
		}
		copy(to, from)
	case dynptrSKB:
		b := skbDynptrBytes(e, off, n)
		if b == nil {
			clear(to)
			return neg(efault), nil
		}
		copy(to, b)
	case dynptrXDP:
		b, errno := xdpBytes(e, off, n)
		if errno != 0 {
			return neg(errno), nil
		}
		copy(to, b)
	default:
		return neg(efault), nil
	}
	return 0, nil
}

// helperDynptrWrite is bpf_dynptr_write(dst, offset, src, len, flags):
// -EINVAL into a NULL or read-only dynptr; flags only for skb dynptrs
// (bpf_skb_store_bytes's).
func helperDynptrWrite(e *vm.Env, r1, r2, r3, r4, r5 uint64) (uint64, error) {
	n, off := uint64(uint32(r4)), uint64(uint32(r2))
	from, err := e.Bytes(r3, n, false)
	if err != nil {
		return 0, err
	}
	d, err := dynptrAt(e, r1)
	if err != nil {
		return 0, err
	}
	if d.data == 0 || d.rdonly() {
		return neg(einval), nil
	}
	if !d.fits(off, n) {
		return neg(e2big), nil
	}
	off += uint64(d.offset)
	switch d.kind() {
	case dynptrLocal, dynptrRingbuf:
		if r5 != 0 {
			return neg(einval), nil
		}
		to, err := e.Bytes(d.data+off, n, true)
		if err != nil {
			return 0, err
		}
		copy(to, from)
	case dynptrSKB:
		if r5&^(flagRecomputeCsum|flagInvalidateHash) != 0 {
			return neg(einval), nil
		}
		b := skbDynptrBytes(e, off, n)
		if b == nil {
			return neg(efault), nil
		}
		copy(b, from)
	case dynptrXDP:
		if r5 != 0 {
			return neg(einval), nil
		}
		b, errno := xdpBytes(e, off, n)
		if errno != 0 {
			return neg(errno), nil
		}
		copy(b, from)
	default:
		return neg(efault), nil
	}
	return 0, nil
}

// helperDynptrData is bpf_dynptr_data(ptr, offset, len): a pointer to len
// bytes of a writable local or ring buffer dynptr, NULL otherwise (packet
// dynptrs take bpf_dynptr_slice).
func helperDynptrData(e *vm.Env, r1, r2, r3, _, _ uint64) (uint64, error) {
	d, err := dynptrAt(e, r1)
	if err != nil {
		return 0, err
	}
	n, off := uint64(uint32(r3)), uint64(uint32(r2))
	if d.data == 0 || !d.fits(off, n) || d.rdonly() {
		return 0, nil
	}
	switch d.kind() {
	case dynptrLocal, dynptrRingbuf:
		addr := d.data + uint64(d.offset) + off
		if _, err := e.Bytes(addr, n, true); err != nil {
			return 0, err
		}
		return addr, nil
	}
	return 0, nil
}

// packetWritable reports whether programs of the kind may write the packet
// directly (the kernel's may_access_direct_pkt_data for BPF_WRITE): an skb
// dynptr of the others is read-only (bpf_dynptr_from_skb_rdonly).
func packetWritable(k ebpf.ProgramType) bool {
	switch k {
	case ebpf.SchedCLS, ebpf.SchedACT, ebpf.XDP, ebpf.LWTXmit, ebpf.SkSKB, ebpf.SkMsg, ebpf.CGroupSockopt:
		return true
	}
	return false
}

// kfuncDynptrFromSkb is bpf_dynptr_from_skb(skb, flags, ptr): an skb
// dynptr over the packet, read-only where the program may not write it.
func kfuncDynptrFromSkb(e *vm.Env, r1, r2, r3, _, _ uint64) (uint64, error) {
	d, err := dynptrAt(e, r3)
	if err != nil {
		return 0, err
	}
	if r2 != 0 {
		d.setNull()
		return neg(einval), nil
	}
	r := runner.Of(e)
	d.init(r1, dynptrSKB, uint32(len(r.PacketBytes())))
	if p := r.Program(); p == nil || !packetWritable(p.Kind) {
		d.size |= dynptrRdonlyBit
	}
	return 0, nil
}

// kfuncDynptrFromXdp is bpf_dynptr_from_xdp(xdp, flags, ptr).
func kfuncDynptrFromXdp(e *vm.Env, r1, r2, r3, _, _ uint64) (uint64, error) {
	d, err := dynptrAt(e, r3)
	if err != nil {
		return 0, err
	}
	if r2 != 0 {
		d.setNull()
		return neg(einval), nil
	}
	d.init(r1, dynptrXDP, uint32(len(runner.Of(e).PacketBytes())))
	return 0, nil
}

// kfuncDynptrSlice is bpf_dynptr_slice(ptr, offset, buffer, size): a
// pointer to size bytes at offset, the data itself where it is contiguous
// (bpfvm's packets always are), or NULL when out of range.
func kfuncDynptrSlice(e *vm.Env, r1, r2, r3, r4, _ uint64) (uint64, error) {
	return dynptrSlice(e, r1, r2, r3, r4, false)
}

// kfuncDynptrSliceRdwr is bpf_dynptr_slice_rdwr: bpf_dynptr_slice, NULL
// for a read-only dynptr.
func kfuncDynptrSliceRdwr(e *vm.Env, r1, r2, r3, r4, _ uint64) (uint64, error) {
	return dynptrSlice(e, r1, r2, r3, r4, true)
}

func dynptrSlice(e *vm.Env, r1, r2, r3, r4 uint64, rdwr bool) (uint64, error) {
	d, err := dynptrAt(e, r1)
	if err != nil {
		return 0, err
	}
	n, off := uint64(uint32(r4)), uint64(uint32(r2))
	if r3 != 0 {
		// The buffer the kernel may copy into, which the verifier
		// checked writable.
		if _, err := e.Bytes(r3, n, true); err != nil {
			return 0, err
		}
	}
	if d.data == 0 || rdwr && d.rdonly() || !d.fits(off, n) {
		return 0, nil
	}
	off += uint64(d.offset)
	switch d.kind() {
	case dynptrLocal, dynptrRingbuf:
		addr := d.data + off
		if _, err := e.Bytes(addr, n, rdwr); err != nil {
			return 0, err
		}
		return addr, nil
	case dynptrSKB:
		if b := skbDynptrBytes(e, off, n); b != nil {
			return runner.Of(e).Packet().Data + off, nil
		}
	case dynptrXDP:
		if _, errno := xdpBytes(e, off, n); errno == 0 {
			return runner.Of(e).Packet().Data + off, nil
		}
	}
	return 0, nil
}

// kfuncDynptrAdjust is bpf_dynptr_adjust(ptr, start, end): the dynptr
// narrowed to [start, end) of what it was; -EINVAL for a NULL dynptr or
// start > end, -ERANGE past its size.
func kfuncDynptrAdjust(e *vm.Env, r1, r2, r3, _, _ uint64) (uint64, error) {
	d, err := dynptrAt(e, r1)
	if err != nil {
		return 0, err
	}
	start, end := uint32(r2), uint32(r3)
	if d.data == 0 || start > end {
		return neg(einval), nil
	}
	if size := uint32(d.len()); start > size || end > size {
		return neg(erange), nil
	}
	d.offset += start
	d.setLen(end - start)
	return 0, nil
}

// kfuncDynptrClone is bpf_dynptr_clone(ptr, clone): a copy; -EINVAL and a
// NULL clone for a NULL dynptr.
func kfuncDynptrClone(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
	d, err := dynptrAt(e, r1)
	if err != nil {
		return 0, err
	}
	c, err := dynptrAt(e, r2)
	if err != nil {
		return 0, err
	}
	if d.data == 0 {
		c.setNull()
		return neg(einval), nil
	}
	*c = *d
	return 0, nil
}

// kfuncDynptrSize is bpf_dynptr_size(ptr): its size, -EINVAL (as a u32)
// for a NULL dynptr.
func kfuncDynptrSize(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	d, err := dynptrAt(e, r1)
	if err != nil {
		return 0, err
	}
	if d.data == 0 {
		return uint64(uint32(neg(einval))), nil
	}
	return d.len(), nil
}

// kfuncDynptrIsNull is bpf_dynptr_is_null(ptr).
func kfuncDynptrIsNull(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	d, err := dynptrAt(e, r1)
	if err != nil {
		return 0, err
	}
	return b2u(d.data == 0), nil
}

// kfuncDynptrIsRdonly is bpf_dynptr_is_rdonly(ptr): false for a NULL
// dynptr.
func kfuncDynptrIsRdonly(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	d, err := dynptrAt(e, r1)
	if err != nil {
		return 0, err
	}
	return b2u(d.data != 0 && d.rdonly()), nil
}
