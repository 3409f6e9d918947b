package maps

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/bpfvm/bpfvm/vm"
)

// LPMTrie is BPF_MAP_TYPE_LPM_TRIE.
const LPMTrie Type = 11

// lpmInfo describes LPM tries: looked up, updated and deleted by programs,
// not walked (no map_for_each_callback); batch operations are the
// kernel's generic ones, without lookup-and-delete.
var lpmInfo = typeInfo{maps: lpmTries{}, kernelStruct: "lpm_trie", helpers: elemHelpers, noBatchLookupAndDelete: true}

// lpmTries creates and validates LPM tries.
type lpmTries struct{}

func (lpmTries) create(s Spec, o Options) (Map, error) { return newLPM(s, o) }
func (lpmTries) check(s Spec) error                    { return validateLPM(s) }

// lpmTrie is BPF_MAP_TYPE_LPM_TRIE: longest-prefix match over keys
// {u32 prefixlen (host order); u8 data[key_size-4] (network order)}.
//
// The trie has the kernel's shape, so that NextKey walks it in the kernel's
// order: a binary trie whose nodes each hold a prefix; a node's children
// extend its prefix, child[b] with bit b after it. A node is either an
// element or an intermediate node (flag lpmIM), which exists only to join
// two subtrees whose prefixes diverge and always has two children. Nodes
// are off-heap slots of one pool:
//
//	child0, child1  uint64  addresses of the children, 0 for none
//	prefixlen       uint32
//	flags           uint32  lpmIM
//	value           uint64  address of the node's value
//	data            data_size bytes, padded to 8 (as given: bits past
//	                prefixlen are kept, as the kernel keeps them)
//
// Values live in a block of their own, slot i's value for node slot i, so
// that the only memory programs may touch (Memory) is values: an
// unverified program in checked mode cannot overwrite the links that
// lock-free walks follow.
//
// Writers hold mu; program-side lookups take no lock and read the links
// with atomic loads. A published node's prefix, data and value never
// change (programs may write their value, as in the kernel): an update
// links a copy in its place, and unlinked nodes are retired to the pool,
// reused only once no run can still see them (Domain). Only the flag
// changes in place, when a deleted element with two children becomes an
// intermediate node, which readers see either way.
type lpmTrie struct {
	header
	spec     Spec
	dataSize uint64
	maxLen   uint32
	vsize    uint64 // value stride: value size rounded up to 8
	vals     *vm.Mem
	vbase    uint64

	// The root's address is the header field LPMFieldRoot, where inlined
	// lookups read it (rootLoad, rootStore).
	nodes pool

	mu      sync.Mutex
	entries uint32 // elements (not intermediate nodes)
}

// Node layout of LPM tries, exported for the inlined lookup
// (rewrite/inline_lpm.go).
const (
	lpmChild0    = 0
	lpmChild1    = 8
	lpmPrefixLen = 16
	lpmFlags     = 20
	lpmValue     = 24
	lpmData      = 32

	lpmIM = 1 // intermediate node: no value, exactly two children

	LPMNodeChild0    = lpmChild0    // uint64: the 0 child's address, 0 for none (then the 1 child's)
	LPMNodePrefixLen = lpmPrefixLen // uint32
	LPMNodeFlags     = lpmFlags     // uint32: LPMNodeIM for an intermediate node
	LPMNodeValue     = lpmValue     // uint64: the value's address
	LPMNodeData      = lpmData      // the prefix's data, padded to 8 bytes with zeros
	LPMNodeIM        = lpmIM
)

// Header field offsets of LPM tries, relative to HeaderFields.
const (
	// LPMFieldRoot is the root node's address (uint64, 0 for an empty
	// trie), which writers store atomically.
	LPMFieldRoot = 0
	// LPMFieldRootAddr is the address of LPMFieldRoot (uint64), which
	// never changes: inlined lookups fold it and load the root through
	// it.
	LPMFieldRootAddr = 8
)

