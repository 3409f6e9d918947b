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

	KfuncDynptrFromSkb   int32 = 6  // int bpf_dynptr_from_skb(struct __sk_buff *s, u64 flags, struct bpf_dynptr *ptr__uninit)
	KfuncDynptrFromXdp   int32 = 7  // int bpf_dynptr_from_xdp(struct xdp_md *x, u64 flags, struct bpf_dynptr *ptr__uninit)
	KfuncDynptrSlice     int32 = 8  // void *bpf_dynptr_slice(const struct bpf_dynptr *p, u32 offset, void *buffer__opt, u32 buffer__szk)
	KfuncDynptrSliceRdwr int32 = 9  // void *bpf_dynptr_slice_rdwr(same)
	KfuncDynptrAdjust    int32 = 10 // int bpf_dynptr_adjust(const struct bpf_dynptr *p, u32 start, u32 end)
	KfuncDynptrClone     int32 = 11 // int bpf_dynptr_clone(const struct bpf_dynptr *p, struct bpf_dynptr *clone__uninit)
	KfuncDynptrSize      int32 = 12 // __u32 bpf_dynptr_size(const struct bpf_dynptr *p)
	KfuncDynptrIsNull    int32 = 13 // bool bpf_dynptr_is_null(const struct bpf_dynptr *p)
	KfuncDynptrIsRdonly  int32 = 14 // bool bpf_dynptr_is_rdonly(const struct bpf_dynptr *p)
)

var kfuncNames = [...]string{
	KfuncIterNumNew:     "bpf_iter_num_new",
	KfuncIterNumNext:    "bpf_iter_num_next",
	KfuncIterNumDestroy: "bpf_iter_num_destroy",
	KfuncCastToKernCtx:  "bpf_cast_to_kern_ctx",
	KfuncRdonlyCast:     "bpf_rdonly_cast",

	KfuncDynptrFromSkb:   "bpf_dynptr_from_skb",
	KfuncDynptrFromXdp:   "bpf_dynptr_from_xdp",
	KfuncDynptrSlice:     "bpf_dynptr_slice",
	KfuncDynptrSliceRdwr: "bpf_dynptr_slice_rdwr",
	KfuncDynptrAdjust:    "bpf_dynptr_adjust",
	KfuncDynptrClone:     "bpf_dynptr_clone",
	KfuncDynptrSize:      "bpf_dynptr_size",
	KfuncDynptrIsNull:    "bpf_dynptr_is_null",
	KfuncDynptrIsRdonly:  "bpf_dynptr_is_rdonly",
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
