// Command tcprtt runs a bcc/libbpf-tools-style tcprtt on bpfvm: the
// program (bpf/tcprtt.c) reads a TCP socket's smoothed RTT through
// bpf_skc_to_tcp_sock each time the socket receives, and counts it in a
// log2 histogram; here the sockets are the world's kernel objects
// (bpfvm.Socket laid out as the kernel's tcp_sock by the host's BTF) and
// the receives a recorded sequence, so the histogram printed is the same
// on every run. With -raddr it keeps one histogram per remote address.
//
//	go run ./examples/tcprtt [-raddr] [-fentry]
//
// It needs the host's kernel BTF (/sys/kernel/btf/vmlinux): the attach
// targets and tcp_sock's layout come from it.
package main

//go:generate clang-19 -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu -c bpf/tcprtt.c -o tcprtt.o

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"log"
	"net/netip"
	"os"
	"slices"
	"strings"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
	"github.com/bpfvm/bpfvm/progtype"
)

//go:embed tcprtt.o
var object []byte

// conns are the traced connections: a local and a remote endpoint and
// the smoothed RTT, in microseconds, of each receive recorded on it.
var conns = []struct {
	local, remote string
	rtts          []uint32
}{
	{"10.0.0.1:443", "10.0.0.7:50000", []uint32{90, 110, 120, 250}},
	{"10.0.0.1:443", "192.0.2.9:41000", []uint32{1800, 2100, 2500, 4000, 70000}},
	{"10.0.0.1:22", "10.0.0.7:50022", []uint32{3, 5}},
}

// hist is struct hist of bpf/tcprtt.c.
type hist struct {
	Slots        [27]uint64
	Latency, Cnt uint64
}

// options are the program's settings (its const volatile globals) and
// which attachment runs.
type options struct {
	raddr  bool // one histogram per remote address
	fentry bool // fentry/tcp_rcv_established rather than tp_btf/tcp_probe
}

func main() {
	var o options
	flag.BoolVar(&o.raddr, "raddr", false, "one histogram per remote address")
	flag.BoolVar(&o.fentry, "fentry", false, "run the fentry/tcp_rcv_established program")
	flag.Parse()
	if err := run(os.Stdout, o); err != nil {
		log.Fatal(err)
	}
}

func run(w io.Writer, o options) error {
	spec, err := loader.LoadCollectionSpecFromReader(bytes.NewReader(object), "tcprtt.o")
	if err != nil {
		return err
	}
	if o.raddr {
		if err := spec.Variables["targ_raddr_hist"].Set(uint8(1)); err != nil {
			return err
		}
	}
	coll, err := bpfvm.NewCollection(spec)
	if err != nil {
		return err
	}
	defer coll.Close()
	prog := coll.Programs["tcp_probe"]
	if o.fentry {
		prog = coll.Programs["tcp_rcv"]
	}
	// One kernel object per connection, at kernel-like addresses; each
	// receive sets its srtt_us (the kernel keeps it << 3) and runs the
	// program with the socket as its first argument.
	ctx := make([]byte, 8*progtype.MaxTracingArgs)
	for i, c := range conns {
		s := bpfvm.Socket{Protocol: 6, Local: netip.MustParseAddrPort(c.local), Remote: netip.MustParseAddrPort(c.remote)}
		sk, err := s.KernelObject(nil, 0xffff888010000000+uint64(i)<<20)
		if err != nil {
			return err
		}
		world := &bpfvm.Trace{Objects: []*bpfvm.KernelObject{sk}}
		binary.NativeEndian.PutUint64(ctx, sk.Addr)
		for _, rtt := range c.rtts {
			if err := sk.Set("srtt_us", rtt<<3); err != nil {
				return err
			}
			if _, err := prog.Execute(&bpfvm.RunOptions{Context: ctx, Trace: world}); err != nil {
				return fmt.Errorf("receive on %s: %w", c.local, err)
			}
		}
	}
	return print(w, coll.Maps["hists"], o)
}

// print writes the histograms as tcprtt does: per key, the slots with
// their ranges, counts and stars, and the average.
func print(w io.Writer, m *bpfvm.Map, o options) error {
	type entry struct {
		key uint64
		h   hist
	}
	var entries []entry
	var key uint64
	var h hist
	it := m.Iterate()
	for it.Next(&key, &h) {
		entries = append(entries, entry{key, h})
	}
	if err := it.Err(); err != nil {
		return err
	}
	slices.SortFunc(entries, func(a, b entry) int { return cmp.Compare(a.key, b.key) })
	for _, e := range entries {
		if o.raddr {
			var a [4]byte
			binary.NativeEndian.PutUint32(a[:], uint32(e.key))
			fmt.Fprintf(w, "Remote Address = %s [AVG %d]\n", netip.AddrFrom4(a), avg(e.h))
		} else {
			fmt.Fprintf(w, "All Addresses = ****** [AVG %d]\n", avg(e.h))
		}
		printLog2(w, e.h.Slots[:], "usecs")
	}
	return nil
}

func avg(h hist) uint64 {
	if h.Cnt == 0 {
		return 0
	}
	return h.Latency / h.Cnt
}

// printLog2 prints a log2 histogram in bcc's layout: slot i counts the
// values of floor(log2) i, [2^i, 2^(i+1)-1] (slot 0: 0 and 1).
func printLog2(w io.Writer, slots []uint64, unit string) {
	last, max := -1, uint64(0)
	for i, n := range slots {
		if n > 0 {
			last = i
		}
		if n > max {
			max = n
		}
	}
	fmt.Fprintf(w, "%*s%-*s : count    distribution\n", 5, "", 19, unit)
	for i := 0; i <= last; i++ {
		lo := uint64(1) << (i + 1) >> 1
		hi := uint64(1)<<(i+1) - 1
		if lo == hi {
			lo--
		}
		stars := 0
		if max > 0 {
			stars = int(slots[i] * 40 / max)
		}
		fmt.Fprintf(w, "%10d -> %-10d : %-8d |%-40s|\n", lo, hi, slots[i], strings.Repeat("*", stars))
	}
	fmt.Fprintln(w)
}
