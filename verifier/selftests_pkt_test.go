package verifier_test

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf"
)

// pktCase builds an XDP (or, with typ, tc) program: r2 = data, r3 =
// data_end, then body, then "out: r0 = 0; exit".
func pktCase(name string, typ ebpf.ProgramType, body, err string) vcase {
	pre := xdpPkt
	if typ == ebpf.SchedCLS {
		pre = tcPkt
	}
	return vcase{name: name, typ: typ, asm: pre + body + "\nout: r0 = 0\nexit", err: err}
}

// withKmsg marks a case whose message the kernel prints word for word.
func withKmsg(c vcase) vcase {
	c.kmsg = true
	return c
}

// TestSelftestPacketCompare covers every form of the comparison between a
// packet pointer and the packet end, in both operand orders: which branch
// gets the range, and whether the bound is strict (one byte more).
func TestSelftestPacketCompare(t *testing.T) {
	const p14 = "r4 = r2\nr4 += 14\n"
	var cases []vcase
	for _, typ := range []ebpf.ProgramType{ebpf.XDP, ebpf.SchedCLS} {
		prefix := "xdp "
		if typ == ebpf.SchedCLS {
			prefix = "tc "
		}
		add := func(name, body, err string) {
			c := pktCase(prefix+name, typ, body, err)
			if err != "" && strings.HasPrefix(err, "invalid access to packet") {
				c.kmsg = true
			}
			cases = append(cases, c)
		}
		add("pkt > end fall-through", p14+"if r4 > r3 goto out\nr0 = *(u16 *)(r2 +12)", "")
		add("pkt > end fall-through past", p14+"if r4 > r3 goto out\nr0 = *(u8 *)(r2 +14)", "invalid access to packet, off=14 size=1, R2(id=0,off=14,r=14)")
		add("pkt > end taken", p14+"if r4 > r3 goto bad\ngoto out\nbad: r0 = *(u8 *)(r2 +0)", "invalid access to packet, off=0 size=1, R2(id=0,off=0,r=0)")
		add("pkt < end taken strict", p14+"if r4 < r3 goto ok\ngoto out\nok: r0 = *(u8 *)(r2 +14)", "")
		add("pkt < end taken past", p14+"if r4 < r3 goto ok\ngoto out\nok: r0 = *(u8 *)(r2 +15)", "invalid access to packet, off=15 size=1, R2(id=0,off=15,r=15)")
		add("pkt < end fall-through", p14+"if r4 < r3 goto out\nr0 = *(u8 *)(r2 +0)", "invalid access to packet, off=0 size=1, R2(id=0,off=0,r=0)")
		add("pkt >= end fall-through strict", p14+"if r4 >= r3 goto out\nr0 = *(u8 *)(r2 +14)", "")
		add("pkt >= end fall-through past", p14+"if r4 >= r3 goto out\nr0 = *(u16 *)(r2 +14)", "invalid access to packet, off=14 size=2, R2(id=0,off=14,r=15)")
		add("pkt <= end taken", p14+"if r4 <= r3 goto ok\ngoto out\nok: r0 = *(u16 *)(r2 +12)", "")
		add("pkt <= end taken past", p14+"if r4 <= r3 goto ok\ngoto out\nok: r0 = *(u8 *)(r2 +14)", "invalid access to packet, off=14 size=1, R2(id=0,off=14,r=14)")
		add("end < pkt fall-through", p14+"if r3 < r4 goto out\nr0 = *(u16 *)(r2 +12)", "")
		add("end < pkt fall-through past", p14+"if r3 < r4 goto out\nr0 = *(u8 *)(r2 +14)", "invalid access to packet, off=14 size=1, R2(id=0,off=14,r=14)")
		add("end > pkt taken strict", p14+"if r3 > r4 goto ok\ngoto out\nok: r0 = *(u8 *)(r2 +14)", "")
		add("end > pkt fall-through", p14+"if r3 > r4 goto out\nr0 = *(u8 *)(r2 +0)", "invalid access to packet, off=0 size=1, R2(id=0,off=0,r=0)")
		add("end >= pkt taken", p14+"if r3 >= r4 goto ok\ngoto out\nok: r0 = *(u16 *)(r2 +12)", "")
		add("end >= pkt taken past", p14+"if r3 >= r4 goto ok\ngoto out\nok: r0 = *(u8 *)(r2 +14)", "invalid access to packet, off=14 size=1, R2(id=0,off=14,r=14)")
		add("end <= pkt fall-through strict", p14+"if r3 <= r4 goto out\nr0 = *(u8 *)(r2 +14)", "")
		add("end <= pkt taken", p14+"if r3 <= r4 goto bad\ngoto out\nbad: r0 = *(u8 *)(r2 +0)", "invalid access to packet, off=0 size=1, R2(id=0,off=0,r=0)")
		add("32-bit compare gives no range", p14+"if w4 > w3 goto out\nr0 = *(u8 *)(r2 +0)", "invalid access to packet, off=0 size=1, R2(id=0,off=0,r=0)")
		add("compare with zero offset strict", "if r2 < r3 goto ok\ngoto out\nok: r0 = *(u8 *)(r2 +0)", "invalid access to packet")
		add("eq gives no range", p14+"if r4 == r3 goto ok\ngoto out\nok: r0 = *(u8 *)(r2 +0)", "invalid access to packet")
		add("ne gives no range", p14+"if r4 != r3 goto out\nr0 = *(u8 *)(r2 +0)", "invalid access to packet")
		add("signed compare gives no range", p14+"if r4 s> r3 goto out\nr0 = *(u8 *)(r2 +0)", "invalid access to packet")
		add("two checks keep larger", p14+"if r4 > r3 goto out\nr5 = r2\nr5 += 4\nif r5 > r3 goto out\nr0 = *(u8 *)(r2 +13)", "")
		add("negative offset", p14+"if r4 > r3 goto out\nr0 = *(u8 *)(r2 -1)", "invalid access to packet, off=-1 size=1, R2(id=0,off=-1,r=14)")
		add("offset past max", "r4 = r2\nr4 += 0x10000\nif r4 > r3 goto out\nr0 = *(u8 *)(r2 +0)", "invalid access to packet")
		add("offset at max", "r4 = r2\nr4 += 0xffff\nif r4 > r3 goto out\nr0 = *(u8 *)(r2 +0x7fff)", "")
		add("unaligned u32 read", p14+"if r4 > r3 goto out\nr0 = *(u32 *)(r2 +1)", "")
		add("write after check", p14+"if r4 > r3 goto out\n*(u32 *)(r2 +10) = 0", "")
		add("write past check", p14+"if r4 > r3 goto out\n*(u32 *)(r2 +11) = 0", "invalid access to packet, off=11 size=4, R2(id=0,off=11,r=14)")
		add("end vs end", "if r3 > r3 goto out\nr0 = *(u8 *)(r2 +0)", "invalid access to packet")
		add("pkt vs pkt", p14+"if r4 > r2 goto out\nr0 = *(u8 *)(r2 +0)", "invalid access to packet")
	}
	runCases(t, cases)
}

