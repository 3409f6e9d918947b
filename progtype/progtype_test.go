package progtype

import "testing"

func TestAccess(t *testing.T) {
	for _, c := range []struct {
		name      string
		typ       *Type
		off, size uint32
		write, ok bool
		kind      Kind
	}{
		{"xdp data", XDP, 0, 4, false, true, PacketData},
		{"xdp data narrow", XDP, 0, 2, false, false, 0},
		{"xdp data write", XDP, 0, 4, true, false, 0},
		{"xdp ifindex", XDP, 12, 4, false, true, Scalar},
		{"xdp ifindex narrow", XDP, 12, 1, false, false, 0},
		{"xdp past end", XDP, 24, 4, false, false, 0},
		{"skb len byte", SchedCLS, 0, 1, false, true, Scalar},
		{"skb mark write tc", SchedCLS, 8, 4, true, true, Scalar},
		{"skb mark write socket", SocketFilter, 8, 4, true, false, 0},
		{"skb cb element", SocketFilter, 52, 4, true, true, Scalar},
		{"skb data tc", SchedCLS, 76, 4, false, true, PacketData},
		{"skb data socket", SocketFilter, 76, 4, false, false, 0},
		{"skb padding", SchedCLS, 172, 4, false, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			op := Load
			if c.write {
				op = Store
			}
			f, err := c.typ.Access(c.off, c.size, op)
			if (err == nil) != c.ok {
				t.Fatalf("got %v, want ok=%v", err, c.ok)
			}
			if err == nil && f.Kind != c.kind {
				t.Errorf("kind %v, want %v", f.Kind, c.kind)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	for _, typ := range []*Type{XDP, SocketFilter, SchedCLS, SchedACT} {
		if err := typ.Validate(); err != nil {
			t.Errorf("%s: %v", typ.Name, err)
		}
	}
	bad := []*Type{
		{},
		{Name: "outside", ContextSize: 8, Fields: []Field{{Name: "x", Offset: 4, Size: 8}}},
		{Name: "overlap", ContextSize: 16, Fields: []Field{{Name: "a", Offset: 0, Size: 8}, {Name: "b", Offset: 4, Size: 4}}},
		{Name: "ptr size", ContextSize: 16, Fields: []Field{{Name: "p", Offset: 0, Size: 2, Kind: PacketData}}},
	}
	for _, typ := range bad {
		if typ.Validate() == nil {
			t.Errorf("%q accepted", typ.Name)
		}
	}
}
