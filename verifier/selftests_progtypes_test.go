package verifier_test

import (
	"fmt"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/maps"
)

// TestSelftestProgTypePackets covers the packet pointers of the socket and
// cgroup types through the verifier, compared with the kernel: 32-bit
// __sk_buff fields and 64-bit sk_msg_md, bpf_sock_ops, bpf_sockopt and
// sk_reuseport_md ones give packet pointers that bounds checks open, and
// the types that only read the packet (may_access_direct_pkt_data) may
// not write it.
func TestSelftestProgTypePackets(t *testing.T) {
	const (
		skb     = "r2 = *(u32 *)(r1 +76)\nr3 = *(u32 *)(r1 +80)\n"
		msg     = "r2 = *(u64 *)(r1 +0)\nr3 = *(u64 *)(r1 +8)\n"
		ops     = "r2 = *(u64 *)(r1 +192)\nr3 = *(u64 *)(r1 +200)\n"
		opt     = "r2 = *(u64 *)(r1 +8)\nr3 = *(u64 *)(r1 +16)\n"
		check   = "r4 = r2\nr4 += 4\nif r4 > r3 goto out\n"
		read    = "r0 = *(u32 *)(r2 +0)\n"
		write   = "*(u32 *)(r2 +0) = 1\n"
		out     = "out: r0 = 1\nexit"
		nocheck = "r0 = *(u32 *)(r2 +0)\n"
	)
	c := func(name string, typ ebpf.ProgramType, attach ebpf.AttachType, asm, err string) vcase {
		return vcase{name: name, typ: typ, attach: attach, asm: asm + out, err: err, kmsg: err != ""}
	}
	in, eg := ebpf.AttachCGroupInetIngress, ebpf.AttachCGroupInetEgress
	runCases(t, []vcase{
		c("cgroup_skb read", ebpf.CGroupSKB, in, skb+check+read, ""),
		c("cgroup_skb egress read", ebpf.CGroupSKB, eg, skb+check+read, ""),
		c("cgroup_skb unchecked", ebpf.CGroupSKB, in, skb+nocheck, "invalid access to packet, off=0 size=4, R2(id=0,off=0,r=0)"),
		c("cgroup_skb write", ebpf.CGroupSKB, in, skb+check+write, "cannot write into packet"),
		c("lwt_in write", ebpf.LWTIn, 0, skb+check+write, "cannot write into packet"),
		c("lwt_out write", ebpf.LWTOut, 0, skb+check+write, "cannot write into packet"),
		c("lwt_xmit write", ebpf.LWTXmit, 0, skb+check+write, ""),
		c("lwt_in read", ebpf.LWTIn, 0, skb+check+read, ""),
		c("sk_skb write", ebpf.SkSKB, 0, skb+check+write, ""),
		c("sk_skb unchecked", ebpf.SkSKB, 0, skb+nocheck, "invalid access to packet, off=0 size=4, R2(id=0,off=0,r=0)"),
		c("sk_msg read", ebpf.SkMsg, 0, msg+check+read, ""),
		c("sk_msg write", ebpf.SkMsg, 0, msg+check+write, ""),
		c("sk_msg unchecked", ebpf.SkMsg, 0, msg+nocheck, "invalid access to packet, off=0 size=4, R2(id=0,off=0,r=0)"),
		c("sock_ops read", ebpf.SockOps, 0, ops+check+read, ""),
		c("sock_ops write", ebpf.SockOps, 0, ops+check+write, "cannot write into packet"),
		c("sockopt read", ebpf.CGroupSockopt, ebpf.AttachCGroupGetsockopt, opt+check+read, ""),
		c("sockopt write", ebpf.CGroupSockopt, ebpf.AttachCGroupSetsockopt, opt+check+write, ""),
		c("sk_reuseport read", ebpf.SkReuseport, ebpf.AttachSkReuseportSelect, msg+check+read, ""),
		c("sk_reuseport write", ebpf.SkReuseport, ebpf.AttachSkReuseportSelect, msg+check+write, "cannot write into packet"),
		// A 32-bit load of a 64-bit packet pointer field.
		c("sk_msg data u32", ebpf.SkMsg, 0, "r2 = *(u32 *)(r1 +0)\n", "invalid bpf_context access off=0 size=4"),
		c("sockopt optval_end u32", ebpf.CGroupSockopt, ebpf.AttachCGroupSetsockopt, "r2 = *(u32 *)(r1 +16)\n", "invalid bpf_context access off=16 size=4"),
		// data and data_end of cgroup_skb need CAP_BPF (cg_skb_is_valid_access).
		{name: "cgroup_skb data unprivileged", typ: ebpf.CGroupSKB, asm: skb + out, err: "invalid bpf_context access off=76 size=4", unpriv: true},
		{name: "cgroup_skb mark unprivileged", typ: ebpf.CGroupSKB, asm: "r2 = *(u32 *)(r1 +8)\n" + out, unpriv: true},
		{name: "cgroup_skb tstamp write unprivileged", typ: ebpf.CGroupSKB, asm: "r2 = 1\n*(u64 *)(r1 +152) = r2\n" + out, err: "invalid bpf_context access off=152 size=8", unpriv: true},
		c("cgroup_skb tstamp write", ebpf.CGroupSKB, in, "r2 = 1\n*(u64 *)(r1 +152) = r2\n", ""),
	})
}

