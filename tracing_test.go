package bpfvm_test

import (
	"bytes"
	"testing"


	"github.com/bpfvm/bpfvm"
)

// traceEvent is struct event of testdata/tracing.c.
type traceEvent struct {
	PidTgid, UidGid, Cgroup, IP, Cookie, Task uint64
	Ret, Len                                  int64
	Comm                                      [16]byte
	Name                                      [32]byte
}

// The keys of tracing.c's events map.
const (
	evOpen = iota + 1
	evOpenRet
	evTP
	evRawTP
	evPerf
)

func traceEventOf(t *testing.T, c *bpfvm.Collection, key uint32) traceEvent {
	t.Helper()
	var e traceEvent
	if err := c.Maps["events"].Lookup(key, &e); err != nil {
		t.Fatalf("event %d: %v", key, err)
	}
	return e
}

// cstr is the NUL-terminated string at the start of b.
func cstr(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}

// TestTracingObjectKernel loads testdata/tracing.o's kprobe, kretprobe,
// tracepoint, raw tracepoint and perf_event programs through the API and
// into the kernel: both accept them.
func TestTracingObjectKernel(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		vm, kern := loadHelpers(t, noVerify, "testdata/tracing.o", bpfvm.CollectionOptions{})
		for name, p := range vm.Programs {
			if kern != nil && kern.Programs[name] == nil {
				t.Errorf("%s: the kernel did not load it", name)
			}
			t.Logf("%s: %s", name, p.Type())
		}
		if len(vm.Programs) != 5 {
			t.Errorf("%d programs, want 5", len(vm.Programs))
		}
	})
}
