package progtype

import "encoding/binary"

// SKReuseport is BPF_PROG_TYPE_SK_REUSEPORT with struct sk_reuseport_md
// (sk_reuseport_is_valid_access): read-only; data and data_end 64-bit
// packet pointers, hash read whole, the others narrow (eth_protocol, a
// u16 behind, in halves). sk, a struct bpf_sock pointer, is not modelled:
// never readable here; migrating_sk, a nullable one, is NULL in bpfvm's
// runs. The kernel has no test run for
// it; bpfvm's runs give the program the input as the packet (from its
// transport header, as the kernel's lookups see it), its length as len,
// and take the protocols, bind_inany and hash from the context input; the
// run's Net.Socket is the member of the reuseport group the packet
// arrived at, whose group bpf_sk_select_reuseport selects in.
var SKReuseport = &Type{
	Name:        "sk_reuseport",
	ContextSize: 56,
	Fields: []Field{
		{Name: "data", Offset: 0, Size: 8, Read: true, Kind: PacketData},
		{Name: "data_end", Offset: 8, Size: 8, Read: true, Kind: PacketEnd},
		{Name: "len", Offset: 16, Size: 4, Read: true, Narrow: true},
		// skb->protocol and sk_protocol are u16s, bind_inany a bool.
		{Name: "eth_protocol", Offset: 20, Size: 4, Read: true, Narrow: true, NarrowMin: 2, Backing: 2, Input: true},
		{Name: "ip_protocol", Offset: 24, Size: 4, Read: true, Narrow: true, Backing: 2, Input: true},
		{Name: "bind_inany", Offset: 28, Size: 4, Read: true, Narrow: true, Backing: 1, Input: true},
		{Name: "hash", Offset: 32, Size: 4, Read: true, Input: true},
		{Name: "sk", Offset: 40, Size: 8},
		{Name: "migrating_sk", Offset: 48, Size: 8, Read: true, Kind: SockCommonOrNull},
	},
	ContextNames:   []string{"sk_reuseport_md", "sk_reuseport_kern"},
	PacketReadOnly: true,
	Setup: func(ctx, frame, pkt []byte, given bool) error {
		binary.LittleEndian.PutUint32(ctx[16:], uint32(len(pkt)))
		return nil
	},
	Helpers: Helpers(names(CapNone, `sk_select_reuseport skb_load_bytes
		skb_load_bytes_relative get_socket_cookie@ptr ktime_get_coarse_ns`), baseHelpers),
}
