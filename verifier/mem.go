package verifier

import (
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/progtype"
)

// access is one memory access being checked.
type access struct {
	pc    int
	reg   isa.Register // the pointer register
	off   int32        // instruction offset
	size  int
	write bool
	// signed is set for sign-extending loads (BPF_MEMSX).
	signed bool
	// val is the register being stored (nil for loads and immediates);
	// imm is set for stores of an immediate.
	val *Reg
	imm *int64
	// src is the stored register itself, for linking it with its spill,
	// and valReg its number.
	src    *Reg
	valReg isa.Register
	// helper is set for a helper's (or global function's) memory
	// argument, which may not touch a kptr (the kernel's ACCESS_HELPER).
	helper bool
}

func (v *verifier) checkLoad(pc int, ins isa.Instruction) error {
	ptr, err := v.readReg(pc, ins.Src)
	if err != nil {
		return err
	}
	if err := v.checkWriteReg(pc, ins.Dst); err != nil {
		return err
	}
	signed := ins.Op&0xe0 == isa.ModeMEMSX
	a := access{pc: pc, reg: ins.Src, off: int32(ins.Off), size: isa.SizeBytes(ins.Op), signed: signed}
	res, err := v.checkMemAccess(ptr, a)
	if err != nil {
		return err
	}
	if signed && res.Type == ScalarValue {
		res.Scalar.SignExtendLoad(a.size)
	}
	v.cur.cur().Regs[ins.Dst] = res
	return nil
}

func (v *verifier) checkStore(pc int, ins isa.Instruction) error {
	ptr, err := v.readReg(pc, ins.Dst)
	if err != nil {
		return err
	}
	a := access{pc: pc, reg: ins.Dst, off: int32(ins.Off), size: isa.SizeBytes(ins.Op), write: true}
	if ins.Class() == isa.ClassSTX {
		val, err := v.readReg(pc, ins.Src)
		if err != nil {
			return err
		}
		c := *val
		a.val, a.src, a.valReg = &c, val, ins.Src
	} else {
		imm := int64(ins.Imm)
		a.imm = &imm
	}
	_, err = v.checkMemAccess(ptr, a)
	return err
}

func (v *verifier) checkAtomic(pc int, ins isa.Instruction) error {
	size := isa.SizeBytes(ins.Op)
	switch ins.Imm {
	case isa.AtomicLoadAcquire:
		ptr, err := v.readReg(pc, ins.Src)
		if err != nil {
			return err
		}
		if err := v.checkWriteReg(pc, ins.Dst); err != nil {
			return err
		}
		res, err := v.checkMemAccess(ptr, access{pc: pc, reg: ins.Src, off: int32(ins.Off), size: size})
		if err != nil {
			return err
		}
		v.cur.cur().Regs[ins.Dst] = res
		return nil
	case isa.AtomicStoreRelease:
		return v.checkStore(pc, isa.Instruction{Op: isa.ClassSTX | isa.ModeMEM | ins.Op&0x18, Dst: ins.Dst, Src: ins.Src, Off: ins.Off})
	}
	src, err := v.readReg(pc, ins.Src)
	if err != nil {
		return err
	}
	if ins.Imm == isa.AtomicCmpXchg {
		if _, err := v.readReg(pc, isa.R0); err != nil {
			return err
		}
		if v.cur.cur().Regs[0].Type.IsPointer() && v.opts.Unprivileged {
			return v.errorf(pc, "R0 leaks addr into mem")
		}
	}
	if src.Type.IsPointer() && v.opts.Unprivileged {
		return v.errorf(pc, "R%d leaks addr into mem", ins.Src)
	}
	ptr, err := v.readReg(pc, ins.Dst)
	if err != nil {
		return err
	}
	switch ptr.Type {
	case PtrToCtx, PtrToPacket, PtrToPacketMeta, PtrToFlowKeys, PtrToSockCommon, PtrToSocket, PtrToTCPSock:
		return v.errorf(pc, "BPF_ATOMIC stores into R%d %s is not allowed", ins.Dst, regTypeString(ptr))
	case PtrToArena:
		if !arenaAtomicOK(ins.Imm) { // arena.go
			return v.errorf(pc, "BPF_ATOMIC stores into R%d %s is not allowed", ins.Dst, regTypeString(ptr))
		}
	}
	if ins.Imm&isa.AtomicFetch != 0 && ins.Imm != isa.AtomicCmpXchg {
		// The fetch forms load the old value into src.
		if err := v.checkWriteReg(pc, ins.Src); err != nil {
			return err
		}
	}
	if err := v.checkAlign(pc, ptr, int32(ins.Off), size, true); err != nil {
		return err
	}
	// An atomic is a read and a write of the same memory.
	a := access{pc: pc, reg: ins.Dst, off: int32(ins.Off), size: size}
	loaded, err := v.checkMemAccess(ptr, a)
	if err != nil {
		return err
	}
	unk := unknownScalar()
	a.write, a.val = true, &unk
	if _, err := v.checkMemAccess(ptr, a); err != nil {
		return err
	}
	if loaded.Type != ScalarValue {
		loaded = unknownScalar()
	}
	loaded.Scalar.Truncate(size)
	if ptr.Type == PtrToArena {
		loaded = arenaFetch() // arena.go
	}
	f := v.cur.cur()
	switch {
	case ins.Imm == isa.AtomicCmpXchg:
		f.Regs[0] = loaded
	case ins.Imm&isa.AtomicFetch != 0:
		f.Regs[ins.Src] = loaded
	}
	return nil
}

