//go:build ignore

// helpers_skb.c exercises the socket buffer helpers of tc and socket
// filter programs and XDP's byte helpers: bpf_skb_change_tail/head,
// bpf_skb_pull_data, bpf_skb_adjust_room, bpf_skb_change_proto/type,
// bpf_skb_vlan_push/pop, the hash helpers, bpf_csum_update/level,
// bpf_skb_load_bytes_relative, the socket and route information helpers,
// bpf_check_mtu, the redirect helpers, the tunnel helpers and
// bpf_xdp_load/store_bytes/get_buff_len.
//
// Each tc program takes its arguments from skb->cb[] (the test run's
// context) and leaves what the helper changed, as the program reads it
// back from struct __sk_buff, in cb[] too, which the context output
// returns; the tests compare return values, output packets and contexts
// with the kernel's BPF_PROG_TEST_RUN.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

// change_tail: bpf_skb_change_tail(skb, cb[0], cb[1]); cb[2] = len, cb[3]
// = data_end - data.
SEC("tc")
int change_tail(struct __sk_buff *skb)
{
	long ret = bpf_skb_change_tail(skb, skb->cb[0], skb->cb[1]);

	skb->cb[2] = skb->len;
	skb->cb[3] = skb->data_end - skb->data;
	skb->cb[4] = skb->gso_segs;
	return ret;
}

// change_head: bpf_skb_change_head(skb, cb[0], cb[1]); cb[2] = len, cb[3]
// = data_end - data.
SEC("tc")
int change_head(struct __sk_buff *skb)
{
	long ret = bpf_skb_change_head(skb, skb->cb[0], skb->cb[1]);

	skb->cb[2] = skb->len;
	skb->cb[3] = skb->data_end - skb->data;
	return ret;
}

// pull_data: bpf_skb_pull_data(skb, cb[0]); cb[2] = len.
SEC("tc")
int pull_data(struct __sk_buff *skb)
{
	long ret = bpf_skb_pull_data(skb, skb->cb[0]);

	skb->cb[2] = skb->data_end - skb->data;
	return ret;
}

// adjust_room: bpf_skb_adjust_room(skb, cb[0], cb[1], cb[3] << 32 |
// cb[2]) after raising the checksum level (cb[4] & 1); cb[0] = len,
// cb[1] = protocol, cb[2] = the checksum level's query, cb[3] =
// bpf_skb_change_tail(skb, 0, 0) (-EINVAL: shorter than the headers, or
// -ENOTSUPP once encapsulated).
SEC("tc")
int adjust_room(struct __sk_buff *skb)
{
	__u64 flags = (__u64)skb->cb[3] << 32 | skb->cb[2];
	long ret;

	if (skb->cb[4] & 1)
		bpf_csum_level(skb, BPF_CSUM_LEVEL_INC);
	ret = bpf_skb_adjust_room(skb, (__s32)skb->cb[0], skb->cb[1], flags);
	skb->cb[0] = skb->len;
	skb->cb[1] = skb->protocol;
	skb->cb[2] = bpf_csum_level(skb, BPF_CSUM_LEVEL_QUERY);
	skb->cb[3] = bpf_skb_change_tail(skb, 0, 0);
	return ret;
}

// change_proto: bpf_skb_change_proto(skb, cb[0], cb[1]) after
// bpf_set_hash(skb, 7); cb[2] = len, cb[3] = protocol, cb[4] = hash.
SEC("tc")
int change_proto(struct __sk_buff *skb)
{
	long ret;

	bpf_set_hash(skb, 7);
	ret = bpf_skb_change_proto(skb, skb->cb[0], skb->cb[1]);
	skb->cb[2] = skb->len;
	skb->cb[3] = skb->protocol;
	skb->cb[4] = skb->hash;
	return ret;
}

// change_type: bpf_skb_change_type(skb, cb[0]); cb[1] = pkt_type.
SEC("tc")
int change_type(struct __sk_buff *skb)
{
	long ret = bpf_skb_change_type(skb, skb->cb[0]);

	skb->cb[1] = skb->pkt_type;
	return ret;
}

// vlan: up to four VLAN operations, byte i of cb[0] the i-th: 1 pushes
// (proto cb[1] >> 16 * (i & 1), tci cb[2] + i), 2 pops, 0 stops. The
// return value has each operation's result in a byte; cb[0] =
// vlan_present | vlan_tci << 16, cb[1] = vlan_proto, cb[2] = protocol,
// cb[3] = len.
SEC("tc")
int vlan(struct __sk_buff *skb)
{
	__u32 ops = skb->cb[0], rets = 0;

#pragma unroll
	for (int i = 0; i < 4; i++) {
		__u32 op = (ops >> (8 * i)) & 0xff;
		long ret;

		if (op == 0)
			break;
		if (op == 1)
			ret = bpf_skb_vlan_push(skb, skb->cb[1] >> (16 * (i & 1)), skb->cb[2] + i);
		else
			ret = bpf_skb_vlan_pop(skb);
		rets |= (ret & 0xff) << (8 * i);
	}
	skb->cb[0] = skb->vlan_present | skb->vlan_tci << 16;
	skb->cb[1] = skb->vlan_proto;
	skb->cb[2] = skb->protocol;
	skb->cb[3] = skb->len;
	return rets;
}

