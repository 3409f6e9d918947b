package isa

// Kernel functions (kfuncs) bpfvm implements. The kernel numbers kfuncs by
// their BTF type ids, which differ from kernel to kernel; bpfvm gives each
// one a fixed id of its own instead, which the loader puts in the call's
// immediate when it resolves the call by name (loader.ResolveKfuncs).
const (
	KfuncIterNumNew     int32 = 1 // int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end)
	KfuncIterNumNext    int32 = 2 // int *bpf_iter_num_next(struct bpf_iter_num *it)
	KfuncIterNumDestroy int32 = 3 // void bpf_iter_num_destroy(struct bpf_iter_num *it)
	KfuncCastToKernCtx  int32 = 4 // void *bpf_cast_to_kern_ctx(void *obj)
	KfuncRdonlyCast     int32 = 5 // void *bpf_rdonly_cast(const void *obj__ign, u32 btf_id__k)
	KfuncThrow          int32 = 6 // void bpf_throw(u64 cookie)
	KfuncArenaAlloc     int32 = 7 // void __arena *bpf_arena_alloc_pages(void *map, void __arena *addr, u32 page_cnt, int node_id, u64 flags)
	KfuncArenaFree      int32 = 8 // void bpf_arena_free_pages(void *map, void __arena *ptr, u32 page_cnt)
)

var kfuncNames = [...]string{
	KfuncIterNumNew:     "bpf_iter_num_new",
	KfuncIterNumNext:    "bpf_iter_num_next",
	KfuncIterNumDestroy: "bpf_iter_num_destroy",
	KfuncCastToKernCtx:  "bpf_cast_to_kern_ctx",
	KfuncRdonlyCast:     "bpf_rdonly_cast",
	KfuncThrow:          "bpf_throw",
	KfuncArenaAlloc:     "bpf_arena_alloc_pages",
	KfuncArenaFree:      "bpf_arena_free_pages",
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
