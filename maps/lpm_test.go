package maps

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"
)

// lpmKey builds an LPM trie key: prefixlen in host order, then data.
func lpmKey(plen uint32, data []byte) []byte {
	return append(binary.NativeEndian.AppendUint32(nil, plen), data...)
}

// prefixKey is lpmKey for an address prefix.
func prefixKey(p netip.Prefix) []byte {
	return lpmKey(uint32(p.Bits()), p.Addr().AsSlice())
}

// lpmOp is one random operation of the differential test.
type lpmOp struct {
	op    int // 0 update, 1 delete, 2 lookup, 3 next key
	key   []byte
	val   []byte
	flags uint64
}

func (o lpmOp) String() string {
	return fmt.Sprintf("op %d key %x flags %d", o.op, o.key, o.flags)
}

// randomLPMOps returns ops on keys that overlap heavily: a few base
// addresses, every prefix length (and some past the maximum), with the
// bits past the prefix sometimes set.
func randomLPMOps(r *rand.Rand, dataSize, n int) []lpmOp {
	bases := make([][]byte, 4)
	for i := range bases {
		bases[i] = make([]byte, dataSize)
		for j := range bases[i] {
			bases[i][j] = byte(r.IntN(256))
		}
		if i > 0 && dataSize > 1 {
			// Share a prefix with the first base, diverging at a
			// random bit.
			cut := r.IntN(dataSize*8 - 1)
			for b := range cut {
				mask := byte(0x80) >> (b % 8)
				bases[i][b/8] = bases[i][b/8]&^mask | bases[0][b/8]&mask
			}
		}
	}
	maxLen := dataSize * 8
	key := func() []byte {
		d := bytes.Clone(bases[r.IntN(len(bases))])
		plen := r.IntN(maxLen + 1)
		if r.IntN(20) == 0 {
			plen = maxLen + 1 + r.IntN(3)
		}
		if r.IntN(3) == 0 {
			// Flip a bit past the prefix: same element for the trie.
			if plen < maxLen {
				b := plen + r.IntN(maxLen-plen)
				d[b/8] ^= 0x80 >> (b % 8)
			}
		}
		return lpmKey(uint32(plen), d)
	}
	ops := make([]lpmOp, n)
	for i := range ops {
		o := lpmOp{op: r.IntN(4), key: key()}
		if o.op == 0 {
			o.val = binary.NativeEndian.AppendUint32(nil, uint32(i))
			o.flags = uint64(r.IntN(5)) // 3 and 4 are invalid
			if o.flags > 2 && r.IntN(2) == 0 {
				o.flags = 0
			}
		}
		if o.op == 3 && r.IntN(8) == 0 {
			o.key = nil
		}
		ops[i] = o
	}
	return ops
}

// lpmResult is what an op gives: an error and a value or key.
type lpmResult struct {
	err error
	out []byte
}

func runLPMOp(k kv, o lpmOp) lpmResult {
	var r lpmResult
	switch o.op {
	case 0:
		r.err = k.update(o.key, o.val, o.flags)
	case 1:
		r.err = k.delete(o.key)
	case 2:
		r.out, r.err = k.lookup(o.key)
	case 3:
		r.out, r.err = k.nextKey(o.key)
	}
	r.err = sentinel(r.err)
	return r
}

// iterate lists every key by NextKey from nil.
func iterate(t *testing.T, k kv) [][]byte {
	t.Helper()
	var keys [][]byte
	var prev []byte
	for range 10000 {
		next, err := k.nextKey(prev)
		if errors.Is(err, ErrKeyNotExist) {
			return keys
		}
		if err != nil {
			t.Fatalf("next key: %v", err)
		}
		keys = append(keys, next)
		prev = next
	}
	t.Fatal("iteration does not end")
	return nil
}

