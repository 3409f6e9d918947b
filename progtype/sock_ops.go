package progtype

import (
	"encoding/binary"

	"github.com/cilium/ebpf"
)

// sockOpsFields is struct bpf_sock_ops (sock_ops_is_valid_access): u32
// fields read whole but skb_tcp_flags, which narrow loads read; the 64-bit
// counters and skb_hwtstamp read whole; reply and sk_txhash the only
// writable fields. skb_data and skb_data_end are 64-bit packet pointers;
// sk a nullable struct bpf_sock pointer, NULL in bpfvm's runs.
var sockOpsFields = func() []Field {
	in := Field{Read: true, Input: true}
	f := u32Fields(0, "op args[4]", in)
	f = append(f, u32Fields(20, `family remote_ip4 local_ip4 remote_ip6[4]
		local_ip6[4] remote_port local_port is_fullsock snd_cwnd srtt_us
		bpf_sock_ops_cb_flags state rtt_min snd_ssthresh rcv_nxt snd_nxt
		snd_una mss_cache ecn_flags rate_delivered rate_interval_us
		packets_out retrans_out total_retrans segs_in data_segs_in segs_out
		data_segs_out lost_out sacked_out sk_txhash`, in)...)
	f = append(f,
		Field{Name: "bytes_received", Offset: 168, Size: 8, Read: true, Input: true},
		Field{Name: "bytes_acked", Offset: 176, Size: 8, Read: true, Input: true},
		Field{Name: "sk", Offset: 184, Size: 8, Read: true, Kind: SocketOrNull},
		Field{Name: "skb_data", Offset: 192, Size: 8, Read: true, Kind: PacketData},
		Field{Name: "skb_data_end", Offset: 200, Size: 8, Read: true, Kind: PacketEnd},
		Field{Name: "skb_len", Offset: 208, Size: 4, Read: true},
		Field{Name: "skb_tcp_flags", Offset: 212, Size: 4, Read: true, Narrow: true, NarrowStart: true, Input: true},
		Field{Name: "skb_hwtstamp", Offset: 216, Size: 8, Read: true, Input: true},
	)
	for i := range f {
		switch f[i].Name {
		case "args[0]", "sk_txhash":
			// reply shares args[0]'s place.
			f[i].Write, f[i].Output = true, true
		}
	}
	return f
}()

// sockOps returns BPF_PROG_TYPE_SOCK_OPS with struct bpf_sock_ops,
// returning 0 or 1 (check_return_code). The type takes any attach type;
// the helper set depends on it (hasRetval). The kernel has no test run for
// it; bpfvm's runs take every scalar field from the context input (op,
// args, the socket's addresses, TCP state and counters), give the program
// the packet, if any, as skb_data to skb_data_end and its length as
// skb_len, and return reply and sk_txhash in the context output.
func sockOps(a ebpf.AttachType) *Type {
	return &Type{
		Name:         "sock_ops",
		ContextSize:  224,
		Fields:       sockOpsFields,
		ContextNames: []string{"bpf_sock_ops", "bpf_sock_ops_kern"},
		Setup: func(ctx, frame, pkt []byte, given bool) error {
			binary.LittleEndian.PutUint32(ctx[sockOpsSKBLen:], uint32(len(pkt)))
			return nil
		},
		Helpers: Helpers(cgroupCommon(a), sockOpsHelpers, sockBaseHelpers),
		// The verifier lets sock_ops programs read the packet, not write it.
		PacketReadOnly: true,
		Attach:         a,
		CheckReturn:    true,
		ReturnMax:      1,
	}
}

// SockOps is BPF_PROG_TYPE_SOCK_OPS loaded without an attach type or with
// its own (BPF_CGROUP_SOCK_OPS); sockOpsRetval is it for the attach types
// whose programs may get and set a syscall's return value.
var (
	SockOps       = sockOps(0)
	sockOpsRetval = sockOps(ebpf.AttachCGroupSysctl)
)

const sockOpsSKBLen = 208

// sockOpsHelpers is sock_ops_func_proto's own cases (CONFIG_INET ones
// included), before bpf_sk_base_func_proto.
var sockOpsHelpers = names(CapNone, `setsockopt getsockopt sock_ops_cb_flags_set
	sock_map_update sock_hash_update get_socket_cookie perf_event_output
	sk_storage_get sk_storage_delete get_netns_cookie load_hdr_opt
	store_hdr_opt reserve_hdr_opt tcp_sock`)
