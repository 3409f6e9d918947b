//go:build ignore

// progtypes.c has a program of each socket and cgroup family, loaded with
// the attach type its section names (progtypes_run_test.go): they read and
// write their contexts as the kernel's headers lay them out.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

// connect4 sends connections to port 80 to 127.0.0.1:8080.
SEC("cgroup/connect4")
int connect4(struct bpf_sock_addr *ctx)
{
	if (ctx->user_port == bpf_htons(80) && ctx->protocol == IPPROTO_TCP) {
		ctx->user_ip4 = bpf_htonl(0x7f000001);
		ctx->user_port = bpf_htons(8080);
	}
	return 1;
}

// getpeername6 shows every peer as ::1.
SEC("cgroup/getpeername6")
int getpeername6(struct bpf_sock_addr *ctx)
{
	ctx->user_ip6[0] = 0;
	ctx->user_ip6[1] = 0;
	ctx->user_ip6[2] = 0;
	ctx->user_ip6[3] = bpf_htonl(1);
	return 1;
}

// sock_ops sets the SYN timeout of connections to port 443 peers.
SEC("sockops")
int sock_ops(struct bpf_sock_ops *ctx)
{
	if (ctx->op == BPF_SOCK_OPS_TIMEOUT_INIT && ctx->remote_port == bpf_htonl(443))
		ctx->reply = 10;
	return 1;
}

// msg passes messages starting with 'G'.
SEC("sk_msg")
int msg(struct sk_msg_md *ctx)
{
	char *data = ctx->data, *end = ctx->data_end;

	if (data + 1 > end || ctx->size < 4)
		return SK_DROP;
	return data[0] == 'G' ? SK_PASS : SK_DROP;
}

// lookup drops IPv4 lookups for local port 80.
SEC("sk_lookup")
int lookup(struct bpf_sk_lookup *ctx)
{
	if (ctx->family == 2 && ctx->local_port == 80)
		return SK_DROP;
	return SK_PASS;
}

// egress drops UDP.
SEC("cgroup_skb/egress")
int egress(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct iphdr *ip = data;

	if ((void *)(ip + 1) > end || skb->family != 2)
		return 1;
	return ip->protocol == IPPROTO_UDP ? 0 : 1;
}

// dissect fills the flow keys from an IPv4 header.
SEC("flow_dissector")
int dissect(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct bpf_flow_keys *keys = skb->flow_keys;
	struct iphdr *ip = data + ETH_HLEN;

	if (keys->n_proto != bpf_htons(ETH_P_IP) || (void *)(ip + 1) > end)
		return BPF_DROP;
	keys->addr_proto = ETH_P_IP;
	keys->ip_proto = ip->protocol;
	keys->ipv4_src = ip->saddr;
	keys->ipv4_dst = ip->daddr;
	keys->thoff = keys->nhoff + ip->ihl * 4;
	return BPF_OK;
}

// sys_ctl refuses writes.
SEC("cgroup/sysctl")
int sys_ctl(struct bpf_sysctl *ctx)
{
	return ctx->write ? 0 : 1;
}

// get_sockopt hides SOL_IP errors.
SEC("cgroup/getsockopt")
int get_sockopt(struct bpf_sockopt *ctx)
{
	if (ctx->level == 0)
		ctx->retval = 0;
	return 1;
}

char _license[] SEC("license") = "GPL";
