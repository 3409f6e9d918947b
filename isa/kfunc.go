package isa

// Kernel functions (kfuncs) bpfvm implements. The kernel numbers kfuncs by
// their BTF type ids, which differ from kernel to kernel; bpfvm gives each
// one a fixed id of its own instead, which the loader puts in the call's
// immediate when it resolves the call by name (loader.ResolveKfuncs).
//
// Ids are grouped by family, each in a range of its own, so that families
// added side by side do not collide: 1-15 the number iterator and the
// casts, 16-31 RCU and preemption, 32-47 tasks, 48-63 cgroups, 64-127
// cpumasks, 128-191 dynptrs, 192-255 exceptions and the arena, 300-339
// the sleepable ones (user memory).
const (
	KfuncIterNumNew     int32 = 1 // int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end)
	KfuncIterNumNext    int32 = 2 // int *bpf_iter_num_next(struct bpf_iter_num *it)
	KfuncIterNumDestroy int32 = 3 // void bpf_iter_num_destroy(struct bpf_iter_num *it)
	KfuncCastToKernCtx  int32 = 4 // void *bpf_cast_to_kern_ctx(void *obj)
	KfuncRdonlyCast     int32 = 5 // void *bpf_rdonly_cast(const void *obj__ign, u32 btf_id__k)

	KfuncRCUReadLock    int32 = 16 // void bpf_rcu_read_lock(void)
	KfuncRCUReadUnlock  int32 = 17 // void bpf_rcu_read_unlock(void)
	KfuncPreemptDisable int32 = 18 // void bpf_preempt_disable(void)
	KfuncPreemptEnable  int32 = 19 // void bpf_preempt_enable(void)

	KfuncTaskAcquire  int32 = 32 // struct task_struct *bpf_task_acquire(struct task_struct *p)
	KfuncTaskRelease  int32 = 33 // void bpf_task_release(struct task_struct *p)
	KfuncTaskFromPid  int32 = 34 // struct task_struct *bpf_task_from_pid(s32 pid)
	KfuncTaskFromVpid int32 = 35 // struct task_struct *bpf_task_from_vpid(s32 vpid)

	KfuncCgroupAcquire  int32 = 48 // struct cgroup *bpf_cgroup_acquire(struct cgroup *cgrp)
	KfuncCgroupRelease  int32 = 49 // void bpf_cgroup_release(struct cgroup *cgrp)
	KfuncCgroupAncestor int32 = 50 // struct cgroup *bpf_cgroup_ancestor(struct cgroup *cgrp, int level)
	KfuncCgroupFromID   int32 = 51 // struct cgroup *bpf_cgroup_from_id(u64 cgid)
	KfuncTaskUnderCgrp  int32 = 52 // long bpf_task_under_cgroup(struct task_struct *task, struct cgroup *ancestor)

	KfuncCpumaskCreate           int32 = 64  // struct bpf_cpumask *bpf_cpumask_create(void)
	KfuncCpumaskRelease          int32 = 65  // void bpf_cpumask_release(struct bpf_cpumask *cpumask)
	KfuncCpumaskAcquire          int32 = 66  // struct bpf_cpumask *bpf_cpumask_acquire(struct bpf_cpumask *cpumask)
	KfuncCpumaskFirst            int32 = 67  // u32 bpf_cpumask_first(const struct cpumask *cpumask)
	KfuncCpumaskFirstZero        int32 = 68  // u32 bpf_cpumask_first_zero(const struct cpumask *cpumask)
	KfuncCpumaskFirstAnd         int32 = 69  // u32 bpf_cpumask_first_and(const struct cpumask *src1, const struct cpumask *src2)
	KfuncCpumaskSetCPU           int32 = 70  // void bpf_cpumask_set_cpu(u32 cpu, struct bpf_cpumask *cpumask)
	KfuncCpumaskClearCPU         int32 = 71  // void bpf_cpumask_clear_cpu(u32 cpu, struct bpf_cpumask *cpumask)
	KfuncCpumaskTestCPU          int32 = 72  // bool bpf_cpumask_test_cpu(u32 cpu, const struct cpumask *cpumask)
	KfuncCpumaskTestAndSetCPU    int32 = 73  // bool bpf_cpumask_test_and_set_cpu(u32 cpu, struct bpf_cpumask *cpumask)
	KfuncCpumaskTestAndClearCPU  int32 = 74  // bool bpf_cpumask_test_and_clear_cpu(u32 cpu, struct bpf_cpumask *cpumask)
	KfuncCpumaskSetall           int32 = 75  // void bpf_cpumask_setall(struct bpf_cpumask *cpumask)
	KfuncCpumaskClear            int32 = 76  // void bpf_cpumask_clear(struct bpf_cpumask *cpumask)
	KfuncCpumaskAnd              int32 = 77  // bool bpf_cpumask_and(struct bpf_cpumask *dst, const struct cpumask *src1, const struct cpumask *src2)
	KfuncCpumaskOr               int32 = 78  // void bpf_cpumask_or(struct bpf_cpumask *dst, const struct cpumask *src1, const struct cpumask *src2)
	KfuncCpumaskXor              int32 = 79  // void bpf_cpumask_xor(struct bpf_cpumask *dst, const struct cpumask *src1, const struct cpumask *src2)
	KfuncCpumaskEqual            int32 = 80  // bool bpf_cpumask_equal(const struct cpumask *src1, const struct cpumask *src2)
	KfuncCpumaskIntersects       int32 = 81  // bool bpf_cpumask_intersects(const struct cpumask *src1, const struct cpumask *src2)
	KfuncCpumaskSubset           int32 = 82  // bool bpf_cpumask_subset(const struct cpumask *src1, const struct cpumask *src2)
	KfuncCpumaskEmpty            int32 = 83  // bool bpf_cpumask_empty(const struct cpumask *cpumask)
	KfuncCpumaskFull             int32 = 84  // bool bpf_cpumask_full(const struct cpumask *cpumask)
	KfuncCpumaskCopy             int32 = 85  // void bpf_cpumask_copy(struct bpf_cpumask *dst, const struct cpumask *src)
	KfuncCpumaskAnyDistribute    int32 = 86  // u32 bpf_cpumask_any_distribute(const struct cpumask *cpumask)
	KfuncCpumaskAnyAndDistribute int32 = 87  // u32 bpf_cpumask_any_and_distribute(const struct cpumask *src1, const struct cpumask *src2)
	KfuncCpumaskWeight           int32 = 88  // u32 bpf_cpumask_weight(const struct cpumask *cpumask)
	KfuncCpumaskPopulate         int32 = 89  // int bpf_cpumask_populate(struct cpumask *cpumask, void *src, size_t src__sz)
	KfuncDynptrFromSkb           int32 = 128 // int bpf_dynptr_from_skb(struct __sk_buff *s, u64 flags, struct bpf_dynptr *ptr__uninit)
	KfuncDynptrFromXdp           int32 = 129 // int bpf_dynptr_from_xdp(struct xdp_md *x, u64 flags, struct bpf_dynptr *ptr__uninit)
	KfuncDynptrSlice             int32 = 130 // void *bpf_dynptr_slice(const struct bpf_dynptr *p, u32 offset, void *buffer__opt, u32 buffer__szk)
	KfuncDynptrSliceRdwr         int32 = 131 // void *bpf_dynptr_slice_rdwr(same)
	KfuncDynptrAdjust            int32 = 132 // int bpf_dynptr_adjust(const struct bpf_dynptr *p, u32 start, u32 end)
	KfuncDynptrClone             int32 = 133 // int bpf_dynptr_clone(const struct bpf_dynptr *p, struct bpf_dynptr *clone__uninit)
	KfuncDynptrSize              int32 = 134 // __u32 bpf_dynptr_size(const struct bpf_dynptr *p)
	KfuncDynptrIsNull            int32 = 135 // bool bpf_dynptr_is_null(const struct bpf_dynptr *p)
	KfuncDynptrIsRdonly          int32 = 136 // bool bpf_dynptr_is_rdonly(const struct bpf_dynptr *p)
	KfuncThrow                   int32 = 6   // void bpf_throw(u64 cookie)
	KfuncArenaAlloc              int32 = 7   // void __arena *bpf_arena_alloc_pages(void *map, void __arena *addr, u32 page_cnt, int node_id, u64 flags)
	KfuncArenaFree               int32 = 8   // void bpf_arena_free_pages(void *map, void __arena *ptr, u32 page_cnt)

	KfuncCopyFromUserStr     int32 = 300 // int bpf_copy_from_user_str(void *dst, u32 dst__sz, const void __user *unsafe_ptr__ign, u64 flags)
	KfuncCopyFromUserTaskStr int32 = 301 // int bpf_copy_from_user_task_str(void *dst, u32 dst__sz, const void __user *unsafe_ptr__ign, struct task_struct *tsk, u64 flags)
)

