package verifier_test

import (
	"testing"

	"github.com/cilium/ebpf"
)

// TestSelftestSockLookup covers the socket lookups' references, as the
// kernel tracks them: acquired by the lookup, dropped by a null check that
// finds NULL and by bpf_sk_release, shared by copies and by the pointers
// bpf_tcp_sock and bpf_sk_fullsock cast from them; leaks, double releases,
// releases of what was never acquired, and the socket types' field rules.
func TestSelftestSockLookup(t *testing.T) {
	tuple := "*(u64 *)(r10 -16) = 0\n*(u32 *)(r10 -8) = 0\n"
	args := "r1 = r9\nr2 = r10\nr2 += -16\nr3 = 12\nr4 = -1\nr5 = 0\n"
	lookup := tuple + args + "call bpf_sk_lookup_tcp#84\n"
	release := "r1 = r0\ncall bpf_sk_release#86\n"
	out := "\nout: r0 = 0\nexit"
	tc := ebpf.SchedCLS
	const sockTypes = "expected=sock_common, sock, tcp_sock, xdp_sock"
	const releaseTypes = sockTypes + ", ptr_, trusted_ptr_"
	cases := []vcase{
		{name: "lookup release", typ: tc, asm: lookup + "if r0 == 0 goto out\n" + release + out},
		{name: "lookup udp release", typ: tc, asm: tuple + args + "call bpf_sk_lookup_udp#85\nif r0 == 0 goto out\n" + release + out},
		{name: "skc lookup release", typ: tc, asm: tuple + args + "call bpf_skc_lookup_tcp#99\nif r0 == 0 goto out\n" + release + out},
		{name: "lookup xdp", typ: ebpf.XDP, asm: lookup + "if r0 == 0 goto out\n" + release + out},
		{name: "lookup ipv6 tuple", typ: tc, asm: "r1 = 0\n*(u64 *)(r10 -40) = r1\n*(u64 *)(r10 -32) = r1\n*(u64 *)(r10 -24) = r1\n*(u64 *)(r10 -16) = r1\n*(u32 *)(r10 -8) = r1\nr1 = r9\nr2 = r10\nr2 += -40\nr3 = 36\nr4 = -1\nr5 = 0\ncall bpf_sk_lookup_tcp#84\nif r0 == 0 goto out\n" + release + out},
		{name: "leak", typ: tc, asm: lookup + "r0 = 0\nexit", err: "Unreleased reference id=2 alloc_insn=9", kmsg: true},
		{name: "leak after null check", typ: tc, asm: lookup + "if r0 == 0 goto out\nr0 = 0\nexit" + out, err: "Unreleased reference id=2 alloc_insn=9", kmsg: true},
		// A checked socket compared with 0 again: the kernel's
		// reg_not_null decides the branch, whose leak is dead.
		{name: "socket compared with null again", typ: tc, asm: lookup + "if r0 == 0 goto out\nr6 = r0\nif r6 == 0 goto leak\nr1 = r6\ncall bpf_sk_release#86\nr0 = 0\nexit\nleak: r0 = 1\nexit" + out},
		{name: "socket compared with null again, ne", typ: tc, asm: lookup + "if r0 == 0 goto out\nr6 = r0\nif r6 != 0 goto rel\nr0 = 1\nexit\nrel: r1 = r6\ncall bpf_sk_release#86" + out},
		{name: "tcp_sock compared with null again", typ: tc, asm: lookup + "if r0 == 0 goto out\nr6 = r0\nr1 = r0\ncall bpf_tcp_sock#96\nif r0 == 0 goto rel\nif r0 == 0 goto leak\nrel: r1 = r6\ncall bpf_sk_release#86\nr0 = 0\nexit\nleak: r0 = 1\nexit" + out},
		{name: "null branch holds nothing", typ: tc, asm: lookup + "if r0 != 0 goto rel\nr0 = 0\nexit\nrel: " + release + out},
		{name: "release unchecked", typ: tc, asm: lookup + release + out, err: "R1 type=sock_or_null " + releaseTypes, kmsg: true},
		{name: "release skc unchecked", typ: tc, asm: tuple + args + "call bpf_skc_lookup_tcp#99\n" + release + out, err: "R1 type=sock_common_or_null " + releaseTypes, kmsg: true},
		{name: "release ctx socket", typ: tc, asm: "r1 = *(u64 *)(r1 +168)\nif r1 == 0 goto out\ncall bpf_sk_release#86" + out, err: "R1 must be referenced when passed to release function", kmsg: true},
		{name: "release scalar", typ: tc, asm: "r1 = 0\ncall bpf_sk_release#86" + out, err: "R1 type=scalar " + releaseTypes, kmsg: true},
		{name: "release stack", typ: tc, asm: "r1 = r10\ncall bpf_sk_release#86" + out, err: "R1 type=fp " + releaseTypes, kmsg: true},
		{name: "double release", typ: tc, asm: lookup + "if r0 == 0 goto out\nr6 = r0\n" + release + "r1 = r6\ncall bpf_sk_release#86" + out, err: "R1 type=scalar " + releaseTypes, kmsg: true},
		{name: "use after release", typ: tc, asm: lookup + "if r0 == 0 goto out\nr6 = r0\n" + release + "r0 = *(u32 *)(r6 +4)" + out, err: "R6 invalid mem access 'scalar'", kmsg: true},
		{name: "spilled copy released", typ: tc, asm: lookup + "if r0 == 0 goto out\n*(u64 *)(r10 -24) = r0\n" + release + "r6 = *(u64 *)(r10 -24)\nr0 = *(u32 *)(r6 +4)" + out, err: "R6 invalid mem access 'scalar'", kmsg: true},
		{name: "release copy", typ: tc, asm: lookup + "r6 = r0\nif r0 == 0 goto out\nr1 = r6\ncall bpf_sk_release#86" + out},
		{name: "release by path", typ: tc, asm: "r7 = *(u32 *)(r1 +0)\n" + lookup + "if r0 == 0 goto out\nif r7 == 0 goto a\n" + release + "goto out\na: " + release + out},
		{name: "leak on one path", typ: tc, asm: "r7 = *(u32 *)(r1 +0)\n" + lookup + "if r0 == 0 goto out\nif r7 == 0 goto a\n" + release + "a: r0 = 0\nexit" + out, err: "Unreleased reference id=2 alloc_insn=10", kmsg: true},
		{name: "two lookups", typ: tc, asm: lookup + "if r0 == 0 goto out\nr6 = r0\n" + lookup + "if r0 == 0 goto one\n" + release + "one: r1 = r6\ncall bpf_sk_release#86" + out},
		{name: "two lookups one leaked", typ: tc, asm: lookup + "if r0 == 0 goto out\nr6 = r0\n" + lookup + "if r0 == 0 goto one\n" + release + "one: r0 = 0\nexit" + out, err: "Unreleased reference id=2 alloc_insn=9", kmsg: true},
		{name: "read sock fields", typ: tc, asm: lookup + "if r0 == 0 goto out\nr2 = *(u32 *)(r0 +4)\nr2 = *(u32 *)(r0 +8)\nr2 = *(u32 *)(r0 +72)\nr2 = *(u16 *)(r0 +48)\nr2 = *(u8 *)(r0 +24)\n" + release + out},
		{name: "read unchecked", typ: tc, asm: lookup + "r2 = *(u32 *)(r0 +4)" + out, err: "R0 invalid mem access 'sock_or_null'", kmsg: true},
		{name: "write sock", typ: tc, asm: lookup + "if r0 == 0 goto out\n*(u32 *)(r0 +16) = 1\n" + release + out, err: "R0 cannot write into sock", kmsg: true},
		{name: "sock past end", typ: tc, asm: lookup + "if r0 == 0 goto out\nr2 = *(u32 *)(r0 +80)\n" + release + out, err: "R0 invalid sock access off=80 size=4", kmsg: true},
		{name: "sock arithmetic", typ: tc, asm: lookup + "if r0 == 0 goto out\nr0 += 4\n" + release + out, err: "R0 pointer arithmetic on sock prohibited", kmsg: true},
		{name: "skc type field", typ: tc, asm: tuple + args + "call bpf_skc_lookup_tcp#99\nif r0 == 0 goto out\nr2 = *(u32 *)(r0 +8)\n" + release + out, err: "R0 invalid sock_common access off=8 size=4", kmsg: true},
		{name: "skc family field", typ: tc, asm: tuple + args + "call bpf_skc_lookup_tcp#99\nif r0 == 0 goto out\nr2 = *(u32 *)(r0 +4)\n" + release + out},
		// Root may pass uninitialised stack (allow_uninit_stack).
		{name: "tuple uninit", typ: tc, asm: args + "call bpf_sk_lookup_tcp#84\nif r0 == 0 goto out\n" + release + out},
		// The tuple's size may be 0 (the lookup then finds nothing), but
		// not with a NULL tuple.
		{name: "tuple size zero", typ: tc, asm: tuple + "r2 = r10\nr2 += -16\nr3 = 0\nr4 = -1\nr5 = 0\ncall bpf_sk_lookup_tcp#84\nif r0 == 0 goto out\n" + release + out},
		{name: "tuple null", typ: tc, asm: "r2 = 0\nr3 = 0\nr4 = -1\nr5 = 0\ncall bpf_sk_lookup_tcp#84\nif r0 == 0 goto out\n" + release + out, err: "R2 type=scalar expected=fp, pkt, pkt_meta, map_key, map_value, mem, ringbuf_mem, buf, trusted_ptr_", kmsg: true},
		{name: "tuple size unbounded", typ: tc, asm: tuple + "r3 = *(u32 *)(r1 +0)\nr2 = r10\nr2 += -16\nr4 = -1\nr5 = 0\ncall bpf_sk_lookup_tcp#84\nif r0 == 0 goto out\n" + release + out, err: "R3 unbounded memory access, use 'var &= const' or 'if (var < const)'", kmsg: true},
		{name: "tuple in packet", typ: tc, asm: "r2 = *(u32 *)(r1 +76)\nr3 = *(u32 *)(r1 +80)\nr4 = r2\nr4 += 12\nif r4 > r3 goto out\nr1 = r9\nr3 = 12\nr4 = -1\nr5 = 0\ncall bpf_sk_lookup_tcp#84\nif r0 == 0 goto out\n" + release + out},
		{name: "socket filter cannot", typ: ebpf.SocketFilter, asm: lookup + "if r0 == 0 goto out\n" + release + out, err: "program of this type cannot use helper bpf_sk_lookup_tcp#84", kmsg: true},

		// Casts share the socket's reference.
		{name: "tcp sock", typ: tc, asm: lookup + "if r0 == 0 goto out\nr6 = r0\nr1 = r0\ncall bpf_tcp_sock#96\nif r0 == 0 goto rel\nr2 = *(u64 *)(r0 +80)\nr2 = *(u32 *)(r0 +108)\nrel: r1 = r6\ncall bpf_sk_release#86" + out},
		{name: "tcp sock null keeps reference", typ: tc, asm: lookup + "if r0 == 0 goto out\nr6 = r0\nr1 = r0\ncall bpf_tcp_sock#96\nif r0 == 0 goto out\nr1 = r6\ncall bpf_sk_release#86" + out, err: "Unreleased reference id=2 alloc_insn=9", kmsg: true},
		{name: "release through tcp sock", typ: tc, asm: lookup + "if r0 == 0 goto out\nr6 = r0\nr1 = r0\ncall bpf_tcp_sock#96\nif r0 == 0 goto rel\nr1 = r0\ncall bpf_sk_release#86\ngoto out\nrel: r1 = r6\ncall bpf_sk_release#86" + out},
		{name: "tcp sock after release", typ: tc, asm: lookup + "if r0 == 0 goto out\nr6 = r0\nr1 = r0\ncall bpf_tcp_sock#96\nif r0 == 0 goto rel\nr7 = r0\nr1 = r6\ncall bpf_sk_release#86\nr0 = *(u32 *)(r7 +0)\ngoto out\nrel: r1 = r6\ncall bpf_sk_release#86" + out, err: "R7 invalid mem access 'scalar'", kmsg: true},
		{name: "tcp sock narrow", typ: tc, asm: lookup + "if r0 == 0 goto out\nr6 = r0\nr1 = r0\ncall bpf_tcp_sock#96\nif r0 == 0 goto rel\nr2 = *(u16 *)(r0 +0)\nrel: r1 = r6\ncall bpf_sk_release#86" + out, err: "R0 invalid tcp_sock access off=0 size=2", kmsg: true},
		{name: "tcp sock u32 of u64", typ: tc, asm: lookup + "if r0 == 0 goto out\nr6 = r0\nr1 = r0\ncall bpf_tcp_sock#96\nif r0 == 0 goto rel\nr2 = *(u32 *)(r0 +80)\nrel: r1 = r6\ncall bpf_sk_release#86" + out, err: "R0 invalid tcp_sock access off=80 size=4", kmsg: true},
		{name: "tcp sock past end", typ: tc, asm: lookup + "if r0 == 0 goto out\nr6 = r0\nr1 = r0\ncall bpf_tcp_sock#96\nif r0 == 0 goto rel\nr2 = *(u32 *)(r0 +112)\nrel: r1 = r6\ncall bpf_sk_release#86" + out, err: "R0 invalid tcp_sock access off=112 size=4", kmsg: true},
		{name: "tcp sock write", typ: tc, asm: lookup + "if r0 == 0 goto out\nr6 = r0\nr1 = r0\ncall bpf_tcp_sock#96\nif r0 == 0 goto rel\n*(u32 *)(r0 +0) = 1\nrel: r1 = r6\ncall bpf_sk_release#86" + out, err: "R0 cannot write into tcp_sock", kmsg: true},
		{name: "tcp sock unchecked arg", typ: tc, asm: lookup + "r1 = r0\ncall bpf_tcp_sock#96" + out, err: "R1 type=sock_or_null " + sockTypes, kmsg: true},
		{name: "fullsock of ctx socket", typ: tc, asm: "r1 = *(u64 *)(r1 +168)\nif r1 == 0 goto out\ncall bpf_sk_fullsock#95\nif r0 == 0 goto out\nr0 = *(u32 *)(r0 +8)" + out},
		{name: "fullsock of maybe-null ctx socket", typ: tc, asm: "r1 = *(u64 *)(r1 +168)\ncall bpf_sk_fullsock#95" + out, err: "R1 type=sock_common_or_null " + sockTypes, kmsg: true},
		{name: "fullsock keeps reference", typ: tc, asm: tuple + args + "call bpf_skc_lookup_tcp#99\nif r0 == 0 goto out\nr6 = r0\nr1 = r0\ncall bpf_sk_fullsock#95\nif r0 == 0 goto rel\nr2 = *(u32 *)(r0 +8)\nrel: r1 = r6\ncall bpf_sk_release#86" + out},
		{name: "fullsock release", typ: tc, asm: tuple + args + "call bpf_skc_lookup_tcp#99\nif r0 == 0 goto out\nr6 = r0\nr1 = r0\ncall bpf_sk_fullsock#95\nif r0 == 0 goto rel\nr1 = r0\ncall bpf_sk_release#86\nr0 = *(u32 *)(r6 +4)\ngoto out\nrel: r1 = r6\ncall bpf_sk_release#86" + out, err: "R6 invalid mem access 'scalar'", kmsg: true},
		{name: "listener holds no reference", typ: tc, asm: lookup + "if r0 == 0 goto out\nr6 = r0\nr1 = r0\ncall bpf_get_listener_sock#98\nr7 = r0\nr1 = r6\ncall bpf_sk_release#86\nif r7 == 0 goto out\nr0 = *(u32 *)(r7 +4)" + out},
		{name: "release listener", typ: tc, asm: lookup + "if r0 == 0 goto out\nr6 = r0\nr1 = r0\ncall bpf_get_listener_sock#98\nif r0 == 0 goto rel\nr1 = r0\ncall bpf_sk_release#86\nrel: r1 = r6\ncall bpf_sk_release#86" + out, err: "R1 must be referenced when passed to release function", kmsg: true},
		{name: "tcp sock of ctx socket", typ: ebpf.CGroupSKB, attach: ebpf.AttachCGroupInetIngress, asm: "r1 = *(u64 *)(r1 +168)\nif r1 == 0 goto out\ncall bpf_tcp_sock#96\nif r0 == 0 goto out\nr0 = *(u32 *)(r0 +0)\nr0 = 1\nexit\nout: r0 = 1\nexit"},

		// References live in the state, across calls.
		{name: "lookup in callee released by caller", typ: tc, asm: "r1 = r9\ncall f\nif r0 == 0 goto out\n" + release + out + "\nf: r9 = r1\n" + lookup + "exit"},
		{name: "released in callee", typ: tc, asm: lookup + "if r0 == 0 goto out\nr1 = r0\ncall g" + out + "\ng: call bpf_sk_release#86\nr0 = 0\nexit"},
		{name: "leak from callee", typ: tc, asm: "r1 = r9\ncall f" + out + "\nf: r9 = r1\n" + lookup + "r0 = 0\nexit", err: "Unreleased reference id=2 alloc_insn=14", kmsg: true},
		{name: "callee result used after release", typ: tc, asm: lookup + "if r0 == 0 goto out\nr6 = r0\nr1 = r0\ncall g\nr0 = *(u32 *)(r6 +4)" + out + "\ng: call bpf_sk_release#86\nr0 = 0\nexit", err: "R6 invalid mem access 'scalar'", kmsg: true},

		// bpf_sk_assign takes a socket, referenced or not, and
		// releases nothing.
		{name: "sk assign", typ: tc, asm: lookup + "if r0 == 0 goto out\nr6 = r0\nr1 = r9\nr2 = r0\nr3 = 0\ncall bpf_sk_assign#124\nr1 = r6\ncall bpf_sk_release#86" + out},
		{name: "sk assign leaves the reference", typ: tc, asm: lookup + "if r0 == 0 goto out\nr1 = r9\nr2 = r0\nr3 = 0\ncall bpf_sk_assign#124" + out, err: "Unreleased reference id=2 alloc_insn=9", kmsg: true},
		{name: "sk assign ctx socket", typ: tc, asm: "r2 = *(u64 *)(r1 +168)\nif r2 == 0 goto out\nr3 = 0\ncall bpf_sk_assign#124" + out},
		{name: "sk assign null", typ: tc, asm: "r2 = 0\nr3 = 0\ncall bpf_sk_assign#124" + out, err: "R2 type=scalar " + releaseTypes, kmsg: true},
		{name: "sk assign unchecked", typ: tc, asm: lookup + "r1 = r9\nr2 = r0\nr3 = 0\ncall bpf_sk_assign#124" + out, err: "R2 type=sock_or_null " + releaseTypes, kmsg: true},
		{name: "sk assign xdp", typ: ebpf.XDP, asm: "r2 = 0\nr3 = 0\ncall bpf_sk_assign#124" + out, err: "program of this type cannot use helper bpf_sk_assign#124", kmsg: true},

		// bpf_get_netns_cookie takes the context or NULL.
		{name: "netns cookie ctx", typ: tc, asm: "call bpf_get_netns_cookie#122\nr0 = 0\nexit"},
		{name: "netns cookie null", typ: tc, asm: "r1 = 0\ncall bpf_get_netns_cookie#122\nr0 = 0\nexit"},
		{name: "netns cookie stack", typ: tc, asm: "r1 = r10\ncall bpf_get_netns_cookie#122\nr0 = 0\nexit", err: "R1 type=fp expected=ctx", kmsg: true},
		{name: "netns cookie ctx offset", typ: tc, asm: "r1 += 8\ncall bpf_get_netns_cookie#122\nr0 = 0\nexit", err: "dereference of modified ctx ptr R1 off=8 disallowed", kmsg: true},
		{name: "netns cookie sock_addr null", typ: ebpf.CGroupSockAddr, attach: ebpf.AttachCGroupInet4Connect, asm: "r1 = 0\ncall bpf_get_netns_cookie#122\nr0 = 1\nexit"},
		{name: "netns cookie socket filter", typ: ebpf.SocketFilter, asm: "r1 = 0\ncall bpf_get_netns_cookie#122\nr0 = 0\nexit"},
	}
	for i := range cases {
		// The lookups take the context from r9.
		cases[i].asm = "r9 = r1\n" + cases[i].asm
	}
	runCases(t, cases)
}

