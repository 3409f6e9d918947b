package maps

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Differential tests of the cgroup and socket map types' Go-side
// operations. The kernel's values (and sk_storage's keys) are file
// descriptors of sockets and cgroups, ours their cookies and ids: script
// values are indices of a few kernel objects, translated for each side.

// testSockets opens n listening TCP sockets on the loopback (with
// SO_REUSEPORT, which reuseport arrays want) and returns their
// descriptors and cookies.
func testSockets(t *testing.T, n int) (fds []int, cookies []uint64) {
	t.Helper()
	for range n {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
			t.Fatal(err)
		}
		if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			t.Fatal(err)
		}
		if err := unix.Listen(fd, 1); err != nil {
			t.Fatal(err)
		}
		c, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_COOKIE)
		if err != nil {
			t.Fatal(err)
		}
		fds, cookies = append(fds, fd), append(cookies, c)
	}
	return fds, cookies
}

// wire encodes v as a value of size bytes.
func wire(v uint64, size int) []byte {
	if size == 8 {
		return binary.NativeEndian.AppendUint64(nil, v)
	}
	return binary.NativeEndian.AppendUint32(nil, uint32(v))
}

// sockArrayScript is the script of a sockmap, or of a reuseport array
// (reuse), whose deletes fail otherwise.
func sockArrayScript(reuse bool) []step {
	delEmpty, delOut := error(ErrInvalid), error(ErrInvalid)
	if reuse {
		delEmpty, delOut = ErrKeyNotExist, ErrFull
	}
	busy := func(s ...step) []step {
		if reuse {
			return s
		}
		return nil
	}
	return slices.Concat([]step{
		get(0, -1, ErrKeyNotExist),
		upd(0, 0, UpdateExist, ErrKeyNotExist),
		upd(0, 0, UpdateNoExist, nil),
		upd(0, 1, UpdateNoExist, ErrKeyExist),
		get(0, 0, nil),
		upd(0, 1, UpdateAny, nil),
		get(0, 1, nil),
		upd(3, 2, UpdateAny, nil),
	}, busy(
		// A socket is in one reuseport array slot at a time: another
		// slot, or the same one again, is EBUSY until it leaves.
		upd(2, 2, UpdateAny, ErrBusy),
		upd(3, 2, UpdateAny, ErrBusy),
		upd(2, 1, UpdateAny, ErrBusy),
	), []step{
		upd(4, 2, UpdateAny, ErrFull),
		upd(1, 2, 3, ErrInvalid),
		upd(1, 2, UpdateLock, ErrInvalid),
		del(1, delEmpty),
		del(4, delOut),
		del(3, nil),
	}, busy(
		upd(2, 2, UpdateAny, nil),
		del(2, nil),
	), []step{
		get(3, -1, ErrKeyNotExist),
		pop(0, -1, ErrNotSupported),
		next(0, 1, nil),
		next(3, -1, ErrKeyNotExist),
		next(9, 0, nil),
		keys(0, 1, 2, 3),
	})
}

// emptySockScript is what needs no socket: lookups and deletes of a 4-byte
// valued map (ENOSPC for lookups).
func emptySockScript(t Type) []step {
	s := []step{get(0, -1, ErrNoSpace), pop(0, -1, ErrNotSupported)}
	switch t {
	case SockMap:
		s = append(s, del(0, ErrInvalid), del(9, ErrInvalid), keys(0, 1, 2, 3))
	case ReuseportSockArray:
		s = append(s, del(0, ErrKeyNotExist), del(9, ErrFull), keys(0, 1, 2, 3))
	case SockHash:
		s = append(s, del(0, ErrKeyNotExist), keys())
	}
	return s
}