// TestSelftestReturnRanges covers check_return_code's ranges per type and
// attach type, compared with the kernel's verdict and message.
func TestSelftestReturnRanges(t *testing.T) {
	ret := func(v int) string { return fmt.Sprintf("r0 = %d\nexit", v) }
	bad := func(v, lo, hi int) string {
		return fmt.Sprintf("At program exit the register R0 has smin=%d smax=%d should have been in [%d, %d]", v, v, lo, hi)
	}
	c := func(name string, typ ebpf.ProgramType, attach ebpf.AttachType, v int, err string) vcase {
		return vcase{name: name, typ: typ, attach: attach, asm: ret(v), err: err, kmsg: err != ""}
	}
	runCases(t, []vcase{
		c("cgroup_skb ingress 1", ebpf.CGroupSKB, ebpf.AttachCGroupInetIngress, 1, ""),
		c("cgroup_skb ingress 2", ebpf.CGroupSKB, ebpf.AttachCGroupInetIngress, 2, bad(2, 0, 1)),
		c("cgroup_skb egress 3", ebpf.CGroupSKB, ebpf.AttachCGroupInetEgress, 3, ""),
		c("cgroup_skb egress 4", ebpf.CGroupSKB, ebpf.AttachCGroupInetEgress, 4, bad(4, 0, 3)),
		c("cgroup_skb egress -1", ebpf.CGroupSKB, ebpf.AttachCGroupInetEgress, -1, bad(-1, 0, 3)),
		c("sock_ops 1", ebpf.SockOps, 0, 1, ""),
		c("sock_ops 2", ebpf.SockOps, 0, 2, bad(2, 0, 1)),
		c("cgroup_sock create 2", ebpf.CGroupSock, ebpf.AttachCGroupInetSockCreate, 2, bad(2, 0, 1)),
		c("cgroup_sock post_bind 0", ebpf.CGroupSock, ebpf.AttachCGroupInet6PostBind, 0, ""),
		c("bind4 3", ebpf.CGroupSockAddr, ebpf.AttachCGroupInet4Bind, 3, ""),
		c("bind6 4", ebpf.CGroupSockAddr, ebpf.AttachCGroupInet6Bind, 4, bad(4, 0, 3)),
		c("connect4 2", ebpf.CGroupSockAddr, ebpf.AttachCGroupInet4Connect, 2, bad(2, 0, 1)),
		c("connect_unix 0", ebpf.CGroupSockAddr, ebpf.AttachCgroupUnixConnect, 0, ""),
		c("getpeername4 0", ebpf.CGroupSockAddr, ebpf.AttachCgroupInet4GetPeername, 0, bad(0, 1, 1)),
		c("getsockname6 1", ebpf.CGroupSockAddr, ebpf.AttachCgroupInet6GetSockname, 1, ""),
		c("recvmsg_unix 0", ebpf.CGroupSockAddr, ebpf.AttachCgroupUnixRecvmsg, 0, bad(0, 1, 1)),
		c("recvmsg4 2", ebpf.CGroupSockAddr, ebpf.AttachCGroupUDP4Recvmsg, 2, bad(2, 1, 1)),
		c("sendmsg6 0", ebpf.CGroupSockAddr, ebpf.AttachCGroupUDP6Sendmsg, 0, ""),
		c("sk_lookup 2", ebpf.SkLookup, ebpf.AttachSkLookup, 2, bad(2, 0, 1)),
		c("sk_lookup 1", ebpf.SkLookup, ebpf.AttachSkLookup, 1, ""),
		c("sysctl 2", ebpf.CGroupSysctl, 0, 2, bad(2, 0, 1)),
		c("sockopt 2", ebpf.CGroupSockopt, ebpf.AttachCGroupGetsockopt, 2, bad(2, 0, 1)),
		c("device 2", ebpf.CGroupDevice, 0, 2, bad(2, 0, 1)),
		// The types without a range return anything.
		c("sk_skb 7", ebpf.SkSKB, 0, 7, ""),
		c("sk_msg -1", ebpf.SkMsg, 0, -1, ""),
		c("sk_reuseport 9", ebpf.SkReuseport, 0, 9, ""),
		c("lwt_xmit 5", ebpf.LWTXmit, 0, 5, ""),
		// An unknown value.
		{name: "cgroup_skb unknown", typ: ebpf.CGroupSKB, asm: "r0 = *(u32 *)(r1 +0)\nexit", err: "At program exit the register R0 has smin=0 smax=4294967295 should have been in [0, 1]", kmsg: true},
		{name: "cgroup_skb masked", typ: ebpf.CGroupSKB, asm: "r0 = *(u32 *)(r1 +0)\nr0 &= 1\nexit"},
		{name: "sock_ops pointer", typ: ebpf.SockOps, asm: "r0 = r1\nexit", err: "R0 is not a known value (ctx)", kmsg: true},
	})
}

