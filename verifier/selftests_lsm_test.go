package verifier_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/verifier"
)

// LSM programs: the hook's arguments and return value in the context,
// the return ranges of check_return_code, sleepable hooks and the maps
// sleepable programs may use. The kernel compares where it loads LSM
// programs (it needs BPF LSM and trampolines; kernels without give EPERM
// and the comparison is skipped).
func TestLSMPrograms(t *testing.T) {
	mac, cg := ebpf.AttachLSMMac, ebpf.AttachLSMCgroup
	lsm := func(name, hook, asm, err string) vcase {
		return vcase{name: name, typ: ebpf.LSM, attach: mac, attachTo: hook, asm: asm, err: err, kmsg: err != ""}
	}
	sleepable := func(c vcase) vcase { c.flags = verifier.FlagSleepable; return c }
	// ctxErr checks the log line before the context access error too.
	ctxErr := func(c vcase, line string) vcase { c.kmsg, c.klog = false, line; return c }
	perf := maps.Spec{Name: "perf", Type: maps.PerfEventArray, KeySize: 4, ValueSize: 4, MaxEntries: 4}
	cases := []vcase{
		lsm("return 0", "file_open", "r0 = 0\nexit", ""),
		lsm("return -EPERM", "file_open", "r0 = -1\nexit", ""),
		lsm("return -MAX_ERRNO", "file_open", "r0 = -4095\nexit", ""),
		lsm("return 1", "file_open", "r0 = 1\nexit", "At program exit the register R0 has smin=1 smax=1 should have been in [-4095, 0]"),
		lsm("return -4096", "file_open", "r0 = -4096\nexit", "At program exit the register R0 has smin=-4096 smax=-4096 should have been in [-4095, 0]"),
		// Only the low 32 bits count: 0xffffffff is -1 as an int.
		lsm("return u32 -1", "file_open", "w0 = -1\nexit", ""),
		lsm("return unknown", "file_open", "r0 = *(u64 *)(r1 +0)\nexit", "At program exit the register R0 is not a known value (trusted_ptr_)"),
		// The return value slot after the argument: within the range.
		lsm("return the previous verdict", "file_open", "r0 = *(u64 *)(r1 +8)\nexit", ""),
		lsm("previous verdict is at most 0", "file_open", "r0 = *(u64 *)(r1 +8)\nif r0 s<= 0 goto +1\nr0 = *(u64 *)(r0 +0)\nr0 = 0\nexit", ""),
		lsm("previous verdict as u32", "file_open", "r0 = *(u32 *)(r1 +8)\nexit", ""),
		ctxErr(lsm("past the return value", "file_open", "r0 = *(u64 *)(r1 +16)\nr0 = 0\nexit", "invalid bpf_context access off=16 size=8"), "func 'bpf_lsm_file_open' doesn't have 3-th argument"),
		lsm("argument is trusted", "file_open", "r1 = *(u64 *)(r1 +0)\nr0 = 0\nexit", ""),
		lsm("argument store", "file_open", "r2 = 0\n*(u64 *)(r1 +0) = r2\nr0 = 0\nexit", "invalid bpf_context access off=0 size=8"),
		// Void hooks: any value, no return value slot.
		lsm("void hook returns 5", "file_free_security", "r0 = 5\nexit", ""),
		ctxErr(lsm("void hook has no verdict", "file_free_security", "r0 = *(u64 *)(r1 +8)\nr0 = 0\nexit", "invalid bpf_context access off=8 size=8"), "func 'bpf_lsm_file_free_security' doesn't have 3-th argument"),
		// Boolean hooks return 0 or 1.
		lsm("bool hook returns 1", "inode_xattr_skipcap", "r0 = 1\nexit", ""),
		lsm("bool hook returns -1", "inode_xattr_skipcap", "r0 = -1\nexit", "At program exit the register R0 has smin=-1 smax=-1 should have been in [0, 1]"),
		lsm("no func ip", "file_open", "call 173\nr0 = 0\nexit", "not supported for program type 29"),
		lsm("attach cookie", "file_open", "call 174\nr0 = 0\nexit", ""),
		// Sleepable programs.
		sleepable(lsm("sleepable hook", "file_open", "r0 = 0\nexit", "")),
		sleepable(lsm("hook not sleepable", "file_mprotect", "r0 = 0\nexit", "bpf_lsm_file_mprotect is not sleepable")),
		sleepable(lsm("sleepable with a hash", "file_open", "r1 = map[fd:0] ll\nr0 = 0\nexit", "")),
		sleepable(vcase{name: "sleepable with a perf event array", typ: ebpf.LSM, attach: mac, attachTo: "file_open", maps: []maps.Spec{perf},
			asm: "r1 = map[fd:0] ll\nr0 = 0\nexit", err: "Sleepable programs can only use array, hash, ringbuf and local storage maps", kmsg: true}),
		// cgroup LSM programs: 0 or 1, 1 at void hooks.
		{name: "lsm_cgroup return 1", typ: ebpf.LSM, attach: cg, attachTo: "socket_bind", asm: "r0 = 1\nexit"},
		{name: "lsm_cgroup return 2", typ: ebpf.LSM, attach: cg, attachTo: "socket_bind", asm: "r0 = 2\nexit", err: "should have been in [0, 1]", kmsg: true},
		{name: "lsm_cgroup void hook return 0", typ: ebpf.LSM, attach: cg, attachTo: "sk_free_security", asm: "r0 = 0\nexit", err: "should have been in [1, 1]", kmsg: true},
	}
	for i := range cases {
		if strings.HasPrefix(cases[i].name, "sleepable with a hash") {
			cases[i].maps = []maps.Spec{hashMap}
		}
	}
	runCases(t, cases)
}

