package runner

import (
	"context"
	"io"
	"slices"
	"sync/atomic"

	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/vm"
)

// Runner holds the off-heap memory and the state of the runs on one CPU:
// what helpers see of a run (Of) besides vm.Env.
//
// A runner is written by the run holding it only: the pads keep its lines
// apart from other runners' (and any other heap object's), as the kernel's
// per-CPU data is.
type Runner struct {
	_ cacheLinePad
	// busy is set while a run holds the runner (CPUs.take).
	busy atomic.Bool
	// cached is set while the runner is in CPUs.cache (at most once).
	cached atomic.Bool
	// on is set while the runner runs on a CPU given by the caller
	// (CPUs.AcquireOn).
	on       bool
	cpu      int
	stack    *vm.Mem
	buf      *vm.Mem
	env      vm.Env
	pkt      Packet
	regions  []vm.Region // regions[0] is the packet
	prog     *Program    // the program running, for helpers
	redirect Redirect
	// redirected is set once SetRedirect wrote redirect: repetitions
	// clear it only then (80 bytes, a good part of an empty run's reset).
	redirected bool
	// keysIn and frame are what a flow_dissector test run resets the
	// flow keys from before each repetition (progtype.KeysRun).
	keysIn, frame []byte
	// sock is the address of the run's socket, 0 for none (Type.Socket).
	sock uint64
	// tpBuf and tpLen locate a writable raw tracepoint's buffer, after
	// the packet's tailroom (0: none).
	tpBuf, tpLen uint64
	// nfObjs and nfLen locate a netfilter run's kernel objects, after
	// the tracepoint's buffer (0: none).
	nfObjs, nfLen uint64
	hs            helperState  // helpers' per-runner state (state.go)
	sk            skbState     // the socket buffer of a run on one (skb.go)
	tr            traceState   // the world of a tracing run (trace.go)
	ns            netState     // the host world's socket slots (net.go)
	cache         vm.Cache     // the engines' state kept from run to run
	between       func() error // r.nextRun, made once: what engines call between repetitions
	pace          vm.Pacer     // nextRun's looks at the run's context
	_             cacheLinePad
}

// cacheLinePad keeps what is on either side of it off each other's cache
// lines: two 64-byte lines, as x86's adjacent-line prefetcher pulls lines
// in pairs (and some arm64 and ppc64 lines are 128 bytes).
type cacheLinePad [128]byte

// setPacket moves the packet boundaries (after bpf_xdp_adjust_head and
// friends) and updates what checked accesses and LD_ABS may touch.
func (r *Runner) setPacket(p Packet) {
	// Field by field, as in startEnv.
	r.pkt.Start, r.pkt.Meta, r.pkt.Data, r.pkt.End, r.pkt.Limit = p.Start, p.Meta, p.Data, p.End, p.Limit
	reg := &r.regions[0]
	reg.Start, reg.End, reg.Writable = p.Meta, p.End, true
	r.env.Packet.Start, r.env.Packet.End, r.env.Packet.Writable = p.Data, p.End, true
	if r.prog != nil && r.prog.Verified {
		// Verified programs load the packet pointers from the shadow
		// slots (see Shadow).
		shadow := r.buf.Addr() + Shadow(r.prog.Type)
		*(*uint64)(vm.Ptr(shadow + ShadowData)) = p.Data
		*(*uint64)(vm.Ptr(shadow + ShadowEnd)) = p.End
		*(*uint64)(vm.Ptr(shadow + ShadowMeta)) = p.Meta
		*(*uint64)(vm.Ptr(shadow + ShadowFlowKeys)) = r.buf.Addr() + flowKeys(r.prog.Type)
		*(*uint64)(vm.Ptr(shadow + ShadowSocket)) = r.sock
		*(*uint64)(vm.Ptr(shadow + ShadowTPBuffer)) = r.tpBuf
	}
}

// startEnv sets up the runner's environment for a run of r.prog on the
// packet r.pkt, keeping the engines' cache. It sets every field (keep it
// in step with vm.Env), one by one: a composite literal would be built on
// the stack and copied with wide loads that stall on store forwarding.
func (r *Runner) startEnv(ctx context.Context) {
	p, e := r.prog, &r.env
	e.Checked = p.Checked
	// nextRun resets only what helpers and tail calls change, but for the
	// flow keys, which it restores after every repetition.
	e.QuietRepeat = p.Type.Keys == nil
	e.Arena, e.ArenaUser = p.Arena, p.ArenaUser
	r.regions = r.progRegions(append(r.regions[:0], vm.Region{}), p)
	e.Regions = r.regions
	e.Ctx.Start, e.Ctx.End, e.Ctx.Writable = 0, 0, false
	e.CtxAccess = nil
	e.Stack.Start, e.Stack.End, e.Stack.Writable = r.stack.Addr(), r.stack.Addr()+vm.MaxFrames*vm.StackSize, true
	e.CPU = r.cpu
	e.Rand = &r.hs.rng
	e.Value = r
	e.TailCalls, e.FP = 0, 0
	e.MacHeader, e.NetHeader = 0, 0
	e.Kernel = nil // beginTrace's, for tracing runs
	e.SetContext(ctx)
	r.pace = vm.Pacer{}
	e.Cache = &r.cache
	r.setPacket(r.pkt)
}

