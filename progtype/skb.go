package progtype

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// skbLayout is struct __sk_buff. The flags are those of the kernel's
// bpf_skb_is_valid_access, common to every program type that sees it;
// which fields each type may read and write is in its table below. Input
// marks the fields BPF_PROG_TEST_RUN takes from the context input
// (convert___skb_to_skb), Output those it gives back
// (convert_skb_to___skb).
var skbLayout = []Field{
	{Name: "len", Offset: 0, Size: 4, Narrow: true},
	{Name: "pkt_type", Offset: 4, Size: 4, Narrow: true, Backing: 1},
	{Name: "mark", Offset: 8, Size: 4, Narrow: true, Input: true, Output: true},
	{Name: "queue_mapping", Offset: 12, Size: 4, Narrow: true, Backing: 2, StoreLimit: noQueueMapping},
	{Name: "protocol", Offset: 16, Size: 4, Narrow: true, Backing: 2},
	{Name: "vlan_present", Offset: 20, Size: 4, Narrow: true, Backing: 1},
	{Name: "vlan_tci", Offset: 24, Size: 4, Narrow: true, Backing: 2},
	{Name: "vlan_proto", Offset: 28, Size: 4, Narrow: true, Backing: 2},
	{Name: "priority", Offset: 32, Size: 4, Narrow: true, Input: true, Output: true},
	{Name: "ingress_ifindex", Offset: 36, Size: 4, Narrow: true, Input: true, Output: true},
	{Name: "ifindex", Offset: 40, Size: 4, Narrow: true, Input: true, Output: true},
	{Name: "tc_index", Offset: 44, Size: 4, Narrow: true, Backing: 2},
	{Name: "cb", Offset: 48, Size: 20, Memory: true, Input: true, Output: true},
	{Name: "hash", Offset: 68, Size: 4, Narrow: true},
	{Name: "tc_classid", Offset: 72, Size: 4, Narrow: true, Backing: 2},
	{Name: "data", Offset: 76, Size: 4, Kind: PacketData},
	{Name: "data_end", Offset: 80, Size: 4, Kind: PacketEnd},
	{Name: "napi_id", Offset: 84, Size: 4, Narrow: true},
	{Name: "family", Offset: 88, Size: 4, Narrow: true, Backing: 2},
	{Name: "remote_ip4", Offset: 92, Size: 4},
	{Name: "local_ip4", Offset: 96, Size: 4},
	{Name: "remote_ip6[0]", Offset: 100, Size: 4},
	{Name: "remote_ip6[1]", Offset: 104, Size: 4},
	{Name: "remote_ip6[2]", Offset: 108, Size: 4},
	{Name: "remote_ip6[3]", Offset: 112, Size: 4},
	{Name: "local_ip6[0]", Offset: 116, Size: 4},
	{Name: "local_ip6[1]", Offset: 120, Size: 4},
	{Name: "local_ip6[2]", Offset: 124, Size: 4},
	{Name: "local_ip6[3]", Offset: 128, Size: 4},
	{Name: "remote_port", Offset: 132, Size: 4, Narrow: true},
	{Name: "local_port", Offset: 136, Size: 4, Narrow: true, Backing: 2},
	{Name: "data_meta", Offset: 140, Size: 4, Kind: PacketMeta},
	{Name: "flow_keys", Offset: 144, Size: 8},
	{Name: "tstamp", Offset: 152, Size: 8, Input: true, Output: true},
	{Name: "wire_len", Offset: 160, Size: 4, Narrow: true, Input: true, Output: true},
	{Name: "gso_segs", Offset: 164, Size: 4, Narrow: true, Backing: 2, Input: true, Output: true},
	// sk is the skb's socket, if any (PTR_TO_SOCK_COMMON_OR_NULL).
	{Name: "sk", Offset: 168, Size: 8, Kind: SockCommonOrNull},
	{Name: "gso_size", Offset: 176, Size: 4, Narrow: true, Backing: 2, Input: true},
	{Name: "tstamp_type", Offset: 180, Size: 1},
	{Name: "hwtstamp", Offset: 184, Size: 8, Input: true, Output: true},
}