// Creation limits of the kernel's trie_alloc.
const (
	lpmDataMax = 256
	// lpmValueMax is KMALLOC_MAX_SIZE less the largest data and the
	// kernel's node header (struct lpm_trie_node: two child pointers,
	// prefixlen and flags, 24 bytes on x86-64).
	lpmValueMax = kmallocMaxSize - lpmDataMax - 24
	// lpmMaxBytes caps a trie's node memory, which is reserved but only
	// touched as nodes are used: the kernel allocates nodes one by one.
	lpmMaxBytes = 1 << 34
)

func validateLPM(s Spec) error {
	if s.Flags&FlagNoPrealloc == 0 {
		return fmt.Errorf("%s flags %#x: BPF_F_NO_PREALLOC is required: %w", s.Type, s.Flags, ErrInvalid)
	}
	if err := checkFlagSet(s, FlagNoPrealloc|FlagNumaNode|flagsAccess); err != nil {
		return err
	}
	if s.KeySize < 4+1 || s.KeySize > 4+lpmDataMax {
		return fmt.Errorf("%s key size %d: want 4 + 1 to %d bytes of data: %w", s.Type, s.KeySize, lpmDataMax, ErrInvalid)
	}
	if s.ValueSize < 1 || s.ValueSize > lpmValueMax {
		return fmt.Errorf("%s value size %d: want 1 to %d: %w", s.Type, s.ValueSize, lpmValueMax, ErrInvalid)
	}
	return nil
}

