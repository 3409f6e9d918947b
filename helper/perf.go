package helper

import (
	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// perfHelpers write to perf event arrays. bpf_perf_event_output is the
// networking variant (the kernel's bpf_skb_event_output_proto and
// bpf_xdp_event_output_proto), for the types whose func_proto gives it,
// and the tracing types' (bpf_perf_event_output_proto and its tracepoint
// and raw tracepoint forms), which outputs data only. bpf_skb_output and
// bpf_xdp_output (BPF_PROG_TYPE_TRACING only) are not implemented.
var perfHelpers = []Helper{
	{Proto: Proto{Name: "bpf_perf_event_output", Args: [5]ArgType{ArgCtx, ArgConstMapPtr, ArgAnything, ArgMem, ArgConstSizeOrZero}}, Func: helperPerfEventOutput},
}

// helperPerfEventOutput is bpf_perf_event_output(ctx, map, flags, data,
// size) as the networking types have it (the kernel's bpf_skb_event_output
// and bpf_xdp_event_output): a sample of the size bytes at data, followed
// by the first (flags & BPF_F_CTXLEN_MASK) >> 32 bytes of the packet, in
// the ring of the slot flags' index selects (BPF_F_CURRENT_CPU: the
// runner's). -EINVAL for other flags, -EFAULT when the packet is shorter
// than the bytes asked for, then the errors of maps.PerfEvents.Output.
// The socket and cgroup types without an skb have the kernel's
// bpf_event_output_data instead, which appends nothing: -EINVAL for a
// packet length.
func helperPerfEventOutput(e *vm.Env, _, r2, r3, r4, r5 uint64) (uint64, error) {
	m, err := mapArg(e, r2)
	if err != nil {
		return 0, err
	}
	r := runner.Of(e)
	if r3&^(maps.PerfCtxLenMask|maps.PerfIndexMask) != 0 || r3&maps.PerfCtxLenMask != 0 && dataOnlyOutput(r.Program().Kind) {
		return neg(einval), nil
	}
	meta, err := e.Bytes(r4, r5, false)
	if err != nil {
		return 0, err
	}
	pkt := r.PacketBytes()
	n := (r3 & maps.PerfCtxLenMask) >> 32
	if n > uint64(len(pkt)) {
		return neg(efault), nil
	}
	pa, ok := m.(*maps.PerfEvents)
	if !ok {
		// Only unverified programs get here.
		return neg(einval), nil
	}
	return errno(pa.Output(r.CPU(), r3&maps.PerfIndexMask, meta, pkt[:n])), nil
}

// dataOnlyOutput reports whether programs of kind output samples with the
// kernel's bpf_event_output_data: their context has no skb or xdp buffer
// to append.
func dataOnlyOutput(kind ebpf.ProgramType) bool {
	switch kind {
	case ebpf.SkMsg, ebpf.SockOps, ebpf.CGroupSock, ebpf.CGroupSockAddr, ebpf.CGroupSysctl,
		ebpf.CGroupSockopt, ebpf.CGroupDevice, ebpf.SkLookup,
		ebpf.Kprobe, ebpf.TracePoint, ebpf.RawTracepoint, ebpf.RawTracepointWritable, ebpf.PerfEvent:
		return true
	}
	return false
}
