package perf_test

import (
	"fmt"
	"time"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/perf"
)

// Read the samples a tc program writes with bpf_perf_event_output, as
// with cilium/ebpf's perf package.
func ExampleReader() {
	coll, err := bpfvm.LoadCollection("../testdata/helpers_perf.o")
	if err != nil {
		panic(err)
	}
	defer coll.Close()
	// The program outputs 8 bytes of its pattern to the current CPU's ring.
	if err := coll.Maps["config"].Put(uint32(0), config{Flags: currentCPU, Size: 8}); err != nil {
		panic(err)
	}
	rd, err := perf.NewReader(coll.Maps["events"], 4096)
	if err != nil {
		panic(err)
	}
	defer rd.Close()
	if _, err := coll.Programs["perf_tc"].Run(&bpfvm.RunOptions{Data: make([]byte, 60)}); err != nil {
		panic(err)
	}
	rd.SetDeadline(time.Now().Add(time.Second))
	rec, err := rd.Read()
	if err != nil {
		panic(err)
	}
	// The raw sample carries the kernel's padding to 8 bytes.
	fmt.Println(rec.RawSample, rec.LostSamples)
	// Output: [1 2 3 4 5 6 7 8 0 0 0 0] 0
}
