package interp

import (
	"sync/atomic"
	"unsafe"

	"github.com/bpfvm/bpfvm/vm"
)

// Atomic instructions use sync/atomic so that they are atomic with respect to
// other runs and to Go code updating the same map values.

func atomic32(in *insn, p unsafe.Pointer, r *[11]uint64) {
	a := (*uint32)(p)
	src := uint32(r[in.src])
	switch in.op {
	case opAtomicAdd32:
		atomic.AddUint32(a, src)
	case opAtomicOr32:
		atomic.OrUint32(a, src)
	case opAtomicAnd32:
		atomic.AndUint32(a, src)
	case opAtomicXor32:
		xor32(a, src)
	case opAtomicFetchAdd32:
		r[in.src] = uint64(atomic.AddUint32(a, src) - src)
	case opAtomicFetchOr32:
		r[in.src] = uint64(atomic.OrUint32(a, src))
	case opAtomicFetchAnd32:
		r[in.src] = uint64(atomic.AndUint32(a, src))
	case opAtomicFetchXor32:
		r[in.src] = uint64(xor32(a, src))
	case opAtomicXchg32:
		r[in.src] = uint64(atomic.SwapUint32(a, src))
	case opAtomicCmpXchg32:
		old := uint32(r[0])
		for {
			cur := atomic.LoadUint32(a)
			if cur != old || atomic.CompareAndSwapUint32(a, cur, src) {
				r[0] = uint64(cur)
				break
			}
		}
	}
}

func atomic64(in *insn, p unsafe.Pointer, r *[11]uint64) {
	a := (*uint64)(p)
	src := r[in.src]
	switch in.op {
	case opAtomicAdd64:
		atomic.AddUint64(a, src)
	case opAtomicOr64:
		atomic.OrUint64(a, src)
	case opAtomicAnd64:
		atomic.AndUint64(a, src)
	case opAtomicXor64:
		xor64(a, src)
	case opAtomicFetchAdd64:
		r[in.src] = atomic.AddUint64(a, src) - src
	case opAtomicFetchOr64:
		r[in.src] = atomic.OrUint64(a, src)
	case opAtomicFetchAnd64:
		r[in.src] = atomic.AndUint64(a, src)
	case opAtomicFetchXor64:
		r[in.src] = xor64(a, src)
	case opAtomicXchg64:
		r[in.src] = atomic.SwapUint64(a, src)
	case opAtomicCmpXchg64:
		old := r[0]
		for {
			cur := atomic.LoadUint64(a)
			if cur != old || atomic.CompareAndSwapUint64(a, cur, src) {
				r[0] = cur
				break
			}
		}
	}
}

func xor32(a *uint32, v uint32) uint32 {
	for {
		old := atomic.LoadUint32(a)
		if atomic.CompareAndSwapUint32(a, old, old^v) {
			return old
		}
	}
}

func xor64(a *uint64, v uint64) uint64 {
	for {
		old := atomic.LoadUint64(a)
		if atomic.CompareAndSwapUint64(a, old, old^v) {
			return old
		}
	}
}

// loadAcquire and storeRelease: x86-64 loads and stores already have
// acquire and release order; sync/atomic keeps the Go compiler from
// reordering the 32- and 64-bit forms.
func loadAcquire(p unsafe.Pointer, size uint64) uint64 {
	switch size {
	case 1:
		return uint64(*(*uint8)(p))
	case 2:
		return uint64(*(*uint16)(p))
	case 4:
		return uint64(atomic.LoadUint32((*uint32)(p)))
	}
	return atomic.LoadUint64((*uint64)(p))
}

func storeRelease(p unsafe.Pointer, size uint64, v uint64) {
	switch size {
	case 1:
		*(*uint8)(p) = uint8(v)
	case 2:
		*(*uint16)(p) = uint16(v)
	case 4:
		atomic.StoreUint32((*uint32)(p), uint32(v))
	default:
		atomic.StoreUint64((*uint64)(p), v)
	}
}

// checkAtomic validates an atomic access in checked mode: in bounds and
// naturally aligned (a split-locked access can fault on some hosts).
func checkAtomic(env *vm.Env, addr, size uint64) error {
	if addr&(size-1) != 0 {
		return &vm.MemoryError{Addr: addr, Size: size, Write: true}
	}
	return env.Check(addr, size, true)
}
