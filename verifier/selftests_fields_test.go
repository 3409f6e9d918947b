package verifier_test

import (
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/internal/fieldbtf"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/verifier"
)

// fTask stands for the kernel's struct task_struct, which the kernel finds
// by name in vmlinux (with a destructor, so a referenced kptr of it is
// allowed).
var fTask = &btf.Struct{Name: "task_struct"}

// fValue is a value struct of size bytes with members at byte offsets.
func fValue(size uint32, ms ...any) *btf.Struct {
	var members []fieldbtf.Member
	for i := 0; i < len(ms); i += 2 {
		members = append(members, fieldbtf.Member{Off: uint32(ms[i].(int)), Type: ms[i+1].(btf.Type)})
	}
	return fieldbtf.Value("val", size, members...)
}

func fKptr(tag string) *btf.Pointer { return fieldbtf.Tagged(tag, fTask) }

var (
	fU32    = fieldbtf.U32
	fU64    = fieldbtf.U64
	fOpaque = fieldbtf.Special
)

var (
	// lockHash: struct { struct bpf_spin_lock l; u32 a; u64 b; }.
	lockVal  = fValue(16, 0, fOpaque("bpf_spin_lock", 4), 4, fU32, 8, fU64)
	lockHash = maps.Spec{Name: "lockh", Type: maps.Hash, KeySize: 4, ValueSize: 16, MaxEntries: 4, Value: lockVal}
	lockArr  = maps.Spec{Name: "locka", Type: maps.Array, KeySize: 4, ValueSize: 16, MaxEntries: 4, Value: lockVal}
	// timerArr: struct { u64 a; struct bpf_timer t; }.
	timerArr = maps.Spec{Name: "timer", Type: maps.Array, KeySize: 4, ValueSize: 24, MaxEntries: 4, Value: fValue(24, 0, fU64, 8, fOpaque("bpf_timer", 16))}
	// bssLock is a .bss with a lock and a counter.
	bssLock = maps.Spec{Name: ".bss", Type: maps.Array, KeySize: 4, ValueSize: 16, MaxEntries: 1, Value: &btf.Datasec{Name: ".bss", Size: 16, Vars: []btf.VarSecinfo{
		{Type: &btf.Var{Name: "lock", Type: fOpaque("bpf_spin_lock", 4)}, Size: 4},
		{Type: &btf.Var{Name: "n", Type: fU64}, Offset: 8, Size: 8},
	}}}
	// lockOuter holds arrays like lockArr.
	lockOuter = maps.Spec{Name: "lockouter", Type: maps.ArrayOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: 2, InnerMap: &lockArr}
	// refcountHash: struct { struct bpf_refcount r; u32 a; u64 b; }.
	refcountHash = maps.Spec{Name: "refc", Type: maps.Hash, KeySize: 4, ValueSize: 16, MaxEntries: 4, Value: fValue(16, 0, fOpaque("bpf_refcount", 4), 4, fU32, 8, fU64)}
	// kptrArr: struct { struct task_struct __kptr_untrusted *u;
	// struct task_struct __kptr *r; u64 a; }.
	kptrArr = maps.Spec{Name: "kptr", Type: maps.Array, KeySize: 4, ValueSize: 24, MaxEntries: 4, Value: fValue(24, 0, fKptr("kptr_untrusted"), 8, fKptr("kptr"), 16, fU64)}
)

