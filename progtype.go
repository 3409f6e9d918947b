package bpfvm

import (
	"fmt"

	"github.com/cilium/ebpf"

	"bpfvm/progtype"
	"bpfvm/vm"
)

// Layout of a run's off-heap buffer: the context structure, then headroom,
// then the packet, then tailroom. The headroom matches the kernel's
// XDP_PACKET_HEADROOM so that bpf_xdp_adjust_head can grow the packet.
const (
	headroom  = 256
	tailroom  = 256
	maxPacket = 1 << 20
)

// typeOf returns the description of a kernel program type bpfvm runs.
func typeOf(t ebpf.ProgramType) (*progtype.Type, error) { return progtype.Of(t) }

// packetState locates the packet in a runner's buffer: start <= meta <=
// data <= end <= limit, where [start, meta) is free headroom and
// [end, limit) free tailroom.
type packetState struct {
	start, meta, data, end, limit uint64
}

// ctxAccess emulates context accesses in checked mode: it enforces the
// type's field rules and turns loads of packet pointer fields into the
// run's 64-bit packet addresses, as the kernel's context rewrite does.
func ctxAccess(e *vm.Env, off, size uint64, write bool, val uint64) (uint64, error) {
	r := e.Value.(*runner)
	pt := r.prog.pt
	op := progtype.Load
	if write {
		op = progtype.Store
	}
	f, err := pt.Access(uint32(off), uint32(size), op)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", vm.ErrMemory, err)
	}
	switch f.Kind {
	case progtype.PacketData:
		return r.pkt.data, nil
	case progtype.PacketEnd:
		return r.pkt.end, nil
	case progtype.PacketMeta:
		return r.pkt.meta, nil
	}
	o, n := f.Convert(uint32(off), uint32(size), op)
	addr, size := e.Ctx.Start+uint64(o), uint64(n)
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
