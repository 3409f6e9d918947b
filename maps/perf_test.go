package maps

import (
	"errors"
	"testing"
	"time"
	"unsafe"
)

// TestPerfEventsOutput: the slot rules of Output, as the kernel's
// __bpf_perf_event_output checks them.
func TestPerfEventsOutput(t *testing.T) {
	for _, flags := range []uint32{0, FlagPreserveElems} {
		m, err := New(Spec{Name: "events", Type: PerfEventArray, KeySize: 4, ValueSize: 4, MaxEntries: 4, Flags: flags}, Options{NumCPU: 2})
		if err != nil {
			t.Fatal(err)
		}
		a := m.(*PerfEvents)
		if err := a.Output(0, PerfCurrentCPU, []byte{1}, nil); !errors.Is(err, ErrKeyNotExist) {
			t.Errorf("no reader: %v, want ErrKeyNotExist", err)
		}
		rd, err := a.NewReader(4096, PerfReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name  string
			cpu   int
			index uint64
			err   error
		}{
			{"current cpu 0", 0, PerfCurrentCPU, nil},
			{"current cpu 1", 1, PerfCurrentCPU, nil},
			{"own index", 1, 1, nil},
			{"another cpu's ring", 0, 1, ErrNotSupported},
			{"slot without a cpu", 0, 3, ErrKeyNotExist},
			{"past max_entries", 0, 4, ErrFull},
		} {
			if err := a.Output(tc.cpu, tc.index, []byte{1, 2, 3}, []byte{4}); !errors.Is(err, tc.err) && (err != nil || tc.err != nil) {
				t.Errorf("%s: %v, want %v", tc.name, err, tc.err)
			}
		}
		var rec PerfRecord
		for range 3 {
			if err := rd.ReadInto(&rec, time.Now().Add(time.Second)); err != nil {
				t.Fatal(err)
			}
			if string(rec.Sample) != "\x01\x02\x03\x04" {
				t.Errorf("sample % x", rec.Sample)
			}
		}
		// Go-side delete empties a slot, as the kernel's.
		k := uint32(1)
		if err := a.Delete(unsafe.Pointer(&k)); err != nil {
			t.Fatal(err)
		}
		if err := a.Delete(unsafe.Pointer(&k)); !errors.Is(err, ErrKeyNotExist) {
			t.Errorf("second delete: %v", err)
		}
		if err := a.Output(1, PerfCurrentCPU, nil, nil); !errors.Is(err, ErrKeyNotExist) {
			t.Errorf("deleted slot: %v", err)
		}
		next := make([]byte, 4)
		if err := a.NextKey(nil, next); err != nil || next[0] != 0 {
			t.Errorf("first key %v %v", next, err)
		}
		if err := a.LookupBytes(next, next); !errors.Is(err, ErrNotSupported) {
			t.Errorf("lookup: %v", err)
		}
		// Closing the map empties the slots unless BPF_F_PRESERVE_ELEMS.
		m.Close()
		err = a.Output(0, PerfCurrentCPU, nil, nil)
		if flags == 0 && !errors.Is(err, ErrKeyNotExist) || flags != 0 && err != nil {
			t.Errorf("flags %#x: output after the map's close: %v", flags, err)
		}
		rd.Close()
	}
}
