package isa

import (
	"errors"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"
)

// ins builds an instruction tersely for test tables.
func ins(op uint8, dst, src Register, off int16, imm int32) Instruction {
	return Instruction{Op: op, Dst: dst, Src: src, Off: off, Imm: imm}
}

func ldImm64(dst Register, src uint8, v uint64) []Instruction {
	pair := LdImm64(dst, src, v)
	return pair[:]
}

func TestFormat(t *testing.T) {
	tests := []struct {
		want string
		prog []Instruction
	}{
		// Loads and stores.
		{"r1 = *(u32 *)(r2 +4)", []Instruction{ins(ClassLDX|ModeMEM|SizeW, 1, 2, 4, 0)}},
		{"r1 = *(u8 *)(r2 -1)", []Instruction{ins(ClassLDX|ModeMEM|SizeB, 1, 2, -1, 0)}},
		{"r1 = *(u16 *)(r2 +0)", []Instruction{ins(ClassLDX|ModeMEM|SizeH, 1, 2, 0, 0)}},
		{"r1 = *(u64 *)(r10 -8)", []Instruction{ins(ClassLDX|ModeMEM|SizeDW, 1, 10, -8, 0)}},
		{"r0 = *(s8 *)(r1 +0)", []Instruction{ins(ClassLDX|ModeMEMSX|SizeB, 0, 1, 0, 0)}},
		{"r0 = *(s16 *)(r1 +2)", []Instruction{ins(ClassLDX|ModeMEMSX|SizeH, 0, 1, 2, 0)}},
		{"r0 = *(s32 *)(r1 -4)", []Instruction{ins(ClassLDX|ModeMEMSX|SizeW, 0, 1, -4, 0)}},
		{"*(u64 *)(r10 -8) = r1", []Instruction{ins(ClassSTX|ModeMEM|SizeDW, 10, 1, -8, 0)}},
		{"*(u8 *)(r1 +32767) = r2", []Instruction{ins(ClassSTX|ModeMEM|SizeB, 1, 2, math.MaxInt16, 0)}},
		{"*(u32 *)(r10 -4) = 5", []Instruction{ins(ClassST|ModeMEM|SizeW, 10, 0, -4, 5)}},
		{"*(u16 *)(r10 -32768) = -1", []Instruction{ins(ClassST|ModeMEM|SizeH, 10, 0, math.MinInt16, -1)}},
		{"r0 = *(u8 *)skb[23]", []Instruction{ins(ClassLD|ModeABS|SizeB, 0, 0, 0, 23)}},
		{"r0 = *(u32 *)skb[-4]", []Instruction{ins(ClassLD|ModeABS|SizeW, 0, 0, 0, -4)}},
		{"r0 = *(u16 *)skb[r1 + 2]", []Instruction{ins(ClassLD|ModeIND|SizeH, 0, 1, 0, 2)}},

		// LD_IMM64 and its pseudo sources.
		{"r0 = 0x1122334455667788 ll", ldImm64(0, 0, 0x1122334455667788)},
		{"r9 = 0x0 ll", ldImm64(9, 0, 0)},
		{"r1 = 0xffffffffffffffff ll", ldImm64(1, 0, math.MaxUint64)},
		{"r1 = map[fd:5] ll", ldImm64(1, PseudoMapFD, 5)},
		{"r1 = map[fd:5]+7 ll", ldImm64(1, PseudoMapFD, 7<<32|5)},
		{"r2 = map_value[fd:3]+16 ll", ldImm64(2, PseudoMapValue, 16<<32|3)},
		{"r2 = map_value[fd:3]+0 ll", ldImm64(2, PseudoMapValue, 3)},
		{"r3 = btf_id[1234] ll", ldImm64(3, PseudoBTFID, 1234)},
		{"r3 = btf_id[1234]+9 ll", ldImm64(3, PseudoBTFID, 9<<32|1234)},
		{"r4 = subprog[+5] ll", ldImm64(4, PseudoFunc, 5)},
		{"r4 = subprog[-3] ll", ldImm64(4, PseudoFunc, uint64(uint32(0xfffffffd)))},
		{"r5 = map[idx:0] ll", ldImm64(5, PseudoMapIdx, 0)},
		{"r6 = map_value[idx:2]+4294967295 ll", ldImm64(6, PseudoMapIdxValue, 0xffffffff<<32|2)},

		// ALU.
		{"r0 = 0", []Instruction{ins(ClassALU64|ALUMov|SrcK, 0, 0, 0, 0)}},
		{"r0 = 1", []Instruction{ins(ClassALU64|ALUMov|SrcK, 0, 0, 0, 1)}},
		{"w0 = 1", []Instruction{ins(ClassALU|ALUMov|SrcK, 0, 0, 0, 1)}},
		{"w0 = -1985229329", []Instruction{ins(ClassALU|ALUMov|SrcK, 0, 0, 0, int32(-0x76543211))}},
		{"r1 = r2", []Instruction{ins(ClassALU64|ALUMov|SrcX, 1, 2, 0, 0)}},
		{"w1 += w2", []Instruction{ins(ClassALU|ALUAdd|SrcX, 1, 2, 0, 0)}},
		{"r1 -= 7", []Instruction{ins(ClassALU64|ALUSub|SrcK, 1, 0, 0, 7)}},
		{"r1 *= r3", []Instruction{ins(ClassALU64|ALUMul|SrcX, 1, 3, 0, 0)}},
		{"r1 /= 3", []Instruction{ins(ClassALU64|ALUDiv|SrcK, 1, 0, 0, 3)}},
		{"w1 |= -1", []Instruction{ins(ClassALU|ALUOr|SrcK, 1, 0, 0, -1)}},
		{"r1 &= r2", []Instruction{ins(ClassALU64|ALUAnd|SrcX, 1, 2, 0, 0)}},
		{"r1 <<= 3", []Instruction{ins(ClassALU64|ALULsh|SrcK, 1, 0, 0, 3)}},
		{"w1 >>= w4", []Instruction{ins(ClassALU|ALURsh|SrcX, 1, 4, 0, 0)}},
		{"r1 s>>= 3", []Instruction{ins(ClassALU64|ALUArsh|SrcK, 1, 0, 0, 3)}},
		{"r1 %= r2", []Instruction{ins(ClassALU64|ALUMod|SrcX, 1, 2, 0, 0)}},
		{"r1 ^= 255", []Instruction{ins(ClassALU64|ALUXor|SrcK, 1, 0, 0, 255)}},
		{"r1 = -r1", []Instruction{ins(ClassALU64|ALUNeg, 1, 0, 0, 0)}},
		{"w1 = -w1", []Instruction{ins(ClassALU|ALUNeg, 1, 0, 0, 0)}},
		{"r1 = (s8)r2", []Instruction{ins(ClassALU64|ALUMov|SrcX, 1, 2, 8, 0)}},
		{"r1 = (s32)r2", []Instruction{ins(ClassALU64|ALUMov|SrcX, 1, 2, 32, 0)}},
		{"w1 = (s16)w2", []Instruction{ins(ClassALU|ALUMov|SrcX, 1, 2, 16, 0)}},
		{"r1 s/= r2", []Instruction{ins(ClassALU64|ALUDiv|SrcX, 1, 2, 1, 0)}},
		{"w1 s/= -2", []Instruction{ins(ClassALU|ALUDiv|SrcK, 1, 0, 1, -2)}},
		{"r1 s%= 3", []Instruction{ins(ClassALU64|ALUMod|SrcK, 1, 0, 1, 3)}},
		{"r1 = be16 r1", []Instruction{ins(ClassALU|ALUEnd|EndToBE, 1, 0, 0, 16)}},
		{"r1 = le32 r1", []Instruction{ins(ClassALU|ALUEnd|EndToLE, 1, 0, 0, 32)}},
		{"r1 = be64 r1", []Instruction{ins(ClassALU|ALUEnd|EndToBE, 1, 0, 0, 64)}},
		{"r1 = bswap64 r1", []Instruction{ins(ClassALU64|ALUEnd, 1, 0, 0, 64)}},
		{"r1 = bswap16 r1", []Instruction{ins(ClassALU64|ALUEnd, 1, 0, 0, 16)}},
		{"r1 = addr_space_cast(r2, 0, 1)", []Instruction{ins(ClassALU64|ALUMov|SrcX, 1, 2, 1, 1)}},
		{"r1 = addr_space_cast(r2, 1, 0)", []Instruction{ins(ClassALU64|ALUMov|SrcX, 1, 2, 1, 1<<16)}},

		// Atomics.
		{"lock *(u64 *)(r10 -8) += r1", []Instruction{ins(ClassSTX|ModeATOMIC|SizeDW, 10, 1, -8, AtomicAdd)}},
		{"lock *(u32 *)(r10 -4) += r1", []Instruction{ins(ClassSTX|ModeATOMIC|SizeW, 10, 1, -4, AtomicAdd)}},
		{"lock *(u64 *)(r1 +0) |= r2", []Instruction{ins(ClassSTX|ModeATOMIC|SizeDW, 1, 2, 0, AtomicOr)}},
		{"lock *(u64 *)(r1 +0) &= r2", []Instruction{ins(ClassSTX|ModeATOMIC|SizeDW, 1, 2, 0, AtomicAnd)}},
		{"lock *(u32 *)(r1 +0) ^= r2", []Instruction{ins(ClassSTX|ModeATOMIC|SizeW, 1, 2, 0, AtomicXor)}},
		{"r1 = atomic64_fetch_add((u64 *)(r10 -8), r1)", []Instruction{ins(ClassSTX|ModeATOMIC|SizeDW, 10, 1, -8, AtomicAdd|AtomicFetch)}},
		{"r1 = atomic_fetch_add((u32 *)(r10 -4), r1)", []Instruction{ins(ClassSTX|ModeATOMIC|SizeW, 10, 1, -4, AtomicAdd|AtomicFetch)}},
		{"r3 = atomic64_fetch_or((u64 *)(r10 -8), r3)", []Instruction{ins(ClassSTX|ModeATOMIC|SizeDW, 10, 3, -8, AtomicOr|AtomicFetch)}},
		{"r3 = atomic_fetch_and((u32 *)(r10 -8), r3)", []Instruction{ins(ClassSTX|ModeATOMIC|SizeW, 10, 3, -8, AtomicAnd|AtomicFetch)}},
		{"r3 = atomic64_fetch_xor((u64 *)(r10 -8), r3)", []Instruction{ins(ClassSTX|ModeATOMIC|SizeDW, 10, 3, -8, AtomicXor|AtomicFetch)}},
		{"r0 = atomic64_cmpxchg((u64 *)(r10 -8), r0, r1)", []Instruction{ins(ClassSTX|ModeATOMIC|SizeDW, 10, 1, -8, AtomicCmpXchg)}},
		{"r0 = atomic_cmpxchg((u32 *)(r10 -8), r0, r1)", []Instruction{ins(ClassSTX|ModeATOMIC|SizeW, 10, 1, -8, AtomicCmpXchg)}},
		{"r1 = atomic64_xchg((u64 *)(r10 -8), r1)", []Instruction{ins(ClassSTX|ModeATOMIC|SizeDW, 10, 1, -8, AtomicXchg)}},
		{"r1 = atomic_xchg((u32 *)(r10 -8), r1)", []Instruction{ins(ClassSTX|ModeATOMIC|SizeW, 10, 1, -8, AtomicXchg)}},
		{"r0 = load_acquire((u64 *)(r1 +0))", []Instruction{ins(ClassSTX|ModeATOMIC|SizeDW, 0, 1, 0, AtomicLoadAcquire)}},
		{"r0 = load_acquire((u8 *)(r1 -3))", []Instruction{ins(ClassSTX|ModeATOMIC|SizeB, 0, 1, -3, AtomicLoadAcquire)}},
		{"store_release((u64 *)(r1 +0), r2)", []Instruction{ins(ClassSTX|ModeATOMIC|SizeDW, 1, 2, 0, AtomicStoreRelease)}},
		{"store_release((u16 *)(r1 +8), r2)", []Instruction{ins(ClassSTX|ModeATOMIC|SizeH, 1, 2, 8, AtomicStoreRelease)}},

		// Jumps and calls.
		{"if r1 > 0x5 goto pc+3", []Instruction{ins(ClassJMP|JumpGT|SrcK, 1, 0, 3, 5)}},
		{"if r1 == 0xffffffff goto pc+0", []Instruction{ins(ClassJMP|JumpEQ|SrcK, 1, 0, 0, -1)}},
		{"if w1 s< w2 goto pc-7", []Instruction{ins(ClassJMP32|JumpSLT|SrcX, 1, 2, -7, 0)}},
		{"if r1 & r2 goto pc+1", []Instruction{ins(ClassJMP|JumpSet|SrcX, 1, 2, 1, 0)}},
		{"if r1 != 0x0 goto pc+1", []Instruction{ins(ClassJMP|JumpNE|SrcK, 1, 0, 1, 0)}},
		{"if w3 s>= 0x80000000 goto pc+1", []Instruction{ins(ClassJMP32|JumpSGE|SrcK, 3, 0, 1, math.MinInt32)}},
		{"if r1 >= r2 goto pc+1", []Instruction{ins(ClassJMP|JumpGE|SrcX, 1, 2, 1, 0)}},
		{"if r1 <= r2 goto pc+1", []Instruction{ins(ClassJMP|JumpLE|SrcX, 1, 2, 1, 0)}},
		{"if r1 < r2 goto pc+1", []Instruction{ins(ClassJMP|JumpLT|SrcX, 1, 2, 1, 0)}},
		{"if r1 s> r2 goto pc+1", []Instruction{ins(ClassJMP|JumpSGT|SrcX, 1, 2, 1, 0)}},
		{"if r1 s<= r2 goto pc+1", []Instruction{ins(ClassJMP|JumpSLE|SrcX, 1, 2, 1, 0)}},
		{"goto pc+2", []Instruction{ins(OpJA, 0, 0, 2, 0)}},
		{"goto pc-1", []Instruction{ins(OpJA, 0, 0, -1, 0)}},
		{"gotol pc+70000", []Instruction{ins(OpJA32, 0, 0, 0, 70000)}},
		{"may_goto pc+2", []Instruction{ins(OpMayGoto, 0, 0, 2, 0)}},
		{"call bpf_map_lookup_elem#1", []Instruction{ins(OpCall, 0, 0, 0, 1)}},
		{"call bpf_cgrp_storage_delete#211", []Instruction{ins(OpCall, 0, 0, 0, 211)}},
		{"call unknown#212", []Instruction{ins(OpCall, 0, 0, 0, 212)}},
		{"call unknown#-1", []Instruction{ins(OpCall, 0, 0, 0, -1)}},
		{"call pc+5", []Instruction{ins(OpCall, 0, Register(CallLocal), 0, 5)}},
		{"call pc-3", []Instruction{ins(OpCall, 0, Register(CallLocal), 0, -3)}},
		{"call kernel-function#123", []Instruction{ins(OpCall, 0, Register(CallKfunc), 0, 123)}},
		{"callx r2", []Instruction{ins(OpCallX, 2, 0, 0, 0)}},
		{"exit", []Instruction{ins(OpExit, 0, 0, 0, 0)}},

		// Undefined opcodes print the kernel's BUG text.
		{"BUG_alu_e4", []Instruction{ins(ClassALU|0xe0, 1, 0, 0, 0)}},
		{"BUG_alu64_df", []Instruction{ins(ClassALU64|ALUEnd|SrcX, 1, 0, 0, 16)}},
		{"BUG_jmp_f5", []Instruction{ins(ClassJMP|0xf0, 1, 0, 0, 0)}},
		{"BUG_jmp_96", []Instruction{ins(ClassJMP32|JumpExit, 0, 0, 0, 0)}},
		{"BUG_jmp_86", []Instruction{ins(ClassJMP32|JumpCall, 0, 0, 0, 0)}},
		{"BUG_jmp_0d", []Instruction{ins(ClassJMP|JumpA|SrcX, 0, 0, 0, 0)}},
		{"BUG_jmp_ed", []Instruction{ins(ClassJMP|JumpCond|SrcX, 0, 0, 0, 0)}},
		{"BUG_ld_00", []Instruction{ins(ClassLD, 0, 0, 0, 0)}},
		{"BUG_ld_60", []Instruction{ins(ClassLD|ModeMEM, 0, 0, 0, 0)}},
		{"BUG_ld_18 truncated", []Instruction{ins(OpLdImm64, 0, 0, 0, 0)}},
		{"BUG_ld_18 src r7", []Instruction{ins(OpLdImm64, 0, 7, 0, 0), {}}},
		{"BUG_ldx_99", []Instruction{ins(ClassLDX|ModeMEMSX|SizeDW, 0, 0, 0, 0)}},
		{"r0 = *(probe u32 *)(r0 +0)", []Instruction{ins(ClassLDX|ModeProbe, 0, 0, 0, 0)}},
		{"r0 = *(probe s16 *)(r0 +0)", []Instruction{ins(ClassLDX|ModeProbeSX|SizeH, 0, 0, 0, 0)}},
		{"BUG_ldx_59", []Instruction{ins(ClassLDX|ModeProbeSX|SizeDW, 0, 0, 0, 0)}},
		{"nospec ; speculation barrier", []Instruction{ins(OpNospec, 0, 0, 0, 0)}},
		{"BUG_st_c2", []Instruction{ins(ClassST|ModeATOMIC, 1, 0, 0, 0)}},
		{"r1 += mask(r2, 31)", []Instruction{ins(OpMaskedALU, 1, 2, 0, 31)}},
		{"r1 = r2 - mask(-r1, 8)", []Instruction{ins(OpMaskedALU, 1, 2, MaskOffDst|MaskSub|MaskNeg, 8)}},
		{"BUG_43", []Instruction{ins(ClassSTX|ModeIND, 0, 0, 0, 0)}},
		{"BUG_db", []Instruction{ins(ClassSTX|ModeATOMIC|SizeDW, 0, 0, 0, 0x02)}},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := Format(tt.prog, 0, nil); got != tt.want {
				t.Errorf("Format(%+v) = %q, want %q", tt.prog[0], got, tt.want)
			}
		})
	}
}

