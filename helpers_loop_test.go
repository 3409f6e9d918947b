package bpfvm_test

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"bpfvm"
)

// frame returns an Ethernet header followed by the given fields, in host
// byte order: what the helpers_loop.c programs read their arguments from.
func frame(fields ...any) []byte {
	var b bytes.Buffer
	b.Write(make([]byte, 14))
	for _, f := range fields {
		if err := binary.Write(&b, binary.NativeEndian, f); err != nil {
			panic(err)
		}
	}
	return b.Bytes()
}

func TestHelperLoop(t *testing.T) {
	vm, kern := loadHelpers(t, "testdata/helpers_loop.o", bpfvm.CollectionOptions{})
	type args struct{ Nr, Flags, Stop, Pad uint32 }
	type out struct{ Sum, Ret uint64 }
	for _, c := range []struct {
		name string
		in   args
		ret  uint32
		sum  uint64
	}{
		{"ten", args{Nr: 10, Stop: 100}, 10, 45},
		{"stop at 3", args{Nr: 10, Stop: 3}, 4, 6},
		{"stop at first", args{Nr: 10, Stop: 0}, 1, 0},
		{"zero loops", args{Nr: 0, Stop: 100}, 0, 0},
		{"thousand", args{Nr: 1000, Stop: 1000}, 1000, 499500},
		{"flags", args{Nr: 10, Flags: 1, Stop: 100}, errno(eINVAL), 0},
		{"too many", args{Nr: 1<<23 + 1, Stop: 0}, errno(e2BIG), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := frame(c.in, out{})
			want := frame(c.in, out{c.sum, uint64(int64(int32(c.ret)))})
			checkRun(t, vm, kern, "loop", in, nil, runOut{c.ret, want})
		})
	}
}

