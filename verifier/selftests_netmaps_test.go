package verifier_test

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/maps"
)

// Maps of the cgroup and socket types.
var (
	cgStorage   = maps.Spec{Name: "cgs", Type: maps.CgroupStorage, KeySize: 16, ValueSize: 8}
	cgStorage2  = maps.Spec{Name: "cgs2", Type: maps.CgroupStorage, KeySize: 8, ValueSize: 16}
	pcpuStorage = maps.Spec{Name: "pcgs", Type: maps.PerCPUCgroupStorage, KeySize: 16, ValueSize: 8}
	cgArray     = maps.Spec{Name: "cga", Type: maps.CgroupArray, KeySize: 4, ValueSize: 4, MaxEntries: 4}
	sockMap     = maps.Spec{Name: "sockmap", Type: maps.SockMap, KeySize: 4, ValueSize: 8, MaxEntries: 4}
	sockHash    = maps.Spec{Name: "sockhash", Type: maps.SockHash, KeySize: 4, ValueSize: 8, MaxEntries: 4}
	reuseArray  = maps.Spec{Name: "reuse", Type: maps.ReuseportSockArray, KeySize: 4, ValueSize: 8, MaxEntries: 4}
	// An int key and a byte array value, as socket storages require.
	skStorage = maps.Spec{Name: "sks", Type: maps.SkStorage, KeySize: 4, ValueSize: 8, Flags: maps.FlagNoPrealloc,
		Key:   &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed},
		Value: &btf.Array{Type: &btf.Int{Name: "unsigned char", Size: 1}, Index: &btf.Int{Name: "unsigned int", Size: 4}, Nelems: 8}}
)

// TestSelftestCgroupMaps covers cgroup storages (bpf_get_local_storage)
// and cgroup arrays.
func TestSelftestCgroupMaps(t *testing.T) {
	egress := func(c vcase) vcase {
		c.typ, c.attach = ebpf.CGroupSKB, ebpf.AttachCGroupInetEgress
		return c
	}
	tc := func(c vcase) vcase {
		c.typ = ebpf.SchedCLS
		return c
	}
	get := "r1 = map[fd:0] ll\nr2 = 0\ncall bpf_get_local_storage#81\n"
	ret := "r0 = 1\nexit"
	cg := []maps.Spec{cgStorage}
	under := "r2 = map[fd:0] ll\nr3 = 1\ncall bpf_skb_under_cgroup#33\nexit"
	runCases(t, []vcase{
		egress(vcase{name: "local storage never null", maps: cg, asm: get + "r1 = *(u64 *)(r0 +0)\nr1 += 1\n*(u64 *)(r0 +0) = r1\n" + ret}),
		egress(vcase{name: "local storage atomic", maps: cg, asm: get + "r1 = 1\nlock *(u64 *)(r0 +0) += r1\n" + ret}),
		egress(vcase{name: "local storage past the value", maps: cg, asm: get + "r1 = *(u64 *)(r0 +8)\n" + ret, err: "invalid access to map value, value_size=8 off=8 size=8", kmsg: true}),
		egress(vcase{name: "local storage flags", maps: cg, asm: "r1 = map[fd:0] ll\nr2 = 1\ncall bpf_get_local_storage#81\n" + ret, err: "get_local_storage() doesn't support non-zero flags", kmsg: true}),
		egress(vcase{name: "local storage unknown flags", maps: cg, asm: "r2 = *(u32 *)(r1 +0)\nr1 = map[fd:0] ll\ncall bpf_get_local_storage#81\n" + ret, err: "get_local_storage() doesn't support non-zero flags", kmsg: true}),
		egress(vcase{name: "percpu local storage", maps: []maps.Spec{pcpuStorage}, asm: get + "r1 = *(u64 *)(r0 +0)\n" + ret}),
		egress(vcase{name: "key of 8 bytes", maps: []maps.Spec{cgStorage2}, asm: get + "r1 = *(u64 *)(r0 +8)\n" + ret}),
		egress(vcase{name: "two shared storages", maps: []maps.Spec{cgStorage, cgStorage2}, asm: get + "r1 = map[fd:1] ll\n" + ret, err: "only one cgroup storage of each type is allowed", kmsg: true}),
		egress(vcase{name: "shared and percpu storages", maps: []maps.Spec{cgStorage, pcpuStorage}, asm: get + "r1 = map[fd:1] ll\nr2 = 0\ncall bpf_get_local_storage#81\n" + ret}),
		egress(vcase{name: "local storage of a hash", maps: []maps.Spec{hashMap}, asm: get + ret, err: "cannot pass map_type 1 into func bpf_get_local_storage#81", kmsg: true}),
		egress(vcase{name: "lookup in a storage", maps: cg, asm: "*(u64 *)(r10 -8) = 0\n*(u64 *)(r10 -16) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -16\ncall bpf_map_lookup_elem#1\n" + ret, err: "cannot pass map_type 19 into func bpf_map_lookup_elem#1", kmsg: true}),
		tc(vcase{name: "skb under cgroup", maps: []maps.Spec{cgArray}, asm: under}),
		tc(vcase{name: "skb under cgroup of a hash", maps: []maps.Spec{hashMap}, asm: under, err: "cannot pass map_type 1 into func bpf_skb_under_cgroup#33", kmsg: true}),
		tc(vcase{name: "skb under cgroup, map not a map", maps: []maps.Spec{cgArray}, asm: "r2 = 0\nr3 = 1\ncall bpf_skb_under_cgroup#33\nexit", err: "R2 type=scalar expected=map_ptr", kmsg: true}),
		tc(vcase{name: "task under cgroup", maps: []maps.Spec{cgArray}, asm: "r1 = map[fd:0] ll\nr2 = 0\ncall bpf_current_task_under_cgroup#37\nexit"}),
		tc(vcase{name: "lookup in a cgroup array", maps: []maps.Spec{cgArray}, asm: lookup4 + "r0 = 0\nexit", err: "cannot pass map_type 8 into func bpf_map_lookup_elem#1", kmsg: true}),
		egress(vcase{name: "task under cgroup from cgroup_skb", maps: []maps.Spec{cgArray}, asm: "r1 = map[fd:0] ll\nr2 = 0\ncall bpf_current_task_under_cgroup#37\nr0 &= 1\nexit"}),
	})
}

