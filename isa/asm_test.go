package isa

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestAssembleKernelSyntax(t *testing.T) {
	tests := []struct {
		src  string
		want []Instruction
	}{
		// Spellings that Format does not print but LLVM, bpftool or people do.
		{"r1 = *(u32 *)(r2 + 4)", []Instruction{ins(ClassLDX|ModeMEM|SizeW, 1, 2, 4, 0)}},
		{"r1 = *(u32 *)(r2+0x10)", []Instruction{ins(ClassLDX|ModeMEM|SizeW, 1, 2, 16, 0)}},
		{"r1 = *(u32 *)(r2)", []Instruction{ins(ClassLDX|ModeMEM|SizeW, 1, 2, 0, 0)}},
		{"w1 = *(u32 *)(r2 - 8)", []Instruction{ins(ClassLDX|ModeMEM|SizeW, 1, 2, -8, 0)}},
		{"*(u32 *)(r10 - 4) = 0x80000001", []Instruction{ins(ClassST|ModeMEM|SizeW, 10, 0, -4, math.MinInt32+1)}},
		{"r0 = -5", []Instruction{ins(ClassALU64|ALUMov, 0, 0, 0, -5)}},
		{"r0 = - 5", []Instruction{ins(ClassALU64|ALUMov, 0, 0, 0, -5)}},
		{"w0 = 0x89abcdef", []Instruction{ins(ClassALU|ALUMov, 0, 0, 0, int32(-0x76543211))}},
		{"r0 = 4294967295", []Instruction{ins(ClassALU64|ALUMov, 0, 0, 0, -1)}},
		{"r0 = -2147483648", []Instruction{ins(ClassALU64|ALUMov, 0, 0, 0, math.MinInt32)}},
		{"r1 += -1", []Instruction{ins(ClassALU64|ALUAdd, 1, 0, 0, -1)}},
		{"r0 = 5 ll", ldImm64(0, 0, 5)},
		{"r0 = -1 ll", ldImm64(0, 0, math.MaxUint64)},
		{"r0 = 18446744073709551615 ll", ldImm64(0, 0, math.MaxUint64)},
		{"r0 = -9223372036854775808 ll", ldImm64(0, 0, 1<<63)},
		{"r1 = map[fd:3][0]+8 ll", ldImm64(1, PseudoMapValue, 8<<32|3)},
		{"r1 = map[idx:3][0]+8", ldImm64(1, PseudoMapIdxValue, 8<<32|3)},
		{"r1 = map_value[fd:3]", ldImm64(1, PseudoMapValue, 3)},
		{"r1 = map[fd:3]", ldImm64(1, PseudoMapFD, 3)},
		{"w1 = be16 w1", []Instruction{ins(ClassALU|ALUEnd|EndToBE, 1, 0, 0, 16)}},
		{"w1 = atomic_fetch_add((u32 *)(r10 -4), w1)", []Instruction{ins(ClassSTX|ModeATOMIC|SizeW, 10, 1, -4, AtomicAdd|AtomicFetch)}},
		{"r1 = atomic_fetch_add((u8 *)(r10 -4), r1)", []Instruction{ins(ClassSTX|ModeATOMIC|SizeB, 10, 1, -4, AtomicAdd|AtomicFetch)}},
		{"r0 = *(u32 *)skb[r2 - 3]", []Instruction{ins(ClassLD|ModeIND|SizeW, 0, 2, 0, -3)}},
		{"r0 = *(u32 *)skb[r2 + -3]", []Instruction{ins(ClassLD|ModeIND|SizeW, 0, 2, 0, -3)}},
		{"if r1 > 5 goto +3", []Instruction{ins(ClassJMP|JumpGT, 1, 0, 3, 5)}},
		{"if w1 == -1 goto -2", []Instruction{ins(ClassJMP32|JumpEQ, 1, 0, -2, -1)}},
		{"goto +0", []Instruction{ins(OpJA, 0, 0, 0, 0)}},
		{"gotol -70000", []Instruction{ins(OpJA32, 0, 0, 0, -70000)}},
		{"may_goto +2", []Instruction{ins(OpMayGoto, 0, 0, 2, 0)}},
		{"call 1", []Instruction{ins(OpCall, 0, 0, 0, 1)}},
		{"call bpf_map_lookup_elem", []Instruction{ins(OpCall, 0, 0, 0, 1)}},
		{"call bpf_map_update_elem#1", []Instruction{ins(OpCall, 0, 0, 0, 1)}}, // the id wins
		{"call unknown#99999", []Instruction{ins(OpCall, 0, 0, 0, 99999)}},
		{"call r3", []Instruction{ins(OpCallX, 3, 0, 0, 0)}},
		{"exit  ", []Instruction{ins(OpExit, 0, 0, 0, 0)}},
		{"\texit\r", []Instruction{ins(OpExit, 0, 0, 0, 0)}},

		// Comments and log prefixes.
		{"r0 = 0 ; R0_w=0", []Instruction{ins(ClassALU64|ALUMov, 0, 0, 0, 0)}},
		{"r0 = 0 // zero", []Instruction{ins(ClassALU64|ALUMov, 0, 0, 0, 0)}},
		{"r0 = 0 # zero", []Instruction{ins(ClassALU64|ALUMov, 0, 0, 0, 0)}},
		{"# comment\n; comment\n\n// comment", nil},
		{"12: (b7) r0 = 0", []Instruction{ins(ClassALU64|ALUMov, 0, 0, 0, 0)}},
		{"   7: (85) call bpf_map_lookup_elem#1\t; R0=map_value_or_null", []Instruction{ins(OpCall, 0, 0, 0, 1)}},
		{"1: (18) r1 = 0x0", ldImm64(1, 0, 0)},                                 // verifier log LD_IMM64
		{"1: (18) r1 = 0xffff888100000000", ldImm64(1, 0, 0xffff888100000000)}, // ditto
		{"3: (18) r1 = map[fd:4] ll", ldImm64(1, PseudoMapFD, 4)},              // Dump
		{"0: (bf) r6 = r1\n1: (b7) r0 = 0\n2: (95) exit", []Instruction{ins(ClassALU64|ALUMov|SrcX, 6, 1, 0, 0), ins(ClassALU64|ALUMov, 0, 0, 0, 0), ins(OpExit, 0, 0, 0, 0)}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			got, err := Assemble(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if !equalPrograms(got, tt.want) {
				t.Errorf("Assemble(%q) =\n%v, want\n%v", tt.src, got, tt.want)
			}
		})
	}
}