// hash: the hash helpers in sequence; each cb[] word says whether the
// values read back agree (the kernel's hashes are seeded per boot).
SEC("tc")
int hash(struct __sk_buff *skb)
{
	__u32 h0 = skb->hash, h1, h2, h3;
	__u8 b = 0;

	h1 = bpf_get_hash_recalc(skb);
	skb->cb[0] = (h0 == 0) | (h1 != 0) << 1 | (skb->hash == h1) << 2 |
		     (bpf_get_hash_recalc(skb) == h1) << 3;
	bpf_set_hash(skb, skb->cb[1]);
	h2 = bpf_get_hash_recalc(skb);
	skb->cb[1] = (h2 == skb->cb[1]) | (skb->hash == h2) << 1;
	bpf_set_hash_invalid(skb);
	skb->cb[2] = skb->hash;
	h3 = bpf_get_hash_recalc(skb);
	skb->cb[3] = (h3 == h1);
	bpf_skb_load_bytes(skb, 0, &b, 1);
	bpf_skb_store_bytes(skb, 0, &b, 1, BPF_F_INVALIDATE_HASH);
	skb->cb[4] = skb->hash;
	return 0;
}

// csum: bpf_csum_update(skb, cb[1]) into cb[1], then up to four
// bpf_csum_level calls, byte i of cb[0] the level + 1 of the i-th (0
// stops); the return value has each one's result in a byte.
SEC("tc")
int csum(struct __sk_buff *skb)
{
	__u32 ops = skb->cb[0], rets = 0;

	skb->cb[1] = bpf_csum_update(skb, skb->cb[1]);
#pragma unroll
	for (int i = 0; i < 4; i++) {
		__u32 op = (ops >> (8 * i)) & 0xff;

		if (op == 0)
			break;
		rets |= (bpf_csum_level(skb, op - 1) & 0xff) << (8 * i);
	}
	return rets;
}

// load_rel: bpf_skb_load_bytes_relative(skb, cb[0], buf, 8, cb[1]); buf
// into cb[2..3].
SEC("tc")
int load_rel(struct __sk_buff *skb)
{
	__u32 buf[2] = {1, 1};
	long ret = bpf_skb_load_bytes_relative(skb, skb->cb[0], buf, 8, skb->cb[1]);

	skb->cb[2] = buf[0];
	skb->cb[3] = buf[1];
	return ret;
}

// sock_load_rel: load_rel in a socket filter.
SEC("socket")
int sock_load_rel(struct __sk_buff *skb)
{
	__u32 buf[2] = {1, 1};
	long ret = bpf_skb_load_bytes_relative(skb, skb->cb[0], buf, 8, skb->cb[1]);

	skb->cb[2] = buf[0];
	skb->cb[3] = buf[1];
	return ret;
}

// info: cb[0] = the socket cookie is not 0 and stable, cb[1] = the socket
// uid, cb[2] = the cgroup id is not 0, cb[3] = the class id, cb[4] = the
// route realm.
SEC("tc")
int info(struct __sk_buff *skb)
{
	__u64 c = bpf_get_socket_cookie(skb);

	skb->cb[0] = (c != 0) | (bpf_get_socket_cookie(skb) == c) << 1;
	skb->cb[1] = bpf_get_socket_uid(skb);
	skb->cb[2] = bpf_skb_cgroup_id(skb) != 0;
	skb->cb[3] = bpf_get_cgroup_classid(skb);
	skb->cb[4] = bpf_get_route_realm(skb);
	return 0;
}

// sock_info: the socket filter's socket helpers.
SEC("socket")
int sock_info(struct __sk_buff *skb)
{
	__u64 c = bpf_get_socket_cookie(skb);

	skb->cb[0] = (c != 0) | (bpf_get_socket_cookie(skb) == c) << 1;
	skb->cb[1] = bpf_get_socket_uid(skb);
	return 0;
}

