// Package bpfvm runs eBPF programs in userspace, without a kernel: it loads
// clang-built objects (or cilium/ebpf CollectionSpecs, e.g. from bpf2go),
// creates their maps in memory outside the Go heap, verifies programs as
// the kernel does and runs them on an interpreter or an x86-64 JIT. Its
// API follows cilium/ebpf's names and signatures, so that
// code written against cilium/ebpf switches by changing the import.
package bpfvm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/loader"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/verifier"
)

// CollectionOptions control loading a collection.
type CollectionOptions struct {
	Programs ProgramOptions
	// NumCPU is the number of runners: how many runs proceed at once, and
	// how many values per-CPU maps keep. Default: GOMAXPROCS.
	NumCPU int
	// Types gives programs host-defined types, by program name or by ELF
	// section name (e.g. SEC("myapp/filter") for a type the kernel lacks).
	Types map[string]*progtype.Type
	// ProgramNames, when not nil, names the programs to load; the others
	// are left out, as libbpf's autoload=false leaves them, so that a tool
	// can load (and report) each program on its own. Every map is still
	// created, and a prog_array slot naming a program left out stays
	// empty. Default: every program.
	ProgramNames []string
}

// Collection is a set of loaded programs and the maps they share.
type Collection struct {
	Programs map[string]*Program
	Maps     map[string]*Map
	cpus     *runner.CPUs
}

// LoadCollection loads an ELF object file: its maps and every program.
func LoadCollection(file string) (*Collection, error) {
	spec, err := loader.LoadCollectionSpec(file)
	if err != nil {
		return nil, err
	}
	return NewCollection(spec)
}

// NewCollection creates the maps and programs of a spec.
func NewCollection(spec *ebpf.CollectionSpec) (*Collection, error) {
	return NewCollectionWithOptions(spec, CollectionOptions{})
}

// NewCollectionWithOptions creates the maps and programs of a spec.
func NewCollectionWithOptions(spec *ebpf.CollectionSpec, opts CollectionOptions) (_ *Collection, err error) {
	coll := &Collection{Programs: map[string]*Program{}, Maps: map[string]*Map{}, cpus: runner.NewCPUs(opts.NumCPU)}
	defer func() {
		if err != nil {
			coll.Close()
		}
	}()
	for _, name := range sortedKeys(spec.Maps) {
		ms, err := withVariables(spec, name)
		if err != nil {
			return nil, err
		}
		m, err := newMap(ms, coll.cpus)
		if err != nil {
			return nil, err
		}
		coll.Maps[name] = m
	}
	names := sortedKeys(spec.Programs)
	if opts.ProgramNames != nil {
		names = nil
		for _, name := range opts.ProgramNames {
			if spec.Programs[name] == nil {
				return nil, fmt.Errorf("program %s: not in the collection", name)
			}
			names = append(names, name)
		}
	}
	for _, name := range names {
		if coll.Programs[name] != nil {
			continue // named twice
		}
		ps := spec.Programs[name]
		insns, refs, funcs, err := convertFuncs(ps)
		if err != nil {
			return nil, fmt.Errorf("program %s: %w", name, err)
		}
		var progMaps []*Map
		for _, ref := range refs {
			m := coll.Maps[ref]
			if m == nil {
				return nil, fmt.Errorf("program %s: missing map %s", name, ref)
			}
			progMaps = append(progMaps, m)
		}
		popts := opts.Programs
		popts.flags, popts.AttachType = ps.Flags, ps.AttachType
		if funcs != nil {
			popts.Funcs = funcs
		}
		if t := opts.Types[name]; t != nil {
			popts.Type = t
		} else if t := opts.Types[ps.SectionName]; t != nil {
			popts.Type = t
		}
		p, err := newProgram(name, ps.Type, insns, progMaps, coll.cpus, popts)
		if err != nil {
			return nil, err
		}
		coll.Programs[name] = p
	}
	// Initial contents naming maps (maps of maps) or programs (program
	// arrays), as cilium/ebpf gives them, once both exist.
	for _, name := range sortedKeys(spec.Maps) {
		for _, kv := range spec.Maps[name].Contents {
			ref, ok := kv.Value.(string)
			if !ok {
				continue
			}
			var value any
			if m := coll.Maps[ref]; m != nil && spec.Maps[name].Type != ebpf.ProgramArray {
				value = m
			} else if p := coll.Programs[ref]; p != nil {
				value = p
			} else if opts.ProgramNames != nil && spec.Programs[ref] != nil {
				continue // a program left out
			} else {
				return nil, fmt.Errorf("map %s: initial contents: no map or program %q", name, ref)
			}
			if err := coll.Maps[name].Update(kv.Key, value, UpdateAny); err != nil {
				return nil, fmt.Errorf("map %s: initial contents: %w", name, err)
			}
		}
		if ms := spec.Maps[name]; freezeOnLoad(ms) && deferredContents(ms) {
			if err := coll.Maps[name].Freeze(); err != nil {
				return nil, err
			}
		}
	}
	return coll, nil
}

