package helper

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// The tracing helpers that take kernel objects and walk what they point
// to (kernel/trace/bpf_trace.c, kernel/bpf/task_iter.c): a task's saved
// registers, a task's memory areas, a path's name. They read the world's
// kernel objects (Trace.Objects, kernel Memory) by the program's kernel
// BTF (runner.Program.KernelTypes), as the kernel reads its own.
var kernelObjHelpers = []Helper{
	{Proto: Proto{Name: "bpf_task_pt_regs", Args: [5]ArgType{ArgBTFID}, ArgBTF: [5]string{"task_struct"}, Ret: RetBTFID, RetBTF: "pt_regs"}, Func: helperTaskPtRegs},
	{Proto: Proto{Name: "bpf_find_vma", Args: [5]ArgType{ArgBTFID, ArgAnything, ArgCallback, ArgStackOrNull, ArgAnything}, ArgBTF: [5]string{"task_struct"}}, Func: helperFindVMA},
	{Proto: Proto{Name: "bpf_d_path", Args: [5]ArgType{ArgBTFID, ArgWriteMem, ArgConstSizeOrZero}, ArgBTF: [5]string{"path"}, Allowed: dPathAllowed}, Func: helperDPath},
}

// threadSize is x86-64's THREAD_SIZE, a task's kernel stack, whose top
// holds its user registers (task_pt_regs).
const threadSize = 16 << 10

// helperTaskPtRegs is bpf_task_pt_regs(task): the task's saved user
// registers, x86-64's task_pt_regs: the struct pt_regs at the top of the
// task's kernel stack (task->stack + THREAD_SIZE, no padding), where the
// world puts a pt_regs object for the program to read.
func helperTaskPtRegs(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	r := runner.Of(e)
	k := layoutOf(r.Program(), kernelLayoutKey{}, findKernelLayout)
	if k == nil {
		return 0, nil
	}
	stack := readKernel(e, r.Trace(), r1+uint64(k.taskStack), 8)
	return stack + threadSize - uint64(k.ptRegsSize), nil
}

// helperFindVMA is bpf_find_vma(task, addr, callback, ctx, flags): the
// task's memory area holding addr, to callback(task, vma, ctx), and 0;
// -ENOENT for a NULL task, one without an mm or no area holding addr;
// -EINVAL for flags. The areas are the world's vm_area_struct objects
// (Trace.Objects) whose vm_mm is the task's mm, [vm_start, vm_end).
func helperFindVMA(e *vm.Env, r1, r2, r3, r4, r5 uint64) (uint64, error) {
	if r5 != 0 {
		return neg(einval), nil
	}
	r := runner.Of(e)
	k := layoutOf(r.Program(), kernelLayoutKey{}, findKernelLayout)
	if r1 == 0 || k == nil {
		return neg(enoent), nil
	}
	w := r.Trace()
	mm := readKernel(e, w, r1+uint64(k.taskMM), 8)
	if mm == 0 {
		return neg(enoent), nil
	}
	var vma uint64
	for _, o := range w.Objects {
		if o == nil || o.Type == nil || o.Type.TypeName() != "vm_area_struct" {
			continue
		}
		m, _ := o.Get("vm_mm")
		start, _ := o.Get("vm_start")
		end, _ := o.Get("vm_end")
		if m == mm && start <= r2 && r2 < end {
			vma = o.Addr
			break
		}
	}
	if vma == 0 {
		return neg(enoent), nil
	}
	frames := r.EnterCallbacks(e, vm.Region{})
	defer r.LeaveCallbacks(e, frames, vm.Region{})
	if _, err := r.Callback(e, r3, r1, vma, r4, 0, 0); err != nil {
		return 0, err
	}
	return 0, nil
}

// dPathAllowList is the kernel's btf_allowlist_d_path: the functions
// where a path is safe to walk (CONFIG_SECURITY and
// CONFIG_SECURITY_PATH).
var dPathAllowList = map[string]bool{
	"security_file_permission": true, "security_inode_getattr": true, "security_file_open": true,
	"security_path_truncate": true, "vfs_truncate": true, "vfs_fallocate": true,
	"dentry_open": true, "vfs_getattr": true, "filp_close": true,
}

