package helper

import (
	"encoding/binary"

	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// itersKfuncs are the open-coded iterators but the number one: over the
// bits of memory (kernel/bpf/helpers.c), over the world's tasks, a task's
// memory areas and a cgroup's tasks (task_iter.c), over cgroups
// (cgroup_iter.c); all in helpers.c's common set. An iterator lives in
// the program's stack (struct bpf_iter_<kind>, whose size the verifier
// knows); what does not fit there is run state (runner.NewIterState)
// whose handle the slot holds. The tasks and cgroups are the world's
// (runner.Trace.Tasks, runner.Net.Cgroups).
var itersKfuncs = []Kfunc{
	{Name: "bpf_iter_bits_new", Decl: "int bpf_iter_bits_new(struct bpf_iter_bits *it, const u64 *unsafe_ptr__ign, u32 nr_words)", Flags: KfIterNew, Hooks: HookCommon, Func: kfuncIterBitsNew},
	{Name: "bpf_iter_bits_next", Decl: "int *bpf_iter_bits_next(struct bpf_iter_bits *it)", Flags: KfIterNext | KfRetNull, Hooks: HookCommon, Func: kfuncIterBitsNext},
	{Name: "bpf_iter_bits_destroy", Decl: "void bpf_iter_bits_destroy(struct bpf_iter_bits *it)", Flags: KfIterDestroy, Hooks: HookCommon, Func: kfuncIterBitsDestroy},
	{Name: "bpf_iter_task_new", Decl: "int bpf_iter_task_new(struct bpf_iter_task *it, struct task_struct *task__nullable, unsigned int flags)", Flags: KfIterNew | KfRCUProtected, Hooks: HookCommon, Func: kfuncIterTaskNew},
	{Name: "bpf_iter_task_next", Decl: "struct task_struct *bpf_iter_task_next(struct bpf_iter_task *it)", Flags: KfIterNext | KfRetNull, Hooks: HookCommon, Func: kfuncIterTaskNext},
	{Name: "bpf_iter_task_destroy", Decl: "void bpf_iter_task_destroy(struct bpf_iter_task *it)", Flags: KfIterDestroy, Hooks: HookCommon, Func: kfuncIterDrop},
	{Name: "bpf_iter_task_vma_new", Decl: "int bpf_iter_task_vma_new(struct bpf_iter_task_vma *it, struct task_struct *task, u64 addr)", Flags: KfIterNew | KfRCU, Hooks: HookCommon, Func: kfuncIterTaskVMANew},
	{Name: "bpf_iter_task_vma_next", Decl: "struct vm_area_struct *bpf_iter_task_vma_next(struct bpf_iter_task_vma *it)", Flags: KfIterNext | KfRetNull, Hooks: HookCommon, Func: kfuncIterTaskVMANext},
	{Name: "bpf_iter_task_vma_destroy", Decl: "void bpf_iter_task_vma_destroy(struct bpf_iter_task_vma *it)", Flags: KfIterDestroy, Hooks: HookCommon, Func: kfuncIterDrop},
	{Name: "bpf_iter_css_new", Decl: "int bpf_iter_css_new(struct bpf_iter_css *it, struct cgroup_subsys_state *start, unsigned int flags)", Flags: KfIterNew | KfRCUProtected, Hooks: HookCommon, Func: kfuncIterCSSNew},
	{Name: "bpf_iter_css_next", Decl: "struct cgroup_subsys_state *bpf_iter_css_next(struct bpf_iter_css *it)", Flags: KfIterNext | KfRetNull, Hooks: HookCommon, Func: kfuncIterCSSNext},
	{Name: "bpf_iter_css_destroy", Decl: "void bpf_iter_css_destroy(struct bpf_iter_css *it)", Flags: KfIterDestroy, Hooks: HookCommon, Func: kfuncIterCSSDestroy},
	{Name: "bpf_iter_css_task_new", Decl: "int bpf_iter_css_task_new(struct bpf_iter_css_task *it, struct cgroup_subsys_state *css, unsigned int flags)", Flags: KfIterNew, Hooks: HookCommon, Func: kfuncIterCSSTaskNew},
	{Name: "bpf_iter_css_task_next", Decl: "struct task_struct *bpf_iter_css_task_next(struct bpf_iter_css_task *it)", Flags: KfIterNext | KfRetNull, Hooks: HookCommon, Func: kfuncIterTaskNext},
	{Name: "bpf_iter_css_task_destroy", Decl: "void bpf_iter_css_task_destroy(struct bpf_iter_css_task *it)", Flags: KfIterDestroy, Hooks: HookCommon, Func: kfuncIterDrop},
}

// iterSlot returns the n bytes of an iterator at addr, checked in checked
// mode.
func iterSlot(e *vm.Env, addr uint64, n uint64) ([]byte, error) {
	if err := e.Check(addr, n, true); err != nil {
		return nil, err
	}
	return vm.Slice(addr, n), nil
}

// The bits iterator, struct bpf_iter_bits_kern: the bits (a u64 copy of
// them, or the handle of the copy for more than 64), nr_bits, then the
// last bit found, which _next returns a pointer to.
const (
	bitsIterSize  = 16
	bitsWordsMax  = 511 // BITS_ITER_NR_WORDS_MAX
	bitsNrOff     = 8
	bitsBitOff    = 12
	bitsInlineMax = 64
)

// kfuncIterBitsNew is bpf_iter_bits_new(it, ptr, nr_words): an iterator
// over the set bits of the nr_words u64s at ptr, copied now (read as
// bpf_probe_read_kernel reads); -EINVAL for no memory, -E2BIG for more
// than 511 words, the read's error (-EFAULT for one word) for memory
// that does not read.
func kfuncIterBitsNew(e *vm.Env, r1, r2, r3, _, _ uint64) (uint64, error) {
	it, err := iterSlot(e, r1, bitsIterSize)
	if err != nil {
		return 0, err
	}
	le := binary.LittleEndian
	le.PutUint64(it, 0)
	le.PutUint32(it[bitsNrOff:], 0)
	le.PutUint32(it[bitsBitOff:], ^uint32(0))
	words := uint32(r3)
	switch {
	case r2 == 0 || words == 0:
		return neg(einval), nil
	case words > bitsWordsMax:
		return neg(e2big), nil
	}
	bits := make([]byte, 8*words)
	if ret := probeKernel(e, bits, r2); ret != 0 {
		if words == 1 {
			return neg(efault), nil
		}
		return ret, nil
	}
	if words == 1 {
		copy(it, bits)
	} else {
		ws := make([]uint64, words)
		for i := range ws {
			ws[i] = le.Uint64(bits[8*i:])
		}
		le.PutUint64(it, runner.Of(e).NewIterState(ws))
	}
	le.PutUint32(it[bitsNrOff:], 64*words)
	return 0, nil
}

// kfuncIterBitsNext is bpf_iter_bits_next(it): a pointer to the number of
// the next set bit (in the iterator), or NULL past the last.
func kfuncIterBitsNext(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	it, err := iterSlot(e, r1, bitsIterSize)
	if err != nil {
		return 0, err
	}
	le := binary.LittleEndian
	bit, nr := int32(le.Uint32(it[bitsBitOff:])), int32(le.Uint32(it[bitsNrOff:]))
	if nr <= 0 || bit >= nr {
		return 0, nil
	}
	var words []uint64
	if nr == bitsInlineMax {
		words = []uint64{le.Uint64(it)}
	} else {
		words, _ = runner.Of(e).IterState(le.Uint64(it)).([]uint64)
	}
	next := nr
	for b := bit + 1; b < nr && int(b/64) < len(words); b++ {
		if words[b/64]>>(b%64)&1 != 0 {
			next = b
			break
		}
	}
	le.PutUint32(it[bitsBitOff:], uint32(next))
	if next >= nr {
		return 0, nil
	}
	return r1 + bitsBitOff, nil
}

// kfuncIterBitsDestroy is bpf_iter_bits_destroy(it).
func kfuncIterBitsDestroy(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	it, err := iterSlot(e, r1, bitsIterSize)
	if err != nil {
		return 0, err
	}
	le := binary.LittleEndian
	if le.Uint32(it[bitsNrOff:]) > bitsInlineMax {
		runner.Of(e).DropIterState(le.Uint64(it))
	}
	return 0, nil
}

// taskWalk is the state of a walk over tasks (bpf_iter_task,
// bpf_iter_css_task): the addresses still to give, in order.
type taskWalk struct {
	tasks []uint64
}

// iterHandle is the handle an iterator's first 8 bytes hold.
func iterHandle(e *vm.Env, addr uint64) (uint64, error) {
	it, err := iterSlot(e, addr, 8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(it), nil
}

// startWalk puts a walk's handle in the iterator at addr (0: empty).
func startWalk(e *vm.Env, addr uint64, w any) error {
	it, err := iterSlot(e, addr, 8)
	if err != nil {
		return err
	}
	var h uint64
	if w != nil {
		h = runner.Of(e).NewIterState(w)
	}
	binary.LittleEndian.PutUint64(it, h)
	return nil
}

// Task walks (enum bpf_iter_task_type).
const (
	taskIterAllProcs   = 0 // BPF_TASK_ITER_ALL_PROCS
	taskIterAllThreads = 1 // BPF_TASK_ITER_ALL_THREADS
	taskIterProcThread = 2 // BPF_TASK_ITER_PROC_THREADS
)

// kfuncIterTaskNew is bpf_iter_task_new(it, task, flags): a walk over the
// world's processes (flags 0, task NULL), all their threads (1, NULL), or
// the threads of task's process from task on (2); -EINVAL otherwise.
// The kernel starts both whole walks at init_task: the world's first
// task.
func kfuncIterTaskNew(e *vm.Env, r1, r2, r3, _, _ uint64) (uint64, error) {
	if _, err := iterSlot(e, r1, 24); err != nil {
		return 0, err
	}
	flags := uint32(r3)
	ok := flags == taskIterProcThread && r2 != 0 || (flags == taskIterAllProcs || flags == taskIterAllThreads) && r2 == 0
	if !ok {
		return neg(einval), startWalk(e, r1, nil)
	}
	world := runner.Of(e).Trace().Tasks
	var w taskWalk
	switch flags {
	case taskIterAllProcs:
		for _, t := range world {
			if t.PID == t.TGID {
				w.tasks = append(w.tasks, t.Addr)
			}
		}
	case taskIterAllThreads:
		for _, l := range world {
			if l.PID != l.TGID {
				continue
			}
			for _, t := range world {
				if t.TGID == l.TGID {
					w.tasks = append(w.tasks, t.Addr)
				}
			}
		}
	case taskIterProcThread:
		tr := runner.Of(e).Trace()
		i := tr.TaskAt(r2)
		if i < 0 {
			// A task the world does not list: itself only.
			w.tasks = []uint64{r2}
			break
		}
		for _, t := range world[i:] {
			if t.TGID == world[i].TGID {
				w.tasks = append(w.tasks, t.Addr)
			}
		}
	}
	return 0, startWalk(e, r1, &w)
}

// kfuncIterTaskNext is bpf_iter_task_next(it) and
// bpf_iter_css_task_next: the walk's next task, or NULL.
func kfuncIterTaskNext(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	h, err := iterHandle(e, r1)
	if err != nil {
		return 0, err
	}
	w, _ := runner.Of(e).IterState(h).(*taskWalk)
	if w == nil || len(w.tasks) == 0 {
		return 0, nil
	}
	t := w.tasks[0]
	w.tasks = w.tasks[1:]
	return t, nil
}

// kfuncIterDrop is the _destroy of the iterators whose state is a
// handle.
func kfuncIterDrop(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	h, err := iterHandle(e, r1)
	if err != nil {
		return 0, err
	}
	runner.Of(e).DropIterState(h)
	return 0, nil
}

// kfuncIterTaskVMANew is bpf_iter_task_vma_new(it, task, addr): a walk
// over task's memory areas from the one holding addr (or the next one
// above it); -ENOENT for a task without memory.
func kfuncIterTaskVMANew(e *vm.Env, r1, r2, r3, _, _ uint64) (uint64, error) {
	if _, err := iterSlot(e, r1, 8); err != nil {
		return 0, err
	}
	tr := runner.Of(e).Trace()
	i := tr.TaskAt(r2)
	if i < 0 || tr.Tasks[i].VMAs == nil {
		return neg(enoent), startWalk(e, r1, nil)
	}
	var w taskWalk
	for _, m := range tr.Tasks[i].VMAs {
		if m.End > r3 {
			w.tasks = append(w.tasks, m.Addr)
		}
	}
	return 0, startWalk(e, r1, &w)
}

// kfuncIterTaskVMANext is bpf_iter_task_vma_next(it).
func kfuncIterTaskVMANext(e *vm.Env, r1, r2, r3, r4, r5 uint64) (uint64, error) {
	return kfuncIterTaskNext(e, r1, r2, r3, r4, r5)
}

// Cgroup walks (enum bpf_cgroup_iter_order).
const (
	cgroupIterDescendantsPre  = 1
	cgroupIterDescendantsPost = 2
	cgroupIterAncestorsUp     = 3
)

// cssWalk is a walk over cgroups: the ids still to give, and the object
// the last _next gave, which the walk holds a reference to.
type cssWalk struct {
	ids  []uint64
	last uint64
}

// kfuncIterCSSNew is bpf_iter_css_new(it, start, flags): a walk over the
// cgroups below start, start first (flags 1) or last (2), or up from it to
// the root (3); -EINVAL for other flags. start is a cgroup object (struct
// cgroup begins with its struct cgroup_subsys_state); the walk gives
// cgroup objects of the world's hierarchy.
func kfuncIterCSSNew(e *vm.Env, r1, r2, r3, _, _ uint64) (uint64, error) {
	if _, err := iterSlot(e, r1, 24); err != nil {
		return 0, err
	}
	flags := uint32(r3)
	if flags < cgroupIterDescendantsPre || flags > cgroupIterAncestorsUp {
		return neg(einval), startWalk(e, r1, nil)
	}
	r := runner.Of(e)
	start, ok := cgroupID(r2)
	if !ok {
		return 0, startWalk(e, r1, &cssWalk{})
	}
	var w cssWalk
	switch flags {
	case cgroupIterAncestorsUp:
		chain := cgroupChain(r, start)
		for i := len(chain) - 1; i >= 0; i-- {
			w.ids = append(w.ids, chain[i])
		}
	default:
		w.ids = cgroupDescendants(r, start, flags == cgroupIterDescendantsPost)
	}
	return 0, startWalk(e, r1, &w)
}

// cgroupDescendants lists cg and the world's cgroups below it, each
// before its children or, with post, after them; children in the order
// the world lists them (the kernel's, of creation).
func cgroupDescendants(r *runner.Runner, cg uint64, post bool) []uint64 {
	cgs := r.Net().Cgroups
	var out []uint64
	var walk func(id uint64, depth int)
	walk = func(id uint64, depth int) {
		if !post {
			out = append(out, id)
		}
		// The depth bounds a cycle in the host's list.
		for _, c := range cgs {
			parent := c.Parent
			if parent == 0 {
				parent = runner.RootCgroup
			}
			if parent == id && c.ID != id && depth < len(cgs) {
				walk(c.ID, depth+1)
			}
		}
		if post {
			out = append(out, id)
		}
	}
	walk(cg, 0)
	return out
}

// kfuncIterCSSNext is bpf_iter_css_next(it): the next cgroup, or NULL.
func kfuncIterCSSNext(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	h, err := iterHandle(e, r1)
	if err != nil {
		return 0, err
	}
	r := runner.Of(e)
	w, _ := r.IterState(h).(*cssWalk)
	if w == nil {
		return 0, nil
	}
	for len(w.ids) > 0 {
		id := w.ids[0]
		w.ids = w.ids[1:]
		obj := cgroupObject(r, id)
		if obj == 0 {
			continue
		}
		w.drop()
		w.last = obj
		return obj, nil
	}
	w.drop()
	return 0, nil
}

// drop releases the walk's last cgroup.
func (w *cssWalk) drop() {
	if w.last != 0 {
		maps.PutObject(w.last)
		w.last = 0
	}
}

// kfuncIterCSSDestroy is bpf_iter_css_destroy(it).
func kfuncIterCSSDestroy(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	h, err := iterHandle(e, r1)
	if err != nil {
		return 0, err
	}
	r := runner.Of(e)
	if w, _ := r.IterState(h).(*cssWalk); w != nil {
		w.drop()
	}
	r.DropIterState(h)
	return 0, nil
}

// css_task_iter flags.
const (
	cssTaskIterProcs    = 1 // CSS_TASK_ITER_PROCS
	cssTaskIterThreaded = 2 // CSS_TASK_ITER_THREADED
)

// kfuncIterCSSTaskNew is bpf_iter_css_task_new(it, css, flags): a walk
// over the world's tasks in the cgroup css (a cgroup object), processes
// only with CSS_TASK_ITER_PROCS; -EINVAL for other flags.
func kfuncIterCSSTaskNew(e *vm.Env, r1, r2, r3, _, _ uint64) (uint64, error) {
	if _, err := iterSlot(e, r1, 8); err != nil {
		return 0, err
	}
	switch flags := uint32(r3); flags {
	case 0, cssTaskIterProcs, cssTaskIterProcs | cssTaskIterThreaded:
	default:
		return neg(einval), startWalk(e, r1, nil)
	}
	r := runner.Of(e)
	cg, ok := cgroupID(r2)
	var w taskWalk
	if ok {
		for _, t := range r.Trace().Tasks {
			id := t.CgroupID
			if id == 0 {
				id = runner.RootCgroup
			}
			if id == cg && (uint32(r3)&cssTaskIterProcs == 0 || t.PID == t.TGID) {
				w.tasks = append(w.tasks, t.Addr)
			}
		}
	}
	return 0, startWalk(e, r1, &w)
}
