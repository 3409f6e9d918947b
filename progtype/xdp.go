package progtype

import (
	"encoding/binary"
	"fmt"
)

// XDP is BPF_PROG_TYPE_XDP with struct xdp_md: every field is a whole,
// aligned u32 load (the kernel's xdp_is_valid_access); none is writable
// outside device-bound programs.
var XDP = &Type{
	Name:         "xdp",
	ContextSize:  24,
	ContextNames: []string{"xdp_md", "xdp_buff"},
	Fields: []Field{
		{Name: "data", Offset: 0, Size: 4, Read: true, Kind: PacketData, Input: true, Output: true},
		{Name: "data_end", Offset: 4, Size: 4, Read: true, Kind: PacketEnd, Input: true, Output: true},
		{Name: "data_meta", Offset: 8, Size: 4, Read: true, Kind: PacketMeta, Input: true},
		{Name: "ingress_ifindex", Offset: 12, Size: 4, Read: true, Input: true},
		{Name: "rx_queue_index", Offset: 16, Size: 4, Read: true, Input: true},
		// Only programs attached to devmaps read egress_ifindex.
		{Name: "egress_ifindex", Offset: 20, Size: 4, Input: true},
	},
	MinData: 14,
	Setup:   xdpSetup,
	Helpers: xdpHelpers,
	// The input's first xdp_md.data bytes are metadata.
	MetaInput: func(ctx []byte) uint32 { return binary.LittleEndian.Uint32(ctx[xdpData:]) },
}

// xdpHelpers is xdp_func_proto: its own cases (CONFIG_INET and
// CONFIG_SYN_COOKIES ones included), then bpf_sk_base_func_proto. Its
// perf_event_output appends packet bytes (bpf_xdp_event_output), its
// redirect is bpf_xdp_redirect.
var xdpHelpers = Helpers(names(CapNone, `perf_event_output get_smp_processor_id
	csum_diff xdp_adjust_head xdp_adjust_meta redirect redirect_map
	xdp_adjust_tail xdp_get_buff_len xdp_load_bytes xdp_store_bytes
	fib_lookup check_mtu sk_lookup_udp sk_lookup_tcp sk_release skc_lookup_tcp
	tcp_check_syncookie tcp_gen_syncookie
	tcp_raw_gen_syncookie_ipv4 tcp_raw_gen_syncookie_ipv6
	tcp_raw_check_syncookie_ipv4 tcp_raw_check_syncookie_ipv6`), sockBaseHelpers)

// struct xdp_md offsets.
const (
	xdpData       = 0
	xdpDataEnd    = 4
	xdpDataMeta   = 8
	xdpIfindex    = 12
	xdpRxQueue    = 16
	xdpEgressIf   = 20
	loopbackIndex = 1
	// xdpMetaMax is the most metadata a test run takes: the headroom
	// (XDP_PACKET_HEADROOM) less the struct xdp_frame kept in it.
	xdpMetaMax = 256 - 40
)

// xdpSetup checks the context input as the kernel's test run does
// (bpf_prog_test_run_xdp, xdp_convert_md_to_buff): data_end at most the
// input's length (less makes fragments, which bpfvm does not model),
// metadata (data) 4-byte aligned, within the headroom and followed by an
// Ethernet header, no egress device, no receive queue without a device, and fills in what the kernel's run on the loopback device's
// queue 0 reads when the input names no device. bpfvm models no host
// devices, so a named device is taken as given.
func xdpSetup(ctx, frame, pkt []byte, given bool) error {
	le := binary.LittleEndian
	switch {
	case !given:
	case le.Uint32(ctx[xdpDataEnd:]) > uint32(len(frame)):
		return fmt.Errorf("xdp_md.data_end %d: the input has %d bytes", le.Uint32(ctx[xdpDataEnd:]), len(frame))
	case le.Uint32(ctx[xdpDataEnd:]) < uint32(len(frame)):
		// The kernel makes the rest of the input fragments.
		return fmt.Errorf("xdp_md.data_end %d of %d bytes: fragments: %w", le.Uint32(ctx[xdpDataEnd:]), len(frame), ErrNotSupported)
	case le.Uint32(ctx[xdpData:])%4 != 0 || le.Uint32(ctx[xdpData:]) > xdpMetaMax:
		return fmt.Errorf("xdp_md.data %d: metadata of a multiple of 4 bytes up to %d", le.Uint32(ctx[xdpData:]), xdpMetaMax)
	case uint64(len(frame)) < uint64(le.Uint32(ctx[xdpData:]))+ethHeader:
		return fmt.Errorf("xdp_md.data %d: less than an Ethernet header after %d bytes of metadata", le.Uint32(ctx[xdpData:]), len(frame))
	}
	switch {
	case le.Uint32(ctx[xdpEgressIf:]) != 0:
		return fmt.Errorf("xdp_md.egress_ifindex is not an input")
	case le.Uint32(ctx[xdpDataMeta:]) != 0:
		return fmt.Errorf("xdp_md.data_meta must be 0")
	case le.Uint32(ctx[xdpIfindex:]) == 0 && le.Uint32(ctx[xdpRxQueue:]) != 0:
		return fmt.Errorf("xdp_md.rx_queue_index without ingress_ifindex")
	case le.Uint32(ctx[xdpIfindex:]) == loopbackIndex && le.Uint32(ctx[xdpRxQueue:]) != 0:
		return fmt.Errorf("xdp_md.rx_queue_index %d: the loopback device has one queue", le.Uint32(ctx[xdpRxQueue:]))
	}
	if le.Uint32(ctx[xdpIfindex:]) == 0 {
		le.PutUint32(ctx[xdpIfindex:], loopbackIndex)
	}
	return nil
}
