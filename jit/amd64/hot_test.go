//go:build amd64 && linux

package amd64

import (
	"fmt"
	"testing"

	"github.com/bpfvm/bpfvm/vm"
)

// hotHelpers change the regions between accesses: 1 drops every region, 2
// shrinks the first one in place (as a packet adjustment does), 3 makes it
// read-only in place.
func hotHelpers(id int32) vm.Helper {
	switch id {
	case 1:
		return func(e *vm.Env, r1, r2, r3, r4, r5 uint64) (uint64, error) {
			e.Regions = nil
			return 0, nil
		}
	case 2:
		return func(e *vm.Env, r1, r2, r3, r4, r5 uint64) (uint64, error) {
			e.Regions[0].End -= 32
			return 0, nil
		}
	case 3:
		return func(e *vm.Env, r1, r2, r3, r4, r5 uint64) (uint64, error) {
			e.Regions[0].Writable = false
			return 0, nil
		}
	}
	return nil
}

// TestHotRegion checks that the inline check of the last matched region
// never outlives a change of the regions.
func TestHotRegion(t *testing.T) {
	srcs := []string{
		// Dropped region.
		`r6 = r1
		r0 = *(u64 *)(r6 + 8)
		call 1
		r0 = *(u64 *)(r6 + 8)
		exit`,
		// Shrunk in place.
		`r6 = r1
		r0 = *(u64 *)(r6 + 40)
		call 2
		r0 = *(u64 *)(r6 + 8)
		r0 = *(u64 *)(r6 + 40)
		exit`,
		// Made read-only in place.
		`r6 = r1
		*(u64 *)(r6 + 8) = r6
		call 3
		r0 = *(u64 *)(r6 + 8)
		*(u64 *)(r6 + 8) = r0
		exit`,
		// Read-only region: reads make it hot, writes must still fail.
		`r0 = *(u64 *)(r1 + 8)
		r0 = *(u8 *)(r1 + 63)
		*(u64 *)(r1 + 8) = r0
		exit`,
		// Every size at the end of a hot region.
		`r0 = *(u8 *)(r1 + 0)
		r0 = *(u8 *)(r1 + 63)
		r0 = *(u16 *)(r1 + 62)
		r0 = *(u32 *)(r1 + 60)
		r0 = *(u64 *)(r1 + 56)
		r0 = *(u16 *)(r1 + 63)
		exit`,
		`r0 = *(u8 *)(r1 + 0)
		r0 = *(u32 *)(r1 + 61)
		exit`,
		`r0 = *(u8 *)(r1 + 0)
		r0 = *(u64 *)(r1 + 57)
		exit`,
		`r0 = *(u8 *)(r1 + 0)
		r0 = *(u8 *)(r1 - 1)
		exit`,
		// Atomics on a hot region.
		`r0 = *(u8 *)(r1 + 0)
		r2 = 1
		lock *(u64 *)(r1 + 56) += r2
		lock *(u64 *)(r1 + 64) += r2
		exit`,
	}
	for i, src := range srcs {
		for _, ro := range []bool{false, true} {
			t.Run(fmt.Sprint(i, ro), func(t *testing.T) {
				diff(t, diffCase{prog: mustAssemble(t, src), helpers: hotHelpers, size: 64, checkedOnly: true,
					setup: func(te *testEnv) {
						// A bigger mapping, of which the run may touch 64 bytes.
						m, err := vm.Alloc(4096)
						if err != nil {
							t.Fatal(err)
						}
						t.Cleanup(func() { m.Free() })
						te.data, te.addr = m, m.Addr()
					},
					reset: func(te *testEnv) {
						te.env.Regions = []vm.Region{{Start: te.addr, End: te.addr + 64, Writable: !ro}}
					}})
			})
		}
	}
	// A region overlapping the emulated context never becomes hot: the
	// context part still goes to CtxAccess after the rest was accessed.
	var calls int
	diff(t, diffCase{prog: mustAssemble(t, `
		r0 = *(u64 *)(r1 + 32)
		r2 = *(u64 *)(r1 + 0)
		r0 += r2
		r2 = *(u64 *)(r1 + 40)
		r0 += r2
		r2 = *(u32 *)(r1 + 4)
		r0 += r2
		exit`), size: 64, checkedOnly: true, setup: func(te *testEnv) {
		te.env.Ctx = vm.Region{Start: te.addr, End: te.addr + 16, Writable: true}
		te.env.CtxAccess = func(e *vm.Env, off, size uint64, write bool, val uint64) (uint64, error) {
			calls++
			return 0x1000 + off, nil
		}
	}})
	if calls != 4 { // two loads from the context, on each engine
		t.Fatalf("CtxAccess called %d times, want 4", calls)
	}
}
