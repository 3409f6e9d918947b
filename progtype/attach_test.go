package progtype_test

import (
	"errors"
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm/progtype"
)

// TestKernelTypesValid checks every kernel type's table as a host type's
// would be checked.
func TestKernelTypesValid(t *testing.T) {
	for _, kt := range kernelTypes {
		pt, err := progtype.OfAttach(kt.typ, kt.attach)
		if err != nil {
			t.Fatalf("%s/%s: %v", kt.typ, kt.attach, err)
		}
		if err := pt.Validate(); err != nil {
			t.Errorf("%s/%s: %v", kt.typ, kt.attach, err)
		}
	}
}

// TestOfAttach checks the attach types each type takes, as the kernel's
// bpf_prog_load_check_attach.
func TestOfAttach(t *testing.T) {
	for _, c := range []struct {
		typ    ebpf.ProgramType
		attach ebpf.AttachType
		ok     bool
	}{
		{ebpf.CGroupSKB, ebpf.AttachCGroupInetIngress, true},
		{ebpf.CGroupSKB, ebpf.AttachCGroupInetEgress, true},
		{ebpf.CGroupSKB, ebpf.AttachCGroupInetSockCreate, false},
		{ebpf.CGroupSock, 0, true},
		{ebpf.CGroupSock, ebpf.AttachCGroupInet4PostBind, true},
		{ebpf.CGroupSock, ebpf.AttachCGroupInet4Bind, false},
		{ebpf.CGroupSockAddr, 0, false},
		{ebpf.CGroupSockAddr, ebpf.AttachCgroupUnixRecvmsg, true},
		{ebpf.SkLookup, 0, false},
		{ebpf.SkLookup, ebpf.AttachSkLookup, true},
		{ebpf.CGroupSockopt, 0, false},
		{ebpf.CGroupSockopt, ebpf.AttachCGroupGetsockopt, true},
		{ebpf.SkReuseport, 0, true},
		{ebpf.SkReuseport, ebpf.AttachSkLookup, false},
		{ebpf.SkReuseport, ebpf.AttachSkReuseportSelectOrMigrate, true},
		{ebpf.SockOps, ebpf.AttachCGroupSockOps, true},
		{ebpf.CGroupSysctl, 0, true},
		{ebpf.XDP, ebpf.AttachXDP, true},
	} {
		_, err := progtype.OfAttach(c.typ, c.attach)
		if (err == nil) != c.ok {
			t.Errorf("%s/%s: %v", c.typ, c.attach, err)
		}
		if err != nil && !errors.Is(err, progtype.ErrAttachType) {
			t.Errorf("%s/%s: %v is not ErrAttachType", c.typ, c.attach, err)
		}
		if c.ok || os.Getuid() != 0 || rlimit.RemoveMemlock() != nil {
			continue
		}
		// The kernel refuses it too.
		p, kerr := ebpf.NewProgram(&ebpf.ProgramSpec{Type: c.typ, AttachType: c.attach, License: "GPL",
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}})
		if kerr == nil {
			p.Close()
			t.Errorf("%s/%s: the kernel takes it", c.typ, c.attach)
		}
	}
}
