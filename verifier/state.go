package verifier

import (
	"unsafe"

	"github.com/bpfvm/bpfvm/maps"
)

// RegType is the type of a register's value, as the kernel's enum
// bpf_reg_type.
type RegType uint8

// Register types.
const (
	NotInit RegType = iota
	ScalarValue
	PtrToCtx
	ConstPtrToMap
	PtrToMapValue
	PtrToMapKey
	PtrToStack
	PtrToPacket
	PtrToPacketMeta
	PtrToPacketEnd
	PtrToMem
	PtrToFunc
	// PtrToXDPSock is a socket of an xskmap, what a lookup in one gives
	// once null-checked: its queue_id may be read, nothing else.
	PtrToXDPSock
	// PtrToFlowKeys is the struct bpf_flow_keys of a flow_dissector
	// program (__sk_buff.flow_keys): plain memory of its size, moved only
	// by constants.
	PtrToFlowKeys
	// PtrToSockCommon is a socket as struct bpf_sock_common shows it
	// (__sk_buff.sk, null-checked): read-only, progtype.SockCommon's fields.
	PtrToSockCommon
	// PtrToSocket is a struct bpf_sock (the socket types' ctx->sk,
	// null-checked where it may be null): read-only, progtype.Sock's
	// fields.
	PtrToSocket
	// PtrToTPBuffer is a raw_tracepoint_writable program's buffer
	// (progtype.TPBuffer): read and written at constant, non-negative
	// offsets, its size checked when the program is attached (the
	// furthest access is Result.MaxTPAccess).
	PtrToTPBuffer
	// PtrToTCPSock is a struct bpf_tcp_sock (bpf_tcp_sock's result,
	// null-checked): read-only, its fields whole (tcpSockAccess).
	PtrToTCPSock
	// PtrToBTFID is a pointer to a kernel object of a BTF struct type
	// (Reg.BTF): loads walk the type (btfptr.go) and run as the kernel's
	// BPF_PROBE_MEM loads, which read 0 where nothing is mapped. Trusted,
	// Untrusted, RCU and Alloc qualify it as the kernel's flags do.
	PtrToBTFID
	// PtrToConstDynptr is a dynptr a global function's argument points
	// at (the kernel's CONST_PTR_TO_DYNPTR): initialised, of kind
	// DynptrKind, identified by ID; helpers may read it, not release or
	// remake it.
	PtrToConstDynptr
	// PtrToArena is an arena pointer in the kernel's address space: a
	// 32-bit offset into the program's arena (arena.go).
	PtrToArena
	// PtrToBuf is a buffer of a map iterator (bpf_map_elem's key and
	// value): read, and written unless Rdonly, at constant non-negative
	// offsets, its size checked when the program is attached, which the
	// furthest accesses decide (Result.MaxRdonlyAccess, MaxRdwrAccess).
	PtrToBuf
)

// Type flags, as the kernel's PTR_MAYBE_NULL, MEM_RDONLY, MEM_RINGBUF,
// PTR_TRUSTED, PTR_UNTRUSTED, MEM_RCU and MEM_ALLOC.
const (
	MaybeNull uint8 = 1 << iota
	Rdonly
	Ringbuf
	// Trusted marks a PtrToBTFID the kernel vouches for (a program
	// type's argument, bpf_cast_to_kern_ctx): helpers and kfuncs taking
	// trusted arguments accept it.
	Trusted
	// Untrusted marks memory read through probe loads only
	// (bpf_rdonly_cast, what walking an untrusted pointer gives): it may
	// be passed nowhere.
	Untrusted
	// RCU marks a pointer valid inside the RCU read section the program
	// runs in (the kernel's MEM_RCU).
	RCU
	// Alloc marks an object the program allocated (bpf_obj_new).
	Alloc
	// NonOwn marks a non-owning reference to an allocated object (the
	// kernel's NON_OWN_REF): one a list or rbtree owns, valid while its
	// root's lock is held (graph.go).
	NonOwn
)

