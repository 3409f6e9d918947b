package verifier_test

import (
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
)

// TestRawTPNullArgs: the BTF tracepoint arguments the kernel's
// raw_tp_null_args lists may be NULL, and must be checked before they
// are dereferenced; the others may not.
func TestRawTPNullArgs(t *testing.T) {
	deref := func(off int) string {
		return fmt.Sprintf("r2 = *(u64 *)(r1 +%d)\nr0 = *(u64 *)(r2 +0)\nr0 = 0\nexit", off)
	}
	checked := func(off int) string {
		return fmt.Sprintf("r2 = *(u64 *)(r1 +%d)\nif r2 == 0 goto +1\nr0 = *(u64 *)(r2 +0)\nr0 = 0\nexit", off)
	}
	tp := func(name, target, asm, err string) vcase {
		return vcase{name: name, typ: ebpf.Tracing, attach: ebpf.AttachTraceRawTp, attachTo: target, asm: asm, err: err, kmsg: err != ""}
	}
	const orNull = "R2 invalid mem access 'trusted_ptr_or_null_'"
	runCases(t, []vcase{
		tp("sched_pi_setprio task", "sched_pi_setprio", deref(0), ""),
		tp("sched_pi_setprio pi_task", "sched_pi_setprio", deref(8), orNull),
		tp("sched_pi_setprio pi_task checked", "sched_pi_setprio", checked(8), ""),
		tp("tcp_send_reset sk", "tcp_send_reset", deref(0), orNull),
		tp("tcp_send_reset skb", "tcp_send_reset", deref(8), orNull),
		tp("tcp_send_reset skb checked", "tcp_send_reset", checked(8), ""),
		tp("kfree_skb skb", "kfree_skb", deref(0), ""),
		tp("kfree_skb rx_sk", "kfree_skb", deref(24), orNull),
		tp("kfree_skb rx_sk checked", "kfree_skb", checked(24), ""),
		tp("mm_page_alloc page", "mm_page_alloc", deref(0), orNull),
		tp("fib_table_lookup flp", "fib_table_lookup", "r2 = *(u64 *)(r1 +8)\nr0 = *(u32 *)(r2 +0)\nr0 = 0\nexit", ""),
		tp("fib_table_lookup nhc", "fib_table_lookup", deref(16), orNull),
		tp("sched_switch next", "sched_switch", deref(16), ""),
	})
}