func TestFormatSlots(t *testing.T) {
	lo := LdImm64(1, 0, 0x18)
	// Slot 2 is an LD_IMM64 whose upper half, slot 3, has opcode 0x18 too;
	// slot 4 still starts an instruction since the 0x18 slots pair up.
	prog := []Instruction{lo[0], lo[1], ins(OpLdImm64, 2, 0, 0, 7), {Op: OpLdImm64, Imm: 0x18}, ins(OpExit, 0, 0, 0, 0)}
	tests := []struct {
		pc   int
		want string
	}{
		{-1, ""},
		{0, "r1 = 0x18 ll"},
		{1, ""},
		{2, "r2 = 0x1800000007 ll"}, // the second slot's opcode is ignored
		{3, ""},
		{4, "exit"},
		{5, ""},
	}
	for _, tt := range tests {
		if got := Format(prog, tt.pc, nil); got != tt.want {
			t.Errorf("Format(prog, %d) = %q, want %q", tt.pc, got, tt.want)
		}
	}
}

func TestFormatHelperNamer(t *testing.T) {
	namer := func(id int32) string {
		if id == 1 {
			return "my_helper"
		}
		return ""
	}
	tests := []struct {
		ins  Instruction
		want string
	}{
		{ins(OpCall, 0, 0, 0, 1), "call my_helper#1"},
		{ins(OpCall, 0, 0, 0, 2), "call unknown#2"},
		// Local calls and kfuncs do not consult the namer.
		{ins(OpCall, 0, Register(CallLocal), 0, 1), "call pc+1"},
		{ins(OpCall, 0, Register(CallKfunc), 0, 99), "call kernel-function#99"},
		// bpfvm's kfuncs print by name, as the kernel's log does.
		{ins(OpCall, 0, Register(CallKfunc), 0, KfuncIterNumNew), "call bpf_iter_num_new#1"},
	}
	for _, tt := range tests {
		if got := Format([]Instruction{tt.ins}, 0, namer); got != tt.want {
			t.Errorf("Format(%+v) = %q, want %q", tt.ins, got, tt.want)
		}
	}
}

