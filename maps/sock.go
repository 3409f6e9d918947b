package maps

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/vm"
)

// Socket map types: sockets programs redirect to (sockmap, sockhash),
// select (reuseport_sockarray) or keep storage in (sk_storage).
const (
	SockMap            Type = 15
	SockHash           Type = 18
	ReuseportSockArray Type = 20
	SkStorage          Type = 24
)

// The socket types. Which helpers take them is the kernel's
// check_map_func_compatibility: a sockmap takes its redirect and update
// helpers, bpf_sk_select_reuseport and the generic lookup, update and
// delete (whose use the verifier restricts further); a reuseport array
// only bpf_sk_select_reuseport; a socket storage only its get and delete.
var (
	sockMapInfo = typeInfo{
		maps: sockMaps{}, kernelStruct: "bpf_stab", noBatch: true,
		helpers: sockMapHelpers, onlyHelpers: true, refSockets: true,
	}
	sockHashInfo = typeInfo{
		maps: sockMaps{}, kernelStruct: "bpf_shtab", noBatch: true,
		helpers: sockHashHelpers, onlyHelpers: true, refSockets: true,
	}
	reuseportInfo = typeInfo{
		maps: sockMaps{}, kernelStruct: "reuseport_array", noBatch: true,
		helpers: selectReuseportHelper, onlyHelpers: true, refSockets: true,
	}
	skStorageInfo = typeInfo{
		maps: sockMaps{}, kernelStruct: "bpf_local_storage_map", noBatch: true,
		helpers: skStorageHelpers, onlyHelpers: true, noEntries: true,
	}
)

var (
	sockMapHelpers = []string{"bpf_sk_redirect_map", "bpf_sock_map_update", "bpf_msg_redirect_map",
		"bpf_sk_select_reuseport", "bpf_map_lookup_elem", "bpf_map_update_elem", "bpf_map_delete_elem"}
	sockHashHelpers = []string{"bpf_sk_redirect_hash", "bpf_sock_hash_update", "bpf_msg_redirect_hash",
		"bpf_sk_select_reuseport", "bpf_map_lookup_elem", "bpf_map_update_elem", "bpf_map_delete_elem"}
	selectReuseportHelper = []string{"bpf_sk_select_reuseport"}
	skStorageHelpers      = []string{"bpf_sk_storage_get", "bpf_sk_storage_delete"}
)

// FlagClone is BPF_F_CLONE: a socket storage is copied to the sockets
// cloned from its socket (accepted; bpfvm clones no sockets).
const FlagClone uint32 = 1 << 9

// sockFlags are SOCK_CREATE_FLAG_MASK, the flags of sockmaps and
// sockhashes.
const sockFlags = FlagNumaNode | FlagRdonly | FlagWronly

// maxBPFStack is MAX_BPF_STACK, the largest sockhash key.
const maxBPFStack = 512

// sockMaps creates and validates the socket types.
type sockMaps struct{}

func (sockMaps) create(s Spec, o Options) (Map, error) {
	switch s.Type {
	case SockHash:
		return newSockHash(s, o)
	case SkStorage:
		return newSocketStorage(s, o)
	}
	return newSockArray(s)
}

func (sockMaps) check(s Spec) error {
	switch s.Type {
	case SockMap, SockHash:
		// sock_map_alloc and sock_hash_alloc: one EINVAL for them all.
		switch {
		case s.Type == SockMap && s.KeySize != 4, s.KeySize == 0:
			return fmt.Errorf("%s key size %d: %w", s.Type, s.KeySize, ErrInvalid)
		case s.ValueSize != 4 && s.ValueSize != 8:
			return fmt.Errorf("%s value size %d, want 4 or 8: %w", s.Type, s.ValueSize, ErrInvalid)
		}
		if err := checkFlagSet(s, sockFlags); err != nil {
			return err
		}
		if s.KeySize > maxBPFStack {
			return fmt.Errorf("%s key size %d over %d: %w", s.Type, s.KeySize, maxBPFStack, ErrFull)
		}
	case ReuseportSockArray:
		if s.ValueSize != 4 && s.ValueSize != 8 {
			return fmt.Errorf("%s value size %d, want 4 or 8: %w", s.Type, s.ValueSize, ErrInvalid)
		}
		return validateArray(s)
	case SkStorage:
		// bpf_local_storage_map_alloc_check.
		switch {
		case s.Flags&^(FlagNoPrealloc|FlagClone) != 0, s.Flags&FlagNoPrealloc == 0:
			return fmt.Errorf("%s flags %#x: want no_prealloc, and clone at most: %w", s.Type, s.Flags, ErrInvalid)
		case s.MaxEntries != 0:
			return fmt.Errorf("%s max_entries %d, want 0: %w", s.Type, s.MaxEntries, ErrInvalid)
		case s.KeySize != 4:
			return fmt.Errorf("%s key size %d, want 4: %w", s.Type, s.KeySize, ErrInvalid)
		case s.ValueSize == 0:
			return fmt.Errorf("%s value size 0: %w", s.Type, ErrInvalid)
		case !s.HasBTF():
			return fmt.Errorf("%s without BTF for its key and value: %w", s.Type, ErrInvalid)
		case !isBTFInt(s.Key):
			return fmt.Errorf("%s key: BTF type not an int: %w", s.Type, ErrInvalid)
		case s.ValueSize > localStorageMaxValue:
			return fmt.Errorf("%s value size %d over %d: %w", s.Type, s.ValueSize, localStorageMaxValue, ErrFull)
		}
	}
	return nil
}