func TestKernelLPMDifferential(t *testing.T) {
	requireKernelMaps(t)
	for _, tt := range []struct {
		name       string
		dataSize   int
		maxEntries uint32
		ops        int
	}{
		{"data 1", 1, 8, 600},
		{"data 3", 3, 16, 800},
		{"ipv4", 4, 32, 1500},
		{"ipv4 small", 4, 4, 600},
		{"ipv6", 16, 64, 2000},
		{"data 256", 256, 16, 400},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec := Spec{Type: LPMTrie, KeySize: uint32(4 + tt.dataSize), ValueSize: 4, MaxEntries: tt.maxEntries, Flags: FlagNoPrealloc}
			km, err := ebpf.NewMap(kernelSpec(spec))
			if err != nil {
				t.Fatalf("kernel map: %v", err)
			}
			defer km.Close()
			theirs := kernelKV{m: km, valueSize: 4}
			mine := ours{newTestMap(t, spec, Options{NumCPU: 1}), 1}
			r := rand.New(rand.NewPCG(uint64(tt.dataSize), uint64(tt.maxEntries)))
			for i, o := range randomLPMOps(r, tt.dataSize, tt.ops) {
				want, got := runLPMOp(theirs, o), runLPMOp(mine, o)
				if want.err != got.err || !bytes.Equal(want.out, got.out) {
					t.Fatalf("step %d (%v): ours %v %x, kernel %v %x", i, o, got.err, got.out, want.err, want.out)
				}
				if i%50 == 0 {
					if w, g := iterate(t, theirs), iterate(t, mine); fmt.Sprint(w) != fmt.Sprint(g) {
						t.Fatalf("step %d: iteration: ours %x, kernel %x", i, g, w)
					}
				}
			}
			if w, g := iterate(t, theirs), iterate(t, mine); fmt.Sprint(w) != fmt.Sprint(g) {
				t.Fatalf("iteration: ours %x, kernel %x", g, w)
			}
			// No lookup-and-delete, whether the key is there or not.
			for _, k := range append(iterate(t, mine)[:min(1, len(iterate(t, mine)))], lpmKey(0, make([]byte, tt.dataSize))) {
				_, werr := theirs.lookupAndDelete(k)
				_, gerr := mine.lookupAndDelete(k)
				if sentinel(werr) != sentinel(gerr) {
					t.Errorf("lookup and delete %x: ours %v, kernel %v", k, gerr, werr)
				}
			}
		})
	}
}

// TestKernelLPMLongestMatch inserts every prefix length of one IPv4 and
// one IPv6 address and checks that each lookup finds the longest one, with
// some prefix lengths missing.
func TestKernelLPMLongestMatch(t *testing.T) {
	requireKernelMaps(t)
	for _, tt := range []struct {
		name string
		addr netip.Addr
		skip func(bits int) bool
	}{
		{"ipv4 all", netip.MustParseAddr("192.168.1.77"), func(int) bool { return false }},
		{"ipv4 odd", netip.MustParseAddr("10.200.3.4"), func(b int) bool { return b%2 == 1 }},
		{"ipv4 sparse", netip.MustParseAddr("172.16.9.1"), func(b int) bool { return b%7 != 0 }},
		{"ipv6 all", netip.MustParseAddr("2001:db8::1:2"), func(int) bool { return false }},
		{"ipv6 sparse", netip.MustParseAddr("fe80::dead:beef"), func(b int) bool { return b%5 != 0 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dataSize := tt.addr.BitLen() / 8
			spec := Spec{Type: LPMTrie, KeySize: uint32(4 + dataSize), ValueSize: 4, MaxEntries: 256, Flags: FlagNoPrealloc}
			km, err := ebpf.NewMap(kernelSpec(spec))
			if err != nil {
				t.Fatalf("kernel map: %v", err)
			}
			defer km.Close()
			theirs := kernelKV{m: km, valueSize: 4}
			mine := ours{newTestMap(t, spec, Options{NumCPU: 1}), 1}
			for b := 0; b <= tt.addr.BitLen(); b++ {
				if tt.skip(b) {
					continue
				}
				p := netip.PrefixFrom(tt.addr, b).Masked()
				for _, k := range []kv{theirs, mine} {
					if err := k.update(prefixKey(p), u32(uint32(b)), UpdateNoExist); err != nil {
						t.Fatalf("%v: %v", p, err)
					}
				}
			}
			// Look up the address with every bit flipped in turn, at
			// the full length and at shorter ones.
			for flip := -1; flip < tt.addr.BitLen(); flip++ {
				d := tt.addr.AsSlice()
				if flip >= 0 {
					d[flip/8] ^= 0x80 >> (flip % 8)
				}
				for _, plen := range []int{tt.addr.BitLen(), tt.addr.BitLen() / 2, 9, 0} {
					key := lpmKey(uint32(plen), d)
					wv, werr := theirs.lookup(key)
					gv, gerr := mine.lookup(key)
					if sentinel(werr) != sentinel(gerr) || !bytes.Equal(wv, gv) {
						t.Fatalf("lookup %x: ours %v %x, kernel %v %x", key, gerr, gv, werr, wv)
					}
				}
			}
			if w, g := iterate(t, theirs), iterate(t, mine); fmt.Sprint(w) != fmt.Sprint(g) {
				t.Fatalf("iteration: ours %x, kernel %x", g, w)
			}
		})
	}
}

