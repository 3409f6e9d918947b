package bpfvm_test

import (
	"errors"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/verifier"
)

func TestBadMapSpecs(t *testing.T) {
	for _, c := range []struct {
		name string
		spec ebpf.MapSpec
		want error
	}{
		{"zero max entries", ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 8}, maps.ErrInvalid},
		{"zero key", ebpf.MapSpec{Type: ebpf.Hash, KeySize: 0, ValueSize: 8, MaxEntries: 1}, maps.ErrInvalid},
		{"zero value", ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 0, MaxEntries: 1}, maps.ErrInvalid},
		{"array key size", ebpf.MapSpec{Type: ebpf.Array, KeySize: 8, ValueSize: 8, MaxEntries: 1}, maps.ErrInvalid},
		{"unknown flags", ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 1, Flags: 1 << 20}, maps.ErrInvalid},
		{"ringbuf size", ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: 1000}, maps.ErrInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := c.spec
			spec.Name = "m"
			_, err := bpfvm.NewCollection(&ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{"m": &spec}})
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
}

func TestMapSemantics(t *testing.T) {
	spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{
		"h": {Name: "h", Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 2},
	}}
	coll, err := bpfvm.NewCollection(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	m := coll.Maps["h"]
	steps := []struct {
		op   string
		key  uint32
		val  uint64
		want error
	}{
		{"update-exist", 1, 10, maps.ErrKeyNotExist},
		{"put", 1, 10, nil},
		{"update-noexist", 1, 11, maps.ErrKeyExist},
		{"put", 2, 20, nil},
		{"put", 3, 30, maps.ErrFull},
		{"lookup", 1, 10, nil},
		{"delete", 3, 0, maps.ErrKeyNotExist},
		{"delete", 2, 0, nil},
		{"lookup", 2, 0, maps.ErrKeyNotExist},
		{"update-exist", 1, 12, nil},
		{"lookup", 1, 12, nil},
	}
	for i, s := range steps {
		var err error
		switch s.op {
		case "put":
			err = m.Put(s.key, s.val)
		case "update-exist":
			err = m.Update(s.key, s.val, bpfvm.UpdateExist)
		case "update-noexist":
			err = m.Update(s.key, s.val, bpfvm.UpdateNoExist)
		case "delete":
			err = m.Delete(s.key)
		case "lookup":
			var v uint64
			err = m.Lookup(s.key, &v)
			if err == nil && v != s.val {
				t.Errorf("step %d: lookup %d = %d, want %d", i, s.key, v, s.val)
			}
		}
		if !errors.Is(err, s.want) {
			t.Errorf("step %d (%s %d): got %v, want %v", i, s.op, s.key, err, s.want)
		}
	}
	// A failed update leaves the map unchanged.
	var keys []uint32
	var k uint32
	var v uint64
	it := m.Iterate()
	for it.Next(&k, &v) {
		keys = append(keys, k)
	}
	if it.Err() != nil || len(keys) != 1 || keys[0] != 1 {
		t.Errorf("iteration gave %v, %v; want [1]", keys, it.Err())
	}
	// Keys of the wrong size are refused.
	if err := m.Put(uint64(1), uint64(1)); err == nil {
		t.Error("8-byte key accepted for a 4-byte key map")
	}
}

