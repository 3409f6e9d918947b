package bpfvm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/verifier"
)

// ciliumTargets are what code written against cilium/ebpf checks errors
// against: its sentinels, the os package's and errnos.
var ciliumTargets = []struct {
	name string
	err  error
}{
	{"ebpf.ErrKeyNotExist", ebpf.ErrKeyNotExist},
	{"ebpf.ErrKeyExist", ebpf.ErrKeyExist},
	{"ebpf.ErrNotSupported", ebpf.ErrNotSupported},
	{"os.ErrPermission", os.ErrPermission},
	{"os.ErrClosed", os.ErrClosed},
	{"ENOENT", syscall.ENOENT},
	{"EEXIST", syscall.EEXIST},
	{"E2BIG", syscall.E2BIG},
	{"EINVAL", syscall.EINVAL},
	{"EPERM", syscall.EPERM},
	{"EBUSY", syscall.EBUSY},
	{"EBADF", syscall.EBADF},
}

// matches lists the ciliumTargets err matches.
func matches(err error) []string {
	var out []string
	for _, t := range ciliumTargets {
		if errors.Is(err, t.err) {
			out = append(out, t.name)
		}
	}
	return out
}

// TestErrorsMatchCilium: every failing map operation's error matches
// bpfvm's sentinel and exactly the cilium/ebpf sentinels, os errors and
// errnos that the kernel's error for the same operation (through
// cilium/ebpf) matches, so that errors.Is checks written for either back
// end hold on both.
func TestErrorsMatchCilium(t *testing.T) {
	hash := &ebpf.MapSpec{Name: "h", Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 2}
	array := &ebpf.MapSpec{Name: "a", Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 2}
	queue := &ebpf.MapSpec{Name: "q", Type: ebpf.Queue, ValueSize: 4, MaxEntries: 2}
	var v uint32
	put := func(m freezeOps, keys ...uint32) error {
		for _, k := range keys {
			if err := m.Update(k, uint32(1), ebpf.UpdateAny); err != nil {
				return err
			}
		}
		return nil
	}
	for _, tc := range []struct {
		name string
		spec *ebpf.MapSpec
		op   func(m freezeOps) error
		ours error    // bpfvm's sentinel
		want []string // the ciliumTargets matched
	}{
		{"lookup missing", hash, func(m freezeOps) error { return m.Lookup(uint32(1), &v) },
			bpfvm.ErrKeyNotExist, []string{"ebpf.ErrKeyNotExist", "ENOENT"}},
		{"delete missing", hash, func(m freezeOps) error { return m.Delete(uint32(1)) },
			bpfvm.ErrKeyNotExist, []string{"ebpf.ErrKeyNotExist", "ENOENT"}},
		{"next key at the end", hash, func(m freezeOps) error {
			var k uint32
			return m.NextKey(nil, &k)
		}, bpfvm.ErrKeyNotExist, []string{"ebpf.ErrKeyNotExist", "ENOENT"}},
		{"update exist, missing", hash, func(m freezeOps) error { return m.Update(uint32(1), uint32(2), ebpf.UpdateExist) },
			bpfvm.ErrKeyNotExist, []string{"ebpf.ErrKeyNotExist", "ENOENT"}},
		{"update no exist, present", hash, func(m freezeOps) error {
			if err := put(m, 1); err != nil {
				return err
			}
			return m.Update(uint32(1), uint32(2), ebpf.UpdateNoExist)
		}, bpfvm.ErrKeyExist, []string{"ebpf.ErrKeyExist", "EEXIST"}},
		{"hash full", hash, func(m freezeOps) error { return put(m, 1, 2, 3) },
			nil, []string{"E2BIG"}},
		{"array index out of range", array, func(m freezeOps) error { return put(m, 2) },
			nil, []string{"E2BIG"}},
		{"array no exist", array, func(m freezeOps) error { return m.Update(uint32(0), uint32(2), ebpf.UpdateNoExist) },
			bpfvm.ErrKeyExist, []string{"ebpf.ErrKeyExist", "EEXIST"}},
		{"array delete", array, func(m freezeOps) error { return m.Delete(uint32(0)) },
			nil, []string{"EINVAL"}},
		{"unknown update flags", hash, func(m freezeOps) error { return m.Update(uint32(1), uint32(2), 8) },
			nil, []string{"EINVAL"}},
		{"empty queue", queue, func(m freezeOps) error { return m.LookupAndDelete(nil, &v) },
			bpfvm.ErrKeyNotExist, []string{"ebpf.ErrKeyNotExist", "ENOENT"}},
		{"freeze twice", array, func(m freezeOps) error {
			if err := m.Freeze(); err != nil {
				return err
			}
			return m.Freeze()
		}, bpfvm.ErrPermission, []string{"os.ErrPermission", "EPERM"}},
		{"update frozen", array, func(m freezeOps) error {
			if err := m.Freeze(); err != nil {
				return err
			}
			return put(m, 0)
		}, bpfvm.ErrPermission, []string{"os.ErrPermission", "EPERM"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.op(ourOps{newOurMap(t, tc.spec.Copy(), 2)})
			if err == nil {
				t.Fatal("no error")
			}
			if tc.ours != nil && !errors.Is(err, tc.ours) {
				t.Errorf("%v does not match %v", err, tc.ours)
			}
			if got := fmt.Sprint(matches(err)); got != fmt.Sprint(tc.want) {
				t.Errorf("%v matches %s, want %v", err, got, tc.want)
			}
			km := kernelMap(t, tc.spec)
			if km == nil {
				return
			}
			kerr := tc.op(kernelOps{km})
			if got, want := fmt.Sprint(matches(err)), fmt.Sprint(matches(kerr)); got != want {
				t.Errorf("ours %v matches %s, the kernel's %v matches %s", err, got, kerr, want)
			}
		})
	}
}

