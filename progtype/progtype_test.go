package progtype

import "testing"

func TestAccess(t *testing.T) {
	for _, c := range []struct {
		name      string
		typ       *Type
		off, size uint32
		write, ok bool
		kind      Kind
		signed    bool
	}{
		{"xdp data", XDP, 0, 4, false, true, PacketData, false},
		{"xdp data narrow", XDP, 0, 2, false, false, 0, false},
		{"xdp data write", XDP, 0, 4, true, false, 0, false},
		{"xdp ifindex", XDP, 12, 4, false, true, Scalar, false},
		{"xdp ifindex narrow", XDP, 12, 1, false, false, 0, false},
		{"xdp past end", XDP, 24, 4, false, false, 0, false},
		{"skb len byte", SchedCLS, 0, 1, false, true, Scalar, false},
		{"skb mark write tc", SchedCLS, 8, 4, true, true, Scalar, false},
		{"skb mark write socket", SocketFilter, 8, 4, true, false, 0, false},
		{"skb cb element", SocketFilter, 52, 4, true, true, Scalar, false},
		{"skb data tc", SchedCLS, 76, 4, false, true, PacketData, false},
		{"skb data socket", SocketFilter, 76, 4, false, false, 0, false},
		{"skb padding", SchedCLS, 172, 4, false, false, 0, false},
		{"skb len third byte", SocketFilter, 2, 1, false, true, Scalar, false},
		{"skb len misaligned half", SocketFilter, 1, 2, false, false, 0, false},
		{"skb cb u64", SchedCLS, 56, 8, true, true, Scalar, false},
		{"skb cb u64 misaligned", SchedCLS, 52, 8, false, false, 0, false},
		{"skb cb byte store", SocketFilter, 67, 1, true, true, Scalar, false},
		{"skb hash high half", SchedCLS, 70, 2, false, true, Scalar, false},
		{"skb hash store", SchedCLS, 68, 4, true, false, 0, false},
		{"skb wire_len socket", SocketFilter, 160, 4, false, false, 0, false},
		{"skb tstamp_type tc", SchedCLS, 180, 1, false, true, Scalar, false},
		{"skb tstamp_type socket", SocketFilter, 180, 1, false, false, 0, false},
		{"xdp data signed", XDP, 0, 4, false, false, 0, true},
		{"xdp ifindex signed", XDP, 12, 4, false, true, Scalar, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			op := Load
			switch {
			case c.write:
				op = Store
			case c.signed:
				op = LoadSigned
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
		{Name: "misaligned", ContextSize: 16, Fields: []Field{{Name: "x", Offset: 2, Size: 4}}},
		{Name: "array not memory", ContextSize: 16, Fields: []Field{{Name: "x", Offset: 0, Size: 12}}},
		{Name: "backing", ContextSize: 16, Fields: []Field{{Name: "x", Offset: 0, Size: 4, Backing: 3}}},
	}
	for _, typ := range bad {
		if typ.Validate() == nil {
			t.Errorf("%q accepted", typ.Name)
		}
	}
}

func TestConvert(t *testing.T) {
	proto := SchedCLS.Field(16, 4)
	qm := SchedCLS.Field(12, 4)
	cb := SchedCLS.Field(48, 4)
	for _, c := range []struct {
		name            string
		f               *Field
		off, size       uint32
		op              Op
		wantOff, wantSz uint32
	}{
		{"protocol whole", proto, 16, 4, Load, 16, 4},
		{"protocol low half", proto, 16, 2, Load, 16, 2},
		{"protocol high half reads the value", proto, 18, 2, Load, 16, 2},
		{"protocol byte 1", proto, 17, 1, Load, 17, 1},
		{"protocol byte 3", proto, 19, 1, Load, 19, 1},
		{"queue_mapping store keeps two bytes", qm, 12, 4, Store, 12, 2},
		{"cb untouched", cb, 50, 2, Load, 50, 2},
	} {
		off, size := c.f.Convert(c.off, c.size, c.op)
		if off != c.wantOff || size != c.wantSz {
			t.Errorf("%s: %d/%d, want %d/%d", c.name, off, size, c.wantOff, c.wantSz)
		}
	}
}

func TestInputOutput(t *testing.T) {
	ctx := make([]byte, 192)
	ctx[8], ctx[48], ctx[176] = 1, 2, 3 // mark, cb, gso_size
	if err := SchedCLS.CheckInput(ctx); err != nil {
		t.Errorf("inputs refused: %v", err)
	}
	for _, off := range []int{0, 12, 68, 172, 180} {
		bad := make([]byte, 192)
		bad[off] = 1
		if SchedCLS.CheckInput(bad) == nil {
			t.Errorf("non-zero byte %d accepted", off)
		}
	}
	in := make([]byte, 192)
	in[176], in[179] = 5, 1
	run := make([]byte, 192)
	copy(run, in)
	SchedCLS.Truncate(run)
	if run[179] != 0 || run[176] != 5 {
		t.Errorf("gso_size not truncated to its u16: % x", run[176:180])
	}
	run[0], run[8] = 64, 9 // len, mark
	SchedCLS.Output(run, in, 0, 0, 0)
	if run[0] != 0 || run[8] != 9 || run[176] != 5 || run[179] != 1 {
		t.Errorf("output: len %d mark %d gso_size % x", run[0], run[8], run[176:180])
	}
}

// TestValidateSkb checks that a host type on a socket buffer has room for
// struct __sk_buff, whose fields the skb helpers keep.
func TestValidateSkb(t *testing.T) {
	small := &Type{Name: "small", ContextSize: 8, Skb: true}
	if err := small.Validate(); err == nil {
		t.Error("a socket buffer type with an 8-byte context validated")
	}
	whole := &Type{Name: "whole", ContextSize: 192, Skb: true}
	if err := whole.Validate(); err != nil {
		t.Errorf("validate: %v", err)
	}
}
