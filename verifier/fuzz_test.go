package verifier_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/verifier"
)

// garbageMaps are the maps garbage programs may reference by index.
var garbageMaps = func() []verifier.MapInfo {
	specs := []maps.Spec{
		{Name: "one", Type: maps.Array, KeySize: 4, ValueSize: 16, MaxEntries: 1},
		{Name: "hash", Type: maps.Hash, KeySize: 8, ValueSize: 16, MaxEntries: 16},
		{Name: "rb", Type: maps.RingBuf, MaxEntries: 4096},
		{Name: "progs", Type: maps.ProgArray, KeySize: 4, ValueSize: 4, MaxEntries: 4},
		{Name: "q", Type: maps.Queue, ValueSize: 8, MaxEntries: 4},
		{Name: "ro", Type: maps.Array, KeySize: 4, ValueSize: 8, MaxEntries: 4, Flags: 0x80},
	}
	infos := make([]verifier.MapInfo, len(specs))
	for i, s := range specs {
		infos[i] = verifier.MapInfo{Name: s.Name, Spec: s, Index: i}
	}
	return infos
}()

// validOps are the opcodes isa.Validate accepts in some instruction.
var validOps = func() []uint8 {
	var ops []uint8
	exit := isa.Instruction{Op: isa.OpExit}
	for op := 0; op < 256; op++ {
		if uint8(op) == isa.OpLdImm64 {
			ops = append(ops, uint8(op))
			continue
		}
		for _, c := range []isa.Instruction{
			{Op: uint8(op), Dst: 1, Src: 2},
			{Op: uint8(op), Dst: 1, Imm: 1},
			{Op: uint8(op), Dst: 1, Imm: 16},
			{Op: uint8(op), Dst: 1, Src: 2, Off: 1},
			{Op: uint8(op), Dst: 1, Src: 2, Off: 8},
			{Op: uint8(op), Dst: 1, Src: 2, Imm: 1},
			{Op: uint8(op), Dst: 1, Src: 2, Imm: 0xe1},
			{Op: uint8(op), Imm: 1},
			{Op: uint8(op), Src: 1, Imm: 0},
			{Op: uint8(op)},
		} {
			if isa.Validate([]isa.Instruction{c, exit, exit}) == nil {
				ops = append(ops, uint8(op))
				break
			}
		}
	}
	return ops
}()

var garbageHelpers = []int32{1, 2, 3, 5, 6, 7, 12, 16, 23, 26, 28, 44, 51, 87, 88, 130, 131, 132, 133, 134, 164, 181}

var garbageImms = []int32{0, 1, 2, 4, 7, 8, 14, 16, 31, 32, 63, 64, -1, -4, -8, -16, -512, 0xff, 0x7fffffff, -0x80000000}

// structured decodes b as a program whose instructions have valid opcodes
// and operands, so that most of them get past isa.Validate and into the
// verifier proper.
func structured(b []byte) []isa.Instruction {
	var prog []isa.Instruction
	for len(b) >= 4 && len(prog) < 128 {
		op := validOps[int(b[0])%len(validOps)]
		ins := isa.Instruction{Op: op, Dst: isa.Register(b[1] % 11), Src: isa.Register(b[1] >> 4 % 11), Off: int16(int8(b[2])) % 12, Imm: garbageImms[int(b[3])%len(garbageImms)]}
		if b[2]&0x80 == 0 && ins.Class() != isa.ClassJMP && ins.Class() != isa.ClassJMP32 {
			ins.Off = int16(int8(b[2]<<1)) * 2
		}
		if ins.Op == isa.OpCall {
			switch b[3] % 4 {
			case 0, 1:
				ins.Src = isa.Register(isa.CallHelper)
				ins.Imm = garbageHelpers[int(b[2])%len(garbageHelpers)]
			case 2:
				ins.Src = isa.Register(isa.CallLocal)
				ins.Imm = int32(int8(b[2])) % 16
			}
		}
		b = b[4:]
		if !ins.IsLdImm64() {
			var ok bool
			if ins, ok = sanitize(ins); !ok {
				continue
			}
		}
		if ins.IsLdImm64() {
			src := []uint8{0, isa.PseudoMapFD, isa.PseudoMapValue, isa.PseudoFunc}[b0(b)%4]
			ins.Src = isa.Register(src)
			ins.Off = 0
			hi := isa.Instruction{}
			switch src {
			case isa.PseudoMapFD:
				ins.Imm = int32(b1(b) % 7)
			case isa.PseudoMapValue:
				ins.Imm = int32(b1(b) % 7)
				hi.Imm = int32(b1(b) % 20)
			case isa.PseudoFunc:
				ins.Imm = int32(int8(b1(b))) % 16
			}
			prog = append(prog, ins, hi)
			continue
		}
		prog = append(prog, ins)
	}
	prog = append(prog, isa.Instruction{Op: isa.OpExit})
	// Keep jumps and calls inside the program and off second slots.
	second := make([]bool, len(prog))
	for i := 0; i+1 < len(prog); i++ {
		if prog[i].IsLdImm64() {
			second[i+1] = true
			i++
		}
	}
	for i := range prog {
		ins := &prog[i]
		if second[i] {
			continue
		}
		if t, ok := ins.JumpTarget(i); ok && (t < 0 || t >= len(prog) || second[t]) {
			if ins.Op == isa.OpJA32 {
				ins.Imm = 0
			} else {
				ins.Off = 0
			}
		}
		if ins.IsLocalCall() || ins.IsPseudoFunc() {
			if t := i + 1 + int(ins.Imm); t < 0 || t >= len(prog) || second[t] {
				ins.Imm = 0
			}
		}
	}
	return prog
}

