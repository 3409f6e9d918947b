package bpfvm_test

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/bpfvm/bpfvm"
)

func TestHelperQueueStack(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		vm, kern := loadHelpers(t, noVerify, "testdata/helpers_maps.o", bpfvm.CollectionOptions{})
		type args struct{ Op, Which, Flags, Value uint32 }
		const (
			push, pop, peek = 0, 1, 2
			queue, stack    = 0, 1
			exist           = 2 // BPF_EXIST
		)
		// Steps run in order on the same maps (capacity 4 each).
		for i, s := range []struct {
			in    args
			ret   uint32
			value uint32 // the value field after the run
		}{
			{args{pop, queue, 0, 9}, errno(eNOENT), 0}, // cleared when empty,
			{args{peek, stack, 0, 9}, errno(eNOENT), 0},
			{args{push, queue, 0, 1}, 0, 1},
			{args{push, queue, 0, 2}, 0, 2},
			{args{push, queue, 0, 3}, 0, 3},
			{args{push, queue, 0, 4}, 0, 4},
			{args{push, queue, 0, 5}, errno(e2BIG), 5},
			{args{push, queue, exist, 5}, 0, 5}, // drops 1
			{args{push, queue, 1, 6}, errno(eINVAL), 6},
			{args{peek, queue, 0, 0}, 0, 2},
			{args{pop, queue, 0, 0}, 0, 2},
			{args{pop, queue, 0, 0}, 0, 3},
			{args{push, stack, 0, 10}, 0, 10},
			{args{push, stack, 0, 20}, 0, 20},
			{args{peek, stack, 0, 0}, 0, 20},
			{args{pop, stack, 0, 0}, 0, 20},
			{args{pop, stack, 0, 0}, 0, 10},
			{args{pop, stack, 0, 7}, errno(eNOENT), 0},
			{args{pop, queue, 0, 0}, 0, 4},
			{args{pop, queue, 0, 0}, 0, 5},
			{args{pop, queue, 0, 8}, errno(eNOENT), 0},
		} {
			if t.Failed() {
				t.Fatalf("stopped before step %d", i)
			}
			in := frame(s.in)
			out := s.in
			out.Value = s.value
			checkRun(t, vm, kern, "qs", in, nil, runOut{s.ret, frame(out)})
		}
	})
}

// kernelRecords drains the records of the kernel's ring buffer.
func kernelRecords(t *testing.T, m *ebpf.Map) [][]byte {
	t.Helper()
	rd, err := ringbuf.NewReader(m)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var recs [][]byte
	for {
		rd.SetDeadline(time.Now().Add(50 * time.Millisecond))
		rec, err := rd.Read()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return recs
		}
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec.RawSample)
	}
}

func TestHelperRingbuf(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		vm, kern := loadHelpers(t, noVerify, "testdata/helpers_maps.o", bpfvm.CollectionOptions{})
		type args struct {
			Op, Len uint32
			Flags   uint64
			Data    [32]byte
		}
		data := [32]byte{}
		copy(data[:], "abcdefghijklmnopqrstuvwxyz012345")
		const (
			output, submit, discard, query, fill = 0, 1, 2, 3, 4
			avail, size, cons, prod              = 0, 1, 2, 3
		)
		step := func(a args, ret uint32) {
			t.Helper()
			a.Data = data
			in := frame(a)
			checkRun(t, vm, kern, "ring", in, nil, runOut{ret, in})
		}
		drain := func(want ...string) {
			t.Helper()
			got, err := bpfvm.RingRecords(vm.Maps["rb"])
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d records, want %d", len(got), len(want))
			}
			for i := range got {
				if string(got[i]) != want[i] {
					t.Errorf("record %d: %q, want %q", i, got[i], want[i])
				}
			}
			if kern != nil {
				k := kernelRecords(t, kern.Maps["rb"])
				if len(k) != len(got) {
					t.Fatalf("kernel has %d records, bpfvm %d", len(k), len(got))
				}
				for i := range k {
					if !bytes.Equal(k[i], got[i]) {
						t.Errorf("record %d: kernel %q, bpfvm %q", i, k[i], got[i])
					}
				}
			}
		}
		step(args{Op: output, Len: 4}, 0)
		step(args{Op: output, Len: 1, Flags: 1}, 0) // BPF_RB_NO_WAKEUP
		step(args{Op: output, Len: 1, Flags: 4}, errno(eINVAL))
		step(args{Op: submit}, 0)
		step(args{Op: discard}, 0)
		step(args{Op: submit, Flags: 1}, 1) // reserve takes no flags
		// Records are 8-byte headers and data rounded up to 8: 16+16+24+24.
		step(args{Op: query, Flags: avail}, 80)
		step(args{Op: query, Flags: size}, 4096)
		step(args{Op: query, Flags: cons}, 0)
		step(args{Op: query, Flags: prod}, 80)
		step(args{Op: query, Flags: 9}, 0)
		drain("abcde", "ab", "abcdefghijklmnop")
		step(args{Op: query, Flags: cons}, 80)
		step(args{Op: query, Flags: avail}, 0)
		// The producer stays less than the ring's size ahead of the consumer:
		// 102 records of 40 bytes fit in 4096 bytes.
		step(args{Op: fill}, 102)
		step(args{Op: output, Len: 0}, errno(11)) // EAGAIN
		var want []string
		for i := range 102 {
			rec := data
			rec[0] = byte(i)
			want = append(want, string(rec[:]))
		}
		drain(want...)
		step(args{Op: output, Len: 0}, 0)
		drain("a")
	})
}