// TestSelftestFlowKeys covers __sk_buff.flow_keys of flow_dissector
// programs, a struct bpf_flow_keys pointer, compared with the kernel:
// plain memory of its 56 bytes, any size and alignment, moved by
// constants only, no atomics; spilled and filled like other pointers.
func TestSelftestFlowKeys(t *testing.T) {
	const keys = "r2 = *(u64 *)(r1 +144)\n"
	c := func(name, asm, err string) vcase {
		return vcase{name: name, typ: ebpf.FlowDissector, asm: asm + "r0 = 0\nexit", err: err, kmsg: err != ""}
	}
	runCases(t, []vcase{
		c("read last u32", keys+"r0 = *(u32 *)(r2 +52)\n", ""),
		c("read past end", keys+"r0 = *(u32 *)(r2 +54)\n", "invalid access to flow keys off=54 size=4"),
		c("misaligned u16", keys+"r0 = *(u16 *)(r2 +1)\n", ""),
		c("u64 at 48", keys+"r0 = *(u64 *)(r2 +48)\n", ""),
		c("sign-extending", keys+"r0 = *(s32 *)(r2 +0)\n", ""),
		c("write", keys+"*(u32 *)(r2 +48) = 1\n", ""),
		c("write negative", keys+"*(u32 *)(r2 -4) = 1\n", "invalid access to flow keys off=-4 size=4"),
		c("constant offset", keys+"r2 += 4\nr0 = *(u32 *)(r2 +0)\n", ""),
		c("constant offset past end", keys+"r2 += 4\nr0 = *(u32 *)(r2 +52)\n", "invalid access to flow keys off=56 size=4"),
		c("subtract", keys+"r2 -= 4\n", ""),
		c("variable offset", "r6 = r1\ncall bpf_get_prandom_u32#7\nr2 = *(u64 *)(r6 +144)\nr0 &= 4\nr2 += r0\nr0 = *(u32 *)(r2 +0)\n", "R2 pointer arithmetic on flow_keys prohibited"),
		c("atomic", keys+"r3 = 1\nlock *(u32 *)(r2 +0) += r3\n", "BPF_ATOMIC stores into R2 flow_keys is not allowed"),
		c("spill fill", keys+"*(u64 *)(r10 -8) = r2\nr3 = *(u64 *)(r10 -8)\n*(u8 *)(r3 +0) = 1\n", ""),
		c("pointer stored", keys+"*(u64 *)(r2 +0) = r1\n", ""),
		c("narrow pointer load", "r2 = *(u32 *)(r1 +144)\n", "invalid bpf_context access off=144 size=4"),
		c("misaligned pointer load", "r2 = *(u64 *)(r1 +145)\n", "invalid bpf_context access off=145 size=8"),
		c("not a context", keys+"r1 = r2\nr2 = 0\nr3 = r10\nr3 += -8\nr4 = 4\ncall bpf_skb_load_bytes#26\n", "R1 type=flow_keys expected=ctx"),
		c("packet read", "r2 = *(u32 *)(r1 +76)\nr3 = *(u32 *)(r1 +80)\nr4 = r2\nr4 += 4\nif r4 > r3 goto +1\nr0 = *(u32 *)(r2 +0)\n", ""),
		c("packet write", "r2 = *(u32 *)(r1 +76)\nr3 = *(u32 *)(r1 +80)\nr4 = r2\nr4 += 4\nif r4 > r3 goto +1\n*(u32 *)(r2 +0) = 1\n", "cannot write into packet"),
		{name: "returns a pointer", typ: ebpf.FlowDissector, asm: keys + "r0 = r2\nexit"},
		{name: "unprivileged leak", typ: ebpf.FlowDissector, asm: keys + "*(u64 *)(r2 +0) = r1\nr0 = 0\nexit", err: "R1 leaks addr into flow keys", unpriv: true},
	})
}

