package progtype_test

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

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

// TestHelperSetsKernel compares every type's set with the running kernel's
// func_proto, helper by helper: a program calling helper id with nothing
// else set up is rejected with "program of this type cannot use helper"
// exactly when the helper is outside the type's set (any other verdict or
// message means the kernel found the helper's prototype). Root loads have
// every capability (CapPerfmon); a thread with CAP_BPF and CAP_NET_ADMIN
// only checks the CapBPF level. Loads without CAP_BPF (CapNone) need
// kernel.unprivileged_bpf_disabled=0 and are compared where it is.
func TestHelperSetsKernel(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("not root")
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Skip(err)
	}
	levels := []struct {
		name string
		cap  progtype.Cap
		keep []int // the capabilities the loading thread keeps
	}{
		{"CAP_PERFMON", progtype.CapPerfmon, nil},
		{"CAP_BPF", progtype.CapBPF, []int{unix.CAP_BPF, unix.CAP_NET_ADMIN}},
		{"unprivileged", progtype.CapNone, []int{}},
	}
	for _, l := range levels {
		t.Run(l.name, func(t *testing.T) {
			mismatches, compared := kernelSets(t, l.keep, l.cap)
			if compared == 0 {
				t.Skip("bpf() not permitted at this level")
			}
			for _, m := range mismatches {
				t.Error(m)
			}
			t.Logf("%d helper and type pairs compared", compared)
		})
	}
}

// kernelSets loads the probes on a thread of its own that keeps only the
// capabilities keep (all if nil), and returns the disagreements and the
// number of comparisons.
func kernelSets(t *testing.T, keep []int, c progtype.Cap) ([]string, int) {
	type result struct {
		mismatches []string
		compared   int
		allowed    int
		err        error
	}
	done := make(chan result)
	go func() {
		var r result
		defer func() { done <- r }()
		// The thread never unlocks: it exits with the goroutine, its
		// capabilities with it.
		runtime.LockOSThread()
		if keep != nil {
			if r.err = dropCaps(keep); r.err != nil {
				return
			}
		}
		for _, kt := range kernelTypes {
			pt, _ := progtype.OfAttach(kt.typ, kt.attach)
			for id := int32(0); id <= 211; id++ {
				kernelCan, ok, err := kernelCanCall(kt.typ, kt.attach, id)
				if err != nil {
					r.err = err
					return
				}
				if !ok {
					return // bpf() not permitted
				}
				r.compared++
				if kernelCan {
					r.allowed++
				}
				if ours := pt.CanCall(id, c); ours != kernelCan {
					r.mismatches = append(r.mismatches, pt.Name+"/"+kt.attach.String()+": "+isa.HelperLabel(id)+": kernel "+verdict(kernelCan)+", bpfvm "+verdict(ours))
				}
			}
		}
	}()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Logf("the kernel allows %d of %d", r.allowed, r.compared)
	return r.mismatches, r.compared
}

func verdict(can bool) string {
	if can {
		return "allows"
	}
	return "refuses"
}

// kernelCanCall loads "call id; r0 = 0; exit" and reports whether the
// kernel found a prototype for the helper, and whether bpf() was permitted.
func kernelCanCall(typ ebpf.ProgramType, attach ebpf.AttachType, id int32) (can, ok bool, err error) {
	p, err := ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{
		Type:         typ,
		AttachType:   attach,
		License:      "GPL",
		Instructions: asm.Instructions{asm.BuiltinFunc(id).Call(), asm.Mov.Imm(asm.R0, 0), asm.Return()},
	}, ebpf.ProgramOptions{LogLevel: ebpf.LogLevelBranch, LogSizeStart: 1 << 16})
	var ve *ebpf.VerifierError
	switch {
	case err == nil:
		p.Close()
		return true, true, nil
	case errors.As(err, &ve):
		return !strings.Contains(strings.Join(ve.Log, "\n"), "program of this type cannot use helper"), true, nil
	case errors.Is(err, os.ErrPermission):
		return false, false, nil
	}
	return false, false, err
}

// dropCaps leaves the calling thread only the effective capabilities keep.
func dropCaps(keep []int) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	data[0].Effective, data[1].Effective = 0, 0
	for _, c := range keep {
		data[c/32].Effective |= 1 << (c % 32)
	}
	return unix.Capset(&hdr, &data[0])
}
