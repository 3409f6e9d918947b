package maps

import (
	"encoding/binary"
	"errors"
	"os"
	"slices"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// Differential tests: the same Go-side operations on a kernel map (through
// cilium/ebpf) and on ours must give the same results and errors. They need
// root and a kernel that lets us create maps, and skip otherwise.

func requireKernelMaps(t *testing.T) int {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("differential tests need root")
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOSYS) || errors.Is(err, ebpf.ErrNotSupported) {
		t.Skipf("kernel maps unavailable: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	n, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// kernelSentinel maps a kernel errno to our sentinel.
func kernelSentinel(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ebpf.ErrKeyNotExist), errors.Is(err, syscall.ENOENT):
		return ErrKeyNotExist
	case errors.Is(err, ebpf.ErrKeyExist), errors.Is(err, syscall.EEXIST):
		return ErrKeyExist
	case errors.Is(err, syscall.E2BIG):
		return ErrFull
	case errors.Is(err, syscall.ENOSPC):
		return ErrNoSpace
	case errors.Is(err, syscall.EINVAL):
		return ErrInvalid
	case errors.Is(err, ebpf.ErrNotSupported), errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.Errno(524)):
		return ErrNotSupported
	case errors.Is(err, syscall.EBUSY):
		return ErrBusy
	case errors.Is(err, syscall.EAGAIN):
		return ErrAgain
	case errors.Is(err, syscall.EBADF):
		return ErrBadFD
	}
	return err
}

func kernelSpec(s Spec) *ebpf.MapSpec {
	k := &ebpf.MapSpec{Name: s.Name, Type: ebpf.MapType(s.Type), KeySize: s.KeySize, ValueSize: s.ValueSize, MaxEntries: s.MaxEntries, Flags: s.Flags, MapExtra: s.MapExtra}
	if s.InnerMap != nil {
		k.InnerMap = kernelSpec(*s.InnerMap)
	}
	k.Key, k.Value = s.Key, s.Value
	return k
}

// withBTF returns s with BTF for its key and value: an int key (a struct
// holding one unless intKey) and a byte array value, as a socket storage
// of clang's would have.
func withBTF(s Spec, intKey bool) Spec {
	u8 := &btf.Int{Name: "unsigned char", Size: 1}
	s.Key = &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	if !intKey {
		s.Key = &btf.Struct{Name: "key", Size: 4, Members: []btf.Member{{Name: "fd", Type: s.Key}}}
	}
	s.Value = &btf.Array{Type: u8, Index: &btf.Int{Name: "unsigned int", Size: 4}, Nelems: s.ValueSize}
	return s
}

// kernelKV adapts a kernel map to kv, with values in our Go-side layout.
type kernelKV struct {
	m         *ebpf.Map
	valueSize int
	ncpu      int // per-CPU maps; 0 otherwise
}

func kkey(key []byte) any {
	if key == nil {
		return nil
	}
	return key
}

func (k kernelKV) err(err error) error { return kernelSentinel(err) }

func (k kernelKV) update(key, value []byte, flags uint64) error {
	if k.ncpu == 0 {
		return k.err(k.m.Update(kkey(key), value, ebpf.MapUpdateFlags(flags)))
	}
	stride := (k.valueSize + 7) &^ 7
	per := make([][]byte, k.ncpu)
	for c := range per {
		per[c] = value[c*stride : c*stride+k.valueSize]
	}
	return k.err(k.m.Update(kkey(key), per, ebpf.MapUpdateFlags(flags)))
}

func (k kernelKV) lookup(key []byte) ([]byte, error) {
	v, err := k.m.LookupBytes(kkey(key))
	if err == nil && v == nil {
		err = ErrKeyNotExist
	}
	if err != nil {
		return nil, k.err(err)
	}
	return v, nil
}

func (k kernelKV) delete(key []byte) error { return k.err(k.m.Delete(kkey(key))) }

func (k kernelKV) lookupAndDelete(key []byte) ([]byte, error) {
	if k.ncpu == 0 {
		v := make([]byte, k.valueSize)
		if err := k.m.LookupAndDelete(kkey(key), v); err != nil {
			return nil, k.err(err)
		}
		return v, nil
	}
	per := make([][]byte, k.ncpu)
	if err := k.m.LookupAndDelete(kkey(key), per); err != nil {
		return nil, k.err(err)
	}
	stride := (k.valueSize + 7) &^ 7
	v := make([]byte, stride*k.ncpu)
	for c, b := range per {
		copy(v[c*stride:], b)
	}
	return v, nil
}

func (k kernelKV) nextKey(key []byte) ([]byte, error) {
	n, err := k.m.NextKeyBytes(kkey(key))
	if err == nil && n == nil {
		err = ErrKeyNotExist
	}
	if err != nil {
		return nil, k.err(err)
	}
	return n, nil
}