// TestAssembleFormatted reads back every form of TestFormat.
func TestAssembleFormatted(t *testing.T) {
	for _, text := range []string{
		"r1 = *(u32 *)(r2 +4)", "*(u64 *)(r10 -8) = r1", "*(u32 *)(r10 -4) = 5",
		"if r1 > 0x5 goto pc+3", "if w1 s< w2 goto pc-7", "goto pc+2", "gotol pc+70000",
		"call bpf_map_lookup_elem#1", "call pc+5", "callx r2", "call kernel-function#123",
		"exit", "r0 = 0x1122334455667788 ll", "r1 = map[fd:5] ll", "r0 = 1", "w0 = 1",
		"w1 += w2", "r1 s>>= 3", "r1 = -r1", "w1 = -w1", "r1 = (s8)r2", "w1 = (s16)w2",
		"r1 s/= r2", "r1 s%= 3", "r1 = be16 r1", "r1 = le32 r1", "r1 = bswap64 r1",
		"r0 = *(s8 *)(r1 +0)", "lock *(u64 *)(r10 -8) += r1",
		"r1 = atomic64_fetch_add((u64 *)(r10 -8), r1)",
		"r0 = atomic64_cmpxchg((u64 *)(r10 -8), r0, r1)",
		"r1 = atomic64_xchg((u64 *)(r10 -8), r1)", "lock *(u32 *)(r10 -4) |= r1",
		"r1 = atomic_fetch_add((u32 *)(r10 -4), r1)", "r0 = load_acquire((u64 *)(r1 +0))",
		"store_release((u64 *)(r1 +0), r2)", "r0 = *(u8 *)skb[23]", "r0 = *(u16 *)skb[r1 + 2]",
		"may_goto pc+2", "r1 = addr_space_cast(r2, 0, 1)", "r2 = map_value[fd:3]+16 ll",
		"r3 = btf_id[1234] ll", "r4 = subprog[-3] ll", "r5 = map[idx:0] ll", "r6 = map_value[idx:2]+8 ll",
	} {
		prog, err := Assemble(text)
		if err != nil {
			t.Errorf("Assemble(%q): %v", text, err)
			continue
		}
		if got := Format(prog, 0, nil); got != text {
			t.Errorf("Format(Assemble(%q)) = %q", text, got)
		}
	}
}