func TestKernelSocketMaps(t *testing.T) {
	requireKernelMaps(t)
	tests := []struct {
		name   string
		spec   Spec
		script []step
	}{
		{"sockmap", Spec{Type: SockMap, KeySize: 4, ValueSize: 8, MaxEntries: 4}, sockArrayScript(false)},
		{"sockmap value 4", Spec{Type: SockMap, KeySize: 4, ValueSize: 4, MaxEntries: 4}, emptySockScript(SockMap)},
		// A sockhash's script is a hash of maps': values are indices of
		// objects there too.
		{"sockhash", Spec{Type: SockHash, KeySize: 4, ValueSize: 8, MaxEntries: 4}, mapOfMapsScript(true)},
		{"sockhash key 12", Spec{Type: SockHash, KeySize: 12, ValueSize: 8, MaxEntries: 4}, mapOfMapsScript(true)},
		{"sockhash value 4", Spec{Type: SockHash, KeySize: 4, ValueSize: 4, MaxEntries: 4}, emptySockScript(SockHash)},
		{"reuseport_sockarray", Spec{Type: ReuseportSockArray, KeySize: 4, ValueSize: 8, MaxEntries: 4}, sockArrayScript(true)},
		{"reuseport_sockarray value 4", Spec{Type: ReuseportSockArray, KeySize: 4, ValueSize: 4, MaxEntries: 4}, emptySockScript(ReuseportSockArray)},
	}
	compared := 0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Fresh sockets: the kernel refuses a socket in a
			// reuseport array while a reuseport array holds it
			// (EBUSY), which bpfvm models, and while another map
			// does, which it does not.
			fds, cookies := testSockets(t, 3)
			var ids []uint32
			for _, c := range cookies {
				ids = append(ids, uint32(c))
			}
			km, err := ebpf.NewMap(kernelSpec(tt.spec))
			if err != nil {
				t.Fatalf("kernel map: %v", err)
			}
			defer km.Close()
			m := newTestMap(t, tt.spec, Options{NumCPU: 1})
			vs := int(tt.spec.ValueSize)
			sh := shape{keySize: int(tt.spec.KeySize), valueSize: 4}
			theirs := viaIndex{kv: kernelKV{m: km, valueSize: vs}, sh: sh, ids: ids,
				toWire: func(i int) []byte { return wire(uint64(fds[i]), vs) }}
			mine := viaIndex{kv: ours{m, 1}, sh: sh, ids: ids,
				toWire: func(i int) []byte { return wire(cookies[i], vs) }}
			compared += compareScript(t, sh, theirs, mine, tt.script)
		})
	}
	t.Logf("%d steps compared", compared)
}

// skStorageKV drives a socket storage by socket: the script's keys are
// indices of the test sockets.
type skStorageKV struct {
	s       *SocketStorage
	cookies []uint64
}

func (k skStorageKV) cookie(key []byte) uint64 { return k.cookies[binary.NativeEndian.Uint32(key)] }

func (k skStorageKV) update(key, value []byte, flags uint64) error {
	return k.s.UpdateSocket(k.cookie(key), value, flags)
}

func (k skStorageKV) lookup(key []byte) ([]byte, error) {
	v := make([]byte, k.s.Spec().ValueSize)
	if err := k.s.LookupSocket(k.cookie(key), v); err != nil {
		return nil, err
	}
	return v, nil
}

func (k skStorageKV) delete(key []byte) error { return k.s.DeleteSocket(k.cookie(key)) }
func (k skStorageKV) lookupAndDelete(key []byte) ([]byte, error) {
	return nil, k.s.LookupAndDelete(key, nil)
}
func (k skStorageKV) nextKey(key []byte) ([]byte, error) { return nil, k.s.NextKey(key, nil) }

// fdKeys translates the script's key indices to socket descriptors.
type fdKeys struct {
	kernelKV
	fds []int
}

func (k fdKeys) fd(key []byte) []byte {
	return u32(uint32(k.fds[binary.NativeEndian.Uint32(key)]))
}
func (k fdKeys) update(key, value []byte, flags uint64) error {
	return k.kernelKV.update(k.fd(key), value, flags)
}
func (k fdKeys) lookup(key []byte) ([]byte, error) { return k.kernelKV.lookup(k.fd(key)) }
func (k fdKeys) delete(key []byte) error           { return k.kernelKV.delete(k.fd(key)) }
func (k fdKeys) lookupAndDelete(key []byte) ([]byte, error) {
	return k.kernelKV.lookupAndDelete(k.fd(key))
}
func (k fdKeys) nextKey(key []byte) ([]byte, error) { return k.kernelKV.nextKey(k.fd(key)) }