var kfuncNames = [...]string{
	KfuncIterNumNew:     "bpf_iter_num_new",
	KfuncIterNumNext:    "bpf_iter_num_next",
	KfuncIterNumDestroy: "bpf_iter_num_destroy",
	KfuncCastToKernCtx:  "bpf_cast_to_kern_ctx",
	KfuncRdonlyCast:     "bpf_rdonly_cast",

	KfuncRCUReadLock:    "bpf_rcu_read_lock",
	KfuncRCUReadUnlock:  "bpf_rcu_read_unlock",
	KfuncPreemptDisable: "bpf_preempt_disable",
	KfuncPreemptEnable:  "bpf_preempt_enable",

	KfuncTaskAcquire:  "bpf_task_acquire",
	KfuncTaskRelease:  "bpf_task_release",
	KfuncTaskFromPid:  "bpf_task_from_pid",
	KfuncTaskFromVpid: "bpf_task_from_vpid",

	KfuncCgroupAcquire:  "bpf_cgroup_acquire",
	KfuncCgroupRelease:  "bpf_cgroup_release",
	KfuncCgroupAncestor: "bpf_cgroup_ancestor",
	KfuncCgroupFromID:   "bpf_cgroup_from_id",
	KfuncTaskUnderCgrp:  "bpf_task_under_cgroup",

	KfuncCpumaskCreate:           "bpf_cpumask_create",
	KfuncCpumaskRelease:          "bpf_cpumask_release",
	KfuncCpumaskAcquire:          "bpf_cpumask_acquire",
	KfuncCpumaskFirst:            "bpf_cpumask_first",
	KfuncCpumaskFirstZero:        "bpf_cpumask_first_zero",
	KfuncCpumaskFirstAnd:         "bpf_cpumask_first_and",
	KfuncCpumaskSetCPU:           "bpf_cpumask_set_cpu",
	KfuncCpumaskClearCPU:         "bpf_cpumask_clear_cpu",
	KfuncCpumaskTestCPU:          "bpf_cpumask_test_cpu",
	KfuncCpumaskTestAndSetCPU:    "bpf_cpumask_test_and_set_cpu",
	KfuncCpumaskTestAndClearCPU:  "bpf_cpumask_test_and_clear_cpu",
	KfuncCpumaskSetall:           "bpf_cpumask_setall",
	KfuncCpumaskClear:            "bpf_cpumask_clear",
	KfuncCpumaskAnd:              "bpf_cpumask_and",
	KfuncCpumaskOr:               "bpf_cpumask_or",
	KfuncCpumaskXor:              "bpf_cpumask_xor",
	KfuncCpumaskEqual:            "bpf_cpumask_equal",
	KfuncCpumaskIntersects:       "bpf_cpumask_intersects",
	KfuncCpumaskSubset:           "bpf_cpumask_subset",
	KfuncCpumaskEmpty:            "bpf_cpumask_empty",
	KfuncCpumaskFull:             "bpf_cpumask_full",
	KfuncCpumaskCopy:             "bpf_cpumask_copy",
	KfuncCpumaskAnyDistribute:    "bpf_cpumask_any_distribute",
	KfuncCpumaskAnyAndDistribute: "bpf_cpumask_any_and_distribute",
	KfuncCpumaskWeight:           "bpf_cpumask_weight",
	KfuncCpumaskPopulate:         "bpf_cpumask_populate",
	KfuncDynptrFromSkb:           "bpf_dynptr_from_skb",
	KfuncDynptrFromXdp:           "bpf_dynptr_from_xdp",
	KfuncDynptrSlice:             "bpf_dynptr_slice",
	KfuncDynptrSliceRdwr:         "bpf_dynptr_slice_rdwr",
	KfuncDynptrAdjust:            "bpf_dynptr_adjust",
	KfuncDynptrClone:             "bpf_dynptr_clone",
	KfuncDynptrSize:              "bpf_dynptr_size",
	KfuncDynptrIsNull:            "bpf_dynptr_is_null",
	KfuncDynptrIsRdonly:          "bpf_dynptr_is_rdonly",
	KfuncThrow:                   "bpf_throw",
	KfuncArenaAlloc:              "bpf_arena_alloc_pages",
	KfuncArenaFree:               "bpf_arena_free_pages",

	KfuncCopyFromUserStr:     "bpf_copy_from_user_str",
	KfuncCopyFromUserTaskStr: "bpf_copy_from_user_task_str",
}

// KfuncID returns bpfvm's id of the kfunc called name.
func KfuncID(name string) (int32, bool) {
	for id, n := range kfuncNames {
		if n != "" && n == name {
			return int32(id), true
		}
	}
	return 0, false
}

// KfuncName returns the name of a kfunc id, or "" if there is none.
func KfuncName(id int32) string {
	if id <= 0 || int(id) >= len(kfuncNames) {
		return ""
	}
	return kfuncNames[id]
}

// KfuncHelperBase is where the engines' internal helper ids for kfuncs
// start: before a program runs, a call of kfunc id k becomes a helper call
// of id KfuncHelperBase+k, so both engines dispatch kfuncs as they do
// helpers. The ids lie past every kernel helper; a program that calls
// one as a helper is rejected at load.
const KfuncHelperBase int32 = 1024

// IsKfuncHelper reports whether a helper id is the internal id of a kfunc.
func IsKfuncHelper(id int32) bool {
	return id > KfuncHelperBase && id < KfuncHelperBase+int32(len(kfuncNames))
}