// dPathAllowed is bpf_d_path_allowed: iterators, LSM programs at the
// sleepable hooks, tracing programs on the allow-list's functions.
func dPathAllowed(attach ebpf.AttachType, target, hook string) bool {
	switch attach {
	case ebpf.AttachTraceIter:
		return true
	case ebpf.AttachLSMMac, ebpf.AttachLSMCgroup:
		return lsmSleepable(hook)
	case ebpf.AttachTraceFEntry, ebpf.AttachTraceFExit, ebpf.AttachModifyReturn, ebpf.AttachTraceRawTp:
		return dPathAllowList[target]
	}
	return false
}

// enametoolong is ENAMETOOLONG, d_path's error for a name longer than the
// buffer.
const enametoolong = 36

// helperDPath is bpf_d_path(path, buf, size): the path's name from the
// root, NUL-terminated at the start of buf, and its length with the NUL;
// 0 for size 0, -EFAULT where the world's memory does not hold the path,
// -ENAMETOOLONG when the name does not fit. The name is d_path's: the
// dentries' names up to the mount's root, across mounts (struct mount's
// mnt_mountpoint in mnt_parent) to the root mount, " (deleted)" after the
// name of an unhashed dentry (d_hash.pprev 0) that is not a root.
func helperDPath(e *vm.Env, r1, r2, r3, _, _ uint64) (uint64, error) {
	size := uint32(r3)
	if size == 0 {
		return 0, nil
	}
	if _, err := memArg(e, r2, size, true); err != nil {
		return 0, err
	}
	r := runner.Of(e)
	k := layoutOf(r.Program(), kernelLayoutKey{}, findKernelLayout)
	w := r.Trace()
	if k == nil {
		return neg(efault), nil
	}
	if _, ok := w.Read(r1, uint64(k.pathSize), false); !ok && readableSpan(e, r1) < uint64(k.pathSize) {
		return neg(efault), nil
	}
	mnt := readKernel(e, w, r1+uint64(k.pathMnt), 8)
	dentry := readKernel(e, w, r1+uint64(k.pathDentry), 8)
	name := k.dentryPath(e, w, dentry, mnt)
	out := vm.Slice(r2, uint64(size))
	if len(name)+1 > len(out) {
		return neg(enametoolong), nil
	}
	copy(out, name)
	out[len(name)] = 0
	return uint64(len(name) + 1), nil
}

// maxPathDepth bounds a path's walk, against a world whose dentries loop.
const maxPathDepth = 256

// dentryPath is d_path's name of dentry in mount mnt (a vfsmount).
func (k *kernelLayout) dentryPath(e *vm.Env, w *runner.Trace, dentry, mnt uint64) string {
	name := ""
	if k.unlinked(e, w, dentry) {
		name = " (deleted)"
	}
	for range maxPathDepth {
		parent := readKernel(e, w, dentry+uint64(k.dParent), 8)
		if dentry == 0 || parent == dentry || mnt != 0 && dentry == readKernel(e, w, mnt+uint64(k.mntRoot), 8) {
			// A mount's root: go on from where the mount is mounted,
			// unless it is the root mount.
			if mnt == 0 || !k.haveMount {
				break
			}
			m := mnt - uint64(k.mountMnt)
			up := readKernel(e, w, m+uint64(k.mntParent), 8)
			if up == 0 || up == m {
				break
			}
			dentry, mnt = readKernel(e, w, m+uint64(k.mntMountpoint), 8), up+uint64(k.mountMnt)
			continue
		}
		n := uint32(readKernel(e, w, dentry+uint64(k.dNameLen), 4))
		ptr := readKernel(e, w, dentry+uint64(k.dNameName), 8)
		var b []byte
		if readableSpan(e, ptr) >= uint64(n) {
			b = vm.Slice(ptr, uint64(n))
		} else {
			b, _ = w.Read(ptr, uint64(n), false)
		}
		name = "/" + string(b) + name
		dentry = parent
	}
	if name == "" || name[0] != '/' {
		name = "/" + name
	}
	return name
}