// checkMemAccess checks a load or store through ptr and returns what a load
// yields, the kernel's check_mem_access.
func (v *verifier) checkMemAccess(ptr *Reg, a access) (Reg, error) {
	// The access itself is checked first, as the kernel's
	// save_aux_ptr_type follows check_mem_access.
	res, err := v.memAccess(ptr, a)
	if err != nil {
		return Reg{}, err
	}
	aux := &v.aux[a.pc]
	if !a.write && probed(ptr) {
		aux.Probe = true
	}
	if aux.PtrType == NotInit {
		aux.PtrType = ptr.Type
	} else if aux.PtrType != ptr.Type && !(mixable(ptr.Type) && mixable(aux.PtrType)) &&
		!(!a.write && memOrObject(ptr.Type) && memOrObject(aux.PtrType)) {
		// The rewrite converts context accesses; an instruction that
		// reaches the context on one path and other memory on another
		// cannot be converted. A load may read kernel objects on one
		// path and memory on another (the kernel's allow_trust_mismatch):
		// it becomes a probe load (Probe), which reads memory as a load.
		return Reg{}, v.errorf(a.pc, "same insn cannot be used with different pointers")
	}
	return res, nil
}

// memAccess is checkMemAccess without the bookkeeping for the rewrite.
func (v *verifier) memAccess(ptr *Reg, a access) (Reg, error) {
	if ptr.maybeNull() {
		return Reg{}, v.errorf(a.pc, "R%d invalid mem access '%s'", a.reg, regTypeString(ptr))
	}
	if err := v.checkAlign(a.pc, ptr, a.off, a.size, false); err != nil {
		return Reg{}, err
	}
	switch ptr.Type {
	case PtrToStack:
		return v.stackAccess(ptr, a)
	case PtrToMapValue:
		res, err := v.mapValueAccess(ptr, a)
		if err == nil && !a.write {
			err = v.rodataLoad(ptr, a, &res)
		}
		return res, err
	case PtrToMapKey:
		if a.write {
			return Reg{}, v.errorf(a.pc, "write to change key R%d not allowed", a.reg)
		}
		if err := v.boundsCheck(ptr, a, int64(ptr.Map.Spec.KeySize), "map key, key_size"); err != nil {
			return Reg{}, err
		}
		return v.loadedScalar(a.size), nil
	case PtrToCtx:
		return v.ctxAccess(ptr, a)
	case PtrToPacket, PtrToPacketMeta:
		return v.packetAccess(ptr, a)
	case PtrToXDPSock:
		return v.xdpSockAccess(ptr, a)
	case PtrToSockCommon, PtrToSocket:
		return v.sockAccess(ptr, a)
	case PtrToTCPSock:
		return v.tcpSockAccess(ptr, a)
	case PtrToFlowKeys:
		if v.leaks(a) {
			return Reg{}, v.errorf(a.pc, "R%d leaks addr into flow keys", a.valReg)
		}
		// Arithmetic moves the pointer by constants only (alu.go).
		if off := int64(ptr.Off) + int64(a.off); off < 0 || off+int64(a.size) > progtype.FlowKeysSize {
			return Reg{}, v.errorf(a.pc, "invalid access to flow keys off=%d size=%d", off, a.size)
		}
		return v.loadedScalar(a.size), nil
	case PtrToTPBuffer:
		return v.tpBufferAccess(ptr, a)
	case PtrToBuf:
		if a.write && ptr.Flags&Rdonly != 0 {
			return Reg{}, v.errorf(a.pc, "R%d cannot write into %s", a.reg, regTypeString(ptr))
		}
		if err := v.bufAccess(ptr, a.reg, int64(ptr.Off)+int64(a.off), a.size, a.pc); err != nil {
			return Reg{}, err
		}
		return v.loadedScalar(a.size), nil
	case ConstPtrToMap:
		return v.mapPtrAccess(ptr, a)
	case PtrToBTFID:
		return v.btfAccess(ptr, a)
	case PtrToArena:
		return v.arenaAccess(ptr, a) // arena.go
	case PtrToMem:
		if a.write && ptr.Flags&Rdonly != 0 {
			return Reg{}, v.errorf(a.pc, "R%d cannot write into %s", a.reg, regTypeString(ptr))
		}
		if v.leaks(a) {
			return Reg{}, v.errorf(a.pc, "R%d leaks addr into mem", a.valReg)
		}
		if ptr.Flags&Untrusted != 0 {
			// Read-only untrusted memory (what a kernel object's
			// pointer to a non-struct points to) is read by probe
			// loads: any offset, 0 where nothing is mapped.
			return v.loadedScalar(a.size), nil
		}
		if err := v.boundsCheck(ptr, a, int64(ptr.MemSize), "memory, mem_size"); err != nil {
			return Reg{}, err
		}
		return v.loadedScalar(a.size), nil
	case ScalarValue:
		return Reg{}, v.errorf(a.pc, "R%d invalid mem access 'scalar'", a.reg)
	}
	return Reg{}, v.errorf(a.pc, "R%d invalid mem access '%s'", a.reg, regTypeString(ptr))
}