// TestSelftestSockCommon covers __sk_buff.sk, a nullable struct
// bpf_sock_common pointer, compared with the kernel: read after a null
// check, the fields bpf_sock_common_is_valid_access allows at the sizes it
// allows, never written or moved.
func TestSelftestSockCommon(t *testing.T) {
	const (
		sk      = "r2 = *(u64 *)(r1 +168)\n"
		checked = sk + "if r2 == 0 goto out\n"
		out     = "out: r0 = 0\nexit"
	)
	c := func(name string, typ ebpf.ProgramType, asm, err string) vcase {
		return vcase{name: name, typ: typ, asm: asm + out, err: err, kmsg: err != ""}
	}
	tc, sf, cg, sks, lwt := ebpf.SchedCLS, ebpf.SocketFilter, ebpf.CGroupSKB, ebpf.SkSKB, ebpf.LWTXmit
	runCases(t, []vcase{
		c("family", tc, checked+"r0 = *(u32 *)(r2 +4)\n", ""),
		c("family byte", sf, checked+"r0 = *(u8 *)(r2 +4)\n", ""),
		c("family high byte", tc, checked+"r0 = *(u8 *)(r2 +5)\n", "R2 invalid sock_common access off=5 size=1"),
		c("src_ip6 narrow", cg, checked+"r0 = *(u16 *)(r2 +30)\n", ""),
		c("dst_port u32", tc, checked+"r0 = *(u32 *)(r2 +48)\n", ""),
		c("dst_port second byte", sks, checked+"r0 = *(u8 *)(r2 +49)\n", ""),
		c("dst_port padding", tc, checked+"r0 = *(u16 *)(r2 +50)\n", "R2 invalid sock_common access off=50 size=2"),
		c("state", lwt, checked+"r0 = *(u32 *)(r2 +72)\n", ""),
		c("type", tc, checked+"r0 = *(u32 *)(r2 +8)\n", "R2 invalid sock_common access off=8 size=4"),
		c("mark", tc, checked+"r0 = *(u32 *)(r2 +16)\n", "R2 invalid sock_common access off=16 size=4"),
		c("past the end", tc, checked+"r0 = *(u32 *)(r2 +80)\n", "R2 invalid sock_common access off=80 size=4"),
		c("u64", tc, checked+"r0 = *(u64 *)(r2 +24)\n", "R2 invalid sock_common access off=24 size=8"),
		c("signed", tc, checked+"r0 = *(s32 *)(r2 +4)\n", ""),
		c("unchecked", tc, sk+"r0 = *(u32 *)(r2 +4)\n", "R2 invalid mem access 'sock_common_or_null'"),
		c("write", tc, checked+"*(u32 *)(r2 +4) = 1\n", "R2 cannot write into sock_common"),
		c("write unchecked", tc, sk+"r3 = 1\n*(u32 *)(r2 +16) = r3\n", "R2 invalid mem access 'sock_common_or_null'"),
		c("arithmetic", tc, checked+"r2 += 4\n", "R2 pointer arithmetic on sock_common prohibited"),
		c("arithmetic unchecked", tc, sk+"r2 += 4\n", "R2 pointer arithmetic on sock_common_or_null prohibited, null-check it first"),
		c("atomic", tc, checked+"r3 = 1\nlock *(u32 *)(r2 +4) += r3\n", "BPF_ATOMIC stores into R2 sock_common is not allowed"),
		c("copy keeps the check", tc, sk+"r3 = r2\nif r2 == 0 goto out\nr0 = *(u32 *)(r3 +4)\n", ""),
		c("spill fill", tc, checked+"*(u64 *)(r10 -8) = r2\nr3 = *(u64 *)(r10 -8)\nr0 = *(u32 *)(r3 +76)\n", ""),
		c("narrow pointer load", tc, "r2 = *(u32 *)(r1 +168)\n", "invalid bpf_context access off=168 size=4"),
		c("pointer write", tc, "*(u64 *)(r1 +168) = r1\n", "invalid bpf_context access off=168 size=8"),
		c("flow_dissector", ebpf.FlowDissector, "r2 = *(u64 *)(r1 +168)\n", "invalid bpf_context access off=168 size=8"),
	})
}

