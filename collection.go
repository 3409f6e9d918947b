// Package bpfvm runs eBPF programs in userspace, without a kernel: it loads
// clang-built objects (or cilium/ebpf CollectionSpecs, e.g. from bpf2go),
// creates their maps in memory outside the Go heap, verifies programs as
// the kernel does and runs them on an interpreter or an x86-64 JIT. The
// default engine (ProgramOptions.Engine) is the JIT on linux/amd64, for
// every program it can compile, and the interpreter elsewhere, with the
// same results. Its API follows cilium/ebpf's names and signatures, so
// that code written against cilium/ebpf switches by changing the import
// (see examples/migration); pins live in a Pins namespace rather than on
// bpffs, and programs run with Program.Run rather than being attached.
package bpfvm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/kernelbtf"
	"github.com/bpfvm/bpfvm/loader"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/verifier"
)

// CollectionOptions control loading a collection.
type CollectionOptions struct {
	Programs ProgramOptions
	// Maps control creating the maps: pinning (MapOptions).
	Maps MapOptions
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
	// MapReplacements gives maps to use instead of creating the spec's of
	// the same name, as cilium/ebpf's: each must name a map of the spec,
	// and have its type, key and value sizes, max entries and flags (and,
	// for a per-CPU map, this collection's NumCPU), or loading fails with
	// an error wrapping ErrMapIncompatible. The collection holds a clone
	// (Map.Clone), so the caller may close its map; the replacement's
	// contents are kept (the spec's are not written, nor is a replaced
	// .rodata frozen), except the programs and maps that a prog_array's or
	// map of maps' contents name, which are written as for a created map.
	MapReplacements map[string]*Map
	// Cache shares the host's parsed kernel BTF, the default target of
	// CO-RE relocations (ProgramOptions.KernelTypes), between loads, as
	// cilium/ebpf's CollectionOptions.Cache. Nil: each load parses it,
	// once, if a program has relocations.
	Cache *btf.Cache
}

// Collection is a set of loaded programs and the maps they share.
type Collection struct {
	Programs map[string]*Program
	Maps     map[string]*Map
	// Variables are the global variables of the data sections, read and
	// written in their maps' memory (see Variable).
	Variables map[string]*Variable
	cpus      *runner.CPUs
	closed    atomic.Bool
}

// LoadCollection loads an ELF object file: its maps and every program.
func LoadCollection(file string) (*Collection, error) {
	spec, err := loader.LoadCollectionSpec(file)
	if err != nil {
		return nil, err
	}
	return NewCollection(spec)
}

// CollectionSpecs are the specs NewCollection loads: cilium/ebpf's
// CollectionSpec, or bpfvm's, which wraps one (LoadCollectionSpec), so that
// code switching its import from cilium/ebpf to bpfvm keeps compiling.
type CollectionSpecs interface {
	*ebpf.CollectionSpec | *CollectionSpec
}

// NewCollection creates the maps and programs of a spec.
func NewCollection[S CollectionSpecs](spec S) (*Collection, error) {
	return NewCollectionWithOptions(spec, CollectionOptions{})
}

// NewCollectionWithOptions creates the maps and programs of a spec.
func NewCollectionWithOptions[S CollectionSpecs](spec S, opts CollectionOptions) (*Collection, error) {
	var cs *ebpf.CollectionSpec
	switch s := any(spec).(type) {
	case *ebpf.CollectionSpec:
		cs = s
	case *CollectionSpec:
		if s != nil {
			cs = s.CollectionSpec
		}
	}
	if cs == nil {
		return nil, fmt.Errorf("load collection: nil spec")
	}
	return newCollection(cs, opts)
}

// newCollection is NewCollectionWithOptions.
func newCollection(spec *ebpf.CollectionSpec, opts CollectionOptions) (_ *Collection, err error) {
	coll := &Collection{Programs: map[string]*Program{}, Maps: map[string]*Map{}, cpus: runner.NewCPUs(opts.NumCPU)}
	defer func() {
		if err != nil {
			coll.Close()
		}
	}()
	if err := checkReplacements(spec, opts); err != nil {
		return nil, err
	}
	for _, name := range sortedKeys(spec.Maps) {
		if r := opts.MapReplacements[name]; r != nil {
			m, err := replaceMap(spec.Maps[name], r, coll.cpus.Len())
			if err != nil {
				return nil, err
			}
			coll.Maps[name] = m
			continue
		}
		ms, err := withVariables(spec, name)
		if err != nil {
			return nil, err
		}
		m, err := newPinnedMap(ms, opts.Maps, coll.cpus.Len(), coll.cpus.Domain())
		if err != nil {
			return nil, err
		}
		coll.Maps[name] = m
	}
	targets := newCORETargets(opts.Programs, opts.Cache)
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
		enc, err := convertFuncs(ps, targets)
		if err != nil {
			return nil, fmt.Errorf("program %s: %w", name, err)
		}
		var progMaps []*Map
		for _, ref := range enc.refs {
			m := coll.Maps[ref]
			if m == nil {
				return nil, fmt.Errorf("program %s: missing map %s", name, ref)
			}
			progMaps = append(progMaps, m)
		}
		popts := opts.Programs
		popts.flags, popts.poisons, popts.AttachType, popts.AttachTo, popts.targets = ps.Flags, enc.poisons, ps.AttachType, ps.AttachTo, targets
		popts.localTypes = enc.locals
		if enc.funcs != nil {
			popts.Funcs = enc.funcs
		}
		if lines := lineInfos(ps); lines != nil {
			popts.Lines = lines
		}
		if t := opts.Types[name]; t != nil {
			popts.Type = t
		} else if t := opts.Types[ps.SectionName]; t != nil {
			popts.Type = t
		}
		p, err := newProgram(name, ps.Type, enc.insns, progMaps, coll.cpus, popts)
		if err != nil {
			return nil, err
		}
		p.ref.pin.ns = opts.Maps.Pins
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
		if ms := spec.Maps[name]; freezeOnLoad(ms) && deferredContents(ms) && opts.MapReplacements[name] == nil {
			if err := coll.Maps[name].Freeze(); err != nil {
				return nil, err
			}
		}
	}
	if coll.Variables, err = newVariables(spec, coll.Maps); err != nil {
		return nil, err
	}
	return coll, nil
}

