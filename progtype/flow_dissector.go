package progtype

import (
	"encoding/binary"
	"fmt"
)

// FlowDissector is BPF_PROG_TYPE_FLOW_DISSECTOR with struct __sk_buff
// (flow_dissector_is_valid_access): only data and data_end, packet
// pointers the program may read through but not write, and flow_keys, the
// struct bpf_flow_keys it fills, are readable; nothing is writable. It
// has no return range.
//
// The test run is the kernel's (bpf_prog_test_run_flow_dissector): the
// program sees the whole frame, link header included; the context input
// is a struct bpf_flow_keys of which only flags may be set; the keys start
// zero but for n_proto (the frame's Ethernet type), nhoff and thoff (the
// Ethernet header's length) and flags; the output packet is the keys after
// the run, nhoff and thoff clamped to the frame, and the context output
// the input.
var FlowDissector = &Type{
	Name:        "flow_dissector",
	ContextSize: 192,
	Fields: []Field{
		{Name: "data", Offset: 76, Size: 4, Read: true, Kind: PacketData},
		{Name: "data_end", Offset: 80, Size: 4, Read: true, Kind: PacketEnd},
		{Name: "flow_keys", Offset: 144, Size: 8, Read: true, Kind: FlowKeys},
	},
	ContextNames:   []string{"__sk_buff", "bpf_flow_dissector"},
	PacketReadOnly: true,
	MinData:        ethHeader,
	Helpers:        Helpers(names(CapNone, "skb_load_bytes"), sockBaseHelpers),
	// bpf_flow_dissector_load_bytes reads the skb, which test runs have
	// none of (-EFAULT), not the packet.
	Unimplemented: map[string]bool{"bpf_skb_load_bytes": true},
	Keys: &KeysRun{
		Check: func(in []byte) error {
			for i, b := range in {
				if b != 0 && (i < flowKeysFlags || i >= flowKeysFlags+4) {
					return fmt.Errorf("struct bpf_flow_keys input: byte %d is not in flags", i)
				}
			}
			return nil
		},
		Reset: func(keys, in, frame []byte) {
			clear(keys)
			le := binary.LittleEndian
			le.PutUint16(keys[flowKeysNhoff:], ethHeader)
			le.PutUint16(keys[flowKeysThoff:], ethHeader)
			// n_proto stays in network byte order.
			copy(keys[flowKeysNProto:flowKeysNProto+2], frame[12:14])
			copy(keys[flowKeysFlags:flowKeysFlags+4], in[flowKeysFlags:])
		},
		Finish: func(keys []byte, frame int) {
			le := binary.LittleEndian
			nh := clampU16(le.Uint16(keys[flowKeysNhoff:]), ethHeader, frame)
			le.PutUint16(keys[flowKeysNhoff:], nh)
			le.PutUint16(keys[flowKeysThoff:], clampU16(le.Uint16(keys[flowKeysThoff:]), int(nh), frame))
		},
	},
}

// struct bpf_flow_keys offsets.
const (
	flowKeysNhoff  = 0
	flowKeysThoff  = 2
	flowKeysNProto = 10
	flowKeysFlags  = 48
)

// clampU16 clamps v to [lo, hi] as the kernel's clamp_t(u16, ...): the
// bounds are taken as u16 too.
func clampU16(v uint16, lo, hi int) uint16 {
	return min(max(v, uint16(lo)), uint16(hi))
}
