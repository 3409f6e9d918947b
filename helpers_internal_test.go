package bpfvm

import (
	"errors"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"bpfvm/isa"
	"bpfvm/loader"
	"bpfvm/vm"
)

// probeID is the id of the host helper probe installs.
const probeID = 1000

// probe runs fn as a helper called from a small XDP program, so that fn
// calls helpers with the environment of a real checked run. It returns the
// run's error.
func probe(t *testing.T, fn func(e *vm.Env) (uint64, error)) error {
	t.Helper()
	insns, err := isa.Assemble("call 1000\nexit")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewRawProgram("probe", ebpf.XDP, insns, ProgramOptions{
		NoVerify: true,
		Helpers:  map[int32]vm.Helper{probeID: func(e *vm.Env, _, _, _, _, _ uint64) (uint64, error) { return fn(e) }},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, err = p.Run(&RunOptions{Data: make([]byte, 64)})
	return err
}

func loadUnverified(t *testing.T, file string) *Collection {
	t.Helper()
	spec, err := loader.LoadCollectionSpec(file)
	if err != nil {
		t.Fatal(err)
	}
	coll, err := NewCollectionWithOptions(spec, CollectionOptions{Programs: ProgramOptions{NoVerify: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(coll.Close)
	return coll
}

// TestHelperBadPointers calls every helper that takes pointers with
// pointers outside the run's memory: each must fail the run with an error
// wrapping vm.ErrMemory, and never touch the memory.
func TestHelperBadPointers(t *testing.T) {
	coll := loadUnverified(t, "testdata/helpers_maps.o")
	loops := loadUnverified(t, "testdata/helpers_loop.o")
	queue := coll.Maps["queue"].m.Handle()
	rb := coll.Maps["rb"].m.Handle()
	arr := loops.Maps["arr"].m.Handle()

	// Addresses a run may not touch: unmapped, just past the stack, and a
	// span straddling the end of the stack.
	const unmapped = 0x1000
	pastStack := func(e *vm.Env) uint64 { return e.Stack.End }
	straddle := func(e *vm.Env) uint64 { return e.Stack.End - 4 }
	stack := func(e *vm.Env) uint64 { return e.Stack.End - 64 }
	str := func(e *vm.Env, s string) uint64 {
		a := stack(e)
		copy(unsafeBytes(a, 64), s+"\x00")
		return a
	}
	for _, c := range []struct {
		name string
		call func(e *vm.Env) (uint64, error)
	}{
		{"map_lookup_elem handle", func(e *vm.Env) (uint64, error) { return helperMapLookup(e, unmapped, stack(e), 0, 0, 0) }},
		{"map_push_elem value", func(e *vm.Env) (uint64, error) { return helperMapPush(e, queue, unmapped, 0, 0, 0) }},
		{"map_pop_elem value", func(e *vm.Env) (uint64, error) { return helperMapPop(e, queue, e.Stack.End-2, 0, 0, 0) }},
		{"map_peek_elem value", func(e *vm.Env) (uint64, error) { return helperMapPeek(e, queue, pastStack(e), 0, 0, 0) }},
		{"map_pop_elem handle", func(e *vm.Env) (uint64, error) { return helperMapPop(e, 12345, stack(e), 0, 0, 0) }},
		{"ringbuf_output data", func(e *vm.Env) (uint64, error) { return helperRingbufOutput(e, rb, straddle(e), 8, 0, 0) }},
		{"ringbuf_output size", func(e *vm.Env) (uint64, error) { return helperRingbufOutput(e, rb, stack(e), 1<<20, 0, 0) }},
		{"ringbuf_submit unreserved", func(e *vm.Env) (uint64, error) { return helperRingbufSubmit(e, stack(e), 0, 0, 0, 0) }},
		{"ringbuf_discard unreserved", func(e *vm.Env) (uint64, error) { return helperRingbufDiscard(e, unmapped, 0, 0, 0, 0) }},
		{"ringbuf_reserve handle", func(e *vm.Env) (uint64, error) { return helperRingbufReserve(e, unmapped, 8, 0, 0, 0) }},
		{"tail_call handle", func(e *vm.Env) (uint64, error) { return helperTailCall(e, 0, unmapped, 0, 0, 0) }},
		{"redirect_map handle", func(e *vm.Env) (uint64, error) { return helperRedirectMap(e, unmapped, 0, 0, 0, 0) }},
		{"for_each_map_elem handle", func(e *vm.Env) (uint64, error) { return helperForEachMapElem(e, unmapped, 0, 0, 0, 0) }},
		{"for_each_map_elem callback", func(e *vm.Env) (uint64, error) { return helperForEachMapElem(e, arr, 0xdead, 0, 0, 0) }},
		{"loop callback", func(e *vm.Env) (uint64, error) { return helperLoop(e, 3, 0xdead, 0, 0, 0) }},
		{"trace_printk fmt", func(e *vm.Env) (uint64, error) { return helperTracePrintk(e, unmapped, 8, 0, 0, 0) }},
		{"trace_printk fmt size", func(e *vm.Env) (uint64, error) { return helperTracePrintk(e, straddle(e), 8, 0, 0, 0) }},
		{"trace_vprintk data", func(e *vm.Env) (uint64, error) { return helperTraceVprintk(e, str(e, "%d"), 3, unmapped, 8, 0) }},
		{"snprintf str", func(e *vm.Env) (uint64, error) { return helperSnprintf(e, unmapped, 8, str(e, "x"), 0, 0) }},
		{"snprintf fmt", func(e *vm.Env) (uint64, error) { return helperSnprintf(e, stack(e), 8, unmapped, 0, 0) }},
		{"snprintf data", func(e *vm.Env) (uint64, error) { return helperSnprintf(e, stack(e), 8, str(e, "%d"), pastStack(e), 8) }},
		{"strtol buf", func(e *vm.Env) (uint64, error) { return helperStrtol(e, unmapped, 4, 0, stack(e), 0) }},
		{"strtol res", func(e *vm.Env) (uint64, error) { return helperStrtol(e, str(e, "1"), 1, 0, straddle(e), 0) }},
		{"strtoul res", func(e *vm.Env) (uint64, error) { return helperStrtoul(e, str(e, "1"), 1, 0, unmapped, 0) }},
		{"skb_load_bytes to", func(e *vm.Env) (uint64, error) { return helperSkbLoadBytes(e, 0, 0, straddle(e), 8, 0) }},
		{"skb_store_bytes from", func(e *vm.Env) (uint64, error) { return helperSkbStoreBytes(e, 0, 0, unmapped, 8, 0) }},
		{"csum_diff from", func(e *vm.Env) (uint64, error) { return helperCsumDiff(e, unmapped, 4, 0, 0, 0) }},
		{"csum_diff to", func(e *vm.Env) (uint64, error) { return helperCsumDiff(e, 0, 0, straddle(e), 8, 0) }},
		{"get_current_comm buf", func(e *vm.Env) (uint64, error) { return helperGetCurrentComm(e, straddle(e), 16, 0, 0, 0) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := probe(t, c.call)
			if !errors.Is(err, vm.ErrMemory) {
				t.Fatalf("run error %v, want one wrapping vm.ErrMemory", err)
			}
		})
	}
}

// TestHelperStringArgs checks that the format helpers read strings only
// from memory the run may read, in both modes: the kernel reads them with
// fault-tolerant copies, so a bad pointer prints nothing rather than
// failing the run.
func TestHelperStringArgs(t *testing.T) {
	var out strings.Builder
	for _, checked := range []bool{true, false} {
		err := probe(t, func(e *vm.Env) (uint64, error) {
			e.Checked = checked
			r := runnerOf(e)
			r.prog.opts.Output = &out
			f := e.Stack.End - 64
			copy(unsafeBytes(f, 64), "[%s] [%pI4]\x00")
			// The string runs up to the end of the stack without a NUL.
			s := e.Stack.End - 3
			copy(unsafeBytes(s, 3), "abc")
			for _, arg := range []uint64{0x1000, s, e.Stack.End} {
				n, err := helperTracePrintk(e, f, 64, arg, arg, 0)
				if err != nil {
					return 0, err
				}
				if n != 12 {
					t.Errorf("printed %d bytes, want 12", n)
				}
			}
			return 0, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	want := strings.Repeat("bpf_trace_printk: [] [0.0.0.0]\n", 6)
	if out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
}

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

func TestCsumArithmetic(t *testing.T) {
	// RFC 1624, section 4: HC 0xdd2f, a field changing from 0x5555 to
	// 0x3285 gives HC' 0x0000 (eqn. 3, which csum_replace2 computes).
	if got := csumReplace2(0xdd2f, 0x5555, 0x3285); got != 0x0000 {
		t.Errorf("csumReplace2 = %#04x, want 0x0000", got)
	}
	if got := csumFold(0x0001_fffe); got != 0 {
		t.Errorf("csumFold(0x1fffe) = %#x, want 0", got)
	}
	if got := csumFrom32to16(0x1234_5678); got != 0x68ac {
		t.Errorf("csumFrom32to16 = %#x, want 0x68ac", got)
	}
	if got := csumPartial([]byte{1, 2, 3}, 0); got != 0x030201 {
		t.Errorf("csumPartial = %#x, want 0x030201", got)
	}
}
