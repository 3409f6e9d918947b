package verifier_test

import (
	"testing"

	"github.com/cilium/ebpf"
)

// A helper whose kernel func_proto differs by program type is checked by
// the type's variant: bpf_get_cgroup_classid takes the skb in tc
// (bpf_get_cgroup_classid_proto) and nothing elsewhere
// (bpf_get_cgroup_classid_curr_proto, from bpf_base_func_proto).
func TestHelperVariants(t *testing.T) {
	const noCtx = "r1 = 0\ncall bpf_get_cgroup_classid#17\nr0 = 0\nexit"
	const ctx = "call bpf_get_cgroup_classid#17\nr0 = 0\nexit"
	runCases(t, []vcase{
		{name: "tc takes the skb", asm: ctx, typ: ebpf.SchedCLS},
		{name: "tc refuses a scalar", asm: noCtx, typ: ebpf.SchedCLS, err: "R1 type=scalar expected=ctx", kmsg: true},
		{name: "xdp takes no argument", asm: noCtx, typ: ebpf.XDP},
		{name: "xdp with the context too", asm: ctx, typ: ebpf.XDP},
		{name: "socket filter takes no argument", asm: noCtx, typ: ebpf.SocketFilter},
	})
}