// TestSelftestFields covers loads, stores, atomics and helper arguments
// touching the special fields of map values, as the kernel's
// check_map_access and check_map_kptr_access judge them.
func TestSelftestFields(t *testing.T) {
	lk := []maps.Spec{lockHash}
	kp := []maps.Spec{kptrArr}
	get := lookup4 + "if r0 == 0 goto out\n"
	out := "\nout: r0 = 0\nexit"
	update := "r1 = map[fd:0] ll\nr2 = r10\nr2 += -4\nr4 = 0\ncall bpf_map_update_elem#2"
	runCases(t, []vcase{
		// bpf_spin_lock.
		{name: "lock load", maps: lk, asm: get + "r1 = *(u32 *)(r0 +0)" + out, err: "bpf_spin_lock cannot be accessed directly by load/store", kmsg: true},
		{name: "lock store", maps: lk, asm: get + "*(u32 *)(r0 +0) = 1" + out, err: "bpf_spin_lock cannot be accessed directly by load/store", kmsg: true},
		{name: "lock last byte", maps: lk, asm: get + "r1 = *(u8 *)(r0 +3)" + out, err: "bpf_spin_lock cannot be accessed directly by load/store", kmsg: true},
		{name: "lock under a dw", maps: lk, asm: get + "r1 = *(u64 *)(r0 +0)" + out, err: "bpf_spin_lock cannot be accessed directly by load/store", kmsg: true},
		{name: "lock array", maps: []maps.Spec{lockArr}, asm: get + "r1 = *(u16 *)(r0 +2)" + out, err: "bpf_spin_lock cannot be accessed directly by load/store", kmsg: true},
		{name: "lock atomic", maps: lk, asm: get + "r1 = 1\nlock *(u32 *)(r0 +0) += r1" + out, err: "bpf_spin_lock cannot be accessed directly by load/store", kmsg: true},
		{name: "lock neighbours", maps: lk, asm: get + "r1 = *(u32 *)(r0 +4)\n*(u32 *)(r0 +4) = 1\nr1 = *(u64 *)(r0 +8)\n*(u64 *)(r0 +8) = r1" + out},
		{name: "lock var offset clear", maps: lk, asm: get + "r1 = *(u8 *)(r0 +8)\nr1 &= 8\nr0 += r1\nr2 = *(u32 *)(r0 +4)" + out},
		{name: "lock var offset may touch", maps: lk, asm: get + "r1 = *(u8 *)(r0 +8)\nr1 &= 4\nr0 += r1\nr2 = *(u32 *)(r0 +0)" + out, err: "bpf_spin_lock cannot be accessed directly by load/store", kmsg: true},
		{name: "lock value to helper", maps: lk, asm: get + "r3 = r0\n" + update + out, err: "bpf_spin_lock cannot be accessed directly by load/store", kmsg: true},
		{name: "lock key from value", maps: lk, asm: get + "r2 = r0\nr1 = map[fd:0] ll\ncall bpf_map_lookup_elem#1" + out, err: "bpf_spin_lock cannot be accessed directly by load/store", kmsg: true},
		{name: "key after lock", maps: lk, asm: get + "r2 = r0\nr2 += 4\nr1 = map[fd:0] ll\ncall bpf_map_lookup_elem#1" + out},
		// bpf_timer and bpf_refcount.
		{name: "timer load", maps: []maps.Spec{timerArr}, asm: get + "r1 = *(u64 *)(r0 +8)" + out, err: "bpf_timer cannot be accessed directly by load/store", kmsg: true},
		{name: "timer store end", maps: []maps.Spec{timerArr}, asm: get + "*(u8 *)(r0 +23) = 1" + out, err: "bpf_timer cannot be accessed directly by load/store", kmsg: true},
		{name: "before timer", maps: []maps.Spec{timerArr}, asm: get + "*(u64 *)(r0 +0) = 1\nr1 = *(u64 *)(r0 +0)" + out},
		{name: "refcount load", maps: []maps.Spec{refcountHash}, asm: get + "r1 = *(u32 *)(r0 +0)" + out, err: "bpf_refcount cannot be accessed directly by load/store", kmsg: true},
		// A data section's lock, addressed directly.
		{name: "bss lock direct", maps: []maps.Spec{bssLock}, asm: "r1 = map_value[fd:0]+0 ll\nr0 = *(u32 *)(r1 +0)\nexit", err: "bpf_spin_lock cannot be accessed directly by load/store", kmsg: true},
		{name: "bss after lock direct", maps: []maps.Spec{bssLock}, asm: "r1 = map_value[fd:0]+8 ll\nr0 = *(u64 *)(r1 +0)\nexit"},
		// The values of inner maps have their template's fields.
		{name: "inner lock load", maps: []maps.Spec{lockOuter}, asm: lookupInner + innerLookup4 + "if r0 == 0 goto out\nr1 = *(u32 *)(r0 +0)" + out, err: "bpf_spin_lock cannot be accessed directly by load/store", kmsg: true},
		{name: "inner after lock", maps: []maps.Spec{lockOuter}, asm: lookupInner + innerLookup4 + "if r0 == 0 goto out\nr1 = *(u32 *)(r0 +4)" + out},
		// Kernel pointers.
		{name: "kptr untrusted load", maps: kp, btf: true, asm: get + "r1 = *(u64 *)(r0 +0)" + out},
		{name: "kptr referenced load", maps: kp, btf: true, asm: get + "r1 = *(u64 *)(r0 +8)" + out},
		{name: "kptr load word", maps: kp, asm: get + "r1 = *(u32 *)(r0 +0)" + out, err: "kptr access size must be BPF_DW", kmsg: true},
		{name: "kptr load misaligned", maps: kp, asm: get + "r1 = *(u64 *)(r0 +4)" + out, err: "kptr access misaligned expected=0 off=4", kmsg: true},
		{name: "kptr var offset", maps: kp, asm: get + "r1 = *(u8 *)(r0 +16)\nr1 &= 8\nr0 += r1\nr2 = *(u64 *)(r0 +0)" + out, err: "kptr access cannot have variable offset", kmsg: true},
		{name: "kptr untrusted store null", maps: kp, asm: get + "r1 = 0\n*(u64 *)(r0 +0) = r1" + out},
		{name: "kptr untrusted store imm zero", maps: kp, asm: get + "*(u64 *)(r0 +0) = 0" + out},
		{name: "kptr untrusted store imm", maps: kp, asm: get + "*(u64 *)(r0 +0) = 1" + out, err: "BPF_ST imm must be 0 when storing to kptr at off=0", kmsg: true},
		{name: "kptr untrusted store scalar", maps: kp, asm: get + "r1 = 1\n*(u64 *)(r0 +0) = r1" + out, err: "invalid kptr access, R1 type=scalar expected=ptr_task_struct or untrusted_ptr_task_struct", kmsg: true},
		{name: "kptr untrusted store map value", maps: kp, asm: get + "*(u64 *)(r0 +0) = r0" + out, err: "invalid kptr access, R0 type=map_value expected=ptr_task_struct or untrusted_ptr_task_struct", kmsg: true},
		{name: "kptr referenced store null", maps: kp, asm: get + "r1 = 0\n*(u64 *)(r0 +8) = r1" + out, err: "store to referenced kptr disallowed", kmsg: true},
		{name: "kptr referenced store imm", maps: kp, asm: get + "*(u64 *)(r0 +8) = 0" + out, err: "store to referenced kptr disallowed", kmsg: true},
		{name: "kptr store word", maps: kp, asm: get + "*(u32 *)(r0 +8) = 0" + out, err: "kptr access size must be BPF_DW", kmsg: true},
		{name: "kptr atomic", maps: kp, asm: get + "r1 = 0\nlock *(u64 *)(r0 +0) += r1" + out, err: "kptr in map can only be accessed using BPF_MEM instruction mode", kmsg: true},
		{name: "kptr load acquire", maps: kp, asm: get + "r1 = load_acquire((u64 *)(r0 +8))" + out, err: "kptr in map can only be accessed using BPF_MEM instruction mode", kmsg: true},
		{name: "kptr store release", maps: kp, asm: get + "r1 = 0\nstore_release((u64 *)(r0 +0), r1)" + out, err: "kptr in map can only be accessed using BPF_MEM instruction mode", kmsg: true},
		{name: "kptr value to helper", maps: kp, asm: get + "r3 = r0\n" + update + out, err: "kptr cannot be accessed indirectly by helper", kmsg: true},
		{name: "kptr key from value", maps: kp, asm: get + "r2 = r0\nr2 += 4\nr1 = map[fd:0] ll\ncall bpf_map_lookup_elem#1" + out, err: "kptr cannot be accessed indirectly by helper", kmsg: true},
		{name: "after kptrs", maps: kp, asm: get + "r1 = *(u64 *)(r0 +16)\n*(u64 *)(r0 +16) = r1\nr2 = r0\nr2 += 16\nr1 = map[fd:0] ll\ncall bpf_map_lookup_elem#1" + out},
	})
}

