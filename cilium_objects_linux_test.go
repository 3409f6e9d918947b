package bpfvm_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
	"github.com/bpfvm/bpfvm/vm"
)

// ciliumObjects are the datapath objects scripts/cilium-objects.sh builds.
var ciliumObjects = []string{"bpf_lxc", "bpf_host", "bpf_overlay", "bpf_xdp", "bpf_sock", "bpf_wireguard"}

// TestCiliumObjects loads every program of Cilium's datapath objects (built
// by scripts/cilium-objects.sh into the directory BPFVM_CILIUM_OBJS names)
// in bpfvm and in the kernel, and compares the verdicts, the first error
// line of a rejection, and the instructions each verifier processed.
// Maps are created once per object on each side (pinning dropped, as
// Cilium's loader would pin them elsewhere) and every program loads
// against them, the configuration (.rodata.config) as compiled.
func TestCiliumObjects(t *testing.T) {
	dir := os.Getenv("BPFVM_CILIUM_OBJS")
	if dir == "" {
		t.Skip("BPFVM_CILIUM_OBJS names no directory of Cilium objects (scripts/cilium-objects.sh)")
	}
	if os.Getuid() != 0 || rlimit.RemoveMemlock() != nil {
		t.Skip("the kernel comparison needs root")
	}
	var sum ciliumSum
	for _, obj := range ciliumObjects {
		t.Run(obj, func(t *testing.T) {
			ciliumObject(t, filepath.Join(dir, obj+".o"), &sum)
		})
	}
	t.Logf("%d programs: %d verdicts agree (%d accepted by both), %d of %d rejections with the kernel's first error line",
		sum.programs, sum.agree, sum.accepted, sum.msgs, sum.rejected)
	if sum.kernel > 0 {
		t.Logf("instructions processed, programs both accept: bpfvm %d, kernel %d (%.2fx)",
			sum.ours, sum.kernel, float64(sum.ours)/float64(sum.kernel))
	}
}

// ciliumSum adds up the comparison over the objects.
type ciliumSum struct {
	programs, agree, accepted, rejected, msgs int
	ours, kernel                              int
}

// ciliumObject compares every program of one object.
func ciliumObject(t *testing.T, file string, sum *ciliumSum) {
	spec, err := loader.LoadCollectionSpec(file)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for _, m := range spec.Maps {
		m.Pinning = ebpf.PinNone
	}
	maps := spec.Copy()
	maps.Programs = nil
	kmaps, err := ebpf.NewCollection(maps)
	if err != nil {
		t.Skipf("kernel maps: %v", err)
	}
	defer kmaps.Close()
	omaps, err := bpfvm.NewCollection(maps)
	if err != nil {
		t.Fatalf("bpfvm maps: %v", err)
	}
	defer omaps.Close()

	var names []string
	for name := range spec.Programs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		one := spec.Copy()
		for other := range one.Programs {
			if other != name {
				delete(one.Programs, other)
			}
		}
		ours, oerr := ciliumOurs(one, name, omaps)
		if errors.Is(oerr, vm.ErrHelper) {
			t.Errorf("%s: a helper bpfvm lacks: %v", name, oerr)
			continue
		}
		kernel, kerr := ciliumKernel(one, name, kmaps)
		var kve *ebpf.VerifierError
		if kerr != nil && !errors.As(kerr, &kve) {
			t.Errorf("%s: kernel load: %v", name, kerr)
			continue
		}
		sum.programs++
		switch {
		case (oerr == nil) != (kerr == nil):
			t.Errorf("%s: bpfvm: %v; kernel: %v", name, oerr, kerr)
		case oerr == nil:
			sum.agree++
			sum.accepted++
			sum.ours += ours
			sum.kernel += kernel
			t.Logf("%s: both accept; processed bpfvm %d, kernel %d", name, ours, kernel)
		default:
			sum.agree++
			sum.rejected++
			om, km := lastLine(oerr.Error()), ciliumFirstError(kve)
			if om == km {
				sum.msgs++
			} else {
				t.Errorf("%s: both refuse, bpfvm %q, kernel %q", name, om, km)
			}
		}
	}
}

// ciliumOurs loads the one program of spec in bpfvm against maps and
// returns the instructions its verifier processed.
func ciliumOurs(spec *ebpf.CollectionSpec, name string, maps *bpfvm.Collection) (int, error) {
	coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{MapReplacements: maps.Maps})
	if err != nil {
		return 0, err
	}
	defer coll.Close()
	return coll.Programs[name].Stats().Processed, nil
}

// ciliumKernel loads the one program of spec in the kernel against maps
// and returns the instructions its verifier processed.
func ciliumKernel(spec *ebpf.CollectionSpec, name string, maps *ebpf.Collection) (int, error) {
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{
		MapReplacements: maps.Maps,
		Programs:        ebpf.ProgramOptions{LogLevel: ebpf.LogLevelStats},
	})
	if err != nil {
		return 0, err
	}
	defer coll.Close()
	st, ok := parseScaleStats(coll.Programs[name].VerifierLog)
	if !ok {
		return 0, fmt.Errorf("no statistics in the kernel's log of %s", name)
	}
	return st.processed, nil
}

// ciliumFirstError is the kernel's error line: the last line of its log
// before the statistics.
func ciliumFirstError(ve *ebpf.VerifierError) string {
	for i := len(ve.Log) - 1; i >= 0; i-- {
		l := ve.Log[i]
		if l == "" || strings.HasPrefix(l, "processed ") || strings.HasPrefix(l, "verification time") ||
			strings.HasPrefix(l, "stack depth") {
			continue
		}
		return l
	}
	return ""
}