func TestAssembleConformanceDialect(t *testing.T) {
	tests := []struct {
		src  string
		want []Instruction
	}{
		{"mov32 %r0, 0", []Instruction{ins(ClassALU|ALUMov, 0, 0, 0, 0)}},
		{"mov32 %r0, 0x89abcdef", []Instruction{ins(ClassALU|ALUMov, 0, 0, 0, int32(-0x76543211))}},
		{"mov %r1, -1", []Instruction{ins(ClassALU64|ALUMov, 1, 0, 0, -1)}},
		{"add %r0, %r1", []Instruction{ins(ClassALU64|ALUAdd|SrcX, 0, 1, 0, 0)}},
		{"add64 %r0, 1", []Instruction{ins(ClassALU64|ALUAdd, 0, 0, 0, 1)}},
		{"arsh32 %r0, %r1", []Instruction{ins(ClassALU|ALUArsh|SrcX, 0, 1, 0, 0)}},
		{"sdiv %r0, -4", []Instruction{ins(ClassALU64|ALUDiv, 0, 0, 1, -4)}},
		{"smod32 %r1, %r2", []Instruction{ins(ClassALU|ALUMod|SrcX, 1, 2, 1, 0)}},
		{"neg %r2", []Instruction{ins(ClassALU64|ALUNeg, 2, 0, 0, 0)}},
		{"neg32 %r2", []Instruction{ins(ClassALU|ALUNeg, 2, 0, 0, 0)}},
		{"movsx832 %r2, %r1", []Instruction{ins(ClassALU|ALUMov|SrcX, 2, 1, 8, 0)}},
		{"movsx864 %r6, %r5", []Instruction{ins(ClassALU64|ALUMov|SrcX, 6, 5, 8, 0)}},
		{"movsx1632 %r4, %r3", []Instruction{ins(ClassALU|ALUMov|SrcX, 4, 3, 16, 0)}},
		{"movsx1664 %r8, %r7", []Instruction{ins(ClassALU64|ALUMov|SrcX, 8, 7, 16, 0)}},
		{"movsx3264 %r0, %r9", []Instruction{ins(ClassALU64|ALUMov|SrcX, 0, 9, 32, 0)}},
		{"le16 %r0", []Instruction{ins(ClassALU|ALUEnd|EndToLE, 0, 0, 0, 16)}},
		{"be32 %r3", []Instruction{ins(ClassALU|ALUEnd|EndToBE, 3, 0, 0, 32)}},
		{"be64 %r0", []Instruction{ins(ClassALU|ALUEnd|EndToBE, 0, 0, 0, 64)}},
		{"bswap16 %r0", []Instruction{ins(ClassALU64|ALUEnd, 0, 0, 0, 16)}},
		{"swap64 %r0", []Instruction{ins(ClassALU64|ALUEnd, 0, 0, 0, 64)}},
		{"lddw %r0, 0x1122334455667788", ldImm64(0, 0, 0x1122334455667788)},
		{"lddw %r1, 0xFFFFFFFF80000000", ldImm64(1, 0, 0xffffffff80000000)},
		{"lddw %r7, 0", ldImm64(7, 0, 0)},
		{"lddw %r7, -2", ldImm64(7, 0, math.MaxUint64-1)},
		{"ldxw %r1, [%r2+4]", []Instruction{ins(ClassLDX|ModeMEM|SizeW, 1, 2, 4, 0)}},
		{"ldxb %r0, [%r1+0x2]", []Instruction{ins(ClassLDX|ModeMEM|SizeB, 0, 1, 2, 0)}},
		{"ldxh %r0, [%r1]", []Instruction{ins(ClassLDX|ModeMEM|SizeH, 0, 1, 0, 0)}},
		{"ldxdw %r0, [%r2-16]", []Instruction{ins(ClassLDX|ModeMEM|SizeDW, 0, 2, -16, 0)}},
		{"ldxsb %r0, [%r10-1]", []Instruction{ins(ClassLDX|ModeMEMSX|SizeB, 0, 10, -1, 0)}},
		{"ldxsh %r0, [%r10-2]", []Instruction{ins(ClassLDX|ModeMEMSX|SizeH, 0, 10, -2, 0)}},
		{"ldxsw %r0, [%r10-4]", []Instruction{ins(ClassLDX|ModeMEMSX|SizeW, 0, 10, -4, 0)}},
		{"stxdw [%r10-8], %r0", []Instruction{ins(ClassSTX|ModeMEM|SizeDW, 10, 0, -8, 0)}},
		{"stxb [%r0], %r1", []Instruction{ins(ClassSTX|ModeMEM|SizeB, 0, 1, 0, 0)}},
		{"stw [%r10-4], 1", []Instruction{ins(ClassST|ModeMEM|SizeW, 10, 0, -4, 1)}},
		{"sth [%r10-2], 0x8001", []Instruction{ins(ClassST|ModeMEM|SizeH, 10, 0, -2, 0x8001)}},
		{"stdw [%r10-8], 0x11223344", []Instruction{ins(ClassST|ModeMEM|SizeDW, 10, 0, -8, 0x11223344)}},
		{"ldabsw 4", []Instruction{ins(ClassLD|ModeABS|SizeW, 0, 0, 0, 4)}},
		{"ldabsb 0x10", []Instruction{ins(ClassLD|ModeABS|SizeB, 0, 0, 0, 16)}},
		{"ldindh %r1, 2", []Instruction{ins(ClassLD|ModeIND|SizeH, 0, 1, 0, 2)}},
		{"jgt %r1, 5, +3", []Instruction{ins(ClassJMP|JumpGT, 1, 0, 3, 5)}},
		{"jeq %r1, 0x80000000, +1", []Instruction{ins(ClassJMP|JumpEQ, 1, 0, 1, math.MinInt32)}},
		{"jsle32 %r1, %r2, -1", []Instruction{ins(ClassJMP32|JumpSLE|SrcX, 1, 2, -1, 0)}},
		{"jset32 %r1, 1, +0", []Instruction{ins(ClassJMP32|JumpSet, 1, 0, 0, 1)}},
		{"ja +1", []Instruction{ins(OpJA, 0, 0, 1, 0)}},
		{"ja32 -1", []Instruction{ins(OpJA32, 0, 0, 0, -1)}},
		{"call 5", []Instruction{ins(OpCall, 0, 0, 0, 5)}},
		{"call helper 5", []Instruction{ins(OpCall, 0, 0, 0, 5)}},
		{"call runtime 7", []Instruction{ins(OpCall, 0, Register(CallKfunc), 0, 7)}},
		{"call local +2", []Instruction{ins(OpCall, 0, Register(CallLocal), 0, 2)}},
		{"call %r2", []Instruction{ins(OpCallX, 2, 0, 0, 0)}},
		{"callx %r9", []Instruction{ins(OpCallX, 9, 0, 0, 0)}},
		{"exit", []Instruction{ins(OpExit, 0, 0, 0, 0)}},
		{"lock add [%r10-8], %r1", []Instruction{ins(ClassSTX|ModeATOMIC|SizeDW, 10, 1, -8, AtomicAdd)}},
		{"lock add32 [%r10-4], %r1", []Instruction{ins(ClassSTX|ModeATOMIC|SizeW, 10, 1, -4, AtomicAdd)}},
		{"lock or32 [%r10-4], %r1", []Instruction{ins(ClassSTX|ModeATOMIC|SizeW, 10, 1, -4, AtomicOr)}},
		{"lock and [%r10-8], %r1", []Instruction{ins(ClassSTX|ModeATOMIC|SizeDW, 10, 1, -8, AtomicAnd)}},
		{"lock xor [%r10-8], %r1", []Instruction{ins(ClassSTX|ModeATOMIC|SizeDW, 10, 1, -8, AtomicXor)}},
		{"lock fetch add32 [%r10-4], %r1", []Instruction{ins(ClassSTX|ModeATOMIC|SizeW, 10, 1, -4, AtomicAdd|AtomicFetch)}},
		{"lock fetch xor [%r10-8], %r3", []Instruction{ins(ClassSTX|ModeATOMIC|SizeDW, 10, 3, -8, AtomicXor|AtomicFetch)}},
		{"lock xchg [%r10-8], %r1", []Instruction{ins(ClassSTX|ModeATOMIC|SizeDW, 10, 1, -8, AtomicXchg)}},
		{"lock fetch xchg32 [%r10-8], %r1", []Instruction{ins(ClassSTX|ModeATOMIC|SizeW, 10, 1, -8, AtomicXchg)}},
		{"lock cmpxchg [%r10-8], %r1 ", []Instruction{ins(ClassSTX|ModeATOMIC|SizeDW, 10, 1, -8, AtomicCmpXchg)}},
		{"lock cmpxchg32 [%r10-8], %r1", []Instruction{ins(ClassSTX|ModeATOMIC|SizeW, 10, 1, -8, AtomicCmpXchg)}},
		{"jeq %r1, 0x80000000, +1 # Taken, sign extended", []Instruction{ins(ClassJMP|JumpEQ, 1, 0, 1, math.MinInt32)}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			got, err := Assemble(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if !equalPrograms(got, tt.want) {
				t.Errorf("Assemble(%q) =\n%v, want\n%v", tt.src, got, tt.want)
			}
		})
	}
}

