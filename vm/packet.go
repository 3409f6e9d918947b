package vm

// Negative LD_ABS/LD_IND offsets name headers, as the kernel's
// bpf_internal_load_pointer_neg_helper reads them: from SKF_NET_OFF up the
// offset counts from the network header, from SKF_LL_OFF up from the
// link-layer (MAC) header; below SKF_LL_OFF nothing is there.
const (
	SKFNetOff = -0x100000 // SKF_NET_OFF
	SKFLLOff  = -0x200000 // SKF_LL_OFF
)

// LoadPacket implements LD_ABS and LD_IND: a big-endian load of size bytes
// (1, 2 or 4) at off, the offset the instruction computed as a signed
// 32-bit value (sign-extended). Non-negative offsets count from
// e.Packet.Start; negative ones name headers (SKFNetOff, SKFLLOff, counting
// from e.NetHeader and e.MacHeader). ok is false when the bytes are not
// inside the packet, which the kernel's expansion of the load turns into
// a return of 0 from the current function.
func LoadPacket(e *Env, off, size uint64) (v uint64, ok bool) {
	pkt := e.Packet
	addr := pkt.Start + off
	if int64(off) < 0 {
		k := int64(off)
		switch {
		case k >= SKFNetOff && e.NetHeader != 0:
			addr = e.NetHeader + uint64(k-SKFNetOff)
		case k >= SKFLLOff && k < SKFNetOff && e.MacHeader != 0:
			addr = e.MacHeader + uint64(k-SKFLLOff)
		default:
			return 0, false
		}
		// The headers lie before the data: the load may start there and
		// must end inside the packet.
		if addr > pkt.End || size > pkt.End-addr {
			return 0, false
		}
	} else if pkt.End <= pkt.Start || off >= pkt.End-pkt.Start || size > pkt.End-pkt.Start-off {
		return 0, false
	}
	p := Ptr(addr)
	switch size {
	case 1:
		return uint64(*(*uint8)(p)), true
	case 2:
		b := (*[2]byte)(p)
		return uint64(b[0])<<8 | uint64(b[1]), true
	}
	b := (*[4]byte)(p)
	return uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3]), true
}
