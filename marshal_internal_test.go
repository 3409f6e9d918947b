package bpfvm

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// Plain values are copied, others encoded by binary.Write: both give the
// bytes binary.Write gives.
func TestMarshalPlain(t *testing.T) {
	type key4 struct {
		PrefixLen uint32
		Addr      [4]byte
	}
	type padded struct {
		A uint8
		B uint32
	}
	type blank struct {
		A uint32
		_ uint32
	}
	for _, tt := range []struct {
		name  string
		v     any
		plain bool
	}{
		{"struct", key4{24, [4]byte{10, 1, 2}}, true},
		{"pointer to struct", &key4{24, [4]byte{10, 1, 2}}, true},
		{"array", [3]uint16{1, 2, 3}, true},
		{"nested", struct {
			K key4
			V [2]int64
		}{key4{1, [4]byte{2}}, [2]int64{-3, 4}}, true},
		{"padded", padded{1, 2}, false},
		{"blank field", blank{A: 1}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var want bytes.Buffer
			if err := binary.Write(&want, binary.NativeEndian, tt.v); err != nil {
				t.Fatal(err)
			}
			_, ok := marshalPlain(tt.v, want.Len())
			if ok != tt.plain {
				t.Errorf("plain %v, want %v", ok, tt.plain)
			}
			got, err := marshal(tt.v, want.Len())
			if err != nil || !bytes.Equal(got, want.Bytes()) {
				t.Errorf("marshal: % x %v, want % x", got, err, want.Bytes())
			}
			out := make([]byte, want.Len())
			copy(out, want.Bytes())
			if tt.plain {
				var k key4
				if tt.name == "struct" {
					if err := unmarshal(out, &k); err != nil || k != tt.v.(key4) {
						t.Errorf("unmarshal: %+v %v", k, err)
					}
				}
			}
		})
	}
}