// viaIndex translates script values, small indices into a list of
// objects, to what a map stores (a map or program id, or for the kernel a
// file descriptor) and back.
type viaIndex struct {
	kv
	sh     shape
	toWire func(i int) []byte
	ids    []uint32 // what lookups return, by index
}

func (v viaIndex) update(key, value []byte, flags uint64) error {
	return v.kv.update(key, v.toWire(int(value[0])), flags)
}

func (v viaIndex) fromWire(b []byte, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	i := slices.Index(v.ids, binary.NativeEndian.Uint32(b))
	return v.sh.value(i), nil
}

func (v viaIndex) lookup(key []byte) ([]byte, error) { return v.fromWire(v.kv.lookup(key)) }
func (v viaIndex) lookupAndDelete(key []byte) ([]byte, error) {
	return v.fromWire(v.kv.lookupAndDelete(key))
}

func arrayScript() []step {
	return []step{
		get(0, 0, nil),
		get(4, -1, ErrKeyNotExist),
		upd(0, 1, UpdateNoExist, ErrKeyExist),
		upd(0, 1, UpdateExist, nil),
		get(0, 1, nil),
		upd(3, 2, UpdateAny, nil),
		upd(4, 2, UpdateAny, ErrFull),
		upd(1, 2, 3, ErrInvalid),
		upd(1, 2, UpdateLock, ErrInvalid),
		get(1, 0, nil),
		del(0, ErrInvalid),
		pop(0, -1, ErrNotSupported),
		next(0, 1, nil),
		next(3, -1, ErrKeyNotExist),
		next(9, 0, nil),
		keys(0, 1, 2, 3),
	}
}

func mapOfMapsScript(hash bool) []step {
	if !hash {
		return []step{
			get(0, -1, ErrKeyNotExist),
			upd(0, 1, UpdateAny, nil),
			get(0, 1, nil),
			upd(0, 2, UpdateNoExist, ErrInvalid),
			upd(0, 2, UpdateExist, ErrInvalid),
			upd(4, 2, UpdateAny, ErrFull),
			get(4, -1, ErrKeyNotExist),
			upd(0, 2, UpdateAny, nil),
			get(0, 2, nil),
			del(1, ErrKeyNotExist),
			del(0, nil),
			get(0, -1, ErrKeyNotExist),
			pop(0, -1, ErrNotSupported),
			next(0, 1, nil),
			next(3, -1, ErrKeyNotExist),
		}
	}
	return []step{
		get(1, -1, ErrKeyNotExist),
		upd(1, 0, UpdateExist, ErrKeyNotExist),
		upd(1, 0, UpdateNoExist, nil),
		upd(1, 1, UpdateNoExist, ErrKeyExist),
		get(1, 0, nil),
		upd(1, 2, UpdateExist, nil),
		get(1, 2, nil),
		upd(2, 1, UpdateAny, nil),
		upd(3, 1, UpdateAny, nil),
		upd(4, 1, UpdateAny, nil),
		upd(5, 1, UpdateAny, ErrFull),
		upd(2, 1, 4, ErrInvalid),
		keys(1, 2, 3, 4),
		pop(1, -1, ErrNotSupported),
		del(2, nil),
		del(2, ErrKeyNotExist),
		keys(1, 3, 4),
	}
}

