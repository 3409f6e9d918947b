package bpfvm

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/maps"
)

// MapLookupFlags control lookups (LookupWithFlags), as cilium/ebpf's type.
type MapLookupFlags = ebpf.MapLookupFlags

// LookupLock is BPF_F_LOCK: look up a value under its bpf_spin_lock. bpfvm's
// values hold none, so the kernel's EINVAL for such maps is all it gives.
const LookupLock = ebpf.LookupLock

// LookupWithFlags is Lookup with the kernel's lookup flags. Every flag is
// refused with an error wrapping EINVAL (maps.ErrInvalid): BPF_F_LOCK
// needs a bpf_spin_lock in the value, which bpfvm's maps never have.
func (m *Map) LookupWithFlags(key, valueOut any, flags MapLookupFlags) error {
	if flags != 0 {
		return m.refuseFlags("lookup", flags)
	}
	return m.Lookup(key, valueOut)
}

// LookupAndDeleteWithFlags is LookupAndDelete with the kernel's lookup
// flags, refused as LookupWithFlags refuses them.
func (m *Map) LookupAndDeleteWithFlags(key, valueOut any, flags MapLookupFlags) error {
	if flags != 0 {
		return m.refuseFlags("lookup and delete", flags)
	}
	return m.LookupAndDelete(key, valueOut)
}

// refuseFlags is the error for lookup flags: ErrClosed on a closed map,
// else EINVAL.
func (m *Map) refuseFlags(op string, flags MapLookupFlags) error {
	if err := m.hold(op); err != nil {
		return err
	}
	m.m.Release()
	return fmt.Errorf("map %s: %s: flags %#x: %w", m.name, op, uint64(flags), maps.ErrInvalid)
}

// LookupBytes returns the value of key as bytes (for a per-CPU map, every
// CPU's, each padded to 8 bytes), or nil when the map lacks key, as
// cilium/ebpf's.
func (m *Map) LookupBytes(key any) ([]byte, error) {
	v, err := m.lookupBytes(key)
	if errors.Is(err, ErrKeyNotExist) {
		return nil, nil
	}
	return v, err
}

func (m *Map) lookupBytes(key any) ([]byte, error) {
	if !m.perCPU() {
		v := make([]byte, m.ValueSize())
		return v, m.Lookup(key, v)
	}
	if err := m.begin("lookup", accessRead); err != nil {
		return nil, err
	}
	defer m.end(accessRead)
	k, err := m.key(key)
	if err != nil {
		return nil, err
	}
	v := make([]byte, maps.ValueSizeBytes(m.m.Spec(), m.ncpu))
	if err := m.m.LookupBytes(k, v); err != nil {
		return nil, fmt.Errorf("map %s: lookup: %w", m.name, err)
	}
	return v, nil
}

// NextKeyBytes returns the key after key (the first when key is nil) as
// bytes, or nil after the last, as cilium/ebpf's.
func (m *Map) NextKeyBytes(key any) ([]byte, error) {
	next := make([]byte, m.KeySize())
	if err := m.NextKey(key, next); err != nil {
		if errors.Is(err, ErrKeyNotExist) {
			return nil, nil
		}
		return nil, err
	}
	return next, nil
}
