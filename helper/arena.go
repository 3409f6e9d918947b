package helper

import (
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/vm"
)

// kfuncArenaAlloc is bpf_arena_alloc_pages(map, addr, page_cnt, node_id,
// flags) (kernel/bpf/arena.c): the user address of page_cnt zeroed pages,
// or NULL.
func kfuncArenaAlloc(e *vm.Env, r1, r2, r3, r4, r5 uint64) (uint64, error) {
	a, err := arenaArg(e, r1)
	if a == nil {
		return 0, err
	}
	return a.AllocPages(r2, uint32(r3), int32(r4), r5), nil
}

// kfuncArenaFree is bpf_arena_free_pages(map, ptr, page_cnt).
func kfuncArenaFree(e *vm.Env, r1, r2, r3, _, _ uint64) (uint64, error) {
	a, err := arenaArg(e, r1)
	if a == nil {
		return 0, err
	}
	a.FreePages(r2, uint32(r3))
	return 0, nil
}

// arenaArg returns the arena a kfunc's map argument names; nil (and no
// error) for another map, which the kernel's kfuncs ignore.
func arenaArg(e *vm.Env, handle uint64) (*maps.ArenaMap, error) {
	m, err := mapArg(e, handle)
	if err != nil {
		return nil, err
	}
	a, _ := m.(*maps.ArenaMap)
	return a, nil
}

// arenaKfuncs are the arena's page allocator (kernel/bpf/arena.c, in
// every program type's set). The verifier has rules of its own for them
// (verifier/arena.go), so their flags are not listed here.
var arenaKfuncs = []Kfunc{
	{Name: "bpf_arena_alloc_pages", Decl: "void *bpf_arena_alloc_pages(void *p__map, void *addr__ign, u32 page_cnt, int node_id, u64 flags)", Hooks: HookCommon, Func: kfuncArenaAlloc},
	{Name: "bpf_arena_free_pages", Decl: "void bpf_arena_free_pages(void *p__map, void *ptr__ign, u32 page_cnt)", Hooks: HookCommon, Func: kfuncArenaFree},
}