func newLPM(spec Spec, opts Options) (Map, error) {
	t := &lpmTrie{spec: spec, dataSize: uint64(spec.KeySize - 4)}
	t.maxLen = uint32(t.dataSize * 8)
	size := lpmData + (t.dataSize+7)&^7
	t.vsize = (uint64(spec.ValueSize) + 7) &^ 7
	// At most max_entries elements and one intermediate node fewer, plus
	// room for nodes replaced while their old copies await reclamation.
	n := 2*uint64(spec.MaxEntries) + uint64(2*hashReserve(spec.MaxEntries, opts.NumCPU))
	n = min(n, lpmMaxBytes/(size+t.vsize), 1<<32-1)
	if err := t.nodes.init(size, uint32(n), opts.Domain); err != nil {
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	t.nodes.poisonFrom = lpmData
	t.nodes.poisonHook = func(i uint32) {
		b := bytesAt(t.vbase+uint64(i)*t.vsize, t.vsize)
		for j := range b {
			b[j] = poisonByte
		}
	}
	vals, err := vm.Alloc(int(n * t.vsize))
	if err != nil {
		t.nodes.close()
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	t.vals, t.vbase = vals, vals.Addr()
	if err := t.header.init(t); err != nil {
		t.free()
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	*(*uint64)(t.field(LPMFieldRootAddr)) = uint64(uintptr(t.field(LPMFieldRoot)))
	return t, nil
}

// rootLoad and rootStore access the root link, in the header.
func (t *lpmTrie) rootLoad() uint64 { return atomic.LoadUint64((*uint64)(t.field(LPMFieldRoot))) }
func (t *lpmTrie) rootStore(n uint64) {
	atomic.StoreUint64((*uint64)(t.field(LPMFieldRoot)), n)
}

func (t *lpmTrie) Spec() Spec { return t.spec }

// Memory is the values only: programs never get pointers to nodes.
func (t *lpmTrie) Memory() []vm.Region {
	start, end := t.nodes.region()
	end = t.vbase + (end-start)/t.nodes.size*t.vsize
	return []vm.Region{{Start: t.vbase, End: end, Writable: t.spec.Flags&FlagRdonlyProg == 0}}
}

// value returns the address of node n's value.
func (t *lpmTrie) value(n uint64) uint64 { return *(*uint64)(vm.Ptr(n + lpmValue)) }

func (t *lpmTrie) child(n uint64, bit uint32) uint64 { return load(n + lpmChild0 + 8*uint64(bit)) }
func (t *lpmTrie) prefixLen(n uint64) uint32         { return *(*uint32)(vm.Ptr(n + lpmPrefixLen)) }
func (t *lpmTrie) im(n uint64) bool {
	return atomic.LoadUint32((*uint32)(vm.Ptr(n+lpmFlags)))&lpmIM != 0
}
func (t *lpmTrie) data(n uint64) []byte { return bytesAt(n+lpmData, t.dataSize) }

// extractBit is bit i of data, most significant bit of data[0] first.
func extractBit(data []byte, i uint32) uint32 { return uint32(data[i/8]>>(7-i%8)) & 1 }

// keyWords loads key data as big-endian 64-bit words, the last one
// zero-padded, into buf: the form match compares with a node's data,
// which is stored padded to 8 bytes.
func keyWords(buf *[lpmDataMax / 8]uint64, data []byte) []uint64 {
	nw := (len(data) + 7) / 8
	w := buf[:nw]
	for i := range nw {
		if len(data) >= 8 {
			w[i] = binary.BigEndian.Uint64(data)
			data = data[8:]
			continue
		}
		var x [8]byte
		copy(x[:], data)
		w[i] = binary.BigEndian.Uint64(x[:])
	}
	return w
}

// match returns how many leading bits of node n's prefix and a key of
// prefix length klen and data words kw agree, at most the shorter prefix
// length.
func (t *lpmTrie) match(n uint64, klen uint32, kw []uint64) uint32 {
	limit := min(t.prefixLen(n), klen)
	for i := uint32(0); i*64 < limit; i++ {
		// The node's data word, big-endian in memory.
		a := bits.ReverseBytes64(*(*uint64)(vm.Ptr(n + lpmData + 8*uint64(i))))
		if d := a ^ kw[i]; d != 0 {
			return min(i*64+uint32(bits.LeadingZeros64(d)), limit)
		}
	}
	return limit
}

// wordBit is bit i of key data words, most significant first.
func wordBit(kw []uint64, i uint32) uint32 { return uint32(kw[i/64]>>(63-i%64)) & 1 }

// lookup is the longest-prefix match, lock-free: the node of the longest
// element prefix of key, or 0. A key longer than the maximum matches
// nothing, as in the kernel. Keys of up to 8 bytes of data (IPv4) take a
// one-word path; the loop is written out rather than calling match, as
// it is the program-side hot path.
func (t *lpmTrie) lookup(klen uint32, kdata []byte) uint64 {
	if klen > t.maxLen {
		return 0
	}
	var found uint64
	if t.dataSize <= 8 {
		var x [8]byte
		copy(x[:], kdata)
		k := binary.BigEndian.Uint64(x[:])
		for n := t.rootLoad(); n != 0; {
			p := vm.Ptr(n)
			plen := *(*uint32)(unsafe.Add(p, lpmPrefixLen))
			d := bits.ReverseBytes64(*(*uint64)(unsafe.Add(p, lpmData))) ^ k
			m := min(uint32(bits.LeadingZeros64(d)), plen, klen)
			if m == t.maxLen {
				return n
			}
			if m < plen {
				break
			}
			if atomic.LoadUint32((*uint32)(unsafe.Add(p, lpmFlags)))&lpmIM == 0 {
				found = n
			}
			bit := uint64(k>>(63-plen%64)) & 1
			n = atomic.LoadUint64((*uint64)(unsafe.Add(p, 8*bit)))
		}
		return found
	}
	var buf [lpmDataMax / 8]uint64
	kw := keyWords(&buf, kdata)
	for n := t.rootLoad(); n != 0; {
		m := t.match(n, klen, kw)
		if m == t.maxLen {
			return n
		}
		plen := t.prefixLen(n)
		if m < plen {
			break
		}
		if !t.im(n) {
			found = n
		}
		n = t.child(n, wordBit(kw, plen))
	}
	return found
}

// splitKey views a key as prefix length and data.
func (t *lpmTrie) splitKey(key []byte) (uint32, []byte) {
	return binary.NativeEndian.Uint32(key), key[4 : 4+t.dataSize]
}

func (t *lpmTrie) progKey(key unsafe.Pointer) []byte {
	return unsafe.Slice((*byte)(key), 4+t.dataSize)
}

func (t *lpmTrie) Lookup(key unsafe.Pointer, _ int) unsafe.Pointer {
	n := t.lookup(t.splitKey(t.progKey(key)))
	if n == 0 {
		return nil
	}
	return vm.Ptr(t.value(n))
}

// newNode takes a slot and fills it; value nil makes an intermediate node.
// goSide callers may wait for retired slots; programs reuse them at once
// when their run is the only one (Domain.Sole) and otherwise get ErrBusy,
// since a run waiting for reclamation could wait for itself.
func (t *lpmTrie) newNode(plen uint32, data []byte, value []byte, goSide bool) (uint64, error) {
	var n uint64
	if goSide {
		var err error
		if n, err = t.nodes.getWait(); err != nil {
			return 0, err
		}
	} else if n = t.nodes.get(true); n == 0 {
		return 0, fmt.Errorf("no free node: %w", ErrBusy)
	}
	store(n+lpmChild0, 0)
	store(n+lpmChild1, 0)
	*(*uint32)(vm.Ptr(n + lpmPrefixLen)) = plen
	var flags uint32
	if value == nil {
		flags = lpmIM
	}
	atomic.StoreUint32((*uint32)(vm.Ptr(n+lpmFlags)), flags)
	clear(bytesAt(n+lpmData, t.nodes.size-lpmData))
	copy(t.data(n), data)
	v := t.vbase + uint64(t.nodes.index(n))*t.vsize
	*(*uint64)(vm.Ptr(n + lpmValue)) = v
	if value != nil {
		copy(bytesAt(v, uint64(t.spec.ValueSize)), value)
	}
	return n, nil
}

// addEntry counts a new element, as the kernel's trie_check_add_elem.
func (t *lpmTrie) addEntry(flags uint64) error {
	if flags == UpdateExist {
		return ErrKeyNotExist
	}
	if t.entries == t.spec.MaxEntries {
		return fmt.Errorf("%d entries: %w", t.spec.MaxEntries, ErrNoSpace)
	}
	t.entries++
	return nil
}

// update inserts or replaces the element with key's exact prefix.
func (t *lpmTrie) update(key, value []byte, flags uint64, goSide bool) error {
	if flags > UpdateExist {
		return fmt.Errorf("update flags %#x: %w", flags, ErrInvalid)
	}
	klen, kdata := t.splitKey(key)
	if klen > t.maxLen {
		return fmt.Errorf("prefix length %d over %d: %w", klen, t.maxLen, ErrInvalid)
	}
	// Both nodes are taken before the lock: the pool may wait.
	nn, err := t.newNode(klen, kdata, value, goSide)
	if err != nil {
		return err
	}
	im, err := t.newNode(0, nil, nil, goSide)
	if err != nil {
		t.nodes.put(nn)
		return err
	}
	var buf [lpmDataMax / 8]uint64
	kw := keyWords(&buf, kdata)
	t.mu.Lock()
	usedIM, err := t.insert(nn, im, klen, kdata, kw, flags)
	t.mu.Unlock()
	if err != nil {
		t.nodes.put(nn)
	}
	if !usedIM {
		t.nodes.put(im)
	}
	return err
}

// insert links nn (prefix klen of kdata), using im if an intermediate node
// is needed; the caller holds mu.
func (t *lpmTrie) insert(nn, im uint64, klen uint32, kdata []byte, kw []uint64, flags uint64) (usedIM bool, err error) {
	slot := uint64(0) // 0: the root
	var n uint64
	var m uint32
	for n = t.rootLoad(); n != 0; n = t.slotLoad(slot) {
		m = t.match(n, klen, kw)
		if t.prefixLen(n) != m || t.prefixLen(n) == klen {
			break
		}
		slot = n + lpmChild0 + 8*uint64(extractBit(kdata, t.prefixLen(n)))
	}
	switch {
	case n == 0:
		if err := t.addEntry(flags); err != nil {
			return false, err
		}
		t.slotStore(slot, nn)
	case t.prefixLen(n) == m:
		// The same prefix: replace the node, keeping its children.
		if !t.im(n) {
			if flags == UpdateNoExist {
				return false, ErrKeyExist
			}
		} else if err := t.addEntry(flags); err != nil {
			return false, err
		}
		store(nn+lpmChild0, t.child(n, 0))
		store(nn+lpmChild1, t.child(n, 1))
		t.slotStore(slot, nn)
		t.nodes.retire(n)
	case m == klen:
		// The new prefix is an ancestor of n.
		if err := t.addEntry(flags); err != nil {
			return false, err
		}
		store(nn+lpmChild0+8*uint64(extractBit(t.data(n), m)), n)
		t.slotStore(slot, nn)
	default:
		// The prefixes diverge after m bits: join them.
		if err := t.addEntry(flags); err != nil {
			return false, err
		}
		*(*uint32)(vm.Ptr(im + lpmPrefixLen)) = m
		copy(t.data(im), t.data(n))
		b := uint64(extractBit(kdata, m))
		store(im+lpmChild0+8*b, nn)
		store(im+lpmChild0+8*(1-b), n)
		t.slotStore(slot, im)
		return true, nil
	}
	return false, nil
}

// slotLoad and slotStore access a link: a child field, or the root for 0.
func (t *lpmTrie) slotLoad(slot uint64) uint64 {
	if slot == 0 {
		return t.rootLoad()
	}
	return load(slot)
}

func (t *lpmTrie) slotStore(slot, n uint64) {
	if slot == 0 {
		t.rootStore(n)
		return
	}
	store(slot, n)
}

// remove deletes the element with key's exact prefix, first copying its
// value to out when out is not nil.
func (t *lpmTrie) remove(key, out []byte) error {
	klen, kdata := t.splitKey(key)
	if klen > t.maxLen {
		return fmt.Errorf("prefix length %d over %d: %w", klen, t.maxLen, ErrInvalid)
	}
	var buf [lpmDataMax / 8]uint64
	kw := keyWords(&buf, kdata)
	t.mu.Lock()
	defer t.mu.Unlock()
	var trim, trim2 uint64 // the link to the node and the link to its parent
	var parent, n uint64
	var m uint32
	for n = t.rootLoad(); n != 0; n = t.slotLoad(trim) {
		m = t.match(n, klen, kw)
		if t.prefixLen(n) != m || t.prefixLen(n) == klen {
			break
		}
		parent, trim2 = n, trim
		trim = n + lpmChild0 + 8*uint64(extractBit(kdata, t.prefixLen(n)))
	}
	if n == 0 || t.prefixLen(n) != klen || t.prefixLen(n) != m || t.im(n) {
		return ErrKeyNotExist
	}
	if out != nil {
		copy(out, bytesAt(t.value(n), uint64(len(out))))
	}
	t.entries--
	c0, c1 := t.child(n, 0), t.child(n, 1)
	switch {
	case c0 != 0 && c1 != 0:
		// Two children: the node stays, as an intermediate one.
		atomic.StoreUint32((*uint32)(vm.Ptr(n+lpmFlags)), lpmIM)
	case parent != 0 && t.im(parent) && c0 == 0 && c1 == 0:
		// A leaf under an intermediate node: the sibling takes the
		// parent's place.
		sib := t.child(parent, 0)
		if sib == n {
			sib = t.child(parent, 1)
		}
		t.slotStore(trim2, sib)
		t.nodes.retire(parent)
		t.nodes.retire(n)
	default:
		t.slotStore(trim, c0|c1) // at most one of them is set
		t.nodes.retire(n)
	}
	return nil
}

func (t *lpmTrie) Update(key, value unsafe.Pointer, flags uint64, _ int) error {
	return t.update(t.progKey(key), unsafe.Slice((*byte)(value), t.spec.ValueSize), flags, false)
}

func (t *lpmTrie) Delete(key unsafe.Pointer) error {
	return t.remove(t.progKey(key), nil)
}

func (t *lpmTrie) checkGo(key, value []byte) error {
	if len(key) != int(t.spec.KeySize) {
		return fmt.Errorf("key of %d bytes, want %d: %w", len(key), t.spec.KeySize, ErrInvalid)
	}
	if value != nil && len(value) != int(t.spec.ValueSize) {
		return fmt.Errorf("value of %d bytes, want %d: %w", len(value), t.spec.ValueSize, ErrInvalid)
	}
	return nil
}

// LookupBytes is the longest-prefix match, as the kernel's lookup syscall.
// Go callers are not inside a Domain run: mu keeps the node from being
// retired while it is copied.
func (t *lpmTrie) LookupBytes(key, value []byte) error {
	if err := t.checkGo(key, value); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.lookup(t.splitKey(key))
	if n == 0 {
		return ErrKeyNotExist
	}
	copy(value, bytesAt(t.value(n), uint64(t.spec.ValueSize)))
	return nil
}

func (t *lpmTrie) UpdateBytes(key, value []byte, flags uint64) error {
	if err := t.checkGo(key, value); err != nil {
		return err
	}
	return t.update(key, value, flags, true)
}

// LookupAndDelete is not implemented by the kernel's LPM trie.
func (t *lpmTrie) LookupAndDelete(key, value []byte) error {
	return fmt.Errorf("lookup and delete on a %s: %w", t.spec.Type, ErrNotSupported)
}

// NextKey walks the trie in post order, as the kernel's trie_get_next_key:
// longer prefixes before the shorter ones containing them, the 0 branch
// before the 1 branch. A key that is not an element (or a prefix length
// over the maximum) restarts at the first key.
func (t *lpmTrie) NextKey(key, next []byte) error {
	if len(next) != int(t.spec.KeySize) {
		return fmt.Errorf("key of %d bytes, want %d: %w", len(next), t.spec.KeySize, ErrInvalid)
	}
	if key != nil {
		if err := t.checkGo(key, nil); err != nil {
			return err
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	root := t.rootLoad()
	if root == 0 {
		return ErrKeyNotExist
	}
	out := func(n uint64) error {
		binary.NativeEndian.PutUint32(next, t.prefixLen(n))
		copy(next[4:], t.data(n))
		return nil
	}
	leftmost := func(n uint64) error {
		var found uint64
		for n != 0 {
			if t.im(n) {
				n = t.child(n, 0)
				continue
			}
			found = n
			if n = t.child(n, 0); n == 0 {
				n = t.child(found, 1)
			}
		}
		return out(found)
	}
	if key == nil {
		return leftmost(root)
	}
	klen, kdata := t.splitKey(key)
	if klen > t.maxLen {
		return leftmost(root)
	}
	var buf [lpmDataMax / 8]uint64
	kw := keyWords(&buf, kdata)
	stack := make([]uint64, 0, 32)
	var n uint64
	for n = root; n != 0; {
		stack = append(stack, n)
		m := t.match(n, klen, kw)
		if t.prefixLen(n) != m || t.prefixLen(n) == klen {
			break
		}
		n = t.child(n, extractBit(kdata, t.prefixLen(n)))
	}
	if n == 0 || t.prefixLen(n) != klen || t.match(n, klen, kw) != klen || t.im(n) {
		return leftmost(root)
	}
	for i := len(stack) - 1; i > 0; i-- {
		node, parent := stack[i], stack[i-1]
		if t.child(parent, 0) == node {
			if r := t.child(parent, 1); r != 0 {
				return leftmost(r)
			}
		}
		if !t.im(parent) {
			return out(parent)
		}
	}
	return ErrKeyNotExist
}

func (t *lpmTrie) free() error {
	err := t.nodes.close()
	if t.vals != nil {
		if err2 := t.vals.Free(); err == nil {
			err = err2
		}
		t.vals = nil
	}
	return err
}