// TestSelftestFIBLookup covers bpf_fib_lookup's prototype: params is
// memory it reads and writes (initialised stack or a writable map value),
// its size a constant.
func TestSelftestFIBLookup(t *testing.T) {
	params := "r1 = 0\n*(u64 *)(r10 -64) = r1\n*(u64 *)(r10 -56) = r1\n*(u64 *)(r10 -48) = r1\n*(u64 *)(r10 -40) = r1\n*(u64 *)(r10 -32) = r1\n*(u64 *)(r10 -24) = r1\n*(u64 *)(r10 -16) = r1\n*(u64 *)(r10 -8) = r1\n"
	call := "r1 = r6\nr2 = r10\nr2 += -64\nr3 = 64\nr4 = 0\ncall bpf_fib_lookup#69\n"
	runCases(t, []vcase{
		{name: "tc", typ: ebpf.SchedCLS, asm: "r6 = r1\n" + params + call + "r0 = 0\nexit"},
		{name: "xdp", typ: ebpf.XDP, asm: "r6 = r1\n" + params + call + "r0 = 2\nexit"},
		// Root may pass uninitialised stack (allow_uninit_stack).
		{name: "uninit params", typ: ebpf.XDP, asm: "r6 = r1\n" + call + "r0 = 2\nexit"},
		{name: "params past stack", typ: ebpf.XDP, asm: "r6 = r1\nr1 = r6\nr2 = r10\nr2 += -32\nr3 = 64\nr4 = 0\ncall bpf_fib_lookup#69\nr0 = 2\nexit", err: "invalid write to stack R2 off=-32 size=64", kmsg: true},
		{name: "params size zero", typ: ebpf.XDP, asm: "r6 = r1\n" + params + "r1 = r6\nr2 = r10\nr2 += -64\nr3 = 0\nr4 = 0\ncall bpf_fib_lookup#69\nr0 = 2\nexit", err: "R3 invalid zero-sized read: u64=[0,0]", kmsg: true},
		{name: "params clobber a spill", typ: ebpf.XDP, asm: "r6 = r1\n" + params + "r7 = 5\n*(u64 *)(r10 -8) = r7\n" + call + "r1 = *(u64 *)(r10 -8)\nif r1 == 5 goto x\nr0 = 2\nexit\nx: r0 = 1\nexit"},
		{name: "variable size", typ: ebpf.XDP, asm: "r6 = r1\n" + params + "r3 = *(u32 *)(r6 +12)\nr3 &= 63\nr3 += 1\nr1 = r6\nr2 = r10\nr2 += -64\nr4 = 0\ncall bpf_fib_lookup#69\nr0 = 2\nexit"},
		{name: "socket filter cannot", typ: ebpf.SocketFilter, asm: "r6 = r1\n" + params + call + "r0 = 0\nexit", err: "program of this type cannot use helper bpf_fib_lookup#69", kmsg: true},
	})
}

