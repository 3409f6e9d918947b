//go:build amd64 && linux

package amd64

import (
	"encoding/binary"
	"sync"
	"testing"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/vm"
)

// arenaWindow is a test arena: its page table, a 4 GiB window with 64 KiB
// guards, as maps.ArenaMap maps it, shared by the tests. The pages the
// programs reach near each end of the window alternate between held and
// not (arenaPages).
var arenaWindow = sync.OnceValues(func() (*vm.Mem, error) {
	m, err := vm.Reserve(vm.ArenaTableSize + 1<<32 + 2<<16)
	if err == nil {
		table := vm.ArenaTableAt(m.Addr() + vm.ArenaTableSize + 1<<16)
		for q := uint64(0); q < 16; q += 2 {
			*(*uint8)(vm.Ptr(table + q)) = 1
			*(*uint8)(vm.Ptr(table + 1<<20 - 1 - q)) = 1
		}
	}
	return m, err
})

const arenaUser = 0x7_0000_0000 // the upper half of the user addresses

// genArena turns fuzz input into a program of arena accesses and address
// space casts (ModeArena, ModeArenaSX, ModeArenaAtomic, as the rewrite
// lowers them): pointers in R1-R5, whose low 32 bits stay within 32 KiB
// of either end of the window, so that the runs touch only what
// arenaReset clears; loaded values and cast results go to R6-R9, folded
// into R0; atomics are aligned, their fetches go to R0 or R6-R9.
func genArena(data []byte) []isa.Instruction {
	var prog []isa.Instruction
	var los [isa.R5 + 1]uint32
	for r := isa.R1; r <= isa.R5; r++ {
		var lo uint32
		if len(data) >= 2 {
			lo = uint32(binary.LittleEndian.Uint16(data)) & 0x7fff
			if data[1]&0x80 != 0 {
				lo = -lo - 1
			}
			data = data[2:]
		}
		los[r] = lo
		ld := isa.LdImm64(r, 0, uint64(r)<<40|uint64(lo))
		prog = append(prog, ld[0], ld[1])
	}
	prog = append(prog, isa.Instruction{Op: isa.ClassALU64 | isa.ALUMov, Dst: isa.R0})
	sizes := []uint8{isa.SizeB, isa.SizeH, isa.SizeW, isa.SizeDW}
	for len(data) >= 6 && len(prog) < 400 {
		b := data[:6]
		data = data[6:]
		ptr := isa.R1 + isa.Register(b[1]%5)
		val := isa.Register(b[1] >> 4 % 10)
		out := isa.R6 + isa.Register(b[1]>>4%4)
		off := int16(binary.LittleEndian.Uint16(b[2:]))
		size := sizes[b[0]>>4&3]
		imm := int32(binary.LittleEndian.Uint16(b[4:])) - 1<<15
		switch b[0] % 7 {
		case 0:
			prog = append(prog, isa.Instruction{Op: isa.ClassSTX | isa.ModeArena | size, Dst: ptr, Src: val, Off: off})
		case 1:
			prog = append(prog, isa.Instruction{Op: isa.ClassST | isa.ModeArena | size, Dst: ptr, Off: off, Imm: imm})
		case 2:
			prog = append(prog, isa.Instruction{Op: isa.ClassLDX | isa.ModeArena | size, Dst: out, Src: ptr, Off: off},
				isa.Instruction{Op: isa.ClassALU64 | isa.ALUXor | isa.SrcX, Dst: isa.R0, Src: out})
		case 3:
			prog = append(prog, isa.Instruction{Op: isa.ClassALU64 | isa.ALUMov | isa.SrcX, Dst: out, Src: ptr, Off: isa.AddrSpaceCast, Imm: isa.CastToUser},
				isa.Instruction{Op: isa.ClassALU64 | isa.ALUAdd | isa.SrcX, Dst: isa.R0, Src: out})
		case 4:
			prog = append(prog, isa.Instruction{Op: isa.ClassALU64 | isa.ALUMov | isa.SrcX, Dst: out, Src: ptr, Off: isa.AddrSpaceCast, Imm: isa.CastToKernel},
				isa.Instruction{Op: isa.ClassALU64 | isa.ALUSub | isa.SrcX, Dst: isa.R0, Src: out})
		case 5:
			if size == isa.SizeDW {
				size = isa.SizeW
			}
			prog = append(prog, isa.Instruction{Op: isa.ClassLDX | isa.ModeArenaSX | size, Dst: out, Src: ptr, Off: off},
				isa.Instruction{Op: isa.ClassALU64 | isa.ALUAdd | isa.SrcX, Dst: isa.R0, Src: out})
		case 6:
			ops := []int32{isa.AtomicAdd, isa.AtomicOr, isa.AtomicAnd, isa.AtomicXor,
				isa.AtomicAdd | isa.AtomicFetch, isa.AtomicOr | isa.AtomicFetch, isa.AtomicAnd | isa.AtomicFetch,
				isa.AtomicXor | isa.AtomicFetch, isa.AtomicXchg, isa.AtomicCmpXchg}
			n := int16(4)
			if size = isa.SizeW; b[0]&0x80 != 0 {
				size, n = isa.SizeDW, 8
			}
			off -= int16(los[ptr]+uint32(off)) & (n - 1)
			src := out
			if b[5]&1 != 0 {
				src = isa.R0
			}
			prog = append(prog, isa.Instruction{Op: isa.ClassSTX | isa.ModeArenaAtomic | size, Dst: ptr, Src: src, Off: off, Imm: ops[int(b[4])%len(ops)]})
		}
	}
	return append(prog, isa.Instruction{Op: isa.OpExit})
}

// arenaReset clears what genArena's programs may touch: 96 KiB at each
// end of the window.
func arenaReset(base uint64) {
	clear(vm.Slice(base-1<<16, 3<<15+1<<16))
	clear(vm.Slice(base+1<<32-3<<15, 3<<15+1<<16))
}

// arenaDiff runs an arena program on both engines, blinded or not.
func arenaDiff(t *testing.T, data []byte) {
	w, err := arenaWindow()
	if err != nil {
		t.Skipf("no window: %v", err)
	}
	base := w.Addr() + vm.ArenaTableSize + 1<<16
	prog := genArena(data)
	for _, blind := range []bool{false, true} {
		diff(t, diffCase{
			prog: prog, size: 64, jit: Options{Arena: base, ArenaUser: arenaUser, Blind: blind},
			setup: func(te *testEnv) { te.env.Arena, te.env.ArenaUser = base, arenaUser },
			reset: func(*testEnv) { arenaReset(base) },
		})
	}
}

// Arena accesses and casts give the same results on the JIT as on the
// interpreter.
func FuzzArena(f *testing.F) {
	f.Add([]byte{1, 0, 2, 0x80, 3, 0, 4, 0x80, 5, 0, 0x30, 0x10, 8, 0, 0, 0, 0x02, 0x01, 8, 0, 0, 0, 0x13, 0x02, 0xf8, 0xff, 9, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 2048 {
			return
		}
		arenaDiff(t, data)
	})
}

// TestArenaGenerated covers FuzzArena's generator in plain "go test".
func TestArenaGenerated(t *testing.T) {
	seed := uint64(0x2545f4914f6cdd1d)
	for range 200 {
		data := make([]byte, 10+6*40)
		for i := range data {
			seed ^= seed << 13
			seed ^= seed >> 7
			seed ^= seed << 17
			data[i] = byte(seed)
		}
		arenaDiff(t, data)
		if t.Failed() {
			t.Fatalf("input %x", data)
		}
	}
}
