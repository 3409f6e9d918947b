package maps

import (
	"errors"
	"slices"
	"syscall"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/internal/fieldbtf"
)

// BTF of the special structs and of values holding them.
var (
	btfU32      = fieldbtf.U32
	btfU64      = fieldbtf.U64
	btfSpinLock = fieldbtf.Special("bpf_spin_lock", 4)
	btfResLock  = fieldbtf.Special("bpf_res_spin_lock", 8)
	btfTimer    = fieldbtf.Special("bpf_timer", 16)
	btfWq       = fieldbtf.Special("bpf_wq", 16)
	btfListHead = fieldbtf.Special("bpf_list_head", 16)
	btfRefcount = fieldbtf.Special("bpf_refcount", 4)
	btfTask     = &btf.Struct{Name: "task_struct"}
	btfLocal    = &btf.Struct{Name: "bpfvm_local_obj", Size: 8, Members: []btf.Member{{Name: "x", Type: btfU64}}}
	opaque      = fieldbtf.Special
	tagged      = fieldbtf.Tagged
	value       = fieldbtf.Value
)

// mem is a member at a byte offset.
func mem(off uint32, t btf.Type) fieldbtf.Member { return fieldbtf.Member{Off: off, Type: t} }

func arrayOf(t btf.Type, n uint32) *btf.Array { return &btf.Array{Index: btfU32, Type: t, Nelems: n} }

// fieldCase is a map whose value has special fields, with the fields we
// find and the errno creating it gives (0: created).
type fieldCase struct {
	name   string
	typ    Type
	flags  uint32
	value  btf.Type
	fields []Field
	errno  syscall.Errno
}

