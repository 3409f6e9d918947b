// Package vm holds what the execution engines share: off-heap memory, the
// per-run environment that helpers see, memory regions for checked access,
// and the errors a run can end with.
package vm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"
)

// Limits of the execution model, as in the kernel.
const (
	// StackSize is the bytes of stack per frame: the 512 a program may
	// use, below them the frame's hidden slots (maygoto.go).
	StackSize = ProgramStack + HiddenStack
	MaxFrames = 8 // bpf-to-bpf call depth, including the entry frame
)

// Errors a run can end with.
var (
	// ErrMemory is a load, store or helper argument outside the memory the
	// run may touch (checked mode only).
	ErrMemory = errors.New("invalid memory access")
	// ErrBudget means the run executed more instructions than allowed.
	ErrBudget = errors.New("instruction budget exhausted")
	// ErrCallDepth means bpf-to-bpf calls nested deeper than MaxFrames.
	ErrCallDepth = errors.New("call depth exceeded")
	// ErrHelper means a call to a helper the program has no implementation of.
	ErrHelper = errors.New("unknown helper")
	// ErrDeadCode means control reached an instruction the verifier never
	// did (isa.OpDead): a verifier bug, stopped rather than run.
	ErrDeadCode = errors.New("dead code reached: the verifier never explored this instruction")
)

// RunError is an error that stopped a run, naming the instruction.
type RunError struct {
	PC  int // slot index of the instruction
	Err error
}

func (e *RunError) Error() string { return fmt.Sprintf("insn %d: %v", e.PC, e.Err) }
func (e *RunError) Unwrap() error { return e.Err }

// MemoryError describes a rejected access; it wraps ErrMemory.
type MemoryError struct {
	Addr  uint64
	Size  uint64
	Write bool
}

func (e *MemoryError) Error() string {
	kind := "read"
	if e.Write {
		kind = "write"
	}
	return fmt.Sprintf("%v: %s of %d bytes at %#x", ErrMemory, kind, e.Size, e.Addr)
}
func (e *MemoryError) Unwrap() error { return ErrMemory }

// Region is a span [Start, End) of memory a program may access.
type Region struct {
	Start, End uint64
	Writable   bool
}

func (r Region) contains(addr, size uint64) bool {
	return addr >= r.Start && addr <= r.End && size <= r.End-addr
}

// CtxAccess emulates loads and stores to a context structure whose layout the
// program sees differently from how it is stored (e.g. 32-bit data pointers
// in struct xdp_md). off is relative to the start of the context. It returns
// the loaded value; for stores it receives the value and returns 0.
type CtxAccess func(e *Env, off, size uint64, write bool, val uint64) (uint64, error)

// Helper is a host function a program calls with arguments in R1-R5; its
// result goes to R0. A non-nil error stops the run.
type Helper func(e *Env, r1, r2, r3, r4, r5 uint64) (uint64, error)