// TestSelftestSocketMaps covers sockmaps, sockhashes, reuseport arrays and
// socket storages.
func TestSelftestSocketMaps(t *testing.T) {
	typed := func(typ ebpf.ProgramType, attach ebpf.AttachType) func(vcase) vcase {
		return func(c vcase) vcase {
			c.typ, c.attach = typ, attach
			return c
		}
	}
	skb := typed(ebpf.SkSKB, ebpf.AttachSkSKBStreamVerdict)
	msg := typed(ebpf.SkMsg, ebpf.AttachSkMsgVerdict)
	ops := typed(ebpf.SockOps, 0)
	tc := typed(ebpf.SchedCLS, 0)
	reuse := typed(ebpf.SkReuseport, ebpf.AttachSkReuseportSelect)
	egress := typed(ebpf.CGroupSKB, ebpf.AttachCGroupInetEgress)
	sm, sh := []maps.Spec{sockMap}, []maps.Spec{sockHash}
	key := "*(u32 *)(r10 -4) = 0\nr3 = r10\nr3 += -4\n"
	out := "\nout: r0 = 0\nexit"
	// tc's and cgroup_skb's __sk_buff.sk, null-checked.
	sk := "r6 = r1\nr2 = *(u64 *)(r1 +168)\nif r2 == 0 goto out\n"
	sks := []maps.Spec{skStorage}
	getSk := sk + "r1 = map[fd:0] ll\nr3 = 0\nr4 = 1\ncall bpf_sk_storage_get#107\n"
	updateSk := "*(u32 *)(r10 -4) = 0\nr1 = map[fd:0] ll\nr3 = r2\nr2 = r10\nr2 += -4\nr4 = 0\ncall bpf_map_update_elem#2"
	runCases(t, []vcase{
		skb(vcase{name: "sk redirect map", maps: sm, asm: "r2 = map[fd:0] ll\nr3 = 0\nr4 = 0\ncall bpf_sk_redirect_map#52\nexit"}),
		skb(vcase{name: "sk redirect map with a sockhash", maps: sh, asm: "r2 = map[fd:0] ll\nr3 = 0\nr4 = 0\ncall bpf_sk_redirect_map#52\nexit", err: "cannot pass map_type 18 into func bpf_sk_redirect_map#52", kmsg: true}),
		skb(vcase{name: "sk redirect hash", maps: sh, asm: key + "r2 = map[fd:0] ll\nr4 = 0\ncall bpf_sk_redirect_hash#72\nexit"}),
		skb(vcase{name: "sk redirect hash key uninit", maps: sh, asm: "r3 = r10\nr3 += -4\nr2 = map[fd:0] ll\nr4 = 0\ncall bpf_sk_redirect_hash#72\nexit"}),
		msg(vcase{name: "msg redirect map", maps: sm, asm: "r2 = map[fd:0] ll\nr3 = 0\nr4 = 1\ncall bpf_msg_redirect_map#60\nexit"}),
		msg(vcase{name: "msg redirect hash", maps: sh, asm: key + "r2 = map[fd:0] ll\nr4 = 0\ncall bpf_msg_redirect_hash#71\nexit"}),
		msg(vcase{name: "msg redirect hash with a sockmap", maps: sm, asm: key + "r2 = map[fd:0] ll\nr4 = 0\ncall bpf_msg_redirect_hash#71\nexit", err: "cannot pass map_type 15 into func bpf_msg_redirect_hash#71", kmsg: true}),
		ops(vcase{name: "sock map update", maps: sm, asm: key + "r2 = map[fd:0] ll\nr4 = 0\ncall bpf_sock_map_update#53\nr0 = 1\nexit"}),
		ops(vcase{name: "sock hash update", maps: sh, asm: key + "r2 = map[fd:0] ll\nr4 = 0\ncall bpf_sock_hash_update#70\nr0 = 1\nexit"}),
		ops(vcase{name: "sock hash update with an array", maps: []maps.Spec{arrayMap}, asm: key + "r2 = map[fd:0] ll\nr4 = 0\ncall bpf_sock_hash_update#70\nr0 = 1\nexit", err: "cannot pass map_type 2 into func bpf_sock_hash_update#70", kmsg: true}),
		ops(vcase{name: "sockmap delete in sock_ops", maps: sm, asm: lookup4[:len(lookup4)-len("call bpf_map_lookup_elem#1\n")] + "call bpf_map_delete_elem#3\nr0 = 1\nexit"}),
		egress(vcase{name: "sockmap delete in cgroup_skb", maps: sm, asm: lookup4[:len(lookup4)-len("call bpf_map_lookup_elem#1\n")] + "call bpf_map_delete_elem#3\nr0 = 1\nexit", err: "cannot pass map_type 15 into func bpf_map_delete_elem#3", kmsg: true}),
		tc(vcase{name: "sockmap delete in tc", maps: sm, asm: lookup4[:len(lookup4)-len("call bpf_map_lookup_elem#1\n")] + "call bpf_map_delete_elem#3\nr0 = 1\nexit"}),
		tc(vcase{name: "sockmap update with a socket", maps: sm, asm: sk + updateSk + out}),
		tc(vcase{name: "sockhash update with a socket", maps: sh, asm: sk + updateSk + out}),
		tc(vcase{name: "sockmap update with stack", maps: sm, asm: "*(u64 *)(r10 -16) = 0\nr2 = r10\nr2 += -16\n" + updateSk + out, err: "R3 type=fp expected=sock_common, sock, tcp_sock, xdp_sock, ptr_, trusted_ptr_", kmsg: true}),
		tc(vcase{name: "sockmap update with an unchecked socket", maps: sm, asm: "r2 = *(u64 *)(r1 +168)\n" + updateSk + out, err: "R3 type=sock_common_or_null expected=sock_common, sock, tcp_sock, xdp_sock, ptr_, trusted_ptr_", kmsg: true}),
		egress(vcase{name: "sockmap update in cgroup_skb", maps: sm, asm: sk + updateSk + out, err: "cannot pass map_type 15 into func bpf_map_update_elem#2", klog: "cannot update sockmap in this context"}),
		ops(vcase{name: "sockmap update in sock_ops", maps: sm, asm: "r2 = *(u64 *)(r1 +184)\nif r2 == 0 goto out\n" + updateSk + out, err: "cannot pass map_type 15 into func bpf_map_update_elem#2", klog: "cannot update sockmap in this context"}),
		tc(vcase{name: "reuseport array lookup", maps: []maps.Spec{reuseArray}, asm: lookup4 + "r0 = 0\nexit", err: "cannot pass map_type 20 into func bpf_map_lookup_elem#1", kmsg: true}),
		reuse(vcase{name: "select reuseport", maps: []maps.Spec{reuseArray}, asm: key + "r2 = map[fd:0] ll\nr4 = 0\ncall bpf_sk_select_reuseport#82\nr0 = 1\nexit"}),
		reuse(vcase{name: "select reuseport from a sockmap", maps: sm, asm: key + "r2 = map[fd:0] ll\nr4 = 0\ncall bpf_sk_select_reuseport#82\nr0 = 1\nexit"}),
		reuse(vcase{name: "select reuseport from a hash", maps: []maps.Spec{hashMap}, asm: "*(u64 *)(r10 -8) = 0\nr3 = r10\nr3 += -8\nr2 = map[fd:0] ll\nr4 = 0\ncall bpf_sk_select_reuseport#82\nr0 = 1\nexit", err: "cannot pass map_type 1 into func bpf_sk_select_reuseport#82", kmsg: true}),
		// Socket storages.
		egress(vcase{name: "sk storage get", maps: sks, asm: getSk + "if r0 == 0 goto out\nr1 = *(u64 *)(r0 +0)\nr0 = 1\nexit" + out}),
		egress(vcase{name: "sk storage get unchecked", maps: sks, asm: getSk + "r1 = *(u64 *)(r0 +0)\nr0 = 1\nexit" + out, err: "R0 invalid mem access 'map_value_or_null'", kmsg: true}),
		egress(vcase{name: "sk storage get past the value", maps: sks, asm: getSk + "if r0 == 0 goto out\nr1 = *(u64 *)(r0 +4)\nr0 = 1\nexit" + out, err: "invalid access to map value, value_size=8 off=4 size=8", kmsg: true}),
		egress(vcase{name: "sk storage get with a value", maps: sks, asm: sk + "*(u64 *)(r10 -8) = 7\nr1 = map[fd:0] ll\nr3 = r10\nr3 += -8\nr4 = 1\ncall bpf_sk_storage_get#107" + out}),
		egress(vcase{name: "sk storage get with a short value", maps: sks, asm: sk + "*(u32 *)(r10 -4) = 7\nr1 = map[fd:0] ll\nr3 = r10\nr3 += -4\nr4 = 1\ncall bpf_sk_storage_get#107" + out, err: "invalid read from stack R3 off=-4 size=8", kmsg: true}),
		egress(vcase{name: "sk storage get with an unchecked socket", maps: sks, asm: "r2 = *(u64 *)(r1 +168)\nr1 = map[fd:0] ll\nr3 = 0\nr4 = 1\ncall bpf_sk_storage_get#107" + out, err: "R2 type=sock_common_or_null expected=sock_common, sock, tcp_sock, xdp_sock, ptr_, trusted_ptr_", kmsg: true}),
		egress(vcase{name: "sk storage get with stack", maps: sks, asm: "r2 = r10\nr1 = map[fd:0] ll\nr3 = 0\nr4 = 1\ncall bpf_sk_storage_get#107" + out, err: "R2 type=fp expected=sock_common, sock, tcp_sock, xdp_sock, ptr_, trusted_ptr_", kmsg: true}),
		egress(vcase{name: "sk storage get of a hash", maps: []maps.Spec{hashMap}, asm: sk + "r1 = map[fd:0] ll\nr3 = 0\nr4 = 1\ncall bpf_sk_storage_get#107" + out, err: "cannot pass map_type 1 into func bpf_sk_storage_get#107", kmsg: true}),
		egress(vcase{name: "sk storage delete", maps: sks, asm: sk + "r1 = map[fd:0] ll\ncall bpf_sk_storage_delete#108" + out}),
		typed(ebpf.CGroupSock, ebpf.AttachCGroupInetSockCreate)(vcase{name: "sk storage get of cgroup_sock's context", maps: sks, asm: "r2 = r1\nr1 = map[fd:0] ll\nr3 = 0\nr4 = 1\ncall bpf_sk_storage_get#107\nr0 = 1\nexit"}),
		typed(ebpf.CGroupSock, ebpf.AttachCGroupInetSockCreate)(vcase{name: "sk storage get of cgroup_sock's stack", maps: sks, asm: "r2 = r10\nr1 = map[fd:0] ll\nr3 = 0\nr4 = 1\ncall bpf_sk_storage_get#107\nr0 = 1\nexit", err: "R2 type=fp expected=ctx", kmsg: true}),
		egress(vcase{name: "sk storage lookup", maps: sks, asm: lookup4 + "r0 = 1\nexit", err: "cannot pass map_type 24 into func bpf_map_lookup_elem#1", kmsg: true}),
	})
}

