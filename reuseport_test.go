package bpfvm_test

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"syscall"
	"testing"

	"github.com/bpfvm/bpfvm"
)

// TestReuseportSelect runs reuseport.o's select_udp in a world of
// sockets described by hand: bpf_sk_select_reuseport takes the group's
// sockets and gives the kernel's errors for the others (compared with
// the kernel's steering of real packets by TestReuseportKernel); a
// socket is in one reuseport array slot at a time (EBUSY).
func TestReuseportSelect(t *testing.T) {
	// The kernel's errnos, which programs see on every host.
	const (
		enoent       = 2
		ebadfd       = 77
		eprototype   = 91
		eafnosupport = 97
	)
	lo := netip.MustParseAddrPort("127.0.0.1:7000")
	group := func(cookie uint64) bpfvm.Socket {
		return bpfvm.Socket{Cookie: cookie, Protocol: 17, Local: lo, Reuseport: true}
	}
	socks := []bpfvm.Socket{
		group(101), group(102),
		{Cookie: 103, Protocol: 17, Local: netip.MustParseAddrPort("127.0.0.1:7001"), Reuseport: true},
		{Cookie: 104, Protocol: 6, Local: lo, Reuseport: true},
		{Cookie: 105, Protocol: 17, Local: netip.MustParseAddrPort("[::1]:7000"), Reuseport: true, V6Only: true},
		{Cookie: 106, Protocol: 17, Local: lo},
		{Cookie: 107, Protocol: 17, Local: lo, Reuseport: true, UID: 1000},
	}
	modes(t, func(t *testing.T, noVerify bool) {
		c := loadVM(t, noVerify, "testdata/reuseport.o", bpfvm.CollectionOptions{})
		m := c.Maps["socks"]
		// Slot 6 holds a socket the world lacks (closed); 7 is empty.
		for i, cookie := range []uint64{101, 102, 103, 104, 105, 106, 999} {
			if err := m.Update(uint32(i), cookie, bpfvm.UpdateAny); err != nil {
				t.Fatal(err)
			}
		}
		defer func() {
			for i := range uint32(8) {
				m.Delete(i)
			}
		}()
		if err := m.Update(uint32(7), uint64(101), bpfvm.UpdateAny); !errors.Is(err, syscall.EBUSY) {
			t.Errorf("a socket in a second slot: %v, want EBUSY", err)
		}
		world := &bpfvm.Net{Socket: &socks[0], Sockets: socks}
		ctx := make([]byte, 56)
		binary.NativeEndian.PutUint16(ctx[20:], 0x0008)
		ctx[24] = 17
		for _, tc := range []struct {
			key   byte
			errno int32
		}{
			{0, 0}, {1, 0}, {2, ebadfd}, {3, eprototype}, {4, eafnosupport},
			{5, enoent}, {6, enoent}, {7, enoent}, {8, enoent},
		} {
			data := make([]byte, 10)
			data[8] = tc.key
			res, err := c.Programs["select_udp"].Execute(&bpfvm.RunOptions{Data: data, Context: ctx, Net: world})
			if err != nil {
				t.Fatal(err)
			}
			var got uint64
			if err := c.Maps["seen"].Lookup(uint32(0), &got); err != nil {
				t.Fatal(err)
			}
			if -int32(got) != tc.errno || res.Redirect.Valid != (tc.errno == 0) {
				t.Errorf("key %d: errno %d, redirect %+v; want errno %d", tc.key, -int32(got), res.Redirect, tc.errno)
			}
		}
		// A socket of another owner is of another group.
		if err := m.Update(uint32(7), uint64(107), bpfvm.UpdateAny); err != nil {
			t.Fatal(err)
		}
		data := make([]byte, 10)
		data[8] = 7
		if _, err := c.Programs["select_udp"].Execute(&bpfvm.RunOptions{Data: data, Context: ctx, Net: world}); err != nil {
			t.Fatal(err)
		}
		var got uint64
		c.Maps["seen"].Lookup(uint32(0), &got)
		if -int32(got) != ebadfd {
			t.Errorf("another owner's socket: errno %d, want EBADFD", -int32(got))
		}
	})
}