// TestSelftestSock covers the struct bpf_sock pointers of the socket types'
// contexts, compared with the kernel: sk_msg_md.sk is never null,
// bpf_sock_ops.sk and bpf_sk_lookup.sk are null-checked first; all of a
// bpf_sock's fields read as bpf_sock_is_valid_access allows, never
// written; sk_reuseport_md.migrating_sk a nullable sock_common.
func TestSelftestSock(t *testing.T) {
	const out = "out: r0 = 1\nexit"
	c := func(name string, typ ebpf.ProgramType, attach ebpf.AttachType, asm, err string) vcase {
		return vcase{name: name, typ: typ, attach: attach, asm: asm + out, err: err, kmsg: err != ""}
	}
	msg := "r2 = *(u64 *)(r1 +72)\n"
	ops := "r2 = *(u64 *)(r1 +184)\n"
	lookup := "r2 = *(u64 *)(r1 +0)\n"
	mig := "r2 = *(u64 *)(r1 +48)\n"
	sl, rs := ebpf.AttachSkLookup, ebpf.AttachSkReuseportSelectOrMigrate
	runCases(t, []vcase{
		c("sk_msg mark", ebpf.SkMsg, 0, msg+"r0 = *(u32 *)(r2 +16)\n", ""),
		c("sk_msg type byte", ebpf.SkMsg, 0, msg+"r0 = *(u8 *)(r2 +8)\n", ""),
		c("sk_msg protocol high byte", ebpf.SkMsg, 0, msg+"r0 = *(u8 *)(r2 +13)\n", "R2 invalid sock access off=13 size=1"),
		c("sk_msg mark narrow", ebpf.SkMsg, 0, msg+"r0 = *(u16 *)(r2 +16)\n", "R2 invalid sock access off=16 size=2"),
		c("sk_msg write", ebpf.SkMsg, 0, msg+"*(u32 *)(r2 +16) = 1\n", "R2 cannot write into sock"),
		c("sk_msg arithmetic", ebpf.SkMsg, 0, msg+"r2 += 8\n", "R2 pointer arithmetic on sock prohibited"),
		c("sk_msg null check", ebpf.SkMsg, 0, msg+"if r2 == 0 goto out\nr0 = *(u32 *)(r2 +4)\n", ""),
		c("sk_msg sk u32", ebpf.SkMsg, 0, "r2 = *(u32 *)(r1 +72)\n", "invalid bpf_context access off=72 size=4"),
		c("sock_ops unchecked", ebpf.SockOps, 0, ops+"r0 = *(u32 *)(r2 +4)\n", "R2 invalid mem access 'sock_or_null'"),
		c("sock_ops checked", ebpf.SockOps, 0, ops+"if r2 == 0 goto out\nr0 = *(u32 *)(r2 +20)\n", ""),
		c("sock_ops past the end", ebpf.SockOps, 0, ops+"if r2 == 0 goto out\nr0 = *(u32 *)(r2 +80)\n", "R2 invalid sock access off=80 size=4"),
		c("sk_lookup checked", ebpf.SkLookup, sl, lookup+"if r2 == 0 goto out\nr0 = *(u32 *)(r2 +12)\n", ""),
		c("sk_lookup unchecked", ebpf.SkLookup, sl, lookup+"r0 = *(u32 *)(r2 +12)\n", "R2 invalid mem access 'sock_or_null'"),
		c("sk_lookup cookie u32", ebpf.SkLookup, sl, "r2 = *(u32 *)(r1 +0)\n", "invalid bpf_context access off=0 size=4"),
		c("connect4 sk", ebpf.CGroupSockAddr, ebpf.AttachCGroupInet4Connect, "r2 = *(u64 *)(r1 +64)\nr0 = *(u32 *)(r2 +20)\n", ""),
		c("sendmsg6 sk write", ebpf.CGroupSockAddr, ebpf.AttachCGroupUDP6Sendmsg, "r2 = *(u64 *)(r1 +64)\n*(u32 *)(r2 +16) = 1\n", "R2 cannot write into sock"),
		c("recvmsg4 sk narrow", ebpf.CGroupSockAddr, ebpf.AttachCGroupUDP4Recvmsg, "r2 = *(u64 *)(r1 +64)\nr0 = *(u8 *)(r2 +25)\n", ""),
		c("migrating_sk checked", ebpf.SkReuseport, rs, mig+"if r2 == 0 goto out\nr0 = *(u32 *)(r2 +4)\n", ""),
		c("migrating_sk mark", ebpf.SkReuseport, rs, mig+"if r2 == 0 goto out\nr0 = *(u32 *)(r2 +16)\n", "R2 invalid sock_common access off=16 size=4"),
	})
}