// sockAccess checks an access to a socket (the kernel's check_sock_access):
// reads only, of the fields the socket's description allows (a
// sock_common's fewer than a sock's).
func (v *verifier) sockAccess(ptr *Reg, a access) (Reg, error) {
	if a.write {
		return Reg{}, v.errorf(a.pc, "R%d cannot write into %s", a.reg, regTypeString(ptr))
	}
	// The pointer is never moved (alu.go), so the access's offset is the
	// field's.
	off := int64(ptr.Off) + int64(a.off)
	op := progtype.Load
	if a.signed {
		op = progtype.LoadSigned
	}
	if off < 0 || off >= progtype.SockSize {
		return Reg{}, v.errorf(a.pc, "R%d invalid %s access off=%d size=%d", a.reg, regTypeString(ptr), off, a.size)
	}
	desc := progtype.SockCommon
	if ptr.Type == PtrToSocket {
		desc = progtype.Sock
	}
	f, err := desc.Access(uint32(off), uint32(a.size), op)
	if err != nil {
		return Reg{}, v.errorf(a.pc, "R%d invalid %s access off=%d size=%d", a.reg, regTypeString(ptr), off, a.size)
	}
	v.aux[a.pc].Sock = f
	return v.fieldScalar(f, a), nil
}

// tcpSockAccess checks an access to a struct bpf_tcp_sock (the kernel's
// bpf_tcp_sock_is_valid_access): reads of whole fields only, the u64
// bytes_received and bytes_acked and the u32 others.
func (v *verifier) tcpSockAccess(ptr *Reg, a access) (Reg, error) {
	if a.write {
		return Reg{}, v.errorf(a.pc, "R%d cannot write into %s", a.reg, regTypeString(ptr))
	}
	off := int64(ptr.Off) + int64(a.off)
	want := 4
	if off == progtype.TCPSockBytesReceived || off == progtype.TCPSockBytesAcked {
		want = 8
	}
	if off < 0 || off >= progtype.TCPSockSize || off%int64(a.size) != 0 || a.size != want {
		return Reg{}, v.errorf(a.pc, "R%d invalid %s access off=%d size=%d", a.reg, regTypeString(ptr), off, a.size)
	}
	return v.loadedScalar(a.size), nil
}

