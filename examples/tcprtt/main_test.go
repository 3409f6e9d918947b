package main

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/kernelbtf"
	"github.com/bpfvm/bpfvm/loader"
	"github.com/bpfvm/bpfvm/rlimit"
)

// want is the histogram of all the recorded receives.
const want = `All Addresses = ****** [AVG 7361]
     usecs               : count    distribution
         0 -> 1          : 0        |                                        |
         2 -> 3          : 1        |*************                           |
         4 -> 7          : 1        |*************                           |
         8 -> 15         : 0        |                                        |
        16 -> 31         : 0        |                                        |
        32 -> 63         : 0        |                                        |
        64 -> 127        : 3        |****************************************|
       128 -> 255        : 1        |*************                           |
       256 -> 511        : 0        |                                        |
       512 -> 1023       : 0        |                                        |
      1024 -> 2047       : 1        |*************                           |
      2048 -> 4095       : 3        |****************************************|
      4096 -> 8191       : 0        |                                        |
      8192 -> 16383      : 0        |                                        |
     16384 -> 32767      : 0        |                                        |
     32768 -> 65535      : 0        |                                        |
     65536 -> 131071     : 1        |*************                           |

`

// TestTcprtt: both attachments give the same histogram of the recorded
// RTTs; with -raddr one per remote address, sorted by key.
func TestTcprtt(t *testing.T) {
	if _, err := os.Stat(kernelbtf.VMLinux); err != nil {
		t.Skip("no host BTF")
	}
	for _, fentry := range []bool{false, true} {
		var out strings.Builder
		if err := run(&out, options{fentry: fentry}); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Errorf("fentry %v: got\n%s\nwant\n%s", fentry, out.String(), want)
		}
	}
	var out strings.Builder
	if err := run(&out, options{raddr: true}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Remote Address = 10.0.0.7 [AVG 96]", "Remote Address = 192.0.2.9 [AVG 16080]"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("-raddr: no %q in\n%s", s, out.String())
		}
	}
}

// TestTcprttKernel: the kernel takes the tp_btf program where bpf() is
// permitted (this kernel refuses fentry programs with EPERM: skipped).
func TestTcprttKernel(t *testing.T) {
	if os.Getuid() != 0 || rlimit.RemoveMemlock() != nil {
		t.Skip("no bpf()")
	}
	for _, name := range []string{"tcp_probe", "tcp_rcv"} {
		spec, err := loader.LoadCollectionSpecFromReader(bytes.NewReader(object), "tcprtt.o")
		if err != nil {
			t.Fatal(err)
		}
		for other := range spec.Programs {
			if other != name {
				delete(spec.Programs, other)
			}
		}
		coll, err := ebpf.NewCollection(spec)
		if errors.Is(err, os.ErrPermission) || errors.Is(err, errors.ErrUnsupported) {
			t.Logf("%s: %v", name, err)
			continue
		}
		if err != nil {
			t.Fatalf("%s: kernel rejects: %v", name, err)
		}
		coll.Close()
	}
}
