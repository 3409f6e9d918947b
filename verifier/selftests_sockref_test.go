package verifier_test

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/maps"
)

// TestSelftestSockmapLookup covers a program's bpf_map_lookup_elem in a
// sockmap or sockhash: map_value_or_null holding a reference to the socket
// (the kernel's is_acquire_function), a full socket after the null check
// (mark_ptr_not_null_reg), to release with bpf_sk_release.
func TestSelftestSockmapLookup(t *testing.T) {
	tc := func(c vcase) vcase {
		c.typ = ebpf.SchedCLS
		return c
	}
	sm, sh := []maps.Spec{sockMap}, []maps.Spec{sockHash}
	checked := lookup4 + "if r0 == 0 goto out\n"
	release := "r1 = r6\ncall bpf_sk_release#86\n"
	out := "\nout: r0 = 0\nexit"
	runCases(t, []vcase{
		tc(vcase{name: "sockmap lookup released", maps: sm, asm: checked + "r1 = r0\ncall bpf_sk_release#86" + out, kmsg: true}),
		tc(vcase{name: "sockhash lookup released", maps: sh, asm: checked + "r1 = r0\ncall bpf_sk_release#86" + out, kmsg: true}),
		tc(vcase{name: "sockmap lookup unreleased", maps: sm, asm: checked + "r0 = 1\nexit" + out, err: "Unreleased reference", kmsg: true}),
		tc(vcase{name: "sockhash lookup unreleased", maps: sh, asm: checked + "r0 = 1\nexit" + out, err: "Unreleased reference", kmsg: true}),
		tc(vcase{name: "sockmap lookup not checked", maps: sm, asm: lookup4 + "r0 = 0\nexit", err: "Unreleased reference", kmsg: true}),
		tc(vcase{name: "sockmap null compare only", maps: sm, asm: lookup4 + "if r0 != 0 goto out\nr0 = 1\nexit" + "\nout: r1 = r0\ncall bpf_sk_release#86\nr0 = 0\nexit"}),
		// The fields of struct bpf_sock, through the socket.
		tc(vcase{name: "sockmap socket fields", maps: sm, asm: checked + "r6 = r0\nr2 = *(u32 *)(r6 +4)\nr2 = *(u32 *)(r6 +16)\nr2 = *(u32 *)(r6 +40)\nr2 = *(u32 *)(r6 +48)\n" + release + out}),
		tc(vcase{name: "sockmap socket write", maps: sm, asm: checked + "r6 = r0\n*(u32 *)(r6 +4) = 1\n" + release + out, err: "R6 cannot write into sock", kmsg: true}),
		tc(vcase{name: "sockmap socket past bpf_sock", maps: sm, asm: checked + "r6 = r0\nr2 = *(u32 *)(r6 +200)\n" + release + out, err: "R6 invalid sock access off=200 size=4", kmsg: true}),
		tc(vcase{name: "sockmap socket arithmetic", maps: sm, asm: checked + "r6 = r0\nr6 += 4\n" + release + out, err: "R6 pointer arithmetic on sock prohibited", kmsg: true}),
		// Before the null check it is a map value that may be NULL.
		tc(vcase{name: "sockmap use before the check", maps: sm, asm: lookup4 + "r2 = *(u32 *)(r0 +4)\nr0 = 0\nexit", err: "R0 invalid mem access 'map_value_or_null'", kmsg: true}),
		tc(vcase{name: "sockmap release before the check", maps: sm, asm: lookup4 + "r1 = r0\ncall bpf_sk_release#86\nr0 = 0\nexit", err: "R1 type=map_value_or_null expected=sock_common, sock, tcp_sock, xdp_sock, ptr_", kmsg: true}),
		tc(vcase{name: "sockmap arithmetic before the check", maps: sm, asm: lookup4 + "r0 += 4\nr0 = 0\nexit", err: "R0 pointer arithmetic on map_value_or_null prohibited", kmsg: true}),
		// Used after the release.
		tc(vcase{name: "sockmap use after release", maps: sm, asm: checked + "r6 = r0\n" + release + "r0 = *(u32 *)(r6 +4)\nr0 = 0\nexit" + out, err: "R6 invalid mem access 'scalar'", kmsg: true}),
		tc(vcase{name: "sockmap released twice", maps: sm, asm: checked + "r6 = r0\nr7 = r0\n" + release + "r1 = r7\ncall bpf_sk_release#86" + out, err: "R1 type=scalar expected=sock_common, sock, tcp_sock, xdp_sock, ptr_, trusted_ptr_", kmsg: true}),
		// The socket goes on to the socket helpers.
		tc(vcase{name: "sockmap socket to bpf_tcp_sock", maps: sm, asm: checked + "r6 = r0\nr1 = r0\ncall bpf_tcp_sock#96\nif r0 == 0 goto rel\nr2 = *(u32 *)(r0 +0)\nrel: " + release + out}),
		tc(vcase{name: "sockmap socket into a sockhash", maps: []maps.Spec{sockMap, sockHash}, asm: checked + "r6 = r0\n*(u32 *)(r10 -8) = 1\nr1 = map[fd:1] ll\nr2 = r10\nr2 += -8\nr3 = r6\nr4 = 0\ncall bpf_map_update_elem#2\n" + release + out}),
		tc(vcase{name: "sockmap unchecked into a sockhash", maps: []maps.Spec{sockMap, sockHash}, asm: lookup4 + "r6 = r0\n*(u32 *)(r10 -8) = 1\nr1 = map[fd:1] ll\nr2 = r10\nr2 += -8\nr3 = r6\nr4 = 0\ncall bpf_map_update_elem#2\nr0 = 0\nexit",
			err: "R3 type=map_value_or_null expected=sock_common, sock, tcp_sock, xdp_sock, ptr_", kmsg: true}),
		// A tail call or exit with the reference held.
		tc(vcase{name: "sockmap tail call with the reference", maps: []maps.Spec{sockMap, progArray}, asm: "r7 = r1\n" + checked + "r6 = r0\nr1 = r7\nr2 = map[fd:1] ll\nr3 = 0\ncall bpf_tail_call#12\n" + release + out, err: "tail_call would lead to reference leak", kmsg: true}),
		// An inner sockmap's lookup is the same.
		tc(vcase{name: "inner sockmap lookup released", maps: []maps.Spec{{Name: "outer", Type: maps.ArrayOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 2, InnerMap: &sockMap}},
			asm: lookup4 + "if r0 == 0 goto out\n*(u32 *)(r10 -8) = 0\nr1 = r0\nr2 = r10\nr2 += -8\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto out\nr1 = r0\ncall bpf_sk_release#86" + out, kmsg: true}),
		tc(vcase{name: "inner sockmap lookup unreleased", maps: []maps.Spec{{Name: "outer", Type: maps.ArrayOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 2, InnerMap: &sockMap}},
			asm: lookup4 + "if r0 == 0 goto out\n*(u32 *)(r10 -8) = 0\nr1 = r0\nr2 = r10\nr2 += -8\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto out\nr0 = 0\nexit" + out, err: "Unreleased reference", kmsg: true}),
		// Other socket maps.
		tc(vcase{name: "reuseport array lookup", maps: []maps.Spec{reuseArray}, asm: checked + "r0 = 0\nexit" + out, err: "cannot pass map_type 20 into func bpf_map_lookup_elem#1", kmsg: true}),
		tc(vcase{name: "sk storage lookup", maps: []maps.Spec{skStorage}, asm: checked + "r0 = 0\nexit" + out, err: "cannot pass map_type 24 into func bpf_map_lookup_elem#1", kmsg: true}),
	})
}