// TestSelftestSocketPtrCookie covers sk_reuseport's bpf_get_socket_cookie,
// which takes a socket pointer or NULL rather than the context.
func TestSelftestSocketPtrCookie(t *testing.T) {
	const types = "expected=sock_common, sock, tcp_sock, xdp_sock, ptr_, trusted_ptr_"
	ru, sel := ebpf.SkReuseport, ebpf.AttachSkReuseportSelect
	runCases(t, []vcase{
		{name: "maybe-null socket", typ: ru, attach: sel, asm: "r1 = *(u64 *)(r1 +48)\ncall bpf_get_socket_cookie#46\nr0 = 1\nexit"},
		{name: "checked socket", typ: ru, attach: sel, asm: "r1 = *(u64 *)(r1 +48)\nif r1 == 0 goto out\ncall bpf_get_socket_cookie#46\nout: r0 = 1\nexit"},
		{name: "null", typ: ru, attach: sel, asm: "r1 = 0\ncall bpf_get_socket_cookie#46\nr0 = 1\nexit"},
		{name: "ctx", typ: ru, attach: sel, asm: "call bpf_get_socket_cookie#46\nr0 = 1\nexit", err: "R1 type=ctx " + types, kmsg: true},
		{name: "stack", typ: ru, attach: sel, asm: "r1 = r10\ncall bpf_get_socket_cookie#46\nr0 = 1\nexit", err: "R1 type=fp " + types, kmsg: true},
		{name: "tc takes the ctx", typ: ebpf.SchedCLS, asm: "call bpf_get_socket_cookie#46\nr0 = 0\nexit"},
	})
}
