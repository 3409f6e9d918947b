package loader

import (
	"errors"
	"fmt"
	"math"
	"reflect"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// fixup is what a btf.COREFixup holds: the value the instruction has
// (local), the one it gets (target), whether there is none (poison), and
// whether local is not to be checked (some bitfield relocations).
type fixup struct {
	local, target       uint64
	poison, skipLocalCk bool
}

// errFixupLayout means cilium/ebpf's COREFixup no longer has the fields
// fixupOf reads: a new version, for which patchPortable must be checked
// against COREFixup.Apply again (TestPatchPortable).
var errFixupLayout = errors.New("cilium/ebpf's COREFixup changed: cannot read it")

// fixupOf reads a COREFixup's fields, which cilium/ebpf does not export
// (reflection reads unexported fields; it cannot write them).
func fixupOf(f *btf.COREFixup) (fixup, error) {
	v := reflect.ValueOf(f).Elem()
	local, target := v.FieldByName("local"), v.FieldByName("target")
	poison, skip := v.FieldByName("poison"), v.FieldByName("skipLocalValidation")
	if local.Kind() != reflect.Uint64 || target.Kind() != reflect.Uint64 || poison.Kind() != reflect.Bool || skip.Kind() != reflect.Bool {
		return fixup{}, errFixupLayout
	}
	return fixup{local: local.Uint(), target: target.Uint(), poison: poison.Bool(), skipLocalCk: skip.Bool()}, nil
}

// patchPortable applies a fixup to its instruction as COREFixup.Apply
// does, which refuses to outside Linux (ErrNotSupportedOnOS): bpfvm runs
// the result itself, so the host's OS does not matter.
func patchPortable(f *btf.COREFixup, ins *asm.Instruction) error {
	fx, err := fixupOf(f)
	if err != nil {
		return err
	}
	if fx.poison {
		// An LD_IMM64 stays two slots long.
		if ins.OpCode.IsDWordLoad() {
			*ins = asm.LoadImm(asm.R10, btf.COREBadRelocationSentinel, asm.DWord)
		} else {
			*ins = asm.BuiltinFunc(btf.COREBadRelocationSentinel).Call()
		}
		if src := ins.Source(); src != nil {
			*ins = ins.WithSource(asm.Comment(fmt.Sprintf("instruction poisoned by CO-RE: %s", src)))
		} else {
			*ins = ins.WithSource(asm.Comment("instruction poisoned by CO-RE"))
		}
		return nil
	}
	switch class := ins.OpCode.Class(); class {
	case asm.LdXClass, asm.StClass, asm.StXClass:
		if !fx.skipLocalCk && int16(fx.local) != ins.Offset {
			return fmt.Errorf("invalid offset %d, expected %d", ins.Offset, fx.local)
		}
		if fx.target > math.MaxInt16 {
			return fmt.Errorf("offset %d exceeds MaxInt16", fx.target)
		}
		ins.Offset = int16(fx.target)
	case asm.LdClass:
		if !ins.IsConstantLoad(asm.DWord) {
			return errors.New("not a dword-sized immediate load")
		}
		if !fx.skipLocalCk && int64(fx.local) != ins.Constant {
			return fmt.Errorf("invalid immediate %d, expected %d", ins.Constant, int64(fx.local))
		}
		ins.Constant = int64(fx.target)
	case asm.ALUClass, asm.ALU64Class:
		if class == asm.ALUClass && ins.OpCode.ALUOp() == asm.Swap {
			return errors.New("relocation against swap")
		}
		if src := ins.OpCode.Source(); src != asm.ImmSource {
			return fmt.Errorf("invalid source %s", src)
		}
		if !fx.skipLocalCk && int64(fx.local) != ins.Constant {
			return fmt.Errorf("invalid immediate %d, expected %d", ins.Constant, int64(fx.local))
		}
		if fx.target > math.MaxInt32 {
			return fmt.Errorf("immediate %d exceeds MaxInt32", fx.target)
		}
		ins.Constant = int64(fx.target)
	default:
		return fmt.Errorf("invalid class %s", class)
	}
	return nil
}
