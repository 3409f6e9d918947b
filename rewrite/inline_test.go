package rewrite

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/bpfvm/bpfvm/interp"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/jit/amd64"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/verifier"
	"github.com/bpfvm/bpfvm/vm"
)

// engine is what the interpreter and the JIT have in common.
type engine interface {
	Run(env *vm.Env, r1, r2, budget uint64) (uint64, error)
}

// lookupEngines compiles an inline lookup sequence, followed by exit, for
// the interpreter and (where there is one) the JIT.
func lookupEngines(t *testing.T, s maps.Spec) map[string]engine {
	t.Helper()
	seq := lookupSeq(s, InlineOptions{})
	if seq == nil {
		t.Fatalf("%v: not inlined", s)
	}
	prog := append(seq, isa.Instruction{Op: isa.OpExit})
	engines := map[string]engine{}
	ip, err := interp.New(prog, nil)
	if err != nil {
		t.Fatal(err)
	}
	engines["interp"] = ip
	jp, err := amd64.Compile(prog, nil, amd64.Options{Modes: amd64.Unchecked})
	switch {
	case err == nil:
		engines["jit"] = jp
	case err != amd64.ErrNotSupported:
		t.Fatal(err)
	}
	return engines
}

// newEnv returns an unchecked run environment with a stack.
func newEnv(t *testing.T) *vm.Env {
	t.Helper()
	stack, err := vm.Alloc(vm.MaxFrames * vm.StackSize)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stack.Free() })
	return &vm.Env{Stack: vm.Region{Start: stack.Addr(), End: stack.Addr() + vm.MaxFrames*vm.StackSize, Writable: true}}
}

// inlineKeySizes covers every tail shape (1-7 bytes after whole words) for
// short and long keys.
var inlineKeySizes = []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 20, 23, 24, 31, 32, 33, 40, 47, 63, 64, 65, 100, 127, 128}

// The inline lookup of every hash map type returns exactly the pointer the
// Go lookup returns, for present and absent keys, after deletes and
// replacing updates, on every CPU, on both engines; LRU lookups set the
// element's referenced mark.
func TestInlineHashLookupMatchesGo(t *testing.T) {
	const ncpu = 3
	types := []maps.Type{maps.Hash, maps.PerCPUHash, maps.LRUHash, maps.LRUPerCPUHash}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typ := range types {
		for _, ks := range inlineKeySizes {
			for _, vs := range []uint32{8, 20} {
				spec := maps.Spec{Name: "m", Type: typ, KeySize: ks, ValueSize: vs, MaxEntries: 64}
				t.Run(fmt.Sprintf("type%d/key%d/value%d", typ, ks, vs), func(t *testing.T) {
					checkInlineHash(t, spec, ncpu, rng)
				})
			}
		}
	}
}

func checkInlineHash(t *testing.T, spec maps.Spec, ncpu int, rng *rand.Rand) {
	m, err := maps.New(spec, maps.Options{NumCPU: ncpu})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	engines := lookupEngines(t, spec)
	env := newEnv(t)
	keyMem, err := vm.Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer keyMem.Free()
	// An odd address: program keys need no alignment.
	keyAddr := keyMem.Addr() + 4096 - uint64(spec.KeySize) - 1
	key := unsafe.Slice((*byte)(vm.Ptr(keyAddr)), spec.KeySize)
	valueLen := maps.ValueSizeBytes(spec, ncpu)
	lru := spec.Type == maps.LRUHash || spec.Type == maps.LRUPerCPUHash

	var keys [][]byte
	for range 48 {
		k := make([]byte, spec.KeySize)
		for i := range k {
			k[i] = byte(rng.IntN(4)) // few distinct bytes: keys differing in one byte
		}
		keys = append(keys, k)
	}
	put := func(k []byte, v byte) {
		val := make([]byte, valueLen)
		for i := range val {
			val[i] = v
		}
		if err := m.UpdateBytes(k, val, maps.UpdateAny); err != nil {
			t.Fatal(err)
		}
	}
	for i, k := range keys[:32] {
		put(k, byte(i))
	}
	check := func(stage string) {
		t.Helper()
		for _, k := range keys {
			copy(key, k)
			for cpu := range ncpu {
				env.CPU = cpu
				for name, e := range engines {
					got, err := e.Run(env, m.Handle(), keyAddr, 0)
					if err != nil {
						t.Fatalf("%s: %s: %v", stage, name, err)
					}
					if lru && got != 0 {
						elem := hashElem(m, k)
						if elem == 0 {
							t.Fatalf("%s: %s: key %x found inline, not in the table", stage, name, k)
						}
						if ref := *(*uint32)(vm.Ptr(elem + maps.HashElemRef)); ref != 1 {
							t.Errorf("%s: %s: key %x: referenced mark %d after the lookup", stage, name, k, ref)
						}
					}
					want := uint64(uintptr(m.Lookup(unsafe.Pointer(&k[0]), cpu)))
					if got != want {
						t.Errorf("%s: %s: key %x cpu %d: inline lookup %#x, Go lookup %#x", stage, name, k, cpu, got, want)
					}
				}
			}
		}
	}
	check("filled")
	for i, k := range keys {
		switch i % 3 {
		case 0:
			m.LookupAndDelete(k, make([]byte, valueLen))
		case 1:
			put(k, byte(100+i)) // replaces the element (or inserts)
		}
	}
	check("updated")
}