// mixable reports whether one instruction may access memory of type t and
// of other types on different paths: not the context and sockets, whose
// accesses the kernel converts, nor kernel objects, which it reads with
// probe loads (reg_type_mismatch_ok).
func mixable(t RegType) bool {
	return t.IsPointer() && t != PtrToCtx && t != PtrToXDPSock && t != PtrToSockCommon && t != PtrToSocket && t != PtrToTCPSock && t != PtrToBTFID
}

// memOrObject reports whether t is memory or a kernel object, which one
// load may read on different paths.
func memOrObject(t RegType) bool { return t == PtrToMem || t == PtrToBTFID }

// probed reports whether loads through ptr are probe loads: of a kernel
// object or of untrusted memory.
func probed(ptr *Reg) bool {
	return ptr.Type == PtrToBTFID && ptr.Flags&Alloc == 0 || ptr.Type == PtrToMem && ptr.Flags&Untrusted != 0
}

// xdpSockAccess checks an access to an xskmap socket: only its 4-byte
// queue_id (struct bpf_xdp_sock) may be read. bpfvm's sockets are the
// map's values, so the read gives the value's first 4 bytes.
func (v *verifier) xdpSockAccess(ptr *Reg, a access) (Reg, error) {
	if a.write {
		return Reg{}, v.errorf(a.pc, "R%d cannot write into %s", a.reg, ptr.Type)
	}
	if off := int64(ptr.Off) + int64(a.off); off != 0 || a.size != 4 {
		return Reg{}, v.errorf(a.pc, "R%d invalid %s access off=%d size=%d", a.reg, ptr.Type, off, a.size)
	}
	return unknownScalar(), nil
}

// mapPtrAccess checks a read of the map's own struct through a map pointer,
// as the kernel's check_ptr_to_map_access does with vmlinux BTF. bpfvm
// knows the fields of struct bpf_map its map headers mirror
// (maps.KernelFieldAt), not the kernel's BTF: reads of other fields are
// refused (they need the tracing issue's BTF types).
func (v *verifier) mapPtrAccess(ptr *Reg, a access) (Reg, error) {
	tname := ptr.Map.Spec.Type.KernelStruct()
	off := int64(ptr.Off) + int64(a.off)
	switch {
	case v.opts.Unprivileged:
		return Reg{}, v.errorf(a.pc, "'struct %s' access is allowed only to CAP_PERFMON and CAP_SYS_ADMIN", tname)
	case off < 0:
		return Reg{}, v.errorf(a.pc, "R%d is %s invalid negative access: off=%d", a.reg, tname, off)
	case a.write:
		return Reg{}, v.errorf(a.pc, "only read from %s is supported", tname)
	}
	f, ok := maps.KernelFieldAt(uint32(off))
	if !ok {
		return Reg{}, v.errorf(a.pc, "R%d reads struct %s at off=%d size=%d, a field bpfvm does not model (it has map_type..id of struct bpf_map)", a.reg, tname, off, a.size)
	}
	if end := int64(f.Off + f.Size); off+int64(a.size) > end {
		return Reg{}, v.errorf(a.pc, "access beyond the end of member %s (mend:%d) in struct bpf_map with off %d size %d", f.Name, end, off, a.size)
	}
	return v.loadedScalar(a.size), nil
}

// rdonlyProg reports whether programs may not write the map's values: with
// BPF_F_RDONLY_PROG, or when the type says so (devmaps, whose values the
// kernel's lookup returns as the device's own: it sets the flag itself).
func rdonlyProg(s maps.Spec) bool {
	return s.Flags&maps.FlagRdonlyProg != 0 || s.Type.ProgReadOnly()
}

