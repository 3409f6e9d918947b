package bpfvm_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bpfvm/bpfvm"
)

func TestHelperStrtol(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		vm, kern := loadHelpers(t, noVerify, "testdata/helpers_fmt.o", bpfvm.CollectionOptions{})
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
	})
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
	modes(t, func(t *testing.T, noVerify bool) {
		vm, kern := loadHelpers(t, noVerify, "testdata/helpers_fmt.o", bpfvm.CollectionOptions{})
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
	})
}

func TestHelperTracePrintk(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		var out bytes.Buffer
		vm, kern := loadHelpers(t, noVerify, "testdata/helpers_fmt.o", bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Output: &out}})
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
	})
}