// Close stops the collection's runners and closes every program and map
// (see Map.Close and Program.Close): their methods fail with ErrClosed, and
// what another collection still holds (an inner map, a prog_array's
// program) lives until it lets go. Runs in progress finish, on memory that
// lives until they do; Close does not wait for them, so a helper may call
// it. Closing twice, or concurrently with anything, is safe.
func (c *Collection) Close() {
	c.cpus.Close()
	for _, p := range c.Programs {
		p.Close()
	}
	for _, m := range c.Maps {
		m.Close()
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// mapIndex stands in for a map file descriptor while encoding instructions:
// map loads carry the map's index in the program's map table.
type mapIndex int

func (i mapIndex) FD() int { return int(i) }

// convert encodes a ProgramSpec's instructions (with its subprograms already
// appended by cilium/ebpf) into wire instructions. Map references become
// LD_IMM64 with the map's index in refs as immediate.
func convert(spec *ebpf.ProgramSpec) ([]isa.Instruction, []string, error) {
	insns, refs, _, err := convertFuncs(spec)
	return insns, refs, err
}

// convertFuncs is convert, also returning the BTF func_info of the
// program's functions (nil when the spec has none), which cilium/ebpf
// keeps on each function's first instruction.
func convertFuncs(spec *ebpf.ProgramSpec) ([]isa.Instruction, []string, []verifier.FuncInfo, error) {
	insns, refs, err := encode(spec)
	if err != nil {
		return nil, nil, nil, err
	}
	var funcs []verifier.FuncInfo
	pc := 0
	for i := range spec.Instructions {
		ins := &spec.Instructions[i]
		if fn := btf.FuncMetadata(ins); fn != nil {
			funcs = append(funcs, verifier.NewFuncInfo(pc, fn))
		}
		pc += int(ins.Size() / asm.InstructionSize)
	}
	return insns, refs, funcs, nil
}

// encode is convert without func_info.
func encode(spec *ebpf.ProgramSpec) ([]isa.Instruction, []string, error) {
	insns := make(asm.Instructions, len(spec.Instructions))
	copy(insns, spec.Instructions)
	var refs []string
	index := map[string]int{}
	for i := range insns {
		ins := &insns[i]
		if !ins.IsLoadFromMap() {
			continue
		}
		name := ins.Reference()
		if name == "" {
			if m := ins.Map(); m != nil {
				return nil, nil, fmt.Errorf("instruction %d: map loads must reference maps by name", i)
			}
			return nil, nil, fmt.Errorf("instruction %d: map load without a map reference", i)
		}
		idx, ok := index[name]
		if !ok {
			idx = len(refs)
			index[name] = idx
			refs = append(refs, name)
		}
		if err := ins.AssociateMap(mapIndex(idx)); err != nil {
			return nil, nil, fmt.Errorf("instruction %d: %w", i, err)
		}
	}
	if err := loader.ResolveKfuncs(insns); err != nil {
		return nil, nil, err
	}
	var buf bytes.Buffer
	if err := insns.Marshal(&buf, binary.LittleEndian); err != nil {
		var unsat = asm.ErrUnsatisfiedProgramReference
		if errors.Is(err, unsat) {
			return nil, nil, fmt.Errorf("%w (a called function or kfunc is missing)", err)
		}
		return nil, nil, err
	}
	prog, err := isa.DecodeProgram(buf.Bytes())
	if err != nil {
		return nil, nil, err
	}
	// cilium/ebpf writes a function reference's offset as a 64-bit
	// constant, so a backward one (a callback placed before the function
	// that passes it) has all ones in the upper half, which the kernel
	// and Validate ignore: the offset is the lower half, and clearing the
	// upper one keeps dumps readable.
	for i := 0; i+1 < len(prog); i++ {
		if prog[i].IsPseudoFunc() {
			prog[i+1].Imm = 0
		}
		if prog[i].IsLdImm64() {
			i++
		}
	}
	return prog, refs, nil
}

// EncodeProgram returns a ProgramSpec's instructions in wire form, with map
// loads carrying the index of the map in refs (the names of the maps the
// program references) as their immediate.
func EncodeProgram(spec *ebpf.ProgramSpec) (insns []isa.Instruction, refs []string, err error) {
	return convert(spec)
}