// leaks reports whether an unprivileged store writes a pointer to memory
// other than the stack.
func (v *verifier) leaks(a access) bool {
	return a.write && a.val != nil && a.src != nil && a.val.Type.IsPointer() && v.opts.Unprivileged
}

// tpBufferAccess checks an access to a raw_tracepoint_writable program's
// buffer (check_tp_buffer_access): at a constant, non-negative offset, as
// far as it goes recorded for the attach (Result.MaxTPAccess).
func (v *verifier) tpBufferAccess(ptr *Reg, a access) (Reg, error) {
	off := int64(ptr.Off) + int64(a.off)
	if off < 0 {
		return Reg{}, v.errorf(a.pc, "R%d invalid tracepoint buffer access: off=%d, size=%d", a.reg, off, a.size)
	}
	if !ptr.Scalar.Var.IsConst() || ptr.Scalar.Var.Value != 0 {
		return Reg{}, v.errorf(a.pc, "R%d invalid variable buffer offset: off=%d, var_off=%s", a.reg, off, ptr.Scalar.Var)
	}
	v.maxTP = max(v.maxTP, uint32(off)+uint32(a.size))
	return v.loadedScalar(a.size), nil
}

// bufAccess checks an access of size bytes at off into an iterator's
// buffer (the kernel's check_buffer_access): a non-negative constant
// offset, the furthest end recorded for the attach.
func (v *verifier) bufAccess(ptr *Reg, regno isa.Register, off int64, size, pc int) error {
	info, far := "rdwr", &v.maxRdwr
	if ptr.Flags&Rdonly != 0 {
		info, far = "rdonly", &v.maxRdonly
	}
	if off < 0 {
		return v.errorf(pc, "R%d invalid %s buffer access: off=%d, size=%d", regno, info, off, size)
	}
	if !ptr.Scalar.Var.IsConst() || ptr.Scalar.Var.Value != 0 {
		return v.errorf(pc, "R%d invalid variable buffer offset: off=%d, var_off=%s", regno, off, ptr.Scalar.Var)
	}
	*far = max(*far, uint32(off)+uint32(size))
	return nil
}

// loadedScalar is what a load of size bytes from plain memory yields.
func (v *verifier) loadedScalar(size int) Reg {
	r := unknownScalar()
	r.Scalar.Truncate(size)
	return r
}

// boundsCheck checks [off, off+size) of a pointer with a variable offset
// against [0, limit), the kernel's check_mem_region_access.
func (v *verifier) boundsCheck(ptr *Reg, a access, limit int64, what string) error {
	s := ptr.Scalar
	off := int64(ptr.Off) + int64(a.off)
	// A negative minimum is fine while the sum stays in the region; one
	// that does not fit 32 bits is not (the sum is then not computed).
	if lo := off + s.Smin; s.Smin < 0 && (s.Smin == minInt64 || lo != int64(int32(lo)) || lo < 0) {
		return v.errorf(a.pc, "R%d min value is negative, either use unsigned index or do a if (index >=0) check.", a.reg)
	}
	lo := off + s.Smin
	if lo < 0 || lo+int64(a.size) > limit {
		if s.IsConst() {
			return v.errorf(a.pc, "invalid access to %s=%d off=%d size=%d", what, limit, lo, a.size)
		}
		return v.errorf(a.pc, "R%d min value is outside of the allowed memory range", a.reg)
	}
	// Umax is bounded before it is added.
	if s.Umax >= maxVarOff {
		return v.errorf(a.pc, "R%d unbounded memory access, make sure to bounds check any such access", a.reg)
	}
	if hi := off + int64(s.Umax) + int64(a.size); hi > limit {
		if s.IsConst() {
			return v.errorf(a.pc, "invalid access to %s=%d off=%d size=%d", what, limit, lo, a.size)
		}
		return v.errorf(a.pc, "R%d max value is outside of the allowed memory range", a.reg)
	}
	return nil
}