func TestHelperName(t *testing.T) {
	tests := []struct {
		id   int32
		want string
	}{
		{-1, ""},
		{0, "bpf_unspec"},
		{1, "bpf_map_lookup_elem"},
		{2, "bpf_map_update_elem"},
		{5, "bpf_ktime_get_ns"},
		{6, "bpf_trace_printk"},
		{12, "bpf_tail_call"},
		{130, "bpf_ringbuf_output"},
		{209, "bpf_user_ringbuf_drain"},
		{210, "bpf_cgrp_storage_get"},
		{211, "bpf_cgrp_storage_delete"},
		{212, ""},
		{math.MaxInt32, ""},
		{math.MinInt32, ""},
	}
	for _, tt := range tests {
		if got := HelperName(tt.id); got != tt.want {
			t.Errorf("HelperName(%d) = %q, want %q", tt.id, got, tt.want)
		}
	}
	for id := range int32(len(helperNames)) {
		if got, ok := HelperID(HelperName(id)); !ok || got != id {
			t.Errorf("HelperID(%q) = %d, %v, want %d", HelperName(id), got, ok, id)
		}
	}
	for _, name := range []string{"", "map_lookup_elem", "bpf_nope"} {
		if id, ok := HelperID(name); ok {
			t.Errorf("HelperID(%q) = %d, want not found", name, id)
		}
	}
}

