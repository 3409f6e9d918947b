package bpfvm_test

import (
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
)

// BenchmarkFIBLookup measures a tc program's bpf_fib_lookup (tc_fib of
// testdata/helpers_sock.o: one lookup per run, repeated in one test run)
// on bpfvm's world and in the kernel, in the network namespace
// TestFIBLookupKernel builds: a routed IPv4 destination through a
// neighbour, and one without a route. Each b.N iteration is one round
// timing both in turn, so that the ratio comes from one interleaved run:
//
//	go test -run - -bench FIBLookup -benchtime 5x .
//
// bpfvm is timed by its thread's CPU time (onThreadCPU), the kernel by
// its test run's duration, both of which leave out preemptions.
//
// ratio is bpfvm's time over the kernel's (below 1: bpfvm is faster).
func BenchmarkFIBLookup(b *testing.B) {
	if os.Getuid() != 0 || !kernelAvailable(b) {
		b.Skip("needs root and bpf() for the kernel's side")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		b.Skip("no iproute2")
	}
	spec, err := loader.LoadCollectionSpec("testdata/helpers_sock.o")
	if err != nil {
		b.Fatal(err)
	}
	vm, err := bpfvm.NewCollection(spec)
	if err != nil {
		b.Fatal(err)
	}
	defer vm.Close()
	kern, err := ebpf.NewCollection(spec)
	if err != nil {
		b.Skipf("kernel: %v", err)
	}
	defer kern.Close()
	for _, c := range []struct {
		name string
		dst  string
	}{{"routed", "10.2.3.4"}, {"no-route", "10.9.9.9"}} {
		b.Run(c.name, func(b *testing.B) {
			const repeat = 5000
			type res struct {
				vm, k time.Duration
				err   string
			}
			done := make(chan res)
			go func() {
				runtime.LockOSThread() // dies with the goroutine, and the namespace with it
				fail := func(s string) { done <- res{err: s} }
				if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
					fail(err.Error())
					return
				}
				for _, cmd := range fibNetns {
					if out, err := exec.Command("ip", strings.Fields(cmd)...).CombinedOutput(); err != nil {
						fail(cmd + ": " + err.Error() + string(out))
						return
					}
				}
				if err := os.WriteFile("/proc/sys/net/ipv4/conf/all/forwarding", []byte("1"), 0); err != nil {
					fail(err.Error())
					return
				}
				idx := map[string]uint32{}
				for _, n := range []string{"lo", "veth0", "veth1"} {
					i, err := net.InterfaceByName(n)
					if err != nil {
						fail(err.Error())
						return
					}
					idx[n] = uint32(i.Index)
				}
				world := fibWorld(idx["lo"], idx["veth0"], idx["veth1"])
				pkt := fibReq{family: 2, ifindex: idx["lo"], dst: netip.MustParseAddr(c.dst), plen: 64}.packet()
				var r res
				for range b.N {
					// bpfvm's time is its thread's CPU time (onThreadCPU),
					// the kernel's the test run's, which leaves out the time
					// it is rescheduled: the fair comparison on a loaded host.
					var out bpfvm.Result
					var err error
					t := onThreadCPU(func() {
						out, err = vm.Programs["tc_fib"].Execute(&bpfvm.RunOptions{Data: pkt, Net: world, Repeat: repeat})
					})
					if err != nil {
						fail(err.Error())
						return
					}
					r.vm += t / repeat
					kret, d, err := kern.Programs["tc_fib"].Benchmark(pkt, repeat, nil)
					if err != nil {
						fail(err.Error())
						return
					}
					if int32(kret) != int32(out.R0) {
						fail("bpfvm and the kernel return different results")
						return
					}
					r.k += d
				}
				done <- r
			}()
			b.ResetTimer()
			r := <-done
			b.StopTimer()
			if r.err != "" {
				b.Skip(r.err)
			}
			per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
			b.ReportMetric(per(r.vm), "vm-ns")
			b.ReportMetric(per(r.k), "kernel-ns")
			b.ReportMetric(float64(r.vm)/float64(r.k), "ratio")
			b.ReportMetric(0, "ns/op")
		})
	}
}