var regTypeNames = [...]string{
	NotInit:          "?",
	ScalarValue:      "scalar",
	PtrToCtx:         "ctx",
	ConstPtrToMap:    "map_ptr",
	PtrToMapValue:    "map_value",
	PtrToMapKey:      "map_key",
	PtrToStack:       "fp",
	PtrToPacket:      "pkt",
	PtrToPacketMeta:  "pkt_meta",
	PtrToPacketEnd:   "pkt_end",
	PtrToMem:         "mem",
	PtrToFunc:        "func",
	PtrToXDPSock:     "xdp_sock",
	PtrToFlowKeys:    "flow_keys",
	PtrToSockCommon:  "sock_common",
	PtrToSocket:      "sock",
	PtrToTPBuffer:    "tp_buffer",
	PtrToTCPSock:     "tcp_sock",
	PtrToBTFID:       "ptr_",
	PtrToConstDynptr: "dynptr_ptr",
	PtrToArena:       "arena",
	PtrToBuf:         "buf",
}

func (t RegType) String() string {
	if int(t) < len(regTypeNames) {
		return regTypeNames[t]
	}
	return "invalid"
}

// IsPointer reports whether registers of this type hold pointers.
func (t RegType) IsPointer() bool { return t != NotInit && t != ScalarValue }

// isPacket reports whether t points into the packet (data or metadata).
func (t RegType) isPacket() bool { return t == PtrToPacket || t == PtrToPacketMeta }

// MapInfo is what the verifier knows of a map a program references.
type MapInfo struct {
	Name string
	Spec maps.Spec
	// Index of the map in the program's map table.
	Index int
	// Frozen says that Go code can no longer write the map (Map.Freeze,
	// BPF_MAP_FREEZE). With BPF_F_RDONLY_PROG its contents are then fixed
	// (Fixed): the kernel's bpf_map_is_rdonly.
	Frozen bool
	// ReadOnlyValue is the value of a single-value array whose contents
	// are fixed (Fixed), as it is when the program is loaded: constant
	// strings are checked against it and loads at constant offsets read
	// it. It is ignored for maps not fixed, as the kernel refuses such
	// strings and reads nothing from them.
	ReadOnlyValue []byte
}

// Fixed reports whether neither programs nor Go code can change the map's
// contents: read-only to programs and frozen (bpf_map_is_rdonly).
func (m *MapInfo) Fixed() bool { return m.Frozen && m.Spec.Flags&maps.FlagRdonlyProg != 0 }

// Reg is the abstract value of a register or a spilled stack slot. The
// fields are ordered to pack: states copy many of them.
type Reg struct {
	// Scalar holds a scalar's value, or for pointers the bounds of the
	// variable part of the offset.
	Scalar
	// Map is the map of ConstPtrToMap, PtrToMapValue and PtrToMapKey.
	Map *MapInfo
	// Subprog is the subprogram a PtrToFunc names.
	Subprog int32
	// BTF is the type a PtrToBTFID points to: its index in the
	// verification's type table (btfptr.go), 1-based. Registers of the
	// same type hold the same index.
	BTF uint32
	// Off is the fixed part of a pointer's offset.
	Off int32
	// ID links registers that share a null check (maybe-null pointers),
	// a packet range (packet pointers) or a value (scalars copied from one
	// another, for bounds propagation). A scalar whose ID has linkDelta
	// set holds the linked value plus Off.
	ID uint32
	// RefID is the reference a pointer carries (ringbuf samples, the
	// sockets of the socket lookups and the pointers cast from them).
	RefID uint32
	// Range is the number of bytes past a packet pointer proven in bounds.
	Range int32
	// MemSize is the size of PtrToMem memory.
	MemSize uint32
	// Dynptr is, for a slice of a dynptr's memory (PtrToMem), the id of
	// that dynptr (DynptrSlot.ID), which destroying it invalidates: the
	// kernel's dynptr_id.
	Dynptr uint32
	Type   RegType
	// DynptrKind is the kind of the dynptr a slice points into (a
	// DynptrSKB or DynptrXDP slice is packet data: a helper changing the
	// packet invalidates it).
	DynptrKind uint8
	Flags      uint8
	// Frame is the call frame a stack pointer points into.
	Frame uint8
	// Precise marks scalars whose exact value matters (for pruning).
	Precise bool
}

// linkDelta flags a scalar's ID as linking it to the value of the
// registers with the ID without the flag, plus the scalar's Off: a
// register copied and then moved by a constant (the kernel's
// BPF_ADD_CONST). A bound learned on one of them applies to the others,
// shifted by the difference of their offsets.
const linkDelta uint32 = 1 << 30

// linkBase returns the value a scalar's ID links it to.
func linkBase(id uint32) uint32 { return id &^ linkDelta }