// TestLPMConcurrent runs lock-free lookups while Go inserts and deletes,
// with retired nodes poisoned when reused: a lookup that saw a reused node
// would find a poisoned value. Run it with -race.
func TestLPMConcurrent(t *testing.T) {
	spec := Spec{Type: LPMTrie, KeySize: 8, ValueSize: 8, MaxEntries: 64, Flags: FlagNoPrealloc}
	d := NewDomain(2)
	defer d.Close()
	m := newTestMap(t, spec, Options{NumCPU: 2, Domain: d})
	trie := m.(*lpmTrie)
	trie.nodes.poison = true
	base := netip.MustParseAddr("10.1.0.0")
	// 10.0.0.0/8 stays: every lookup of 10.x finds at least it.
	if err := m.UpdateBytes(prefixKey(netip.MustParsePrefix("10.0.0.0/8")), make([]byte, 8), UpdateAny); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for cpu := range 2 {
		wg.Go(func() {
			key := lpmKey(32, base.AsSlice())
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key[6] = byte(i)
				d.Enter(cpu)
				v := m.Lookup(unsafe.Pointer(&key[0]), cpu)
				if v == nil {
					d.Exit(cpu)
					t.Error("no match for 10.1.x.0 with 10.0.0.0/8 present")
					return
				}
				got := *(*uint64)(v)
				d.Exit(cpu)
				// Values are 0 or the prefix length that was stored.
				if got != 0 && got != 16 && got != 24 {
					t.Errorf("lookup saw value %#x", got)
					return
				}
			}
		})
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := byte(r.IntN(8))
		p16 := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 1, 0, 0}), 16)
		p24 := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 1, b, 0}), 24)
		switch r.IntN(4) {
		case 0:
			_ = m.UpdateBytes(prefixKey(p24), binary.NativeEndian.AppendUint64(nil, 24), UpdateAny)
		case 1:
			_ = m.UpdateBytes(prefixKey(p16), binary.NativeEndian.AppendUint64(nil, 16), UpdateAny)
		case 2:
			k := prefixKey(p24)
			_ = m.Delete(unsafe.Pointer(&k[0]))
		case 3:
			k := prefixKey(p16)
			_ = m.Delete(unsafe.Pointer(&k[0]))
		}
	}
	close(stop)
	wg.Wait()
}

// TestLPMNoSpace fills a trie: new prefixes fail with ENOSPC, replacing
// one still works, as in the kernel (the differential test compares it).
func TestLPMNoSpace(t *testing.T) {
	spec := Spec{Type: LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 2, Flags: FlagNoPrealloc}
	m := newTestMap(t, spec, Options{NumCPU: 1})
	for i, p := range []string{"10.0.0.0/8", "10.1.0.0/16"} {
		if err := m.UpdateBytes(prefixKey(netip.MustParsePrefix(p)), u32(uint32(i)), UpdateAny); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.UpdateBytes(prefixKey(netip.MustParsePrefix("10.2.0.0/16")), u32(9), UpdateAny); !errors.Is(err, ErrNoSpace) {
		t.Errorf("third prefix: %v, want ENOSPC", err)
	}
	if err := m.UpdateBytes(prefixKey(netip.MustParsePrefix("10.0.0.0/8")), u32(9), UpdateExist); err != nil {
		t.Errorf("replace when full: %v", err)
	}
}

// TestKernelBloomDifferential compares a bloom filter's Go-side operations
// with the kernel's: pushed values are always found, the errors of the
// operations it does not have and of bad flags are the kernel's.
func TestKernelBloomDifferential(t *testing.T) {
	requireKernelMaps(t)
	for _, tt := range []struct {
		name string
		spec Spec
	}{
		{"u32 default", Spec{Type: BloomFilter, ValueSize: 4, MaxEntries: 100}},
		{"odd 1 hash", Spec{Type: BloomFilter, ValueSize: 7, MaxEntries: 100, MapExtra: 1}},
		{"u64 15 hashes zero seed", Spec{Type: BloomFilter, ValueSize: 8, MaxEntries: 1000, MapExtra: 15, Flags: FlagZeroSeed}},
		{"tiny", Spec{Type: BloomFilter, ValueSize: 16, MaxEntries: 1, MapExtra: 3}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			km, err := ebpf.NewMap(kernelSpec(tt.spec))
			if err != nil {
				t.Fatalf("kernel map: %v", err)
			}
			defer km.Close()
			theirs := kernelKV{m: km, valueSize: int(tt.spec.ValueSize)}
			mine := ours{newTestMap(t, tt.spec, Options{NumCPU: 1}), 1}
			val := func(i int) []byte {
				v := make([]byte, tt.spec.ValueSize)
				binary.LittleEndian.PutUint32(v, uint32(i)*2654435761)
				v[len(v)-1] ^= byte(i)
				return v
			}
			same := func(what string, w, g error) {
				t.Helper()
				if sentinel(w) != sentinel(g) {
					t.Errorf("%s: ours %v, kernel %v", what, g, w)
				}
			}
			// Empty: nothing is found.
			same("peek empty", kernelSentinel(km.Lookup(nil, val(0))), mine.m.LookupBytes(nil, val(0)))
			for i := range int(tt.spec.MaxEntries) {
				for _, k := range []kv{theirs, mine} {
					if err := k.update(nil, val(i), UpdateAny); err != nil {
						t.Fatalf("push %d: %v", i, err)
					}
				}
			}
			for i := range int(tt.spec.MaxEntries) {
				if err := mine.m.LookupBytes(nil, val(i)); err != nil {
					t.Fatalf("pushed value %d not found: %v", i, err)
				}
				if err := km.Lookup(nil, val(i)); err != nil {
					t.Fatalf("kernel: pushed value %d not found: %v", i, err)
				}
			}
			for _, f := range []uint64{UpdateNoExist, UpdateExist, UpdateLock} {
				same(fmt.Sprintf("push flags %d", f), theirs.update(nil, val(1), f), mine.update(nil, val(1), f))
			}
			same("delete", theirs.delete(nil), mine.delete(nil))
			_, werr := theirs.nextKey(nil)
			_, gerr := mine.nextKey(nil)
			same("next key", werr, gerr)
			_, werr = theirs.lookupAndDelete(nil)
			_, gerr = mine.lookupAndDelete(nil)
			same("lookup and delete", werr, gerr)
		})
	}
}

