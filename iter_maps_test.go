package bpfvm_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/kernelbtf"
	"github.com/bpfvm/bpfvm/loader"
)

// iterMapSpecs are the maps TestIterMaps walks, named so that the
// kernel's own map list can be filtered to them.
var iterMapSpecs = []*ebpf.MapSpec{
	{Name: "itm_arr", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 4},
	{Name: "itm_hash", Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 8},
	{Name: "itm_small", Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 2},
	{Name: "itm_wide", Type: ebpf.Hash, KeySize: 8, ValueSize: 8, MaxEntries: 2},
	{Name: "itm_ring", Type: ebpf.RingBuf, MaxEntries: 4096},
	{Name: "itm_percpu", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 1},
}

// iterMapLine is dump_map's line for a map.
func iterMapLine(s *ebpf.MapSpec) string {
	return fmt.Sprintf("%s type %d key %d value %d max %d\n", s.Name, s.Type, s.KeySize, s.ValueSize, s.MaxEntries)
}

// TestIterMaps runs testdata/iter_maps.o's map iterators on both engines,
// checked and not: the map list, a map's elements (their values written
// back through the value buffer), the attach's refusals (a program
// reading past the map's keys or values: EACCES; a map that cannot be
// walked: EINVAL). The kernel walks its map list the same way; it refuses
// map element iterators here (EPERM), which the test then skips.
func TestIterMaps(t *testing.T) {
	if _, err := os.Stat(kernelbtf.VMLinux); err != nil {
		t.Skip("no host BTF")
	}
	spec, err := loader.LoadCollectionSpec("testdata/iter_maps.o")
	if err != nil {
		t.Fatal(err)
	}
	var wantList strings.Builder
	for _, s := range iterMapSpecs {
		wantList.WriteString(iterMapLine(s))
	}
	for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		for _, checks := range []bpfvm.Checks{bpfvm.ChecksOn, bpfvm.ChecksOff} {
			coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Engine: e, Checks: checks}})
			if err != nil {
				t.Fatal(err)
			}
			var ms []*bpfvm.Map
			for _, s := range iterMapSpecs {
				m, err := bpfvm.NewMap(s)
				if err != nil {
					t.Fatal(err)
				}
				ms = append(ms, m)
			}
			read := func(prog string, opts *bpfvm.IterOptions) (string, error) {
				r, err := coll.Programs[prog].Iterate(opts)
				if err != nil {
					return "", err
				}
				b, _ := io.ReadAll(r)
				return string(b), nil
			}
			if got, err := read("dump_map", &bpfvm.IterOptions{Maps: ms}); err != nil || got != wantList.String() {
				t.Errorf("dump_map on %v checks %v: %q, %v; want %q", e, checks, got, err, wantList.String())
			}
			arr, hash := ms[0], ms[1]
			for i := range uint32(4) {
				arr.Put(i, uint64(10*(i+1)))
			}
			const wantArr = "0: 10\n1: 20\n2: 30\n3: 40\nitm_arr end 3\n"
			if got, err := read("dump_elem", &bpfvm.IterOptions{Map: arr}); err != nil || got != wantArr {
				t.Errorf("dump_elem on %v checks %v: %q, %v; want %q", e, checks, got, err, wantArr)
			}
			for i := range uint32(4) {
				var v uint64
				if err := arr.Lookup(i, &v); err != nil || v != uint64(10*(i+1)+1) {
					t.Errorf("after dump_elem on %v checks %v: arr[%d] = %d, %v; want %d", e, checks, i, v, err, 10*(i+1)+1)
				}
			}
			hash.Put(uint32(7), uint64(70))
			if got, err := read("dump_elem", &bpfvm.IterOptions{Map: hash}); err != nil || got != "7: 70\nitm_hash end 0\n" {
				t.Errorf("dump_elem on a hash on %v checks %v: %q, %v", e, checks, got, err)
			}
			if got, err := read("dump_elem", &bpfvm.IterOptions{Map: ms[2]}); !errors.Is(err, syscall.EACCES) {
				t.Errorf("dump_elem on 4-byte values on %v checks %v: %q, %v; want EACCES", e, checks, got, err)
			}
			if got, err := read("key_past", &bpfvm.IterOptions{Map: arr}); !errors.Is(err, os.ErrPermission) {
				t.Errorf("key_past on 4-byte keys on %v checks %v: %q, %v; want EACCES", e, checks, got, err)
			}
			ms[3].Put(uint64(0x0807060504030201), uint64(1))
			if got, err := read("key_past", &bpfvm.IterOptions{Map: ms[3]}); err != nil || got != "\x01\x02\x03\x04\x05\x06\x07\x08" {
				t.Errorf("key_past on 8-byte keys on %v checks %v: %q, %v", e, checks, got, err)
			}
			if _, err := read("dump_elem", &bpfvm.IterOptions{Map: ms[4]}); !errors.Is(err, syscall.EINVAL) {
				t.Errorf("dump_elem on a ring buffer on %v checks %v: %v; want EINVAL", e, checks, err)
			}
			// A per-CPU map's value buffer holds every CPU's value:
			// the program reads and bumps the first CPU's.
			pc := ms[5]
			var vals []uint64
			if err := pc.Lookup(uint32(0), &vals); err != nil {
				t.Fatal(err)
			}
			for i := range vals {
				vals[i] = uint64(100 + i)
			}
			if err := pc.Put(uint32(0), vals); err != nil {
				t.Fatal(err)
			}
			if got, err := read("dump_elem", &bpfvm.IterOptions{Map: pc}); err != nil || got != "0: 100\nitm_percpu end 0\n" {
				t.Errorf("dump_elem on a per-CPU array on %v checks %v: %q, %v", e, checks, got, err)
			}
			var after []uint64
			if err := pc.Lookup(uint32(0), &after); err != nil || after[0] != 101 || len(after) > 1 && after[1] != 101 {
				t.Errorf("after dump_elem on a per-CPU array on %v checks %v: %v, %v", e, checks, after, err)
			}
			if _, err := read("dump_elem", nil); err == nil {
				t.Errorf("dump_elem without a map on %v checks %v: no error", e, checks)
			}
			for _, m := range ms {
				m.Close()
			}
			coll.Close()
		}
	}
	if haveKernel(t) {
		kernelIterMaps(t, spec, wantList.String())
	}
}