// TestSelftestFieldsKptr covers what kptr loads give (the kernel's
// btf_ld_kptr_type) and which pointers may be stored into an untrusted
// kptr (map_kptr_match_type), against the host's vmlinux BTF.
func TestSelftestFieldsKptr(t *testing.T) {
	spec := hostBTF(t)
	task, taskID := hostStruct(t, spec, "task_struct")
	_, skbID := hostStruct(t, spec, "sk_buff")
	pidOff := memberOff(t, task, "pid")
	kp := []maps.Spec{kptrArr}
	get := lookup4 + "if r0 == 0 goto out\nr6 = r0\n"
	out := "\nout: r0 = 0\nexit"
	rdonly := func(id btf.TypeID) string {
		return fmt.Sprintf("r1 = r10\nr1 += -8\nr2 = %d\ncall bpf_rdonly_cast#0\n", id)
	}
	deref := fmt.Sprintf("r0 = *(u32 *)(r1 +%d)\n", pidOff)
	const expected = "expected=ptr_task_struct or untrusted_ptr_task_struct"
	runCases(t, []vcase{
		// Loads: a pointer that may be NULL, untrusted or (task_struct
		// being RCU-protected) RCU.
		{name: "untrusted unchecked", maps: kp, btf: true, asm: get + "r1 = *(u64 *)(r6 +0)\n" + deref + out, err: "R1 invalid mem access 'untrusted_ptr_or_null_'", kmsg: true},
		{name: "untrusted checked", maps: kp, btf: true, asm: get + "r1 = *(u64 *)(r6 +0)\nif r1 == 0 goto out\n" + deref + out},
		{name: "untrusted arithmetic", maps: kp, btf: true, asm: get + "r1 = *(u64 *)(r6 +0)\nr1 += 8\n" + out, err: "R1 pointer arithmetic on untrusted_ptr_or_null_ prohibited, null-check it first", kmsg: true},
		{name: "untrusted copy checked", maps: kp, btf: true, asm: get + "r1 = *(u64 *)(r6 +0)\nr2 = r1\nif r2 == 0 goto out\n" + deref + out},
		{name: "untrusted write through", maps: kp, btf: true, asm: get + "r1 = *(u64 *)(r6 +0)\nif r1 == 0 goto out\n*(u32 *)(r1 +0) = 0" + out, err: "only read is supported", kmsg: true},
		{name: "referenced unchecked", maps: kp, btf: true, asm: get + "r1 = *(u64 *)(r6 +8)\n" + deref + out, err: "R1 invalid mem access 'rcu_ptr_or_null_'", kmsg: true},
		{name: "referenced checked", maps: kp, btf: true, asm: get + "r1 = *(u64 *)(r6 +8)\nif r1 == 0 goto out\n" + deref + out},
		{name: "two loads two ids", maps: kp, btf: true, asm: get + "r1 = *(u64 *)(r6 +0)\nr2 = *(u64 *)(r6 +0)\nif r2 == 0 goto out\n" + deref + out, err: "R1 invalid mem access 'untrusted_ptr_or_null_'", kmsg: true},
		// Stores into the untrusted kptr.
		{name: "store rdonly_cast", maps: kp, btf: true, asm: get + rdonly(taskID) + "*(u64 *)(r6 +0) = r0" + out},
		{name: "store rdonly_cast other type", maps: kp, btf: true, asm: get + rdonly(skbID) + "*(u64 *)(r6 +0) = r0" + out, err: "invalid kptr access, R0 type=untrusted_ptr_sk_buff " + expected, kmsg: true},
		{name: "store moved pointer", maps: kp, btf: true, asm: get + rdonly(taskID) + "r0 += 8\n*(u64 *)(r6 +0) = r0" + out, err: "invalid kptr access, R0 type=untrusted_ptr_task_struct " + expected, kmsg: true},
		{name: "store negative offset", maps: kp, btf: true, asm: get + rdonly(taskID) + "r0 += -8\n*(u64 *)(r6 +0) = r0" + out, err: "negative offset untrusted_ptr_ ptr R0 off=-8 disallowed", kmsg: true},
		{name: "store variable offset", maps: kp, btf: true, asm: get + rdonly(taskID) + "r1 = *(u8 *)(r6 +16)\nr1 &= 8\nr0 += r1\n*(u64 *)(r6 +0) = r0" + out, err: "variable untrusted_ptr_ access var_off=(0x0; 0x8) disallowed", kmsg: true},
		{name: "store loaded untrusted", maps: kp, btf: true, asm: get + "r1 = *(u64 *)(r6 +0)\n*(u64 *)(r6 +0) = r1" + out},
		{name: "store loaded referenced", maps: kp, btf: true, asm: get + "r1 = *(u64 *)(r6 +8)\n*(u64 *)(r6 +0) = r1" + out},
		{name: "store into referenced", maps: kp, btf: true, asm: get + "r1 = *(u64 *)(r6 +0)\n*(u64 *)(r6 +8) = r1" + out, err: "store to referenced kptr disallowed", kmsg: true},
		{name: "store kern ctx", maps: kp, btf: true, asm: "r7 = r1\n" + get + "r1 = r7\ncall bpf_cast_to_kern_ctx#0\n*(u64 *)(r6 +0) = r0" + out, err: "invalid kptr access, R0 type=trusted_ptr_xdp_buff " + expected, kmsg: true},
		{name: "store stack", maps: kp, btf: true, asm: get + "r1 = r10\n*(u64 *)(r6 +0) = r1" + out, err: "invalid kptr access, R1 type=fp " + expected, kmsg: true},
	})
}