// Array and per-CPU array lookups inline to the Go lookup's pointer for
// every index, in and out of range, on every CPU.
func TestInlineArrayLookupMatchesGo(t *testing.T) {
	const ncpu = 3
	for _, typ := range []maps.Type{maps.Array, maps.PerCPUArray} {
		for _, vs := range []uint32{1, 8, 12, 20, 64} {
			spec := maps.Spec{Name: "a", Type: typ, KeySize: 4, ValueSize: vs, MaxEntries: 7}
			m, err := maps.New(spec, maps.Options{NumCPU: ncpu})
			if err != nil {
				t.Fatal(err)
			}
			engines := lookupEngines(t, spec)
			env := newEnv(t)
			keyMem, err := vm.Alloc(8)
			if err != nil {
				t.Fatal(err)
			}
			for _, i := range []uint32{0, 1, 6, 7, 8, 1 << 31, ^uint32(0)} {
				*(*uint32)(vm.Ptr(keyMem.Addr())) = i
				for cpu := range ncpu {
					env.CPU = cpu
					want := uint64(uintptr(m.Lookup(vm.Ptr(keyMem.Addr()), cpu)))
					for name, e := range engines {
						got, err := e.Run(env, m.Handle(), keyMem.Addr(), 0)
						if err != nil || got != want {
							t.Errorf("type %d value %d index %d cpu %d: %s: %#x, %v; want %#x", typ, vs, i, cpu, name, got, err, want)
						}
					}
				}
			}
			keyMem.Free()
			m.Close()
		}
	}
}

// The emitted hash is maps.HashKey, whatever the seed and key size.
func TestEmittedHash(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, ks := range inlineKeySizes {
		var q seq
		emitHash(&q, int(ks), false)
		prog := append(q.done(), isa.Instruction{Op: isa.OpExit})
		ip, err := interp.New(prog, nil)
		if err != nil {
			t.Fatal(err)
		}
		mem, err := vm.Alloc(4096)
		if err != nil {
			t.Fatal(err)
		}
		hdr := mem.Addr()
		keyAddr := hdr + 1024
		env := newEnv(t)
		for range 20 {
			seed := rng.Uint64()
			*(*uint64)(vm.Ptr(hdr + maps.HeaderFields + maps.HashFieldHashInit)) = seed ^ uint64(ks)*maps.HashK1
			key := unsafe.Slice((*byte)(vm.Ptr(keyAddr)), ks)
			for i := range key {
				key[i] = byte(rng.Uint32())
			}
			got, err := ip.Run(env, hdr, keyAddr, 0)
			if err != nil {
				t.Fatal(err)
			}
			if want := maps.HashKey(seed, key); got != uint64(want) {
				t.Errorf("key size %d: emitted hash %#x, HashKey %#x", ks, got, want)
			}
		}
		mem.Free()
	}
}

// keyChunks covers the key exactly, in loads that never cross its end.
func TestKeyChunks(t *testing.T) {
	for k := 1; k <= 200; k++ {
		off := 0
		for _, c := range keyChunks(k) {
			if c.off != off {
				t.Fatalf("key %d: chunk at %d, want %d", k, c.off, off)
			}
			off += isa.SizeBytes(c.size)
		}
		if off != k {
			t.Errorf("key %d: chunks cover %d bytes", k, off)
		}
	}
}