func fieldCases() []fieldCase {
	lockVal := value("v", 16, mem(0, btfSpinLock), mem(8, btfU64))
	kptrs := value("v", 24, mem(0, tagged("kptr_untrusted", btfTask)), mem(8, tagged("kptr", btfTask)), mem(16, btfU64))
	inner := value("inner", 16, mem(0, btfU64), mem(8, tagged("kptr", btfLocal)))
	innerLock := value("innerl", 8, mem(0, btfSpinLock), mem(4, btfU32))
	twelve := make([]fieldbtf.Member, 12)
	for i := range twelve {
		twelve[i] = mem(uint32(i)*8, tagged("kptr_untrusted", btfTask))
	}
	bss := &btf.Datasec{Name: ".bss", Size: 16, Vars: []btf.VarSecinfo{
		{Type: &btf.Var{Name: "lock", Type: btfSpinLock}, Offset: 0, Size: 4},
		{Type: &btf.Var{Name: "n", Type: btfU64}, Offset: 8, Size: 8},
	}}
	return []fieldCase{
		{name: "spin lock hash", typ: Hash, value: lockVal, fields: []Field{{Kind: SpinLock, Size: 4}}},
		{name: "spin lock array", typ: Array, value: lockVal, fields: []Field{{Kind: SpinLock, Size: 4}}},
		{name: "spin lock percpu hash", typ: PerCPUHash, value: lockVal, errno: syscall.EOPNOTSUPP},
		{name: "spin lock percpu array", typ: PerCPUArray, value: lockVal, errno: syscall.EOPNOTSUPP},
		{name: "spin lock lru", typ: LRUHash, value: lockVal, errno: syscall.EOPNOTSUPP},
		{name: "spin lock rdonly prog", typ: Array, flags: FlagRdonlyProg, value: lockVal, errno: syscall.EACCES},
		{name: "spin lock wronly prog", typ: Hash, flags: FlagWronlyProg, value: lockVal, errno: syscall.EACCES},
		{name: "spin lock mmapable", typ: Array, flags: FlagMmapable, value: lockVal, fields: []Field{{Kind: SpinLock, Size: 4}}},
		{name: "two spin locks", typ: Hash, value: value("v", 8, mem(0, btfSpinLock), mem(4, btfSpinLock)), errno: syscall.E2BIG},
		{name: "spin lock nested and top", typ: Hash, value: value("v", 16, mem(0, innerLock), mem(8, btfSpinLock)),
			fields: []Field{{Kind: SpinLock, Size: 4}, {Kind: SpinLock, Offset: 8, Size: 4}}},
		{name: "spin lock misaligned", typ: Hash, value: value("v", 8, mem(2, btfSpinLock)), errno: syscall.EFAULT},
		{name: "spin lock of other size", typ: Hash, value: value("v", 8, mem(0, opaque("bpf_spin_lock", 8))), errno: syscall.EFAULT},
		{name: "array of spin locks", typ: Hash, value: value("v", 8, mem(0, arrayOf(btfSpinLock, 2))), fields: nil},
		{name: "spin lock and res spin lock", typ: Hash, value: value("v", 16, mem(0, btfSpinLock), mem(8, btfResLock)), fields: []Field{{Kind: SpinLock, Size: 4}, {Kind: ResSpinLock, Offset: 8, Size: 8}}},
		{name: "res spin lock", typ: Array, value: value("v", 8, mem(0, btfResLock)), fields: []Field{{Kind: ResSpinLock, Size: 8}}},
		{name: "timer array", typ: Array, value: value("v", 16, mem(0, btfTimer)), fields: []Field{{Kind: Timer, Size: 16}}},
		{name: "timer lru", typ: LRUHash, value: value("v", 24, mem(8, btfTimer)), fields: []Field{{Kind: Timer, Offset: 8, Size: 16}}},
		{name: "timer percpu array", typ: PerCPUArray, value: value("v", 16, mem(0, btfTimer)), errno: syscall.EOPNOTSUPP},
		{name: "timer misaligned", typ: Array, value: value("v", 20, mem(4, btfTimer)), fields: nil},
		{name: "two timers", typ: Array, value: value("v", 32, mem(0, btfTimer), mem(16, btfTimer)), fields: nil},
		{name: "wq hash", typ: Hash, value: value("v", 16, mem(0, btfWq)), fields: []Field{{Kind: Workqueue, Size: 16}}},
		{name: "wq percpu hash", typ: PerCPUHash, value: value("v", 16, mem(0, btfWq)), errno: syscall.EOPNOTSUPP},
		{name: "refcount hash", typ: Hash, value: value("v", 8, mem(0, btfRefcount)), fields: []Field{{Kind: Refcount, Size: 4}}},
		{name: "kptrs array", typ: Array, value: kptrs, fields: []Field{{Kind: KptrUntrusted, Size: 8, Pointee: "task_struct"}, {Kind: Kptr, Offset: 8, Size: 8, Pointee: "task_struct"}}},
		{name: "kptrs percpu hash", typ: PerCPUHash, value: kptrs, fields: []Field{{Kind: KptrUntrusted, Size: 8, Pointee: "task_struct"}, {Kind: Kptr, Offset: 8, Size: 8, Pointee: "task_struct"}}},
		{name: "kptrs lru percpu", typ: LRUPerCPUHash, value: kptrs, fields: []Field{{Kind: KptrUntrusted, Size: 8, Pointee: "task_struct"}, {Kind: Kptr, Offset: 8, Size: 8, Pointee: "task_struct"}}},
		{name: "kptrs rdonly prog", typ: Array, flags: FlagRdonlyProg, value: kptrs, errno: syscall.EACCES},
		{name: "local kptr", typ: Hash, value: value("v", 8, mem(0, tagged("kptr", btfLocal))), fields: []Field{{Kind: Kptr, Size: 8, Pointee: "bpfvm_local_obj"}}},
		{name: "percpu kptr", typ: Array, value: value("v", 8, mem(0, tagged("percpu_kptr", btfLocal))), fields: []Field{{Kind: PercpuKptr, Size: 8, Pointee: "bpfvm_local_obj"}}},
		{name: "kptr unknown tag", typ: Hash, value: value("v", 8, mem(0, tagged("bpfvm_other", btfTask))), fields: nil},
		{name: "kptr to int", typ: Hash, value: value("v", 8, mem(0, tagged("kptr", btfU64))), fields: nil},
		{name: "kptr two tags", typ: Hash, value: value("v", 8, mem(0, &btf.Pointer{Target: &btf.TypeTag{Value: "kptr", Type: &btf.TypeTag{Value: "kptr", Type: btfTask}}})), fields: nil},
		{name: "kptr misaligned", typ: Hash, value: value("v", 16, mem(4, tagged("kptr", btfTask))), errno: syscall.EFAULT},
		{name: "kptr volatile", typ: Hash, value: value("v", 8, mem(0, &btf.Volatile{Type: tagged("kptr_untrusted", btfTask)})), fields: []Field{{Kind: KptrUntrusted, Size: 8, Pointee: "task_struct"}}},
		{name: "plain pointer", typ: Hash, value: value("v", 8, mem(0, &btf.Pointer{Target: btfTask})), fields: nil},
		{name: "array of kptrs", typ: Array, value: value("v", 16, mem(0, arrayOf(tagged("kptr_untrusted", btfTask), 2))),
			fields: []Field{{Kind: KptrUntrusted, Size: 8, Pointee: "task_struct"}, {Kind: KptrUntrusted, Offset: 8, Size: 8, Pointee: "task_struct"}}},
		{name: "nested kptr", typ: Hash, value: value("v", 24, mem(0, btfU64), mem(8, inner)), fields: []Field{{Kind: Kptr, Offset: 16, Size: 8, Pointee: "bpfvm_local_obj"}}},
		{name: "array of nested kptrs", typ: Hash, value: value("v", 32, mem(0, arrayOf(inner, 2))),
			fields: []Field{{Kind: Kptr, Offset: 8, Size: 8, Pointee: "bpfvm_local_obj"}, {Kind: Kptr, Offset: 24, Size: 8, Pointee: "bpfvm_local_obj"}}},
		{name: "array of nested locks", typ: Hash, value: value("v", 16, mem(0, arrayOf(innerLock, 2))), fields: nil},
		{name: "twelve kptrs", typ: Array, value: value("v", 96, twelve...), errno: syscall.E2BIG},
		{name: "list head", typ: Hash, value: value("v", 24, mem(0, btfSpinLock), mem(8, btfListHead)), errno: syscall.EINVAL},
		{name: "union is plain", typ: Hash, value: value("v", 8, mem(0, &btf.Union{Name: "u", Size: 8, Members: []btf.Member{{Name: "l", Type: btfSpinLock}}})), fields: nil},
		{name: "typedef is plain", typ: Hash, value: value("v", 8, mem(0, &btf.Typedef{Name: "lock_t", Type: btfSpinLock})), fields: nil},
		{name: "bss spin lock", typ: Array, value: bss, fields: []Field{{Kind: SpinLock, Size: 4}}},
		{name: "uptr hash", typ: Hash, value: value("v", 8, mem(0, tagged("uptr", btfLocal))), errno: syscall.EOPNOTSUPP},
		{name: "nested timer", typ: Hash, value: value("v", 24, mem(0, btfU64), mem(8, value("t", 16, mem(0, btfTimer)))), fields: []Field{{Kind: Timer, Offset: 8, Size: 16}}},
		{name: "list node is plain", typ: Hash, value: value("v", 24, mem(0, opaque("bpf_list_node", 24))), fields: nil},
		{name: "refcount percpu array", typ: PerCPUArray, value: value("v", 8, mem(0, btfRefcount)), fields: []Field{{Kind: Refcount, Size: 4}}},
		{name: "no fields", typ: Hash, value: value("v", 16, mem(0, btfU64), mem(8, btfU64)), fields: nil},
	}
}

