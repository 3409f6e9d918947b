package maps

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// word is what every 8-byte word of a test value holds: the key and a
// counter, so a reader can tell a torn value (words differ), another key's
// element (reused memory) and a reclaimed element (poison).
func word(key uint32, n uint64) uint64 { return uint64(key)<<40 | n&(1<<40-1) }

const poisonWord = 0xa5a5a5a5a5a5a5a5

// checkValue reads the words at p twice, yielding in between, and reports
// what is wrong with them.
func checkValue(p unsafe.Pointer, words int, key uint32) error {
	ws := unsafe.Slice((*uint64)(p), words)
	first := make([]uint64, words)
	for i := range ws {
		first[i] = atomic.LoadUint64(&ws[i])
	}
	for i, w := range first {
		switch {
		case w == poisonWord:
			return fmt.Errorf("key %d: poisoned (reclaimed) element", key)
		case w != first[0]:
			return fmt.Errorf("key %d: torn value: word %d is %#x, word 0 %#x", key, i, w, first[0])
		case w>>40 != uint64(key):
			return fmt.Errorf("key %d: element of key %d (reused)", key, w>>40)
		}
	}
	runtime.Gosched()
	for i := range ws {
		if w := atomic.LoadUint64(&ws[i]); w != first[i] {
			return fmt.Errorf("key %d: value changed under a reader: word %d %#x -> %#x", key, i, first[i], w)
		}
	}
	return nil
}

func TestHashConcurrentReaders(t *testing.T) {
	for _, typ := range []Type{Hash, PerCPUHash, LRUHash, LRUPerCPUHash} {
		t.Run(typ.String(), func(t *testing.T) {
			const (
				readers = 4
				keys    = 8
				words   = 8
			)
			d := NewDomain(readers)
			m := newTestMap(t, Spec{Type: typ, KeySize: 4, ValueSize: words * 8, MaxEntries: keys}, Options{NumCPU: readers, Domain: d})
			h := m.(*hashMap)
			h.elems.poison = true
			ncpu := 1
			if typ.PerCPU() {
				ncpu = readers
			}

			deadline := time.Now().Add(300 * time.Millisecond)
			var wg sync.WaitGroup
			var errs sync.Map
			var reads, hits atomic.Int64
			for i := range readers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for time.Now().Before(deadline) {
						d.Enter(i)
						for k := range uint32(keys) {
							p := m.Lookup(unsafe.Pointer(&k), i)
							reads.Add(1)
							if p == nil {
								continue
							}
							hits.Add(1)
							if err := checkValue(p, words, k); err != nil {
								errs.Store(err.Error(), true)
							}
						}
						d.Exit(i)
					}
				}()
			}
			var updates atomic.Int64
			for w := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					val := make([]byte, ValueSizeBytes(m.Spec(), ncpu))
					for n := uint64(1); time.Now().Before(deadline); n++ {
						k := uint32(n % keys)
						for i := 0; i < len(val); i += 8 {
							binary.NativeEndian.PutUint64(val[i:], word(k, n*2+uint64(w)))
						}
						if err := m.UpdateBytes(u32(k), val, UpdateAny); err != nil {
							errs.Store("update: "+err.Error(), true)
						}
						updates.Add(1)
						if n%5 == 0 {
							if err := m.Delete(unsafe.Pointer(&k)); err != nil && !errors.Is(err, ErrKeyNotExist) {
								errs.Store("delete: "+err.Error(), true)
							}
						}
					}
				}()
			}
			wg.Wait()
			errs.Range(func(k, _ any) bool { t.Error(k); return true })
			if hits.Load() == 0 || updates.Load() < 100 {
				t.Errorf("too little work: %d hits of %d reads, %d updates", hits.Load(), reads.Load(), updates.Load())
			}
			t.Logf("%d reads (%d hits), %d updates, %d elements used of %d", reads.Load(), hits.Load(), updates.Load(), h.elems.fresh.Load(), h.elems.n)
		})
	}
}

func TestHashConcurrentProgramUpdates(t *testing.T) {
	// Runners update and delete from programs while others read: values
	// are never torn or reused under a reader.
	const runners, keys, words = 4, 16, 4
	d := NewDomain(runners)
	m := newTestMap(t, Spec{Type: Hash, KeySize: 4, ValueSize: words * 8, MaxEntries: keys}, Options{NumCPU: runners, Domain: d})
	m.(*hashMap).elems.poison = true
	deadline := time.Now().Add(300 * time.Millisecond)
	var wg sync.WaitGroup
	var errs sync.Map
	for i := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var val [words]uint64
			for n := uint64(0); time.Now().Before(deadline); n++ {
				d.Enter(i)
				k := uint32((n*7 + uint64(i)) % keys)
				if i%2 == 0 {
					for w := range val {
						val[w] = word(k, n)
					}
					err := m.Update(unsafe.Pointer(&k), unsafe.Pointer(&val), UpdateAny, i)
					if err != nil && !errors.Is(err, ErrBusy) {
						errs.Store(err.Error(), true)
					}
					if n%3 == 0 {
						m.Delete(unsafe.Pointer(&k))
					}
				} else if p := m.Lookup(unsafe.Pointer(&k), i); p != nil {
					if err := checkValue(p, words, k); err != nil {
						errs.Store(err.Error(), true)
					}
				}
				d.Exit(i)
			}
		}()
	}
	wg.Wait()
	errs.Range(func(k, _ any) bool { t.Error(k); return true })
}

