package bpfvm

import (
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf"

	"bpfvm/vm"
)

// Layout of a run's off-heap buffer: the context structure, then headroom,
// then the packet, then tailroom. The headroom matches the kernel's
// XDP_PACKET_HEADROOM so that bpf_xdp_adjust_head can grow the packet.
const (
	ctxArea   = 256
	headroom  = 256
	tailroom  = 256
	maxPacket = 1 << 20
)

// progType describes how a program type sees its input: how the context is
// laid out and which of its fields hold pointers the program sees as 32-bit
// values (emulated in checked mode, rewritten after verification).
type progType struct {
	name string
	// ctxSize is the size of the context structure (0: R1 points at the data
	// and R2 holds its length, as in the conformance suite).
	ctxSize uint64
	// pointers maps context offsets to the packet pointer they load.
	pointers map[uint64]packetPointer
	// minData is the smallest input the kernel's test run accepts.
	minData int
	// setup fills the context from the packet before a run.
	setup func(ctx []byte, pkt []byte)
}

type packetPointer int

const (
	ptrData packetPointer = iota
	ptrDataEnd
	ptrDataMeta
)

// struct xdp_md offsets.
const (
	xdpData     = 0
	xdpDataEnd  = 4
	xdpDataMeta = 8
)

// struct __sk_buff offsets used by the test-run emulation.
const (
	skbLen      = 0
	skbProtocol = 16
	skbData     = 76
	skbDataEnd  = 80
	skbDataMeta = 140
	skbWireLen  = 160
	skbSize     = 192
)

var (
	rawType = &progType{name: "raw"}
	xdpType = &progType{
		name:    "xdp",
		ctxSize: 24,
		pointers: map[uint64]packetPointer{
			xdpData: ptrData, xdpDataEnd: ptrDataEnd, xdpDataMeta: ptrDataMeta,
		},
		minData: 14,
	}
	skbType = &progType{
		name:    "skb",
		ctxSize: skbSize,
		pointers: map[uint64]packetPointer{
			skbData: ptrData, skbDataEnd: ptrDataEnd, skbDataMeta: ptrDataMeta,
		},
		minData: 14,
		setup: func(ctx, pkt []byte) {
			binary.LittleEndian.PutUint32(ctx[skbLen:], uint32(len(pkt)))
			binary.LittleEndian.PutUint32(ctx[skbWireLen:], uint32(len(pkt)))
			// skb->protocol is the Ethernet type in network byte order.
			ctx[skbProtocol], ctx[skbProtocol+1] = pkt[12], pkt[13]
		},
	}
)

func typeOf(t ebpf.ProgramType) (*progType, error) {
	switch t {
	case ebpf.UnspecifiedProgram:
		return rawType, nil
	case ebpf.XDP:
		return xdpType, nil
	case ebpf.SocketFilter, ebpf.SchedCLS, ebpf.SchedACT:
		return skbType, nil
	}
	return nil, fmt.Errorf("program type %s: %w", t, ErrNotSupported)
}

// packetState locates the packet in a runner's buffer: start <= meta <=
// data <= end <= limit, where [start, meta) is free headroom and
// [end, limit) free tailroom.
type packetState struct {
	start, meta, data, end, limit uint64
}

// ctxAccess emulates loads of pointer fields; other fields are plain memory
// in the context area.
func (pt *progType) ctxAccess(e *vm.Env, off, size uint64, write bool, val uint64) (uint64, error) {
	st := e.Value.(*runner)
	if which, ok := pt.pointers[off]; ok {
		if write || size != 4 && size != 8 {
			return 0, &vm.MemoryError{Addr: e.Ctx.Start + off, Size: size, Write: write}
		}
		switch which {
		case ptrData:
			return st.pkt.data, nil
		case ptrDataEnd:
			return st.pkt.end, nil
		default:
			return st.pkt.meta, nil
		}
	}
	if off+size > pt.ctxSize {
		return 0, &vm.MemoryError{Addr: e.Ctx.Start + off, Size: size, Write: write}
	}
	p := vm.Ptr(e.Ctx.Start + off)
	if write {
		switch size {
		case 1:
			*(*uint8)(p) = uint8(val)
		case 2:
			*(*uint16)(p) = uint16(val)
		case 4:
			*(*uint32)(p) = uint32(val)
		default:
			*(*uint64)(p) = val
		}
		return 0, nil
	}
	switch size {
	case 1:
		return uint64(*(*uint8)(p)), nil
	case 2:
		return uint64(*(*uint16)(p)), nil
	case 4:
		return uint64(*(*uint32)(p)), nil
	}
	return *(*uint64)(p), nil
}