// Env is the state of one run that helpers and checked accesses see.
type Env struct {
	// Checked enables validation of every access against Regions.
	Checked bool
	// QuietRepeat says that the between function of a Repeat has nothing
	// to do after a repetition that called no helper and made no tail
	// call: an engine may then run such repetitions back to back without
	// calling it (the JIT repeats in native code).
	QuietRepeat bool
	// Regions the run may access besides its stack (context, packet, map values).
	Regions []Region
	// Ctx is the context region; CtxAccess, when set, emulates accesses to it.
	Ctx       Region
	CtxAccess CtxAccess
	// Packet is the packet data that LD_ABS and LD_IND read.
	Packet Region
	// MacHeader and NetHeader are the addresses of the packet's link-layer
	// and network headers (0: none), where the negative offsets of LD_ABS
	// and LD_IND count from (LoadPacket).
	MacHeader, NetHeader uint64
	// Stack is the span of all frames' stacks. Checked runs may access only
	// its live part (LiveStack).
	Stack Region
	// CPU is the runner id, what bpf_get_smp_processor_id returns.
	CPU int
	// Rand is the runner's bpf_get_prandom_u32 generator (nil: the engine
	// uses its own). The JIT steps it in native code; it must stay valid
	// for the run.
	Rand *Rand
	// Value is free for the program type and helpers to keep run state in.
	Value any
	// TailCalls counts the tail calls made so far in this run.
	TailCalls int
	// FP is the frame pointer (R10) of the function calling a helper; a
	// callback the helper runs gets the stack below that frame. In checked
	// runs engines keep it at the running function's R10 throughout (the
	// interpreter's checks read it: LiveStack); 0 means unknown.
	FP uint64
	// Context, when it can be cancelled, stops the run with its error
	// soon after it is done (engines check it between slices of about
	// SliceTime, at backward jumps and calls; see deadline.go). Set it
	// with SetContext, which also sets Deadline.
	Context context.Context
	// Deadline is Context's deadline on the clock of Now (0: none), which
	// engines check by the clock as well as through Context.Done.
	Deadline int64
	// Arena is the base of the running program's arena window (0: none),
	// what isa.ModeArena accesses add the low 32 bits of their pointer
	// to; ArenaUser is the upper half of its user addresses, which casts
	// to the user's address space put above the low 32 bits.
	Arena, ArenaUser uint64
	// Kernel is the traced world's kernel memory, at the world's own
	// addresses, which probe loads read where neither the stack nor a
	// region holds the bytes (nil: none). Only probe loads see it: it is
	// not the host's memory, and checked accesses never reach it.
	Kernel []KernelMemory
	// Cache, when set, keeps what an engine sets up for a run (the JIT's
	// execution context) for the next run with the same Cache, which
	// saves taking it from a shared pool. Runs with the same Cache must
	// not overlap, except runs nested in one (callbacks and tail calls
	// made from helpers), which engines tell apart.
	Cache *Cache
}

// KernelMemory is a span of the traced world's kernel memory: the bytes
// Data at the world's addresses [Addr, Addr+len(Data)), which probe loads
// read (Env.Kernel). Runs only read Data.
type KernelMemory struct {
	Addr uint64
	Data []byte
}

// Cache is engine state kept from one run to the next by an owner whose
// runs never overlap, such as a runner of package bpfvm (see Env.Cache).
// The zero value is an empty cache.
type Cache struct {
	// JIT is the JIT's execution context (package jit/amd64).
	JIT any
}

// Check validates an access of size bytes at addr. It is what checked mode
// does for every load and store, and what helpers do for pointer arguments.
func (e *Env) Check(addr, size uint64, write bool) error {
	if !e.Checked {
		return nil
	}
	if e.inLiveStack(addr, size) || e.inRegions(addr, size, write) {
		return nil
	}
	return &MemoryError{Addr: addr, Size: size, Write: write}
}

// inRegions reports whether one of Regions allows the access.
func (e *Env) inRegions(addr, size uint64, write bool) bool {
	for _, r := range e.Regions {
		if r.contains(addr, size) && (r.Writable || !write) {
			return true
		}
	}
	return false
}

// inLiveStack reports whether LiveStack contains the size bytes at addr:
// the fast path of checked loads and stores, which FP unknown (0) passes.
func (e *Env) inLiveStack(addr, size uint64) bool {
	return addr+StackSize >= e.FP && e.Stack.contains(addr, size)
}

// LiveStack is the part of Stack the function running (FP) may access, as
// the kernel allows: its own frame, with the hidden slots below its
// ProgramStack bytes, and its callers' frames above, up to the top of the
// entry frame. The frames below it, a returned callee's, are dead. With FP
// unknown (0) it is all of Stack.
func (e *Env) LiveStack() Region {
	s := e.Stack
	if e.FP >= StackSize && e.FP-StackSize > s.Start {
		s.Start = e.FP - StackSize
	}
	return s
}

// Bytes returns the size bytes at addr as a slice after checking the access.
func (e *Env) Bytes(addr, size uint64, write bool) ([]byte, error) {
	if size == 0 {
		return nil, nil
	}
	if err := e.Check(addr, size, write); err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(Ptr(addr)), size), nil
}

// Load performs a checked load of size bytes (1, 2, 4 or 8) at addr.
func (e *Env) Load(addr, size uint64) (uint64, error) {
	if e.inLiveStack(addr, size) {
		return LoadSized(addr, size), nil // never the context: no emulation
	}
	if e.CtxAccess != nil && e.Ctx.contains(addr, size) {
		return e.CtxAccess(e, addr-e.Ctx.Start, size, false, 0)
	}
	if e.Checked && !e.inRegions(addr, size, false) {
		return 0, &MemoryError{Addr: addr, Size: size}
	}
	return LoadSized(addr, size), nil
}