func TestRunBadInput(t *testing.T) {
	insns, err := isa.Assemble("r0 = *(u32 *)(r1 +12)\nexit")
	if err != nil {
		t.Fatal(err)
	}
	p, err := bpfvm.NewRawProgram("ifindex", ebpf.XDP, insns, bpfvm.ProgramOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Run(&bpfvm.RunOptions{Data: make([]byte, 8)}); err == nil {
		t.Error("XDP run on 8 bytes accepted; the kernel wants at least 14")
	}
	if _, err := p.Run(&bpfvm.RunOptions{Data: make([]byte, 14), Context: make([]byte, 100)}); err == nil {
		t.Error("100-byte context accepted for xdp_md")
	}
	// As in the kernel, a context input names the packet's length in
	// data_end.
	ret, err := p.Run(&bpfvm.RunOptions{Data: make([]byte, 14), Context: []byte{4: 14, 12: 7, 15: 0}})
	if err != nil || ret != 7 {
		t.Errorf("ingress_ifindex from the context: got %d, %v; want 7", ret, err)
	}
	// A wild load in an unverified program is an error naming the
	// instruction, not a crash.
	wild, err := isa.Assemble("r1 = 0x1000\nr0 = *(u64 *)(r1 +0)\nexit")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bpfvm.NewRawProgram("wild", ebpf.XDP, wild, bpfvm.ProgramOptions{}); !errors.Is(err, verifier.ErrRejected) {
		t.Fatalf("wild load: got %v, want the verifier to reject it", err)
	}
	w, err := bpfvm.NewRawProgram("wild", ebpf.XDP, wild, bpfvm.ProgramOptions{NoVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	_, err = w.Run(&bpfvm.RunOptions{Data: make([]byte, 14)})
	var re interface{ Error() string }
	if err == nil || !errors.As(err, &re) {
		t.Fatalf("wild load: got %v, want an error", err)
	}
}

// Socket filters see the packet from the network header, but a test run
// returns the whole frame, as the kernel's does: with a zeroed link header
// in front (TestNetworkHeaderDataOut compares it with the kernel's).
func TestSocketFilterDataOut(t *testing.T) {
	insns, err := isa.Assemble("r0 = 0\nexit")
	if err != nil {
		t.Fatal(err)
	}
	p, err := bpfvm.NewRawProgram("sf", ebpf.SocketFilter, insns, bpfvm.ProgramOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	in := make([]byte, 64)
	for i := range in {
		in[i] = byte(i)
	}
	_, out, err := p.Test(in)
	if err != nil {
		t.Fatal(err)
	}
	want := append(make([]byte, 14), in[14:]...)
	if string(out) != string(want) {
		t.Errorf("output % x, want the 64-byte frame back, its link header zeroed", out)
	}
}

func TestMapBatch(t *testing.T) {
	for _, typ := range []ebpf.MapType{ebpf.Hash, ebpf.Array} {
		t.Run(typ.String(), func(t *testing.T) {
			coll, err := bpfvm.NewCollection(&ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{
				"m": {Name: "m", Type: typ, KeySize: 4, ValueSize: 8, MaxEntries: 10},
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer coll.Close()
			m := coll.Maps["m"]
			keys := []uint32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
			vals := []uint64{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}
			if n, err := m.BatchUpdate(keys, vals, nil); err != nil || n != 10 {
				t.Fatalf("BatchUpdate: %d, %v", n, err)
			}
			var cursor bpfvm.MapBatchCursor
			got := map[uint32]uint64{}
			ko, vo := make([]uint32, 4), make([]uint64, 4)
			for {
				n, err := m.BatchLookup(&cursor, ko, vo, nil)
				for i := range n {
					got[ko[i]] = vo[i]
				}
				if errors.Is(err, maps.ErrKeyNotExist) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if len(got) != 10 || got[3] != 13 {
				t.Errorf("BatchLookup gave %v", got)
			}
			if typ == ebpf.Hash {
				if n, err := m.BatchDelete(keys[:5], nil); err != nil || n != 5 {
					t.Fatalf("BatchDelete: %d, %v", n, err)
				}
				var v uint64
				if err := m.Lookup(uint32(2), &v); !errors.Is(err, maps.ErrKeyNotExist) {
					t.Errorf("key 2 still present after BatchDelete: %v", err)
				}
			}
		})
	}
}

// A verifier log that does not fit the starting buffer is retried with a
// larger one, so it comes back whole.
func TestVerifierLogGrows(t *testing.T) {
	insns, err := isa.Assemble("r0 = 0\nr1 = 1\nr2 = 2\nr3 = 3\nr0 += r1\nr0 += r2\nr0 += r3\nexit")
	if err != nil {
		t.Fatal(err)
	}
	full, err := bpfvm.NewRawProgram("p", ebpf.XDP, insns, bpfvm.ProgramOptions{LogLevel: 2})
	if err != nil {
		t.Fatal(err)
	}
	small, err := bpfvm.NewRawProgram("p", ebpf.XDP, insns, bpfvm.ProgramOptions{LogLevel: 2, LogSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	if small.VerifierLog != full.VerifierLog || len(full.VerifierLog) <= 16 {
		t.Errorf("log with a 16-byte start: %d bytes, want the whole %d", len(small.VerifierLog), len(full.VerifierLog))
	}
}