// SocketMap is what sockmaps, sockhashes and reuseport socket arrays
// hold: sockets, each the cookie of a socket of the host's world
// (runner.Socket.Cookie), never 0. The kernel's Go-side values are socket
// file descriptors, and its Go-side lookups (of 8-byte values only) give
// the socket's cookie; bpfvm takes and gives the cookie both ways. A map of
// 4-byte values takes cookies below 2^32. The kernel refuses sockets in
// states a map cannot take (EOPNOTSUPP); bpfvm's sockets have no state.
type SocketMap interface {
	Map
	// Socket returns the cookie of the socket at key (program memory of
	// KeySize bytes), ok false when there is none.
	Socket(key unsafe.Pointer) (cookie uint64, ok bool)
	// SetSocket stores the socket with that cookie at key, with update
	// flags as a Go-side update (bpf_sock_map_update).
	SetSocket(key unsafe.Pointer, cookie uint64, flags uint64) error
}

// cookieValue reads a Go-side value of a socket map: the cookie, not 0
// (EINVAL, as the kernel's fd above S32_MAX; bpfvm has no fd 0).
func cookieValue(value []byte, size uint32) (uint64, error) {
	if len(value) != int(size) {
		return 0, fmt.Errorf("value of %d bytes, want %d: %w", len(value), size, ErrInvalid)
	}
	var c uint64
	if size == 8 {
		c = binary.NativeEndian.Uint64(value)
	} else {
		c = uint64(binary.NativeEndian.Uint32(value))
	}
	if c == 0 {
		return 0, fmt.Errorf("socket cookie 0: %w", ErrInvalid)
	}
	return c, nil
}

// putCookie writes a socket's cookie as a Go-side lookup: maps of 4-byte
// values cannot give it (ENOSPC, as the kernel).
func putCookie(value []byte, size uint32, cookie uint64) error {
	if size != 8 {
		return fmt.Errorf("lookup in a socket map of %d-byte values: %w", size, ErrNoSpace)
	}
	if len(value) != 8 {
		return fmt.Errorf("value of %d bytes, want 8: %w", len(value), ErrInvalid)
	}
	binary.NativeEndian.PutUint64(value, cookie)
	return nil
}

// sockArray is a sockmap or a reuseport socket array: a slot per index,
// each a socket's cookie or 0, read with one atomic load.
type sockArray struct {
	header
	spec Spec
	mem  *vm.Mem
	mu   sync.Mutex // writers
}

func newSockArray(spec Spec) (Map, error) {
	mem, err := vm.Alloc(int(spec.MaxEntries) * 8)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	a := &sockArray{spec: spec, mem: mem}
	if err := a.header.init(a); err != nil {
		mem.Free()
		return nil, fmt.Errorf("map %s: %w", spec.Name, err)
	}
	return a, nil
}

func (a *sockArray) Spec() Spec { return a.spec }

// Memory is empty: programs never address a socket map's slots.
func (a *sockArray) Memory() []vm.Region { return nil }

func (a *sockArray) slot(i uint32) *uint64 {
	return (*uint64)(vm.Ptr(a.mem.Addr() + uint64(i)*8))
}

func (a *sockArray) Socket(key unsafe.Pointer) (uint64, bool) {
	i := *(*uint32)(key)
	if i >= a.spec.MaxEntries {
		return 0, false
	}
	c := atomic.LoadUint64(a.slot(i))
	return c, c != 0
}