// Close stops the collection's runners and closes every program and map
// still in it (see Map.Close and Program.Close): their methods fail with
// ErrClosed, and what another collection still holds (an inner map, a
// prog_array's program) lives until it lets go. Programs the collection
// handed out (Assign, DetachProgram) keep running: the runners stop once
// the last of them is closed too. Runs in progress finish, on memory that
// lives until they do; Close does not wait for them, so a helper may call
// it. Closing twice, or concurrently with anything, is safe.
func (c *Collection) Close() {
	if !c.closed.Swap(true) {
		c.cpus.Drop()
	}
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

// encoded is a ProgramSpec in wire form.
type encoded struct {
	insns []isa.Instruction
	// refs are the names of the maps, by the index map loads carry.
	refs []string
	// funcs is the BTF func_info of the program's functions (nil when
	// the spec has none), which cilium/ebpf keeps on each function's
	// first instruction.
	funcs []verifier.FuncInfo
	// poisons are the instructions CO-RE poisoned.
	poisons []loader.Poison
	// locals are the local types CO-RE numbered (bpf_core_type_id_local).
	locals map[btf.TypeID]btf.Type
}

// convertFuncs encodes a ProgramSpec's instructions (with its subprograms
// already appended by cilium/ebpf) into wire instructions, with its CO-RE
// relocations applied against targets. Map references become LD_IMM64 with
// the map's index in refs as immediate.
func convertFuncs(spec *ebpf.ProgramSpec, targets *coreTargets) (encoded, error) {
	insns := make(asm.Instructions, len(spec.Instructions))
	copy(insns, spec.Instructions)
	poisons, locals, err := loader.RelocateCORELocal(insns, spec.ByteOrder, targets.get)
	if err != nil {
		return encoded{}, err
	}
	prog, refs, err := encode(insns)
	if err != nil {
		return encoded{}, err
	}
	// From the spec: a poisoned instruction has lost its metadata.
	var funcs []verifier.FuncInfo
	pc := 0
	for i := range spec.Instructions {
		ins := &spec.Instructions[i]
		if fn := btf.FuncMetadata(ins); fn != nil {
			funcs = append(funcs, verifier.NewFuncInfo(pc, fn))
		}
		pc += int(ins.Size() / asm.InstructionSize)
	}
	return encoded{insns: prog, refs: refs, funcs: funcs, poisons: poisons, locals: locals}, nil
}

// lineInfos returns a program's BTF line_info, one record per instruction
// that starts a source line, for the verifier log.
func lineInfos(spec *ebpf.ProgramSpec) []verifier.LineInfo {
	var lines []verifier.LineInfo
	pc := 0
	for i := range spec.Instructions {
		ins := &spec.Instructions[i]
		if li, ok := ins.Source().(*btf.Line); ok && li != nil {
			lines = append(lines, verifier.LineInfo{Insn: pc, File: li.FileName(), Line: li.Line(), LineNum: li.LineNumber(), Column: li.LineColumn()})
		}
		pc += int(ins.Size() / asm.InstructionSize)
	}
	return lines
}

// encode turns instructions into wire form, in place: map references
// become LD_IMM64 with the map's index in refs as immediate.
func encode(insns asm.Instructions) ([]isa.Instruction, []string, error) {
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
	keepAddrSpaceCasts(insns, prog)
	return prog, refs, nil
}

// EncodeProgram returns a ProgramSpec's instructions in wire form, with map
// loads carrying the index of the map in refs (the names of the maps the
// program references) as their immediate.
// CO-RE relocations are applied against the default target BTF (see
// ProgramOptions.KernelTypes).
func EncodeProgram(spec *ebpf.ProgramSpec) (insns []isa.Instruction, refs []string, err error) {
	enc, err := convertFuncs(spec, newCORETargets(ProgramOptions{}, nil))
	return enc.insns, enc.refs, err
}

// coreTargets is the target BTF of a load's CO-RE relocations, found
// once, when the first program that has relocations asks.
type coreTargets struct {
	kernel *btf.Spec
	extra  []*btf.Spec
	cache  *btf.Cache
	specs  []*btf.Spec
	err    error
	done   bool
}

func newCORETargets(opts ProgramOptions, cache *btf.Cache) *coreTargets {
	return &coreTargets{kernel: opts.KernelTypes, extra: opts.ExtraRelocationTargets, cache: cache}
}

func (t *coreTargets) get() ([]*btf.Spec, error) {
	if t.done {
		return t.specs, t.err
	}
	t.done = true
	if t.kernel != nil {
		t.specs = []*btf.Spec{t.kernel}
	} else {
		t.specs, t.err = kernelbtf.Targets(t.cache)
	}
	if t.err == nil {
		t.specs = append(t.specs, t.extra...)
	}
	return t.specs, t.err
}
