package verifier_test

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/maps"
)

// TestSelftestPointerArithmetic covers arithmetic on each pointer type:
// constant and bounded variable offsets, the forbidden operators, pointer
// differences, and the offset limits.
func TestSelftestPointerArithmetic(t *testing.T) {
	m := []maps.Spec{val48}
	val := lookup4 + "if r0 == 0 goto out\n"
	out := "\nout: r0 = 0\nexit"
	runCases(t, []vcase{
		// Context.
		{name: "ctx plus const", asm: "r1 += 4\nr0 = *(u32 *)(r1 +0)\nexit", err: "dereference of modified ctx ptr R1 off=4 disallowed", kmsg: true},
		{name: "ctx minus const", asm: "r1 -= 4\nr0 = *(u32 *)(r1 +16)\nexit", err: "negative offset ctx ptr R1 off=-4 disallowed", kmsg: true},
		{name: "ctx plus and minus", asm: "r1 += 4\nr1 += -4\nr0 = *(u32 *)(r1 +12)\nexit"},
		{name: "ctx variable offset", asm: "r2 = *(u32 *)(r1 +12)\nr2 &= 4\nr1 += r2\nr0 = *(u32 *)(r1 +12)\nexit", err: "variable ctx access var_off=(0x0; 0x4) disallowed", kmsg: true},
		{name: "ctx variable offset zero", asm: "r2 = 0\nr1 += r2\nr0 = *(u32 *)(r1 +12)\nexit"},
		{name: "ctx modified to helper", typ: ebpf.SchedCLS, asm: "r1 += 8\nr2 = 0\nr3 = r10\nr3 += -8\nr4 = 4\ncall bpf_skb_load_bytes#26\nr0 = 0\nexit", err: "dereference of modified ctx ptr R1 off=8 disallowed", kmsg: true},
		{name: "ctx 32-bit add", asm: "w1 += 4\nr0 = 0\nexit", err: "R1 32-bit pointer arithmetic prohibited", kmsg: true},
		// Stack.
		{name: "fp plus negative", asm: "r1 = r10\nr1 += -8\n*(u64 *)(r1 +0) = 0\nr0 = *(u64 *)(r10 -8)\nexit"},
		{name: "fp minus const", asm: "r1 = r10\nr1 -= 8\n*(u64 *)(r1 +0) = 0\nr0 = 0\nexit", err: "R1 subtraction from stack pointer prohibited", kmsg: true},
		{name: "fp plus bounded var write", asm: "r2 = *(u32 *)(r1 +12)\nr2 &= 7\nr1 = r10\nr1 += -16\nr1 += r2\n*(u8 *)(r1 +0) = 0\nr0 = 0\nexit"},
		{name: "fp plus var out of frame", asm: "r2 = *(u32 *)(r1 +12)\nr2 &= 0xff\nr1 = r10\nr1 += -8\nr1 += r2\n*(u8 *)(r1 +0) = 0\nr0 = 0\nexit", err: "invalid variable-offset write to stack R1 var_off=(0x0; 0xff) off=-8 size=1", kmsg: true},
		{name: "fp minus var", asm: "r2 = *(u32 *)(r1 +12)\nr2 &= 0xff\nr1 = r10\nr1 += -300\nr1 -= r2\n*(u8 *)(r1 +0) = 0\nr0 = 0\nexit", err: "R1 subtraction from stack pointer prohibited", kmsg: true},
		{name: "fp plus var below frame", asm: "r2 = *(u32 *)(r1 +12)\nr2 &= 0xff\nr1 = r10\nr1 += -300\nr1 += r2\nr1 += -300\n*(u8 *)(r1 +0) = 0\nr0 = 0\nexit", err: "invalid variable-offset write to stack R1 var_off=(0x0; 0xff) off=-600 size=1", kmsg: true},
		{name: "fp plus huge const", asm: "r1 = r10\nr1 += 0x20000000\nr0 = 0\nexit", err: "math between fp pointer and 536870912 is not allowed", kmsg: true},
		{name: "fp plus huge negative", asm: "r1 = r10\nr1 += -0x20000000\nr0 = 0\nexit", err: "math between fp pointer and -536870912 is not allowed", kmsg: true},
		{name: "fp out of bounds no access", asm: "r1 = r10\nr1 += -1000\nr0 = 0\nexit"},
		{name: "fp 32-bit sub", asm: "r1 = r10\nw1 -= 8\nr0 = 0\nexit"},
		// Map values.
		{name: "value plus const", maps: m, asm: val + "r0 += 40\nr0 = *(u64 *)(r0 +0)" + out},
		{name: "value plus const past end", maps: m, asm: val + "r0 += 41\nr0 = *(u64 *)(r0 +0)" + out, err: "invalid access to map value, value_size=48 off=41 size=8", kmsg: true},
		{name: "value minus const", maps: m, asm: val + "r0 += -1\nr0 = *(u8 *)(r0 +0)" + out, err: "invalid access to map value, value_size=48 off=-1 size=1", kmsg: true},
		{name: "value minus then plus", maps: m, asm: val + "r0 -= 8\nr0 = *(u64 *)(r0 +8)" + out},
		{name: "value plus const register", maps: m, asm: val + "r1 = 8\nr0 += r1\nr0 = *(u64 *)(r0 +32)" + out},
		{name: "value const register past end", maps: m, asm: val + "r1 = 8\nr0 += r1\nr0 = *(u64 *)(r0 +33)" + out, err: "invalid access to map value, value_size=48 off=41 size=8", kmsg: true},
		{name: "value plus var plus const", maps: m, asm: val + "r1 = *(u32 *)(r0 +0)\nr1 &= 15\nr0 += r1\nr0 += 8\nr0 = *(u64 *)(r0 +17)" + out},
		{name: "value plus var plus const past end", maps: m, asm: val + "r1 = *(u32 *)(r0 +0)\nr1 &= 15\nr0 += r1\nr0 += 8\nr0 = *(u64 *)(r0 +18)" + out, err: "R0 max value is outside of the allowed memory range", kmsg: true},
		{name: "scalar plus value", maps: m, asm: val + "r1 = *(u32 *)(r0 +0)\nr1 &= 31\nr1 += r0\nr0 = *(u64 *)(r1 +0)" + out},
		// The kernel rejects any possibly negative variable part of a map value
		// offset (its unsigned bounds become unknown), whatever the fixed offset.
		{name: "value minus var", maps: m, asm: val + "r1 = *(u32 *)(r0 +0)\nr1 &= 7\nr0 += 16\nr0 -= r1\nr0 = *(u64 *)(r0 +0)" + out, err: "R0 unbounded memory access, make sure to bounds check any such access", kmsg: true},
		{name: "value minus var below", maps: m, asm: val + "r1 = *(u32 *)(r0 +0)\nr1 &= 31\nr0 += 16\nr0 -= r1\nr0 = *(u64 *)(r0 +0)" + out, err: "R0 min value is negative"},
		{name: "value var too large", maps: m, asm: val + "r1 = *(u32 *)(r0 +0)\nr1 &= 0x3fffffff\nr0 += r1\nr0 = *(u8 *)(r0 +0)" + out, err: "R0 unbounded memory access", kmsg: true},
		{name: "value var out of bounds value", maps: m, asm: val + "r1 = *(u32 *)(r0 +0)\nr1 &= 0xffff\nr1 -= 0x20000000\nr0 += r1\nr0 = 0\nexit" + out, err: "value -536870912 makes map_value pointer be out of bounds", kmsg: true},
		{name: "value offset overflow", maps: m, asm: val + "r0 += 0x1fffffff\nr0 += 0x1fffffff\nr0 = 0" + out, err: "pointer offset 1073741822 is not allowed", kmsg: true},
		{name: "value unbounded min", maps: m, asm: val + "r1 = *(u64 *)(r0 +0)\nr0 += r1\nr0 = 0" + out, err: "math between map_value pointer and register with unbounded min value is not allowed", kmsg: true},
		{name: "value or null plus const", maps: m, asm: lookup4 + "r0 += 8\nr0 = 0\nexit", err: "R0 pointer arithmetic on map_value_or_null prohibited, null-check it first", kmsg: true},
		{name: "map ptr plus const", maps: m, asm: "r1 = map[fd:0] ll\nr1 += 8\nr0 = 0\nexit", err: "R1 pointer arithmetic on map_ptr prohibited", kmsg: true},
		{name: "map ptr minus const", maps: m, asm: "r1 = map[fd:0] ll\nr1 -= 8\nr0 = 0\nexit", err: "R1 pointer arithmetic on map_ptr prohibited", kmsg: true},
		{name: "map ptr plus zero", maps: m, asm: "r1 = map[fd:0] ll\nr1 += 0\nr0 = 0\nexit"},
		// Forbidden operators.
		{name: "pointer plus pointer", asm: "r2 = r10\nr2 += r1\nr0 = 0\nexit", err: "R2 pointer += pointer prohibited", kmsg: true},
		{name: "pointer minus pointer", asm: "r2 = r10\nr2 -= r1\nr0 = r2\nexit"},
		{name: "pointer minus pointer 32", asm: "r2 = r10\nw2 -= w1\nr0 = 0\nexit"},
		{name: "scalar minus pointer", asm: "r0 = 0\nr0 -= r1\nexit", err: "R0 tried to subtract pointer from scalar", kmsg: true},
		{name: "pointer mul", asm: "r1 *= 2\nr0 = 0\nexit", err: "R1 pointer arithmetic with *= operator prohibited", kmsg: true},
		{name: "pointer div", asm: "r1 /= 2\nr0 = 0\nexit", err: "R1 pointer arithmetic with /= operator prohibited", kmsg: true},
		{name: "pointer lsh", asm: "r1 <<= 2\nr0 = 0\nexit", err: "R1 pointer arithmetic with <<= operator prohibited", kmsg: true},
		{name: "pointer and", asm: "r1 &= 0xff\nr0 = 0\nexit", err: "R1 bitwise operator &= on pointer prohibited", kmsg: true},
		{name: "pointer or", asm: "r1 |= 1\nr0 = 0\nexit", err: "R1 bitwise operator |= on pointer prohibited", kmsg: true},
		{name: "pointer xor", asm: "r1 ^= 1\nr0 = 0\nexit", err: "R1 bitwise operator ^= on pointer prohibited", kmsg: true},
		{name: "scalar and pointer", asm: "r0 = 0xff\nr0 &= r1\nexit", err: "R0 bitwise operator &= on pointer prohibited", kmsg: true},
		{name: "scalar mul pointer", asm: "r0 = 2\nr0 *= r1\nexit", err: "R0 pointer arithmetic with *= operator prohibited", kmsg: true},
		{name: "scalar plus map ptr zero", maps: m, asm: "r0 = 0\nr1 = map[fd:0] ll\nr0 += r1\nr1 = r0\nr2 = r10\nr2 += -4\n*(u32 *)(r2 +0) = 0\ncall bpf_map_lookup_elem#1\nr0 = 0\nexit"},
		{name: "scalar and pointer unpriv", asm: "r0 = 0xff\nr0 &= r1\nr0 = 0\nexit", err: "R0 bitwise operator &= on pointer prohibited", unpriv: true},
		{name: "pointer minus pointer unpriv", asm: "r2 = r10\nr2 -= r1\nr0 = 0\nexit", err: "R2 pointer -= pointer prohibited", unpriv: true},
		{name: "fp 32-bit sub unpriv", asm: "r1 = r10\nw1 -= 8\nr0 = 0\nexit", err: "R1 32-bit pointer arithmetic prohibited", unpriv: true},
		// Packet.
		{name: "pkt_end plus", asm: xdpPkt + "r3 += 1\nr0 = 0\nexit", err: "R3 pointer arithmetic on pkt_end prohibited", kmsg: true},
		{name: "pkt_end minus", asm: xdpPkt + "r3 -= 1\nr0 = 0\nexit", err: "R3 pointer arithmetic on pkt_end prohibited", kmsg: true},
		{name: "pkt minus pkt", asm: xdpPkt + "r3 -= r2\nr0 = r3\nexit"},
		{name: "pkt unbounded min", asm: xdpPkt + "r4 = *(u64 *)(r10 -8)\nr2 += r4\nr0 = 0\nexit", err: "math between pkt pointer and register with unbounded min value is not allowed", kmsg: true},
		{name: "pkt plus huge", asm: xdpPkt + "r2 += 0x20000000\nr0 = 0\nexit", err: "math between pkt pointer and 536870912 is not allowed", kmsg: true},
		{name: "pkt offset overflow", asm: xdpPkt + "r2 += 0x1fffffff\nr2 += 0x1fffffff\nr0 = 0\nexit", err: "pointer offset 1073741822 is not allowed", kmsg: true},
		{name: "pkt meta plus", asm: "r2 = *(u32 *)(r1 +8)\nr2 += 4\nr0 = 0\nexit"},
	})
}
