package rewrite

import (
	"fmt"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/verifier"
)

// Shadow locates, relative to the context, the slots where the runner keeps
// the 64-bit packet pointers verified programs load in place of the
// context's data, data_end and data_meta fields, the flow keys' address
// they load in place of __sk_buff.flow_keys, the socket's in place of
// __sk_buff.sk, and a writable raw tracepoint's buffer's in place of its
// first argument.
type Shadow struct {
	Data, End, Meta, FlowKeys, Socket, TPBuffer uint64
}

// ConvertContext turns loads of packet pointer fields, which the verifier
// proved go to the context, into 64-bit loads of the shadow slots, and
// accesses of scalar fields stored narrower than shown to their stored
// form: the kernel's convert_ctx_access for the fields whose stored form
// differs from what the program sees. Each rewrite is one instruction for
// one, so jump offsets and aux data stay aligned.
func ConvertContext(insns []isa.Instruction, aux []verifier.InsnAux, shadow Shadow) []isa.Instruction {
	out := append([]isa.Instruction(nil), insns...)
	for pc := range out {
		f := aux[pc].Ctx
		if f == nil {
			continue
		}
		ins := &out[pc]
		if f.Kind == progtype.Scalar || f.Kind == progtype.KernelObject {
			// The verifier proved the context pointer unmodified, so the
			// instruction's offset is the access's.
			op := progtype.Load
			if ins.Class() == isa.ClassST || ins.Class() == isa.ClassSTX {
				op = progtype.Store
			}
			size := uint32(isa.SizeBytes(ins.Op))
			off, n := f.Convert(uint32(ins.Off), size, op)
			ins.Off, ins.Op = int16(off), ins.Op&^0x18|sizeCode(n)
			continue
		}
		var slot uint64
		switch f.Kind {
		case progtype.PacketData:
			slot = shadow.Data
		case progtype.PacketEnd:
			slot = shadow.End
		case progtype.PacketMeta:
			slot = shadow.Meta
		case progtype.FlowKeys:
			slot = shadow.FlowKeys
		case progtype.SockCommonOrNull, progtype.Socket, progtype.SocketOrNull:
			slot = shadow.Socket
		case progtype.TPBuffer:
			slot = shadow.TPBuffer
		}
		*ins = isa.Instruction{Op: isa.ClassLDX | isa.ModeMEM | isa.SizeDW, Dst: ins.Dst, Src: ins.Src, Off: int16(slot)}
	}
	return out
}

// GuardContextStores makes stores to context fields with a StoreLimit
// conditional, as the kernel's context conversion does: a register store
// is skipped when the value reaches the limit, an immediate store that
// reaches it is no store at all.
func GuardContextStores(rp *Program) error {
	var rs []Replacement
	for pc, ins := range rp.Insns {
		f := rp.Aux[pc].Ctx
		if f == nil || f.StoreLimit == 0 {
			continue
		}
		switch ins.Class() {
		case isa.ClassSTX:
			skip := isa.Instruction{Op: isa.ClassJMP | isa.JumpGE | isa.SrcK, Dst: ins.Src, Off: 1, Imm: int32(f.StoreLimit)}
			rs = append(rs, Replacement{PC: pc, Seq: []isa.Instruction{skip, ins}})
		case isa.ClassST:
			if int64(ins.Imm) >= int64(f.StoreLimit) {
				rs = append(rs, Replacement{PC: pc, Seq: []isa.Instruction{{Op: isa.OpJA}}})
			}
		}
	}
	if len(rs) == 0 {
		return nil
	}
	if err := rp.PatchAll(rs); err != nil {
		return fmt.Errorf("context stores: %w", err)
	}
	return nil
}

// ConvertNoneLoads expands the loads of context and socket fields that the
// kernel's conversion reads as -1 for none (progtype.Field.NoneMinusOne,
// bpf_sock.rx_queue_mapping), each wider than the stored value, as the
// kernel's conversion does: load the stored value, replace all ones with a
// 32-bit -1 (zero-extended), then sign-extend a sign-extending load from
// its size. Narrower loads read the stored bytes as they are.
func ConvertNoneLoads(rp *Program) error {
	var rs []Replacement
	for pc, ins := range rp.Insns {
		f := rp.Aux[pc].Ctx
		if f == nil {
			f = rp.Aux[pc].Sock
		}
		size := uint32(isa.SizeBytes(ins.Op))
		if f == nil || ins.Class() != isa.ClassLDX || !f.MinusOne(size) {
			continue
		}
		// The verifier proved the pointer unmoved: the offset is the
		// field's.
		seq := []isa.Instruction{
			{Op: isa.ClassLDX | isa.ModeMEM | sizeCode(f.Backing), Dst: ins.Dst, Src: ins.Src, Off: int16(f.Offset)},
			{Op: isa.ClassJMP | isa.JumpNE | isa.SrcK, Dst: ins.Dst, Off: 1, Imm: int32(f.None())},
			{Op: isa.ClassALU | isa.ALUMov | isa.SrcK, Dst: ins.Dst, Imm: -1},
		}
		if ins.Op&0xe0 == isa.ModeMEMSX && size < 8 {
			seq = append(seq, isa.Instruction{Op: isa.ClassALU64 | isa.ALUMov | isa.SrcX, Dst: ins.Dst, Src: ins.Dst, Off: int16(8 * size)})
		}
		rs = append(rs, Replacement{PC: pc, Seq: seq})
	}
	if len(rs) == 0 {
		return nil
	}
	if err := rp.PatchAll(rs); err != nil {
		return fmt.Errorf("context loads: %w", err)
	}
	return nil
}

// sizeCode is the size field of a load or store of n bytes.
func sizeCode(n uint32) uint8 {
	switch n {
	case 1:
		return isa.SizeB
	case 2:
		return isa.SizeH
	case 4:
		return isa.SizeW
	}
	return isa.SizeDW
}
