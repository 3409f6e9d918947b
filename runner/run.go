package runner

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/vm"
)

// Layout of a run's off-heap buffer: the context area (the context
// structure, then the shadow slots), then headroom, then the packet, then
// tailroom. The headroom matches the kernel's XDP_PACKET_HEADROOM so that
// bpf_xdp_adjust_head can grow the packet.
const (
	Headroom  = 256
	Tailroom  = 256
	MaxPacket = 1 << 20
)

// ethHeader is the size of an Ethernet header, which socket filters do not
// see.
const ethHeader = 14

// Shadow slots, relative to Shadow: the 64-bit packet pointers that
// verified programs load in place of the context's data, data_end and
// data_meta fields, and the address of the flow keys they load in place of
// __sk_buff.flow_keys and of the socket in place of __sk_buff.sk (the
// rewrite turns those loads into loads of these slots; setPacket keeps them
// up to date), and of a writable raw tracepoint's buffer in place of its
// first argument. The flow keys follow the slots, then the socket.
const (
	ShadowData     = 0
	ShadowEnd      = 8
	ShadowMeta     = 16
	ShadowFlowKeys = 24
	ShadowSocket   = 32
	ShadowTPBuffer = 40
	shadowSize     = 48
)

// Shadow is where, in the context area, the shadow slots of a program of
// type pt are.
func Shadow(pt *progtype.Type) uint64 {
	return (uint64(pt.ContextSize) + 7) &^ 7
}

// flowKeys is where, in the context area, the flow keys of a program of
// type pt are.
func flowKeys(pt *progtype.Type) uint64 { return Shadow(pt) + shadowSize }

// socket is where, in the context area, the socket of a run of a program
// of type pt is.
func socket(pt *progtype.Type) uint64 { return flowKeys(pt) + progtype.FlowKeysSize }

// contextArea is the size of the context area at the start of a run's
// buffer: the context, the shadow slots, the flow keys and the socket, at
// least 256 bytes.
func contextArea(pt *progtype.Type) int {
	return max(256, int(socket(pt)+progtype.SockSize+63)&^63)
}

// Packet locates the packet in a runner's buffer: Start <= Meta <= Data
// <= End <= Limit, where [Start, Meta) is free headroom and [End, Limit)
// free tailroom.
type Packet struct {
	Start, Meta, Data, End, Limit uint64
}

// Redirect is the target a program chose with bpf_redirect or
// bpf_redirect_map.
type Redirect struct {
	// Map is the map of bpf_redirect_map, nil for bpf_redirect.
	Map maps.Map
	// Key is the map key, or for bpf_redirect the interface index.
	Key uint64
	// Flags are the helper's flags argument.
	Flags uint64
	// Valid is set when a redirect helper was called.
	Valid bool
	// Peer marks bpf_redirect_peer: to the ingress of the peer of device
	// Key (veth, netkit) in its network namespace.
	Peer bool
	// Neigh marks bpf_redirect_neigh: out of device Key to the neighbour
	// of NextHop, or, when its Family is 0, of the packet's route.
	Neigh   bool
	NextHop NextHop
	// Socket is the cookie of the socket of bpf_sk_redirect_map,
	// bpf_sk_redirect_hash, bpf_msg_redirect_map, bpf_msg_redirect_hash
	// and bpf_sk_select_reuseport (whose Key is the index of an array, 0
	// for a sockhash), 0 for the other helpers.
	Socket uint64
}

// Input is a test run's input, as the kernel's BPF_PROG_TEST_RUN takes it.
type Input struct {
	// Data is the packet (for programs without a context, the memory R1
	// points at; R2 holds its length).
	Data []byte
	// DataOut receives the packet after the run (nil: not asked for).
	DataOut []byte
	// Context is the context input, given when HasContext is set; a
	// longer input is taken if its bytes past the context are zero.
	Context    []byte
	HasContext bool
	// ContextOut receives the context after the run (nil: not asked for).
	ContextOut []byte
	// Repeat runs the program this many times (at least once), each run
	// seeing the context and packet as the one before left them.
	Repeat uint32
	// RunContext cancels the run (nil: never).
	RunContext context.Context
	// OnCPU runs on runner CPU, waiting for it; otherwise the run takes
	// the first free runner.
	OnCPU bool
	CPU   int
	// Timed measures Output.Duration.
	Timed bool
	// Net is the host's world (nil: the kernel's test run's): for
	// programs on a socket buffer, and the cgroups and socket of any.
	Net *Net
	// Trace is the host's world for tracing programs (nil: the zero
	// world).
	Trace *Trace
}