func (v *verifier) mapValueAccess(ptr *Reg, a access) (Reg, error) {
	m := ptr.Map
	if a.write && rdonlyProg(m.Spec) {
		return Reg{}, v.errorf(a.pc, "write into map forbidden, value_size=%d off=%d size=%d", m.Spec.ValueSize, int64(ptr.Off)+int64(a.off), a.size)
	}
	if !a.write && m.Spec.Flags&maps.FlagWronlyProg != 0 {
		return Reg{}, v.errorf(a.pc, "read from map forbidden, value_size=%d off=%d size=%d", m.Spec.ValueSize, int64(ptr.Off)+int64(a.off), a.size)
	}
	if v.leaks(a) {
		return Reg{}, v.errorf(a.pc, "R%d leaks addr into map", a.valReg)
	}
	what := "map value, value_size"
	if ptr.maybeNull() {
		// Helpers take values that may be NULL; the kernel's message
		// then names the type with its flag, as plain memory.
		what = "memory, mem_size"
	}
	if err := v.boundsCheck(ptr, a, int64(m.Spec.ValueSize), what); err != nil {
		return Reg{}, err
	}
	kptr, err := v.checkFieldAccess(ptr, a)
	if err != nil {
		return Reg{}, err
	}
	if kptr.Type != NotInit {
		return kptr, nil
	}
	return v.loadedScalar(a.size), nil
}

func (v *verifier) packetAccess(ptr *Reg, a access) (Reg, error) {
	if a.write && v.pt.PacketReadOnly {
		return Reg{}, v.errorf(a.pc, "cannot write into packet")
	}
	s := ptr.Scalar
	if s.Smin < 0 {
		return Reg{}, v.errorf(a.pc, "R%d min value is negative, either use unsigned index or do a if (index >=0) check.", a.reg)
	}
	// The range was proven for pointers sharing this one's variable part
	// (the same id), so only the fixed offset counts.
	off := int64(ptr.Off) + int64(a.off)
	if ptr.Range < 0 {
		// Known to be at or past pkt_end (jmp.go).
		return Reg{}, v.errorf(a.pc, "R%d offset is outside of the packet", a.reg)
	}
	if off < 0 || off+int64(a.size) > int64(ptr.Range) {
		// The kernel prints the access offset for the register's too.
		return Reg{}, v.errorf(a.pc, "invalid access to packet, off=%d size=%d, R%d(id=%d,off=%d,r=%d)", off, a.size, a.reg, ptr.ID, off, ptr.Range)
	}
	if v.leaks(a) {
		return Reg{}, v.errorf(a.pc, "R%d leaks addr into packet", a.valReg)
	}
	return v.loadedScalar(a.size), nil
}

// ctxAccess checks a context access against the program type's fields and
// gives loads of packet pointer fields their pointer types.
func (v *verifier) ctxAccess(ptr *Reg, a access) (Reg, error) {
	if err := v.checkPtrOffReg(a.pc, a.reg, ptr, false); err != nil {
		return Reg{}, err
	}
	off := int64(ptr.Off) + int64(a.off)
	if off < 0 || off >= int64(v.pt.ContextSize) {
		return Reg{}, v.errorf(a.pc, "invalid bpf_context access off=%d size=%d", off, a.size)
	}
	if v.leaks(a) {
		return Reg{}, v.errorf(a.pc, "R%d leaks addr into ctx", a.valReg)
	}
	if v.pt.BTFArgs {
		return v.tracingCtxAccess(off, a) // tracing.go
	}
	op := progtype.Load
	switch {
	case a.write:
		op = progtype.Store
	case a.signed:
		op = progtype.LoadSigned
	}
	f, err := v.pt.AccessAs(uint32(off), uint32(a.size), op, v.caps())
	if err != nil {
		return Reg{}, v.errorf(a.pc, "%v", err)
	}
	v.maxCtx = max(v.maxCtx, uint32(off)+uint32(a.size))
	aux := &v.aux[a.pc]
	if aux.Ctx != nil && aux.Ctx != f {
		return Reg{}, v.errorf(a.pc, "same insn cannot be used with different pointers")
	}
	aux.Ctx = f
	switch f.Kind {
	case progtype.PacketData:
		return Reg{Type: PtrToPacket, Scalar: Const(0)}, nil
	case progtype.PacketMeta:
		return Reg{Type: PtrToPacketMeta, Scalar: Const(0)}, nil
	case progtype.PacketEnd:
		return Reg{Type: PtrToPacketEnd, Scalar: Const(0)}, nil
	case progtype.FlowKeys:
		return Reg{Type: PtrToFlowKeys, Scalar: Const(0)}, nil
	case progtype.TPBuffer:
		return Reg{Type: PtrToTPBuffer, Scalar: Const(0)}, nil
	case progtype.SockCommonOrNull:
		return Reg{Type: PtrToSockCommon, Flags: MaybeNull, ID: v.newID(), Scalar: Const(0)}, nil
	case progtype.Socket:
		return Reg{Type: PtrToSocket, Scalar: Const(0)}, nil
	case progtype.SocketOrNull:
		return Reg{Type: PtrToSocket, Flags: MaybeNull, ID: v.newID(), Scalar: Const(0)}, nil
	case progtype.KernelObject:
		// The kernel's nf_ptr_to_btf_id: PTR_TO_BTF_ID | PTR_TRUSTED.
		var st *btf.Struct
		if v.opts.KernelTypes == nil || v.opts.KernelTypes.TypeByName(f.Object, &st) != nil {
			return Reg{}, v.errorf(a.pc, "context field %s: no struct %s in the kernel's BTF", f.Name, f.Object)
		}
		return v.btfPtr(st, Trusted), nil
	}
	return v.fieldScalar(f, a), nil
}