// fill sets every map to the same contents in bpfvm and the kernel.
func fill(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection, name string, kv map[uint32]uint64) {
	t.Helper()
	clearMap := func(keys []uint32, del func(uint32) error) {
		for _, k := range keys {
			del(k)
		}
	}
	var keys []uint32
	for k := range uint32(32) {
		keys = append(keys, k)
	}
	clearMap(keys, func(k uint32) error { return vm.Maps[name].Delete(k) })
	for k, v := range kv {
		if err := vm.Maps[name].Put(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if kern != nil {
		clearMap(keys, func(k uint32) error { return kern.Maps[name].Delete(k) })
		for k, v := range kv {
			if err := kern.Maps[name].Put(k, v); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// contents returns a map's contents in bpfvm, and checks the kernel's are
// the same.
func contents(t *testing.T, vm *bpfvm.Collection, kern *ebpf.Collection, name string) map[uint32]uint64 {
	t.Helper()
	got := map[uint32]uint64{}
	var k uint32
	var v uint64
	it := vm.Maps[name].Iterate()
	for it.Next(&k, &v) {
		got[k] = v
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if kern != nil {
		kgot := map[uint32]uint64{}
		kit := kern.Maps[name].Iterate()
		for kit.Next(&k, &v) {
			kgot[k] = v
		}
		if len(kgot) != len(got) {
			t.Errorf("map %s: kernel has %v, bpfvm %v", name, kgot, got)
		}
		for k, v := range kgot {
			if got[k] != v {
				t.Errorf("map %s: kernel has %v, bpfvm %v", name, kgot, got)
				break
			}
		}
	}
	return got
}

func TestHelperForEachMapElem(t *testing.T) {
	vm, kern := loadHelpers(t, "testdata/helpers_loop.o", bpfvm.CollectionOptions{})
	type args struct{ Stop, Flags uint32 }
	type out struct{ Sum, Ret uint64 }
	array := map[uint32]uint64{}
	arrayPlus1 := map[uint32]uint64{}
	for i := range uint32(8) {
		array[i] = uint64(i) * 10
		arrayPlus1[i] = uint64(i)*10 + 1
	}
	hash := map[uint32]uint64{1: 100, 2: 200, 3: 300, 5: 500, 8: 800}
	hashPlus1 := map[uint32]uint64{1: 101, 2: 201, 3: 301, 5: 501, 8: 801}
	for _, c := range []struct {
		name    string
		prog    string
		initial map[uint32]uint64
		in      args
		ret     uint32
		sum     uint64
		after   map[uint32]uint64
	}{
		{"array all", "foreach_array", array, args{Stop: 100}, 8, 28280, arrayPlus1},
		{"array stop at 2", "foreach_array", array, args{Stop: 2}, 3, 3030,
			map[uint32]uint64{0: 1, 1: 11, 2: 21, 3: 30, 4: 40, 5: 50, 6: 60, 7: 70}},
		{"array delete fails", "foreach_array", array, args{Stop: 100, Flags: 1}, 8, 28280, arrayPlus1},
		{"array flags", "foreach_array", array, args{Stop: 100, Flags: 2}, errno(eINVAL), 0, array},
		{"hash all", "foreach_hash", hash, args{Stop: 100}, 5, 20900, hashPlus1},
		{"hash delete each", "foreach_hash", hash, args{Stop: 100, Flags: 1}, 5, 20900, map[uint32]uint64{}},
		{"hash empty", "foreach_hash", map[uint32]uint64{}, args{Stop: 100}, 0, 0, map[uint32]uint64{}},
		{"hash flags", "foreach_hash", hash, args{Stop: 100, Flags: 2}, errno(eINVAL), 0, hash},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := "arr"
			if c.prog == "foreach_hash" {
				m = "hash"
			}
			fill(t, vm, kern, m, c.initial)
			in := frame(c.in, out{})
			want := frame(c.in, out{c.sum, uint64(int64(int32(c.ret)))})
			// Run on the kernel first: checkRun runs both, and the maps
			// must be in the same state for each.
			checkRun(t, vm, kern, c.prog, in, nil, runOut{c.ret, want})
			got := contents(t, vm, kern, m)
			if len(got) != len(c.after) {
				t.Errorf("%s after: %v, want %v", m, got, c.after)
			}
			for k, v := range c.after {
				if got[k] != v {
					t.Errorf("%s after: %v, want %v", m, got, c.after)
					break
				}
			}
		})
	}
}

func TestHelperStrtol(t *testing.T) {
	vm, kern := loadHelpers(t, "testdata/helpers_loop.o", bpfvm.CollectionOptions{})
	type args struct {
		Flags, Len, Sign, Pad uint32
		Res                   uint64
		Str                   [32]byte
	}
	for _, c := range []struct {
		name   string
		str    string
		flags  uint32
		signed bool
		n      int // bytes of str to parse; 0 means len(str)
		ret    uint32
		res    uint64
	}{
		{"decimal", "123", 10, false, 0, 3, 123},
		{"decimal with rest", "123abc", 10, false, 0, 3, 123},
		{"auto hex", "0x1F", 0, false, 0, 4, 31},
		{"hex prefix", "0X1f", 16, false, 0, 4, 31},
		{"hex without prefix", "ff", 16, false, 0, 2, 255},
		{"hex prefix in base 10", "0x1F", 10, false, 0, 1, 0},
		{"auto octal", "0777", 0, false, 0, 4, 511},
		{"auto octal stops at 8", "08", 0, false, 0, 1, 0},
		{"octal", "777", 8, false, 0, 3, 511},
		{"0x without digits", "0xg", 0, false, 0, 1, 0},
		{"hex prefix only", "0x", 16, false, 0, errno(eINVAL), 0},
		{"spaces and sign", "  -42xyz", 0, true, 0, 5, uint64(0xffffffffffffffd6)},
		{"tab", "\t7", 10, true, 0, 2, 7},
		{"non-breaking space", "\xa09", 10, true, 0, 2, 9},
		{"plus sign", "+5", 10, true, 0, errno(eINVAL), 0},
		{"sign without digits", "- 5", 10, true, 0, errno(eINVAL), 0},
		{"unsigned negative", "-5", 10, false, 0, errno(eINVAL), 0},
		{"only spaces", "   ", 10, false, 0, errno(eINVAL), 0},
		{"letters", "abc", 10, false, 0, errno(eINVAL), 0},
		{"max u64", "18446744073709551615", 10, false, 0, 20, 1<<64 - 1},
		{"u64 overflow", "18446744073709551616", 10, false, 0, errno(eRANGE), 0},
		{"max s64", "9223372036854775807", 10, true, 0, 19, 1<<63 - 1},
		{"s64 overflow", "9223372036854775808", 10, true, 0, errno(eRANGE), 0},
		{"min s64", "-9223372036854775808", 10, true, 0, 20, 1 << 63},
		{"below min s64", "-9223372036854775809", 10, true, 0, errno(eRANGE), 0},
		{"length limits", "12345", 10, false, 2, 2, 12},
		{"stops at NUL", "12\x0034", 10, false, 5, 2, 12},
		{"base 2", "101", 2, false, 0, errno(eINVAL), 0},
		{"flags beyond base", "1", 0x20 | 10, false, 0, errno(eINVAL), 0},
		{"long input", strings.Repeat("0", 31) + "7", 10, false, 0, 32, 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := args{Flags: c.flags, Len: uint32(len(c.str)) - 1, Res: 0}
			if c.n > 0 {
				a.Len = uint32(c.n) - 1
			}
			if c.signed {
				a.Sign = 1
			}
			copy(a.Str[:], c.str)
			in := frame(a)
			a.Res = c.res
			checkRun(t, vm, kern, "strto", in, nil, runOut{c.ret, frame(a)})
		})
	}
}

// fmtArgs is struct fmt_args of helpers_loop.c.
type fmtArgs struct {
	Sel, Size uint32
	Arg       [4]uint64
	Str       [16]byte
	Out       [64]byte
}

// strArg stands for the address of fmtArgs.Str in an argument.
const strArg = ^uint64(0)

func TestHelperSnprintf(t *testing.T) {
	vm, kern := loadHelpers(t, "testdata/helpers_loop.o", bpfvm.CollectionOptions{})
	neg := func(v int64) uint64 { return uint64(v) }
	ip := "\x0a\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"
	for _, c := range []struct {
		name string
		sel  uint32
		size uint32
		args [4]uint64
		str  string
		want string // the output without its NUL; its length gives the result
		ret  uint32 // when not the length of want plus one
	}{
		{"ints", 0, 64, [4]uint64{neg(-5), neg(-5), 255, 255}, "", "-5 4294967291 ff FF", 0},
		{"widths", 1, 64, [4]uint64{42, 42, neg(-42), 7}, "", "|   42|42   |-0042|+7|", 0},
		{"longs", 2, 64, [4]uint64{5, neg(-2), 1 << 63, 0xdeadbeefcafe}, "", " 5 -2 9223372036854775808 deadbeefcafe", 0},
		{"long longs", 3, 64, [4]uint64{neg(-2), 2, 0xabc, neg(-3)}, "", "-2 2 abc -3", 0},
		{"ints truncate to 32 bits", 0, 64, [4]uint64{1<<32 + 3, 1<<32 + 4, 1<<32 + 5, 1<<32 + 6}, "", "3 4 5 6", 0},
		{"strings", 4, 64, [4]uint64{strArg, strArg, strArg, 'Z'}, "hi", "[hi] [      hi] [hi      ] Z", 0},
		{"bad string pointer", 4, 64, [4]uint64{0x1000, strArg, strArg, 'A'}, "hi", "[] [      hi] [hi      ] A", 0},
		// The program NUL-terminates str, so its last byte prints as 00.
		// Pre-formatted pointer output that starts past the end of the
		// buffer does not count in the result, as in the kernel.
		{"ip addresses", 5, 64, [4]uint64{strArg, strArg, strArg, strArg}, ip,
			"10.1.2.3 010.001.002.003 0a01:0203:0405:0607:0809:0a0b:0c0d:0e0", 66},
		{"bad ip pointer", 5, 64, [4]uint64{0x1000, strArg, strArg, strArg}, ip,
			"0.0.0.0 010.001.002.003 0a01:0203:0405:0607:0809:0a0b:0c0d:0e00", 65},
		{"percent and px", 6, 64, [4]uint64{0x1234, neg(-7)}, "", "100% 0000000000001234 -7", 0},
		{"kernel string", 7, 64, [4]uint64{strArg, strArg}, "abc", "abc|abc", 0},
		{"truncated", 0, 5, [4]uint64{neg(-5), neg(-5), 255, 255}, "", "-5 4", 20},
		{"size 1", 0, 1, [4]uint64{neg(-5), neg(-5), 255, 255}, "", "", 20},
		{"size 0", 0, 0, [4]uint64{neg(-5), neg(-5), 255, 255}, "", "", 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := fmtArgs{Sel: c.sel, Size: c.size, Arg: c.args}
			copy(a.Str[:], c.str)
			in := frame(a)
			copy(a.Out[:], c.want)
			ret := c.ret
			if ret == 0 {
				ret = uint32(len(c.want) + 1)
			}
			checkRun(t, vm, kern, "fmt", in, nil, runOut{ret, frame(a)})
		})
	}
}

func TestHelperTracePrintk(t *testing.T) {
	var out bytes.Buffer
	vm, kern := loadHelpers(t, "testdata/helpers_loop.o", bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Output: &out}})
	for _, c := range []struct {
		name string
		sel  uint32
		args [4]uint64
		str  string
		ret  uint32
		line string // what Output receives
	}{
		{"newline", 0, [4]uint64{7, strArg}, "you", 12, "bpf_trace_printk: hello 7 you\n"},
		{"no newline", 1, [4]uint64{0xbeef}, "", 15, "bpf_trace_printk: no newline beef\n"},
		{"tab", 3, [4]uint64{1}, "", 8, "bpf_trace_printk: tab\tok 1\n"},
		{"sizes", 4, [4]uint64{^uint64(1), ^uint64(1), 5}, "", 15, "bpf_trace_printk: -2 4294967294 5\n"},
		{"vprintk", 8, [4]uint64{}, "", 11, "bpf_trace_printk: v 1 2 3 4 5\n"},
		{"more conversions than arguments", 2, [4]uint64{1, 2, 3}, "", errno(eINVAL), ""},
		{"unprintable", 5, [4]uint64{}, "", errno(eINVAL), ""},
		{"unknown conversion", 6, [4]uint64{1}, "", errno(eINVAL), ""},
		{"letter after %s", 7, [4]uint64{strArg}, "", errno(eINVAL), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			out.Reset()
			a := fmtArgs{Sel: c.sel, Arg: c.args}
			copy(a.Str[:], c.str)
			in := frame(a)
			checkRun(t, vm, kern, "printk", in, nil, runOut{c.ret, in})
			if out.String() != c.line {
				t.Errorf("output %q, want %q", out.String(), c.line)
			}
		})
	}
}
