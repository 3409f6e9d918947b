package bpfvm_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
	"github.com/bpfvm/bpfvm/maps"
)

// Programs run on many goroutines while Go code updates and reads the same
// maps: atomic adds must not lose updates, per-CPU slots must not be shared
// by two runs at once, and `go test -race` must stay quiet.
func TestConcurrentRunsAndMapUpdates(t *testing.T) {
	const (
		goroutines = 8
		runs       = 500
		numCPU     = 4
	)
	spec, err := loader.LoadCollectionSpec("testdata/btf_maps.o")
	if err != nil {
		t.Fatal(err)
	}
	coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{NumCPU: numCPU})
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	prog := coll.Programs["btf_maps_entry"]

	var wg sync.WaitGroup
	errs := make(chan error, goroutines+1)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pkt := make([]byte, 14+g)
			pkt[0] = byte(g)
			for range runs {
				if ret, err := prog.Run(&bpfvm.RunOptions{Data: pkt}); err != nil || ret != 2 {
					errs <- errors.Join(err, errors.New("unexpected return value"))
					return
				}
			}
		}()
	}
	stop := make(chan struct{})
	var updater sync.WaitGroup
	updater.Add(1)
	go func() {
		defer updater.Done()
		seen := coll.Maps["seen"]
		for i := uint32(0); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			key := 100 + i%50
			if err := seen.Put(key, uint64(i)); err != nil && !errors.Is(err, maps.ErrFull) {
				errs <- err
				return
			}
			var v uint64
			if err := seen.Lookup(key, &v); err != nil && !errors.Is(err, maps.ErrKeyNotExist) {
				errs <- err
				return
			}
			if err := seen.Delete(key); err != nil && !errors.Is(err, maps.ErrKeyNotExist) {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	updater.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	var total uint64
	for k := uint32(0); k < 4; k++ {
		var v uint64
		if err := coll.Maps["counters"].Lookup(k, &v); err != nil {
			t.Fatal(err)
		}
		total += v
	}
	if total != goroutines*runs {
		t.Errorf("counters sum to %d, want %d: atomic adds lost updates", total, goroutines*runs)
	}

	var perCPU []uint64
	if err := coll.Maps["bytes"].Lookup(uint32(0), &perCPU); err != nil {
		t.Fatal(err)
	}
	if len(perCPU) != numCPU {
		t.Fatalf("%d per-CPU values, want %d", len(perCPU), numCPU)
	}
	var bytes, want uint64
	for _, v := range perCPU {
		bytes += v
	}
	for g := range goroutines {
		want += uint64(14+g) * runs
	}
	if bytes != want {
		t.Errorf("per-CPU byte counts sum to %d, want %d: two runs shared a CPU slot", bytes, want)
	}
}