// TestSelftestPacketAccess covers variable offsets, range sharing between
// copies, metadata, helpers that move the packet, and LD_ABS/LD_IND.
func TestSelftestPacketAccess(t *testing.T) {
	const p14 = "r4 = r2\nr4 += 14\nif r4 > r3 goto out\n"
	x := ebpf.XDP
	tc := ebpf.SchedCLS
	runCases(t, []vcase{
		// Copies share the range.
		pktCase("copy before check", x, "r7 = r2\n"+p14+"r0 = *(u8 *)(r7 +13)", ""),
		pktCase("copy after check", x, p14+"r7 = r2\nr0 = *(u8 *)(r7 +13)", ""),
		pktCase("moved copy before check", x, "r7 = r2\nr7 += 4\n"+p14+"r0 = *(u64 *)(r7 +2)", ""),
		withKmsg(pktCase("moved copy past range", x, "r7 = r2\nr7 += 4\n"+p14+"r0 = *(u64 *)(r7 +3)", "invalid access to packet, off=7 size=8")),
		pktCase("checked pointer itself", x, p14+"r0 = *(u8 *)(r4 -1)", ""),
		pktCase("checked pointer at end", x, p14+"r0 = *(u8 *)(r4 +0)", "invalid access to packet, off=14 size=1, R4(id=0,off=14,r=14)"),
		pktCase("spilled copy", x, "*(u64 *)(r10 -8) = r2\n"+p14+"r7 = *(u64 *)(r10 -8)\nr0 = *(u8 *)(r7 +13)", ""),
		pktCase("spilled copy after adjust", x, "r6 = r1\n"+p14+"*(u64 *)(r10 -8) = r2\nr1 = r6\nr2 = 0\ncall bpf_xdp_adjust_head#44\nr7 = *(u64 *)(r10 -8)\nr0 = *(u8 *)(r7 +0)", "R7 invalid mem access 'scalar'"),
		// Variable offsets.
		pktCase("var offset checked", x, "r5 = *(u32 *)(r1 +12)\nr5 &= 0xf\nr4 = r2\nr4 += r5\nr6 = r4\nr6 += 4\nif r6 > r3 goto out\nr0 = *(u32 *)(r4 +0)", ""),
		pktCase("var offset checked past", x, "r5 = *(u32 *)(r1 +12)\nr5 &= 0xf\nr4 = r2\nr4 += r5\nr6 = r4\nr6 += 4\nif r6 > r3 goto out\nr0 = *(u32 *)(r4 +1)", "invalid access to packet, off=1 size=4"),
		pktCase("var offset unchecked", x, p14+"r5 = *(u8 *)(r2 +0)\nr2 += r5\nr0 = *(u8 *)(r2 +0)", "invalid access to packet, off=0 size=1"),
		pktCase("var offset other id", x, "r5 = *(u32 *)(r1 +12)\nr5 &= 0xf\nr7 = r2\nr7 += r5\n"+p14+"r0 = *(u8 *)(r7 +0)", "invalid access to packet"),
		pktCase("var offset too large", x, "r5 = *(u32 *)(r1 +12)\nr4 = r2\nr4 += r5\nr6 = r4\nr6 += 4\nif r6 > r3 goto out\nr0 = *(u32 *)(r4 +0)", "invalid access to packet"),
		pktCase("var offset bounded by check", x, "r5 = *(u32 *)(r1 +12)\nif r5 > 100 goto out\nr4 = r2\nr4 += r5\nr6 = r4\nr6 += 2\nif r6 > r3 goto out\nr0 = *(u16 *)(r4 +0)", ""),
		withKmsg(pktCase("var offset negative", x, "r5 = *(u32 *)(r1 +12)\nr5 &= 0xf\nr5 -= 4\nr4 = r2\nr4 += r5\nr6 = r4\nr6 += 2\nif r6 > r3 goto out\nr0 = *(u16 *)(r4 +0)", "R4 min value is negative, either use unsigned index or do a if (index >=0) check.")),
		pktCase("header length pattern", x, p14+"r5 = *(u8 *)(r2 +0)\nr5 &= 0xf\nr5 <<= 2\nr4 = r2\nr4 += r5\nr6 = r4\nr6 += 20\nif r6 > r3 goto out\nr0 = *(u32 *)(r4 +16)", ""),
		// Metadata.
		{name: "meta checked against data", asm: "r2 = *(u32 *)(r1 +8)\nr3 = *(u32 *)(r1 +0)\nr4 = r2\nr4 += 8\nif r4 > r3 goto out\nr0 = *(u64 *)(r2 +0)\nout: r0 = 0\nexit"},
		{name: "meta unchecked", asm: "r2 = *(u32 *)(r1 +8)\nr0 = *(u8 *)(r2 +0)\nexit", err: "invalid access to packet, off=0 size=1, R2(id=0,off=0,r=0)", kmsg: true},
		{name: "meta checked against end", asm: "r2 = *(u32 *)(r1 +8)\nr3 = *(u32 *)(r1 +4)\nr4 = r2\nr4 += 8\nif r4 > r3 goto out\nr0 = *(u64 *)(r2 +0)\nout: r0 = 0\nexit", err: "invalid access to packet"},
		{name: "meta reversed", asm: "r2 = *(u32 *)(r1 +8)\nr3 = *(u32 *)(r1 +0)\nr4 = r2\nr4 += 8\nif r3 >= r4 goto ok\nr0 = 0\nexit\nok: r0 = *(u64 *)(r2 +0)\nexit"},
		{name: "meta write", asm: "r2 = *(u32 *)(r1 +8)\nr3 = *(u32 *)(r1 +0)\nr4 = r2\nr4 += 4\nif r4 > r3 goto out\n*(u32 *)(r2 +0) = 1\nout: r0 = 0\nexit"},
		{name: "tc meta", typ: tc, asm: "r2 = *(u32 *)(r1 +140)\nr3 = *(u32 *)(r1 +76)\nr4 = r2\nr4 += 8\nif r4 > r3 goto out\nr0 = *(u64 *)(r2 +0)\nout: r0 = 0\nexit"},
		// Helpers that change the packet.
		pktCase("xdp adjust head invalidates", x, "r6 = r1\n"+p14+"r7 = r2\nr1 = r6\nr2 = 0\ncall bpf_xdp_adjust_head#44\nr0 = *(u8 *)(r7 +0)", "R7 invalid mem access 'scalar'"),
		pktCase("xdp adjust tail invalidates end", x, "r6 = r1\nr7 = r3\nr1 = r6\nr2 = 0\ncall bpf_xdp_adjust_tail#65\nr2 = *(u32 *)(r6 +0)\nr3 = r2\nr3 += 1\nif r3 > r7 goto out\nr0 = *(u8 *)(r2 +0)", "invalid access to packet, off=0 size=1, R2(id=0,off=0,r=0)"),
		pktCase("xdp adjust head reload", x, "r6 = r1\nr1 = r6\nr2 = 0\ncall bpf_xdp_adjust_head#44\nr2 = *(u32 *)(r6 +0)\nr3 = *(u32 *)(r6 +4)\n"+p14+"r0 = *(u8 *)(r2 +0)", ""),
		pktCase("xdp adjust meta invalidates", x, "r6 = r1\n"+p14+"r7 = r2\nr1 = r6\nr2 = -8\ncall bpf_xdp_adjust_meta#54\nr0 = *(u8 *)(r7 +0)", "R7 invalid mem access 'scalar'"),
		pktCase("tc store bytes invalidates", tc, "r6 = r1\n"+p14+"r7 = r2\n*(u32 *)(r10 -4) = 0\nr1 = r6\nr2 = 0\nr3 = r10\nr3 += -4\nr4 = 4\nr5 = 0\ncall bpf_skb_store_bytes#9\nr0 = *(u8 *)(r7 +0)", "R7 invalid mem access 'scalar'"),
		pktCase("tc load bytes keeps", tc, "r6 = r1\n"+p14+"r7 = r2\nr1 = r6\nr2 = 0\nr3 = r10\nr3 += -8\nr4 = 4\ncall bpf_skb_load_bytes#26\nr0 = *(u8 *)(r7 +0)", ""),
		pktCase("tc l3 csum invalidates", tc, "r6 = r1\n"+p14+"r7 = r2\nr1 = r6\nr2 = 0\nr3 = 0\nr4 = 0\nr5 = 2\ncall bpf_l3_csum_replace#10\nr0 = *(u8 *)(r7 +0)", "R7 invalid mem access 'scalar'"),
		pktCase("tc write packet", tc, p14+"*(u16 *)(r2 +12) = 0", ""),
		pktCase("pkt passed to helper", x, p14+"r1 = r2\nr2 = 14\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28\nr0 = 0", ""),
		pktCase("pkt passed to helper past range", x, p14+"r1 = r2\nr2 = 16\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28\nr0 = 0", "invalid access to packet"),
		// Program types.
		{name: "socket filter data", typ: ebpf.SocketFilter, asm: "r2 = *(u32 *)(r1 +76)\nr0 = 0\nexit", err: "invalid bpf_context access off=76 size=4", kmsg: true},
		{name: "ld abs", typ: ebpf.SocketFilter, asm: "r6 = r1\nr0 = *(u8 *)skb[12]\nr0 = *(u16 *)skb[12]\nr0 = *(u32 *)skb[12]\nexit"},
		{name: "ld ind", typ: ebpf.SocketFilter, asm: "r6 = r1\nr7 = 2\nr0 = *(u16 *)skb[r7 + 12]\nexit"},
		{name: "ld abs tc", typ: tc, asm: "r6 = r1\nr0 = *(u8 *)skb[0]\nexit"},
		{name: "ld abs without r6", typ: ebpf.SocketFilter, asm: "r0 = *(u8 *)skb[12]\nexit", err: "R6 !read_ok", kmsg: true},
		{name: "ld abs r6 not ctx", typ: ebpf.SocketFilter, asm: "r6 = r10\nr0 = *(u8 *)skb[12]\nexit", err: "at the time of BPF_LD_ABS|IND R6 != pointer to skb", kmsg: true},
		{name: "ld abs r6 modified ctx", typ: ebpf.SocketFilter, asm: "r6 = r1\nr6 += 8\nr0 = *(u8 *)skb[12]\nexit", err: "dereference of modified ctx ptr R6 off=8 disallowed", kmsg: true},
		{name: "ld abs clobbers r1", typ: ebpf.SocketFilter, asm: "r6 = r1\nr0 = *(u8 *)skb[12]\nr0 = r1\nexit", err: "R1 !read_ok", kmsg: true},
		{name: "ld abs keeps r7", typ: ebpf.SocketFilter, asm: "r6 = r1\nr7 = 1\nr0 = *(u8 *)skb[12]\nr0 = r7\nexit"},
		{name: "ld ind uninit", typ: ebpf.SocketFilter, asm: "r6 = r1\nr0 = *(u16 *)skb[r7 + 12]\nexit", err: "R7 !read_ok", kmsg: true},
		{name: "ld abs xdp", asm: "r6 = r1\nr0 = *(u8 *)skb[12]\nexit", err: "BPF_LD_[ABS|IND] instructions not allowed for this program type", kmsg: true},
	})
}