// TestSelftestPercpuElem covers bpf_map_lookup_percpu_elem.
func TestSelftestPercpuElem(t *testing.T) {
	out := "\nout: r0 = 0\nexit"
	call := "*(u32 *)(r10 -4) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\nr3 = 1\ncall bpf_map_lookup_percpu_elem#195\n"
	runCases(t, []vcase{
		{name: "percpu elem", maps: []maps.Spec{perCPUArr}, asm: call + "if r0 == 0 goto out\nr0 = *(u64 *)(r0 +0)\nexit" + out},
		{name: "percpu elem may be null with a constant key", maps: []maps.Spec{perCPUArr}, asm: call + "r0 = *(u64 *)(r0 +0)\nexit", err: "R0 invalid mem access 'map_value_or_null'", kmsg: true},
		{name: "percpu elem past the value", maps: []maps.Spec{perCPUArr}, asm: call + "if r0 == 0 goto out\nr0 = *(u64 *)(r0 +8)\nexit" + out, err: "invalid access to map value, value_size=8 off=8 size=8", kmsg: true},
		{name: "percpu elem of an array", maps: []maps.Spec{arrayMap}, asm: call + "r0 = 0\nexit", err: "cannot pass map_type 2 into func bpf_map_lookup_percpu_elem#195", kmsg: true},
		{name: "percpu elem cpu uninit", maps: []maps.Spec{perCPUArr}, asm: "*(u32 *)(r10 -4) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_percpu_elem#195\nr0 = 0\nexit", err: "R3 !read_ok", kmsg: true},
	})
}