// TestErrorsClosed: operations on a closed map fail with an error matching
// ErrClosed, os.ErrClosed and EBADF: cilium/ebpf's on a closed map match
// EBADF.
func TestErrorsClosed(t *testing.T) {
	spec := &ebpf.MapSpec{Name: "h", Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 2}
	m := newOurMap(t, spec.Copy(), 1)
	m.Close()
	var v uint32
	err := m.Lookup(uint32(1), &v)
	if !errors.Is(err, bpfvm.ErrClosed) {
		t.Errorf("%v does not match ErrClosed", err)
	}
	want := []string{"os.ErrClosed", "EBADF"}
	if got := matches(err); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%v matches %v, want %v", err, got, want)
	}
	if km := kernelMap(t, spec); km != nil {
		km.Close()
		kerr := km.Lookup(uint32(1), &v)
		// cilium/ebpf's closed descriptor is EBADF; ours also matches
		// os.ErrClosed, what closed files give.
		if got := matches(kerr); fmt.Sprint(got) != "[EBADF]" {
			t.Errorf("kernel's %v matches %v, want [EBADF]", kerr, got)
		}
	}
}

// TestSentinelsMatchCilium: each of bpfvm's sentinels matches cilium/ebpf's
// for the same failure, and update flags are cilium/ebpf's.
func TestSentinelsMatchCilium(t *testing.T) {
	for _, tc := range []struct{ ours, theirs error }{
		{bpfvm.ErrKeyNotExist, ebpf.ErrKeyNotExist},
		{bpfvm.ErrKeyExist, ebpf.ErrKeyExist},
		{bpfvm.ErrNotSupported, ebpf.ErrNotSupported},
		{bpfvm.ErrIterationAborted, ebpf.ErrIterationAborted},
		{bpfvm.ErrMapIncompatible, ebpf.ErrMapIncompatible},
		{bpfvm.ErrReadOnly, ebpf.ErrReadOnly},
		{bpfvm.ErrPermission, os.ErrPermission},
		{bpfvm.ErrClosed, os.ErrClosed},
		{bpfvm.ErrBusy, syscall.EBUSY},
	} {
		wrapped := fmt.Errorf("op: %w", tc.ours)
		if !errors.Is(wrapped, tc.ours) || !errors.Is(wrapped, tc.theirs) {
			t.Errorf("%v: errors.Is ours %v, cilium's %v", tc.ours, errors.Is(wrapped, tc.ours), errors.Is(wrapped, tc.theirs))
		}
	}
	// Update flags are cilium/ebpf's type: its constants compile as ours.
	var f bpfvm.MapUpdateFlags = ebpf.UpdateNoExist
	if f != bpfvm.UpdateNoExist || bpfvm.UpdateLock != ebpf.UpdateLock {
		t.Error("update flags differ from cilium/ebpf's")
	}
}

