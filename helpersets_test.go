package bpfvm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/verifier"
	"github.com/bpfvm/bpfvm/vm"
)

// TestHelperSetLoads covers how a load treats the per-type helper sets
// (progtype.Type.Helpers): a helper outside the type's set is the
// verifier's rejection with the kernel's message, implemented or not; one
// inside it that bpfvm lacks is vm.ErrHelper; unverified programs and types
// without a set may call every helper; ids without a kernel name are the
// host's.
func TestHelperSetLoads(t *testing.T) {
	host := &progtype.Type{Name: "host", ContextSize: 8, Fields: []progtype.Field{{Name: "x", Offset: 0, Size: 8, Read: true}}}
	hostBase := *host
	hostBase.Helpers = progtype.BaseHelpers()
	nop := func(*vm.Env, uint64, uint64, uint64, uint64, uint64) (uint64, error) { return 0, nil }
	for _, c := range []struct {
		name string
		typ  ebpf.ProgramType
		opts bpfvm.ProgramOptions
		asm  string
		// err is a substring of the load error; "" loads.
		err       string
		errHelper bool
	}{
		{name: "in set, lacking", typ: ebpf.XDP, asm: "r1 = 0\ncall bpf_this_cpu_ptr#154", err: "bpf_this_cpu_ptr#154", errHelper: true},
		{name: "in set, lacking, tc", typ: ebpf.SchedCLS, asm: "call bpf_skb_ecn_set_ce#97", err: "bpf_skb_ecn_set_ce#97", errHelper: true},
		{name: "outside set", typ: ebpf.SocketFilter, asm: "r2 = 0\ncall bpf_skb_pull_data#39", err: "program of this type cannot use helper bpf_skb_pull_data#39"},
		{name: "outside set, implemented", typ: ebpf.XDP, asm: "r2 = 0\nr3 = r10\nr3 += -8\nr4 = 8\ncall bpf_skb_load_bytes#26", err: "program of this type cannot use helper bpf_skb_load_bytes#26"},
		{name: "unprivileged, CAP_BPF tier", typ: ebpf.SocketFilter, opts: bpfvm.ProgramOptions{Unprivileged: true}, asm: "call bpf_jiffies64#118", err: "program of this type cannot use helper bpf_jiffies64#118"},
		{name: "unprivileged, CAP_PERFMON tier, lacking", typ: ebpf.SocketFilter, opts: bpfvm.ProgramOptions{Unprivileged: true}, asm: "r1 = 0\ncall bpf_this_cpu_ptr#154", err: "program of this type cannot use helper bpf_this_cpu_ptr#154"},
		{name: "privileged, CAP_PERFMON tier, lacking", typ: ebpf.SocketFilter, asm: "r1 = 0\ncall bpf_this_cpu_ptr#154", err: "bpf_this_cpu_ptr#154", errHelper: true},
		{name: "in set", typ: ebpf.SchedACT, asm: "call bpf_jiffies64#118"},
		{name: "unverified", typ: ebpf.SchedCLS, opts: bpfvm.ProgramOptions{NoVerify: true}, asm: "r2 = 0\ncall bpf_xdp_adjust_head#44"},
		{name: "host type without a set", opts: bpfvm.ProgramOptions{Type: host}, asm: "r2 = 0\ncall bpf_xdp_adjust_head#44"},
		{name: "host type with the base set", opts: bpfvm.ProgramOptions{Type: &hostBase}, asm: "r2 = 0\ncall bpf_xdp_adjust_head#44", err: "program of this type cannot use helper bpf_xdp_adjust_head#44"},
		{name: "host type with the base set, base helper", opts: bpfvm.ProgramOptions{Type: &hostBase}, asm: "call bpf_ktime_get_ns#5"},
		{name: "host helper in a kernel type", typ: ebpf.XDP, opts: bpfvm.ProgramOptions{Helpers: map[int32]vm.Helper{10000: nop}, HelperProtos: map[int32]*verifier.Proto{10000: {Name: "host"}}}, asm: "call 10000"},
		{name: "host helper in a kernel type, unverified", typ: ebpf.XDP, opts: bpfvm.ProgramOptions{NoVerify: true, Helpers: map[int32]vm.Helper{10000: nop}}, asm: "call 10000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			insns, err := isa.Assemble(c.asm + "\nr0 = 0\nexit")
			if err != nil {
				t.Fatal(err)
			}
			p, err := bpfvm.NewRawProgram("p", c.typ, insns, c.opts)
			if err == nil {
				p.Close()
			}
			var ve *bpfvm.VerifierError
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("load: %v", err)
			case c.err == "":
			case err == nil:
				t.Fatalf("loaded, want %q", c.err)
			case !strings.Contains(err.Error(), c.err):
				t.Errorf("error %q, want %q", err, c.err)
			case errors.Is(err, vm.ErrHelper) != c.errHelper:
				t.Errorf("error %v: errors.Is(vm.ErrHelper) = %v, want %v", err, !c.errHelper, c.errHelper)
			case !c.errHelper && !errors.As(err, &ve):
				t.Errorf("error %v is not a VerifierError", err)
			}
		})
	}
}