// fieldScalar is what a load a of scalar context or socket field f gives:
// a value of its size (the conversion of progtype.Field.NoneMinusOne keeps
// to it). A sign-extending load is sign-extended after the conversion and
// keeps its bounds.
func (v *verifier) fieldScalar(_ *progtype.Field, a access) Reg {
	return v.loadedScalar(a.size)
}

// checkPtrOffReg checks that a pointer which must be passed or accessed
// unmodified (the context, for one) has no variable offset and, unless
// fixedOK, no fixed one (the kernel's __check_ptr_off_reg).
func (v *verifier) checkPtrOffReg(pc int, regno isa.Register, reg *Reg, fixedOK bool) error {
	switch {
	case reg.Off < 0:
		return v.errorf(pc, "negative offset %s ptr R%d off=%d disallowed", regTypeString(reg), regno, reg.Off)
	case !fixedOK && reg.Off != 0:
		return v.errorf(pc, "dereference of modified %s ptr R%d off=%d disallowed", regTypeString(reg), regno, reg.Off)
	case !reg.Scalar.Var.IsConst() || reg.Scalar.Var.Value != 0:
		return v.errorf(pc, "variable %s access var_off=%s disallowed", regTypeString(reg), reg.Scalar.Var)
	}
	return nil
}

// checkAlign enforces alignment as the kernel's check_ptr_alignment: always
// for atomics and for pointers into the stack (spill tracking relies on
// aligned stack accesses), and for every access in strict mode. Packet
// offsets count NET_IP_ALIGN (2), which 4-byte aligns the IP header.
func (v *verifier) checkAlign(pc int, ptr *Reg, off int32, size int, atomic bool) error {
	if size == 1 || !v.strictAlign && !atomic && ptr.Type != PtrToStack {
		return nil
	}
	if ptr.Type.isPacket() {
		const ipAlign = 2
		t := ptr.Scalar.Var.Add(TnumConst(uint64(int64(ipAlign) + int64(ptr.Off) + int64(off))))
		if !t.IsAligned(uint64(size)) {
			return v.errorf(pc, "misaligned packet access off %d+%s+%d+%d size %d", ipAlign, ptr.Scalar.Var, ptr.Off, off, size)
		}
		return nil
	}
	t := ptr.Scalar.Var.Add(TnumConst(uint64(int64(ptr.Off) + int64(off))))
	if !t.IsAligned(uint64(size)) {
		return v.errorf(pc, "misaligned %saccess off %s+%d+%d size %d", alignName(ptr.Type), ptr.Scalar.Var, ptr.Off, off, size)
	}
	return nil
}

func alignName(t RegType) string {
	switch t {
	case PtrToStack:
		return "stack "
	case PtrToMapValue:
		return "value "
	case PtrToMapKey:
		return "key "
	case PtrToCtx:
		return "context "
	case PtrToXDPSock:
		return "xdp_sock "
	case PtrToFlowKeys:
		return "flow keys "
	}
	return ""
}