func TestAssembleLabels(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []Instruction
	}{
		{"forward and backward", `
			start:
				r0 = 0
				if r1 > 5 goto out
				goto start
			out:
				exit`,
			[]Instruction{ins(ClassALU64|ALUMov, 0, 0, 0, 0), ins(ClassJMP|JumpGT, 1, 0, 1, 5), ins(OpJA, 0, 0, -3, 0), ins(OpExit, 0, 0, 0, 0)}},
		{"label on the instruction line", "top: r0 = 0\ngoto top\n",
			[]Instruction{ins(ClassALU64|ALUMov, 0, 0, 0, 0), ins(OpJA, 0, 0, -2, 0)}},
		{"offsets count ld_imm64 slots", "lddw %r0, 1\nja L\nlddw %r0, 2\nL:\nexit",
			append(append(ldImm64(0, 0, 1), ins(OpJA, 0, 0, 2, 0)), append(ldImm64(0, 0, 2), ins(OpExit, 0, 0, 0, 0))...)},
		{"conformance labels", "jne %r0, 15, failed\nexit\nfailed:\nja32 failed",
			[]Instruction{ins(ClassJMP|JumpNE, 0, 0, 1, 15), ins(OpExit, 0, 0, 0, 0), ins(OpJA32, 0, 0, 0, -1)}},
		{"gotol and may_goto", "gotol end\nmay_goto end\nend: exit",
			[]Instruction{ins(OpJA32, 0, 0, 0, 1), ins(OpMayGoto, 0, 0, 0, 0), ins(OpExit, 0, 0, 0, 0)}},
		{"bpf-to-bpf calls", "call f\ncall local f\nexit\nf:\nr0 = subprog[f] ll\nexit",
			append([]Instruction{ins(OpCall, 0, Register(CallLocal), 0, 2), ins(OpCall, 0, Register(CallLocal), 0, 1), ins(OpExit, 0, 0, 0, 0)},
				append(ldImm64(0, PseudoFunc, uint64(uint32(0xffffffff))), ins(OpExit, 0, 0, 0, 0))...)},
		{"a label shadows a helper", "call bpf_map_lookup_elem\nbpf_map_lookup_elem: exit",
			[]Instruction{ins(OpCall, 0, Register(CallLocal), 0, 0), ins(OpExit, 0, 0, 0, 0)}},
		{"implicit exit label", "ja exit\nr0 = 1\nexit\nexit",
			[]Instruction{ins(OpJA, 0, 0, 1, 0), ins(ClassALU64|ALUMov, 0, 0, 0, 1), ins(OpExit, 0, 0, 0, 0), ins(OpExit, 0, 0, 0, 0)}},
		{"explicit exit label wins", "ja exit\nexit\nexit:\nexit",
			[]Instruction{ins(OpJA, 0, 0, 1, 0), ins(OpExit, 0, 0, 0, 0), ins(OpExit, 0, 0, 0, 0)}},
		{"label at the end", "ja end\nend:",
			[]Instruction{ins(OpJA, 0, 0, 0, 0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Assemble(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if !equalPrograms(got, tt.want) {
				t.Errorf("Assemble =\n%v, want\n%v", got, tt.want)
			}
		})
	}
}

func TestAssembleErrors(t *testing.T) {
	far := "ja far\n" + strings.Repeat("exit\n", 40000) + "far: exit"
	tests := []struct {
		src  string
		want string // substring of the error
	}{
		{"r11 = 1", "line 1: invalid register \"r11\""},
		{"mov %r11, 1", "invalid register \"%r11\""},
		{"add %r1, %r15", "invalid register \"%r15\""},
		{"exit\n  w12 += w1", "line 2: invalid register \"w12\""},
		{"r1 = r99999999999999999999", "invalid register"},
		{"lock or [%r10-8]", "invalid number of operands for lock or"},
		{"lock", "invalid number of operands for lock"},
		{"lock fetch", "invalid number of operands for lock"},
		{"add %r0", "invalid number of operands for add: want 2, got 1"},
		{"exit %r0", "expected end of instruction"},
		{"neg %r0, %r1", "invalid number of operands for neg"},
		{"jeq %r0, 1", "invalid number of operands for jeq"},
		{"mov32 %r0, 0x100000000", "out of 32-bit range"},
		{"mov %r0, -2147483649", "out of 32-bit range"},
		{"r0 = 0x100000000", "add \"ll\""},
		{"lddw %r0, 0x10000000000000000", "out of range"},
		{"r0 = -9223372036854775809 ll", "out of 64-bit range"},
		{"ldxw %r0, [%r1+32768]", "out of 16-bit range"},
		{"stw [%r1-32769], 1", "out of 16-bit range"},
		{"ja +40000", "out of 16-bit range"},
		{"goto nowhere", "undefined label \"nowhere\""},
		{"call nowhere", "neither a label nor a helper"},
		{"call local nowhere", "undefined label \"nowhere\""},
		{far, "beyond a 16-bit offset"},
		{"a:\na:", "line 2: label \"a\" defined twice"},
		{"frobnicate %r0", "unknown instruction \"frobnicate\""},
		{"r1 = w2", "cannot assign w2 to r1"},
		{"w1 += r2", "mixed 32-bit and 64-bit"},
		{"if r1 > w2 goto +1", "cannot compare"},
		{"if r1 > 1 goto", "expected jump target"},
		{"if r1 ?? 1 goto +1", "comparison operator"},
		{"r1 = -r2", "must be the destination register"},
		{"r1 = -w1", "must be the destination register"},
		{"r1 = be16 r2", "must be the destination register"},
		{"r1 = atomic64_fetch_add((u64 *)(r10 -8), r2)", "must name one register"},
		{"r1 = atomic64_cmpxchg((u64 *)(r10 -8), r0, r2)", "cmpxchg writes r0"},
		{"r0 = atomic64_cmpxchg((u64 *)(r10 -8), r1, r2)", "must be the destination register"},
		{"r1 = atomic64_fetch_add((u32 *)(r10 -8), r1)", "atomic64_"},
		{"r1 = atomic_fetch_nand((u32 *)(r10 -8), r1)", "unknown atomic operation"},
		{"r1 = *(u128 *)(r2 +0)", "invalid access size"},
		{"*(s8 *)(r2 +0) = 1", "only valid for loads"},
		{"r1 = *(u8 *)skb[1]", "packet loads write r0"},
		{"r1 = map[id:5] ll", "loaded program"},
		{"r1 = map[fd:5]+-1 ll", "unsigned offset"},
		{"w1 = 5 ll", "32-bit register"},
		{"r1 = 5 lol", "unexpected \"lol\""},
		{"r1 = (s64)r2", "invalid sign-extension"},
		{"r1 = (s8)5", "expected register"},
		{"movsx864 %r0, 5", "needs a source register"},
		{"movsx32 %r0, %r1", "unknown instruction"},
		{"ldxsdw %r0, [%r1]", "unknown instruction"},
		{"r1 = addr_space_cast(r2, 0, 65536)", "address space"},
		{"ldxw %r0, %r1", "expected \"[\""},
		{"ldxw %r0, [%r1+4", "expected \"]\""},
		{"stw [%r1], %r2", "expected immediate"},
		{"call", "expected call target"},
		{"callx 5", "expected register"},
		{"call local", "expected jump target"},
		{"goto r1", "not a jump target"},
		{"0: r0 = 0", "malformed log prefix"},
		{"0: (b7)", "missing instruction"},
		{"0: (b4) r0 = 0", "does not match"},
		{"*", "expected \"(\""},
		{"r1 = ", "expected register, immediate or expression"},
		{"r1 == 1", "assignment operator"},
		{"r1 = frob(r2)", "unknown operation \"frob\""},
	}
	for _, tt := range tests {
		name := tt.src
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			prog, err := Assemble(tt.src)
			if err == nil {
				t.Fatalf("Assemble(%q) = %v, want error containing %q", tt.src, prog, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Assemble(%q): %v, want error containing %q", tt.src, err, tt.want)
			}
			var se *SyntaxError
			if !errors.As(err, &se) || se.Line < 1 {
				t.Errorf("error %v is not a *SyntaxError with a line", err)
			}
		})
	}
}