// A call of an id the kernel has no helper for fails only where the
// verifier reaches it, as in the kernel: "invalid func".
func TestUnknownHelperIDUnreached(t *testing.T) {
	for _, c := range []struct {
		src string
		err string
	}{
		{"r0 = 0\nif r0 == 0 goto +1\ncall 99999\nexit", ""},
		{"r0 = 0\ncall 99999\nexit", "invalid func unknown#99999"},
	} {
		insns, err := isa.Assemble(c.src)
		if err != nil {
			t.Fatal(err)
		}
		p, err := bpfvm.NewRawProgram("p", ebpf.XDP, insns, bpfvm.ProgramOptions{})
		if c.err == "" {
			if err != nil {
				t.Errorf("%q: %v", c.src, err)
				continue
			}
			p.Close()
		} else if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: %v, want %q", c.src, err, c.err)
		}
		if os.Getuid() != 0 || rlimit.RemoveMemlock() != nil {
			continue
		}
		kinsns, err := asm.AppendInstructions(nil, bytes.NewReader(isa.EncodeProgram(insns)), binary.LittleEndian, "linux")
		if err != nil {
			t.Fatal(err)
		}
		kp, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, Instructions: kinsns, License: "GPL"})
		var ve *ebpf.VerifierError
		switch {
		case err == nil:
			kp.Close()
			if c.err != "" {
				t.Errorf("%q: the kernel loads it", c.src)
			}
		case errors.As(err, &ve):
			if c.err == "" || !strings.Contains(strings.Join(ve.Log, "\n"), c.err) {
				t.Errorf("%q: kernel: %v", c.src, err)
			}
		}
	}
}

// A program type gets its own variant of a helper: XDP's
// bpf_get_cgroup_classid takes no argument, tc's the skb; both load and
// run.
func TestHelperVariantLoads(t *testing.T) {
	for _, c := range []struct {
		typ ebpf.ProgramType
		src string
	}{
		{ebpf.XDP, "r1 = 0\ncall bpf_get_cgroup_classid#17\nexit"},
		{ebpf.SchedCLS, "call bpf_get_cgroup_classid#17\nexit"},
	} {
		insns, err := isa.Assemble(c.src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
			p, err := bpfvm.NewRawProgram("classid", c.typ, insns, bpfvm.ProgramOptions{Engine: e})
			if err != nil {
				t.Fatalf("%s %s: %v", c.typ, e, err)
			}
			if r0, err := p.Run(&bpfvm.RunOptions{Data: make([]byte, 64)}); err != nil || r0 != 0 {
				t.Errorf("%s %s: %d, %v; want the test run's class id 0", c.typ, e, r0, err)
			}
			p.Close()
		}
	}
}