// checkLdImm handles LD_IMM64: constants, map pointers, map value
// addresses and function pointers.
func (v *verifier) checkLdImm(pc int, ins isa.Instruction) error {
	if err := v.checkWriteReg(pc, ins.Dst); err != nil {
		return err
	}
	f := v.cur.cur()
	dst := &f.Regs[ins.Dst]
	hi := v.insns[pc+1]
	switch uint8(ins.Src) {
	case 0:
		*dst = constScalar(isa.Imm64(ins, hi))
	case isa.PseudoMapFD, isa.PseudoMapIdx:
		if err := v.checkMapLockUse(pc, &v.opts.Maps[ins.Imm]); err != nil {
			return err
		}
		*dst = Reg{Type: ConstPtrToMap, Map: &v.opts.Maps[ins.Imm], Scalar: Const(0)}
	case isa.PseudoMapValue, isa.PseudoMapIdxValue:
		m := &v.opts.Maps[ins.Imm]
		if err := v.checkMapLockUse(pc, m); err != nil {
			return err
		}
		off := uint32(hi.Imm)
		if !m.Spec.Type.DirectValue() {
			return v.errorf(pc, "no direct value access support for this map type")
		}
		if off >= m.Spec.ValueSize || m.Spec.MaxEntries != 1 {
			return v.errorf(pc, "invalid access to map value pointer, value_size=%d off=%d", m.Spec.ValueSize, off)
		}
		*dst = Reg{Type: PtrToMapValue, Map: m, Off: int32(off), Scalar: Const(0)}
	case isa.PseudoFunc:
		target := pc + 1 + int(ins.Imm)
		*dst = Reg{Type: PtrToFunc, Subprog: int32(subprogAt(v.subs, target)), Scalar: Const(0)}
	default:
		return v.errorf(pc, "unrecognized bpf_ld_imm64 insn")
	}
	return nil
}

// checkLdAbs handles the legacy packet loads LD_ABS and LD_IND: only for
// socket filters and tc programs, with R6 holding the context; they clobber
// R1-R5 and leave the value in R0.
func (v *verifier) checkLdAbs(pc int, ins isa.Instruction) error {
	if v.pt != progtype.SocketFilter && v.pt != progtype.SchedCLS && v.pt != progtype.SchedACT {
		return v.errorf(pc, "BPF_LD_[ABS|IND] instructions not allowed for this program type")
	}
	f := v.cur.cur()
	ctx, err := v.readReg(pc, isa.R6)
	if err != nil {
		return err
	}
	if err := v.checkLockLeak(pc, "BPF_LD_[ABS|IND]"); err != nil {
		return err
	}
	if len(v.cur.Refs) > 0 {
		r := v.cur.Refs[0]
		return v.errorf(pc, "Unreleased reference id=%d alloc_insn=%d", r.ID, r.Insn)
	}
	if err := v.checkSectionLeak(pc, "BPF_LD_[ABS|IND]"); err != nil {
		return err
	}
	if ctx.Type != PtrToCtx {
		return v.errorf(pc, "at the time of BPF_LD_ABS|IND R6 != pointer to skb")
	}
	if ins.Op&0xe0 == isa.ModeIND {
		if _, err := v.readReg(pc, ins.Src); err != nil {
			return err
		}
	}
	if err := v.checkPtrOffReg(pc, isa.R6, ctx, false); err != nil {
		return err
	}
	// A load outside the packet ends the function with R0 = 0: the
	// program, or a subprogram, which returns 0 to its caller (as the
	// kernel has it). A callback would return to the helper that called
	// it; the kernel refuses that (through an internal error), and so
	// do we.
	if len(v.cur.Frames) > 1 {
		if f.Callback {
			return v.errorf(pc, "BPF_LD_[ABS|IND] in a callback: a failed load would return from it")
		}
		if err := v.queueReturn(pc, constScalar(0), false); err != nil {
			return err
		}
	}
	for r := isa.R1; r <= isa.R5; r++ {
		f.Regs[r] = Reg{Type: NotInit}
	}
	f.Regs[0] = v.loadedScalar(isa.SizeBytes(ins.Op))
	return nil
}