func TestKernelSocketStorage(t *testing.T) {
	requireKernelMaps(t)
	spec := withBTF(Spec{Type: SkStorage, KeySize: 4, ValueSize: 12, Flags: FlagNoPrealloc}, true)
	km, err := ebpf.NewMap(kernelSpec(spec))
	if err != nil {
		t.Fatalf("kernel map: %v", err)
	}
	defer km.Close()
	m := newTestMap(t, spec, Options{NumCPU: 1})
	fds, cookies := testSockets(t, 2)
	sh := shape{keySize: 4, valueSize: 12}
	theirs := fdKeys{kernelKV{m: km, valueSize: 12}, fds}
	mine := skStorageKV{m.(*SocketStorage), cookies}
	script := []step{
		get(0, -1, ErrKeyNotExist),
		upd(0, 1, UpdateExist, ErrKeyNotExist),
		upd(0, 1, UpdateNoExist, nil),
		upd(0, 2, UpdateNoExist, ErrKeyExist),
		get(0, 1, nil),
		upd(0, 3, UpdateAny, nil),
		get(0, 3, nil),
		upd(1, 4, UpdateAny, nil),
		upd(1, 4, UpdateLock, ErrInvalid),
		upd(1, 4, 3, ErrInvalid),
		get(1, 4, nil),
		del(0, nil),
		del(0, ErrKeyNotExist),
		get(0, -1, ErrKeyNotExist),
		pop(1, -1, ErrNotSupported),
		next(1, -1, ErrNotSupported),
	}
	compareScript(t, sh, theirs, mine, script)
	// A key that is no socket descriptor: EBADF on both sides, and ours
	// for every key.
	bad := u32(1 << 20)
	kerr := kernelSentinel(km.Lookup(bad, make([]byte, 12)))
	if err := m.LookupBytes(bad, make([]byte, 12)); sentinel(err) != ErrBadFD || kerr != ErrBadFD {
		t.Errorf("lookup of a bad descriptor: ours %v, kernel %v", err, kerr)
	}
	kerr = kernelSentinel(km.Delete(bad))
	if err := m.Delete(unsafe.Pointer(&bad[0])); sentinel(err) != ErrBadFD || kerr != ErrBadFD {
		t.Errorf("delete of a bad descriptor: ours %v, kernel %v", err, kerr)
	}
	t.Logf("%d steps compared", len(script)+2)
}

// testCgroup makes a cgroup v2 for the test and returns its directory and
// id, skipping without a cgroup v2 hierarchy.
func testCgroup(t *testing.T) (string, uint64) {
	t.Helper()
	var root string
	for _, dir := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		var st unix.Statfs_t
		if unix.Statfs(dir, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			root = dir
			break
		}
	}
	if root == "" {
		t.Skip("no cgroup v2 hierarchy")
	}
	dir := filepath.Join(root, "bpfvm-test-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("making a cgroup: %v", err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	return dir, st.Ino
}