// Output is what a test run returns.
type Output struct {
	// R0 is the full 64-bit value of R0 at exit.
	R0 uint64
	// Duration is the mean time per run (Input.Timed only).
	Duration time.Duration
	// DataSize is the size of the output packet.
	DataSize int
	// Redirect records the last run's redirect helper call.
	Redirect Redirect
	// Clones are the copies of the packet the last run sent with
	// bpf_clone_redirect.
	Clones []Clone
	// Tunnel is the tunnel metadata the packet has after the run
	// (bpf_skb_set_tunnel_key's, or the one it was received with), nil
	// for none.
	Tunnel *Tunnel
	// Signals are the signals the last run sent (bpf_send_signal,
	// bpf_send_signal_thread).
	Signals []Signal
	// Buffer is a writable raw tracepoint's buffer after the run
	// (Trace.Buffer as the program left it).
	Buffer []byte
	// Selected is the cookie of the socket an sk_lookup program selected
	// with bpf_sk_assign, 0 for none.
	Selected uint64
}

// Run runs p on one of its runners as the kernel's test run does, filling
// in out (left zero when the run fails).
//
// Repetitions run as in the kernel's test run: on the same context and
// packet, each seeing what the one before left (a packet moved by
// bpf_xdp_adjust_head stays moved), so the setup of the run is done once
// and a repetition resets only what the kernel resets per program run.
func Run(p *Program, in *Input, out *Output) error {
	pt := p.Type
	if len(in.Data) > MaxPacket {
		return fmt.Errorf("%d bytes of data, at most %d", len(in.Data), MaxPacket)
	}
	if len(in.Data) < pt.MinData {
		return fmt.Errorf("%d bytes of data, the %s program type needs at least %d", len(in.Data), pt.Name, pt.MinData)
	}
	var r *Runner
	var err error
	if in.OnCPU {
		r, err = p.CPUs.AcquireOn(in.RunContext, in.CPU)
	} else {
		r, err = p.CPUs.Acquire(in.RunContext)
	}
	if err != nil {
		return err
	}
	defer p.CPUs.Release(r)
	// Looked at inside the run's epoch: either Close's grace period waits
	// for this run, or this run sees the program closed.
	if p.closed.Load() {
		return maps.ErrClosed
	}
	ctxArea := contextArea(pt)
	headroom, tailroom := Headroom, Tailroom
	if pt.Skb {
		// Room for the skb helpers to grow the packet in place.
		headroom, tailroom = max(headroom, SkbMaxLen), max(tailroom, SkbMaxLen)
	}
	var tpBuf []byte
	if pt.Trace != nil && in.Trace != nil {
		tpBuf = in.Trace.Buffer
	}
	if p.MaxTP > uint32(len(tpBuf)) {
		// The kernel refuses to attach such a program to the tracepoint.
		return fmt.Errorf("the program accesses %d bytes of the tracepoint's buffer, which has %d: %w", p.MaxTP, len(tpBuf), maps.ErrInvalid)
	}
	var hook progtype.HookRunState
	objects := 0
	if pt.Hook != nil {
		if p.Objects == nil {
			return fmt.Errorf("%s test run without the kernel's structures: %w", pt.Name, progtype.ErrNotSupported)
		}
		var err error
		if hook, err = pt.Hook.Check(p.Objects.hookInput(in), in.Data); err != nil {
			return err
		}
		objects = p.Objects.objectsSize()
	}
	if err := r.memory(ctxArea + headroom + len(in.Data) + tailroom + len(tpBuf) + objects); err != nil {
		return err
	}
	r.prog = p
	r.tpBuf, r.tpLen = 0, 0
	r.nfObjs, r.nfLen = 0, 0
	if len(tpBuf) > 0 {
		off := ctxArea + headroom + len(in.Data) + tailroom
		r.tpBuf, r.tpLen = r.buf.Addr()+uint64(off), uint64(len(tpBuf))
		copy(r.buf.Bytes()[off:], tpBuf)
	}

	buf := r.buf.Bytes()
	base := r.buf.Addr()
	ctx := buf[:ctxArea]
	r.keysIn = nil
	if pt.Keys != nil {
		// The context input is the flow keys'; the context starts zero.
		r.keysIn = make([]byte, progtype.FlowKeysSize)
		if err := readContext(in, r.keysIn); err != nil {
			return err
		}
		if err := pt.Keys.Check(r.keysIn); err != nil {
			return fmt.Errorf("context: %w", err)
		}
		clear(ctx[:pt.ContextSize])
	} else if pt.Hook != nil {
		// The context input is the hook state's (hookInput).
		clear(ctx[:pt.ContextSize])
	} else if err := readContext(in, ctx[:pt.ContextSize]); err != nil {
		return err
	}
	if err := pt.CheckInput(ctx[:pt.ContextSize]); err != nil {
		return err
	}
	var given []byte
	if in.ContextOut != nil && pt.Hook == nil {
		given = bytes.Clone(ctx[:pt.ContextSize])
	}
	frame := buf[ctxArea+headroom : ctxArea+headroom+len(in.Data)]
	copy(frame, in.Data)
	// The frame as given, for the flow keys' resets: the program may not
	// write the packet (PacketReadOnly), but unverified ones might.
	r.frame = nil
	if pt.Keys != nil {
		r.frame = in.Data
	}
	pkt := frame
	if pt.NetworkHeader {
		pkt = frame[ethHeader:]
	}
	if pt.Hook != nil {
		off := ctxArea + headroom + len(in.Data) + tailroom + len(tpBuf)
		pkt = r.beginNF(p, hook, ctx, frame, ctxArea+headroom, off)
	}
	pktStart := base + uint64(ctxArea+headroom+len(frame)-len(pkt))
	// Field by field: a composite literal would be built on the stack
	// and copied with wide loads that stall on store forwarding.
	r.pkt.Start, r.pkt.Meta, r.pkt.Data = base+uint64(ctxArea), pktStart, pktStart
	r.pkt.End, r.pkt.Limit = pktStart+uint64(len(pkt)), pktStart+uint64(len(pkt))+uint64(tailroom)
	if pt.Setup != nil {
		// The kernel's test run has a context when it is given one or
		// asked for one.
		if err := pt.Setup(ctx, frame, pkt, in.HasContext || in.ContextOut != nil); err != nil {
			return fmt.Errorf("context: %w", err)
		}
	}
	if pt.MetaInput != nil {
		// The input starts with metadata in front of the packet.
		r.pkt.Data += uint64(pt.MetaInput(ctx))
	}
	// Inputs the kernel stores in narrower fields lose their high bytes.
	pt.Truncate(ctx[:pt.ContextSize])
	r.sock = 0
	if pt.Socket != nil {
		sk := ctx[socket(pt) : socket(pt)+progtype.SockSize]
		clear(sk)
		if pt.Socket(sk, ctx[:pt.ContextSize], frame) {
			r.sock = base + socket(pt)
		}
	}
	if err := r.beginNet(in.Net); err != nil {
		return err
	}
	r.startEnv(in.RunContext)
	env := &r.env
	if len(frame) >= ethHeader {
		// Where negative LD_ABS/LD_IND offsets count from: the frame's
		// Ethernet header and what follows it, as in the kernel's test
		// run (which also counts a socket filter's from there).
		env.MacHeader = pktStart - uint64(len(frame)-len(pkt))
		env.NetHeader = env.MacHeader + ethHeader
	}
	var r1, r2 uint64
	if pt.ContextSize == 0 {
		r1, r2 = r.pkt.Data, uint64(len(pkt))
		if len(pkt) == 0 {
			r1 = 0
		}
	} else {
		env.Ctx = vm.Region{Start: base, End: base + uint64(pt.ContextSize), Writable: true}
		if !p.Verified {
			env.CtxAccess = ctxAccess
			if r.sock != 0 {
				// Loads from the socket are emulated too, for the
				// fields the kernel converts (ctxAccess).
				env.Ctx.End = r.sock + progtype.SockSize
			}
		}
		r1 = base
	}
	if pt.Skb {
		r.beginSkb(in.Net)
	} else {
		// The world and a socket of the run's own (SocketCookie) for
		// the other types.
		r.sk.net = in.Net
		r.sk.cookie++
	}
	if pt.Trace != nil || pt.BTFArgs {
		r.beginTrace(in.Trace)
	}
	r.beginRun()
	repeat := max(in.Repeat, 1)
	var start time.Time
	if in.Timed {
		start = time.Now()
	}
	r0, err := r.repeat(p, env, r1, r2, repeat)
	r.endRun()
	if err != nil {
		return err
	}
	out.R0 = r0
	if in.Timed {
		out.Duration = time.Since(start) / time.Duration(repeat)
	}
	out.Redirect = r.redirect
	if pt.Skb {
		if len(r.sk.clones) > 0 {
			out.Clones = append([]Clone(nil), r.sk.clones...)
		}
		if t := r.sk.skb.Tunnel; t != nil {
			c := *t
			c.Options = append([]byte(nil), t.Options...)
			out.Tunnel = &c
		}
	}
	if pt.Trace != nil && len(r.tr.signals) > 0 {
		out.Signals = append([]Signal(nil), r.tr.signals...)
	}
	if r.tpLen > 0 {
		out.Buffer = append([]byte(nil), vm.Slice(r.tpBuf, r.tpLen)...)
	}
	if pt.Keys != nil {
		return keysOutput(r, pt, in, out)
	}
	if pt.Name == progtype.SKLookup.Name {
		if err := finishSKLookup(r, ctx, out); err != nil {
			return err
		}
	}
	if pt.Hook != nil {
		// The kernel's netfilter test run gives no packet or context
		// back.
		return nil
	}
	// The kernel's XDP test run returns the metadata in front of the packet.
	outStart := r.pkt.Data
	switch {
	case p.Kind == ebpf.XDP:
		outStart = r.pkt.Meta
	case pt.NetworkHeader:
		// Socket filters (and cgroup_skb, lwt) saw the packet from the
		// network header; the kernel's test run pushes a link header
		// back, zeroed, in front of it.
		outStart -= ethHeader
		clear(vm.Slice(outStart, ethHeader))
	}
	out.DataSize = int(r.pkt.End - outStart)
	if in.DataOut != nil {
		data := vm.Slice(outStart, r.pkt.End-outStart)
		if len(in.DataOut) < len(data) {
			return fmt.Errorf("output packet of %d bytes does not fit DataOut of %d", len(data), len(in.DataOut))
		}
		copy(in.DataOut, data)
	}
	if in.ContextOut != nil {
		pt.Output(ctx[:pt.ContextSize], given, r.pkt.Meta, r.pkt.Data, r.pkt.End)
		copy(in.ContextOut, ctx[:pt.ContextSize])
	}
	return nil
}