// Programs look keys up while Go replaces, deletes and reinserts them: every
// value an inline lookup finds belongs to its key (no torn or reused
// element), as the lock-free Go lookup guarantees. Runs enter the map's
// reclamation domain as runners do.
func TestInlineHashLookupConcurrent(t *testing.T) {
	const (
		runners = 4
		nkeys   = 32
	)
	iters := 5000
	if testing.Short() {
		iters = 1000
	}
	d := maps.NewDomain(runners)
	for _, typ := range []maps.Type{maps.Hash, maps.LRUHash} {
		spec := maps.Spec{Name: "c", Type: typ, KeySize: 12, ValueSize: 16, MaxEntries: nkeys}
		m, err := maps.New(spec, maps.Options{NumCPU: runners, Domain: d})
		if err != nil {
			t.Fatal(err)
		}
		engines := lookupEngines(t, spec)
		keyOf := func(i int) []byte {
			k := make([]byte, 12)
			binary.LittleEndian.PutUint32(k, uint32(i)*2654435761)
			k[11] = byte(i)
			return k
		}
		value := func(i int, version uint64) []byte {
			v := make([]byte, 16)
			binary.LittleEndian.PutUint64(v, uint64(i))
			binary.LittleEndian.PutUint64(v[8:], version)
			return v
		}
		for i := range nkeys {
			if err := m.UpdateBytes(keyOf(i), value(i, 0), maps.UpdateAny); err != nil {
				t.Fatal(err)
			}
		}
		var stop atomic.Bool
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for v := uint64(1); !stop.Load(); v++ {
				i := int(v % nkeys)
				if v%5 == 0 {
					m.LookupAndDelete(keyOf(i), make([]byte, 16))
				}
				m.UpdateBytes(keyOf(i), value(i, v), maps.UpdateAny)
			}
		}()
		var bad atomic.Int64
		var found atomic.Int64
		var rwg sync.WaitGroup
		for r := range runners {
			rwg.Add(1)
			go func() {
				defer rwg.Done()
				env := newEnv(t)
				env.CPU = r
				keyMem, _ := vm.Alloc(16)
				defer keyMem.Free()
				e := engines["interp"]
				if j, ok := engines["jit"]; ok && r%2 == 0 {
					e = j
				}
				for n := range iters {
					i := (n*7 + r) % nkeys
					copy(unsafe.Slice((*byte)(vm.Ptr(keyMem.Addr())), 12), keyOf(i))
					d.Enter(r)
					v, err := e.Run(env, m.Handle(), keyMem.Addr(), 0)
					if err == nil && v != 0 {
						found.Add(1)
						if got := *(*uint64)(vm.Ptr(v)); got != uint64(i) {
							bad.Add(1)
						}
					}
					d.Exit(r)
				}
			}()
		}
		rwg.Wait()
		stop.Store(true)
		wg.Wait()
		m.Close()
		if bad.Load() != 0 || found.Load() == 0 {
			t.Errorf("type %d: %d lookups found another key's value, %d found", typ, bad.Load(), found.Load())
		}
	}
}

