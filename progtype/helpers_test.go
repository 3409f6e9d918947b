package progtype_test

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/progtype"
)

// kernelType is a kernel program type with a func_proto set here, for an
// expected attach type.
type kernelType struct {
	typ    ebpf.ProgramType
	attach ebpf.AttachType
}

// kernelTypes are the kernel program types with a func_proto set here, by
// attach type where the set depends on it.
var kernelTypes = []kernelType{
	{ebpf.SocketFilter, 0}, {ebpf.SchedCLS, 0}, {ebpf.SchedACT, 0}, {ebpf.XDP, 0},
	{ebpf.CGroupSKB, ebpf.AttachCGroupInetIngress}, {ebpf.CGroupSKB, ebpf.AttachCGroupInetEgress},
	{ebpf.SkSKB, 0}, {ebpf.SkMsg, 0}, {ebpf.SockOps, 0}, {ebpf.SockOps, ebpf.AttachCGroupSockOps},
	{ebpf.SockOps, ebpf.AttachCGroupSysctl}, {ebpf.SkReuseport, 0},
	{ebpf.CGroupSock, ebpf.AttachCGroupInetSockCreate}, {ebpf.CGroupSock, ebpf.AttachCgroupInetSockRelease},
	{ebpf.CGroupSock, ebpf.AttachCGroupInet4PostBind}, {ebpf.CGroupSock, ebpf.AttachCGroupInet6PostBind},
	{ebpf.CGroupSockAddr, ebpf.AttachCGroupInet4Bind}, {ebpf.CGroupSockAddr, ebpf.AttachCGroupInet6Bind},
	{ebpf.CGroupSockAddr, ebpf.AttachCGroupInet4Connect}, {ebpf.CGroupSockAddr, ebpf.AttachCGroupInet6Connect},
	{ebpf.CGroupSockAddr, ebpf.AttachCgroupUnixConnect},
	{ebpf.CGroupSockAddr, ebpf.AttachCgroupInet4GetPeername}, {ebpf.CGroupSockAddr, ebpf.AttachCgroupInet6GetPeername},
	{ebpf.CGroupSockAddr, ebpf.AttachCgroupUnixGetpeername},
	{ebpf.CGroupSockAddr, ebpf.AttachCgroupInet4GetSockname}, {ebpf.CGroupSockAddr, ebpf.AttachCgroupInet6GetSockname},
	{ebpf.CGroupSockAddr, ebpf.AttachCgroupUnixGetsockname},
	{ebpf.CGroupSockAddr, ebpf.AttachCGroupUDP4Sendmsg}, {ebpf.CGroupSockAddr, ebpf.AttachCGroupUDP6Sendmsg},
	{ebpf.CGroupSockAddr, ebpf.AttachCgroupUnixSendmsg},
	{ebpf.CGroupSockAddr, ebpf.AttachCGroupUDP4Recvmsg}, {ebpf.CGroupSockAddr, ebpf.AttachCGroupUDP6Recvmsg},
	{ebpf.CGroupSockAddr, ebpf.AttachCgroupUnixRecvmsg},
	{ebpf.SkLookup, ebpf.AttachSkLookup}, {ebpf.CGroupSysctl, 0}, {ebpf.CGroupSysctl, ebpf.AttachCGroupSysctl},
	{ebpf.CGroupDevice, ebpf.AttachCGroupDevice},
	{ebpf.CGroupSockopt, ebpf.AttachCGroupSetsockopt}, {ebpf.CGroupSockopt, ebpf.AttachCGroupGetsockopt},
	{ebpf.CGroupDevice, 0}, {ebpf.SkReuseport, ebpf.AttachSkReuseportSelect},
	{ebpf.SkReuseport, ebpf.AttachSkReuseportSelectOrMigrate},
	{ebpf.LWTIn, 0}, {ebpf.LWTOut, 0}, {ebpf.LWTXmit, 0}, {ebpf.FlowDissector, 0},
	{ebpf.LWTSeg6Local, 0},
	{ebpf.Kprobe, 0}, {ebpf.Kprobe, ebpf.AttachTraceKprobeMulti}, {ebpf.TracePoint, 0},
	{ebpf.RawTracepoint, 0}, {ebpf.RawTracepointWritable, 0}, {ebpf.PerfEvent, 0},
}

// TestHelperSetNames checks that every set names kernel helpers only: a
// typo would make a helper silently unavailable.
func TestHelperSetNames(t *testing.T) {
	sets := map[string]progtype.HelperSet{"base": progtype.BaseHelpers()}
	for _, kt := range kernelTypes {
		pt, err := progtype.OfAttach(kt.typ, kt.attach)
		if err != nil {
			t.Fatal(err)
		}
		sets[pt.Name] = pt.Helpers
	}
	for set, s := range sets {
		for name := range s {
			if _, ok := isa.HelperID(name); !ok {
				t.Errorf("%s: %s is not a kernel helper", set, name)
			}
		}
	}
}

func TestCanCall(t *testing.T) {
	for _, c := range []struct {
		name   string
		typ    *progtype.Type
		helper string
		id     int32
		cap    progtype.Cap
		want   bool
	}{
		{"xdp adjust_head", progtype.XDP, "bpf_xdp_adjust_head", 0, progtype.CapNone, true},
		{"tc adjust_head", progtype.SchedCLS, "bpf_xdp_adjust_head", 0, progtype.CapPerfmon, false},
		{"socket store_bytes", progtype.SocketFilter, "bpf_skb_store_bytes", 0, progtype.CapPerfmon, false},
		{"tc store_bytes", progtype.SchedACT, "bpf_skb_store_bytes", 0, progtype.CapNone, true},
		{"socket lookup unprivileged", progtype.SocketFilter, "bpf_map_lookup_elem", 0, progtype.CapNone, true},
		{"socket loop unprivileged", progtype.SocketFilter, "bpf_loop", 0, progtype.CapNone, false},
		{"socket loop CAP_BPF", progtype.SocketFilter, "bpf_loop", 0, progtype.CapBPF, true},
		{"socket printk CAP_BPF", progtype.SocketFilter, "bpf_trace_printk", 0, progtype.CapBPF, false},
		{"socket printk CAP_PERFMON", progtype.SocketFilter, "bpf_trace_printk", 0, progtype.CapPerfmon, true},
		{"tc skc_to_tcp_sock CAP_BPF", progtype.SchedCLS, "bpf_skc_to_tcp_sock", 0, progtype.CapBPF, false},
		{"socket perf output unprivileged", progtype.SocketFilter, "bpf_perf_event_output", 0, progtype.CapNone, true},
		{"xdp host helper", progtype.XDP, "", 10000, progtype.CapNone, true},
		{"raw anything", progtype.Raw, "bpf_skb_store_bytes", 0, progtype.CapNone, true},
		{"unspec", progtype.XDP, "bpf_unspec", 0, progtype.CapPerfmon, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := c.id
			if c.helper != "" {
				var ok bool
				if id, ok = isa.HelperID(c.helper); !ok {
					t.Fatalf("no helper %s", c.helper)
				}
			}
			if got := c.typ.CanCall(id, c.cap); got != c.want {
				t.Errorf("CanCall(%s#%d, %d) = %v, want %v", c.helper, id, c.cap, got, c.want)
			}
		})
	}
}