func TestKernelCgroupStorage(t *testing.T) {
	ncpu := requireKernelMaps(t)
	dir, cgid := testCgroup(t)
	for _, tt := range []struct {
		name string
		spec Spec
	}{
		{"cgroup_storage", Spec{Type: CgroupStorage, KeySize: 16, ValueSize: 12}},
		{"cgroup_storage key 8", Spec{Type: CgroupStorage, KeySize: 8, ValueSize: 12}},
		// A value of 8 bytes: the kernel leaves the padding of per-CPU
		// storages as it was (not always zero).
		{"percpu_cgroup_storage", Spec{Type: PerCPUCgroupStorage, KeySize: 16, ValueSize: 8}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			km, err := ebpf.NewMap(kernelSpec(tt.spec))
			if err != nil {
				t.Fatalf("kernel map: %v", err)
			}
			defer km.Close()
			m := newTestMap(t, tt.spec, Options{NumCPU: ncpu})
			sh := shape{keySize: int(tt.spec.KeySize), valueSize: int(tt.spec.ValueSize)}
			k := kernelKV{m: km, valueSize: int(tt.spec.ValueSize)}
			if tt.spec.Type.PerCPU() {
				sh.ncpu, k.ncpu = ncpu, ncpu
			}
			var theirs, mine kv = k, ours{m, ncpu}
			// Before any attachment: no storage.
			key := make([]byte, tt.spec.KeySize)
			binary.NativeEndian.PutUint64(key, cgid)
			if len(key) == 16 {
				binary.NativeEndian.PutUint32(key[8:], uint32(ebpf.AttachCGroupInetEgress))
			}
			compare := func(what string, f func(kv) result) {
				t.Helper()
				if want, got := f(theirs), f(mine); !got.equal(want) {
					t.Errorf("%s: ours %v, kernel %v", what, got, want)
				}
			}
			look := func(key []byte) func(kv) result {
				return func(m kv) result {
					v, err := m.lookup(key)
					return result{err: sentinel(err), value: v}
				}
			}
			update := func(key []byte, val int, flags uint64) func(kv) result {
				return func(m kv) result { return result{err: sentinel(m.update(key, sh.value(val), flags))} }
			}
			nextKey := func(key []byte) func(kv) result {
				return func(m kv) result {
					n, err := m.nextKey(key)
					return result{err: sentinel(err), value: n}
				}
			}
			compare("lookup before", look(key))
			compare("update before", update(key, 1, UpdateAny))
			compare("next before", nextKey(nil))

			// The kernel makes the storage when a program using the map is
			// attached; ours when a run there asks for it.
			prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
				Type: ebpf.CGroupSKB, AttachType: ebpf.AttachCGroupInetEgress, License: "MIT",
				Instructions: asm.Instructions{
					asm.LoadMapPtr(asm.R1, km.FD()), asm.Mov.Imm(asm.R2, 0),
					asm.FnGetLocalStorage.Call(), asm.Mov.Imm(asm.R0, 1), asm.Return(),
				},
			})
			if err != nil {
				t.Skipf("loading a program: %v", err)
			}
			defer prog.Close()
			l, err := link.AttachCgroup(link.CgroupOptions{Path: dir, Attach: ebpf.AttachCGroupInetEgress, Program: prog})
			if err != nil {
				t.Skipf("attaching: %v", err)
			}
			defer l.Close()
			if m.(*CgroupStorageMap).Storage(cgid, uint32(ebpf.AttachCGroupInetEgress), 0) == nil {
				t.Fatal("no storage")
			}
			other := append([]byte(nil), key...)
			other[0]++
			padded := append([]byte(nil), key...)
			if len(padded) == 16 {
				padded[15] = 0xff
			}
			compare("lookup", look(key))
			compare("update noexist", update(key, 1, UpdateNoExist))
			compare("update lock", update(key, 1, UpdateLock))
			compare("update", update(key, 2, UpdateAny))
			compare("lookup after update", look(key))
			compare("update exist", update(key, 3, UpdateExist))
			compare("lookup padded", look(padded))
			compare("lookup other", look(other))
			compare("update other", update(other, 1, UpdateAny))
			compare("delete", func(m kv) result { return result{err: sentinel(m.delete(key))} })
			compare("lookup and delete", func(m kv) result {
				_, err := m.lookupAndDelete(key)
				return result{err: sentinel(err)}
			})
			compare("next nil", nextKey(nil))
			compare("next other", nextKey(other))
		})
	}
}

func TestKernelCgroupArray(t *testing.T) {
	requireKernelMaps(t)
	dir, cgid := testCgroup(t)
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	spec := Spec{Type: CgroupArray, KeySize: 4, ValueSize: 4, MaxEntries: 4}
	km, err := ebpf.NewMap(kernelSpec(spec))
	if err != nil {
		t.Fatalf("kernel map: %v", err)
	}
	defer km.Close()
	m := newTestMap(t, spec, Options{})
	sh := shape{keySize: 4, valueSize: 4}
	theirs := viaIndex{kv: kernelKV{m: km, valueSize: 4}, sh: sh, toWire: func(int) []byte { return u32(uint32(f.Fd())) }}
	mine := viaIndex{kv: ours{m, 1}, sh: sh, toWire: func(int) []byte { return u32(uint32(cgid)) }}
	script := []step{
		get(0, -1, ErrNotSupported),
		del(0, ErrKeyNotExist),
		upd(0, 0, UpdateAny, nil),
		upd(0, 0, UpdateNoExist, ErrInvalid),
		upd(0, 0, UpdateExist, ErrInvalid),
		upd(4, 0, UpdateAny, ErrFull),
		get(0, -1, ErrNotSupported),
		del(4, ErrFull),
		del(0, nil),
		del(0, ErrKeyNotExist),
		pop(0, -1, ErrNotSupported),
		next(3, -1, ErrKeyNotExist),
		keys(0, 1, 2, 3),
	}
	compareScript(t, sh, theirs, mine, script)
}