// Lookups in arrays and hashes of maps inline to the inner map's handle, as
// the Go lookup returns it, before and after inner maps are replaced and
// removed.
func TestInlineMapOfMapsLookupMatchesGo(t *testing.T) {
	inner := maps.Spec{Name: "in", Type: maps.Array, KeySize: 4, ValueSize: 8, MaxEntries: 2}
	var inners []maps.Map
	for range 3 {
		m, err := maps.New(inner, maps.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		inners = append(inners, m)
	}
	for _, typ := range []maps.Type{maps.ArrayOfMaps, maps.HashOfMaps} {
		spec := maps.Spec{Name: "outer", Type: typ, KeySize: 4, ValueSize: 4, MaxEntries: 5, InnerMap: &inner}
		m, err := maps.New(spec, maps.Options{})
		if err != nil {
			t.Fatal(err)
		}
		engines := lookupEngines(t, spec)
		env := newEnv(t)
		keyMem, err := vm.Alloc(8)
		if err != nil {
			t.Fatal(err)
		}
		set := func(k uint32, in maps.Map) {
			var key, id [4]byte
			binary.LittleEndian.PutUint32(key[:], k)
			if in == nil {
				m.Delete(unsafe.Pointer(&key[0]))
				return
			}
			binary.LittleEndian.PutUint32(id[:], maps.IDOf(in))
			if err := m.UpdateBytes(key[:], id[:], maps.UpdateAny); err != nil {
				t.Fatal(err)
			}
		}
		check := func(stage string) {
			for _, k := range []uint32{0, 1, 2, 3, 4, 5, 1 << 31} {
				*(*uint32)(vm.Ptr(keyMem.Addr())) = k
				want := uint64(uintptr(m.Lookup(vm.Ptr(keyMem.Addr()), 0)))
				for name, e := range engines {
					got, err := e.Run(env, m.Handle(), keyMem.Addr(), 0)
					if err != nil || got != want {
						t.Errorf("type %d %s: key %d: %s: %#x, %v; want %#x", typ, stage, k, name, got, err, want)
					}
				}
			}
		}
		set(1, inners[0])
		set(3, inners[1])
		check("filled")
		set(1, inners[2])
		set(3, nil)
		check("changed")
		keyMem.Free()
		m.Close()
	}
}

// Where inlining would push a jump out of range, the calls stay and the
// program is unchanged: inlining never makes a program fail to load.
func TestInlineKeepsCallsOutOfRange(t *testing.T) {
	lookup, _ := isa.HelperID("bpf_map_lookup_elem")
	mov := isa.Instruction{Op: isa.ClassALU64 | isa.ALUMov | isa.SrcK, Dst: isa.R0}
	insns := []isa.Instruction{{Op: isa.OpJA, Off: 1<<15 - 1}, {Op: isa.OpCall, Imm: lookup}}
	for range 1<<15 - 2 {
		insns = append(insns, mov)
	}
	insns = append(insns, mov, isa.Instruction{Op: isa.OpExit})
	aux := make([]verifier.InsnAux, len(insns))
	aux[1].Map = &verifier.MapInfo{Spec: maps.Spec{Type: maps.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 8}}
	p, err := New(insns, aux)
	if err != nil {
		t.Fatal(err)
	}
	n, err := InlineHelpers(p, InlineOptions{})
	if err != nil || n != 0 || len(p.Insns) != len(insns) || p.Insns[1].Op != isa.OpCall {
		t.Errorf("InlineHelpers: %d inlined, %v; %d insns (want the %d unchanged)", n, err, len(p.Insns), len(insns))
	}
}

// Lookups in maps without an inline sequence stay helper calls: LPM tries
// with keys longer than 4 bytes of data (IPv6), and any LPM trie on the
// interpreter, whose Go walk is faster than interpreting one; LPM tries of
// IPv4 keys inline for the JIT.
func TestInlineKeepsCall(t *testing.T) {
	for _, tc := range []struct {
		s      maps.Spec
		interp bool
		inline bool
	}{
		{maps.Spec{Type: maps.LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 4, Flags: maps.FlagNoPrealloc}, false, true},
		{maps.Spec{Type: maps.LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 4, Flags: maps.FlagNoPrealloc}, true, false},
		{maps.Spec{Type: maps.LPMTrie, KeySize: 7, ValueSize: 4, MaxEntries: 4, Flags: maps.FlagNoPrealloc}, false, false},
		{maps.Spec{Type: maps.LPMTrie, KeySize: 20, ValueSize: 8, MaxEntries: 4, Flags: maps.FlagNoPrealloc}, false, false},
		{maps.Spec{Type: maps.LPMTrie, KeySize: 20, ValueSize: 8, MaxEntries: 4, Flags: maps.FlagNoPrealloc}, true, false},
	} {
		if seq := lookupSeq(tc.s, InlineOptions{Interpreter: tc.interp}); (seq != nil) != tc.inline {
			t.Errorf("LPM key %d (interpreter %v): inlined %v, want %v", tc.s.KeySize, tc.interp, seq != nil, tc.inline)
		}
	}
}

// hashElem finds the element of key in hash map m by walking its bucket, as
// the lookups do, from the header fields: the test's own view of the table.
func hashElem(m maps.Map, key []byte) uint64 {
	f := m.Handle() + maps.HeaderFields
	field64 := func(off uint64) uint64 { return *(*uint64)(vm.Ptr(f + off)) }
	mask := *(*uint32)(vm.Ptr(f + maps.HashFieldMask))
	seed := field64(maps.HashFieldHashInit) ^ uint64(len(key))*maps.HashK1
	hash := maps.HashKey(seed, key)
	e := *(*uint64)(vm.Ptr(field64(maps.HashFieldBuckets) + uint64(hash&mask)*8))
	for ; e != 0; e = *(*uint64)(vm.Ptr(e + maps.HashElemNext)) {
		if bytes.Equal(unsafe.Slice((*byte)(vm.Ptr(e+maps.HashElemKey)), len(key)), key) {
			return e
		}
	}
	return 0
}