// TestLSMAttach: hooks the kernel refuses, by name.
func TestLSMAttach(t *testing.T) {
	spec := hostBTF(t)
	for _, c := range []struct{ hook, err string }{
		{"file_open", ""},
		{"getprocattr", "points to disabled hook bpf_lsm_getprocattr"},
		{"no_such_hook", "LSM hook no_such_hook"},
	} {
		tg, err := verifier.ResolveAttach(spec, ebpf.AttachLSMMac, c.hook)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.hook, err)
		case c.err == "" && (tg.Name != "bpf_lsm_"+c.hook || tg.Hook != c.hook):
			t.Errorf("%s: target %q hook %q", c.hook, tg.Name, tg.Hook)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, verifier.ErrAttachTarget)):
			t.Errorf("%s: error %v, want %q", c.hook, err, c.err)
		}
	}
}

// TestSleepableWalk: pointers read through a trusted one are untrusted,
// in an RCU read section or not (sleepable programs), but for those the
// kernel lists as trusted (file->f_inode).
func TestSleepableWalk(t *testing.T) {
	spec := hostBTF(t)
	file, _ := hostStruct(t, spec, "file")
	inode, owner := memberOff(t, file, "f_inode"), memberOff(t, file, "f_owner")
	tg, err := verifier.ResolveAttach(spec, ebpf.AttachLSMMac, "file_open")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		flags     uint32
		off       int
		want      string
		sleepable bool
	}{
		{0, inode, "trusted_ptr_inode", false},
		{verifier.FlagSleepable, inode, "trusted_ptr_inode", true},
		{0, owner, "R2=untrusted_ptr_fown_struct", false},
		{verifier.FlagSleepable, owner, "R2=untrusted_ptr_fown_struct", true},
	} {
		asm := fmt.Sprintf("r1 = *(u64 *)(r1 +0)\nr2 = *(u64 *)(r1 +%d)\nr0 = 0\nexit", c.off)
		insns, err := isa.Assemble(asm)
		if err != nil {
			t.Fatal(err)
		}
		res, err := verifier.Verify(insns, verifier.Options{Type: progTypeAttach(ebpf.LSM, ebpf.AttachLSMMac), Flags: c.flags, LogLevel: 2, KernelTypes: spec, Attach: tg})
		if err != nil {
			t.Fatalf("%v\n%s", err, res.Log)
		}
		if !strings.Contains(res.Log, c.want) {
			t.Errorf("sleepable %v, offset %d: no %q in\n%s", c.sleepable, c.off, c.want, res.Log)
		}
	}
}
