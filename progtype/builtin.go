package progtype

import "encoding/binary"

// Raw is the type of programs without a context structure: R1 points at the
// input and R2 holds its length, as in the ISA conformance suite.
var Raw = &Type{Name: "raw"}

func u32(name string, off uint32, write bool) Field {
	return Field{Name: name, Offset: off, Size: 4, Read: true, Write: write, Narrow: true}
}

// whole is a u32 field that may only be loaded whole, as xdp_md's.
func whole(name string, off uint32) Field {
	return Field{Name: name, Offset: off, Size: 4, Read: true}
}

func ptr(name string, off uint32, kind Kind) Field {
	return Field{Name: name, Offset: off, Size: 4, Read: true, Kind: kind}
}

// XDP is BPF_PROG_TYPE_XDP with struct xdp_md.
var XDP = &Type{
	Name:         "xdp",
	ContextSize:  24,
	ContextNames: []string{"xdp_md", "xdp_buff"},
	Fields: []Field{
		ptr("data", 0, PacketData),
		ptr("data_end", 4, PacketEnd),
		ptr("data_meta", 8, PacketMeta),
		whole("ingress_ifindex", 12),
		whole("rx_queue_index", 16),
		// egress_ifindex (20) is only for programs attached to devmaps.
	},
	MinData: 14,
}

// struct __sk_buff offsets.
const (
	skbLen      = 0
	skbProtocol = 16
	skbWireLen  = 160
	skbGSOSegs  = 164
)

func skbFields(tc bool) []Field {
	f := []Field{
		u32("len", 0, false),
		u32("pkt_type", 4, false),
		u32("mark", 8, tc),
		u32("queue_mapping", 12, tc),
		u32("protocol", 16, false),
		u32("vlan_present", 20, false),
		u32("vlan_tci", 24, false),
		u32("vlan_proto", 28, false),
		u32("priority", 32, tc),
		u32("ingress_ifindex", 36, false),
		u32("ifindex", 40, false),
		u32("tc_index", 44, tc),
		{Name: "cb", Offset: 48, Size: 20, Read: true, Write: true},
		u32("hash", 68, false),
		u32("napi_id", 84, false),
		// family .. local_port (88-139) describe a socket, which neither
		// socket filters nor tc programs may read.
		{Name: "tstamp", Offset: 152, Size: 8, Read: true, Write: tc},
		u32("wire_len", 160, false),
		u32("gso_segs", 164, false),
		u32("gso_size", 176, false),
		{Name: "hwtstamp", Offset: 184, Size: 8, Read: true},
	}
	if tc {
		// Socket filters read the packet with LD_ABS and helpers only.
		f = append(f, u32("tc_classid", 72, true), ptr("data", 76, PacketData), ptr("data_end", 80, PacketEnd), ptr("data_meta", 140, PacketMeta))
	}
	return f
}

// skbSetup fills what the kernel's test run derives from the input frame:
// lengths of the packet the program sees, and the Ethernet type, in network
// byte order, as skb->protocol.
func skbSetup(ctx, frame, pkt []byte) {
	binary.LittleEndian.PutUint32(ctx[skbLen:], uint32(len(pkt)))
	binary.LittleEndian.PutUint32(ctx[skbWireLen:], uint32(len(pkt)))
	binary.LittleEndian.PutUint32(ctx[skbGSOSegs:], 1)
	ctx[skbProtocol], ctx[skbProtocol+1] = frame[12], frame[13]
}

// SocketFilter is BPF_PROG_TYPE_SOCKET_FILTER with struct __sk_buff; its
// packet starts at the network header.
var SocketFilter = &Type{
	Name:          "socket_filter",
	ContextSize:   192,
	Fields:        skbFields(false),
	ContextNames:  skbNames,
	MinData:       14,
	NetworkHeader: true,
	Setup:         skbSetup,
}

// skbNames are the context's BTF names for programs on a struct __sk_buff.
var skbNames = []string{"__sk_buff", "sk_buff"}

// SchedCLS is BPF_PROG_TYPE_SCHED_CLS (tc classifiers) with struct __sk_buff.
var SchedCLS = &Type{
	Name:         "sched_cls",
	ContextSize:  192,
	Fields:       skbFields(true),
	ContextNames: skbNames,
	MinData:      14,
	Setup:        skbSetup,
}

// SchedACT is BPF_PROG_TYPE_SCHED_ACT (tc actions) with struct __sk_buff.
var SchedACT = &Type{
	Name:         "sched_act",
	ContextSize:  192,
	Fields:       skbFields(true),
	ContextNames: skbNames,
	MinData:      14,
	Setup:        skbSetup,
}