// sanitize clears or sets the fields of ins that isa.Validate would find
// reserved or invalid, trying the least change first.
func sanitize(ins isa.Instruction) (isa.Instruction, bool) {
	exit := isa.Instruction{Op: isa.OpExit}
	try := func(c isa.Instruction) bool {
		t := c
		if _, ok := c.JumpTarget(0); ok {
			// Checked as a jump to the next instruction.
			if c.Op == isa.OpJA32 {
				t.Imm = 0
			} else {
				t.Off = 0
			}
		}
		if t.IsLocalCall() {
			t.Imm = 0
		}
		return isa.Validate([]isa.Instruction{t, exit, exit}) == nil
	}
	var cands []isa.Instruction
	add := func(f func(*isa.Instruction)) {
		c := ins
		f(&c)
		cands = append(cands, c)
	}
	add(func(c *isa.Instruction) {})
	add(func(c *isa.Instruction) { c.Src = 0 })
	add(func(c *isa.Instruction) { c.Imm = 0 })
	add(func(c *isa.Instruction) { c.Off = 0 })
	add(func(c *isa.Instruction) { c.Src, c.Off = 0, 0 })
	add(func(c *isa.Instruction) { c.Imm, c.Off = 0, 0 })
	add(func(c *isa.Instruction) { c.Src, c.Imm, c.Off = 0, 0, 0 })
	add(func(c *isa.Instruction) { c.Dst, c.Src, c.Off = 0, 0, 0 })
	add(func(c *isa.Instruction) { c.Dst, c.Imm, c.Off = 0, 0, 0 })
	add(func(c *isa.Instruction) { c.Dst, c.Src, c.Imm = 0, 0, 0 })
	add(func(c *isa.Instruction) { c.Dst, c.Src, c.Imm, c.Off = 0, 0, 0, 0 })
	for _, imm := range []int32{16, 32, 64, 0x00, 0x01, 0x40, 0x50, 0xa0, 0xe1, 0xf1} {
		add(func(c *isa.Instruction) { c.Imm = imm })
		add(func(c *isa.Instruction) { c.Imm, c.Src, c.Off = imm, 0, 0 })
	}
	for _, off := range []int16{1, 8, 16, 32} {
		add(func(c *isa.Instruction) { c.Off, c.Imm = off, 0 })
		add(func(c *isa.Instruction) { c.Off, c.Src = off, 0 })
	}
	for _, c := range cands {
		if c.Dst == isa.R10 && c.Class() != isa.ClassST && c.Class() != isa.ClassSTX && c.Class() != isa.ClassJMP && c.Class() != isa.ClassJMP32 {
			c.Dst = isa.R0
		}
		if try(c) {
			return c, true
		}
	}
	return ins, false
}

func b0(b []byte) uint8 {
	if len(b) > 0 {
		return b[0]
	}
	return 0
}

