//go:build ignore

// legacy_old_style.c is an object in the shape old toolchains and
// hand-written assembly leave, which libbpf's predecessors (samples/bpf's
// loader, iproute2's tc) load and cilium/ebpf v0.22.0 refuses:
//
//   - program symbols with neither .size nor .type (cilium/ebpf: "no
//     instructions found for symbol"), two of them in one section;
//   - the old section names xdp_prog, socket1 and kprobe/sys_write;
//   - iproute2 struct bpf_elf_map definitions shorter than the current 36
//     bytes: 28 bytes in "maps" (older Cilium objects: id and pinning, no
//     inner_id/inner_idx; "totals" is pinned PIN_GLOBAL_NS), and, in a
//     section of its own, 32 bytes (no inner_idx).
//
// Maps:
//   - counts (maps, 28 bytes: ARRAY, u32 -> u64, 4 entries, id 1)
//   - totals (maps, 28 bytes: HASH, u32 -> u64, 8 entries, id 2, pinning 2)
//   - mid (maps32, 32 bytes: ARRAY, u32 -> u32, 2 entries, id 3, pinning 0,
//     inner_id 0)
//
// Behaviour:
//   - xdp_count (xdp_prog): counts[0] += 1, returns XDP_PASS (2).
//   - xdp_drop (xdp_prog, after xdp_count): returns XDP_DROP (1).
//   - sock_mid (socket1): returns mid[1] (0 on empty maps).
//   - kp (kprobe/sys_write): returns 0.
//
// Expected: xdp_count returns 2 and leaves counts[0] = 1; xdp_drop 1;
// with mid = {1: 9} sock_mid returns 9.
asm(
"	.pushsection maps,\"aw\",@progbits\n"
"	.p2align 2\n"
"	.globl counts\n"
"counts:\n"
"	.long 2, 4, 8, 4, 0, 1, 0\n"
"	.globl totals\n"
"totals:\n"
"	.long 1, 4, 8, 8, 0, 2, 2\n"
"	.popsection\n"
"	.pushsection maps32,\"aw\",@progbits\n"
"	.p2align 2\n"
"	.globl mid\n"
"mid:\n"
"	.long 2, 4, 4, 2, 0, 3, 0, 0\n"
"	.popsection\n"
"	.pushsection xdp_prog,\"ax\",@progbits\n"
"	.globl xdp_count\n"
"xdp_count:\n"
"	r1 = 0\n"
"	*(u32 *)(r10 - 4) = r1\n"
"	r2 = r10\n"
"	r2 += -4\n"
"	r1 = counts ll\n"
"	call 1\n"
"	if r0 == 0 goto +2\n"
"	r1 = 1\n"
"	lock *(u64 *)(r0 + 0) += r1\n"
"	r0 = 2\n"
"	exit\n"
"	.globl xdp_drop\n"
"xdp_drop:\n"
"	r0 = 1\n"
"	exit\n"
"	.popsection\n"
"	.pushsection socket1,\"ax\",@progbits\n"
"	.globl sock_mid\n"
"sock_mid:\n"
"	r1 = 1\n"
"	*(u32 *)(r10 - 4) = r1\n"
"	r2 = r10\n"
"	r2 += -4\n"
"	r1 = mid ll\n"
"	call 1\n"
"	r1 = r0\n"
"	r0 = 0\n"
"	if r1 == 0 goto +1\n"
"	r0 = *(u32 *)(r1 + 0)\n"
"	exit\n"
"	.popsection\n"
"	.pushsection \"kprobe/sys_write\",\"ax\",@progbits\n"
"	.globl kp\n"
"kp:\n"
"	r0 = 0\n"
"	exit\n"
"	.popsection\n"
"	.pushsection license,\"aw\",@progbits\n"
"	.globl _license\n"
"_license:\n"
"	.asciz \"GPL\"\n"
"	.popsection\n");
