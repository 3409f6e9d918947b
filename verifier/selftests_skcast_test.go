package verifier_test

import (
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
)

// TestSelftestSocketCasts: the bpf_skc_to_* casts (net/core/filter.c) as
// the kernel verifies them, compared with it: in tp_btf programs on a
// trusted struct sock (tcp_probe's), in tc programs on the context's
// socket and on looked-up ones. The result is a BTF pointer or NULL, of
// the cast's struct, carrying the argument's reference (not
// bpf_skc_to_unix_sock's); bpf_skc_to_mptcp_sock takes only the
// networking types' sockets; CAP_PERFMON.
func TestSelftestSocketCasts(t *testing.T) {
	spec := hostBTF(t)
	tcp, _ := hostStruct(t, spec, "tcp_sock")
	skbType, _ := hostStruct(t, spec, "sk_buff")
	srtt := memberOff(t, tcp, "srtt_us")
	out := "\nout: r0 = 0\nexit"
	tp := func(name, asm, err string) vcase {
		return vcase{name: name, typ: ebpf.Tracing, attach: ebpf.AttachTraceRawTp, attachTo: "tcp_probe", asm: asm, err: err, kmsg: err != ""}
	}
	tc := func(name, asm, err string) vcase {
		return vcase{name: name, typ: ebpf.SchedCLS, btf: true, asm: asm, err: err, kmsg: err != ""}
	}
	sk := "r1 = *(u64 *)(r1 +0)\n"
	skb := "r1 = *(u64 *)(r1 +8)\n"
	cast := func(id int) string { return fmt.Sprintf("call %d\n", id) }
	read := fmt.Sprintf("if r0 == 0 goto out\nr0 = *(u32 *)(r0 +%d)\n", srtt)
	tuple := "r6 = r1\n*(u64 *)(r10 -16) = 0\n*(u32 *)(r10 -8) = 0\nr1 = r6\nr2 = r10\nr2 += -16\nr3 = 12\nr4 = -1\nr5 = 0\ncall 84\nif r0 == 0 goto out\nr7 = r0\nr1 = r0\n"
	const btfSock = "expected=sock_common, sock, tcp_sock, xdp_sock, ptr_, trusted_ptr_"
	runCases(t, []vcase{
		tp("tcp_sock of a traced sock", sk+cast(137)+read+"r0 = 0\nexit"+out, ""),
		tp("tcp6_sock", sk+cast(136)+"if r0 == 0 goto out\nr0 = *(u32 *)(r0 +0)\nr0 = 0\nexit"+out, ""),
		tp("tcp_timewait_sock", sk+cast(138)+"if r0 == 0 goto out\nr0 = *(u32 *)(r0 +0)\nr0 = 0\nexit"+out, ""),
		tp("tcp_request_sock", sk+cast(139)+"if r0 == 0 goto out\nr0 = *(u32 *)(r0 +0)\nr0 = 0\nexit"+out, ""),
		tp("udp6_sock", sk+cast(140)+"if r0 == 0 goto out\nr0 = *(u32 *)(r0 +0)\nr0 = 0\nexit"+out, ""),
		tp("unix_sock", sk+cast(178)+"if r0 == 0 goto out\nr0 = *(u32 *)(r0 +0)\nr0 = 0\nexit"+out, ""),
		tp("cast result cast again", sk+cast(137)+"if r0 == 0 goto out\nr1 = r0\n"+cast(136)+"r0 = 0\nexit"+out, ""),
		tp("result not null-checked", sk+cast(137)+fmt.Sprintf("r0 = *(u32 *)(r0 +%d)\nr0 = 0\nexit", srtt), "R0 invalid mem access 'ptr_or_null_'"),
		tp("maybe-null result cast again", sk+cast(137)+"r1 = r0\n"+cast(136)+"r0 = 0\nexit", "R1 type=ptr_or_null_ "+btfSock),
		tp("store to the result", sk+cast(137)+"if r0 == 0 goto out\nr1 = 0\n*(u32 *)(r0 +0) = r1\nr0 = 0\nexit"+out, "only read is supported"),
		tp("sk_buff is no socket", skb+cast(137)+"r0 = 0\nexit", "R1 is of type sk_buff but sock_common is expected"),
		tp("scalar is no socket", "r1 = 0\n"+cast(137)+"r0 = 0\nexit", "R1 type=scalar "+btfSock),
		tp("context is no socket", cast(137)+"r0 = 0\nexit", "R1 type=ctx "+btfSock),
		tp("mptcp takes no BTF socket", sk+cast(196)+"r0 = 0\nexit", "R1 type=trusted_ptr_ expected=sock_common, sock, tcp_sock, xdp_sock"),
		tp("offset socket", sk+"r1 += 8\n"+cast(137)+"r0 = 0\nexit", "R1 is of type sock but sock_common is expected"),
		{name: "socket of the sk_buff", typ: ebpf.Tracing, attach: ebpf.AttachTraceRawTp, attachTo: "tcp_probe",
			asm: skb + fmt.Sprintf("r1 = *(u64 *)(r1 +%d)\n", memberOff(t, skbType, "sk")) + cast(137) + "r0 = 0\nexit",
			err: "R1 type=rcu_ptr_or_null_ " + btfSock, kmsg: true},

		tc("tc: tcp_sock of the context's socket", "r1 = *(u64 *)(r1 +168)\nif r1 == 0 goto out\n"+cast(137)+read+"r0 = 0\nexit"+out, ""),
		tc("tc: maybe-null context socket", "r1 = *(u64 *)(r1 +168)\n"+cast(137)+"r0 = 0\nexit", "R1 type=sock_common_or_null "+btfSock),
		tc("tc: mptcp of the context's socket", "r1 = *(u64 *)(r1 +168)\nif r1 == 0 goto out\n"+cast(196)+"r0 = 0\nexit"+out, ""),
		tc("tc: cast keeps the reference", tuple+cast(137)+"if r0 == 0 goto rel\nr1 = r0\ncall 86\nr0 = 0\nexit\nrel: r1 = r7\ncall 86"+out, ""),
		tc("tc: cast of a released socket", tuple+cast(137)+"r1 = r7\ncall 86\nif r0 == 0 goto out\nr0 = *(u32 *)(r0 +0)"+out, "R0 invalid mem access"),
		tc("tc: unix_sock carries no reference", tuple+cast(178)+"if r0 == 0 goto rel\nr1 = r0\ncall 86\nr0 = 0\nexit\nrel: r1 = r7\ncall 86"+out, "R1 must be referenced when passed to release function"),
		tc("tc: cast result leaked", tuple+cast(137)+"if r0 == 0 goto rel\nr0 = 0\nexit\nrel: r1 = r7\ncall 86"+out, "Unreleased reference"),
		{name: "tc: unprivileged", typ: ebpf.SchedCLS, btf: true, unpriv: true, asm: "r1 = *(u64 *)(r1 +168)\nif r1 == 0 goto out\n" + cast(137) + "r0 = 0\nexit" + out, err: "bpf_skc_to_tcp_sock#137"},
	})
}