// keysOutput finishes a flow_dissector test run: the flow keys are the
// output packet, the keys' input the context output.
func keysOutput(r *Runner, pt *progtype.Type, in *Input, out *Output) error {
	// The length is the input's, not the constant: with a constant length
	// go1.26.8's compiler crashes on the copy below (disjointTypes).
	keys := vm.Slice(r.buf.Addr()+flowKeys(pt), uint64(len(r.keysIn)))
	pt.Keys.Finish(keys, len(in.Data))
	out.DataSize = len(keys)
	if in.DataOut != nil {
		if len(in.DataOut) < len(keys) {
			return fmt.Errorf("flow keys of %d bytes do not fit DataOut of %d", len(keys), len(in.DataOut))
		}
		copy(in.DataOut, keys)
	}
	if in.ContextOut != nil {
		copy(in.ContextOut, r.keysIn)
	}
	return nil
}

// readContext fills the context from the input, zero when none is given.
func readContext(in *Input, ctx []byte) error {
	clear(ctx)
	if !in.HasContext {
		return nil
	}
	size := len(ctx)
	if size == 0 {
		return fmt.Errorf("context: program type takes no context: %w", progtype.ErrNotSupported)
	}
	b := in.Context
	if len(b) > size {
		// As the kernel's bpf_check_uarg_tail_zero: a longer input is
		// taken if what the structure does not hold is zero.
		if bytes.ContainsFunc(b[size:], func(r rune) bool { return r != 0 }) {
			return fmt.Errorf("context of %d bytes, the program type's is %d and the rest is not zero", len(b), size)
		}
		b = b[:size]
	}
	copy(ctx, b)
	return nil
}