func TestHelperTailCall(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		vm, kern := loadHelpers(t, noVerify, "testdata/helpers_maps.o", bpfvm.CollectionOptions{})
		for slot, name := range []string{"target0", "target1", "recurse"} {
			if err := vm.Maps["jmp"].Put(uint32(slot), vm.Programs[name]); err != nil {
				t.Fatal(err)
			}
			if kern != nil {
				if err := kern.Maps["jmp"].Put(uint32(slot), kern.Programs[name]); err != nil {
					t.Fatal(err)
				}
			}
		}
		type args struct{ Index, Sub uint32 }
		for _, c := range []struct {
			name   string
			in     args
			ret    uint32
			out    func([]byte) []byte
			counts [2]uint64 // counts[0] and counts[1] after the run
		}{
			{"target with its own map", args{0, 0}, 10, nil, [2]uint64{1, 0}},
			{"target writes the packet", args{1, 0}, 20, func(b []byte) []byte { return with(b, 0, 0xab) }, [2]uint64{1, 0}},
			{"33 tail calls", args{2, 0}, 30, nil, [2]uint64{1, 33}},
			{"empty slot", args{3, 0}, 100, nil, [2]uint64{1, 33}},
			{"out of range", args{4, 0}, 100, nil, [2]uint64{1, 33}},
			{"from a subprogram", args{0, 1}, 1010, nil, [2]uint64{2, 33}},
			{"from a subprogram, empty slot", args{3, 1}, 1013, nil, [2]uint64{2, 33}},
			{"from a subprogram, 33 tail calls", args{2, 1}, 1030, nil, [2]uint64{2, 66}},
		} {
			t.Run(c.name, func(t *testing.T) {
				in := frame(c.in)
				want := in
				if c.out != nil {
					want = c.out(in)
				}
				checkRun(t, vm, kern, "tail", in, nil, runOut{c.ret, want})
				for i, w := range c.counts {
					var n uint64
					if err := vm.Maps["counts"].Lookup(uint32(i), &n); err != nil {
						t.Fatal(err)
					}
					if n != w {
						t.Errorf("counts[%d] = %d, want %d", i, n, w)
					}
				}
			})
		}

		t.Run("closed target", func(t *testing.T) {
			other := loadVM(t, noVerify, "testdata/helpers_maps.o", bpfvm.CollectionOptions{})
			p := other.Programs["target0"]
			if err := vm.Maps["jmp"].Put(uint32(3), p); err != nil {
				t.Fatal(err)
			}
			// A program of another collection is not called: it would run on
			// this collection's runners.
			checkRun(t, vm, nil, "tail", frame(args{3, 0}), nil, runOut{100, nil})
			if err := vm.Maps["jmp"].Put(uint32(3), vm.Programs["target1"]); err != nil {
				t.Fatal(err)
			}
			checkRun(t, vm, nil, "tail", frame(args{3, 0}), nil, runOut{20, nil})
			// As in the kernel, the slot holds a reference: closed by its
			// user, the program is still called until it leaves the slot.
			vm.Programs["target1"].Close()
			checkRun(t, vm, nil, "tail", frame(args{3, 0}), nil, runOut{20, nil})
			if err := vm.Maps["jmp"].Delete(uint32(3)); err != nil {
				t.Fatal(err)
			}
			checkRun(t, vm, nil, "tail", frame(args{3, 0}), nil, runOut{100, nil})
		})
	})
}