func TestHashConcurrentInsert(t *testing.T) {
	for _, typ := range []Type{Hash, PerCPUHash} {
		t.Run(typ.String(), func(t *testing.T) {
			const max, goroutines, each = 1000, 8, 250
			m := newTestMap(t, Spec{Type: typ, KeySize: 8, ValueSize: 8, MaxEntries: max}, Options{NumCPU: 2, Domain: NewDomain(2)})
			var ok, full atomic.Int64
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					val := make([]byte, ValueSizeBytes(m.Spec(), 2))
					for i := range each {
						key := binary.NativeEndian.AppendUint64(nil, uint64(g*each+i))
						switch err := m.UpdateBytes(key, val, UpdateNoExist); {
						case err == nil:
							ok.Add(1)
						case errors.Is(err, ErrFull):
							full.Add(1)
						default:
							t.Error(err)
						}
					}
				}()
			}
			wg.Wait()
			if ok.Load() != max || full.Load() != goroutines*each-max {
				t.Errorf("%d inserted, %d full; want %d and %d", ok.Load(), full.Load(), max, goroutines*each-max)
			}
			if n := m.(*hashMap).len(); n != max {
				t.Errorf("count %d", n)
			}
			got := ours{m, 2}
			sh := shape{keySize: 8}
			if r := sh.run(got, step{op: opKeys}); len(r.keys) != max {
				t.Errorf("walk found %d keys", len(r.keys))
			}
		})
	}
}

func TestHashConcurrentSameKeys(t *testing.T) {
	// Goroutines race to insert the same keys with NOEXIST: exactly one
	// wins each key.
	const keys, goroutines = 200, 6
	m := newTestMap(t, Spec{Type: Hash, KeySize: 4, ValueSize: 4, MaxEntries: keys}, Options{})
	var wins [keys]atomic.Int32
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range uint32(keys) {
				if err := m.UpdateBytes(u32(k), u32(k), UpdateNoExist); err == nil {
					wins[k].Add(1)
				} else if !errors.Is(err, ErrKeyExist) {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	for k := range wins {
		if n := wins[k].Load(); n != 1 {
			t.Errorf("key %d inserted %d times", k, n)
		}
	}
}

func TestLRUConcurrent(t *testing.T) {
	const max, goroutines = 64, 4
	d := NewDomain(goroutines)
	m := newTestMap(t, Spec{Type: LRUHash, KeySize: 4, ValueSize: 8, MaxEntries: max}, Options{NumCPU: goroutines, Domain: d})
	h := m.(*hashMap)
	h.elems.poison = true
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3000 {
				k := uint32(g*100000 + i)
				v := word(k, 1)
				d.Enter(g)
				if err := m.Update(unsafe.Pointer(&k), unsafe.Pointer(&v), UpdateAny, g); err != nil && !errors.Is(err, ErrBusy) {
					t.Error(err)
				}
				for j := range uint32(4) {
					kk := k - j
					if p := m.Lookup(unsafe.Pointer(&kk), g); p != nil {
						if err := checkValue(p, 1, kk); err != nil {
							t.Error(err)
						}
					}
				}
				d.Exit(g)
				if n := h.len(); n > max {
					t.Errorf("count %d over %d", n, max)
				}
			}
		}()
	}
	wg.Wait()
	if n := h.len(); n != max {
		t.Errorf("count %d, want %d", n, max)
	}
	if r := (shape{keySize: 4}).run(ours{m, goroutines}, step{op: opKeys}); len(r.keys) != max {
		t.Errorf("walk found %d keys", len(r.keys))
	}
}

func TestQueueConcurrent(t *testing.T) {
	const producers, each = 4, 2000
	m := newTestMap(t, Spec{Type: Queue, ValueSize: 8, MaxEntries: 64}, Options{})
	q := m.(QueueStack)
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; {
				v := uint64(p*each + i)
				if err := q.Push(unsafe.Pointer(&v), 0); errors.Is(err, ErrFull) {
					runtime.Gosched()
					continue
				}
				i++
			}
		}()
	}
	seen := make([]bool, producers*each)
	last := make([]int, producers)
	for i := range last {
		last[i] = -1
	}
	for n := 0; n < producers*each; {
		var v uint64
		if err := q.Pop(unsafe.Pointer(&v)); err != nil {
			runtime.Gosched()
			continue
		}
		if seen[v] {
			t.Fatalf("%d popped twice", v)
		}
		seen[v] = true
		// FIFO per producer.
		p, i := int(v)/each, int(v)%each
		if i <= last[p] {
			t.Fatalf("producer %d: %d after %d", p, i, last[p])
		}
		last[p] = i
		n++
	}
	wg.Wait()
}