// xdp_bytes: with the u32 arguments off, len (1..32), off2 at packet byte
// 14: bpf_xdp_load_bytes(xdp, off, buf, len), the buffer stored at packet
// offset 40 when that worked, bpf_xdp_store_bytes(xdp, off2, a0 a1 ..,
// len). Returns the two results' low bytes and bpf_xdp_get_buff_len()
// << 16.
SEC("xdp")
int xdp_bytes(struct xdp_md *xdp)
{
	__u8 buf[32] = {}, pat[32];
	__u32 args[3];
	long r1, r2;

	if (bpf_xdp_load_bytes(xdp, 14, args, sizeof(args)))
		return -1;
	__u32 n = (args[1] & 31) + 1;
	for (int i = 0; i < 32; i++)
		pat[i] = 0xa0 + i;
	r1 = bpf_xdp_load_bytes(xdp, args[0], buf, n);
	if (r1 == 0)
		bpf_xdp_store_bytes(xdp, 40, buf, n);
	r2 = bpf_xdp_store_bytes(xdp, args[2], pat, n);
	return (r1 & 0xff) | (r2 & 0xff) << 8 | bpf_xdp_get_buff_len(xdp) << 16;
}

char _license[] SEC("license") = "GPL";

// clone: bpf_clone_redirect(skb, cb[0], cb[1]) then a write of 0xee at
// packet byte 0 (the copy is taken before it).
SEC("tc")
int clone(struct __sk_buff *skb)
{
	__u8 b = 0xee;
	long ret = bpf_clone_redirect(skb, skb->cb[0], skb->cb[1]);

	bpf_skb_store_bytes(skb, 0, &b, 1, 0);
	return ret;
}

// redirect_neigh: bpf_redirect_neigh(cb[0], params, cb[1], cb[2]), params
// an AF_INET next hop 10.0.0.9 (cb[1] & 0x100: no params at all).
SEC("tc")
int redirect_neigh(struct __sk_buff *skb)
{
	struct bpf_redir_neigh nh = {.nh_family = 2, .ipv4_nh = 0x0900000a};

	if (skb->cb[1] & 0x100)
		return bpf_redirect_neigh(skb->cb[0], NULL, 0, skb->cb[2]);
	return bpf_redirect_neigh(skb->cb[0], &nh, skb->cb[1] & 0xff ? sizeof(nh) : 0, skb->cb[2]);
}

// redirect_peer: bpf_redirect_peer(cb[0], cb[1]).
SEC("tc")
int redirect_peer(struct __sk_buff *skb)
{
	return bpf_redirect_peer(skb->cb[0], skb->cb[1]);
}

// check_mtu: mtu = cb[2]; bpf_check_mtu(skb, cb[0], &mtu, cb[1], cb[3]);
// cb[2] = mtu.
SEC("tc")
int check_mtu(struct __sk_buff *skb)
{
	__u32 mtu = skb->cb[2];
	long ret = bpf_check_mtu(skb, skb->cb[0], &mtu, (__s32)skb->cb[1], skb->cb[3]);

	skb->cb[2] = mtu;
	return ret;
}

// xdp_check_mtu: check_mtu in XDP, the arguments at packet byte 14.
SEC("xdp")
int xdp_check_mtu(struct xdp_md *xdp)
{
	__u32 args[4], mtu;
	long ret;

	if (bpf_xdp_load_bytes(xdp, 14, args, sizeof(args)))
		return -1;
	mtu = args[2];
	ret = bpf_check_mtu(xdp, args[0], &mtu, (__s32)args[1], args[3]);
	return (ret & 0xffff) | mtu << 16;
}

