//go:build linux

package bpfvm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/vm"
)

// envOut is struct env_out of helpers_env.c.
type envOut struct {
	Ktime, Boot, Coarse, Jiffies uint64
	Rand                         [4]uint32
	CPU, Numa                    uint32
	PidTgid, UidGid              uint64
	Comm                         [16]byte
	Comm4                        [4]byte
	Pad                          uint32
}

func clock(t *testing.T, id int32) uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(id, &ts); err != nil {
		t.Fatal(err)
	}
	return uint64(ts.Nano())
}

func runEnv(t *testing.T, p *bpfvm.Program) envOut {
	t.Helper()
	in := make([]byte, 14+binary.Size(envOut{}))
	out := run(t, p, in, nil)
	if out.ret != 0 {
		t.Fatalf("returned %d", int32(out.ret))
	}
	var e envOut
	if err := binary.Read(bytes.NewReader(out.data[14:]), binary.NativeEndian, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestHelperEnvHost(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		vm := loadVM(t, noVerify, "testdata/helpers_env.o", bpfvm.CollectionOptions{NumCPU: 2})
		p := vm.Programs["env"]
		before, bootBefore := clock(t, unix.CLOCK_MONOTONIC), clock(t, unix.CLOCK_BOOTTIME)
		e := runEnv(t, p)
		after, bootAfter := clock(t, unix.CLOCK_MONOTONIC), clock(t, unix.CLOCK_BOOTTIME)

		// The monotonic clock is derived from Go's; allow for rounding.
		const slack = uint64(time.Millisecond)
		if e.Ktime+slack < before || e.Ktime > after+slack {
			t.Errorf("ktime %d outside [%d, %d]", e.Ktime, before, after)
		}
		if e.Coarse+slack < before || e.Coarse > after+slack {
			t.Errorf("coarse ktime %d outside [%d, %d]", e.Coarse, before, after)
		}
		if e.Boot < bootBefore || e.Boot > bootAfter {
			t.Errorf("boot time %d outside [%d, %d]", e.Boot, bootBefore, bootAfter)
		}
		if want := 1<<32 - 300*1000 + e.Ktime/1e6; e.Jiffies+1 < want || e.Jiffies > want+1 {
			t.Errorf("jiffies %d, want about %d", e.Jiffies, want)
		}
		if e.Rand[0] == e.Rand[1] && e.Rand[1] == e.Rand[2] && e.Rand[2] == e.Rand[3] {
			t.Errorf("random values all equal: %v", e.Rand)
		}
		if e.CPU >= 2 || e.Numa != 0 {
			t.Errorf("cpu %d, numa %d", e.CPU, e.Numa)
		}
		if tgid := e.PidTgid >> 32; tgid != uint64(os.Getpid()) {
			t.Errorf("tgid %d, want %d", tgid, os.Getpid())
		}
		if pid := uint32(e.PidTgid); pid == 0 {
			t.Errorf("pid 0")
		}
		if want := uint64(os.Getgid())<<32 | uint64(os.Getuid()); e.UidGid != want {
			t.Errorf("uid_gid %#x, want %#x", e.UidGid, want)
		}
		comm, err := os.ReadFile("/proc/self/comm")
		if err != nil {
			t.Fatal(err)
		}
		comm = bytes.TrimSuffix(comm, []byte("\n"))
		want := [16]byte{}
		copy(want[:15], comm)
		if e.Comm != want {
			t.Errorf("comm %q, want %q", e.Comm, want)
		}
		if want4 := [4]byte{comm[0], comm[1], comm[2], 0}; e.Comm4 != want4 {
			t.Errorf("comm in 4 bytes %q, want %q", e.Comm4, want4)
		}
	})
}

