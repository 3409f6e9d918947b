package bpfvm

import (
	"fmt"

	"github.com/bpfvm/bpfvm/maps"
)

// The Go-side operations of socket storages (BPF_MAP_TYPE_SK_STORAGE) by
// socket. The kernel's keys are socket file descriptors; bpfvm's sockets
// are cookies of the host's world (Socket.Cookie, what
// bpf_get_socket_cookie returns), so Lookup, Update and Delete with a key
// fail with EBADF on these maps and these methods take the cookie instead.

// socketStorage returns the socket storage behind m.
func (m *Map) socketStorage(op string) (*maps.SocketStorage, error) {
	s, ok := m.m.(*maps.SocketStorage)
	if !ok {
		return nil, fmt.Errorf("map %s: %s: a %s is no socket storage: %w", m.name, op, m.m.Spec().Type, maps.ErrInvalid)
	}
	return s, nil
}

// LookupSocket copies the storage of the socket with that cookie into
// valueOut (as Lookup's).
func (m *Map) LookupSocket(cookie uint64, valueOut any) error {
	if err := m.begin("lookup", accessRead); err != nil {
		return err
	}
	defer m.end(accessRead)
	s, err := m.socketStorage("lookup")
	if err != nil {
		return err
	}
	v := make([]byte, m.ValueSize())
	if err := s.LookupSocket(cookie, v); err != nil {
		return fmt.Errorf("map %s: lookup: %w", m.name, err)
	}
	return m.decode(v, valueOut)
}

// UpdateSocket sets the storage of the socket with that cookie, according
// to flags.
func (m *Map) UpdateSocket(cookie uint64, value any, flags MapUpdateFlags) error {
	if err := m.begin("update", accessWrite); err != nil {
		return err
	}
	defer m.end(accessWrite)
	s, err := m.socketStorage("update")
	if err != nil {
		return err
	}
	v, err := m.value(value)
	if err != nil {
		return err
	}
	if err := s.UpdateSocket(cookie, v, uint64(flags)); err != nil {
		return fmt.Errorf("map %s: update: %w", m.name, err)
	}
	return nil
}

// DeleteSocket removes the storage of the socket with that cookie.
func (m *Map) DeleteSocket(cookie uint64) error {
	if err := m.begin("delete", accessWrite); err != nil {
		return err
	}
	defer m.end(accessWrite)
	s, err := m.socketStorage("delete")
	if err != nil {
		return err
	}
	if err := s.DeleteSocket(cookie); err != nil {
		return fmt.Errorf("map %s: delete: %w", m.name, err)
	}
	return nil
}
