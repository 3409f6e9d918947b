package ringbuf_test

import (
	"fmt"
	"time"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/ringbuf"
)

// Read the records an XDP program writes with bpf_ringbuf_output, as with
// cilium/ebpf's ringbuf package.
func ExampleReader() {
	coll, err := bpfvm.LoadCollection("../testdata/helpers_maps.o")
	if err != nil {
		panic(err)
	}
	defer coll.Close()
	rd, err := ringbuf.NewReader(coll.Maps["rb"])
	if err != nil {
		panic(err)
	}
	defer rd.Close()
	// The ring program outputs (4 & 31) + 1 bytes of its arguments.
	if _, err := coll.Programs["ring"].Run(&bpfvm.RunOptions{Data: args(0, 4)}); err != nil {
		panic(err)
	}
	rd.SetDeadline(time.Now().Add(time.Second))
	rec, err := rd.Read()
	if err != nil {
		panic(err)
	}
	fmt.Println(rec.RawSample, rec.Remaining)
	// Output: [1 2 3 4 5] 0
}