// skbFields returns struct __sk_buff as a program type sees it: every field
// readable but the hidden ones, and the writable ones writable (names
// separated by spaces; "ip" stands for the socket's addresses and ports,
// family to local_port, which only socket-bound types read).
func skbFields(hidden, writable string) []Field {
	set := func(names string) map[string]bool {
		m := map[string]bool{}
		for _, n := range strings.Fields(names) {
			if n == "ip" {
				for _, f := range skbLayout {
					if f.Offset >= skbFamily && f.Offset < skbDataMeta {
						m[f.Name] = true
					}
				}
				continue
			}
			m[n] = true
		}
		return m
	}
	hide, write := set(hidden+" flow_keys tstamp_type"), set(writable)
	out := append([]Field(nil), skbLayout...)
	for i := range out {
		f := &out[i]
		f.Read, f.Write = !hide[f.Name], write[f.Name]
	}
	return out
}

// noQueueMapping is the kernel's NO_QUEUE_MAPPING: a queue_mapping store of
// it or more does nothing.
const noQueueMapping = 0xffff

// skbContextSize is sizeof(struct __sk_buff).
const skbContextSize = 192

// struct __sk_buff offsets.
const (
	skbLen       = 0
	skbPktType   = 4
	skbProtocol  = 16
	skbIfindex   = 40
	skbFamily    = 88
	skbRemoteIP4 = 92
	skbLocalIP4  = 96
	skbRemoteIP6 = 100
	skbLocalIP6  = 116
	skbDataMeta  = 140
	skbWireLen   = 160
	skbGSOSegs   = 164
)

// Limits of the kernel's test run on the context input.
const (
	gsoMaxSegs       = 65535
	gsoLegacyMaxSize = 65536
)

// skbSetup fills what the kernel's test run derives from the input frame
// and the context input (bpf_prog_test_run_skb): the length of the packet
// the program sees, pkt_type and protocol as eth_type_trans gives them on
// the loopback device, which is also the device when the input names none,
// and wire_len, the input's if any. Like the kernel, it refuses an IP frame
// too short for its IP header.
func skbSetup(ctx, frame, pkt []byte, given bool) error {
	le := binary.LittleEndian
	n := uint32(len(pkt))
	proto := binary.BigEndian.Uint16(frame[12:])
	switch {
	case proto == ethPIP && len(frame) < ethHeader+ipv4Header:
		return fmt.Errorf("IPv4 frame of %d bytes: no room for the IP header", len(frame))
	case proto == ethPIPv6 && len(frame) < ethHeader+ipv6Header:
		return fmt.Errorf("IPv6 frame of %d bytes: no room for the IP header", len(frame))
	}
	switch wire := le.Uint32(ctx[skbWireLen:]); {
	case !given:
		// Without a context input the kernel never sets wire_len.
	case wire == 0:
		le.PutUint32(ctx[skbWireLen:], n)
	case wire < n || wire > gsoLegacyMaxSize:
		return fmt.Errorf("__sk_buff.wire_len %d: outside [%d, %d]", wire, n, gsoLegacyMaxSize)
	}
	if segs := le.Uint32(ctx[skbGSOSegs:]); segs > gsoMaxSegs {
		return fmt.Errorf("__sk_buff.gso_segs %d: more than %d", segs, gsoMaxSegs)
	}
	if le.Uint32(ctx[skbIfindex:]) <= loopbackIndex {
		le.PutUint32(ctx[skbIfindex:], loopbackIndex)
	}
	le.PutUint32(ctx[skbLen:], n)
	le.PutUint32(ctx[skbPktType:], pktType(frame[:6]))
	if proto < ethP8023Min {
		// An 802.3 length: raw IPX if the payload starts 0xffff, else 802.2.
		proto = ethP8022
		if len(frame) >= 16 && frame[14] == 0xff && frame[15] == 0xff {
			proto = ethP8023
		}
	}
	// skb->protocol is in network byte order.
	binary.BigEndian.PutUint16(ctx[skbProtocol:], proto)
	return nil
}

// Ethernet protocol numbers of eth_type_trans, and header sizes.
const (
	ethPIP      = 0x0800
	ethPIPv6    = 0x86dd
	ethHeader   = 14
	ipv4Header  = 20
	ipv6Header  = 40
	ethP8023Min = 0x0600
	ethP8023    = 0x0001
	ethP8022    = 0x0004
)

// Packet types (PACKET_HOST ...) of a destination address as the loopback
// device sees it: its address and its broadcast address are all zeroes, so
// that the broadcast address is only multicast.
const (
	packetHost      = 0
	packetMulticast = 2
	packetOtherHost = 3
)

func pktType(dst []byte) uint32 {
	switch {
	case string(dst) == "\x00\x00\x00\x00\x00\x00":
		return packetHost
	case dst[0]&1 != 0:
		return packetMulticast
	}
	return packetOtherHost
}

// skbNames are the context's BTF names for programs on a struct __sk_buff.
var skbNames = []string{"__sk_buff", "sk_buff"}
