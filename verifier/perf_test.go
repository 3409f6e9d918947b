package verifier_test

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/maps"
)

// TestPerfEventOutput: bpf_perf_event_output's prototype (ctx, map, flags,
// read-only memory, size or zero), the map types it takes and that perf
// event arrays take only it, and the program types that may call it.
func TestPerfEventOutput(t *testing.T) {
	perfArray := maps.Spec{Name: "events", Type: maps.PerfEventArray, KeySize: 4, ValueSize: 4, MaxEntries: 2}
	array := maps.Spec{Name: "a", Type: maps.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1}
	pm := []maps.Spec{perfArray}
	const buf = "*(u64 *)(r10 -8) = 0\n"
	const call = "r2 = map[fd:0] ll\nr3 = 0xffffffff ll\nr4 = r10\nr4 += -8\nr5 = 8\ncall bpf_perf_event_output#25\nr0 = 0\nexit"
	var cases []vcase
	for _, typ := range []ebpf.ProgramType{ebpf.SchedCLS, ebpf.SchedACT, ebpf.XDP, ebpf.SocketFilter} {
		cases = append(cases,
			vcase{name: typ.String() + " output", typ: typ, maps: pm, asm: buf + call},
			vcase{name: typ.String() + " output size 0", typ: typ, maps: pm, asm: "r2 = map[fd:0] ll\nr3 = 0\nr4 = r10\nr4 += -8\nr5 = 0\ncall bpf_perf_event_output#25\nr0 = 0\nexit"},
		)
	}
	cases = append(cases, []vcase{
		{name: "flags from the packet", typ: ebpf.SchedCLS, maps: pm, asm: buf + "r3 = *(u32 *)(r1 +0)\nr2 = map[fd:0] ll\nr4 = r10\nr4 += -8\nr5 = 8\ncall bpf_perf_event_output#25\nr0 = 0\nexit"},
		{name: "output to an array", typ: ebpf.SchedCLS, maps: []maps.Spec{array}, asm: buf + call, err: "cannot pass map_type 2 into func bpf_perf_event_output#25", kmsg: true},
		{name: "lookup in a perf event array", typ: ebpf.SchedCLS, maps: pm, asm: "*(u32 *)(r10 -4) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\nr0 = 0\nexit", err: "cannot pass map_type 4 into func bpf_map_lookup_elem#1", kmsg: true},
		{name: "update of a perf event array", typ: ebpf.SchedCLS, maps: pm, asm: "*(u64 *)(r10 -8) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -8\nr3 = r10\nr3 += -8\nr4 = 0\ncall bpf_map_update_elem#2\nr0 = 0\nexit", err: "cannot pass map_type 4 into func bpf_map_update_elem#2", kmsg: true},
		{name: "ringbuf output to a perf event array", typ: ebpf.SchedCLS, maps: pm, asm: buf + "r1 = map[fd:0] ll\nr2 = r10\nr2 += -8\nr3 = 8\nr4 = 0\ncall bpf_ringbuf_output#130\nr0 = 0\nexit", err: "cannot pass map_type 4 into func bpf_ringbuf_output#130", kmsg: true},
		{name: "ctx not in r1", typ: ebpf.SchedCLS, maps: pm, asm: buf + "r1 = 0\n" + call, err: "R1 type=scalar expected=ctx", kmsg: true},
		{name: "modified ctx", typ: ebpf.SchedCLS, maps: pm, asm: buf + "r1 += 8\n" + call, err: "dereference of modified ctx ptr R1 off=8 disallowed", kmsg: true},
		{name: "map not in r2", typ: ebpf.SchedCLS, maps: pm, asm: buf + "r2 = 0\nr3 = 0\nr4 = r10\nr4 += -8\nr5 = 8\ncall bpf_perf_event_output#25\nr0 = 0\nexit", err: "R2 type=scalar expected=map_ptr", kmsg: true},
		// Privileged programs may pass uninitialised stack (allow_uninit_stack).
		{name: "data uninitialised", typ: ebpf.SchedCLS, maps: pm, asm: call},
		{name: "data uninitialised unprivileged", typ: ebpf.SocketFilter, maps: pm, asm: call, unpriv: true, err: "invalid read from stack R4 off=-8 size=8", kmsg: true},
		{name: "data past the stack", typ: ebpf.SchedCLS, maps: pm, asm: buf + "r2 = map[fd:0] ll\nr3 = 0\nr4 = r10\nr4 += -8\nr5 = 16\ncall bpf_perf_event_output#25\nr0 = 0\nexit", err: "invalid read from stack R4 off=-8 size=16", kmsg: true},
		{name: "size not constant", typ: ebpf.SchedCLS, maps: pm, asm: buf + "r5 = *(u32 *)(r1 +0)\nr2 = map[fd:0] ll\nr3 = 0\nr4 = r10\nr4 += -8\ncall bpf_perf_event_output#25\nr0 = 0\nexit", err: "R5 unbounded memory access", kmsg: true},
		{name: "data from the packet", typ: ebpf.SchedCLS, maps: pm, asm: "r6 = r1\nr4 = *(u32 *)(r6 +76)\nr7 = *(u32 *)(r6 +80)\nr8 = r4\nr8 += 8\nif r8 > r7 goto out\nr1 = r6\nr2 = map[fd:0] ll\nr3 = 0\nr5 = 8\ncall bpf_perf_event_output#25\nout: r0 = 0\nexit", err: "helper access to the packet is not allowed", kmsg: true},
		// The tracing variants: the kernel gives them only to
		// BPF_PROG_TYPE_TRACING (fentry/fexit on skb and XDP functions).
		{name: "skb_output from tc", typ: ebpf.SchedCLS, maps: pm, asm: buf + "r2 = map[fd:0] ll\nr3 = 0\nr4 = r10\nr4 += -8\nr5 = 8\ncall bpf_skb_output#111\nr0 = 0\nexit", err: "program of this type cannot use helper bpf_skb_output#111", kmsg: true},
		{name: "xdp_output from xdp", typ: ebpf.XDP, maps: pm, asm: buf + "r2 = map[fd:0] ll\nr3 = 0\nr4 = r10\nr4 += -8\nr5 = 8\ncall bpf_xdp_output#121\nr0 = 0\nexit", err: "program of this type cannot use helper bpf_xdp_output#121", kmsg: true},
	}...)
	runCases(t, cases)
}
