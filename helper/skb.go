package helper

import (
	"encoding/binary"
	"fmt"
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
	{Proto: Proto{Name: "bpf_csum_update", Args: [5]ArgType{ArgCtx, ArgAnything}}, Func: helperCsumUpdate},
	{Proto: Proto{Name: "bpf_csum_level", Args: [5]ArgType{ArgCtx, ArgAnything}}, Func: skbOnly(helperCsumLevel)},
	{Proto: Proto{Name: "bpf_skb_load_bytes_relative", Args: [5]ArgType{ArgCtx, ArgAnything, ArgUninitMem, ArgConstSize, ArgAnything}}, Func: skbOnly(helperSkbLoadBytesRelative)},
	{Proto: Proto{Name: "bpf_skb_pull_data", Args: [5]ArgType{ArgCtx, ArgAnything}, ChangesPacket: true}, Func: skbOnly(helperSkbPullData)},
	{Proto: Proto{Name: "bpf_skb_change_tail", Args: [5]ArgType{ArgCtx, ArgAnything, ArgAnything}, ChangesPacket: true}, Func: skbOnly(helperSkbChangeTail)},
	{Proto: Proto{Name: "bpf_skb_change_head", Args: [5]ArgType{ArgCtx, ArgAnything, ArgAnything}, ChangesPacket: true}, Func: skbOnly(helperSkbChangeHead)},
	{Proto: Proto{Name: "bpf_skb_adjust_room", Args: [5]ArgType{ArgCtx, ArgAnything, ArgAnything, ArgAnything}, ChangesPacket: true}, Func: skbOnly(helperSkbAdjustRoom)},
	{Proto: Proto{Name: "bpf_skb_change_proto", Args: [5]ArgType{ArgCtx, ArgAnything, ArgAnything}, ChangesPacket: true}, Func: skbOnly(helperSkbChangeProto)},
	{Proto: Proto{Name: "bpf_skb_change_type", Args: [5]ArgType{ArgCtx, ArgAnything}}, Func: skbOnly(helperSkbChangeType)},
	{Proto: Proto{Name: "bpf_skb_vlan_push", Args: [5]ArgType{ArgCtx, ArgAnything, ArgAnything}, ChangesPacket: true}, Func: skbOnly(helperSkbVlanPush)},
	{Proto: Proto{Name: "bpf_skb_vlan_pop", Args: [5]ArgType{ArgCtx}, ChangesPacket: true}, Func: skbOnly(helperSkbVlanPop)},
	{Proto: Proto{Name: "bpf_get_hash_recalc", Args: [5]ArgType{ArgCtx}}, Func: skbOnly(helperGetHashRecalc)},
	{Proto: Proto{Name: "bpf_set_hash", Args: [5]ArgType{ArgCtx, ArgAnything}}, Func: skbOnly(helperSetHash)},
	{Proto: Proto{Name: "bpf_set_hash_invalid", Args: [5]ArgType{ArgCtx}}, Func: skbOnly(helperSetHashInvalid)},
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
	if r5&flagInvalidateHash != 0 {
		clearHash(runner.Of(e))
	}
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

// The socket buffer helpers below act on the run's socket buffer model
// (runner.Skb): the packet, its MAC and network headers, and the context
// fields that mirror skb fields, which they keep up to date. The kernel's
// versions reallocate the buffer when it lacks room; bpfvm's runs leave
// room for runner.SkbMaxLen bytes at each end, so that the limits below
// are the kernel's and -ENOMEM (the kernel's allocation failure) comes
// only from packets grown past what the kernel's length checks bound
// (GSO packets, repeated VLAN pushes).

// Ethernet and IP constants of the socket buffer helpers.
const (
	ethPIP      = 0x0800
	ethPIPv6    = 0x86dd
	ethP8021Q   = 0x8100
	ethP8021AD  = 0x88a8
	ethP8023    = 0x0001
	ethP8022    = 0x0004
	ethP8023Min = 0x0600
	ethALen     = 6
	vlanHLen    = 4
	ipv4HLen    = 20
	ipv6HLen    = 40
	// packetOtherHost is the largest pkt_type bpf_skb_change_type
	// allows (skb_pkt_type_ok).
	packetOtherHost = 3
	// overflowUID is what bpf_get_socket_uid returns without a socket.
	overflowUID = 65534
	// maxCsumLevel is SKB_MAX_CSUM_LEVEL.
	maxCsumLevel = 3
	// ealready is EALREADY.
	ealready = 114
	enomem   = 12
)

// skbRun returns the runner and struct __sk_buff of a run.
func skbRun(e *vm.Env) (*runner.Runner, []byte) {
	r := runner.Of(e)
	return r, r.SkbContext()
}

// skbProto returns skb->protocol in host order.
func skbProto(ctx []byte) uint16 { return binary.BigEndian.Uint16(ctx[runner.SkbProtocol:]) }

func setSkbProto(ctx []byte, p uint16) { binary.BigEndian.PutUint16(ctx[runner.SkbProtocol:], p) }

// skbGSO reports whether the packet is a GSO packet (gso_size set).
func skbGSO(ctx []byte) bool { return binary.LittleEndian.Uint32(ctx[runner.SkbGSOSize:]) != 0 }

// clearHash is skb_clear_hash.
func clearHash(r *runner.Runner) {
	s := r.Skb()
	s.SWHash, s.L4Hash = false, false
	if ctx := r.SkbContext(); ctx != nil {
		binary.LittleEndian.PutUint32(ctx[runner.SkbHash:], 0)
	}
}

// errNoSkb is the error of a socket buffer helper an unverified program
// not on a socket buffer calls.
var errNoSkb = fmt.Errorf("%w for a program not on a socket buffer", vm.ErrHelper)

// skbOnly makes f, a helper of programs on a socket buffer, fail the run
// of an unverified program of another type that calls it.
func skbOnly(f vm.Helper) vm.Helper {
	return func(e *vm.Env, r1, r2, r3, r4, r5 uint64) (uint64, error) {
		if runner.Of(e).SkbContext() == nil {
			return 0, errNoSkb
		}
		return f(e, r1, r2, r3, r4, r5)
	}
}

// resetCsumUnnecessary is __skb_reset_checksum_unnecessary.
func resetCsumUnnecessary(s *runner.Skb) { s.CsumUnnecessary, s.CsumLevel = false, 0 }

// helperCsumUpdate is bpf_csum_update(skb, csum): it adds csum to
// skb->csum of a CHECKSUM_COMPLETE packet and returns it; bpfvm's packets,
// as the kernel's test-run ones, are never CHECKSUM_COMPLETE: -ENOTSUPP.
func helperCsumUpdate(*vm.Env, uint64, uint64, uint64, uint64, uint64) (uint64, error) {
	return neg(enotsupp), nil
}

// bpf_csum_level's levels.
const (
	csumLevelQuery = 0 // BPF_CSUM_LEVEL_QUERY
	csumLevelInc   = 1 // BPF_CSUM_LEVEL_INC
	csumLevelDec   = 2 // BPF_CSUM_LEVEL_DEC
	csumLevelReset = 3 // BPF_CSUM_LEVEL_RESET
)

// helperCsumLevel is bpf_csum_level(skb, level): it raises, lowers, resets
// or queries the number of checksums validated of a CHECKSUM_UNNECESSARY
// packet; raising a CHECKSUM_NONE packet makes it CHECKSUM_UNNECESSARY at
// level 0, lowering level 0 makes it CHECKSUM_NONE. A query of a packet
// that is not CHECKSUM_UNNECESSARY is -EACCES.
func helperCsumLevel(e *vm.Env, _, r2, _, _, _ uint64) (uint64, error) {
	s := runner.Of(e).Skb()
	switch r2 {
	case csumLevelInc:
		switch {
		case !s.CsumUnnecessary:
			s.CsumUnnecessary, s.CsumLevel = true, 0
		case s.CsumLevel < maxCsumLevel:
			s.CsumLevel++
		}
	case csumLevelDec:
		switch {
		case !s.CsumUnnecessary:
		case s.CsumLevel == 0:
			s.CsumUnnecessary = false
		default:
			s.CsumLevel--
		}
	case csumLevelReset:
		resetCsumUnnecessary(s)
	case csumLevelQuery:
		if !s.CsumUnnecessary {
			return neg(eacces), nil
		}
		return uint64(s.CsumLevel), nil
	default:
		return neg(einval), nil
	}
	return 0, nil
}

// bpf_skb_load_bytes_relative's start headers.
const (
	hdrStartMAC = 0 // BPF_HDR_START_MAC
	hdrStartNet = 1 // BPF_HDR_START_NET
)

// helperSkbLoadBytesRelative is bpf_skb_load_bytes_relative(skb, offset,
// to, len, start_header): len bytes from offset past the MAC or network
// header, up to the packet's end (a socket filter reads its Ethernet
// header so); -EFAULT with to zeroed otherwise.
func helperSkbLoadBytesRelative(e *vm.Env, _, r2, r3, r4, r5 uint64) (uint64, error) {
	n, off := uint64(uint32(r4)), uint64(uint32(r2))
	to, err := e.Bytes(r3, n, true)
	if err != nil {
		return 0, err
	}
	r := runner.Of(e)
	mac, nh := r.Headers()
	var start uint64
	switch uint32(r5) {
	case hdrStartMAC:
		start = mac
	case hdrStartNet:
		start = nh
	}
	if off > maxSkbOffset || start == 0 || start+off+n > r.Packet().End {
		clear(to)
		return neg(efault), nil
	}
	copy(to, vm.Slice(start+off, n))
	return 0, nil
}

// helperSkbPullData is bpf_skb_pull_data(skb, len): it makes the first len
// bytes (0: the linear part) directly accessible. bpfvm's packets are
// linear: -ENOMEM if the packet is shorter, else 0.
func helperSkbPullData(e *vm.Env, _, r2, _, _, _ uint64) (uint64, error) {
	p := runner.Of(e).Packet()
	if uint64(uint32(r2)) > p.End-p.Data {
		return neg(enomem), nil
	}
	return 0, nil
}

// skbMinLen is __bpf_skb_min_len: the packet must keep its headers up to
// the transport header, or to the network header when that is not set.
func skbMinLen(r *runner.Runner) uint32 {
	_, nh := r.Headers()
	if t := r.Skb().Trans; t != 0 {
		nh = t
	}
	return uint32(nh - r.Packet().Data)
}

// gsoReset is skb_gso_reset: the packet is no GSO packet any more.
func gsoReset(ctx []byte) {
	binary.LittleEndian.PutUint32(ctx[runner.SkbGSOSize:], 0)
	binary.LittleEndian.PutUint32(ctx[runner.SkbGSOSegs:], 0)
}

// helperSkbChangeTail is bpf_skb_change_tail(skb, len, flags): it trims
// or grows the packet to len bytes, the new ones zeroed. len must keep
// the headers (skbMinLen) and be at most BPF_SKB_MAX_LEN; flags must be 0;
// an encapsulated packet is -ENOTSUPP. A GSO packet stops being one.
func helperSkbChangeTail(e *vm.Env, _, r2, r3, _, _ uint64) (uint64, error) {
	r, ctx := skbRun(e)
	n := uint32(r2)
	if r3 != 0 || n > runner.SkbMaxLen || n < skbMinLen(r) {
		return neg(einval), nil
	}
	if r.Skb().Encap {
		return neg(enotsupp), nil
	}
	p := r.Packet()
	end := p.Data + uint64(n)
	if end > p.Limit {
		return neg(enomem), nil
	}
	if end > p.End {
		clear(vm.Slice(p.End, end-p.End))
	}
	p.End = end
	r.SetSkbPacket(p)
	if skbGSO(ctx) {
		gsoReset(ctx)
	}
	return 0, nil
}

// skbPushRoom reports whether n more bytes fit in front of the packet.
func skbPushRoom(r *runner.Runner, n uint64) bool {
	p := r.Packet()
	return p.Data-p.Start >= n
}

// helperSkbChangeHead is bpf_skb_change_head(skb, len, flags): it grows
// the packet by len zeroed bytes in front, which become the MAC header
// (the network header stays). The packet must stay within
// BPF_SKB_MAX_LEN unless it is a GSO packet; flags must be 0.
func helperSkbChangeHead(e *vm.Env, _, r2, r3, _, _ uint64) (uint64, error) {
	r, ctx := skbRun(e)
	p := r.Packet()
	n := uint32(r2)
	length := uint32(p.End - p.Data)
	grown := length + n
	if r3 != 0 || !skbGSO(ctx) && grown > runner.SkbMaxLen || grown < length {
		return neg(einval), nil
	}
	if !skbPushRoom(r, uint64(n)) {
		return neg(enomem), nil
	}
	p.Data -= uint64(n)
	p.Meta = p.Data
	clear(vm.Slice(p.Data, uint64(n)))
	r.SetSkbPacket(p)
	_, nh := r.Headers()
	r.SetHeaders(p.Data, nh)
	return 0, nil
}

// skbNetPush is bpf_skb_net_hdr_push: n zeroed bytes inserted off bytes
// into the packet (which starts at its MAC header), the headers moved
// with the bytes before them.
func skbNetPush(r *runner.Runner, off, n uint64) bool {
	if !skbPushRoom(r, n) {
		return false
	}
	p := r.Packet()
	mac, nh := r.Headers()
	s := r.Skb()
	transSame := s.Trans == nh
	p.Data -= n
	p.Meta = p.Data
	copy(vm.Slice(p.Data, off), vm.Slice(p.Data+n, off))
	clear(vm.Slice(p.Data+off, n))
	r.SetSkbPacket(p)
	r.SetHeaders(mac-n, nh-n)
	if transSame {
		s.Trans = nh - n
	}
	return true
}

// skbNetPop is bpf_skb_net_hdr_pop: n bytes removed off bytes into the
// packet, -ENOMEM (0 otherwise) if the packet has fewer than off+n.
func skbNetPop(r *runner.Runner, off, n uint64) int64 {
	p := r.Packet()
	if off+n > p.End-p.Data {
		return enomem
	}
	mac, nh := r.Headers()
	s := r.Skb()
	transSame := s.Trans == nh
	copy(vm.Slice(p.Data+n, off), vm.Slice(p.Data, off))
	p.Data += n
	p.Meta = p.Data
	r.SetSkbPacket(p)
	r.SetHeaders(mac+n, nh+n)
	if transSame {
		s.Trans = nh + n
	}
	return 0
}

// bpf_skb_adjust_room's modes and flags.
const (
	adjRoomNet = 0 // BPF_ADJ_ROOM_NET
	adjRoomMAC = 1 // BPF_ADJ_ROOM_MAC

	adjRoomFixedGSO    = 1 << 0 // BPF_F_ADJ_ROOM_FIXED_GSO
	adjRoomEncapL3IPv4 = 1 << 1 // BPF_F_ADJ_ROOM_ENCAP_L3_IPV4
	adjRoomEncapL3IPv6 = 1 << 2 // BPF_F_ADJ_ROOM_ENCAP_L3_IPV6
	adjRoomEncapL4GRE  = 1 << 3 // BPF_F_ADJ_ROOM_ENCAP_L4_GRE
	adjRoomEncapL4UDP  = 1 << 4 // BPF_F_ADJ_ROOM_ENCAP_L4_UDP
	adjRoomNoCsumReset = 1 << 5 // BPF_F_ADJ_ROOM_NO_CSUM_RESET
	adjRoomEncapL2Eth  = 1 << 6 // BPF_F_ADJ_ROOM_ENCAP_L2_ETH
	adjRoomDecapL3IPv4 = 1 << 7 // BPF_F_ADJ_ROOM_DECAP_L3_IPV4
	adjRoomDecapL3IPv6 = 1 << 8 // BPF_F_ADJ_ROOM_DECAP_L3_IPV6
	adjRoomL2Shift     = 56     // BPF_ADJ_ROOM_ENCAP_L2_SHIFT
	adjRoomL2Mask      = 0xff   // BPF_ADJ_ROOM_ENCAP_L2_MASK

	adjRoomEncapL3 = adjRoomEncapL3IPv4 | adjRoomEncapL3IPv6
	adjRoomDecapL3 = adjRoomDecapL3IPv4 | adjRoomDecapL3IPv6
	adjRoomMask    = adjRoomFixedGSO | adjRoomEncapL3 | adjRoomEncapL4GRE | adjRoomEncapL4UDP |
		adjRoomEncapL2Eth | adjRoomL2Mask<<adjRoomL2Shift | adjRoomDecapL3
)

// netBaseLen is bpf_skb_net_base_len: the size of the packet's IP header.
func netBaseLen(proto uint16) uint32 {
	switch proto {
	case ethPIP:
		return ipv4HLen
	case ethPIPv6:
		return ipv6HLen
	}
	return ^uint32(0)
}

// helperSkbAdjustRoom is bpf_skb_adjust_room(skb, len_diff, mode, flags):
// it inserts (len_diff > 0) or removes room of an IP packet after its MAC
// header (BPF_ADJ_ROOM_MAC) or its IP header (BPF_ADJ_ROOM_NET), at most
// 0xfff bytes, with the encapsulation and decapsulation flags' effects on
// the headers and skb->protocol. Unless BPF_F_ADJ_ROOM_NO_CSUM_RESET, the
// packet is CHECKSUM_NONE after it. GSO packets (gso_size given) are
// -ENOTSUPP: the test run's have no GSO type.
func helperSkbAdjustRoom(e *vm.Env, _, r2, r3, r4, _ uint64) (uint64, error) {
	r, ctx := skbRun(e)
	diff := int32(r2)
	shrink := diff < 0
	abs := uint32(diff)
	if shrink {
		abs = uint32(-diff)
	}
	flags := r4
	proto := skbProto(ctx)
	lenMin := netBaseLen(proto)
	if flags&^(adjRoomMask|adjRoomNoCsumReset) != 0 {
		return neg(einval), nil
	}
	if abs > 0xfff {
		return neg(efault), nil
	}
	if proto != ethPIP && proto != ethPIPv6 {
		return neg(enotsupp), nil
	}
	mac, nh := r.Headers()
	off := uint32(nh - mac)
	switch uint32(r3) {
	case adjRoomNet:
		off += netBaseLen(proto)
	case adjRoomMAC:
	default:
		return neg(enotsupp), nil
	}
	if flags&adjRoomDecapL3 != 0 {
		switch {
		case !shrink:
			return neg(einval), nil
		case flags&adjRoomDecapL3 == adjRoomDecapL3IPv4:
			lenMin = ipv4HLen
		case flags&adjRoomDecapL3 == adjRoomDecapL3IPv6:
			lenMin = ipv6HLen
		default:
			return neg(einval), nil
		}
	}
	p := r.Packet()
	length := uint32(p.End - p.Data)
	cur := length - uint32(nh-p.Data)
	if shrink && (abs >= cur || cur-abs < lenMin) || !shrink && length+abs > runner.SkbMaxLen && !skbGSO(ctx) {
		return neg(enotsupp), nil
	}
	var errno int64
	if shrink {
		errno = skbNetShrink(r, ctx, uint64(off), uint64(abs), flags)
	} else {
		errno = skbNetGrow(r, ctx, uint64(off), uint64(abs), flags)
	}
	if errno != 0 {
		return neg(errno), nil
	}
	if flags&adjRoomNoCsumReset == 0 {
		resetCsumUnnecessary(r.Skb())
	}
	return 0, nil
}

// skbNetGrow is bpf_skb_net_grow.
func skbNetGrow(r *runner.Runner, ctx []byte, off, n, flags uint64) int64 {
	if skbGSO(ctx) {
		// Not a TCP GSO packet (no GSO type) nor SKB_GSO_UDP_L4.
		return enotsupp
	}
	innerMAC := uint64(flags >> adjRoomL2Shift & adjRoomL2Mask)
	encap := flags&adjRoomEncapL3 != 0
	s := r.Skb()
	mac, nh := r.Headers()
	macLen := nh - mac
	if encap {
		switch {
		case flags&adjRoomEncapL3 == adjRoomEncapL3:
			return einval
		case flags&adjRoomEncapL4GRE != 0 && flags&adjRoomEncapL4UDP != 0:
			return einval
		case flags&adjRoomEncapL2Eth != 0 && innerMAC < ethHLen:
			return einval
		case s.Encap:
			return ealready
		case innerMAC > n:
			return einval
		}
	}
	if !skbNetPush(r, off, n) {
		return enomem
	}
	if !encap {
		return 0
	}
	s.Encap = true
	data := r.Packet().Data
	mac, _ = r.Headers()
	r.SetHeaders(mac, data+macLen)
	if flags&(adjRoomEncapL4GRE|adjRoomEncapL4UDP) != 0 {
		nhLen := uint64(ipv4HLen)
		if flags&adjRoomEncapL3IPv6 != 0 {
			nhLen = ipv6HLen
		}
		s.Trans = data + macLen + nhLen
	}
	switch proto := skbProto(ctx); {
	case proto == ethPIP && flags&adjRoomEncapL3IPv6 != 0:
		setSkbProto(ctx, ethPIPv6)
	case proto == ethPIPv6 && flags&adjRoomEncapL3IPv4 != 0:
		setSkbProto(ctx, ethPIP)
	}
	return 0
}

// skbNetShrink is bpf_skb_net_shrink.
func skbNetShrink(r *runner.Runner, ctx []byte, off, n, flags uint64) int64 {
	if flags&^(adjRoomFixedGSO|adjRoomDecapL3|adjRoomNoCsumReset) != 0 {
		return einval
	}
	if skbGSO(ctx) {
		return enotsupp
	}
	if errno := skbNetPop(r, off, n); errno != 0 {
		return errno
	}
	switch proto := skbProto(ctx); {
	case flags&adjRoomDecapL3 == 0:
	case proto == ethPIP && flags&adjRoomDecapL3IPv6 != 0:
		setSkbProto(ctx, ethPIPv6)
	case proto == ethPIPv6 && flags&adjRoomDecapL3IPv4 != 0:
		setSkbProto(ctx, ethPIP)
	}
	return 0
}

// helperSkbChangeProto is bpf_skb_change_proto(skb, proto, flags): from
// IPv4 to IPv6 it inserts 20 zeroed bytes after the MAC header, from IPv6
// to IPv4 it removes 20 there, and sets skb->protocol and clears the hash;
// the program rewrites the header. Other changes are -ENOTSUPP, flags
// -EINVAL.
func helperSkbChangeProto(e *vm.Env, _, r2, r3, _, _ uint64) (uint64, error) {
	if r3 != 0 {
		return neg(einval), nil
	}
	r, ctx := skbRun(e)
	to := bits.ReverseBytes16(uint16(r2)) // a __be16
	mac, nh := r.Headers()
	off := nh - mac
	const diff = ipv6HLen - ipv4HLen
	switch from := skbProto(ctx); {
	case from == ethPIP && to == ethPIPv6:
		if !skbNetPush(r, off, diff) {
			return neg(enomem), nil
		}
	case from == ethPIPv6 && to == ethPIP:
		if errno := skbNetPop(r, off, diff); errno != 0 {
			return neg(errno), nil
		}
	default:
		return neg(enotsupp), nil
	}
	setSkbProto(ctx, to)
	clearHash(r)
	return 0, nil
}

// helperSkbChangeType is bpf_skb_change_type(skb, type): the packet type
// (PACKET_HOST to PACKET_OTHERHOST), -EINVAL beyond.
func helperSkbChangeType(e *vm.Env, _, r2, _, _, _ uint64) (uint64, error) {
	_, ctx := skbRun(e)
	if ctx[runner.SkbPktType] > packetOtherHost || uint32(r2) > packetOtherHost {
		return neg(einval), nil
	}
	ctx[runner.SkbPktType] = byte(r2)
	return 0, nil
}

// ethTypeVLAN is eth_type_vlan.
func ethTypeVLAN(p uint16) bool { return p == ethP8021Q || p == ethP8021AD }

// vlanTag returns the packet's VLAN tag outside the packet (the
// hardware-accelerated tag): skb->vlan_proto in host order and vlan_tci.
func vlanTag(ctx []byte) (proto, tci uint16, present bool) {
	proto = binary.BigEndian.Uint16(ctx[runner.SkbVlanProto:])
	tci = binary.LittleEndian.Uint16(ctx[runner.SkbVlanTCI:])
	return proto, tci, ctx[runner.SkbVlanPresent] != 0
}

// setVlanTag is __vlan_hwaccel_put_tag, or __vlan_hwaccel_clear_tag when
// !present.
func setVlanTag(ctx []byte, proto, tci uint16, present bool) {
	if !present {
		proto, tci = 0, 0
	}
	binary.BigEndian.PutUint16(ctx[runner.SkbVlanProto:], proto)
	binary.LittleEndian.PutUint16(ctx[runner.SkbVlanTCI:], tci)
	ctx[runner.SkbVlanPresent] = 0
	if proto != 0 || tci != 0 {
		ctx[runner.SkbVlanPresent] = 1
	}
}

// helperSkbVlanPush is bpf_skb_vlan_push(skb, proto, tci): it makes
// proto (802.1Q unless 802.1ad) and tci the packet's tag; a tag it
// already had goes into the packet after the MAC addresses.
func helperSkbVlanPush(e *vm.Env, _, r2, r3, _, _ uint64) (uint64, error) {
	r, ctx := skbRun(e)
	proto := bits.ReverseBytes16(uint16(r2)) // a __be16
	if !ethTypeVLAN(proto) {
		proto = ethP8021Q
	}
	if oldProto, oldTCI, ok := vlanTag(ctx); ok {
		p := r.Packet()
		mac, nh := r.Headers()
		if p.Data != mac {
			return neg(einval), nil
		}
		if !skbPushRoom(r, vlanHLen) {
			return neg(enomem), nil
		}
		p.Data -= vlanHLen
		p.Meta = p.Data
		copy(vm.Slice(p.Data, 2*ethALen), vm.Slice(p.Data+vlanHLen, 2*ethALen))
		tag := vm.Slice(p.Data+2*ethALen, vlanHLen)
		binary.BigEndian.PutUint16(tag, oldProto)
		binary.BigEndian.PutUint16(tag[2:], oldTCI)
		r.SetSkbPacket(p)
		r.SetHeaders(mac-vlanHLen, nh-vlanHLen)
		setSkbProto(ctx, oldProto)
	}
	setVlanTag(ctx, proto, uint16(r3), true)
	return 0, nil
}

// skbVlanPop is __skb_vlan_pop: it removes the VLAN header after the MAC
// addresses and returns its TCI, or an errno.
func skbVlanPop(r *runner.Runner, ctx []byte) (uint16, int64) {
	p := r.Packet()
	mac, nh := r.Headers()
	if p.Data != mac {
		return 0, einval
	}
	if p.End-p.Data < ethHLen+vlanHLen {
		return 0, enomem
	}
	hdr := vm.Slice(p.Data, ethHLen+vlanHLen)
	tci := binary.BigEndian.Uint16(hdr[ethHLen:])
	// vlan_set_encap_proto: the encapsulated protocol, or 802.3 (raw
	// IPX, the payload starting 0xffff) or 802.2 for a length.
	proto := binary.BigEndian.Uint16(hdr[ethHLen+2:])
	if proto < ethP8023Min {
		proto = ethP8022
		if p.End-p.Data >= ethHLen+vlanHLen+2 && binary.BigEndian.Uint16(vm.Slice(p.Data+ethHLen+vlanHLen, 2)) == 0xffff {
			proto = ethP8023
		}
	}
	setSkbProto(ctx, proto)
	copy(vm.Slice(p.Data+vlanHLen, 2*ethALen), vm.Slice(p.Data, 2*ethALen))
	p.Data += vlanHLen
	p.Meta = p.Data
	r.SetSkbPacket(p)
	mac += vlanHLen
	if nh < p.Data+ethHLen {
		nh = p.Data + ethHLen
	}
	r.SetHeaders(mac, nh)
	return tci, 0
}

// helperSkbVlanPop is bpf_skb_vlan_pop(skb): it removes the packet's tag,
// or, without one, the VLAN header in the packet, and makes the next VLAN
// header in the packet, if any, its tag.
func helperSkbVlanPop(e *vm.Env, _, _, _, _, _ uint64) (uint64, error) {
	r, ctx := skbRun(e)
	if _, _, ok := vlanTag(ctx); ok {
		setVlanTag(ctx, 0, 0, false)
	} else {
		if !ethTypeVLAN(skbProto(ctx)) {
			return 0, nil
		}
		if _, errno := skbVlanPop(r, ctx); errno != 0 {
			return neg(errno), nil
		}
	}
	proto := skbProto(ctx)
	if !ethTypeVLAN(proto) {
		return 0, nil
	}
	tci, errno := skbVlanPop(r, ctx)
	if errno != 0 {
		return neg(errno), nil
	}
	setVlanTag(ctx, proto, tci, true)
	return 0, nil
}

// helperGetHashRecalc is bpf_get_hash_recalc(skb): the packet's hash,
// computed from its flow (flowHash) when it has none.
func helperGetHashRecalc(e *vm.Env, _, _, _, _, _ uint64) (uint64, error) {
	r, ctx := skbRun(e)
	s := r.Skb()
	if !s.SWHash && !s.L4Hash {
		h, l4 := flowHash(r, ctx)
		binary.LittleEndian.PutUint32(ctx[runner.SkbHash:], h)
		s.SWHash, s.L4Hash = true, l4
	}
	return uint64(binary.LittleEndian.Uint32(ctx[runner.SkbHash:])), nil
}

// helperSetHash is bpf_set_hash(skb, hash): hash becomes the packet's, as
// a software L4 hash that bpf_get_hash_recalc returns.
func helperSetHash(e *vm.Env, _, r2, _, _, _ uint64) (uint64, error) {
	r, ctx := skbRun(e)
	binary.LittleEndian.PutUint32(ctx[runner.SkbHash:], uint32(r2))
	s := r.Skb()
	s.SWHash, s.L4Hash = true, true
	return 0, nil
}

// helperSetHashInvalid is bpf_set_hash_invalid(skb): the packet has no
// hash (0) until bpf_get_hash_recalc computes one.
func helperSetHashInvalid(e *vm.Env, _, _, _, _, _ uint64) (uint64, error) {
	clearHash(runner.Of(e))
	return 0, nil
}

// IP protocols whose ports the flow hash covers.
const (
	ipProtoTCP  = 6
	ipProtoUDP  = 17
	ipProtoSCTP = 132
	ipProtoDCCP = 33
	ipProtoUDPL = 136
)

// flowHash is bpfvm's skb_get_hash: a hash of the packet's flow (its
// protocol, IP addresses and ports), the same for both directions of the
// flow and never 0, and whether it covers ports (an L4 hash). The
// kernel's hash is keyed with a random seed per boot, so that its values
// are not reproducible; bpfvm's is a fixed function of the flow.
func flowHash(r *runner.Runner, ctx []byte) (uint32, bool) {
	p := r.Packet()
	_, nh := r.Headers()
	proto := skbProto(ctx)
	var a, b []byte
	var ports [2]uint16
	var ipProto byte
	l4 := false
	hdr := func(n uint64) []byte {
		if nh < p.Data || nh+n > p.End {
			return nil
		}
		return vm.Slice(nh, n)
	}
	var l4off uint64
	switch proto {
	case ethPIP:
		if h := hdr(ipv4HLen); h != nil && h[0]>>4 == 4 {
			a, b, ipProto = h[12:16], h[16:20], h[9]
			// Fragments past the first have no ports; the kernel
			// hashes first fragments without them too.
			if binary.BigEndian.Uint16(h[6:])&0x3fff == 0 {
				l4off = uint64(h[0]&0xf) * 4
			}
		}
	case ethPIPv6:
		if h := hdr(ipv6HLen); h != nil && h[0]>>4 == 6 {
			a, b, ipProto = h[8:24], h[24:40], h[6]
			l4off = ipv6HLen
		}
	}
	switch ipProto {
	case ipProtoTCP, ipProtoUDP, ipProtoSCTP, ipProtoDCCP, ipProtoUDPL:
		if h := hdr(l4off + 4); l4off != 0 && h != nil {
			ports[0] = binary.BigEndian.Uint16(h[l4off:])
			ports[1] = binary.BigEndian.Uint16(h[l4off+2:])
			l4 = ports != [2]uint16{}
		}
	}
	// Both directions hash alike: the smaller address (and port) first.
	if string(a) > string(b) || string(a) == string(b) && ports[0] > ports[1] {
		a, b = b, a
		ports[0], ports[1] = ports[1], ports[0]
	}
	h := uint32(2166136261) // FNV-1a
	mix := func(bs ...byte) {
		for _, c := range bs {
			h = (h ^ uint32(c)) * 16777619
		}
	}
	mix(byte(proto>>8), byte(proto), ipProto)
	mix(a...)
	mix(b...)
	mix(byte(ports[0]>>8), byte(ports[0]), byte(ports[1]>>8), byte(ports[1]))
	if h == 0 {
		h = 1
	}
	return h, l4
}