// SetSocket stores a socket: flags above BPF_EXIST are EINVAL, an index
// out of range E2BIG, then BPF_NOEXIST and BPF_EXIST as for hashes.
func (a *sockArray) SetSocket(key unsafe.Pointer, cookie, flags uint64) error {
	i := *(*uint32)(key)
	switch {
	case flags > UpdateExist:
		return fmt.Errorf("update flags %#x: %w", flags, ErrInvalid)
	case i >= a.spec.MaxEntries:
		return fmt.Errorf("index %d of %d: %w", i, a.spec.MaxEntries, ErrFull)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	old := atomic.LoadUint64(a.slot(i))
	if err := checkExists(old != 0, flags); err != nil {
		return err
	}
	if a.spec.Type == ReuseportSockArray {
		if err := reuseportHold(cookie, a, i, old); err != nil {
			return err
		}
	}
	atomic.StoreUint64(a.slot(i), cookie)
	return nil
}

// reuseportSlot is the reuseport array slot a socket is in.
type reuseportSlot struct {
	a *sockArray
	i uint32
}

// reuseportHeld are the sockets in a reuseport array slot, by cookie:
// the kernel's sk_user_data, which a socket has one of, so that a
// socket is in at most one slot of one array at a time (EBUSY for
// another, the same slot again included) until it leaves it (replaced,
// deleted, its array freed).
var reuseportHeld struct {
	sync.Mutex
	slots map[uint64]reuseportSlot
}

// reuseportHold puts socket cookie in slot i of a, which held old (0 for
// none), which leaves it; EBUSY if cookie is in a slot already.
func reuseportHold(cookie uint64, a *sockArray, i uint32, old uint64) error {
	reuseportHeld.Lock()
	defer reuseportHeld.Unlock()
	if _, busy := reuseportHeld.slots[cookie]; busy {
		return fmt.Errorf("socket %#x is in a reuseport array already: %w", cookie, ErrBusy)
	}
	if reuseportHeld.slots == nil {
		reuseportHeld.slots = map[uint64]reuseportSlot{}
	}
	if old != 0 {
		delete(reuseportHeld.slots, old)
	}
	reuseportHeld.slots[cookie] = reuseportSlot{a, i}
	return nil
}

// reuseportRelease takes socket cookie out of slot i of a.
func reuseportRelease(cookie uint64, a *sockArray, i uint32) {
	reuseportHeld.Lock()
	defer reuseportHeld.Unlock()
	if reuseportHeld.slots[cookie] == (reuseportSlot{a, i}) {
		delete(reuseportHeld.slots, cookie)
	}
}

// Lookup gives no value: a program's lookup in a socket map gives a socket
// of the run's world, which bpf_map_lookup_elem finds by the cookie Socket
// returns (the verifier refuses lookups in reuseport arrays).
func (a *sockArray) Lookup(unsafe.Pointer, int) unsafe.Pointer { return nil }

// Update from programs is refused by the verifier.
func (a *sockArray) Update(unsafe.Pointer, unsafe.Pointer, uint64, int) error {
	return fmt.Errorf("%s update from a program: %w", a.spec.Type, ErrNotSupported)
}

// Delete empties a slot. A sockmap's index out of range or empty slot is
// EINVAL; a reuseport array's are E2BIG and ENOENT, as the kernel.
func (a *sockArray) Delete(key unsafe.Pointer) error {
	i := *(*uint32)(key)
	reuse := a.spec.Type == ReuseportSockArray
	if i >= a.spec.MaxEntries {
		if reuse {
			return fmt.Errorf("index %d of %d: %w", i, a.spec.MaxEntries, ErrFull)
		}
		return fmt.Errorf("index %d of %d: %w", i, a.spec.MaxEntries, ErrInvalid)
	}
	a.mu.Lock()
	old := atomic.SwapUint64(a.slot(i), 0)
	if old != 0 && reuse {
		reuseportRelease(old, a, i)
	}
	a.mu.Unlock()
	if old != 0 {
		return nil
	}
	if reuse {
		return ErrKeyNotExist
	}
	return fmt.Errorf("%s slot %d is empty: %w", a.spec.Type, i, ErrInvalid)
}

func (a *sockArray) LookupBytes(key, value []byte) error {
	i, err := index4(key)
	if err != nil {
		return err
	}
	if a.spec.ValueSize != 8 {
		return putCookie(value, a.spec.ValueSize, 0)
	}
	c, ok := a.Socket(unsafe.Pointer(&i))
	if !ok {
		return ErrKeyNotExist
	}
	return putCookie(value, a.spec.ValueSize, c)
}

func (a *sockArray) UpdateBytes(key, value []byte, flags uint64) error {
	i, err := index4(key)
	if err != nil {
		return err
	}
	c, err := cookieValue(value, a.spec.ValueSize)
	if err != nil {
		return err
	}
	return a.SetSocket(unsafe.Pointer(&i), c, flags)
}

func (a *sockArray) LookupAndDelete(key, value []byte) error {
	return fmt.Errorf("lookup and delete in a %s: %w", a.spec.Type, ErrNotSupported)
}

func (a *sockArray) NextKey(key, next []byte) error {
	return arrayNextKey(a.spec.MaxEntries, key, next)
}

func (a *sockArray) free() error {
	if a.spec.Type == ReuseportSockArray {
		for i := range a.spec.MaxEntries {
			if c := atomic.LoadUint64(a.slot(i)); c != 0 {
				reuseportRelease(c, a, i)
			}
		}
	}
	return a.mem.Free()
}

// sockHash is a sockhash: a hash of socket cookies by key.
type sockHash struct {
	Map  // a hash of 8-byte cookies
	spec Spec
}

func newSockHash(spec Spec, opts Options) (Map, error) {
	backing := Spec{Name: spec.Name, Type: Hash, KeySize: spec.KeySize, ValueSize: 8,
		MaxEntries: spec.MaxEntries, Flags: spec.Flags &^ (FlagRdonly | FlagWronly)}
	return newBacked(backing, opts, func(m Map) Map { return &sockHash{Map: m, spec: spec} })
}

func (h *sockHash) Spec() Spec { return h.spec }

// Memory is empty: programs never address a sockhash's values.
func (h *sockHash) Memory() []vm.Region { return nil }

func (h *sockHash) Socket(key unsafe.Pointer) (uint64, bool) {
	p := h.Map.Lookup(key, 0)
	if p == nil {
		return 0, false
	}
	return atomic.LoadUint64((*uint64)(p)), true
}

func (h *sockHash) SetSocket(key unsafe.Pointer, cookie, flags uint64) error {
	if flags > UpdateExist {
		return fmt.Errorf("update flags %#x: %w", flags, ErrInvalid)
	}
	return h.Map.Update(key, unsafe.Pointer(&cookie), flags, 0)
}

// Lookup gives programs nothing (see sockArray.Lookup).
func (h *sockHash) Lookup(unsafe.Pointer, int) unsafe.Pointer { return nil }

// Update from programs is refused by the verifier.
func (h *sockHash) Update(unsafe.Pointer, unsafe.Pointer, uint64, int) error {
	return fmt.Errorf("sockhash update from a program: %w", ErrNotSupported)
}

func (h *sockHash) LookupBytes(key, value []byte) error {
	if h.spec.ValueSize != 8 {
		return putCookie(value, h.spec.ValueSize, 0)
	}
	v := make([]byte, 8)
	if err := h.Map.LookupBytes(key, v); err != nil {
		return err
	}
	return putCookie(value, 8, binary.NativeEndian.Uint64(v))
}

func (h *sockHash) UpdateBytes(key, value []byte, flags uint64) error {
	c, err := cookieValue(value, h.spec.ValueSize)
	if err != nil {
		return err
	}
	if flags > UpdateExist {
		return fmt.Errorf("update flags %#x: %w", flags, ErrInvalid)
	}
	return h.Map.UpdateBytes(key, binary.NativeEndian.AppendUint64(nil, c), flags)
}

func (h *sockHash) LookupAndDelete(key, value []byte) error {
	return fmt.Errorf("lookup and delete in a sockhash: %w", ErrNotSupported)
}

// skStorageMax bounds the sockets one socket storage map keeps storage
// for, which the kernel does not bound: beyond, bpf_sk_storage_get with
// BPF_SK_STORAGE_GET_F_CREATE gives NULL, as the kernel's on -ENOMEM.
const skStorageMax = 4096

// SocketStorage is a socket storage (BPF_MAP_TYPE_SK_STORAGE): a value for
// each socket a program or Go code gave one, by the socket's cookie. The
// kernel's Go-side keys are socket file descriptors; bpfvm has none, so
// the Map methods taking a key fail with ErrBadFD (as the kernel's for a
// descriptor that is no socket), NextKey is EOPNOTSUPP as in the kernel,
// and Go code uses the methods by cookie instead.
type SocketStorage struct {
	Map  // a hash of the values by cookie
	spec Spec
}

func newSocketStorage(spec Spec, opts Options) (Map, error) {
	backing := Spec{Name: spec.Name, Type: Hash, KeySize: 8, ValueSize: spec.ValueSize,
		MaxEntries: skStorageMax, Flags: FlagNoPrealloc}
	return newBacked(backing, opts, func(m Map) Map { return &SocketStorage{Map: m, spec: spec} })
}

// Spec returns the spec the map was created with.
func (s *SocketStorage) Spec() Spec { return s.spec }

// Get returns the storage of the socket with that cookie; without one,
// when create is set, it makes one from value (ValueSize bytes of program
// memory, or zeroed when nil). nil when there is none, or no room.
func (s *SocketStorage) Get(cookie uint64, value unsafe.Pointer, create bool) unsafe.Pointer {
	key := unsafe.Pointer(&cookie)
	if p := s.Map.Lookup(key, 0); p != nil || !create {
		return p
	}
	if value == nil {
		zero := make([]byte, s.spec.ValueSize)
		value = unsafe.Pointer(&zero[0])
	}
	// Another run may have made it meanwhile (ErrKeyExist): its storage
	// is the socket's.
	if err := s.Map.Update(key, value, UpdateNoExist, 0); err != nil && !errors.Is(err, ErrKeyExist) {
		return nil
	}
	return s.Map.Lookup(key, 0)
}

// DeleteSocket removes the storage of the socket with that cookie
// (ErrKeyNotExist without one).
func (s *SocketStorage) DeleteSocket(cookie uint64) error {
	return s.Map.Delete(unsafe.Pointer(&cookie))
}

// LookupSocket copies the storage of the socket with that cookie.
func (s *SocketStorage) LookupSocket(cookie uint64, value []byte) error {
	return s.Map.LookupBytes(binary.NativeEndian.AppendUint64(nil, cookie), value)
}

// UpdateSocket sets the storage of the socket with that cookie, with the
// update flags of hashes (BPF_F_LOCK without a bpf_spin_lock is EINVAL).
func (s *SocketStorage) UpdateSocket(cookie uint64, value []byte, flags uint64) error {
	return s.Map.UpdateBytes(binary.NativeEndian.AppendUint64(nil, cookie), value, flags)
}

// Lookup finds nothing for programs: they use bpf_sk_storage_get (Get).
func (s *SocketStorage) Lookup(unsafe.Pointer, int) unsafe.Pointer { return nil }

// Update from programs is refused by the verifier.
func (s *SocketStorage) Update(unsafe.Pointer, unsafe.Pointer, uint64, int) error {
	return fmt.Errorf("sk_storage update from a program: %w", ErrNotSupported)
}

// Delete is ErrBadFD: see SocketStorage (programs use
// bpf_sk_storage_delete, DeleteSocket).
func (s *SocketStorage) Delete(key unsafe.Pointer) error {
	return s.noFD(unsafe.Slice((*byte)(key), 4))
}

func (s *SocketStorage) noFD(key []byte) error {
	if len(key) != 4 {
		return fmt.Errorf("key of %d bytes, want 4: %w", len(key), ErrInvalid)
	}
	return fmt.Errorf("sk_storage key %d: bpfvm has no socket descriptors, use the cookie: %w",
		int32(binary.NativeEndian.Uint32(key)), ErrBadFD)
}

// LookupBytes is ErrBadFD: see SocketStorage.
func (s *SocketStorage) LookupBytes(key, value []byte) error { return s.noFD(key) }

// UpdateBytes is ErrBadFD: see SocketStorage.
func (s *SocketStorage) UpdateBytes(key, value []byte, flags uint64) error { return s.noFD(key) }

// LookupAndDelete is not supported, as in the kernel.
func (s *SocketStorage) LookupAndDelete(key, value []byte) error {
	return fmt.Errorf("lookup and delete in a sk_storage: %w", ErrNotSupported)
}

// NextKey is not supported, as in the kernel.
func (s *SocketStorage) NextKey(key, next []byte) error {
	return fmt.Errorf("walk of a sk_storage: %w", ErrNotSupported)
}

// isBTFInt reports whether t, typedefs and qualifiers resolved, is an
// integer.
func isBTFInt(t btf.Type) bool {
	_, ok := btf.UnderlyingType(t).(*btf.Int)
	return ok
}
