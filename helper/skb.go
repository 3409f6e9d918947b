package helper

import (
	"encoding/binary"
	"math/bits"

	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// skbHelpers read and write socket buffers and compute checksums
// (net/core/filter.c).
var skbHelpers = []Helper{
	{Proto: Proto{Name: "bpf_skb_load_bytes", Args: [5]ArgType{ArgCtx, ArgAnything, ArgUninitMem, ArgConstSize}}, Func: helperSkbLoadBytes},
	{Proto: Proto{Name: "bpf_skb_store_bytes", Args: [5]ArgType{ArgCtx, ArgAnything, ArgMem, ArgConstSize, ArgAnything}, ChangesPacket: true}, Func: helperSkbStoreBytes},
	{Proto: Proto{Name: "bpf_l3_csum_replace", Args: [5]ArgType{ArgCtx, ArgAnything, ArgAnything, ArgAnything, ArgAnything}, ChangesPacket: true}, Func: helperL3CsumReplace},
	{Proto: Proto{Name: "bpf_l4_csum_replace", Args: [5]ArgType{ArgCtx, ArgAnything, ArgAnything, ArgAnything, ArgAnything}, ChangesPacket: true}, Func: helperL4CsumReplace},
	{Proto: Proto{Name: "bpf_csum_diff", Args: [5]ArgType{ArgMemOrNull, ArgConstSizeOrZero, ArgMemOrNull, ArgConstSizeOrZero, ArgAnything}, PktAccess: true}, Func: helperCsumDiff},
}

// Flags of the skb and checksum helpers, as in linux/bpf.h.
const (
	flagRecomputeCsum  = 1 << 0 // BPF_F_RECOMPUTE_CSUM
	flagInvalidateHash = 1 << 1 // BPF_F_INVALIDATE_HASH
	flagHdrFieldMask   = 0xf    // BPF_F_HDR_FIELD_MASK: size of the field
	flagPseudoHdr      = 1 << 4 // BPF_F_PSEUDO_HDR
	flagMarkMangled0   = 1 << 5 // BPF_F_MARK_MANGLED_0
	flagMarkEnforce    = 1 << 6 // BPF_F_MARK_ENFORCE
	flagIPv6           = 1 << 7 // BPF_F_IPV6
)

// csumMangled0 is CSUM_MANGLED_0: how a UDP checksum that computes to 0
// is sent, since 0 means "no checksum".
const csumMangled0 = 0xffff

// maxSkbOffset is the largest offset the skb byte helpers accept.
const maxSkbOffset = 0xffff

// helperSkbLoadBytes is bpf_skb_load_bytes(skb, offset, to, len): len bytes
// of the packet from offset, or -EFAULT (with to zeroed) when they are not
// all in the packet.
func helperSkbLoadBytes(e *vm.Env, _, r2, r3, r4, _ uint64) (uint64, error) {
	n, off := uint64(uint32(r4)), uint64(uint32(r2))
	to, err := e.Bytes(r3, n, true)
	if err != nil {
		return 0, err
	}
	pkt := runner.Of(e).PacketBytes()
	if off > maxSkbOffset || off+n > uint64(len(pkt)) {
		clear(to)
		return neg(efault), nil
	}
	copy(to, pkt[off:])
	return 0, nil
}

// helperSkbStoreBytes is bpf_skb_store_bytes(skb, offset, from, len, flags).
// BPF_F_RECOMPUTE_CSUM and BPF_F_INVALIDATE_HASH are accepted; bpfvm's
// packets carry no skb->csum or hash for them to update (as in the
// kernel's test runs, whose packets are CHECKSUM_NONE).
func helperSkbStoreBytes(e *vm.Env, _, r2, r3, r4, r5 uint64) (uint64, error) {
	n, off := uint64(uint32(r4)), uint64(uint32(r2))
	from, err := e.Bytes(r3, n, false)
	if err != nil {
		return 0, err
	}
	if r5&^(flagRecomputeCsum|flagInvalidateHash) != 0 {
		return neg(einval), nil
	}
	pkt := runner.Of(e).PacketBytes()
	if off > maxSkbOffset || off+n > uint64(len(pkt)) {
		return neg(efault), nil
	}
	copy(pkt[off:], from)
	return 0, nil
}

// csumField returns the 16-bit checksum field at offset of the packet for
// the csum_replace helpers, or an errno.
func csumField(e *vm.Env, offset uint64) ([]byte, int64) {
	off := uint64(uint32(offset))
	if off > maxSkbOffset || off&1 != 0 {
		return nil, efault
	}
	pkt := runner.Of(e).PacketBytes()
	if off+2 > uint64(len(pkt)) {
		return nil, efault
	}
	return pkt[off : off+2], 0
}

// helperL3CsumReplace is bpf_l3_csum_replace(skb, offset, from, to, flags):
// it updates the checksum at offset for a 2- or 4-byte field changed from
// from to to (flags & BPF_F_HDR_FIELD_MASK), or by a precomputed
// difference to (size 0, from must be 0), as RFC 1624 incremental updates.
func helperL3CsumReplace(e *vm.Env, _, r2, r3, r4, r5 uint64) (uint64, error) {
	if r5&^flagHdrFieldMask != 0 {
		return neg(einval), nil
	}
	field, errno := csumField(e, r2)
	if errno != 0 {
		return neg(errno), nil
	}
	sum := binary.NativeEndian.Uint16(field)
	switch r5 & flagHdrFieldMask {
	case 0:
		if r3 != 0 {
			return neg(einval), nil
		}
		sum = csumReplaceByDiff(sum, uint32(r4))
	case 2:
		sum = csumReplace2(sum, uint16(r3), uint16(r4))
	case 4:
		sum = csumReplace4(sum, uint32(r3), uint32(r4))
	default:
		return neg(einval), nil
	}
	binary.NativeEndian.PutUint16(field, sum)
	return 0, nil
}

// helperL4CsumReplace is bpf_l4_csum_replace(skb, offset, from, to, flags),
// bpf_l3_csum_replace for TCP and UDP checksums. BPF_F_MARK_MANGLED_0
// leaves a zero (absent) UDP checksum alone unless BPF_F_MARK_ENFORCE, and
// writes a result of 0 as CSUM_MANGLED_0. BPF_F_PSEUDO_HDR (the field is
// part of the pseudo-header) and BPF_F_IPV6 change nothing here: they
// matter for skb->csum, and bpfvm's packets are CHECKSUM_NONE, as in the
// kernel's test runs.
func helperL4CsumReplace(e *vm.Env, _, r2, r3, r4, r5 uint64) (uint64, error) {
	if r5&^(flagMarkMangled0|flagMarkEnforce|flagPseudoHdr|flagHdrFieldMask|flagIPv6) != 0 {
		return neg(einval), nil
	}
	field, errno := csumField(e, r2)
	if errno != 0 {
		return neg(errno), nil
	}
	sum := binary.NativeEndian.Uint16(field)
	mangled := r5&flagMarkMangled0 != 0
	if mangled && r5&flagMarkEnforce == 0 && sum == 0 {
		return 0, nil
	}
	switch r5 & flagHdrFieldMask {
	case 0:
		if r3 != 0 {
			return neg(einval), nil
		}
		sum = csumReplaceByDiff(sum, uint32(r4))
	case 2:
		// inet_proto_csum_replace2 widens the values to 32 bits.
		sum = csumReplace4(sum, uint32(uint16(r3)), uint32(uint16(r4)))
	case 4:
		sum = csumReplace4(sum, uint32(r3), uint32(r4))
	default:
		return neg(einval), nil
	}
	if mangled && sum == 0 {
		sum = csumMangled0
	}
	binary.NativeEndian.PutUint16(field, sum)
	return 0, nil
}

// helperCsumDiff is bpf_csum_diff(from, from_size, to, to_size, seed): the
// ones'-complement sum of to minus that of from, plus seed, folded to 16
// bits as the kernel has done on every architecture since Linux 6.12.
func helperCsumDiff(e *vm.Env, r1, r2, r3, r4, r5 uint64) (uint64, error) {
	fromSize, toSize := uint64(uint32(r2)), uint64(uint32(r4))
	if fromSize > 0 && r1 == 0 || toSize > 0 && r3 == 0 {
		// Values that may be NULL pass the verifier, as in the kernel.
		return neg(efault), nil
	}
	from, err := e.Bytes(r1, fromSize, false)
	if err != nil {
		return 0, err
	}
	to, err := e.Bytes(r3, toSize, false)
	if err != nil {
		return 0, err
	}
	seed := uint32(r5)
	switch {
	case fromSize > 0 && toSize > 0:
		return uint64(csumFrom32to16(csumSub(csumPartial(to, seed), csumPartial(from, 0)))), nil
	case toSize > 0:
		return uint64(csumFrom32to16(csumPartial(to, seed))), nil
	case fromSize > 0:
		return uint64(csumFrom32to16(^csumPartial(from, ^seed))), nil
	}
	return uint64(csumFrom32to16(seed)), nil
}

// The ones'-complement arithmetic of the Internet checksum (RFC 1071) on
// host-order values, as the kernel's csum_* functions. A 32-bit partial
// sum (__wsum) adds with end-around carry; a 16-bit checksum (__sum16) is
// the complement of the folded sum.

func csumAdd(a, b uint32) uint32 {
	s, c := bits.Add32(a, b, 0)
	return s + c
}

func csumSub(a, b uint32) uint32 { return csumAdd(a, ^b) }

func csumFold(sum uint32) uint16 {
	sum = sum&0xffff + sum>>16
	sum = sum&0xffff + sum>>16
	return ^uint16(sum)
}

func csumFrom32to16(sum uint32) uint16 {
	sum += sum>>16 | sum<<16
	return uint16(sum >> 16)
}

func csum16Add(sum, addend uint16) uint16 {
	s := uint32(sum) + uint32(addend)
	return uint16(s) + uint16(s>>16)
}

// csumReplace4 is the kernel's csum_replace4: the checksum after a 32-bit
// field changed from from to to.
func csumReplace4(sum uint16, from, to uint32) uint16 {
	return csumFold(csumAdd(csumSub(^uint32(sum), from), to))
}

// csumReplace2 is the kernel's csum_replace2, in 16-bit arithmetic.
func csumReplace2(sum, from, to uint16) uint16 {
	return ^csum16Add(csum16Add(^sum, ^from), to)
}

// csumReplaceByDiff is the kernel's csum_replace_by_diff: the checksum
// after a change whose partial sum is diff (as bpf_csum_diff returns).
func csumReplaceByDiff(sum uint16, diff uint32) uint16 {
	return csumFold(csumAdd(diff, ^uint32(sum)))
}

// csumPartial is the kernel's csum_partial as x86-64 computes it: the sum
// of the data as 64-bit host-order words (the last one zero-padded) with
// end-around carry, folded to 32 bits, added to sum.
func csumPartial(b []byte, sum uint32) uint32 {
	acc := uint64(sum)
	add := func(v uint64) {
		s, c := bits.Add64(acc, v, 0)
		acc = s + c
	}
	for ; len(b) >= 8; b = b[8:] {
		add(binary.NativeEndian.Uint64(b))
	}
	if len(b) > 0 {
		var tail [8]byte
		copy(tail[:], b)
		add(binary.NativeEndian.Uint64(tail[:]))
	}
	return csumAdd(uint32(acc>>32), uint32(acc))
}