// validInstructions enumerates every opcode with representative field
// values and keeps each instruction, with its upper slot for LD_IMM64, that
// Validate accepts in a program followed by exit.
func validInstructions() [][]Instruction {
	regs := []Register{0, 1, 10}
	srcs := []Register{0, 1, 2, 3, 4, 5, 6, 10}
	offs := []int16{0, 1, -1, 8, 16, 32, math.MinInt16, math.MaxInt16}
	imms := []int32{0, 1, -1, 16, 32, 64, math.MinInt32, math.MaxInt32,
		AtomicAdd | AtomicFetch, AtomicOr, AtomicOr | AtomicFetch, AtomicAnd, AtomicAnd | AtomicFetch,
		AtomicXor, AtomicXor | AtomicFetch, AtomicXchg, AtomicCmpXchg, AtomicLoadAcquire, AtomicStoreRelease, 1 << 16}
	exit := Instruction{Op: OpExit}
	var out [][]Instruction
	prog := make([]Instruction, 3)
	for op := range 256 {
		for _, dst := range regs {
			for _, src := range srcs {
				for _, off := range offs {
					for _, imm := range imms {
						first := Instruction{Op: uint8(op), Dst: dst, Src: src, Off: off, Imm: imm}
						if first.IsLdImm64() {
							for _, hi := range []int32{0, -1} {
								prog = append(prog[:0], first, Instruction{Imm: hi}, exit)
								if validate(prog, false, checkAll) == nil {
									out = append(out, []Instruction{first, {Imm: hi}})
								}
							}
							continue
						}
						if first.Op == OpCall && first.Src == Register(CallKfunc) && off != 0 {
							continue // the module BTF index of a kfunc has no text form
						}
						prog = append(prog[:0], first, exit)
						if validate(prog, false, checkAll) == nil {
							out = append(out, []Instruction{first})
						}
					}
				}
			}
		}
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	valid := validInstructions()
	opcodes := make(map[uint8]bool)
	conformance := 0
	for _, want := range valid {
		opcodes[want[0].Op] = true
		text := Format(want, 0, nil)
		got, err := Assemble(text)
		if err != nil {
			t.Errorf("Assemble(Format(%v) = %q): %v", want, text, err)
			continue
		}
		if !equalPrograms(got, want) {
			t.Errorf("Assemble(Format(%v) = %q) = %v", want, text, got)
		}
		if text, ok := formatConformance(want); ok {
			conformance++
			got, err := Assemble(text)
			if err != nil {
				t.Errorf("Assemble(%q) from %v: %v", text, want, err)
			} else if !equalPrograms(got, want) {
				t.Errorf("Assemble(%q) = %v, want %v", text, got, want)
			}
		}
	}
	// 26 ALU64, 27 ALU, 27 JMP and 23 JMP32 opcodes, LD_IMM64 and six
	// packet loads, seven LDX, four ST and eight STX.
	if len(opcodes) != 129 {
		t.Errorf("%d valid opcodes, want 129", len(opcodes))
	}
	t.Logf("%d valid instructions with %d opcodes, %d through the conformance dialect", len(valid), len(opcodes), conformance)
}

// TestRoundTripDump assembles the Dump of a program that uses every valid
// opcode, jumps and LD_IMM64 included, back into the same program.
func TestRoundTripDump(t *testing.T) {
	var prog []Instruction
	seen := make(map[uint8]bool)
	for _, insns := range validInstructions() {
		if !seen[insns[0].Op] {
			seen[insns[0].Op] = true
			prog = append(prog, insns...)
		}
	}
	prog = append(prog, Instruction{Op: OpExit})
	var dump strings.Builder
	if err := Dump(&dump, prog, nil); err != nil {
		t.Fatal(err)
	}
	got, err := Assemble(dump.String())
	if err != nil {
		t.Fatal(err)
	}
	if !equalPrograms(got, prog) {
		t.Errorf("Assemble(Dump(prog)) differs from prog:\n%s", dump.String())
	}
}

// formatConformance prints the bpf_conformance spelling of an instruction
// (with its upper slot for LD_IMM64), or reports that the dialect has none.
func formatConformance(prog []Instruction) (string, bool) {
	ins := prog[0]
	if ins.IsAddrSpaceCast() {
		return "", false // the dialect has no address space casts
	}
	class := ins.Class()
	x := ins.Op&SrcX != 0
	mem := func(reg Register, off int16) string { return fmt.Sprintf("[%%r%d%+d]", reg, off) }
	sizes := map[uint8]string{SizeB: "b", SizeH: "h", SizeW: "w", SizeDW: "dw"}
	size := sizes[ins.Op&0x18]
	switch class {
	case ClassALU, ClassALU64:
		suffix := ""
		if class == ClassALU {
			suffix = "32"
		}
		op := ins.Op & 0xf0
		switch op {
		case ALUEnd:
			switch {
			case class == ClassALU64:
				return fmt.Sprintf("bswap%d %%r%d", ins.Imm, ins.Dst), true
			case x:
				return fmt.Sprintf("be%d %%r%d", ins.Imm, ins.Dst), true
			default:
				return fmt.Sprintf("le%d %%r%d", ins.Imm, ins.Dst), true
			}
		case ALUNeg:
			return fmt.Sprintf("neg%s %%r%d", suffix, ins.Dst), true
		}
		names := map[uint8]string{ALUAdd: "add", ALUSub: "sub", ALUMul: "mul", ALUDiv: "div", ALUOr: "or",
			ALUAnd: "and", ALULsh: "lsh", ALURsh: "rsh", ALUMod: "mod", ALUXor: "xor", ALUMov: "mov", ALUArsh: "arsh"}
		name := names[op]
		if ins.Off == 1 && (op == ALUDiv || op == ALUMod) {
			name = "s" + name
		}
		if op == ALUMov && ins.Off != 0 {
			name = fmt.Sprintf("movsx%d", ins.Off)
			if suffix == "" {
				suffix = "64"
			}
		}
		if x {
			return fmt.Sprintf("%s%s %%r%d, %%r%d", name, suffix, ins.Dst, ins.Src), true
		}
		return fmt.Sprintf("%s%s %%r%d, %d", name, suffix, ins.Dst, ins.Imm), true
	case ClassLDX:
		s := ""
		if ins.Op&0xe0 == ModeMEMSX {
			s = "s"
		}
		return fmt.Sprintf("ldx%s%s %%r%d, %s", s, size, ins.Dst, mem(ins.Src, ins.Off)), true
	case ClassST:
		return fmt.Sprintf("st%s %s, %d", size, mem(ins.Dst, ins.Off), ins.Imm), true
	case ClassSTX:
		if ins.Op&0xe0 == ModeMEM {
			return fmt.Sprintf("stx%s %s, %%r%d", size, mem(ins.Dst, ins.Off), ins.Src), true
		}
		names := map[int32]string{AtomicAdd: "add", AtomicOr: "or", AtomicAnd: "and", AtomicXor: "xor",
			AtomicXchg: "xchg", AtomicCmpXchg: "cmpxchg"}
		fetch := ""
		name, ok := names[ins.Imm]
		if !ok {
			if name, ok = names[ins.Imm&^AtomicFetch]; !ok {
				return "", false // load-acquire and store-release have no spelling
			}
			fetch = "fetch "
		}
		if ins.Op&0x18 == SizeW {
			name += "32"
		}
		return fmt.Sprintf("lock %s%s %s, %%r%d", fetch, name, mem(ins.Dst, ins.Off), ins.Src), true
	case ClassLD:
		switch ins.Op & 0xe0 {
		case ModeABS:
			return fmt.Sprintf("ldabs%s %d", size, ins.Imm), true
		case ModeIND:
			return fmt.Sprintf("ldind%s %%r%d, %d", size, ins.Src, ins.Imm), true
		}
		if ins.Src != 0 {
			return "", false
		}
		return fmt.Sprintf("lddw %%r%d, %#x", ins.Dst, Imm64(ins, prog[1])), true
	default: // jumps
		op := ins.Op & 0xf0
		switch {
		case ins.Op == OpJA:
			return fmt.Sprintf("ja %+d", ins.Off), true
		case ins.Op == OpJA32:
			return fmt.Sprintf("ja32 %+d", ins.Imm), true
		case ins.Op == OpExit:
			return "exit", true
		case ins.Op == OpCallX:
			return fmt.Sprintf("call %%r%d", ins.Dst), true
		case ins.Op == OpCall:
			switch uint8(ins.Src) {
			case CallLocal:
				return fmt.Sprintf("call local %+d", ins.Imm), true
			case CallKfunc:
				return fmt.Sprintf("call runtime %d", ins.Imm), true
			}
			return fmt.Sprintf("call %d", ins.Imm), true
		case op == JumpCond:
			return "", false // may_goto
		}
		names := map[uint8]string{JumpEQ: "jeq", JumpGT: "jgt", JumpGE: "jge", JumpSet: "jset", JumpNE: "jne",
			JumpSGT: "jsgt", JumpSGE: "jsge", JumpLT: "jlt", JumpLE: "jle", JumpSLT: "jslt", JumpSLE: "jsle"}
		suffix := ""
		if class == ClassJMP32 {
			suffix = "32"
		}
		if x {
			return fmt.Sprintf("%s%s %%r%d, %%r%d, %+d", names[op], suffix, ins.Dst, ins.Src, ins.Off), true
		}
		return fmt.Sprintf("%s%s %%r%d, %d, %+d", names[op], suffix, ins.Dst, ins.Imm, ins.Off), true
	}
}

// conformanceDir holds the bpf_conformance test files, outside the module.
const conformanceDir = "../../shared/testdata/bpf_conformance"

// conformanceTest is one *.data file: its asm section and, when present,
// the expected encoding from its raw section.
type conformanceTest struct {
	asm string
	raw []uint64 // nil without a raw section
}

func parseConformanceFile(t *testing.T, path string) conformanceTest {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ct conformanceTest
	var asm []string
	section := ""
	for _, line := range strings.Split(string(data), "\n") {
		if name, ok := strings.CutPrefix(line, "-- "); ok {
			section = strings.TrimSpace(name)
			if section == "raw" {
				ct.raw = []uint64{}
			}
			continue
		}
		switch section {
		case "asm":
			asm = append(asm, line)
		case "raw":
			ct.raw = append(ct.raw, parseRawLine(t, line)...)
		}
	}
	ct.asm = strings.Join(asm, "\n")
	return ct
}

// parseRawLine reads either one 0x-prefixed 64-bit little-endian word or
// eight hex bytes per line; "#" starts a comment.
func parseRawLine(t *testing.T, line string) []uint64 {
	t.Helper()
	line, _, _ = strings.Cut(line, "#")
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return nil
	}
	if len(fields) == 1 && strings.HasPrefix(fields[0], "0x") {
		w, err := strconv.ParseUint(fields[0][2:], 16, 64)
		if err != nil {
			t.Fatalf("raw word %q: %v", fields[0], err)
		}
		return []uint64{w}
	}
	if len(fields)%8 != 0 {
		t.Fatalf("raw line %q is not whole instructions", line)
	}
	var words []uint64
	for i := 0; i < len(fields); i += 8 {
		var w uint64
		for j := 7; j >= 0; j-- {
			b, err := strconv.ParseUint(fields[i+j], 16, 8)
			if err != nil {
				t.Fatalf("raw byte %q: %v", fields[i+j], err)
			}
			w = w<<8 | b
		}
		words = append(words, w)
	}
	return words
}

func TestConformanceFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(conformanceDir, "*.data"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skipf("no conformance tests in %s", conformanceDir)
	}
	raw := 0
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			ct := parseConformanceFile(t, path)
			prog, err := Assemble(ct.asm)
			if err != nil {
				t.Fatal(err)
			}
			if err := Validate(prog); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if ct.raw != nil {
				raw++
				words := make([]uint64, len(prog))
				for i, ins := range prog {
					words[i] = ins.Uint64()
				}
				if fmt.Sprint(words) != fmt.Sprint(ct.raw) {
					t.Errorf("encoding %#x, raw section %#x", words, ct.raw)
				}
			}
			// The kernel syntax of the program reads back too.
			var dump strings.Builder
			if err := Dump(&dump, prog, nil); err != nil {
				t.Fatal(err)
			}
			back, err := Assemble(dump.String())
			if err != nil {
				t.Fatalf("Assemble(Dump): %v", err)
			}
			if !equalPrograms(back, prog) {
				t.Errorf("Assemble(Dump(prog)) differs:\n%s", dump.String())
			}
		})
	}
	t.Logf("%d files, %d with raw sections", len(files), raw)
}

func TestParseRawLine(t *testing.T) {
	tests := []struct {
		line string
		want []uint64
	}{
		{"0x5566778800000018", []uint64{0x5566778800000018}},
		{"18 00 00 00 88 77 66 55", []uint64{0x5566778800000018}},
		{"95 00 00 00 00 00 00 00 # exit", []uint64{0x95}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := parseRawLine(t, tt.line); fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("parseRawLine(%q) = %#x, want %#x", tt.line, got, tt.want)
		}
	}
}