// errnoOf is the errno an error of ours stands for.
func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	for _, e := range []syscall.Errno{syscall.EINVAL, syscall.E2BIG, syscall.EEXIST, syscall.EACCES, syscall.EOPNOTSUPP, syscall.EFAULT, syscall.ENOENT, 524} {
		if errors.Is(err, e) {
			return e
		}
	}
	return syscall.EIO
}

// TestFieldsParse finds the fields of each case's value and gives its
// creation errno.
func TestFieldsParse(t *testing.T) {
	for _, c := range fieldCases() {
		t.Run(c.name, func(t *testing.T) {
			s := c.spec()
			fields, perr := s.Fields()
			if c.errno == 0 && (perr != nil || !slices.Equal(fields, c.fields)) {
				t.Errorf("fields %+v, want %+v", fields, c.fields)
			}
			m, err := New(s, Options{NumCPU: 2})
			if err == nil {
				m.Close()
			}
			if got := errnoOf(err); got != c.errno {
				t.Errorf("creation: %v (errno %d), want errno %d", err, got, c.errno)
			}
		})
	}
}

func (c fieldCase) spec() Spec {
	size, _ := btf.Sizeof(c.value)
	s := Spec{Name: "f", Type: c.typ, KeySize: 4, ValueSize: uint32(size), MaxEntries: 4, Flags: c.flags, Value: c.value}
	if _, ok := c.value.(*btf.Datasec); ok {
		s.MaxEntries = 1
	}
	return s
}