// TestHelperTableMatchesHeader checks the generated table against the
// installed UAPI header, which may be older than the table but not newer.
func TestHelperTableMatchesHeader(t *testing.T) {
	src, err := os.ReadFile("/usr/include/linux/bpf.h")
	if err != nil {
		t.Skip("no linux/bpf.h:", err)
	}
	start := strings.Index(string(src), "#define __BPF_FUNC_MAPPER(FN")
	if start < 0 {
		t.Fatal("no __BPF_FUNC_MAPPER in linux/bpf.h")
	}
	// The macro runs to the first line without a continuation backslash.
	var body strings.Builder
	for _, line := range strings.Split(string(src[start:]), "\n") {
		body.WriteString(line + "\n")
		if !strings.HasSuffix(strings.TrimSpace(line), "\\") {
			break
		}
	}
	names := regexp.MustCompile(`\bFN\(\s*(\w+)`).FindAllStringSubmatch(body.String(), -1)
	if len(names) < 200 {
		t.Fatalf("found only %d helpers in linux/bpf.h", len(names))
	}
	if len(names) > len(helperNames) {
		t.Errorf("linux/bpf.h has %d helpers, the table %d: run go generate", len(names), len(helperNames))
	}
	for id, m := range names {
		if id < len(helperNames) && helperNames[id] != "bpf_"+m[1] {
			t.Errorf("helper %d: table has %q, header bpf_%s", id, helperNames[id], m[1])
		}
	}
}

