package bpfvm_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	ebpfperf "github.com/cilium/ebpf/perf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
	"github.com/bpfvm/bpfvm/perf"
)

// perfConfig is struct config of testdata/helpers_perf.c.
type perfConfig struct {
	Flags uint64
	Size  uint32
	Pad   uint32
}

const (
	perfCurrentCPU = 0xffffffff
	perfCtxLenMask = 0xfffff << 32
)

// perfPacket is the test runs' packet: an Ethernet header, then a pattern.
func perfPacket() []byte {
	p := make([]byte, 60)
	for i := range p {
		p[i] = byte(0xa0 + i)
	}
	p[12], p[13] = 0x08, 0x00
	return p
}

// perfSample is the raw sample the kernel's reader returns for size bytes of
// the program's pattern followed by pkt: the u32 size and the data padded
// to a multiple of 8 bytes.
func perfSample(size int, pkt []byte) []byte {
	var b []byte
	for i := range size {
		b = append(b, byte(i+1))
	}
	b = append(b, pkt...)
	total := (len(b) + 4 + 7) &^ 7
	return append(b, make([]byte, total-4-len(b))...)
}

// pinCPU keeps the calling goroutine on CPU 0, so that the kernel's test
// runs output to one ring.
func pinCPU(t *testing.T) {
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	var set unix.CPUSet
	set.Set(0)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		t.Skipf("sched_setaffinity: %v", err)
	}
}

