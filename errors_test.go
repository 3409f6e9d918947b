package bpfvm_test

import (
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

// TestVerifierErrorAs: errors.As fills cilium/ebpf's *VerifierError from a
// rejection, with the log in lines, as the kernel's through cilium/ebpf.
func TestVerifierErrorAs(t *testing.T) {
	const prog = "exit" // R0 never written
	insns, err := isa.Assemble(prog)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bpfvm.NewRawProgram("p", ebpf.SocketFilter, insns, bpfvm.ProgramOptions{LogLevel: 1})
	var ours *bpfvm.VerifierError
	var theirs *ebpf.VerifierError
	if !errors.As(err, &ours) || !errors.As(err, &theirs) {
		t.Fatalf("%v: errors.As into ours %v, into cilium/ebpf's %v", err, ours != nil, theirs != nil)
	}
	const msg = "R0 !read_ok"
	if n := len(theirs.Log); n == 0 || theirs.Log[n-1] != msg && (n < 2 || theirs.Log[n-2] != msg) {
		t.Errorf("log %q, want %q near its end", theirs.Log, msg)
	}
	if !errors.Is(theirs, ours.Err) {
		t.Errorf("cause %v, want %v", theirs.Cause, ours.Err)
	}
	if os.Getuid() != 0 {
		return
	}
	_, kerr := ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{Type: ebpf.SocketFilter, License: "GPL",
		Instructions: asm.Instructions{asm.Return()}}, ebpf.ProgramOptions{LogLevel: ebpf.LogLevelInstruction})
	var kve *ebpf.VerifierError
	if !errors.As(kerr, &kve) || len(kve.Log) < 2 {
		t.Skipf("kernel: %v", kerr)
	}
	if last := kve.Log[len(kve.Log)-1]; last != msg && kve.Log[len(kve.Log)-2] != msg {
		t.Errorf("kernel log %q, want %q near its end", kve.Log, msg)
	}
}

// TestVerifierErrorFormat: %+v and %-v print the log's first or last
// lines after the message, as cilium/ebpf's VerifierError does.
func TestVerifierErrorFormat(t *testing.T) {
	ve := &bpfvm.VerifierError{Err: errors.New("rejected"), Log: "0: (95) exit\nR0 !read_ok\nprocessed 1 insns\n"}
	theirs := &ebpf.VerifierError{Cause: ve, Log: []string{"0: (95) exit", "R0 !read_ok", "processed 1 insns"}}
	msg := ve.Error()
	for _, tc := range []struct{ format, want string }{
		{"%s", msg},
		{"%v", msg},
		{"%+v", msg + ":\n\t0: (95) exit\n\tR0 !read_ok\n\tprocessed 1 insns"},
		{"%+1v", msg + ":\n\t0: (95) exit\n\t(2 line(s) omitted)"},
		{"%-2v", msg + ":\n\t(1 line(s) omitted)\n\tR0 !read_ok\n\tprocessed 1 insns"},
		{"%-9v", msg + ":\n\t0: (95) exit\n\tR0 !read_ok\n\tprocessed 1 insns"},
		{"%+-v", "%!v(BADFLAG)"},
		{"%d", "%!d(BADVERB)"},
	} {
		got := fmt.Sprintf(tc.format, ve)
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.format, got, tc.want)
		}
		// cilium/ebpf's, whose message is ": " and its cause's.
		if strings.HasPrefix(tc.want, msg) {
			if want := strings.Replace(tc.want, msg, ": "+msg, 1); fmt.Sprintf(tc.format, theirs) != want && tc.format != "%s" && tc.format != "%v" {
				t.Errorf("%s: cilium/ebpf's %q, ours %q", tc.format, fmt.Sprintf(tc.format, theirs), got)
			}
		}
	}
}
