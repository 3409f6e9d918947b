package verifier_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/bpfvm/bpfvm/maps"
)

// TestMain reports how many cases were compared with the running kernel.
func TestMain(m *testing.M) {
	code := m.Run()
	if n := kernelCompared.Load(); n > 0 {
		fmt.Printf("kernel comparison: %d cases compared, %d agree\n", n, kernelAgreed.Load())
	}
	if n := unprivCompared.Load(); n > 0 {
		fmt.Printf("unprivileged sweep: %d cases compared, %d agree; processed %d, the kernel %d\n", n, unprivAgreed.Load(), unprivProcessed.Load(), unprivKernelProcessed.Load())
	}
	os.Exit(code)
}

// Fragments shared by the selftest groups.
const (
	// xdpPkt loads data into r2 and data_end into r3 from struct xdp_md.
	xdpPkt = "r2 = *(u32 *)(r1 +0)\nr3 = *(u32 *)(r1 +4)\n"
	// tcPkt loads data into r2 and data_end into r3 from struct __sk_buff.
	tcPkt = "r2 = *(u32 *)(r1 +76)\nr3 = *(u32 *)(r1 +80)\n"
	// lookup4 looks up key 0 (u32 at fp-4) in map 0; r0 is the result.
	lookup4 = "*(u32 *)(r10 -4) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\n"
	// lookup8 looks up key 0 (u64 at fp-8) in map 0.
	lookup8 = "*(u64 *)(r10 -8) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -8\ncall bpf_map_lookup_elem#1\n"
)

// val48 is a hash map with 48-byte values, for bounds checks of variable
// offsets.
var val48 = maps.Spec{Name: "val48", Type: maps.Hash, KeySize: 4, ValueSize: 48, MaxEntries: 4}

// valPre looks up val48, keeps the value pointer in r6 and loads an unknown
// u64 into r1; valPost accesses byte r1 of the value.
const (
	valPre  = lookup4 + "if r0 == 0 goto out\nr6 = r0\nr1 = *(u64 *)(r0 +0)\n"
	valPost = "\nr6 += r1\nr0 = *(u8 *)(r6 +0)\nout: r0 = 0\nexit"
)

// valCase is a case accessing byte r1 of a 48-byte map value after body.
func valCase(name, body, err string) vcase {
	return vcase{name: name, maps: []maps.Spec{val48}, asm: valPre + body + valPost, err: err}
}