func TestHelperEnvTask(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		task := &bpfvm.Task{PID: 1234, TGID: 1200, UID: 1000, GID: 100, Comm: "a-very-long-command-name"}
		vm := loadVM(t, noVerify, "testdata/helpers_env.o", bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Task: task}})
		e := runEnv(t, vm.Programs["env"])
		if want := uint64(1200)<<32 | 1234; e.PidTgid != want {
			t.Errorf("pid_tgid %#x, want %#x", e.PidTgid, want)
		}
		if want := uint64(100)<<32 | 1000; e.UidGid != want {
			t.Errorf("uid_gid %#x, want %#x", e.UidGid, want)
		}
		if want := [16]byte([]byte("a-very-long-com\x00")); e.Comm != want {
			t.Errorf("comm %q, want %q", e.Comm, want)
		}
		if want := [4]byte([]byte("a-v\x00")); e.Comm4 != want {
			t.Errorf("comm in 4 bytes %q, want %q", e.Comm4, want)
		}
	})
}

// TestHelperPrandomRunners checks that runs on all runners at once draw
// random numbers without sharing state (run with -race).
func TestHelperPrandomRunners(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		vm := loadVM(t, noVerify, "testdata/helpers_env.o", bpfvm.CollectionOptions{NumCPU: 4})
		p := vm.Programs["env"]
		in := make([]byte, 14+binary.Size(envOut{}))
		done := make(chan error)
		for range 8 {
			go func() {
				var err error
				for range 50 {
					if _, err = p.Run(&bpfvm.RunOptions{Data: in}); err != nil {
						break
					}
					runtime.Gosched()
				}
				done <- err
			}()
		}
		for range 8 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestHelperRedirectMap(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		vm := loadVM(t, noVerify, "testdata/helpers_redirect.o", bpfvm.CollectionOptions{})
		ports := vm.Maps["ports"]
		if err := ports.Put(uint32(3), uint32(30)); err != nil {
			t.Fatal(err)
		}
		type args struct{ Key, Flags uint32 }
		for _, c := range []struct {
			name       string
			prog       string
			key, flags uint32
			want       uint32
			redirect   bool
		}{
			{"hit", "redirect_map", 3, 0, 4, true},
			{"hit with fallback", "redirect_map", 3, 2, 4, true},
			{"miss", "redirect_map", 4, 0, 0, false},
			{"miss passes", "redirect_map", 4, 2, 2, false},
			{"miss drops", "redirect_map", 4, 1, 1, false},
			{"miss broadcast", "redirect_map", 4, 8, 4, true},
			{"bad flags", "redirect_map", 3, 4, 0, false},
			{"tc hit", "tc_redirect_map", 3, 0, 7, true},
			{"tc miss", "tc_redirect_map", 4, 2, 2, false},
		} {
			t.Run(c.name, func(t *testing.T) {
				res, err := vm.Programs[c.prog].Execute(&bpfvm.RunOptions{Data: frame(args{c.key, c.flags})})
				if err != nil {
					t.Fatal(err)
				}
				if uint32(res.R0) != c.want {
					t.Errorf("returned %d, want %d", res.R0, c.want)
				}
				want := bpfvm.Redirect{}
				if c.redirect {
					want = bpfvm.Redirect{Map: ports, Key: uint64(c.key), Flags: uint64(c.flags), Valid: true}
				}
				if res.Redirect != want {
					t.Errorf("Redirect = %+v, want %+v", res.Redirect, want)
				}
			})
		}
	})
}

// A kernel helper bpfvm lacks is a load error of its own (vm.ErrHelper);
// an id the kernel has no helper for is the verifier's, as in the kernel
// (TestUnknownHelperIDUnreached).
func TestHelperUnknown(t *testing.T) {
	for _, c := range []struct {
		src, want string
		helper    bool
	}{
		{"r1 = 0\ncall 154\nexit", "unknown helper bpf_this_cpu_ptr#154", true},
		{"call 99999\nexit", "invalid func unknown#99999", false},
	} {
		insns, err := isa.Assemble(c.src)
		if err != nil {
			t.Fatal(err)
		}
		_, err = bpfvm.NewRawProgram("unknown", ebpf.XDP, insns, bpfvm.ProgramOptions{})
		if errors.Is(err, vm.ErrHelper) != c.helper || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one naming %q (vm.ErrHelper: %v)", c.src, err, c.want, c.helper)
		}
	}
}