// TestSelftestTracing covers the tracing types' context rules (the
// exhaustive comparison is TestCtxFieldsExhaustive), return ranges and
// helper arguments, compared with the kernel's verdict and message.
func TestSelftestTracing(t *testing.T) {
	kp, tp, raw, pe, rw := ebpf.Kprobe, ebpf.TracePoint, ebpf.RawTracepoint, ebpf.PerfEvent, ebpf.RawTracepointWritable
	stackMap := maps.Spec{Type: maps.StackTrace, KeySize: 4, ValueSize: 8 * 16, MaxEntries: 16}
	hash := maps.Spec{Type: maps.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 1}
	bad := func(off, size int) string { return fmt.Sprintf("invalid bpf_context access off=%d size=%d", off, size) }
	c := func(name string, typ ebpf.ProgramType, asm, err string) vcase {
		return vcase{name: name, typ: typ, asm: asm, err: err, kmsg: err != ""}
	}
	ld := func(size string, off int) string { return fmt.Sprintf("r0 = *(%s *)(r1 +%d)\nr0 = 0\nexit", size, off) }
	// A buffer of 16 bytes at fp-16, uninitialised, for a helper to fill.
	call := func(fn string, args string) string {
		return "r6 = r1\nr1 = r10\nr1 += -16\n" + args + "call " + fn + "\nr0 = 0\nexit"
	}
	runCases(t, []vcase{
		c("kprobe ip", kp, ld("u64", 128), ""),
		c("kprobe ss low half", kp, ld("u32", 160), ""),
		c("kprobe ss high half", kp, ld("u32", 164), ""),
		c("kprobe byte of sp", kp, ld("u8", 155), ""),
		c("kprobe u64 misaligned", kp, ld("u64", 164), bad(164, 8)),
		c("kprobe past the end", kp, ld("u8", 168), bad(168, 1)),
		c("kprobe store", kp, "r2 = 1\n*(u64 *)(r1 +80) = r2\nr0 = 0\nexit", bad(80, 8)),
		c("kprobe moved ctx", kp, "r1 += 8\nr0 = *(u64 *)(r1 +0)\nr0 = 0\nexit", "dereference of modified ctx ptr R1 off=8 disallowed"),
		c("tracepoint common fields", tp, ld("u32", 4), bad(4, 4)),
		c("tracepoint first field", tp, ld("u64", 8), ""),
		c("tracepoint last byte", tp, ld("u8", 8191), ""),
		c("tracepoint last half misaligned", tp, ld("u16", 8191), bad(8191, 2)),
		c("tracepoint past the end", tp, ld("u64", 8192), bad(8192, 8)),
		c("raw_tp arg high half", raw, ld("u32", 4), ""),
		c("raw_tp last arg", raw, ld("u64", 88), ""),
		c("raw_tp past the args", raw, ld("u64", 96), bad(96, 8)),
		c("raw_tp store", raw, "*(u64 *)(r1 +0) = 1\nr0 = 0\nexit", bad(0, 8)),
		c("perf_event reg half", pe, ld("u32", 0), bad(0, 4)),
		c("perf_event reg", pe, ld("u64", 128), ""),
		c("perf_event period high half", pe, ld("u32", 172), ""),
		c("perf_event addr byte", pe, ld("u8", 183), ""),
		c("perf_event past the end", pe, ld("u64", 184), bad(184, 8)),
		// No return ranges but sessions'.
		c("kprobe returns -1", kp, "r0 = -1\nexit", ""),
		c("raw_tp returns 7", raw, "r0 = 7\nexit", ""),
		{name: "kprobe session 2", typ: kp, attach: ebpf.AttachTraceKprobeSession, asm: "r0 = 2\nexit",
			err: "At program exit the register R0 has smin=2 smax=2 should have been in [0, 1]", kmsg: true},
		// The probe reads fill uninitialised buffers from any address.
		c("probe_read_kernel", kp, call("bpf_probe_read_kernel", "r2 = 16\nr3 = 0\n")+"", ""),
		c("probe_read_user_str from a register", kp, call("bpf_probe_read_user_str", "r2 = 16\nr3 = *(u64 *)(r6 +112)\n"), ""),
		c("probe_read too long", tp, call("bpf_probe_read", "r2 = 17\nr3 = 0\n"), "invalid write to stack R1 off=-16 size=17"),
		c("probe_read_kernel unbounded", raw, "r6 = r1\nr2 = *(u64 *)(r6 +0)\nr1 = r10\nr1 += -16\nr3 = 0\ncall bpf_probe_read_kernel\nr0 = 0\nexit",
			"R2 min value is negative, either use unsigned or 'var &= const'"),
		// Raw tracepoints' bpf_get_stack takes initialised, read-only
		// memory (ARG_PTR_TO_MEM | MEM_RDONLY), which privileged loads
		// may leave uninitialised on the stack (allow_uninit_stack); the
		// helper writes it, so bpfvm's refuses memory the program may
		// not write at run time (-EFAULT).
		c("raw_tp get_stack uninit", raw, "r2 = r10\nr2 += -16\nr3 = 16\nr4 = 0\ncall bpf_get_stack\nr0 = 0\nexit", ""),
		c("kprobe get_stack uninit", kp, "r2 = r10\nr2 += -16\nr3 = 16\nr4 = 0\ncall bpf_get_stack\nr0 = 0\nexit", ""),
		c("perf_prog_read_value", pe, "r2 = r10\nr2 += -24\nr3 = 24\ncall bpf_perf_prog_read_value\nr0 = 0\nexit", ""),
		c("perf_prog_read_value not ctx", pe, "r1 = r10\nr2 = r10\nr2 += -24\nr3 = 24\ncall bpf_perf_prog_read_value\nr0 = 0\nexit", "R1 type=fp expected=ctx"),
		c("kprobe get_func_ip", kp, "call bpf_get_func_ip\nr0 = 0\nexit", ""),
		c("tracepoint get_func_ip", tp, "call bpf_get_func_ip\nr0 = 0\nexit", "func bpf_get_func_ip#173 not supported for program type 5"),
		c("raw_tp get_func_ip", raw, "call bpf_get_func_ip\nr0 = 0\nexit", "func bpf_get_func_ip#173 not supported for program type 17"),
		c("perf_event get_func_ip", pe, "call bpf_get_func_ip\nr0 = 0\nexit", "func bpf_get_func_ip#173 not supported for program type 7"),
		c("send_signal", tp, "r1 = 10\ncall bpf_send_signal\nr0 = 0\nexit", ""),
		// bpf_get_stackid takes stack trace maps only, which nothing
		// else takes.
		{name: "get_stackid", typ: kp, maps: []maps.Spec{stackMap}, asm: "r2 = map[fd:0] ll\nr3 = 0\ncall bpf_get_stackid\nr0 = 0\nexit"},
		{name: "get_stackid of a hash", typ: tp, maps: []maps.Spec{hash}, asm: "r2 = map[fd:0] ll\nr3 = 0\ncall bpf_get_stackid\nr0 = 0\nexit",
			err: "cannot pass map_type 1 into func bpf_get_stackid#27", kmsg: true},
		{name: "lookup in a stack trace map", typ: raw, maps: []maps.Spec{stackMap}, asm: "*(u32 *)(r10 -4) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem\nr0 = 0\nexit",
			err: "cannot pass map_type 7 into func bpf_map_lookup_elem#1", kmsg: true},
		// raw_tracepoint_writable's buffer: the first argument, read
		// whole, then read and written at constant offsets.
		c("tp buffer write", rw, "r1 = *(u64 *)(r1 +0)\n*(u64 *)(r1 +64) = 7\nr0 = *(u32 *)(r1 +4)\nexit", ""),
		c("tp buffer atomic", rw, "r1 = *(u64 *)(r1 +0)\nr2 = 1\nlock *(u64 *)(r1 +8) += r2\nr0 = 0\nexit", ""),
		c("tp buffer half load", rw, ld("u32", 0), bad(0, 4)),
		c("tp buffer arg", rw, ld("u64", 8), ""),
		c("tp buffer store to ctx", rw, "r2 = 1\n*(u64 *)(r1 +0) = r2\nr0 = 0\nexit", bad(0, 8)),
		c("tp buffer negative", rw, "r1 = *(u64 *)(r1 +0)\nr0 = *(u8 *)(r1 -1)\nexit", "R1 invalid tracepoint buffer access: off=-1, size=1"),
		c("tp buffer moved", rw, "r1 = *(u64 *)(r1 +0)\nr1 += 8\nr0 = *(u64 *)(r1 -8)\nexit", ""),
		c("tp buffer variable", rw, "r2 = *(u64 *)(r1 +8)\nr1 = *(u64 *)(r1 +0)\nr2 &= 7\nr1 += r2\nr0 = *(u8 *)(r1 +0)\nexit", "R1 invalid variable buffer offset: off=0, var_off=(0x0; 0x7)"),
		c("tp buffer to a helper", rw, "r1 = *(u64 *)(r1 +0)\nr2 = 8\nr3 = 0\ncall bpf_probe_read_kernel\nr0 = 0\nexit", "R1 type=tp_buffer expected=fp"),
		c("perf_prog_read_value in kprobe", kp, "r2 = r10\nr2 += -24\nr3 = 24\ncall bpf_perf_prog_read_value\nr0 = 0\nexit", "program of this type cannot use helper bpf_perf_prog_read_value#56"),
	})
}
