package helper

import (
	"strings"
	"testing"

	"github.com/bpfvm/bpfvm/vm"
)

func TestBprintf(t *testing.T) {
	for _, c := range []struct {
		f    string
		args []uint64
		want string
		err  int64
	}{
		{"plain", nil, "plain", 0},
		{"%%", nil, "%", 0},
		{"%d", nil, "", -einval},
		{"%d|%5d|%-5d|%05d", []uint64{1, 2, 3}, "", -einval}, // 4 conversions, 3 args
		{"%5d|%-5d|%05d", []uint64{uint64(1<<64 - 42), 42, uint64(1<<64 - 42)}, "  -42|42   |-0042", 0},
		{"%+d % d %+u", []uint64{7, 7, 7}, "+7  7 7", 0},
		{"%x %X %lx", []uint64{0xabcdef, 0xabcdef, 1<<63 | 0xf}, "abcdef ABCDEF 800000000000000f", 0},
		{"%c%c%c", []uint64{'a', 'b', 0x263}, "abc", 0},
		{"%3c|%-3c|", []uint64{'a', 'b'}, "  a|b  |", 0},
		{"%px %p", []uint64{0x1234, 0}, "0000000000001234 0000000000000000", 0},
		{"%ps %pS", []uint64{0x1234, 1}, "0x0000000000001234 0x0000000000000001", 0},
		{"%pB", []uint64{0xff}, "0x00000000000000ff", 0},
		{"%p.", []uint64{1}, "0000000000000001.", 0},
		{"%pZ", []uint64{1}, "", -einval},
		{"%pi5", []uint64{1}, "", -einval},
		{"%5.2d", []uint64{1}, "", -einval},
		{"%#x", []uint64{1}, "", -einval},
		{"%hd", []uint64{1}, "", -einval},
		{"%lld%", []uint64{1}, "", -einval},
		// Control characters are refused, bytes past ASCII printed, as
		// by the running kernel (TestHelperMemFormatBytes).
		{"\x80", nil, "\x80", 0},
		{"a\x01", nil, "", -einval},
		{"a\x7f", nil, "", -einval},
		{"a\tb\nc", nil, "a\tb\nc", 0},
		{"%0100d", []uint64{1}, strings.Repeat("0", 99) + "1", 0},
	} {
		t.Run(c.f, func(t *testing.T) {
			w := fmtBuf{limit: 1 << 10, size: 1 << 10}
			errno := bprintf(&vm.Env{}, &w, []byte(c.f), c.args)
			if errno != c.err {
				t.Fatalf("errno %d, want %d", errno, c.err)
			}
			if string(w.b) != c.want || w.n != len(c.want) {
				t.Errorf("%q (length %d), want %q", w.b, w.n, c.want)
			}
		})
	}
}

func TestBprintfIP(t *testing.T) {
	env := &vm.Env{}
	mem, err := vm.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Free()
	env.Regions = []vm.Region{{Start: mem.Addr(), End: mem.Addr() + 64}}
	copy(mem.Bytes(), []byte{192, 168, 0, 1, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	w := fmtBuf{limit: 1 << 10, size: 1 << 10}
	a := mem.Addr()
	if errno := bprintf(env, &w, []byte("%pI4 %pi4 %pI6 %pi6"), []uint64{a, a, a + 4, a + 4}); errno != 0 {
		t.Fatal(errno)
	}
	want := "192.168.0.1 192.168.000.001 2001:0db8:0000:0000:0000:0000:0000:0001 20010db8000000000000000000000001"
	if string(w.b) != want {
		t.Errorf("%q, want %q", w.b, want)
	}
}

// TestBprintfArgBuffer checks that strings share the kernel's 512-byte
// argument buffer: the one that does not fit is cut short.
func TestBprintfArgBuffer(t *testing.T) {
	mem, err := vm.Alloc(1024)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Free()
	env := &vm.Env{Regions: []vm.Region{{Start: mem.Addr(), End: mem.Addr() + 1024}}}
	s := strings.Repeat("x", 400)
	copy(mem.Bytes(), s+"\x00")
	w := fmtBuf{limit: 1 << 11, size: 1 << 11}
	a := mem.Addr()
	// 401 bytes for the first, the 111 left for the second (110 and a NUL),
	// and no room for the third: -ENOSPC.
	if errno := bprintf(env, &w, []byte("%s|%s|%s"), []uint64{a, a, a}); errno != -enospc {
		t.Fatalf("errno %d, want -ENOSPC", errno)
	}
	if errno := bprintf(env, &w, []byte("%s|%s"), []uint64{a, a}); errno != 0 {
		t.Fatal(errno)
	}
	if want := s + "|" + s[:110]; string(w.b) != want {
		t.Errorf("got %d bytes, want %d", len(w.b), len(want))
	}
}
