// Command xdp_counter loads an XDP program with two hash maps, fills its
// block list from Go, runs packets from several sources through it and
// prints the per-source counters it kept.
//
//	go run ./examples/xdp_counter
package main

//go:generate clang-19 -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu -c bpf/xdp_counter.c -o xdp_counter.o

import (
	"bytes"
	_ "embed"
	"encoding/binary"
	"fmt"
	"io"
	"log"
	"net/netip"
	"os"
	"sort"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
)

//go:embed xdp_counter.o
var object []byte

// stats mirrors struct stats of bpf/xdp_counter.c.
type stats struct {
	Packets, Bytes, Dropped uint64
}

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// key is an IPv4 address as the program sees it: network byte order.
func key(addr netip.Addr) uint32 {
	b := addr.As4()
	return binary.NativeEndian.Uint32(b[:])
}

// packet builds an Ethernet + IPv4 + UDP frame from src with n payload bytes.
func packet(src netip.Addr, n int) []byte {
	frame := make([]byte, 14+20+8+n)
	binary.BigEndian.PutUint16(frame[12:], 0x0800)
	ip := frame[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(20+8+n))
	s := src.As4()
	copy(ip[12:], s[:])
	copy(ip[16:], []byte{192, 0, 2, 1})
	return frame
}

func run(w io.Writer) error {
	spec, err := loader.LoadCollectionSpecFromReader(bytes.NewReader(object), "xdp_counter.o")
	if err != nil {
		return err
	}
	coll, err := bpfvm.NewCollection(spec)
	if err != nil {
		return err
	}
	defer coll.Close()

	blocked := netip.MustParseAddr("198.51.100.7")
	if err := coll.Maps["blocklist"].Put(key(blocked), uint8(1)); err != nil {
		return err
	}
	prog := coll.Programs["xdp_counter"]
	sources := []string{"203.0.113.1", "203.0.113.2", "198.51.100.7", "203.0.113.1"}
	for i, s := range sources {
		verdict, err := prog.Run(&bpfvm.RunOptions{Data: packet(netip.MustParseAddr(s), 100*(i+1))})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "packet %d from %-13s -> %s\n", i, s, map[uint32]string{1: "XDP_DROP", 2: "XDP_PASS"}[verdict])
	}

	type row struct {
		addr netip.Addr
		s    stats
	}
	var rows []row
	var k uint32
	var s stats
	it := coll.Maps["counters"].Iterate()
	for it.Next(&k, &s) {
		var b [4]byte
		binary.NativeEndian.PutUint32(b[:], k)
		rows = append(rows, row{netip.AddrFrom4(b), s})
	}
	if err := it.Err(); err != nil {
		return err
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].addr.Less(rows[j].addr) })
	for _, r := range rows {
		fmt.Fprintf(w, "%-13s packets %d bytes %d dropped %d\n", r.addr, r.s.Packets, r.s.Bytes, r.s.Dropped)
	}
	return nil
}
