package helper

import (
	"encoding/binary"
	"testing"
)

// cookieOf builds the tuple of a SYN from its fields.
func cookieOf(src, dst []byte, sport, dport uint16, isn, minute uint32, secret [16]byte, v6 bool) *cookieTuple {
	t := &cookieTuple{src: src, dst: dst, sport: sport, dport: dport, seq: isn, secret: secret, minute: minute, mssTab: &mssTab4}
	if v6 {
		t.mssTab = &mssTab6
	}
	return t
}

// FuzzSyncookie checks the TCP option parser on any header (no panic, an
// MSS only from a well-formed option) and that a cookie made for a tuple
// checks at its minute and the next and not two later, and encodes the
// table's MSS at most the one asked for (or the smallest).
func FuzzSyncookie(f *testing.F) {
	f.Add([]byte{0x60, 0x02, 2, 4, 0x05, 0xb4}, uint16(1460), uint32(7), uint32(1000), false)
	f.Add([]byte{0xf0, 0x02, 1, 1, 0, 2, 4, 1, 1}, uint16(100), uint32(0xffffffff), uint32(0), true)
	f.Fuzz(func(t *testing.T, hdr []byte, mss uint16, minute, isn uint32, v6 bool) {
		th := make([]byte, tcpHdrLen+len(hdr))
		copy(th[12:], hdr)
		if got := parseMSS(th); got != 0 {
			found := false
			opts := th[tcpHdrLen:max(tcpHdrLen, min(len(th), int(th[12]>>4)*4))]
			for i := 0; i+4 <= len(opts); i++ {
				if opts[i] == 2 && opts[i+1] == 4 && binary.BigEndian.Uint16(opts[i+2:]) == got {
					found = true
				}
			}
			if !found {
				t.Fatalf("parseMSS = %d, no such option in % x", got, opts)
			}
		}
		n := 4
		if v6 {
			n = 16
		}
		src, dst := make([]byte, n), make([]byte, n)
		copy(src, hdr)
		var secret [16]byte
		copy(secret[:], hdr)
		c := cookieOf(src, dst, 1, 2, isn, minute, secret, v6)
		cookie, got := c.make(mss)
		if got > mss && got != c.mssTab[0] {
			t.Fatalf("MSS %d encoded for %d", got, mss)
		}
		for age, want := range []bool{true, true, false} {
			later := cookieOf(src, dst, 1, 2, isn, minute+uint32(age), secret, v6)
			if later.valid(cookie) != want {
				t.Fatalf("cookie of minute %d at minute +%d: valid %v", minute, age, !want)
			}
		}
	})
}
