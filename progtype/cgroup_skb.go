package progtype

import (
	"encoding/binary"

	"github.com/cilium/ebpf"
)

// cgroupSKBFields is struct __sk_buff of cgroup_skb programs
// (cg_skb_is_valid_access): the socket's addresses and ports readable, no
// tc fields, data and data_end for CAP_BPF loads only, tstamp writable by
// CAP_SYS_ADMIN ones.
var cgroupSKBFields = func() []Field {
	f := skbFields("tc_classid data_meta wire_len", "mark priority cb tstamp")
	for i := range f {
		switch f[i].Name {
		case "data", "data_end":
			f[i].ReadCap = CapBPF
		case "tstamp":
			f[i].WriteCap = CapPerfmon
		}
	}
	return f
}()

// cgroupSKB returns BPF_PROG_TYPE_CGROUP_SKB for attach type a: egress
// programs may also return 2 and 3 (drop or pass, and congestion
// notification), ingress ones 0 or 1 (check_return_code). The test run is
// the skb one (bpf_prog_test_run_skb), the packet seen from its network
// header, on a socket of the packet's family and addresses.
func cgroupSKB(a ebpf.AttachType) *Type {
	t := &Type{
		Name:          "cgroup_skb",
		ContextSize:   192,
		Fields:        cgroupSKBFields,
		ContextNames:  skbNames,
		MinData:       ethHeader,
		NetworkHeader: true,
		Setup:         socketSetup,
		Socket:        skbSocket,
		// cg_skb programs read the packet, never write it.
		PacketReadOnly: true,
		Helpers:        Helpers(cgroupCommon(a), cgroupSKBHelpers, socketFilterHelpers, sockBaseHelpers),
		Attach:         a,
		CheckReturn:    true,
		ReturnMax:      1,
	}
	if a == ebpf.AttachCGroupInetEgress {
		t.ReturnMax = 3
	}
	return t
}

// CGroupSKBIngress and CGroupSKBEgress are BPF_PROG_TYPE_CGROUP_SKB for
// their attach types.
var (
	CGroupSKBIngress = cgroupSKB(ebpf.AttachCGroupInetIngress)
	CGroupSKBEgress  = cgroupSKB(ebpf.AttachCGroupInetEgress)
)

// cgroupSKBHelpers is cg_skb_func_proto's own cases (CONFIG_INET and
// CONFIG_SOCK_CGROUP_DATA ones included) before sk_filter_func_proto.
var cgroupSKBHelpers = names(CapNone, `get_local_storage sk_fullsock
	sk_storage_get sk_storage_delete perf_event_output
	skb_cgroup_id skb_ancestor_cgroup_id sk_cgroup_id sk_ancestor_cgroup_id
	sk_lookup_tcp sk_lookup_udp sk_release skc_lookup_tcp tcp_sock
	get_listener_sock skb_ecn_set_ce`)

// socketSetup is the skb test run (skbSetup) for the types that see the
// packet's socket: the kernel's test run makes one of the packet's family
// (AF_INET, AF_INET6, else AF_UNSPEC) whose local address is the packet's
// source and remote address its destination, ports zero.
func socketSetup(ctx, frame, pkt []byte, given bool) error {
	if err := skbSetup(ctx, frame, pkt, given); err != nil {
		return err
	}
	testRunSocket(frame, ctx, skbFamily, skbLocalIP4, skbRemoteIP4, skbLocalIP6, skbRemoteIP6)
	return nil
}

// testRunSocket writes the family and addresses of the skb test run's
// socket (AF_INET or AF_INET6 for IP frames, whose header skbSetup
// checked; else nothing, AF_UNSPEC) at the given offsets of b: the local
// address is the packet's source, the remote one its destination.
func testRunSocket(frame, b []byte, family, local4, remote4, local6, remote6 int) {
	le := binary.LittleEndian
	switch binary.BigEndian.Uint16(frame[12:]) {
	case ethPIP:
		le.PutUint32(b[family:], afInet)
		copy(b[local4:local4+4], frame[ethHeader+12:])
		copy(b[remote4:remote4+4], frame[ethHeader+16:])
	case ethPIPv6:
		le.PutUint32(b[family:], afInet6)
		copy(b[local6:local6+16], frame[ethHeader+8:])
		copy(b[remote6:remote6+16], frame[ethHeader+24:])
	}
}

// Address families.
const (
	afUnix  = 1
	afInet  = 2
	afInet6 = 10
)