// BenchmarkLPMLookup is the program-side lookup alone: random /24s and
// /16s, probes inside them.
var probeMask = 63

func BenchmarkLPMLookup(b *testing.B) {
	for _, n := range []int{1000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			spec := Spec{Type: LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: uint32(n), Flags: FlagNoPrealloc}
			m := newTestMap(b, spec, Options{NumCPU: 1})
			r := rand.New(rand.NewPCG(1, 2))
			var probes [][]byte
			for i := range n {
				a := []byte{byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))}
				if err := m.UpdateBytes(lpmKey(uint32(16+8*(i%2)), a), u32(1), 0); err != nil {
					b.Fatal(err)
				}
				if len(probes) < 64 {
					probes = append(probes, lpmKey(32, a))
				}
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				k := probes[i%len(probes)&probeMask]
				if m.Lookup(unsafe.Pointer(&k[0]), 0) == nil {
					b.Fatal("miss")
				}
			}
		})
	}
}

// Programs may touch values only: the nodes, whose links lock-free walks
// follow, are outside Memory, so an unverified program in checked mode
// cannot corrupt them; every value a lookup returns is inside it.
func TestLPMMemoryIsValues(t *testing.T) {
	spec := Spec{Type: LPMTrie, KeySize: 8, ValueSize: 12, MaxEntries: 8, Flags: FlagNoPrealloc}
	m := newTestMap(t, spec, Options{NumCPU: 1})
	trie := m.(*lpmTrie)
	regions := m.Memory()
	nodeStart, nodeEnd := trie.nodes.region()
	for _, r := range regions {
		if r.Start < nodeEnd && nodeStart < r.End {
			t.Fatalf("region %#x-%#x overlaps the nodes %#x-%#x", r.Start, r.End, nodeStart, nodeEnd)
		}
	}
	for i, p := range []string{"10.0.0.0/8", "10.1.0.0/16", "10.1.2.0/24", "10.1.3.0/24"} {
		if err := m.UpdateBytes(prefixKey(netip.MustParsePrefix(p)), make([]byte, 12), UpdateAny); err != nil {
			t.Fatal(i, err)
		}
		k := lpmKey(32, netip.MustParsePrefix(p).Addr().AsSlice())
		v := uint64(uintptr(m.Lookup(unsafe.Pointer(&k[0]), 0)))
		inside := false
		for _, r := range regions {
			inside = inside || v >= r.Start && v+12 <= r.End
		}
		if !inside {
			t.Errorf("%s: value %#x outside the program-visible regions", p, v)
		}
	}
}
