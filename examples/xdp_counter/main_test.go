package main

import (
	"strings"
	"testing"
)

func TestXDPCounter(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	want := `packet 0 from 203.0.113.1   -> XDP_PASS
packet 1 from 203.0.113.2   -> XDP_PASS
packet 2 from 198.51.100.7  -> XDP_DROP
packet 3 from 203.0.113.1   -> XDP_PASS
198.51.100.7  packets 1 bytes 342 dropped 1
203.0.113.1   packets 2 bytes 584 dropped 0
203.0.113.2   packets 1 bytes 242 dropped 0
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