// TestSelftestSockmapLookupTypes compares, program type by program type,
// a sockmap lookup released, one leaked, and the redirect maps' lookups
// (xskmap, devmap) with the kernel's verdicts.
func TestSelftestSockmapLookupTypes(t *testing.T) {
	types := []struct {
		name    string
		typ     ebpf.ProgramType
		attach  ebpf.AttachType
		release bool // bpf_sk_release is the type's
		ret     string
	}{
		{"tc", ebpf.SchedCLS, 0, true, "r0 = 0"},
		{"tc action", ebpf.SchedACT, 0, true, "r0 = 0"},
		{"xdp", ebpf.XDP, 0, true, "r0 = 0"},
		{"cgroup_skb", ebpf.CGroupSKB, ebpf.AttachCGroupInetEgress, true, "r0 = 1"},
		{"sk_skb", ebpf.SkSKB, ebpf.AttachSkSKBStreamVerdict, true, "r0 = 0"},
		{"sk_lookup", ebpf.SkLookup, ebpf.AttachSkLookup, true, "r0 = 0"},
		{"cgroup_sock_addr", ebpf.CGroupSockAddr, ebpf.AttachCGroupInet4Connect, true, "r0 = 1"},
		{"socket_filter", ebpf.SocketFilter, 0, false, "r0 = 0"},
		{"sk_msg", ebpf.SkMsg, ebpf.AttachSkMsgVerdict, false, "r0 = 0"},
		{"sock_ops", ebpf.SockOps, 0, false, "r0 = 0"},
		{"sk_reuseport", ebpf.SkReuseport, ebpf.AttachSkReuseportSelect, false, "r0 = 0"},
		{"flow_dissector", ebpf.FlowDissector, 0, false, "r0 = 0"},
		{"cgroup_sock", ebpf.CGroupSock, ebpf.AttachCGroupInetSockCreate, false, "r0 = 1"},
		{"lwt_in", ebpf.LWTIn, 0, false, "r0 = 0"},
		{"kprobe", ebpf.Kprobe, 0, false, "r0 = 0"},
		{"tracepoint", ebpf.TracePoint, 0, false, "r0 = 0"},
		{"perf_event", ebpf.PerfEvent, 0, false, "r0 = 0"},
		{"raw_tracepoint", ebpf.RawTracepoint, 0, false, "r0 = 0"},
		{"cgroup_sysctl", ebpf.CGroupSysctl, ebpf.AttachCGroupSysctl, false, "r0 = 1"},
	}
	xsk := maps.Spec{Name: "xsk", Type: maps.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: 4}
	dev := maps.Spec{Name: "dev", Type: maps.DevMap, KeySize: 4, ValueSize: 8, MaxEntries: 4}
	checked := lookup4 + "if r0 == 0 goto out\n"
	var cases []vcase
	for _, pt := range types {
		out := "\nout: " + pt.ret + "\nexit"
		c := func(name string, m maps.Spec, asm, err string) vcase {
			return vcase{name: pt.name + " " + name, typ: pt.typ, attach: pt.attach, maps: []maps.Spec{m}, asm: asm, err: err, kmsg: err != ""}
		}
		rel := ""
		if !pt.release {
			rel = "program of this type cannot use helper bpf_sk_release#86"
		}
		cases = append(cases,
			c("sockmap lookup released", sockMap, checked+"r1 = r0\ncall bpf_sk_release#86"+out, rel),
			c("sockhash lookup released", sockHash, checked+"r1 = r0\ncall bpf_sk_release#86"+out, rel),
			c("sockmap lookup leaked", sockMap, checked+pt.ret+"\nexit"+out, "Unreleased reference"),
			c("sockmap socket read", sockMap, checked+"r1 = *(u32 *)(r0 +4)"+out, "Unreleased reference"),
			c("xskmap lookup", xsk, checked+"r1 = *(u32 *)(r0 +0)"+out, ""),
			c("devmap lookup", dev, checked+"r1 = *(u32 *)(r0 +0)"+out, ""),
		)
	}
	runCases(t, cases)
}
