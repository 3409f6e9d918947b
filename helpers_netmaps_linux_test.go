package bpfvm_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/bpfvm/bpfvm"
)

// The cgroup helpers' runs against the host's cgroup v2 hierarchy, which
// the test reads and extends (Linux only).

// hostCgroups is the cgroup v2 hierarchy as this process sees it: the
// root's directory, this process's cgroup and its ancestors, and a new
// cgroup for the test (a child of the root), with the bpfvm world of it.
type hostCgroups struct {
	root, own, test string
	net             bpfvm.Net
}

func cgroupID(t *testing.T, dir string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func findCgroups(t *testing.T) hostCgroups {
	t.Helper()
	var h hostCgroups
	for _, dir := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		var st unix.Statfs_t
		if unix.Statfs(dir, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			h.root = dir
			break
		}
	}
	if h.root == "" {
		t.Skip("no cgroup v2 hierarchy")
	}
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "0::"); ok {
			h.own = filepath.Join(h.root, rest)
		}
	}
	if h.own == "" {
		t.Skip("no cgroup v2 of this process")
	}
	h.test = filepath.Join(h.root, "bpfvm-run-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(h.test, 0o755); err != nil {
		t.Skipf("making a cgroup: %v", err)
	}
	t.Cleanup(func() { os.Remove(h.test) })
	h.net.Cgroup = cgroupID(t, h.own)
	h.net.Cgroups = append(h.net.Cgroups, bpfvm.Cgroup{ID: cgroupID(t, h.test), Parent: 1})
	for dir := h.own; dir != h.root; dir = filepath.Dir(dir) {
		parent := filepath.Dir(dir)
		h.net.Cgroups = append(h.net.Cgroups, bpfvm.Cgroup{ID: cgroupID(t, dir), Parent: cgroupID(t, parent)})
	}
	return h
}

func TestHelperUnderCgroup(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		h := findCgroups(t)
		vm, kern := loadHelpers(t, noVerify, netmapsObj, bpfvm.CollectionOptions{})
		dirs := []string{h.root, h.test, h.own}
		for i, dir := range dirs {
			if err := vm.Maps["cgroups"].Put(uint32(i), uint32(cgroupID(t, dir))); err != nil {
				t.Fatal(err)
			}
			if kern == nil {
				continue
			}
			f, err := os.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := kern.Maps["cgroups"].Put(uint32(i), uint32(f.Fd())); err != nil {
				t.Fatal(err)
			}
		}
		// Slots: the root, the test's cgroup, this process's; 3 is empty,
		// 9 out of range. The test run's socket is in the root cgroup.
		for _, tt := range []struct {
			prog string
			idx  uint32
			want uint32
		}{
			{"skb_under", 0, 1}, {"skb_under", 1, 0}, {"skb_under", 2, 0},
			{"skb_under", 3, errno(11)}, {"skb_under", 9, errno(7)},
			{"task_under", 0, 1}, {"task_under", 1, 0}, {"task_under", 2, 1},
			{"task_under", 3, errno(11)}, {"task_under", 9, errno(7)},
		} {
			if h.own == h.root && tt.prog == "skb_under" && tt.idx == 2 {
				tt.want = 1
			}
			ctx := skbCB(tt.idx)
			got := uint32(runWith(t, vm.Programs[tt.prog], ctx, &h.net, 1).R0)
			if got != tt.want {
				t.Errorf("%s(%d): %d, want %d", tt.prog, tt.idx, int32(got), int32(tt.want))
			}
			if k, ok := kernelRunRepeat(t, kern, tt.prog, ctx, 1); ok && k != got {
				t.Errorf("%s(%d): kernel %d, bpfvm %d", tt.prog, tt.idx, int32(k), int32(got))
			}
		}
		// A packet without a socket is under no cgroup (-ENOENT); the
		// packet's socket may be in another cgroup of the hierarchy.
		noSock := h.net
		noSock.NoSocket = true
		if got := int32(runWith(t, vm.Programs["skb_under"], skbCB(0), &noSock, 1).R0); got != -2 {
			t.Errorf("skb_under without a socket: %d, want -ENOENT", got)
		}
		inTest := h.net
		inTest.Socket = &bpfvm.Socket{CgroupID: cgroupID(t, h.test)}
		for idx, want := range []int32{1, 1, 0} {
			if h.own == h.root && idx == 2 {
				want = 1
			}
			if got := int32(runWith(t, vm.Programs["skb_under"], skbCB(uint32(idx)), &inTest, 1).R0); got != want {
				t.Errorf("skb_under(%d) of a socket in the test's cgroup: %d, want %d", idx, got, want)
			}
		}
	})
}
