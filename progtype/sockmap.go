package progtype

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// u32Fields lays out consecutive u32 fields from off, each like f but for
// its name and offset; "name[n]" stands for n of them.
func u32Fields(off uint32, list string, f Field) []Field {
	var out []Field
	for _, n := range strings.Fields(list) {
		count := 1
		if i := strings.IndexByte(n, '['); i >= 0 {
			count, _ = strconv.Atoi(strings.TrimSuffix(n[i+1:], "]"))
			n = n[:i]
			for j := range count {
				g := f
				g.Name, g.Offset, g.Size = fmt.Sprintf("%s[%d]", n, j), off, 4
				out = append(out, g)
				off += 4
			}
			continue
		}
		g := f
		g.Name, g.Offset, g.Size = n, off, 4
		out = append(out, g)
		off += 4
	}
	return out
}

// skSKBFields is struct __sk_buff of sk_skb programs
// (sk_skb_is_valid_access): no mark, tc or time fields; tc_index and
// priority writable. bpfvm's runs take the socket's addresses and ports as
// input, as the stream's socket gives them.
var skSKBFields = func() []Field {
	f := skbFields("tc_classid data_meta tstamp wire_len hwtstamp mark", "tc_index priority")
	for i := range f {
		if f[i].Offset >= skbFamily && f[i].Offset < skbDataMeta {
			f[i].Input = true
		}
	}
	return f
}()

// SKSKB is BPF_PROG_TYPE_SK_SKB (stream parser and verdict programs of a
// sockmap) with struct __sk_buff. The kernel has no test run for it;
// bpfvm's runs give the program the input as the stream data it sees
// (from data to data_end, no link or network header) and take the context
// input as the skb test run does, with the socket's family, addresses and
// ports too; __sk_buff.sk is NULL in them.
var SKSKB = &Type{
	Name:         "sk_skb",
	ContextSize:  192,
	Fields:       skSKBFields,
	ContextNames: skbNames,
	Setup:        streamSetup,
	Helpers:      Helpers(skSKBHelpers, sockBaseHelpers),
	// The stream's own variants (sk_skb_pull_data and the like).
	Unimplemented: map[string]bool{"bpf_skb_pull_data": true, "bpf_skb_change_tail": true,
		"bpf_skb_change_head": true, "bpf_skb_adjust_room": true},
}

// streamSetup sets __sk_buff.len to the stream data's length.
func streamSetup(ctx, frame, pkt []byte, given bool) error {
	binary.LittleEndian.PutUint32(ctx[skbLen:], uint32(len(pkt)))
	return nil
}

// skSKBHelpers is sk_skb_func_proto's own cases (CONFIG_INET ones
// included), before bpf_sk_base_func_proto.
var skSKBHelpers = names(CapNone, `skb_store_bytes skb_load_bytes
	skb_pull_data skb_change_tail skb_change_head skb_adjust_room
	get_socket_cookie get_socket_uid sk_redirect_map sk_redirect_hash
	perf_event_output sk_lookup_tcp sk_lookup_udp sk_release skc_lookup_tcp`)

// SKMsg is BPF_PROG_TYPE_SK_MSG with struct sk_msg_md
// (sk_msg_is_valid_access): every field read-only and read whole, data and
// data_end 64-bit packet pointers, sk a struct bpf_sock pointer. The
// kernel has no test run for it; bpfvm's runs give the program the input
// as the message's bytes (data to data_end), size their length, and take
// the socket's family, addresses and ports from the context input; sk is
// that socket (msgSocket).
var SKMsg = &Type{
	Name:        "sk_msg",
	ContextSize: 80,
	Fields: append(append([]Field{
		{Name: "data", Offset: 0, Size: 8, Read: true, Kind: PacketData},
		{Name: "data_end", Offset: 8, Size: 8, Read: true, Kind: PacketEnd},
	}, u32Fields(16, "family remote_ip4 local_ip4 remote_ip6[4] local_ip6[4] remote_port local_port", Field{Read: true, Input: true})...),
		Field{Name: "size", Offset: 68, Size: 4, Read: true},
		Field{Name: "sk", Offset: 72, Size: 8, Read: true, Kind: Socket},
	),
	ContextNames: []string{"sk_msg_md", "sk_msg"},
	Setup: func(ctx, frame, pkt []byte, given bool) error {
		binary.LittleEndian.PutUint32(ctx[skMsgSize:], uint32(len(pkt)))
		return nil
	},
	Socket:  msgSocket,
	Helpers: Helpers(skMsgHelpers, sockBaseHelpers),
}

// struct sk_msg_md offsets.
const (
	skMsgFamily     = 16
	skMsgRemoteIP4  = 20
	skMsgLocalIP4   = 24
	skMsgRemoteIP6  = 28
	skMsgLocalIP6   = 44
	skMsgRemotePort = 60
	skMsgLocalPort  = 64
	skMsgSize       = 68
)

// skMsgHelpers is sk_msg_func_proto's own cases: the message helpers, the
// task's identity and classid without CAP_PERFMON, then
// bpf_sk_base_func_proto.
var skMsgHelpers = names(CapNone, `msg_redirect_map msg_redirect_hash
	msg_apply_bytes msg_cork_bytes msg_pull_data msg_push_data msg_pop_data
	perf_event_output get_current_uid_gid get_current_pid_tgid
	sk_storage_get sk_storage_delete get_netns_cookie get_current_cgroup_id
	get_current_ancestor_cgroup_id get_cgroup_classid`)