func TestKernelDifferential(t *testing.T) {
	ncpu := requireKernelMaps(t)
	inner := Spec{Type: Array, KeySize: 4, ValueSize: 8, MaxEntries: 2}
	tests := []struct {
		name   string
		spec   Spec
		script []step
	}{
		{"hash", Spec{Type: Hash, KeySize: 4, ValueSize: 8, MaxEntries: 4}, hashScript(ErrFull)},
		{"hash odd", Spec{Type: Hash, KeySize: 3, ValueSize: 5, MaxEntries: 4}, hashScript(ErrFull)},
		{"hash no_prealloc", Spec{Type: Hash, KeySize: 4, ValueSize: 8, MaxEntries: 4, Flags: FlagNoPrealloc}, hashScript(ErrFull)},
		{"percpu_hash", Spec{Type: PerCPUHash, KeySize: 4, ValueSize: 4, MaxEntries: 4}, hashScript(ErrFull)},
		{"percpu_hash 12", Spec{Type: PerCPUHash, KeySize: 8, ValueSize: 12, MaxEntries: 4}, hashScript(ErrFull)},
		// Below capacity only: the kernel's LRU may evict early.
		{"lru_hash", Spec{Type: LRUHash, KeySize: 4, ValueSize: 8, MaxEntries: 1024}, hashScript(nil)},
		{"lru_percpu_hash", Spec{Type: LRUPerCPUHash, KeySize: 4, ValueSize: 4, MaxEntries: 1024}, hashScript(nil)},
		{"array", Spec{Type: Array, KeySize: 4, ValueSize: 8, MaxEntries: 4}, arrayScript()},
		{"percpu_array", Spec{Type: PerCPUArray, KeySize: 4, ValueSize: 4, MaxEntries: 4}, arrayScript()},
		{"queue", Spec{Type: Queue, ValueSize: 4, MaxEntries: 3}, queueScript(false)},
		{"stack", Spec{Type: Stack, ValueSize: 4, MaxEntries: 3}, queueScript(true)},
		{"prog_array", Spec{Type: ProgArray, KeySize: 4, ValueSize: 4, MaxEntries: 4}, progArrayScript()},
		{"array_of_maps", Spec{Type: ArrayOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 4, InnerMap: &inner}, mapOfMapsScript(false)},
		{"hash_of_maps", Spec{Type: HashOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 4, InnerMap: &inner}, mapOfMapsScript(true)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			km, err := ebpf.NewMap(kernelSpec(tt.spec))
			if err != nil {
				t.Fatalf("kernel map: %v", err)
			}
			defer km.Close()
			m := newTestMap(t, tt.spec, Options{NumCPU: ncpu})
			sh := shape{keySize: int(tt.spec.KeySize), valueSize: int(tt.spec.ValueSize), noKey: tt.spec.KeySize == 0}
			k := kernelKV{m: km, valueSize: int(tt.spec.ValueSize)}
			if tt.spec.Type.PerCPU() {
				sh.ncpu, k.ncpu = ncpu, ncpu
			}
			var theirs, mine kv = k, ours{m, ncpu}
			switch tt.spec.Type {
			case ArrayOfMaps, HashOfMaps:
				theirs, mine = withInnerMaps(t, tt.spec, sh, k, mine)
			case ProgArray:
				theirs, mine = withPrograms(t, sh, k, mine)
			}
			compareScript(t, sh, theirs, mine, tt.script)
		})
	}
}

// compareScript runs a script on the kernel's map and ours, comparing each
// step, and returns how many steps it compared.
func compareScript(t *testing.T, sh shape, theirs, mine kv, script []step) int {
	t.Helper()
	for i, st := range script {
		want, got := sh.run(theirs, st), sh.run(mine, st)
		if !got.equal(want) {
			t.Errorf("step %d (op %d key %d val %d flags %d): ours %v, kernel %v", i, st.op, st.key, st.val, st.flags, got, want)
		}
	}
	return len(script)
}

// withInnerMaps wraps both sides so that script values are indices of
// three inner maps.
func withInnerMaps(t *testing.T, s Spec, sh shape, k kernelKV, mine kv) (kv, kv) {
	var kfds, kids, ids []uint32
	for range 3 {
		in, err := ebpf.NewMap(kernelSpec(*s.InnerMap))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { in.Close() })
		info, err := in.Info()
		if err != nil {
			t.Fatal(err)
		}
		id, _ := info.ID()
		kfds, kids = append(kfds, uint32(in.FD())), append(kids, uint32(id))
		ids = append(ids, IDOf(newTestMap(t, *s.InnerMap, Options{})))
	}
	return viaIndex{kv: k, sh: sh, ids: kids, toWire: func(i int) []byte { return u32(kfds[i]) }},
		viaIndex{kv: mine, sh: sh, ids: ids, toWire: func(i int) []byte { return u32(ids[i]) }}
}

// withPrograms wraps both sides so that script values are indices of three
// programs: kernel programs, and made-up ids for ours.
func withPrograms(t *testing.T, sh shape, k kernelKV, mine kv) (kv, kv) {
	var fds, kids, ids []uint32
	for i := range 3 {
		p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Type:         ebpf.SocketFilter,
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, int32(i)), asm.Return()},
			License:      "MIT",
		})
		if err != nil {
			t.Skipf("loading a program: %v", err)
		}
		t.Cleanup(func() { p.Close() })
		info, err := p.Info()
		if err != nil {
			t.Fatal(err)
		}
		id, _ := info.ID()
		fds, kids, ids = append(fds, uint32(p.FD())), append(kids, uint32(id)), append(ids, uint32(1000+i))
	}
	return viaIndex{kv: k, sh: sh, ids: kids, toWire: func(i int) []byte { return u32(fds[i]) }},
		viaIndex{kv: mine, sh: sh, ids: ids, toWire: func(i int) []byte { return u32(ids[i]) }}
}

func TestKernelSpecValidation(t *testing.T) {
	requireKernelMaps(t)
	for _, tt := range specCases() {
		t.Run(tt.name, func(t *testing.T) {
			if tt.noKernel {
				t.Skip("cilium/ebpf refuses this spec itself")
			}
			km, err := ebpf.NewMap(kernelSpec(tt.spec))
			if km != nil {
				km.Close()
			}
			if got := kernelSentinel(err); got != tt.err {
				t.Errorf("kernel: %v (%v), table says %v", got, err, tt.err)
			}
		})
	}
}
