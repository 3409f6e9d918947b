package bpfvm_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/loader"
)

// TestRodataBranch loads testdata/rodata.o, whose `const volatile` globals
// decide its branches: .rodata is frozen before the program is verified,
// so the verifier takes them as constants, as the kernel does, and the
// branch they rule out (an unchecked packet read) is dead: accepted, never
// explored, and stopped if reached. With the constant rewritten before the
// load, the read is live and both verifiers reject the program.
func TestRodataBranch(t *testing.T) {
	const file = "testdata/rodata.o"
	kern := kernelCollection(t, file)
	for _, cfg := range memConfigs {
		spec, err := loader.LoadCollectionSpec(file)
		if err != nil {
			t.Fatal(err)
		}
		coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: cfg.opts})
		if err != nil {
			t.Fatalf("%s: %v", cfg.name, err)
		}
		p := coll.Programs["rodata_branch"]
		if !cfg.opts.NoVerify {
			if !p.Verified() {
				t.Fatalf("%s: not verified", cfg.name)
			}
			// The unchecked read is dead (its exit is shared).
			dead := 0
			for _, ins := range p.XlatedInstructions() {
				if ins == (isa.Instruction{Op: isa.OpDead}) {
					dead++
				}
			}
			if dead != 1 {
				t.Errorf("%s: %d dead instructions, want the unchecked read:\n%v", cfg.name, dead, p.XlatedInstructions())
			}
		}
		ro := coll.Maps[".rodata"]
		if !ro.IsFrozen() {
			t.Errorf("%s: .rodata not frozen", cfg.name)
		}
		if err := ro.Put(uint32(0), make([]byte, ro.ValueSize())); !errors.Is(err, bpfvm.ErrPermission) {
			t.Errorf("%s: Put on .rodata: %v, want ErrPermission", cfg.name, err)
		}
		for _, c := range []struct {
			name string
			data []byte
			want uint32
		}{
			{"marker", append([]byte{0x42}, make([]byte, 15)...), 3 + 4<<8},
			{"other", append([]byte{0x41}, make([]byte, 15)...), 2 + 4<<8},
			{"short", append([]byte{0x42}, make([]byte, 13)...), 2 + 4<<8},
		} {
			t.Run(cfg.name+"/"+c.name, func(t *testing.T) {
				checkRun(t, coll, kern, "rodata_branch", c.data, nil, runOut{ret: c.want})
			})
		}
		coll.Close()
	}

	// check_bounds = 0: the unchecked read is live.
	for _, c := range []struct {
		name, variable string
		value          uint32
		err            string
	}{
		{"unchecked read live", "check_bounds", uint32(0), "invalid access to packet"},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec, err := loader.LoadCollectionSpec(file)
			if err != nil {
				t.Fatal(err)
			}
			setRodata(t, spec, c.variable, c.value)
			_, err = bpfvm.NewCollection(spec)
			var ve *bpfvm.VerifierError
			if !errors.As(err, &ve) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("bpfvm: %v, want a verifier error with %q", err, c.err)
			}
			if kern == nil {
				return
			}
			kspec, err := loader.LoadCollectionSpec(file)
			if err != nil {
				t.Fatal(err)
			}
			setRodata(t, kspec, c.variable, c.value)
			kc, err := ebpf.NewCollection(kspec)
			if err == nil {
				kc.Close()
				t.Fatal("kernel accepted it")
			}
			if !errors.As(err, new(*ebpf.VerifierError)) || !strings.Contains(err.Error(), c.err) {
				t.Errorf("kernel: %v, want a verifier error with %q", err, c.err)
			}
		})
	}
}

// setRodata configures a .rodata variable before the load, as users do
// (CollectionSpec.Variables, which both loaders write over the section's
// contents).
func setRodata(t *testing.T, spec *ebpf.CollectionSpec, name string, value uint32) {
	t.Helper()
	v := spec.Variables[name]
	if v == nil {
		t.Fatalf("no variable %s", name)
	}
	if err := v.Set(value); err != nil {
		t.Fatal(err)
	}
}