// TestSelftestFieldsKptrProbe checks that loads through a pointer loaded
// from a kptr are probe loads (InsnAux.Probe), which the rewrite makes
// read zeros where nothing is mapped.
func TestSelftestFieldsKptrProbe(t *testing.T) {
	spec := hostBTF(t)
	insns, err := isa.Assemble(lookup4 + "if r0 == 0 goto out\nr1 = *(u64 *)(r0 +0)\nif r1 == 0 goto out\nr0 = *(u32 *)(r1 +8)\nexit\nout: r0 = 0\nexit")
	if err != nil {
		t.Fatal(err)
	}
	res, err := verifier.Verify(insns, verifier.Options{Type: progType(ebpf.XDP), Maps: []verifier.MapInfo{{Name: "kptr", Spec: kptrArr}}, KernelTypes: spec})
	if err != nil {
		t.Fatal(err)
	}
	for pc, aux := range res.Aux {
		if want := pc == 9; aux.Probe != want {
			t.Errorf("insn %d (%v): Probe %v, want %v", pc, insns[pc], aux.Probe, want)
		}
	}
}

// TestSelftestSpinLock covers bpf_spin_lock and bpf_spin_unlock: one lock
// at a time, the lock taken released, no calls, exits or LD_ABS inside the
// locked region, the argument at the value's lock.
func TestSelftestSpinLock(t *testing.T) {
	lk := []maps.Spec{lockHash}
	get := lookup4 + "if r0 == 0 goto out\nr6 = r0\n"
	lock := "r1 = r6\ncall bpf_spin_lock#93\n"
	unlock := "r1 = r6\ncall bpf_spin_unlock#94\n"
	out := "\nout: r0 = 0\nexit"
	second := "*(u32 *)(r10 -8) = 1\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -8\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto out\nr7 = r0\n"
	runCases(t, []vcase{
		{name: "lock unlock", maps: lk, asm: get + lock + unlock + "r0 = 0\nexit" + out},
		{name: "locked write", maps: lk, asm: get + lock + "r1 = *(u64 *)(r6 +8)\nr1 += 1\n*(u64 *)(r6 +8) = r1\n" + unlock + "r0 = 0\nexit" + out},
		{name: "array lock", maps: []maps.Spec{lockArr}, asm: get + lock + unlock + "r0 = 0\nexit" + out},
		{name: "branches in region", maps: lk, asm: get + lock + "r1 = *(u32 *)(r6 +4)\nif r1 > 3 goto skip\n*(u32 *)(r6 +4) = 0\nskip: " + unlock + "r0 = 0\nexit" + out},
		{name: "exit with lock", maps: lk, asm: get + lock + "r0 = 0\nexit" + out, err: "BPF_EXIT instruction in main prog cannot be used inside bpf_spin_lock-ed region", kmsg: true},
		{name: "unlock without lock", maps: lk, asm: get + unlock + "r0 = 0\nexit" + out, err: "bpf_spin_unlock without taking a lock", kmsg: true},
		// bpf_spin_lock is itself a call.
		{name: "two locks", maps: lk, asm: get + lock + lock + unlock + "r0 = 0\nexit" + out, err: "function calls are not allowed while holding a lock", kmsg: true},
		{name: "helper in region", maps: lk, asm: get + lock + "call bpf_get_prandom_u32#7\n" + unlock + "r0 = 0\nexit" + out, err: "function calls are not allowed while holding a lock", kmsg: true},
		{name: "lookup in region", maps: lk, asm: get + lock + lookup4 + unlock + "r0 = 0\nexit" + out, err: "function calls are not allowed while holding a lock", kmsg: true},
		{name: "lock off lock", maps: lk, asm: get + "r1 = r6\nr1 += 4\ncall bpf_spin_lock#93\nr0 = 0\nexit" + out, err: "off 4 doesn't point to 'struct bpf_spin_lock' that is at 0", kmsg: true},
		{name: "lock variable offset", maps: lk, asm: get + "r2 = *(u8 *)(r6 +8)\nr2 &= 4\nr1 = r6\nr1 += r2\ncall bpf_spin_lock#93\nr0 = 0\nexit" + out, err: "R1 doesn't have constant offset. bpf_spin_lock has to be at the constant offset", kmsg: true},
		{name: "lock map without BTF", maps: []maps.Spec{arrayMap}, asm: get + lock + unlock + "r0 = 0\nexit" + out, err: "has to have BTF in order to use bpf_spin_lock", klog: "has to have BTF in order to use bpf_spin_lock"},
		{name: "lock map without lock", maps: []maps.Spec{timerArr}, asm: get + lock + unlock + "r0 = 0\nexit" + out, err: "has no valid bpf_spin_lock", klog: "has no valid bpf_spin_lock"},
		{name: "lock maybe null", maps: lk, asm: lookup4 + "r1 = r0\ncall bpf_spin_lock#93\nr0 = 0\nexit", err: "R1 type=map_value_or_null expected=map_value, ptr_", kmsg: true},
		{name: "lock stack", maps: lk, asm: "r1 = r10\nr1 += -8\ncall bpf_spin_lock#93\nr0 = 0\nexit", err: "R1 type=fp expected=map_value, ptr_", kmsg: true},
		{name: "unlock other value", maps: lk, asm: get + second + lock + "r1 = r7\ncall bpf_spin_unlock#94\nr0 = 0\nexit" + out, err: "bpf_spin_unlock of different lock", kmsg: true},
		{name: "unlock copy", maps: lk, asm: get + "r7 = r6\n" + lock + "r1 = r7\ncall bpf_spin_unlock#94\nr0 = 0\nexit" + out},
		{name: "static call in region", maps: lk, asm: get + lock + "call f\n" + unlock + "r0 = 0\nexit" + out + "\nf: r0 = 0\nexit"},
		{name: "lock in static function", maps: lk, asm: get + "r1 = r6\ncall f\n" + unlock + "r0 = 0\nexit" + out + "\nf: call bpf_spin_lock#93\nr0 = 0\nexit"},
		{name: "ld_abs in region", typ: ebpf.SchedCLS, maps: lk, asm: "r9 = r1\n" + get + lock + "r6 = r9\nr0 = *(u8 *)skb[0]\nr6 = r0\nr1 = r6\ncall bpf_spin_unlock#94\nr0 = 0\nexit" + out, err: "BPF_LD_[ABS|IND] cannot be used inside bpf_spin_lock-ed region", kmsg: true},
		{name: "socket filter lock map", typ: ebpf.SocketFilter, maps: lk, asm: get + "r0 = 0\nexit" + out, err: "socket filter progs cannot use bpf_spin_lock yet", kmsg: true},
		{name: "data section lock", maps: []maps.Spec{bssLock}, asm: "r1 = map_value[fd:0]+0 ll\ncall bpf_spin_lock#93\nr1 = map_value[fd:0]+0 ll\ncall bpf_spin_unlock#94\nr0 = 0\nexit"},
		{name: "one path locked at exit", maps: lk, asm: get + "r7 = *(u32 *)(r6 +4)\n" + lock + "if r7 > 3 goto skip\n" + unlock + "skip: r0 = 0\nexit" + out, err: "BPF_EXIT instruction in main prog cannot be used inside bpf_spin_lock-ed region", kmsg: true},
	})
}