// Probe is a probe load (isa.ModeProbe) of size bytes at addr: what is
// there if the run may read it, in the stack or a region, else the
// world's kernel memory there (Kernel), and otherwise 0, checked or not
// (the kernel's BPF_PROBE_MEM, whose faults read 0 through its exception
// table). It never reaches the emulated context: verified programs, the
// only ones with probe loads, read their context as a region.
func (e *Env) Probe(addr, size uint64) uint64 {
	if e.Stack.contains(addr, size) || e.inRegions(addr, size, false) {
		return LoadSized(addr, size)
	}
	if b := e.KernelBytes(addr, size); b != nil {
		switch size {
		case 1:
			return uint64(b[0])
		case 2:
			return uint64(binary.NativeEndian.Uint16(b))
		case 4:
			return uint64(binary.NativeEndian.Uint32(b))
		}
		return binary.NativeEndian.Uint64(b)
	}
	return 0
}

// KernelBytes returns the size bytes at addr of the world's kernel
// memory (Kernel), or nil when no span holds them all.
func (e *Env) KernelBytes(addr, size uint64) []byte {
	for i := range e.Kernel {
		k := &e.Kernel[i]
		n := uint64(len(k.Data))
		if o := addr - k.Addr; addr >= k.Addr && o <= n && size <= n-o && size > 0 {
			return k.Data[o : o+size]
		}
	}
	return nil
}

// Store performs a checked store of the low size bytes of v at addr.
func (e *Env) Store(addr, size, v uint64) error {
	if e.inLiveStack(addr, size) {
		StoreSized(addr, size, v)
		return nil
	}
	if e.CtxAccess != nil && e.Ctx.contains(addr, size) {
		_, err := e.CtxAccess(e, addr-e.Ctx.Start, size, true, v)
		return err
	}
	if e.Checked && !e.inRegions(addr, size, true) {
		return &MemoryError{Addr: addr, Size: size, Write: true}
	}
	StoreSized(addr, size, v)
	return nil
}

// Program is a program an engine can run: what a tail call jumps to.
type Program interface {
	Run(e *Env, r1, r2, budget uint64) (uint64, error)
}

// MaxTailCalls is the kernel's MAX_TAIL_CALL_CNT: tail calls one run may make.
const MaxTailCalls = 33

// TailCall is returned as an error by the bpf_tail_call helper when the call
// is to happen: the engine abandons the current function and runs Target in
// its place, on the same stack space, with the same context in R1. When the
// helper cannot call (no program at the index, or the limit is reached) it
// returns normally and the program continues.
type TailCall struct {
	Target Program
}

func (t *TailCall) Error() string { return "tail call" }

// LoadSized loads size bytes (1, 2, 4 or 8) at addr, zero-extended.
func LoadSized(addr, size uint64) uint64 {
	p := Ptr(addr)
	switch size {
	case 1:
		return uint64(*(*uint8)(p))
	case 2:
		return uint64(*(*uint16)(p))
	case 4:
		return uint64(*(*uint32)(p))
	}
	return *(*uint64)(p)
}

// StoreSized stores the low size bytes (1, 2, 4 or 8) of v at addr.
func StoreSized(addr, size, v uint64) {
	p := Ptr(addr)
	switch size {
	case 1:
		*(*uint8)(p) = uint8(v)
	case 2:
		*(*uint16)(p) = uint16(v)
	case 4:
		*(*uint32)(p) = uint32(v)
	default:
		*(*uint64)(p) = v
	}
}

// Native names a routine that JIT code calls directly for a helper, with
// no exit to Go (package helper says which helper has which; jit/amd64
// implements them). Each does exactly what the helper's Go function does.
type Native uint8

// Native routines.
const (
	NoNative     Native = iota
	NativeCPU           // bpf_get_smp_processor_id: Env.CPU
	NativeZero          // returns 0 (bpf_get_numa_node_id)
	NativeRandom        // bpf_get_prandom_u32: steps Env.Rand
	// NativeCount is the number of natives, NoNative included.
	NativeCount
)