// progRegions appends to regions (which hold the packet) what p may
// access in checked mode, and probe loads read in any mode: its maps, the
// flow keys of a type that has them and, for a verified program, the
// context and the shadow packet pointers its rewritten context loads read
// (unverified programs reach the context through vm.Env.CtxAccess
// instead).
func (r *Runner) progRegions(regions []vm.Region, p *Program) []vm.Region {
	base := r.buf.Addr()
	if p.Verified && p.Type.ContextSize > 0 {
		shadow := base + Shadow(p.Type)
		regions = append(regions,
			vm.Region{Start: base, End: base + uint64(p.Type.ContextSize), Writable: true},
			vm.Region{Start: shadow, End: shadow + shadowSize})
	}
	if p.Type.Keys != nil {
		keys := base + flowKeys(p.Type)
		regions = append(regions, vm.Region{Start: keys, End: keys + progtype.FlowKeysSize, Writable: true})
	}
	if p.Type.Socket != nil {
		sk := base + socket(p.Type)
		regions = append(regions, vm.Region{Start: sk, End: sk + progtype.SockSize})
	}
	if r.tpLen > 0 {
		regions = append(regions, vm.Region{Start: r.tpBuf, End: r.tpBuf + r.tpLen, Writable: true})
	}
	if r.nfLen > 0 {
		regions = append(regions, r.nfRegion())
	}
	if socks := r.socketRegion(); socks.End != 0 {
		regions = append(regions, socks)
	}
	return append(regions, p.Regions...)
}

// memory makes sure the runner has a stack and a buffer of at least need
// bytes.
func (r *Runner) memory(need int) error {
	if r.stack == nil {
		stack, err := vm.Alloc(vm.MaxFrames * vm.StackSize)
		if err != nil {
			return err
		}
		r.stack = stack
	}
	if r.buf == nil || len(r.buf.Bytes()) < need {
		if r.buf != nil {
			r.buf.Free()
			r.buf = nil
		}
		buf, err := vm.Alloc(need)
		if err != nil {
			return err
		}
		r.buf = buf
	}
	return nil
}

// Of returns the runner of the run a helper is called from.
func Of(e *vm.Env) *Runner { return e.Value.(*Runner) }

// CPU is the runner's CPU number: what bpf_get_smp_processor_id returns
// and the slot of per-CPU maps.
func (r *Runner) CPU() int { return r.cpu }

// Program is the program running.
func (r *Runner) Program() *Program { return r.prog }

// Packet returns where the packet is.
func (r *Runner) Packet() Packet { return r.pkt }

// SetPacket moves the packet boundaries (bpf_xdp_adjust_head and friends)
// and updates what checked accesses, LD_ABS and the shadow slots see.
func (r *Runner) SetPacket(p Packet) { r.setPacket(p) }

// PacketBytes returns the packet from its data pointer to its end.
func (r *Runner) PacketBytes() []byte { return vm.Slice(r.pkt.Data, r.pkt.End-r.pkt.Data) }

// SetRedirect records the redirect helper call of the run (Output.Redirect).
func (r *Runner) SetRedirect(rd Redirect) { r.redirect, r.redirected = rd, true }

// OwnMap returns the map of the running program whose handle is handle,
// or nil: the fast path of a checked run's map arguments.
func (r *Runner) OwnMap(handle uint64) maps.Map {
	if r.prog == nil {
		return nil
	}
	for _, m := range r.prog.Maps {
		if m.Handle() == handle {
			return m
		}
	}
	return nil
}

// GrantMap lets a checked run access the values of m when m is a map the
// program reached at run time (an inner map of a map of maps) rather than
// one it references, whose memory the run was granted from the start.
func (r *Runner) GrantMap(e *vm.Env, m maps.Map) {
	if r.prog == nil || slices.Contains(r.prog.Maps, m) {
		return
	}
	mem := m.Memory()
	if len(mem) == 0 || slices.Contains(r.regions, mem[0]) {
		return
	}
	for _, reg := range mem {
		r.AddRegion(e, reg)
	}
}

// StringSpan bounds a constant string at addr to the read-only value
// holding it: the bytes from addr to that value's end, or limit when no
// such value holds addr.
func (r *Runner) StringSpan(addr, limit uint64) uint64 {
	if r.prog != nil {
		for _, v := range r.prog.StrValues {
			if addr >= v.Start && addr < v.End {
				limit = min(limit, v.End-addr)
			}
		}
	}
	return limit
}

// Output is where bpf_trace_printk lines go (nil: discarded).
func (r *Runner) Output() io.Writer { return r.prog.Output }

// Line is a reusable buffer for the helpers' output lines.
func (r *Runner) Line() *[]byte { return &r.hs.line }