// rejectedPrograms are socket filters the verifier rejects, in kernel
// syntax, for the VerifierError comparisons.
var rejectedPrograms = []struct{ name, asm string }{
	{"no return value", "exit"},
	{"context access", "r0 = *(u64 *)(r1 + 0)\nexit"},
	{"scalar dereference", "r2 = 0\nr0 = *(u64 *)(r2 + 0)\nexit"},
	{"frame pointer write", "r10 = 0\nr0 = 0\nexit"},
	{"stack out of bounds", "r0 = *(u64 *)(r10 + 8)\nexit"},
	{"unknown helper", "call 999\nexit"},
	{"jump out of range", "goto +5\nr0 = 0\nexit"},
	{"no exit", "r0 = 0"},
}

// kernelVerifierError loads insns into the kernel as a socket filter and
// returns its *ebpf.VerifierError (nil when bpf() is not permitted).
func kernelVerifierError(t *testing.T, insns []isa.Instruction, opts ebpf.ProgramOptions) *ebpf.VerifierError {
	t.Helper()
	if os.Getuid() != 0 {
		return nil
	}
	ai, err := asm.AppendInstructions(nil, bytes.NewReader(isa.EncodeProgram(insns)), binary.LittleEndian, "linux")
	if err != nil {
		t.Fatal(err)
	}
	_, err = ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{Type: ebpf.SocketFilter, License: "GPL", Instructions: ai}, opts)
	var kve *ebpf.VerifierError
	if !errors.As(err, &kve) {
		t.Skipf("kernel: %v", err)
	}
	if len(kve.Log) == 0 {
		// Under qemu-user, bpf() reaches the host kernel with the
		// guest's addresses, and the log buffer stays empty: nothing to
		// compare.
		t.Skipf("kernel: %v, without a log", err)
	}
	return kve
}

// TestVerifierErrorKernel: a rejection's VerifierError has the kernel's
// log in cilium/ebpf's lines, at LogLevel 0 too (verified again for it, as
// cilium/ebpf loads again), and the same one-line summary but for the
// cause, which is cilium/ebpf's errno and bpfvm's message; errors.As fills
// cilium/ebpf's type with the same fields.
func TestVerifierErrorKernel(t *testing.T) {
	compared := 0
	for _, tc := range rejectedPrograms {
		t.Run(tc.name, func(t *testing.T) {
			insns, err := isa.Assemble(tc.asm)
			if err != nil {
				t.Fatal(err)
			}
			_, err = bpfvm.NewRawProgram("p", ebpf.SocketFilter, insns, bpfvm.ProgramOptions{})
			var ours *bpfvm.VerifierError
			var theirs *ebpf.VerifierError
			if !errors.As(err, &ours) || !errors.As(err, &theirs) {
				t.Fatalf("%v: errors.As into ours %v, into cilium/ebpf's %v", err, ours != nil, theirs != nil)
			}
			if len(ours.Log) == 0 || ours.Truncated {
				t.Errorf("log %q, truncated %v", ours.Log, ours.Truncated)
			}
			if !errors.Is(theirs, ours.Cause) || strings.Join(theirs.Log, "\n") != strings.Join(ours.Log, "\n") {
				t.Errorf("cilium/ebpf's: cause %v, log %q", theirs.Cause, theirs.Log)
			}
			if !errors.Is(err, verifier.ErrRejected) && !errors.Is(err, isa.ErrInvalidProgram) {
				t.Errorf("%v does not wrap verifier.ErrRejected or isa.ErrInvalidProgram", err)
			}
			kve := kernelVerifierError(t, insns, ebpf.ProgramOptions{})
			if kve == nil {
				return
			}
			if got, want := strings.Join(ours.Log, "\n"), strings.Join(kve.Log, "\n"); got != want {
				t.Errorf("log\n%s\nkernel's\n%s", got, want)
			}
			want := strings.Replace(kve.Error(), ": "+kve.Cause.Error(), "", 1)
			if got := ours.Error(); got != want {
				t.Errorf("Error() %q, kernel's without its errno %q", got, want)
			}
			compared++
		})
	}
	t.Logf("%d of %d compared with the kernel", compared, len(rejectedPrograms))
}

