package verifier_test

import (
	"testing"

	"github.com/cilium/ebpf"
)

// TestSelftestSyncookie covers the TCP syncookie helpers' prototypes: the
// socket helpers' ARG_PTR_TO_BTF_ID_SOCK_COMMON and two constant-size
// memory arguments, the raw helpers' fixed-size headers
// (ARG_PTR_TO_FIXED_SIZE_MEM: 20 or 40 bytes of IP header, 20 of TCP),
// packet access, and the program types that have them.
func TestSelftestSyncookie(t *testing.T) {
	tc := ebpf.SchedCLS
	// r6 is the context; fp-64..fp-1 is initialised.
	stack := "r6 = r1\nr1 = 0\n*(u64 *)(r10 -8) = r1\n*(u64 *)(r10 -16) = r1\n*(u64 *)(r10 -24) = r1\n*(u64 *)(r10 -32) = r1\n*(u64 *)(r10 -40) = r1\n*(u64 *)(r10 -48) = r1\n*(u64 *)(r10 -56) = r1\n*(u64 *)(r10 -64) = r1\n"
	lookup := stack + "r1 = r6\nr2 = r10\nr2 += -16\nr3 = 12\nr4 = -1\nr5 = 0\ncall bpf_sk_lookup_tcp#84\nif r0 == 0 goto out\nr7 = r0\n"
	release := "r1 = r7\ncall bpf_sk_release#86\n"
	out := "\nout: r0 = 0\nexit"
	// pkt loads data and data_end and checks 60 bytes: r2 = data, r3 = end.
	pkt := "r2 = *(u32 *)(r1 +76)\nr3 = *(u32 *)(r1 +80)\nr4 = r2\nr4 += 60\nif r4 > r3 goto out\n"
	cases := []vcase{
		{name: "raw gen ipv4 stack", typ: tc, asm: stack + "r1 = r10\nr1 += -64\nr2 = r10\nr2 += -40\nr3 = 20\ncall bpf_tcp_raw_gen_syncookie_ipv4#204" + out},
		{name: "raw gen ipv6 stack", typ: tc, asm: stack + "r1 = r10\nr1 += -64\nr2 = r10\nr2 += -20\nr3 = 20\ncall bpf_tcp_raw_gen_syncookie_ipv6#205" + out},
		{name: "raw gen ipv6 header past the stack", typ: tc, asm: stack + "r1 = r10\nr1 += -32\nr2 = r10\nr2 += -64\nr3 = 20\ncall bpf_tcp_raw_gen_syncookie_ipv6#205" + out, err: "invalid read from stack R1 off=-32 size=40", kmsg: true},
		{name: "raw gen ipv4 header uninit", typ: tc, asm: "r1 = r10\nr1 += -64\nr2 = r10\nr2 += -64\nr3 = 20\ncall bpf_tcp_raw_gen_syncookie_ipv4#204" + out},
		{name: "raw gen ipv4 packet", typ: tc, asm: pkt + "r1 = r2\nr2 += 20\nr3 = 20\ncall bpf_tcp_raw_gen_syncookie_ipv4#204" + out},
		{name: "raw gen ipv4 packet short", typ: tc, asm: pkt + "r1 = r2\nr1 += 50\nr2 += 20\nr3 = 20\ncall bpf_tcp_raw_gen_syncookie_ipv4#204" + out, err: "invalid access to packet, off=50 size=20, R1(id=0,off=50,r=60)", kmsg: true},
		// 6.18's th_len may be 0 (ARG_CONST_SIZE_OR_ZERO): the helper
		// then fails with EINVAL.
		{name: "raw gen th_len zero", typ: tc, asm: stack + "r1 = r10\nr1 += -64\nr2 = r10\nr2 += -40\nr3 = 0\ncall bpf_tcp_raw_gen_syncookie_ipv4#204" + out},
		{name: "raw gen v6 th_len zero", typ: tc, asm: stack + "r1 = r10\nr1 += -64\nr2 = r10\nr2 += -40\nr3 = 0\ncall bpf_tcp_raw_gen_syncookie_ipv6#205" + out},
		{name: "raw gen null th", typ: tc, asm: stack + "r1 = r10\nr1 += -64\nr2 = 0\nr3 = 0\ncall bpf_tcp_raw_gen_syncookie_ipv4#204" + out, err: "R2 type=scalar expected=fp, pkt, pkt_meta, map_key, map_value, mem, ringbuf_mem, buf, trusted_ptr_", kmsg: true},
		{name: "raw gen th_len unbounded", typ: tc, asm: stack + "r3 = *(u32 *)(r6 +0)\nr1 = r10\nr1 += -64\nr2 = r10\nr2 += -40\ncall bpf_tcp_raw_gen_syncookie_ipv4#204" + out, err: "R3 unbounded memory access, use 'var &= const' or 'if (var < const)'", kmsg: true},
		{name: "raw gen th_len bounded", typ: tc, asm: stack + "r3 = *(u32 *)(r6 +0)\nr3 &= 31\nr1 = r10\nr1 += -64\nr2 = r10\nr2 += -40\ncall bpf_tcp_raw_gen_syncookie_ipv4#204" + out},
		{name: "gen th_len zero", typ: tc, asm: lookup + "r1 = r7\nr2 = r10\nr2 += -64\nr3 = 20\nr4 = r10\nr4 += -40\nr5 = 0\ncall bpf_tcp_gen_syncookie#110\n" + release + out, err: "R5 invalid zero-sized read: u64=[0,0]", kmsg: true},
		{name: "check th_len zero", typ: tc, asm: lookup + "r1 = r7\nr2 = r10\nr2 += -64\nr3 = 20\nr4 = r10\nr4 += -40\nr5 = 0\ncall bpf_tcp_check_syncookie#100\n" + release + out, err: "R5 invalid zero-sized read: u64=[0,0]", kmsg: true},
		{name: "raw gen null header", typ: tc, asm: stack + "r1 = 0\nr2 = r10\nr2 += -40\nr3 = 20\ncall bpf_tcp_raw_gen_syncookie_ipv4#204" + out, err: "R1 type=scalar expected=fp, pkt, pkt_meta, map_key, map_value, mem, ringbuf_mem, buf, trusted_ptr_", kmsg: true},
		{name: "raw check ipv4", typ: tc, asm: stack + "r1 = r10\nr1 += -64\nr2 = r10\nr2 += -40\ncall bpf_tcp_raw_check_syncookie_ipv4#206" + out},
		{name: "raw check ipv6", typ: tc, asm: stack + "r1 = r10\nr1 += -64\nr2 = r10\nr2 += -20\ncall bpf_tcp_raw_check_syncookie_ipv6#207" + out},
		{name: "raw check tcp header short", typ: tc, asm: stack + "r1 = r10\nr1 += -64\nr2 = r10\nr2 += -16\ncall bpf_tcp_raw_check_syncookie_ipv4#206" + out, err: "invalid read from stack R2 off=-16 size=20", kmsg: true},
		{name: "raw check ctx", typ: tc, asm: stack + "r1 = r6\nr2 = r10\nr2 += -40\ncall bpf_tcp_raw_check_syncookie_ipv4#206" + out, err: "R1 type=ctx expected=fp, pkt, pkt_meta, map_key, map_value, mem, ringbuf_mem, buf, trusted_ptr_", kmsg: true},
		{name: "raw xdp", typ: ebpf.XDP, asm: stack + "r1 = r10\nr1 += -64\nr2 = r10\nr2 += -40\ncall bpf_tcp_raw_check_syncookie_ipv4#206" + out},
		{name: "raw socket filter cannot", typ: ebpf.SocketFilter, asm: stack + "r1 = r10\nr1 += -64\nr2 = r10\nr2 += -40\ncall bpf_tcp_raw_check_syncookie_ipv4#206" + out, err: "program of this type cannot use helper bpf_tcp_raw_check_syncookie_ipv4#206", kmsg: true},
		{name: "gen listener", typ: tc, asm: lookup + "r1 = r7\nr2 = r10\nr2 += -64\nr3 = 20\nr4 = r10\nr4 += -40\nr5 = 20\ncall bpf_tcp_gen_syncookie#110\n" + release + out},
		{name: "check listener", typ: tc, asm: lookup + "r1 = r7\nr2 = r10\nr2 += -64\nr3 = 40\nr4 = r10\nr4 += -24\nr5 = 20\ncall bpf_tcp_check_syncookie#100\n" + release + out},
		{name: "gen unchecked socket", typ: tc, asm: stack + "r1 = r6\nr2 = r10\nr2 += -16\nr3 = 12\nr4 = -1\nr5 = 0\ncall bpf_sk_lookup_tcp#84\nr7 = r0\nr1 = r0\nr2 = r10\nr2 += -64\nr3 = 20\nr4 = r10\nr4 += -40\nr5 = 20\ncall bpf_tcp_gen_syncookie#110\nif r7 == 0 goto out\n" + release + out, err: "R1 type=sock_or_null expected=sock_common, sock, tcp_sock, xdp_sock, ptr_, trusted_ptr_", kmsg: true},
		{name: "gen no socket", typ: tc, asm: stack + "r1 = 0\nr2 = r10\nr2 += -64\nr3 = 20\nr4 = r10\nr4 += -40\nr5 = 20\ncall bpf_tcp_gen_syncookie#110" + out, err: "R1 type=scalar expected=sock_common, sock, tcp_sock, xdp_sock, ptr_, trusted_ptr_", kmsg: true},
		{name: "gen th past the stack", typ: tc, asm: lookup + "r1 = r7\nr2 = r10\nr2 += -64\nr3 = 20\nr4 = r10\nr4 += -8\nr5 = 20\ncall bpf_tcp_gen_syncookie#110\n" + release + out, err: "invalid read from stack R4 off=-8 size=20", kmsg: true},
		{name: "check iph_len zero", typ: tc, asm: lookup + "r1 = r7\nr2 = r10\nr2 += -64\nr3 = 0\nr4 = r10\nr4 += -40\nr5 = 20\ncall bpf_tcp_check_syncookie#100\n" + release + out, err: "R3 invalid zero-sized read: u64=[0,0]", kmsg: true},
		{name: "gen ctx socket", typ: tc, asm: stack + "r1 = *(u64 *)(r6 +168)\nif r1 == 0 goto out\nr2 = r10\nr2 += -64\nr3 = 20\nr4 = r10\nr4 += -40\nr5 = 20\ncall bpf_tcp_gen_syncookie#110" + out},
		{name: "gen cgroup_skb cannot", typ: ebpf.CGroupSKB, asm: stack + "r1 = 0\nr2 = r10\nr2 += -64\nr3 = 20\nr4 = r10\nr4 += -40\nr5 = 20\ncall bpf_tcp_gen_syncookie#110\nr0 = 1\nexit", err: "program of this type cannot use helper bpf_tcp_gen_syncookie#110", kmsg: true},
	}
	runCases(t, cases)
}