// unlinked is d_unlinked: not hashed and not a root.
func (k *kernelLayout) unlinked(e *vm.Env, w *runner.Trace, dentry uint64) bool {
	return readKernel(e, w, dentry+uint64(k.dHashPprev), 8) == 0 && readKernel(e, w, dentry+uint64(k.dParent), 8) != dentry
}

// lsmSleepable is bpf_lsm_is_sleepable_hook.
func lsmSleepable(hook string) bool { return progtype.LSMHookSleepable(hook) }

// kernelLayout is where a kernel BTF puts what these helpers read.
type kernelLayout struct {
	taskStack, taskMM, ptRegsSize            uint32
	pathMnt, pathDentry, pathSize            uint32
	dParent, dNameLen, dNameName, dHashPprev uint32
	mntRoot                                  uint32
	// haveMount says struct mount is known: mountMnt is its vfsmount's
	// offset in it, mntParent and mntMountpoint its parent mount and the
	// dentry it is mounted on.
	haveMount                          bool
	mountMnt, mntParent, mntMountpoint uint32
}

// kernelLayoutKey keys the program's kernelLayout (runner.Program.Layout).
type kernelLayoutKey struct{}

func findKernelLayout(spec *btf.Spec) *kernelLayout {
	l := &kernelLayout{}
	for _, f := range []struct {
		typ  string
		path []string
		off  *uint32
	}{
		{"task_struct", []string{"stack"}, &l.taskStack}, {"task_struct", []string{"mm"}, &l.taskMM},
		{"path", []string{"mnt"}, &l.pathMnt}, {"path", []string{"dentry"}, &l.pathDentry},
		{"dentry", []string{"d_parent"}, &l.dParent}, {"dentry", []string{"d_name", "len"}, &l.dNameLen},
		{"dentry", []string{"d_name", "name"}, &l.dNameName}, {"dentry", []string{"d_hash", "pprev"}, &l.dHashPprev},
		{"vfsmount", []string{"mnt_root"}, &l.mntRoot},
	} {
		bits, ok := pathBits(spec, f.typ, f.path...)
		if !ok {
			return nil
		}
		*f.off = bits / 8
	}
	for _, s := range []struct {
		name string
		size *uint32
	}{{"pt_regs", &l.ptRegsSize}, {"path", &l.pathSize}} {
		var st *btf.Struct
		if err := spec.TypeByName(s.name, &st); err != nil {
			return nil
		}
		*s.size = st.Size
	}
	m, ok1 := pathBits(spec, "mount", "mnt")
	p, ok2 := pathBits(spec, "mount", "mnt_parent")
	mp, ok3 := pathBits(spec, "mount", "mnt_mountpoint")
	if ok1 && ok2 && ok3 {
		l.haveMount, l.mountMnt, l.mntParent, l.mntMountpoint = true, m/8, p/8, mp/8
	}
	return l
}

// pathBits is the bit offset in struct typ of the member path names,
// each name found as memberBits finds one.
func pathBits(spec *btf.Spec, typ string, path ...string) (uint32, bool) {
	var s *btf.Struct
	if err := spec.TypeByName(typ, &s); err != nil {
		return 0, false
	}
	var t btf.Type = s
	total := uint32(0)
	for _, name := range path {
		var ms []btf.Member
		switch u := btf.UnderlyingType(t).(type) {
		case *btf.Struct:
			ms = u.Members
		case *btf.Union:
			ms = u.Members
		default:
			return 0, false
		}
		off, mt, ok := findBitsType(ms, name, 0)
		if !ok {
			return 0, false
		}
		total += off
		t = mt
	}
	return total, true
}

// findBitsType is findBits with the member's type.
func findBitsType(ms []btf.Member, name string, depth int) (uint32, btf.Type, bool) {
	if depth > 16 {
		return 0, nil, false
	}
	for _, m := range ms {
		if m.Name == name {
			return uint32(m.Offset), m.Type, true
		}
	}
	for _, m := range ms {
		var inner []btf.Member
		switch u := btf.UnderlyingType(m.Type).(type) {
		case *btf.Struct:
			inner = u.Members
		case *btf.Union:
			inner = u.Members
		default:
			continue
		}
		if off, t, ok := findBitsType(inner, name, depth+1); ok {
			return uint32(m.Offset) + off, t, true
		}
	}
	return 0, nil, false
}