// TestPerfEventOutput compares bpf_perf_event_output from tc, XDP and
// socket filter programs with the kernel's: return values, the raw sample
// with the packet bytes BPF_F_CTXLEN_MASK appends, and -ENOENT without a
// reader, in the four run modes.
func TestPerfEventOutput(t *testing.T) {
	const file = "testdata/helpers_perf.o"
	spec, err := loader.LoadCollectionSpec(file)
	if err != nil {
		t.Fatal(err)
	}
	if n := spec.Maps["events"].MaxEntries; n != 0 {
		t.Fatalf("events: max_entries %d in the spec, want 0", n)
	}
	pkt := perfPacket()
	// The bytes of the packet each type sees: socket filters start after
	// the Ethernet header.
	seen := map[string][]byte{"perf_tc": pkt, "perf_xdp": pkt, "perf_socket": pkt[14:]}
	cases := []struct {
		name  string
		flags uint64
		size  uint32
		ctx   int // packet bytes asked for
	}{
		{"64 bytes", perfCurrentCPU, 64, 0},
		{"empty", perfCurrentCPU, 0, 0},
		{"13 bytes", perfCurrentCPU, 13, 0},
		{"ethernet header appended", perfCurrentCPU | 14<<32, 8, 14},
		{"46 packet bytes", perfCurrentCPU | 46<<32, 3, 46},
		{"whole packet", perfCurrentCPU | 60<<32, 64, 60},
		{"past the packet", perfCurrentCPU | 61<<32, 4, 61},
		{"largest ctxlen", perfCurrentCPU | perfCtxLenMask, 4, 0xfffff},
		{"index past max_entries", 1000, 4, 0},
		{"unknown flag", perfCurrentCPU | 1<<52, 4, 0},
	}
	want := func(name string, flags uint64, size uint32, n int) (int32, []byte) {
		p := seen[name]
		switch {
		case flags&^(perfCtxLenMask|0xffffffff) != 0:
			return -22, nil // EINVAL
		case n > len(p):
			return -14, nil // EFAULT
		case flags&0xffffffff != perfCurrentCPU:
			return -7, nil // E2BIG
		}
		return 0, perfSample(int(size), p[:n])
	}

	kern := kernelCollection(t, file)
	var kr *ebpfperf.Reader
	if kern != nil {
		pinCPU(t)
		if kern.Maps["events"].MaxEntries() != uint32(runtime.NumCPU()) {
			t.Logf("kernel events: %d entries", kern.Maps["events"].MaxEntries())
		}
		kr, err = ebpfperf.NewReader(kern.Maps["events"], 4096)
		if err != nil {
			t.Fatal(err)
		}
		defer kr.Close()
	}
	kernelAgree := 0
	runModes(t, spec, func(t *testing.T, c *bpfvm.Collection) {
		if n := c.Maps["events"].MaxEntries(); n == 0 || c.Maps["events"].KeySize() != 4 || c.Maps["events"].ValueSize() != 4 {
			t.Fatalf("events: max_entries %d, key size %d, value size %d", n, c.Maps["events"].KeySize(), c.Maps["events"].ValueSize())
		}
		rd, err := perf.NewReader(c.Maps["events"], 4096)
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		rd.SetDeadline(time.Now().Add(time.Second))
		for _, prog := range []string{"perf_tc", "perf_xdp", "perf_socket"} {
			for _, tc := range cases {
				t.Run(prog+"/"+tc.name, func(t *testing.T) {
					cfg := perfConfig{Flags: tc.flags, Size: tc.size}
					if err := c.Maps["config"].Put(uint32(0), cfg); err != nil {
						t.Fatal(err)
					}
					wantRet, wantSample := want(prog, tc.flags, tc.size, tc.ctx)
					got := run(t, c.Programs[prog], pkt, nil)
					if int32(got.ret) != wantRet {
						t.Errorf("returned %d, want %d", int32(got.ret), wantRet)
					}
					if wantRet == 0 {
						rec, err := rd.Read()
						if err != nil {
							t.Fatal(err)
						}
						if !bytes.Equal(rec.RawSample, wantSample) || rec.LostSamples != 0 {
							t.Errorf("sample % x (lost %d), want % x", rec.RawSample, rec.LostSamples, wantSample)
						}
					}
					if kern == nil {
						return
					}
					if err := kern.Maps["config"].Put(uint32(0), cfg); err != nil {
						t.Fatal(err)
					}
					k, _ := kernelRun(t, kern, prog, pkt, nil)
					if k.ret != got.ret {
						t.Errorf("kernel returned %d, bpfvm %d", int32(k.ret), int32(got.ret))
						return
					}
					if k.ret == 0 {
						kr.SetDeadline(time.Now().Add(time.Second))
						rec, err := kr.Read()
						if err != nil {
							t.Fatalf("kernel reader: %v", err)
						}
						if !bytes.Equal(rec.RawSample, wantSample) {
							t.Errorf("kernel sample % x, want % x", rec.RawSample, wantSample)
							return
						}
					}
					kernelAgree++
				})
			}
		}
		// No reader attached: -ENOENT, as with an empty slot in the kernel.
		for _, pause := range []func() error{rd.Pause, rd.Close} {
			if err := pause(); err != nil {
				t.Fatal(err)
			}
			if err := c.Maps["config"].Put(uint32(0), perfConfig{Flags: perfCurrentCPU, Size: 8}); err != nil {
				t.Fatal(err)
			}
			if got := run(t, c.Programs["perf_tc"], pkt, nil); int32(got.ret) != -2 {
				t.Errorf("without a reader: returned %d, want -ENOENT", int32(got.ret))
			}
		}
		if _, err := rd.Read(); !errors.Is(err, perf.ErrClosed) || !errors.Is(err, os.ErrClosed) {
			t.Errorf("read after close: %v, want ErrClosed", err)
		}
	})
	if kern != nil {
		// cilium/ebpf's Pause empties the kernel's slots: -ENOENT too.
		// (After its Close the kernel's slots still hold the perf events,
		// without rings: -ENOSPC. bpfvm empties them: no reader, no slot.)
		if err := kr.Pause(); err != nil {
			t.Fatal(err)
		}
		if err := kern.Maps["config"].Put(uint32(0), perfConfig{Flags: perfCurrentCPU, Size: 8}); err != nil {
			t.Fatal(err)
		}
		if k, _ := kernelRun(t, kern, "perf_tc", pkt, nil); int32(k.ret) != -2 {
			t.Errorf("kernel without a reader: returned %d, want -ENOENT", int32(k.ret))
		}
		t.Logf("%d cases agree with the kernel", kernelAgree)
	}
}

// TestPerfEventArraySpec checks the creation rules: the kernel's sizes,
// and max_entries 0 filled in with the number of CPUs as cilium/ebpf does.
func TestPerfEventArraySpec(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec ebpf.MapSpec
		ok   bool
		max  uint32
	}{
		{"no sizes, no max_entries", ebpf.MapSpec{Type: ebpf.PerfEventArray}, true, 3},
		{"max_entries given", ebpf.MapSpec{Type: ebpf.PerfEventArray, KeySize: 4, ValueSize: 4, MaxEntries: 8}, true, 8},
		{"preserve_elems", ebpf.MapSpec{Type: ebpf.PerfEventArray, Flags: 1 << 11}, true, 3},
		{"value size 8", ebpf.MapSpec{Type: ebpf.PerfEventArray, KeySize: 4, ValueSize: 8}, false, 0},
		{"key size 8", ebpf.MapSpec{Type: ebpf.PerfEventArray, KeySize: 8, ValueSize: 4}, false, 0},
		{"rdonly_prog", ebpf.MapSpec{Type: ebpf.PerfEventArray, Flags: 1 << 7}, false, 0},
		{"mmapable", ebpf.MapSpec{Type: ebpf.PerfEventArray, Flags: 1 << 10}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.spec
			s.Name = "events"
			c, err := bpfvm.NewCollectionWithOptions(&ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{"events": &s}}, bpfvm.CollectionOptions{NumCPU: 3})
			if (err == nil) != tc.ok {
				t.Fatalf("error %v, want ok=%v", err, tc.ok)
			}
			if err != nil {
				return
			}
			defer c.Close()
			if got := c.Maps["events"].MaxEntries(); got != tc.max {
				t.Errorf("max_entries %d, want %d", got, tc.max)
			}
			if err := c.Maps["events"].Put(uint32(0), uint32(3)); !errors.Is(err, bpfvm.ErrNotSupported) && err == nil {
				t.Errorf("update: %v, want an error", err)
			}
		})
	}
}

