package progtype

import (
	"encoding/binary"
	"fmt"
)

// SKLookup is BPF_PROG_TYPE_SK_LOOKUP with struct bpf_sk_lookup
// (sk_lookup_is_valid_access): read-only; the u32 fields read narrow,
// remote_port a __be16 read whole as a u32 or narrow, with the zero
// padding after it. The sk field (cookie in test runs) is a nullable struct
// bpf_sock pointer: the socket bpf_sk_assign selected, NULL before; the
// test run's context output holds its cookie (0 for none), as the
// kernel's. Programs return SK_DROP (0)
// or SK_PASS (1).
//
// The test run is the kernel's (bpf_prog_test_run_sk_lookup): no packet,
// a context input of the family (AF_INET or AF_INET6), protocol, addresses
// and ports, nothing past local_port; the program sees only the addresses
// of the family.
var SKLookup = &Type{
	Name:        "sk_lookup",
	ContextSize: 72,
	Fields: append(append(append([]Field{
		{Name: "sk", Offset: 0, Size: 8, Read: true, Kind: SocketOrNull, Output: true},
		{Name: "family", Offset: 8, Size: 4, Read: true, Narrow: true, Backing: 2, Input: true},
		{Name: "protocol", Offset: 12, Size: 4, Read: true, Narrow: true, Backing: 2, Input: true},
	}, u32Fields(16, "remote_ip4 remote_ip6[4]", Field{Read: true, Narrow: true, Input: true})...),
		Field{Name: "remote_port", Offset: 36, Size: 4, Read: true, Narrow: true, Input: true}),
		append(u32Fields(40, "local_ip4 local_ip6[4]", Field{Read: true, Narrow: true, Input: true}),
			Field{Name: "local_port", Offset: 60, Size: 4, Read: true, Narrow: true, Backing: 2, Input: true},
			Field{Name: "ingress_ifindex", Offset: 64, Size: 4, Read: true, Narrow: true})...),
	ContextNames: []string{"bpf_sk_lookup", "bpf_sk_lookup_kern"},
	Setup:        skLookupSetup,
	Helpers:      Helpers(names(CapNone, "perf_event_output sk_assign@lookup sk_release"), sockBaseHelpers),
	CheckReturn:  true,
	ReturnMax:    1,
}

// struct bpf_sk_lookup offsets.
const (
	skLookupFamily     = 8
	skLookupRemoteIP4  = 16
	skLookupRemoteIP6  = 20
	skLookupRemotePort = 36
	skLookupLocalIP4   = 40
	skLookupLocalIP6   = 44
	skLookupLocalPort  = 60
)

// skLookupSetup checks the context input as the kernel's test run does and
// keeps what its lookup context holds: the family's addresses (the others
// read 0), remote_port's two bytes.
func skLookupSetup(ctx, frame, pkt []byte, given bool) error {
	le := binary.LittleEndian
	switch {
	case len(frame) != 0:
		return fmt.Errorf("sk_lookup test runs take no packet")
	case !given:
		return fmt.Errorf("sk_lookup test runs need a context input")
	case le.Uint32(ctx[skLookupLocalPort:]) > 0xffff:
		return fmt.Errorf("bpf_sk_lookup.local_port %d: more than 65535", le.Uint32(ctx[skLookupLocalPort:]))
	}
	switch le.Uint16(ctx[skLookupFamily:]) {
	case afInet:
		clear(ctx[skLookupRemoteIP6:skLookupRemotePort])
		clear(ctx[skLookupLocalIP6:skLookupLocalPort])
	case afInet6:
		clear(ctx[skLookupRemoteIP4:skLookupRemoteIP6])
		clear(ctx[skLookupLocalIP4:skLookupLocalIP6])
	default:
		return fmt.Errorf("bpf_sk_lookup.family %d: not AF_INET or AF_INET6", le.Uint16(ctx[skLookupFamily:]))
	}
	// The padding after the port reads 0.
	clear(ctx[skLookupRemotePort+2 : skLookupLocalIP4])
	return nil
}