// tunnel*: bpf_skb_get_tunnel_key(skb, &k, GET, cb[1] & 0x11) into r1;
// if cb[1] & 0x100, bpf_skb_set_tunnel_key(skb, &set, SET, cb[3]) into
// r2, with set a key of id 42, remote 10.0.0.1, local 10.0.0.2 (IPv6
// ::1 and ::2 with BPF_F_TUNINFO_IPV6), tos 3, ttl 64, label cb[4], then
// bpf_skb_set_tunnel_opt(skb, opt, 8) into r3 and a second, full get
// into k. cb[0..4] = k's id, remote_ipv4, tos | ttl << 8 | tunnel_flags
// << 16, label, local_ipv4 | local_ipv6[3]; the return value r1 | r2 << 8
// | r3 << 16 | bpf_skb_get_tunnel_opt(skb, buf, 12) << 24, buf into the
// packet at 14. GET and SET are the key sizes of the program.
#define TUNNEL(name, GET, SET)							\
SEC("tc")									\
int name(struct __sk_buff *skb)							\
{										\
	struct bpf_tunnel_key k = {}, set = {};					\
	__u8 opt[8] = {1, 2, 3, 4, 5, 6, 7, 8}, buf[12] = {};			\
	__u32 flags = skb->cb[1];						\
	long r1, r2 = 0, r3 = 0, r4;						\
										\
	r1 = bpf_skb_get_tunnel_key(skb, &k, GET, flags & 0x11);		\
	if (flags & 0x100) {							\
		__u64 sf = skb->cb[3];						\
										\
		set.tunnel_id = 42;						\
		set.tunnel_tos = 3;						\
		set.tunnel_ttl = 64;						\
		set.tunnel_label = skb->cb[4];					\
		if (sf & BPF_F_TUNINFO_IPV6) {					\
			set.remote_ipv6[3] = 0x01000000;			\
			set.local_ipv6[3] = 0x02000000;				\
		} else {							\
			set.remote_ipv4 = 0x0a000001;				\
			set.local_ipv4 = 0x0a000002;				\
		}								\
		r2 = bpf_skb_set_tunnel_key(skb, &set, SET, sf);		\
		r3 = bpf_skb_set_tunnel_opt(skb, opt, sizeof(opt));		\
		r1 = bpf_skb_get_tunnel_key(skb, &k, sizeof(k), (sf & 1) | (flags & 0x10)); \
	}									\
	r4 = bpf_skb_get_tunnel_opt(skb, buf, sizeof(buf));			\
	bpf_skb_store_bytes(skb, 14, buf, sizeof(buf), 0);			\
	skb->cb[0] = k.tunnel_id;						\
	skb->cb[1] = k.remote_ipv4;						\
	skb->cb[2] = k.tunnel_tos | k.tunnel_ttl << 8 | k.tunnel_flags << 16;	\
	skb->cb[3] = k.tunnel_label;						\
	skb->cb[4] = k.local_ipv4 | k.local_ipv6[3];				\
	return (r1 & 0xff) | (r2 & 0xff) << 8 | (r3 & 0xff) << 16 | (r4 & 0xff) << 24; \
}

TUNNEL(tunnel, 44, 44)
TUNNEL(tunnel_set28, 44, 28)
TUNNEL(tunnel_set8, 44, 8)
TUNNEL(tunnel_get8, 8, 44)
TUNNEL(tunnel_get28, 28, 44)
TUNNEL(tunnel_get12, 12, 44)

// combo: up to four packet-changing helpers in sequence, byte i of cb[0]
// the i-th: 1 bpf_skb_change_head(4), 2 bpf_skb_vlan_push(802.1Q, 7 + i),
// 3 bpf_skb_vlan_pop, 4 bpf_skb_adjust_room(+8, MAC), 5
// bpf_skb_adjust_room(-8, NET), 6 bpf_skb_change_proto(IPv6), 7
// bpf_skb_change_proto(IPv4), 8 bpf_skb_change_tail(len + 3), 9
// bpf_skb_adjust_room(+20, MAC, IPIP encapsulation), 0 stops. The return
// value has each result's low byte; cb[0] = len, cb[1] = protocol, cb[2]
// = vlan_present | vlan_tci << 16, cb[3] = bpf_skb_load_bytes_relative
// of the network header's first 4 bytes, cb[4] = its result.
SEC("tc")
int combo(struct __sk_buff *skb)
{
	__u32 ops = skb->cb[0], rets = 0, w = 0;

#pragma unroll
	for (int i = 0; i < 4; i++) {
		__u32 op = (ops >> (8 * i)) & 0xff;
		long ret = 0;

		switch (op) {
		case 0: goto done;
		case 1: ret = bpf_skb_change_head(skb, 4, 0); break;
		case 2: ret = bpf_skb_vlan_push(skb, bpf_htons(0x8100), 7 + i); break;
		case 3: ret = bpf_skb_vlan_pop(skb); break;
		case 4: ret = bpf_skb_adjust_room(skb, 8, BPF_ADJ_ROOM_MAC, 0); break;
		case 5: ret = bpf_skb_adjust_room(skb, -8, BPF_ADJ_ROOM_NET, 0); break;
		case 6: ret = bpf_skb_change_proto(skb, bpf_htons(0x86dd), 0); break;
		case 7: ret = bpf_skb_change_proto(skb, bpf_htons(0x0800), 0); break;
		case 8: ret = bpf_skb_change_tail(skb, skb->len + 3, 0); break;
		case 9: ret = bpf_skb_adjust_room(skb, 20, BPF_ADJ_ROOM_MAC, BPF_F_ADJ_ROOM_ENCAP_L3_IPV4); break;
		}
		rets |= (ret & 0xff) << (8 * i);
	}
done:
	skb->cb[0] = skb->len;
	skb->cb[1] = skb->protocol;
	skb->cb[2] = skb->vlan_present | skb->vlan_tci << 16;
	skb->cb[4] = bpf_skb_load_bytes_relative(skb, 0, &w, 4, BPF_HDR_START_NET);
	skb->cb[3] = w;
	return rets;
}