// TestPerfEventOutputLarge: perf_event_header.size is 16 bits, so the
// largest sample record is 65535 bytes. For larger ones the kernel returns
// 0 and writes a record whose size wrapped, which its readers cannot parse;
// bpfvm returns 0 as well, and reports the sample lost.
func TestPerfEventOutputLarge(t *testing.T) {
	const value = 65600
	ms := []*ebpf.MapSpec{
		{Name: "big", Type: ebpf.Array, KeySize: 4, ValueSize: value, MaxEntries: 1},
		{Name: "events", Type: ebpf.PerfEventArray},
	}
	progs := map[string]string{}
	// Sizes around the limit: 65516 bytes of data make a 65528-byte
	// record, 65524 one of 65536.
	sizes := []int{65516, 65517, 65523, 65524, 65600}
	for _, n := range sizes {
		progs[fmt.Sprintf("out%d", n)] = fmt.Sprintf("r6 = r1\n*(u32 *)(r10 -4) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto out\nr4 = r0\nr1 = r6\nr2 = map[fd:1] ll\nr3 = 0xffffffff ll\nr5 = %d\ncall bpf_perf_event_output#25\nexit\nout: r0 = 1\nexit", n)
	}
	spec := asmSpec(t, ms, progs)
	for _, p := range spec.Programs {
		p.Type = ebpf.SchedCLS
	}
	pkt := perfPacket()
	results := func(run func(name string) int32, read func() (int, error)) []string {
		var out []string
		for _, n := range sizes {
			ret := run(fmt.Sprintf("out%d", n))
			s := fmt.Sprintf("%d: %d", n, ret)
			if ret == 0 && n == sizes[0] {
				l, err := read()
				s += fmt.Sprintf(" sample %d %v", l, err)
			}
			out = append(out, s)
		}
		return out
	}
	var want []string
	if os.Getuid() == 0 && rlimit.RemoveMemlock() == nil {
		pinCPU(t)
		kc, err := ebpf.NewCollection(spec.Copy())
		if err != nil {
			t.Fatal(err)
		}
		defer kc.Close()
		kr, err := ebpfperf.NewReader(kc.Maps["events"], 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		defer kr.Close()
		want = results(func(name string) int32 {
			ret, err := kc.Programs[name].Run(&ebpf.RunOptions{Data: pkt})
			if err != nil {
				t.Fatal(err)
			}
			return int32(ret)
		}, func() (int, error) {
			kr.SetDeadline(time.Now().Add(time.Second))
			rec, err := kr.Read()
			return len(rec.RawSample), err
		})
		t.Logf("kernel: %v", want)
	}
	// One runner, so that every sample goes to one ring.
	for _, opts := range []bpfvm.ProgramOptions{
		{NoVerify: true, Engine: bpfvm.EngineInterpreter}, {NoVerify: true, Engine: bpfvm.EngineJIT},
		{Engine: bpfvm.EngineInterpreter}, {Engine: bpfvm.EngineJIT},
	} {
		c, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{NumCPU: 1, Programs: opts})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		rd, err := perf.NewReader(c.Maps["events"], 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		got := results(func(name string) int32 {
			return int32(run(t, c.Programs[name], pkt, nil).ret)
		}, func() (int, error) {
			rd.SetDeadline(time.Now().Add(time.Second))
			rec, err := rd.Read()
			return len(rec.RawSample), err
		})
		if want != nil && fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%+v: bpfvm %v\nkernel %v", opts, got, want)
		}
		// The next sample that fits comes after the count of the others.
		if r := run(t, c.Programs["out65516"], pkt, nil); r.ret != 0 {
			t.Fatalf("output: %d", int32(r.ret))
		}
		for _, wantLost := range []uint64{uint64(len(sizes) - 1), 0} {
			rd.SetDeadline(time.Now().Add(time.Second))
			rec, err := rd.Read()
			if err != nil || rec.LostSamples != wantLost {
				t.Errorf("%+v: read %v: lost %d, want %d", opts, err, rec.LostSamples, wantLost)
			}
		}
	}
}