// linkOff returns a linked scalar's offset from the value it is linked to.
func (r *Reg) linkOff() int64 {
	if r.ID&linkDelta != 0 {
		return int64(r.Off)
	}
	return 0
}

// maybeNull reports whether the register may be NULL.
func (r *Reg) maybeNull() bool { return r.Flags&MaybeNull != 0 }

// Slot types of stack bytes, as the kernel's STACK_*.
const (
	StackInvalid uint8 = iota // never written: reading is an error
	StackSpill                // part of a spilled register
	StackMisc                 // written with something unknown
	StackZero                 // known zero
)

// Slot is an 8-byte stack slot.
type Slot struct {
	// Spilled is the register spilled into the slot when Types are all
	// StackSpill (8-byte spills) or, for narrower spills of scalars, the
	// low bytes.
	Spilled Reg
	// Types describes each byte: Types[0] is the byte at the slot's lowest
	// address.
	Types [8]uint8
	// Iter is the iterator of a slot marked StackIter (iter.go).
	Iter IterSlot
	// Dynptr is the half of a dynptr of a slot marked StackDynptr
	// (dynptr.go).
	Dynptr DynptrSlot
}

// isSpill reports whether the slot holds a spilled register, of 8 bytes or
// (scalars only) fewer: its lowest bytes are StackSpill (the kernel's
// is_spilled_reg).
func (s *Slot) isSpill() bool { return s.Types[0] == StackSpill }

// spillSize is the number of bytes of the spilled register, 0 if none.
func (s *Slot) spillSize() int {
	n := 0
	for n < len(s.Types) && s.Types[n] == StackSpill {
		n++
	}
	return n
}

// scrub turns a slot holding a spilled register into plain bytes, as when
// part of it is overwritten: written bytes become unknown, never-written
// ones stay so (the kernel's scrub_spilled_slot).
func (s *Slot) scrub() {
	if !s.isSpill() {
		return
	}
	for i, t := range s.Types {
		if t != StackInvalid {
			s.Types[i] = StackMisc
		}
	}
	s.Spilled = Reg{}
}

// Frame is the state of one function's frame.
type Frame struct {
	Regs [11]Reg
	// Stack holds slots from fp-8 downwards: Stack[i] covers fp-8*(i+1).
	Stack []Slot
	// CallSite is the instruction that called this frame (-1 for the entry).
	CallSite int
	// Subprog is the subprogram this frame runs.
	Subprog int
	// Number of the frame, 0 for the entry function.
	Number int
	// Callback, when set, is the helper call whose callback this frame runs.
	Callback bool
	// CallbackDepth counts the rounds of callbacks this frame's helper
	// call entered on this path (the kernel's callback_depth): it bounds
	// bpf_loop by its count, and a state with fewer rounds covers one
	// with more, not the other way.
	CallbackDepth int
	// refs counts the states whose Frames hold this frame: states share
	// the frames a path has not written since they were copied, and a
	// frame with refs > 1 is copied before it is written (State.frame).
	// Counting too high only costs a copy; too low would let one state's
	// write show in another.
	refs int32
}

// slot returns the stack slot holding fp+off (off < 0), growing the stack.
func (f *Frame) slot(off int) *Slot {
	i := (-off - 1) / 8
	for len(f.Stack) <= i {
		f.Stack = append(f.Stack, Slot{})
	}
	return &f.Stack[i]
}

// Ref is an acquired reference that must be released before exit.
type Ref struct {
	ID   uint32
	Insn int // the instruction that acquired it
	// Lock is set for a bpf_spin_lock held (lock.go): the map whose
	// value's lock it is; ID is then the value pointer's id.
	Lock *MapInfo
}

// State is the verifier's state at one point of one path.
type State struct {
	Frames []*Frame
	Refs   []Ref
	// RCULock says the path is inside bpf_rcu_read_lock (the kernel's
	// active_rcu_lock); PreemptDepth counts its bpf_preempt_disable calls
	// not yet undone (active_preempt_locks).
	RCULock      bool
	PreemptDepth int32
	// parent is the nearest remembered state this one descends from.
	parent *explored
	// callbackIter counts returns from callbacks to their helper call on
	// this path: a cycle through such a return is bounded by the helper.
	callbackIter int
	// mayGotoDepth counts the may_goto instructions this path went on
	// past: a cycle through one is bounded by its budget.
	mayGotoDepth int
	// speculative marks a path the CPU may take only by mispredicting a
	// branch (the kernel's speculative states, spectre.go): explored for
	// unprivileged programs, its errors end the path behind a barrier.
	speculative bool
	// pool holds frames no state refers to any more, for reuse; all
	// states of a verification share it.
	pool *framePool
}

