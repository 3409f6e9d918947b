package verifier

import (
	"unsafe"

	"bpfvm/maps"
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
)

// Type flags, as the kernel's PTR_MAYBE_NULL, MEM_RDONLY and MEM_RINGBUF.
const (
	MaybeNull uint8 = 1 << iota
	Rdonly
	Ringbuf
)

var regTypeNames = [...]string{
	NotInit:         "?",
	ScalarValue:     "scalar",
	PtrToCtx:        "ctx",
	ConstPtrToMap:   "map_ptr",
	PtrToMapValue:   "map_value",
	PtrToMapKey:     "map_key",
	PtrToStack:      "fp",
	PtrToPacket:     "pkt",
	PtrToPacketMeta: "pkt_meta",
	PtrToPacketEnd:  "pkt_end",
	PtrToMem:        "mem",
	PtrToFunc:       "func",
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
}

// Reg is the abstract value of a register or a spilled stack slot. The
// fields are ordered to pack: states copy many of them.
type Reg struct {
	// Scalar holds a scalar's value, or for pointers the bounds of the
	// variable part of the offset.
	Scalar
	// Map is the map of ConstPtrToMap, PtrToMapValue and PtrToMapKey.
	Map *MapInfo
	// Subprog is the subprogram a PtrToFunc names.
	Subprog int
	// Off is the fixed part of a pointer's offset.
	Off int32
	// ID links registers that share a null check (maybe-null pointers),
	// a packet range (packet pointers) or a value (scalars copied from one
	// another, for bounds propagation).
	ID uint32
	// RefID is the reference a pointer carries (ringbuf samples).
	RefID uint32
	// Range is the number of bytes past a packet pointer proven in bounds.
	Range int32
	// MemSize is the size of PtrToMem memory.
	MemSize uint32
	Type    RegType
	Flags   uint8
	// Frame is the call frame a stack pointer points into.
	Frame uint8
	// Precise marks scalars whose exact value matters (for pruning).
	Precise bool
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
}

// spilled reports whether the whole slot holds a spilled register.
func (s *Slot) spilled() bool {
	for _, t := range s.Types {
		if t != StackSpill {
			return false
		}
	}
	return true
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
}

// State is the verifier's state at one point of one path.
type State struct {
	Frames []*Frame
	Refs   []Ref
	// parent is the nearest remembered state this one descends from.
	parent *explored
	// callbackIter counts returns from callbacks to their helper call on
	// this path: a cycle through such a return is bounded by the helper.
	callbackIter int
	// mayGotoDepth counts the may_goto instructions this path went on
	// past: a cycle through one is bounded by its budget.
	mayGotoDepth int
}

// cur returns the frame of the function being verified.
func (s *State) cur() *Frame { return s.Frames[len(s.Frames)-1] }

// clone copies the state deeply.
func (s *State) clone() *State {
	c := &State{}
	s.copyTo(c)
	return c
}

// copyTo makes c a deep copy of s, reusing c's frames and stacks.
func (s *State) copyTo(c *State) {
	frames := c.Frames[:cap(c.Frames)]
	if len(frames) < len(s.Frames) {
		frames = append(frames, make([]*Frame, len(s.Frames)-len(frames))...)
	}
	frames = frames[:len(s.Frames)]
	for i, f := range s.Frames {
		d := frames[i]
		if d == nil {
			d = &Frame{}
			frames[i] = d
		}
		stack := d.Stack
		*d = *f
		d.Stack = append(stack[:0], f.Stack...)
	}
	c.Frames = frames
	c.Refs = append(c.Refs[:0], s.Refs...)
	c.parent, c.callbackIter, c.mayGotoDepth = s.parent, s.callbackIter, s.mayGotoDepth
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
