package bpfvm

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/maps"
)

// checkReplacements fails for a replacement naming no map of the spec, as
// cilium/ebpf's loader does before creating anything.
func checkReplacements(spec *ebpf.CollectionSpec, opts CollectionOptions) error {
	for _, name := range sortedKeys(opts.MapReplacements) {
		if spec.Maps[name] == nil {
			return fmt.Errorf("replacement map %s not found in CollectionSpec", name)
		}
		if opts.MapReplacements[name] == nil {
			return fmt.Errorf("replacement map %s is nil", name)
		}
	}
	return nil
}

// replaceMap returns a clone of m, the replacement for spec, once it is
// compatible: cilium/ebpf's rules, on the map spec creates here (with
// BPF_F_MMAPABLE on data sections), and the collection's number of CPUs
// for per-CPU maps, whose values are one per runner.
func replaceMap(spec *ebpf.MapSpec, m *Map, ncpu int) (*Map, error) {
	s, err := createSpec(spec, ncpu)
	if err != nil {
		return nil, fmt.Errorf("using replacement map %s: %w", spec.Name, err)
	}
	if err := m.compatible(s, ncpu); err != nil {
		return nil, fmt.Errorf("using replacement map %s: %w", spec.Name, err)
	}
	clone, err := m.Clone()
	if err != nil {
		return nil, fmt.Errorf("using replacement map %s: %w", spec.Name, err)
	}
	return clone, nil
}

// compatible fails, with an error wrapping ErrMapIncompatible that lists the
// differences as cilium/ebpf's MapSpec.Compatible does, unless m has the
// type, sizes, max entries and flags of s, and per-CPU values for ncpu
// CPUs.
func (m *Map) compatible(s maps.Spec, ncpu int) error {
	have := m.m.Spec()
	var diffs []string
	if have.Type != s.Type {
		diffs = append(diffs, fmt.Sprintf("Type: %s changed to %s", ebpf.MapType(have.Type), ebpf.MapType(s.Type)))
	}
	if have.KeySize != s.KeySize {
		diffs = append(diffs, fmt.Sprintf("KeySize: %d changed to %d", have.KeySize, s.KeySize))
	}
	if have.ValueSize != s.ValueSize {
		diffs = append(diffs, fmt.Sprintf("ValueSize: %d changed to %d", have.ValueSize, s.ValueSize))
	}
	if have.MaxEntries != s.MaxEntries {
		diffs = append(diffs, fmt.Sprintf("MaxEntries: %d changed to %d", have.MaxEntries, s.MaxEntries))
	}
	flags := s.Flags
	if s.Type == maps.DevMap || s.Type == maps.DevMapHash {
		// The kernel sets BPF_F_RDONLY_PROG on device maps itself.
		flags |= have.Flags & maps.FlagRdonlyProg
	}
	if have.Flags != flags {
		diffs = append(diffs, fmt.Sprintf("Flags: %d changed to %d", have.Flags, flags))
	}
	if have.Type.PerCPU() && m.ncpu != ncpu {
		diffs = append(diffs, fmt.Sprintf("CPUs: %d changed to %d", m.ncpu, ncpu))
	}
	if len(diffs) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %w", strings.Join(diffs, ", "), ErrMapIncompatible)
}