func TestDump(t *testing.T) {
	lo := LdImm64(1, PseudoMapFD, 4)
	prog := []Instruction{
		ins(ClassALU64|ALUMov|SrcK, 0, 0, 0, 0),
		lo[0], lo[1],
		ins(OpCall, 0, 0, 0, 1),
		ins(ClassJMP|JumpEQ|SrcK, 0, 0, 1, 0),
		ins(ClassLDX|ModeMEM|SizeDW, 0, 0, 0, 0),
		ins(OpExit, 0, 0, 0, 0),
	}
	want := `0: (b7) r0 = 0
1: (18) r1 = map[fd:4] ll
3: (85) call bpf_map_lookup_elem#1
4: (15) if r0 == 0x0 goto pc+1
5: (79) r0 = *(u64 *)(r0 +0)
6: (95) exit
`
	var b strings.Builder
	if err := Dump(&b, prog, nil); err != nil {
		t.Fatal(err)
	}
	if b.String() != want {
		t.Errorf("Dump:\n%s\nwant:\n%s", b.String(), want)
	}

	// A truncated LD_IMM64 still gets a line.
	b.Reset()
	if err := Dump(&b, []Instruction{lo[0]}, nil); err != nil || b.String() != "0: (18) BUG_ld_18 truncated\n" {
		t.Errorf("Dump(truncated) = %q, %v", b.String(), err)
	}

	errBroken := errors.New("broken")
	if err := Dump(failingWriter{errBroken}, prog, nil); !errors.Is(err, errBroken) {
		t.Errorf("Dump to a failing writer: %v, want %v", err, errBroken)
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

func FuzzDecode(f *testing.F) {
	f.Add([]byte{0xb7, 0, 0, 0, 0, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0})
	f.Add(EncodeProgram(ldImm64(1, PseudoMapValue, 1<<32|3)))
	f.Add([]byte{0x18, 0x18, 0x18, 0x18, 0x18, 0x18, 0x18, 0x18, 0x18})
	// Valid programs, so that mutations explore the round trip too.
	for _, src := range []string{
		"r1 = map_value[fd:3]+8 ll\nif r1 s> 0x5 goto pc+1\nr0 = atomic64_cmpxchg((u64 *)(r10 -8), r0, r1)\nexit",
		"call pc+2\nr0 = *(s16 *)(r1 -2)\nexit\nlock *(u32 *)(r10 -4) ^= r1\ngotol pc-2",
		"r0 = *(u16 *)skb[r1 + 2]\nw1 = (s8)w2\nr1 = be64 r1\nmay_goto pc+0\ncall bpf_ktime_get_ns#5\nexit",
	} {
		prog, err := Assemble(src)
		if err != nil || Validate(prog) != nil {
			f.Fatalf("seed %q: %v, %v", src, err, Validate(prog))
		}
		f.Add(EncodeProgram(prog))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		b = b[:len(b)/InstructionSize*InstructionSize]
		prog, err := DecodeProgram(b)
		if err != nil {
			t.Fatal(err)
		}
		valid := Validate(prog) == nil
		for pc := -1; pc <= len(prog); pc++ {
			Format(prog, pc, nil)
		}
		var dump strings.Builder
		if err := Dump(&dump, prog, nil); err != nil {
			t.Fatal(err)
		}
		if !valid {
			return
		}
		// Every valid program reads back from its dump.
		got, err := Assemble(dump.String())
		if err != nil {
			t.Fatalf("Assemble(Dump(%v)): %v\n%s", prog, err, dump.String())
		}
		if !equalPrograms(got, prog) {
			t.Fatalf("Assemble(Dump(prog)) = %v, want %v\n%s", got, prog, dump.String())
		}
	})
}

func equalPrograms(a, b []Instruction) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