// TestVariablesBeforeLoad: CollectionSpec.Variables set before the load are
// the data sections' contents, and the spec is left as it was.
func TestVariablesBeforeLoad(t *testing.T) {
	spec, err := loader.LoadCollectionSpec("testdata/globals.o")
	if err != nil {
		t.Fatal(err)
	}
	before := slices.Clone(spec.Maps[".rodata"].Contents[0].Value.([]byte))
	for name, v := range map[string]uint32{"step": 5, "magic": 9} {
		if err := spec.Variables[name].Set(v); err != nil {
			t.Fatal(err)
		}
	}
	coll, err := bpfvm.NewCollection(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	var ro [2]uint32
	if err := coll.Maps[".rodata"].Lookup(uint32(0), &ro); err != nil || ro != [2]uint32{5, 9} {
		t.Errorf(".rodata holds %v, %v; want [5 9]", ro, err)
	}
	// (100+5) + 1*1000 + 9, as globals.c says with these constants.
	if got := run(t, coll.Programs["globals_entry"], make([]byte, 14), nil); got.ret != 1114 {
		t.Errorf("returned %d, want 1114", got.ret)
	}
	if after := spec.Maps[".rodata"].Contents[0].Value.([]byte); !slices.Equal(before, after) {
		t.Errorf("the spec's .rodata changed: % x, was % x", after, before)
	}
}

// TestRodataCheckedWrites: an unverified program (checked mode) cannot
// change a map read-only to programs either, through helpers or stores,
// since verified programs take a frozen one's contents as constants. The
// verifier refuses the same programs ("write into map forbidden").
func TestRodataCheckedWrites(t *testing.T) {
	rodata := &ebpf.MapSpec{Name: ".rodata", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1, Flags: 1 << 7}
	queue := &ebpf.MapSpec{Name: "roqueue", Type: ebpf.Queue, ValueSize: 8, MaxEntries: 4, Flags: 1 << 7}
	key := "*(u32 *)(r10 -4) = 0\n*(u64 *)(r10 -16) = 9\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\n"
	const eperm = 0xffffffffffffffff // -EPERM
	for _, c := range []struct {
		name string
		ms   []memMap
		asm  string
		want uint64
	}{
		{"update", []memMap{{spec: rodata, value: make([]byte, 8)}}, key + "r3 = r10\nr3 += -16\nr4 = 0\ncall bpf_map_update_elem#2\nexit", eperm},
		{"delete", []memMap{{spec: rodata, value: make([]byte, 8)}}, key + "call bpf_map_delete_elem#3\nexit", eperm},
		{"push", []memMap{{spec: queue}}, "*(u64 *)(r10 -8) = 1\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -8\nr3 = 0\ncall bpf_map_push_elem#87\nexit", eperm},
		{"pop", []memMap{{spec: queue}}, "r1 = map[fd:0] ll\nr2 = r10\nr2 += -8\ncall bpf_map_pop_elem#88\nexit", eperm},
		{"peek", []memMap{{spec: queue}}, "r1 = map[fd:0] ll\nr2 = r10\nr2 += -8\ncall bpf_map_peek_elem#89\nexit", 0xfffffffffffffffe}, // -ENOENT
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := asmCollection(t, ebpf.XDP, c.asm, c.ms)
			if _, err := bpfvm.NewCollection(spec); c.want == eperm && !strings.Contains(fmt.Sprint(err), "write into map forbidden") {
				t.Errorf("verified: %v, want write into map forbidden", err)
			}
			for _, cfg := range memConfigs {
				if !cfg.opts.NoVerify {
					continue
				}
				coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: cfg.opts})
				if err != nil {
					t.Fatalf("%s: %v", cfg.name, err)
				}
				if got, err := memRun(coll.Programs["prog"]); err != nil || got != c.want {
					t.Errorf("%s: %#x, %v; want %#x", cfg.name, got, err, c.want)
				}
				if m := coll.Maps[".rodata"]; m != nil {
					var v uint64
					if err := m.Lookup(uint32(0), &v); err != nil || v != 0 {
						t.Errorf("%s: .rodata holds %d, %v; want 0", cfg.name, v, err)
					}
				}
				coll.Close()
			}
		})
	}
}