func b1(b []byte) uint8 {
	if len(b) > 1 {
		return b[1]
	}
	return 0
}

// FuzzVerifierGarbage feeds arbitrary instructions to the verifier, which
// must reject or accept them without panicking. The first byte selects the
// options and whether the rest is decoded raw or as structured instructions
// (valid opcodes and operands, which get deeper into the verifier).
func FuzzVerifierGarbage(f *testing.F) {
	f.Add([]byte{0})
	f.Add(append([]byte{0x10}, isa.EncodeProgram([]isa.Instruction{{Op: isa.OpExit}})...))
	for _, src := range []string{
		"r0 = 0\nexit",
		lookup4 + "if r0 == 0 goto out\nr1 = *(u64 *)(r0 +0)\nr1 &= 7\nr0 += r1\nr0 = *(u8 *)(r0 +0)\nout: r0 = 0\nexit",
		xdpPkt + "r4 = r2\nr4 += 14\nif r4 > r3 goto out\nr0 = *(u16 *)(r2 +12)\nout: r0 = 0\nexit",
		"r1 = 10\nr2 = subprog[cb] ll\nr3 = 0\nr4 = 0\ncall bpf_loop#181\nr0 = 0\nexit\ncb: r0 = 0\nexit",
		"call f\nexit\nf: r0 = 0\nl: r0 += 1\nif r0 < 5 goto l\nexit",
	} {
		insns, err := isa.Assemble(src)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append([]byte{0}, isa.EncodeProgram(insns)...))
	}
	f.Add([]byte{0x10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		flags := data[0]
		var insns []isa.Instruction
		if flags&0x10 != 0 {
			insns = structured(data[1:])
		} else {
			body := data[1:]
			body = body[:len(body)/isa.InstructionSize*isa.InstructionSize]
			if len(body) > 4096*isa.InstructionSize {
				return
			}
			var err error
			if insns, err = isa.DecodeProgram(body); err != nil {
				t.Fatal(err)
			}
		}
		opts := verifier.Options{
			Type:            []*progtype.Type{progtype.XDP, progtype.SchedCLS, progtype.SocketFilter, progtype.Raw}[flags&3],
			Maps:            garbageMaps,
			Unprivileged:    flags&4 != 0,
			StrictAlignment: flags&8 != 0,
			LogLevel:        int(flags>>5) & 3,
			Funcs:           fuzzFuncs(insns),
		}
		if flags&0x80 != 0 {
			opts.LogSize = 256
		}
		res, err := verifier.Verify(insns, opts)
		if res == nil {
			t.Fatalf("no result (error %v)", err)
		}
		if err != nil && !errors.Is(err, verifier.ErrRejected) && !errors.Is(err, verifier.ErrLogTruncated) {
			t.Fatalf("error %v is no rejection", err)
		}
		if err == nil && len(res.Aux) != len(insns) {
			t.Fatalf("%d aux entries for %d instructions", len(res.Aux), len(insns))
		}
	})
}

// TestVerifierGarbageRandom runs the garbage check on pseudo-random inputs.
func TestVerifierGarbageRandom(t *testing.T) {
	seed := uint64(1)
	next := func() uint64 {
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return seed
	}
	for range 2000 {
		data := make([]byte, 1+next()%400)
		for i := 0; i+8 <= len(data); i += 8 {
			binary.LittleEndian.PutUint64(data[i:], next())
		}
		data[0] |= 0x10
		insns := structured(data[1:])
		opts := verifier.Options{Type: progtype.XDP, Maps: garbageMaps, Unprivileged: data[0]&4 != 0, LogLevel: 2, Funcs: fuzzFuncs(insns)}
		if _, err := verifier.Verify(insns, opts); err != nil && !errors.Is(err, verifier.ErrRejected) {
			t.Fatalf("error %v is no rejection", err)
		}
	}
}

// fuzzFuncs gives a program's functions func_info: static ones for an even
// number of instructions, global ones (five scalar arguments) for an odd
// one, so that both ways of verifying calls are fuzzed.
func fuzzFuncs(insns []isa.Instruction) []verifier.FuncInfo {
	funcs := funcInfos(insns, nil)
	for i := 1; i < len(funcs) && len(insns)%2 == 1; i++ {
		funcs[i].Global = true
	}
	return funcs
}