// TestVerifierErrorLogDisabled: LogDisabled leaves the log empty and the
// summary the cause, as cilium/ebpf's.
func TestVerifierErrorLogDisabled(t *testing.T) {
	insns, err := isa.Assemble("exit")
	if err != nil {
		t.Fatal(err)
	}
	_, err = bpfvm.NewRawProgram("p", ebpf.SocketFilter, insns, bpfvm.ProgramOptions{LogDisabled: true})
	var ve *bpfvm.VerifierError
	if !errors.As(err, &ve) {
		t.Fatal(err)
	}
	if ve.Log != nil || ve.Error() != "load program: "+ve.Cause.Error() {
		t.Errorf("log %q, error %q", ve.Log, ve.Error())
	}
	if kve := kernelVerifierError(t, insns, ebpf.ProgramOptions{LogDisabled: true}); kve != nil && (kve.Log != nil || kve.Error() != "load program: "+kve.Cause.Error()) {
		t.Errorf("kernel: log %q, error %q", kve.Log, kve.Error())
	}
}

// TestVerifierErrorFormat: %+v and %-v print the log's first or last
// lines after the message, as cilium/ebpf's VerifierError does.
func TestVerifierErrorFormat(t *testing.T) {
	cause := errors.New("R0 !read_ok")
	ve := &bpfvm.VerifierError{Cause: cause, Log: []string{"0: (95) exit", "R0 !read_ok", "processed 1 insns"}}
	theirs := &ebpf.VerifierError{Cause: cause, Log: ve.Log}
	head := "load program: R0 !read_ok:"
	for _, tc := range []struct{ format, want string }{
		{"%s", "load program: 0: (95) exit: R0 !read_ok (1 line(s) omitted)"},
		{"%v", "load program: 0: (95) exit: R0 !read_ok (1 line(s) omitted)"},
		{"%+v", head + "\n\t0: (95) exit\n\tR0 !read_ok\n\tprocessed 1 insns"},
		{"%+1v", head + "\n\t0: (95) exit\n\t(2 line(s) omitted)"},
		{"%-2v", head + "\n\t(1 line(s) omitted)\n\tR0 !read_ok\n\tprocessed 1 insns"},
		{"%-9v", head + "\n\t0: (95) exit\n\tR0 !read_ok\n\tprocessed 1 insns"},
		{"%3v", "%!v(BADWIDTH)"},
		{"%+-v", "%!v(BADFLAG)"},
		{"%d", "%!d(BADVERB)"},
	} {
		got := fmt.Sprintf(tc.format, ve)
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.format, got, tc.want)
		}
		// cilium/ebpf's, whose source is empty here and whose summary
		// keeps the cause.
		want := strings.Replace(tc.want, "load program", "", 1)
		if tc.format == "%s" || tc.format == "%v" {
			want = ": R0 !read_ok: 0: (95) exit: R0 !read_ok (1 line(s) omitted)"
		}
		if got := fmt.Sprintf(tc.format, theirs); got != want {
			t.Errorf("%s: cilium/ebpf's %q, want %q", tc.format, got, want)
		}
	}
}
