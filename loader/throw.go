package loader

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// ErrExceptionCallback is a program's exception callback the loader cannot
// append.
var ErrExceptionCallback = errors.New("exception callback")

// exceptionTag prefixes the decl tag by which a program's main function
// names its exception callback (the kernel's "exception_callback:").
const exceptionTag = "exception_callback:"

// appendExceptionCallbacks appends to each program the exception callback
// its main function names, as libbpf does: no call reaches the callback,
// so cilium/ebpf, which links only the functions a program calls, leaves
// it out. The callback is read from its ELF symbol with its BTF func
// info; relocations in it (calls of other functions, map and data
// references) are not supported yet.
func appendExceptionCallbacks(r io.ReaderAt, spec *ebpf.CollectionSpec) error {
	var f *elf.File
	var ext *btf.ExtInfos
	for _, name := range sortedPrograms(spec) {
		p := spec.Programs[name]
		cb := exceptionCallbackName(p)
		if cb == "" || hasFunc(p.Instructions, cb) {
			continue
		}
		if f == nil {
			var err error
			if f, err = elf.NewFile(r); err != nil {
				return err
			}
			if _, ext, err = btf.LoadSpecAndExtInfosFromReader(r); err != nil {
				return fmt.Errorf("program %s: %w %s: %w", name, ErrExceptionCallback, cb, err)
			}
		}
		insns, err := readFunction(f, ext, cb)
		if err != nil {
			return fmt.Errorf("program %s: %w %s: %w", name, ErrExceptionCallback, cb, err)
		}
		p.Instructions = append(p.Instructions, insns...)
	}
	return nil
}

// sortedPrograms returns the names of spec's programs in order.
func sortedPrograms(spec *ebpf.CollectionSpec) []string {
	names := make([]string, 0, len(spec.Programs))
	for n := range spec.Programs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// exceptionCallbackName returns the exception callback p's main function
// names, "" for none or more than one (which the verifier refuses).
func exceptionCallbackName(p *ebpf.ProgramSpec) string {
	if len(p.Instructions) == 0 {
		return ""
	}
	fn := btf.FuncMetadata(&p.Instructions[0])
	if fn == nil {
		return ""
	}
	name := ""
	for _, t := range fn.Tags {
		if s, ok := strings.CutPrefix(t, exceptionTag); ok {
			if name != "" {
				return ""
			}
			name = s
		}
	}
	return name
}

// hasFunc reports whether insns hold the function called name.
func hasFunc(insns asm.Instructions, name string) bool {
	for i := range insns {
		if fn := btf.FuncMetadata(&insns[i]); fn != nil && fn.Name == name {
			return true
		}
	}
	return false
}

// readFunction decodes the instructions of the function symbol name,
// with its BTF func and line info, refusing one with relocations.
func readFunction(f *elf.File, ext *btf.ExtInfos, name string) (asm.Instructions, error) {
	syms, err := f.Symbols()
	if err != nil {
		return nil, err
	}
	for _, s := range syms {
		if s.Name != name || elf.ST_TYPE(s.Info) != elf.STT_FUNC || int(s.Section) >= len(f.Sections) {
			continue
		}
		sec := f.Sections[s.Section]
		if s.Value+s.Size > sec.Size || s.Size == 0 {
			return nil, fmt.Errorf("symbol out of its section")
		}
		if err := noRelocations(f, s.Section, s.Value, s.Size); err != nil {
			return nil, err
		}
		raw := make([]byte, s.Size)
		if _, err := sec.ReadAt(raw, int64(s.Value)); err != nil {
			return nil, err
		}
		insns, err := asm.AppendInstructions(nil, bytes.NewReader(raw), f.ByteOrder, "linux")
		if err != nil {
			return nil, err
		}
		// Ext infos count instructions from the start of the section.
		start := asm.RawInstructionOffset(s.Value / asm.InstructionSize)
		funcs, lines, _ := ext.Section(sec.Name)
		at := map[asm.RawInstructionOffset]int{}
		off := start
		for i := range insns {
			at[off] = i
			off += asm.RawInstructionOffset(insns[i].Size() / asm.InstructionSize)
		}
		for _, fo := range funcs {
			if i, ok := at[fo.Offset]; ok {
				insns[i] = btf.WithFuncMetadata(insns[i], fo.Func)
			}
		}
		for _, lo := range lines {
			if i, ok := at[lo.Offset]; ok {
				insns[i] = insns[i].WithSource(lo.Line)
			}
		}
		if btf.FuncMetadata(&insns[0]) == nil {
			return nil, fmt.Errorf("no BTF func info")
		}
		return insns, nil
	}
	return nil, fmt.Errorf("no function symbol")
}

// noRelocations refuses relocations of the section at index sec in
// [off, off+size).
func noRelocations(f *elf.File, sec elf.SectionIndex, off, size uint64) error {
	for _, rs := range f.Sections {
		if rs.Type != elf.SHT_REL || elf.SectionIndex(rs.Info) != sec {
			continue
		}
		data, err := rs.Data()
		if err != nil {
			return err
		}
		for i := 0; i+16 <= len(data); i += 16 {
			at := f.ByteOrder.Uint64(data[i:])
			if at >= off && at < off+size {
				return fmt.Errorf("relocations are not supported by bpfvm yet")
			}
		}
	}
	return nil
}
