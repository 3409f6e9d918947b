package verifier_test

import (
	"testing"

	"github.com/cilium/ebpf"
)

// TestHelperSets covers the per-type helper sets (the kernel's func_proto)
// through the verifier: helpers inside and outside each type's set, ones
// bpfvm implements and ones it does not, privileged and unprivileged. A
// helper outside the set is the kernel's "program of this type cannot use
// helper", before any argument is looked at, whether or not bpfvm has it.
// A helper inside the set that bpfvm lacks has no prototype here, so the
// verifier cannot check the call ("invalid func"; a load reports
// vm.ErrHelper first) where the kernel goes on to check it: those cases
// are not compared with the kernel, whose membership verdict the progtype
// package's TestHelperSetsKernel compares for every helper instead. The
// kernel comparison runs privileged only (unprivileged loads are disabled
// on the test machine); the unprivileged cases follow the tiers of
// bpf_base_func_proto, under which a socket filter, loadable without
// CAP_BPF, gets only the first tier and its own helpers.
func TestHelperSets(t *testing.T) {
	sf, xdp, cls, act := ebpf.SocketFilter, ebpf.XDP, ebpf.SchedCLS, ebpf.SchedACT
	const (
		// buf: 8 initialised bytes at fp-8.
		buf = "*(u64 *)(r10 -8) = 0\n"
		out = "r0 = 0\nexit"
	)
	cannot := func(name string, typ ebpf.ProgramType, asm, helper string) vcase {
		return vcase{name: name, typ: typ, asm: asm + out, err: "program of this type cannot use helper " + helper, kmsg: true}
	}
	ok := func(name string, typ ebpf.ProgramType, asm string) vcase {
		return vcase{name: name, typ: typ, asm: asm + out}
	}
	unpriv := func(c vcase) vcase {
		c.name, c.unpriv = "unprivileged "+c.name, true
		return c
	}
	lacking := func(name string, typ ebpf.ProgramType, asm, helper string) vcase {
		return vcase{name: name, typ: typ, asm: asm + out, err: "invalid func " + helper, noKernel: true}
	}
	loadBytes := buf + "r2 = 0\nr3 = r10\nr3 += -8\nr4 = 8\ncall bpf_skb_load_bytes#26\n"
	storeBytes := buf + "r2 = 0\nr3 = r10\nr3 += -8\nr4 = 8\nr5 = 0\ncall bpf_skb_store_bytes#9\n"
	csumDiff := buf + "r1 = r10\nr1 += -8\nr2 = 8\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28\n"
	runCases(t, []vcase{
		// Socket filters: sk_filter_func_proto.
		ok("socket load_bytes", sf, loadBytes),
		cannot("socket store_bytes", sf, storeBytes, "bpf_skb_store_bytes#9"),
		cannot("socket l3_csum_replace", sf, "r2 = 0\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_l3_csum_replace#10\n", "bpf_l3_csum_replace#10"),
		cannot("socket csum_diff", sf, csumDiff, "bpf_csum_diff#28"),
		cannot("socket redirect", sf, "r1 = 1\nr2 = 0\ncall bpf_redirect#23\n", "bpf_redirect#23"),
		cannot("socket xdp_adjust_head", sf, "r2 = 0\ncall bpf_xdp_adjust_head#44\n", "bpf_xdp_adjust_head#44"),
		ok("socket ktime_get_coarse_ns", sf, "call bpf_ktime_get_coarse_ns#160\n"),
		ok("socket trace_printk", sf, buf+"r1 = r10\nr1 += -8\nr2 = 8\ncall bpf_trace_printk#6\n"),
		// Helpers bpfvm does not implement: outside the set the
		// kernel's message, inside it no prototype to check the call.
		cannot("socket skb_pull_data", sf, "r2 = 0\ncall bpf_skb_pull_data#39\n", "bpf_skb_pull_data#39"),
		cannot("socket probe_read", sf, "call bpf_probe_read#4\n", "bpf_probe_read#4"),
		cannot("socket xdp_load_bytes", sf, "call bpf_xdp_load_bytes#189\n", "bpf_xdp_load_bytes#189"),
		ok("socket get_netns_cookie", sf, "call bpf_get_netns_cookie#122\n"),
		ok("socket get_socket_cookie", sf, "call bpf_get_socket_cookie#46\n"),
		// XDP: xdp_func_proto.
		ok("xdp adjust_head", xdp, "r2 = 0\ncall bpf_xdp_adjust_head#44\n"),
		ok("xdp csum_diff", xdp, csumDiff),
		ok("xdp get_current_comm", xdp, "r1 = r10\nr1 += -16\nr2 = 16\ncall bpf_get_current_comm#16\n"),
		cannot("xdp load_bytes", xdp, loadBytes, "bpf_skb_load_bytes#26"),
		cannot("xdp store_bytes", xdp, storeBytes, "bpf_skb_store_bytes#9"),
		cannot("xdp l4_csum_replace", xdp, "r2 = 0\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_l4_csum_replace#11\n", "bpf_l4_csum_replace#11"),
		cannot("xdp skb_vlan_push", xdp, "call bpf_skb_vlan_push#18\n", "bpf_skb_vlan_push#18"),
		cannot("xdp get_socket_cookie", xdp, "call bpf_get_socket_cookie#46\n", "bpf_get_socket_cookie#46"),
		{name: "xdp skc_to_tcp6_sock", typ: xdp, btf: true, asm: "call bpf_skc_to_tcp6_sock#136\n" + out, err: "R1 type=ctx expected=sock_common, sock, tcp_sock, xdp_sock, ptr_, trusted_ptr_", kmsg: true},
		ok("xdp xdp_load_bytes", xdp, buf+"r2 = 0\nr3 = r10\nr3 += -8\nr4 = 8\ncall bpf_xdp_load_bytes#189\n"),
		{name: "xdp skc_to_udp6_sock", typ: xdp, btf: true, asm: "call bpf_skc_to_udp6_sock#140\n" + out, err: "R1 type=ctx expected=sock_common, sock, tcp_sock, xdp_sock, ptr_, trusted_ptr_", kmsg: true},
		// tc: tc_cls_act_func_proto, for both tc types.
		ok("cls store_bytes", cls, storeBytes),
		ok("act l3_csum_replace", act, "r2 = 0\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_l3_csum_replace#10\n"),
		ok("cls redirect", cls, "r1 = 1\nr2 = 0\ncall bpf_redirect#23\n"),
		cannot("cls xdp_adjust_head", cls, "r2 = 0\ncall bpf_xdp_adjust_head#44\n", "bpf_xdp_adjust_head#44"),
		cannot("act xdp_adjust_meta", act, "r2 = 0\ncall bpf_xdp_adjust_meta#54\n", "bpf_xdp_adjust_meta#54"),
		cannot("act xdp_adjust_tail", act, "r2 = 0\ncall bpf_xdp_adjust_tail#65\n", "bpf_xdp_adjust_tail#65"),
		cannot("cls redirect_map", cls, "r2 = 0\nr3 = 0\ncall bpf_redirect_map#51\n", "bpf_redirect_map#51"),
		cannot("cls xdp_get_buff_len", cls, "call bpf_xdp_get_buff_len#188\n", "bpf_xdp_get_buff_len#188"),
		lacking("cls skb_ecn_set_ce", cls, "call bpf_skb_ecn_set_ce#97\n", "bpf_skb_ecn_set_ce#97"),
		lacking("act skb_get_xfrm_state", act, "call bpf_skb_get_xfrm_state#66\n", "bpf_skb_get_xfrm_state#66"),
		ok("cls skb_pull_data", cls, "r2 = 0\ncall bpf_skb_pull_data#39\n"),
		ok("act skb_vlan_pop", act, "call bpf_skb_vlan_pop#19\n"),
		// Without CAP_BPF: the first tier of bpf_base_func_proto, the
		// type's own helpers and bpf_sk_base_func_proto's untiered one.
		unpriv(ok("socket load_bytes", sf, loadBytes)),
		unpriv(ok("socket ktime_get_ns", sf, "call bpf_ktime_get_ns#5\n")),
		unpriv(ok("socket ktime_get_coarse_ns", sf, "call bpf_ktime_get_coarse_ns#160\n")),
		unpriv(ok("socket get_prandom_u32", sf, "call bpf_get_prandom_u32#7\n")),
		unpriv(ok("socket get_current_uid_gid", sf, "call bpf_get_current_uid_gid#15\n")),
		unpriv(cannot("socket jiffies64", sf, "call bpf_jiffies64#118\n", "bpf_jiffies64#118")),
		unpriv(cannot("socket trace_printk", sf, buf+"r1 = r10\nr1 += -8\nr2 = 8\ncall bpf_trace_printk#6\n", "bpf_trace_printk#6")),
		unpriv(cannot("socket get_current_comm", sf, "r1 = r10\nr1 += -16\nr2 = 16\ncall bpf_get_current_comm#16\n", "bpf_get_current_comm#16")),
		unpriv(cannot("socket snprintf", sf, "call bpf_snprintf#165\n", "bpf_snprintf#165")),
		unpriv(cannot("socket skc_to_tcp_sock", sf, "call bpf_skc_to_tcp_sock#137\n", "bpf_skc_to_tcp_sock#137")),
		unpriv(cannot("socket store_bytes", sf, storeBytes, "bpf_skb_store_bytes#9")),
		unpriv(ok("socket get_netns_cookie", sf, "call bpf_get_netns_cookie#122\n")),
		unpriv(ok("socket get_socket_uid", sf, "call bpf_get_socket_uid#47\n")),
	})
}

// TestReturnRange checks the return values the networking types may
// give: none of them has a range in the kernel's check_return_code (XDP's
// unknown actions and tc's are handled at run time), so any scalar passes,
// and privileged programs may even return a pointer.
func TestReturnRange(t *testing.T) {
	var cases []vcase
	for _, typ := range []ebpf.ProgramType{ebpf.SocketFilter, ebpf.XDP, ebpf.SchedCLS, ebpf.SchedACT} {
		for _, r := range []struct{ name, asm string }{
			{"minus one", "r0 = -1\nexit"},
			{"large", "r0 = 0x7fffffff\nr0 <<= 8\nexit"},
			{"unknown", "r0 = *(u32 *)(r1 +0)\nexit"},
			{"context pointer", "r0 = r1\nexit"},
			{"stack pointer", "r0 = r10\nexit"},
		} {
			cases = append(cases, vcase{name: typ.String() + " " + r.name, typ: typ, asm: r.asm})
		}
		cases = append(cases, vcase{name: typ.String() + " unset", typ: typ, asm: "exit", err: "R0 !read_ok", kmsg: true})
	}
	runCases(t, cases)
}
