package verifier_test

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/maps"
)

// rodata48 is a frozen read-only array with room for a struct
// bpf_tunnel_key.
var rodata48 = maps.Spec{Name: "rodata48", Type: maps.Array, KeySize: 4, ValueSize: 48, MaxEntries: 1, Flags: maps.FlagRdonlyProg}

// TestSelftestSkbHelpers covers the socket buffer, redirect and tunnel
// helpers: which of them invalidate packet pointers (the kernel's
// bpf_helper_changes_pkt_data) and their argument rules, compared with
// the kernel.
func TestSelftestSkbHelpers(t *testing.T) {
	const p14 = "r4 = r2\nr4 += 14\nif r4 > r3 goto out\n"
	tc, x := ebpf.SchedCLS, ebpf.XDP
	// call runs a helper with r6 the context and r7 a checked packet
	// pointer, then reads through r7.
	call := func(name string, typ ebpf.ProgramType, args, helper string, invalidates bool) vcase {
		err := ""
		if invalidates {
			err = "R7 invalid mem access 'scalar'"
		}
		return withKmsg(pktCase(name, typ, "r6 = r1\n"+p14+"r7 = r2\nr1 = r6\n"+args+"call "+helper+"\nr0 = *(u8 *)(r7 +0)", err))
	}
	stack := "*(u64 *)(r10 -8) = 0\n*(u64 *)(r10 -16) = 0\n*(u64 *)(r10 -24) = 0\n*(u64 *)(r10 -32) = 0\n*(u64 *)(r10 -40) = 0\n*(u64 *)(r10 -48) = 0\n"
	runCases(t, []vcase{
		call("change tail invalidates", tc, "r2 = 64\nr3 = 0\n", "bpf_skb_change_tail#38", true),
		call("change head invalidates", tc, "r2 = 4\nr3 = 0\n", "bpf_skb_change_head#43", true),
		call("pull data invalidates", tc, "r2 = 0\n", "bpf_skb_pull_data#39", true),
		call("adjust room invalidates", tc, "r2 = 8\nr3 = 0\nr4 = 0\n", "bpf_skb_adjust_room#50", true),
		call("change proto invalidates", tc, "r2 = 0xdd86\nr3 = 0\n", "bpf_skb_change_proto#31", true),
		call("vlan push invalidates", tc, "r2 = 0x81\nr3 = 5\n", "bpf_skb_vlan_push#18", true),
		call("vlan pop invalidates", tc, "", "bpf_skb_vlan_pop#19", true),
		call("clone redirect invalidates", tc, "r2 = 1\nr3 = 0\n", "bpf_clone_redirect#13", true),
		call("change type keeps", tc, "r2 = 0\n", "bpf_skb_change_type#32", false),
		call("set hash keeps", tc, "r2 = 1\n", "bpf_set_hash#48", false),
		call("hash recalc keeps", tc, "", "bpf_get_hash_recalc#34", false),
		call("hash invalid keeps", tc, "", "bpf_set_hash_invalid#41", false),
		call("csum level keeps", tc, "r2 = 0\n", "bpf_csum_level#135", false),
		call("csum update keeps", tc, "r2 = 0\n", "bpf_csum_update#40", false),
		call("socket cookie keeps", tc, "", "bpf_get_socket_cookie#46", false),
		call("route realm keeps", tc, "", "bpf_get_route_realm#24", false),
		call("redirect peer keeps", tc, "r1 = 1\nr2 = 0\n", "bpf_redirect_peer#155", false),
		call("tunnel key keeps", tc, stack+"r2 = r10\nr2 += -48\nr3 = 44\nr4 = 0\n", "bpf_skb_get_tunnel_key#20", false),
		call("set tunnel key keeps", tc, stack+"r2 = r10\nr2 += -48\nr3 = 44\nr4 = 0\n", "bpf_skb_set_tunnel_key#21", false),
		call("xdp store bytes keeps", x, stack+"r2 = 0\nr3 = r10\nr3 += -8\nr4 = 4\n", "bpf_xdp_store_bytes#190", false),
		call("xdp buff len keeps", x, "", "bpf_xdp_get_buff_len#188", false),
		// Argument rules.
		// Privileged loads may pass uninitialised stack as memory the
		// helper reads (the kernel's allow_uninit_stack).
		{name: "check mtu uninit", typ: tc, asm: "r2 = 0\nr3 = r10\nr3 += -4\nr4 = 0\nr5 = 0\ncall bpf_check_mtu#163\nr0 = 0\nexit"},
		withKmsg(vcase{name: "check mtu misaligned", typ: tc, asm: "*(u64 *)(r10 -8) = 0\nr2 = 0\nr3 = r10\nr3 += -6\nr4 = 0\nr5 = 0\ncall bpf_check_mtu#163\nr0 = 0\nexit", err: "misaligned stack access off 0+-6+0 size 4"}),
		withKmsg(vcase{name: "check mtu null", typ: tc, asm: "r2 = 0\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_check_mtu#163\nr0 = 0\nexit", err: "R3 type=scalar expected=fp"}),
		{name: "check mtu", typ: tc, asm: "*(u32 *)(r10 -4) = 0\nr2 = 0\nr3 = r10\nr3 += -4\nr4 = 0\nr5 = 0\ncall bpf_check_mtu#163\nr0 = *(u32 *)(r10 -4)\nexit"},
		{name: "xdp check mtu", typ: x, asm: "*(u32 *)(r10 -4) = 0\nr2 = 0\nr3 = r10\nr3 += -4\nr4 = 0\nr5 = 0\ncall bpf_check_mtu#163\nr0 = 0\nexit"},
		{name: "tunnel key uninit", typ: tc, asm: "r2 = r10\nr2 += -48\nr3 = 44\nr4 = 0\ncall bpf_skb_get_tunnel_key#20\nr0 = *(u32 *)(r10 -48)\nexit"},
		{name: "set tunnel key uninit", typ: tc, asm: "r2 = r10\nr2 += -48\nr3 = 44\nr4 = 0\ncall bpf_skb_set_tunnel_key#21\nr0 = 0\nexit"},
		withKmsg(vcase{name: "tunnel opt zero size", typ: tc, asm: "r2 = r10\nr2 += -8\nr3 = 0\ncall bpf_skb_get_tunnel_opt#29\nr0 = 0\nexit", err: "R3 invalid zero-sized read"}),
		{name: "redirect neigh null", typ: tc, asm: "r1 = 1\nr2 = 0\nr3 = 0\nr4 = 0\ncall bpf_redirect_neigh#152\nexit"},
		withKmsg(vcase{name: "redirect neigh null with size", typ: tc, asm: "r1 = 1\nr2 = 0\nr3 = 20\nr4 = 0\ncall bpf_redirect_neigh#152\nexit", err: "R2 type=scalar expected=fp"}),
		{name: "redirect neigh uninit", typ: tc, asm: "r1 = 1\nr2 = r10\nr2 += -24\nr3 = 20\nr4 = 0\ncall bpf_redirect_neigh#152\nexit"},
		{name: "xdp load bytes uninit", typ: x, asm: "r2 = 0\nr3 = r10\nr3 += -8\nr4 = 8\ncall bpf_xdp_load_bytes#189\nr0 = *(u64 *)(r10 -8)\nexit"},
		// A read-only map value is memory xdp_store_bytes and
		// set_tunnel_key read (MEM_RDONLY), but xdp_load_bytes writes.
		{name: "xdp store bytes from rodata", typ: x, maps: []maps.Spec{rodata}, values: map[int][]byte{0: make([]byte, 16)}, asm: "r6 = r1\nr3 = map_value[fd:0]+0 ll\nr1 = r6\nr2 = 0\nr4 = 8\ncall bpf_xdp_store_bytes#190\nr0 = 0\nexit"},
		withKmsg(vcase{name: "xdp load bytes into rodata", typ: x, maps: []maps.Spec{rodata}, values: map[int][]byte{0: make([]byte, 16)}, asm: "r6 = r1\nr3 = map_value[fd:0]+0 ll\nr1 = r6\nr2 = 0\nr4 = 8\ncall bpf_xdp_load_bytes#189\nr0 = 0\nexit", err: "write into map forbidden"}),
		{name: "set tunnel key from rodata", typ: tc, maps: []maps.Spec{rodata48}, values: map[int][]byte{0: make([]byte, 48)}, asm: "r6 = r1\nr2 = map_value[fd:0]+0 ll\nr1 = r6\nr3 = 44\nr4 = 0\ncall bpf_skb_set_tunnel_key#21\nr0 = 0\nexit"},
		withKmsg(vcase{name: "get tunnel key into rodata", typ: tc, maps: []maps.Spec{rodata48}, values: map[int][]byte{0: make([]byte, 48)}, asm: "r6 = r1\nr2 = map_value[fd:0]+0 ll\nr1 = r6\nr3 = 44\nr4 = 0\ncall bpf_skb_get_tunnel_key#20\nr0 = 0\nexit", err: "write into map forbidden"}),
		{name: "xdp store bytes uninit", typ: x, asm: "r2 = 0\nr3 = r10\nr3 += -8\nr4 = 8\ncall bpf_xdp_store_bytes#190\nr0 = 0\nexit"},
		withKmsg(pktCase("xdp load bytes into the packet", x, "r6 = r1\n"+p14+"r1 = r6\nr3 = r2\nr2 = 0\nr4 = 8\ncall bpf_xdp_load_bytes#189", "helper access to the packet is not allowed")),
		withKmsg(pktCase("check mtu in the packet", tc, "r6 = r1\n"+p14+"r1 = r6\nr3 = r2\nr2 = 0\nr4 = 0\nr5 = 0\ncall bpf_check_mtu#163", "helper access to the packet is not allowed")),
		{name: "socket filter relative load", typ: ebpf.SocketFilter, asm: "r2 = 0\nr3 = r10\nr3 += -8\nr4 = 8\nr5 = 0\ncall bpf_skb_load_bytes_relative#68\nr0 = 0\nexit"},
		withKmsg(vcase{name: "socket filter change tail", typ: ebpf.SocketFilter, asm: "r2 = 0\nr3 = 0\ncall bpf_skb_change_tail#38\nr0 = 0\nexit", err: "program of this type cannot use helper bpf_skb_change_tail#38"}),
		withKmsg(vcase{name: "xdp change tail", typ: x, asm: "r2 = 0\nr3 = 0\ncall bpf_skb_change_tail#38\nr0 = 0\nexit", err: "program of this type cannot use helper bpf_skb_change_tail#38"}),
		withKmsg(vcase{name: "change tail not ctx", typ: tc, asm: "r1 = r10\nr2 = 0\nr3 = 0\ncall bpf_skb_change_tail#38\nr0 = 0\nexit", err: "R1 type=fp expected=ctx"}),
	})
}