// framePool is a free list of frames.
type framePool struct{ frames []*Frame }

// maxPoolFrames bounds the frames kept for reuse.
const maxPoolFrames = 256

// get returns a frame to overwrite.
func (p *framePool) get() *Frame {
	if p == nil || len(p.frames) == 0 {
		return new(Frame)
	}
	f := p.frames[len(p.frames)-1]
	p.frames = p.frames[:len(p.frames)-1]
	return f
}

// put keeps f, which no state refers to, for reuse.
func (p *framePool) put(f *Frame) {
	if p != nil && len(p.frames) < maxPoolFrames {
		p.frames = append(p.frames, f)
	}
}

// cur returns the frame of the function being verified, for writing.
func (s *State) cur() *Frame { return s.frame(len(s.Frames) - 1) }

// top returns the frame of the function being verified, for reading only.
func (s *State) top() *Frame { return s.Frames[len(s.Frames)-1] }

// frame returns frame i for writing: a frame other states share is copied
// first. A pointer it returns may be written only until the state is
// copied again.
func (s *State) frame(i int) *Frame {
	f := s.Frames[i]
	if f.refs <= 1 {
		return f
	}
	c := s.pool.get()
	stack := c.Stack
	*c = *f
	c.Stack = append(stack[:0], f.Stack...)
	c.refs = 1
	f.refs--
	s.Frames[i] = c
	return c
}

// pushFrame enters a new frame, owned by s.
func (s *State) pushFrame(f *Frame) {
	f.refs = 1
	s.Frames = append(s.Frames, f)
}

// popFrame leaves the frame of the function being verified and returns it
// (for reading).
func (s *State) popFrame() *Frame {
	n := len(s.Frames) - 1
	f := s.Frames[n]
	f.refs--
	s.Frames[n] = nil
	s.Frames = s.Frames[:n]
	return f
}

// dropFrames lets go of s's frames.
func (s *State) dropFrames() {
	for i, f := range s.Frames {
		if f.refs--; f.refs == 0 {
			s.pool.put(f)
		}
		s.Frames[i] = nil
	}
	s.Frames = s.Frames[:0]
}

// clone copies the state; the copy shares its frames until either writes.
func (s *State) clone() *State {
	c := &State{}
	s.copyTo(c)
	return c
}

// copyTo makes c a copy of s, sharing s's frames (copy on write) and
// reusing c's slices.
func (s *State) copyTo(c *State) {
	c.dropFrames()
	c.Frames = append(c.Frames, s.Frames...)
	for _, f := range s.Frames {
		f.refs++
	}
	c.Refs = append(c.Refs[:0], s.Refs...)
	c.RCULock, c.PreemptDepth = s.RCULock, s.PreemptDepth
	c.parent, c.callbackIter, c.mayGotoDepth, c.pool = s.parent, s.callbackIter, s.mayGotoDepth, s.pool
	c.speculative = s.speculative
}

// cloneState copies the current path's state s, reusing the memory of a
// state whose path ended.
func (v *verifier) cloneState(s *State) *State {
	n := len(v.free)
	if n == 0 {
		return s.clone()
	}
	c := v.free[n-1]
	v.free = v.free[:n-1]
	s.copyTo(c)
	return c
}

// release recycles a state nothing refers to any more: the current state
// when its path ended or it was replaced.
func (v *verifier) release(s *State) {
	s.dropFrames()
	if len(v.free) < maxFreeStates {
		v.free = append(v.free, s)
	}
}

// maxFreeStates bounds the recycled states kept.
const maxFreeStates = 64

// size estimates the bytes a remembered state holds, for the peak memory
// statistic.
func (s *State) size() int64 {
	n := int64(unsafe.Sizeof(*s)) + int64(len(s.Refs))*int64(unsafe.Sizeof(Ref{}))
	for _, f := range s.Frames {
		n += int64(unsafe.Sizeof(*f)) + int64(cap(f.Stack))*int64(unsafe.Sizeof(Slot{}))
	}
	return n
}