func FuzzAssemble(f *testing.F) {
	for _, seed := range []string{
		"r1 = *(u32 *)(r2 +4)\n*(u64 *)(r10 -8) = r1\nexit",
		"if r1 > 0x5 goto pc+3\nif w1 s< w2 goto out\nout: exit",
		"r0 = 0x1122334455667788 ll\nr1 = map_value[fd:3]+8 ll\nr2 = subprog[f] ll\nf: exit",
		"lock *(u64 *)(r10 -8) += r1\nr0 = atomic64_cmpxchg((u64 *)(r10 -8), r0, r1)",
		"r0 = load_acquire((u64 *)(r1 +0))\nstore_release((u64 *)(r1 +0), r2)",
		"r0 = *(u8 *)skb[23]\nr0 = *(u16 *)skb[r1 + 2]\nmay_goto pc+2\ngotol pc+7",
		"call bpf_map_lookup_elem#1\ncall kernel-function#5\ncall pc+1\ncallx r3\ncall f\nf: exit",
		"r1 = (s8)r2\nw1 = -w1\nr1 s%= 3\nr1 = bswap64 r1\nr1 = addr_space_cast(r2, 0, 1)",
		"0: (b7) r0 = 0\n1: (18) r1 = 0x0\n3: (95) exit",
		"mov32 %r0, 0x89abcdef\nlddw %r1, 0x1122334455667788\nldxw %r1, [%r2+4]\nstxdw [%r10-8], %r0",
		"jne %r0, 15, failed\nja32 failed\nfailed:\ncall local failed\ncall %r2\nexit",
		"lock fetch add32 [%r10-4], %r1\nlock cmpxchg [%r10-8], %r1\nmovsx832 %r2, %r1\nsmod %r0, -3",
		"ldabsw 4\nldindh %r1, 2\nbswap16 %r0\nswap32 %r0\nbe16 %r1\nneg32 %r2 # comment",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, src string) {
		prog, err := Assemble(src)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %v is not a *SyntaxError", err)
			}
			return
		}
		// Whatever assembles prints in a form that assembles back to it,
		// both one instruction at a time and as a dump with log prefixes.
		var lines []string
		for pc := range prog {
			if !isSecondSlot(prog, pc) {
				lines = append(lines, Format(prog, pc, nil))
			}
		}
		back, err := Assemble(strings.Join(lines, "\n"))
		if err != nil {
			t.Fatalf("Assemble(Format(%v)): %v\n%s", prog, err, strings.Join(lines, "\n"))
		}
		if !equalPrograms(back, prog) {
			t.Fatalf("Assemble(Format(prog)) = %v, want %v", back, prog)
		}
		var dump strings.Builder
		if err := Dump(&dump, prog, nil); err != nil {
			t.Fatal(err)
		}
		if back, err = Assemble(dump.String()); err != nil || !equalPrograms(back, prog) {
			t.Fatalf("Assemble(Dump(prog)) = %v, %v, want %v\n%s", back, err, prog, dump.String())
		}
	})
}