// beyondCtx emulates the accesses of an unverified program past the
// context, in the window that reaches the run's socket: loads from the
// socket, its bytes as they are but for the fields the kernel converts
// (progtype.Field.NoneMinusOne), and loads and stores of the flow keys;
// nothing else, as without the window.
func beyondCtx(e *vm.Env, pt *progtype.Type, off, size uint64, write bool, val uint64) (uint64, error) {
	addr := e.Ctx.Start + off
	switch sk, keys := socket(pt), flowKeys(pt); {
	case off >= sk && off+size <= sk+progtype.SockSize && !write:
		f := progtype.Sock.Field(uint32(off-sk), uint32(size))
		if f != nil && f.MinusOne(uint32(size)) && off-sk == uint64(f.Offset) {
			return f.LoadConverted(vm.LoadSized(addr, uint64(f.Backing))), nil
		}
		return vm.LoadSized(addr, size), nil
	case pt.Keys != nil && off >= keys && off+size <= keys+progtype.FlowKeysSize:
		if write {
			vm.StoreSized(addr, size, val)
			return 0, nil
		}
		return vm.LoadSized(addr, size), nil
	}
	return 0, &vm.MemoryError{Addr: addr, Size: size, Write: write}
}

// ctxAccess emulates context accesses in checked mode: it enforces the
// type's field rules and turns loads of packet pointer fields into the
// run's 64-bit packet addresses, as the kernel's context rewrite does.
func ctxAccess(e *vm.Env, off, size uint64, write bool, val uint64) (uint64, error) {
	r := Of(e)
	pt := r.prog.Type
	op := progtype.Load
	if write {
		op = progtype.Store
	}
	if off >= uint64(pt.ContextSize) {
		return beyondCtx(e, pt, off, size, write, val)
	}
	f, err := pt.Access(uint32(off), uint32(size), op)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", vm.ErrMemory, err)
	}
	switch f.Kind {
	case progtype.PacketData:
		return r.pkt.Data, nil
	case progtype.PacketEnd:
		return r.pkt.End, nil
	case progtype.PacketMeta:
		return r.pkt.Meta, nil
	case progtype.FlowKeys:
		return e.Ctx.Start + flowKeys(pt), nil
	case progtype.SockCommonOrNull, progtype.Socket, progtype.SocketOrNull:
		if r.ns.selected != 0 {
			return r.ns.selected, nil // sk_lookup's bpf_sk_assign
		}
		return r.sock, nil
	case progtype.TPBuffer:
		return r.tpBuf, nil
	}
	o, n := f.Convert(uint32(off), uint32(size), op)
	addr, size := e.Ctx.Start+uint64(o), uint64(n)
	if !write && f.MinusOne(uint32(size)) {
		return f.LoadConverted(vm.LoadSized(addr, uint64(f.Backing))), nil
	}
	if write {
		if f.StoreLimit != 0 && val >= f.StoreLimit {
			// Without the instruction, a store of a negative immediate
			// is taken for a register's (DESIGN.md).
			return 0, nil
		}
		vm.StoreSized(addr, size, val)
		return 0, nil
	}
	return vm.LoadSized(addr, size), nil
}
