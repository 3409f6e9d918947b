//go:build linux

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
	return kernelCanCallSpec(ebpf.ProgramSpec{Type: typ, AttachType: attach}, id)
}

// kernelCanCallSpec is kernelCanCall for a program of spec's type, attach
// type and target, flags: "call id; r0 = 0; exit" in place of its code.
func kernelCanCallSpec(spec ebpf.ProgramSpec, id int32) (can, ok bool, err error) {
	spec.License = "GPL"
	spec.Instructions = asm.Instructions{asm.BuiltinFunc(id).Call(), asm.Mov.Imm(asm.R0, 0), asm.Return()}
	p, err := ebpf.NewProgramWithOptions(&spec, ebpf.ProgramOptions{LogLevel: ebpf.LogLevelBranch, LogSizeStart: 1 << 16})
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

// TestTracingHelperSetsKernel compares the tracing types' sets with the
// running kernel's func_proto, helper by helper, as TestHelperSetsKernel
// does, for root loads (every tracing type needs CAP_PERFMON to load):
// kprobe, tracepoint, raw tracepoints and perf events, and the sets of the
// types that take BTF attach targets (tracing, lsm, syscall), for each
// attach type and hook whose rules differ.
func TestTracingHelperSetsKernel(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("not root")
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Skip(err)
	}
	for _, c := range []struct {
		name string
		spec ebpf.ProgramSpec
		set  progtype.HelperSet
	}{
		{"kprobe", ebpf.ProgramSpec{Type: ebpf.Kprobe}, progtype.KprobeHelpers},
		{"tracepoint", ebpf.ProgramSpec{Type: ebpf.TracePoint}, progtype.TracepointHelpers},
		{"raw_tracepoint", ebpf.ProgramSpec{Type: ebpf.RawTracepoint}, progtype.RawTracepointHelpers},
		{"raw_tracepoint_writable", ebpf.ProgramSpec{Type: ebpf.RawTracepointWritable}, progtype.RawTracepointHelpers},
		{"perf_event", ebpf.ProgramSpec{Type: ebpf.PerfEvent}, progtype.PerfEventHelpers},
		{"fentry", ebpf.ProgramSpec{Type: ebpf.Tracing, AttachType: ebpf.AttachTraceFEntry, AttachTo: "bpf_fentry_test1"}, progtype.TracingHelpers(ebpf.AttachTraceFEntry)},
		{"fexit", ebpf.ProgramSpec{Type: ebpf.Tracing, AttachType: ebpf.AttachTraceFExit, AttachTo: "bpf_fentry_test1"}, progtype.TracingHelpers(ebpf.AttachTraceFExit)},
		{"fmod_ret", ebpf.ProgramSpec{Type: ebpf.Tracing, AttachType: ebpf.AttachModifyReturn, AttachTo: "bpf_modify_return_test"}, progtype.TracingHelpers(ebpf.AttachModifyReturn)},
		{"tp_btf", ebpf.ProgramSpec{Type: ebpf.Tracing, AttachType: ebpf.AttachTraceRawTp, AttachTo: "sys_enter"}, progtype.TracingHelpers(ebpf.AttachTraceRawTp)},
		{"iter/task", ebpf.ProgramSpec{Type: ebpf.Tracing, AttachType: ebpf.AttachTraceIter, AttachTo: "task"}, progtype.TracingHelpers(ebpf.AttachTraceIter)},
		{"lsm/file_mprotect", ebpf.ProgramSpec{Type: ebpf.LSM, AttachType: ebpf.AttachLSMMac, AttachTo: "file_mprotect"}, progtype.LSMHelpers(ebpf.AttachLSMMac, "file_mprotect", false)},
		{"lsm.s/file_open", ebpf.ProgramSpec{Type: ebpf.LSM, AttachType: ebpf.AttachLSMMac, AttachTo: "file_open", Flags: unix.BPF_F_SLEEPABLE}, progtype.LSMHelpers(ebpf.AttachLSMMac, "file_open", true)},
		{"lsm_cgroup/file_open", ebpf.ProgramSpec{Type: ebpf.LSM, AttachType: ebpf.AttachLSMCgroup, AttachTo: "file_open"}, progtype.LSMHelpers(ebpf.AttachLSMCgroup, "file_open", false)},
		{"lsm_cgroup/socket_post_create", ebpf.ProgramSpec{Type: ebpf.LSM, AttachType: ebpf.AttachLSMCgroup, AttachTo: "socket_post_create"}, progtype.LSMHelpers(ebpf.AttachLSMCgroup, "socket_post_create", false)},
		{"lsm_cgroup/sock_graft", ebpf.ProgramSpec{Type: ebpf.LSM, AttachType: ebpf.AttachLSMCgroup, AttachTo: "sock_graft"}, progtype.LSMHelpers(ebpf.AttachLSMCgroup, "sock_graft", false)},
		{"syscall", ebpf.ProgramSpec{Type: ebpf.Syscall, Flags: unix.BPF_F_SLEEPABLE}, progtype.SyscallHelpers},
	} {
		t.Run(c.name, func(t *testing.T) {
			compared, allowed := 0, 0
			for id := int32(0); id <= 211; id++ {
				kernelCan, ok, err := kernelCanCallSpec(c.spec, id)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					t.Skip("bpf() not permitted")
				}
				compared++
				if kernelCan {
					allowed++
				}
				r, in := c.set[isa.HelperName(id)]
				if ours := in && r.Cap <= progtype.CapPerfmon; ours != kernelCan {
					t.Errorf("%s: kernel %s, bpfvm %s", isa.HelperLabel(id), verdict(kernelCan), verdict(ours))
				}
			}
			t.Logf("%d helpers compared, the kernel allows %d", compared, allowed)
		})
	}
}
