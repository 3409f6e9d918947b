package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
)

// errPcap is a file that is not a pcap capture bpfvm reads.
var errPcap = errors.New("not a pcap file")

// pcapPacket is one captured packet: its bytes and when it was taken.
type pcapPacket struct {
	sec, frac uint32 // seconds, and micro- or nanoseconds
	orig      uint32 // the length on the wire
	data      []byte
}

// pcapFile is a classic libpcap capture: byte order, time resolution and
// link type from its header.
type pcapFile struct {
	order    binary.ByteOrder
	nano     bool
	linkType uint32
	snapLen  uint32
	packets  []pcapPacket
}

// Link types bpfvm runs programs on: Ethernet frames (XDP, tc, socket
// filters all see them so in a test run).
const linkEthernet = 1

// readPcap reads a classic pcap file (either byte order, micro- or
// nanosecond timestamps). pcapng is refused with a message saying so.
func readPcap(path string) (*pcapFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var hdr [24]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", path, errPcap, err)
	}
	p := &pcapFile{}
	switch m := binary.LittleEndian.Uint32(hdr[:]); m {
	case 0xa1b2c3d4:
		p.order = binary.LittleEndian
	case 0xa1b23c4d:
		p.order, p.nano = binary.LittleEndian, true
	case 0xd4c3b2a1:
		p.order = binary.BigEndian
	case 0x4d3cb2a1:
		p.order, p.nano = binary.BigEndian, true
	case 0x0a0d0d0a:
		return nil, fmt.Errorf("%s: pcapng: %w (save it as pcap, e.g. editcap -F pcap)", path, errPcap)
	default:
		return nil, fmt.Errorf("%s: %w (magic %#08x)", path, errPcap, m)
	}
	p.snapLen = p.order.Uint32(hdr[16:])
	p.linkType = p.order.Uint32(hdr[20:]) & 0x0fffffff // the high bits are FCS flags
	for n := 1; ; n++ {
		var rec [16]byte
		if _, err := io.ReadFull(r, rec[:]); err == io.EOF {
			return p, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: packet %d: truncated header", path, n)
		}
		pkt := pcapPacket{sec: p.order.Uint32(rec[0:]), frac: p.order.Uint32(rec[4:]), orig: p.order.Uint32(rec[12:])}
		incl := p.order.Uint32(rec[8:])
		if incl > 1<<18 { // no snap length is this long: a broken file
			return nil, fmt.Errorf("%s: packet %d: %d bytes captured", path, n, incl)
		}
		pkt.data = make([]byte, incl)
		if _, err := io.ReadFull(r, pkt.data); err != nil {
			return nil, fmt.Errorf("%s: packet %d: truncated: %d bytes", path, n, incl)
		}
		p.packets = append(p.packets, pkt)
	}
}

// writePcap writes packets as a little-endian classic pcap file of the
// given link type and time resolution.
func writePcap(path string, linkType uint32, nano bool, packets []pcapPacket) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	magic := uint32(0xa1b2c3d4)
	if nano {
		magic = 0xa1b23c4d
	}
	hdr := binary.LittleEndian.AppendUint32(nil, magic)
	hdr = binary.LittleEndian.AppendUint16(hdr, 2)
	hdr = binary.LittleEndian.AppendUint16(hdr, 4)
	hdr = append(hdr, make([]byte, 8)...) // thiszone, sigfigs
	hdr = binary.LittleEndian.AppendUint32(hdr, 1<<18)
	hdr = binary.LittleEndian.AppendUint32(hdr, linkType)
	w.Write(hdr)
	for _, p := range packets {
		rec := binary.LittleEndian.AppendUint32(nil, p.sec)
		rec = binary.LittleEndian.AppendUint32(rec, p.frac)
		rec = binary.LittleEndian.AppendUint32(rec, uint32(len(p.data)))
		rec = binary.LittleEndian.AppendUint32(rec, uint32(len(p.data)))
		w.Write(rec)
		w.Write(p.data)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// retName names a program's return value as its type's enum does, for
// the per-packet summary: XDP actions and tc verdicts.
func retName(typ ebpf.ProgramType, ret uint64) string {
	var names []string
	switch typ {
	case ebpf.XDP:
		names = []string{"XDP_ABORTED", "XDP_DROP", "XDP_PASS", "XDP_TX", "XDP_REDIRECT"}
	case ebpf.SchedCLS, ebpf.SchedACT:
		names = []string{"TC_ACT_OK", "TC_ACT_RECLASSIFY", "TC_ACT_SHOT", "TC_ACT_PIPE", "TC_ACT_STOLEN", "TC_ACT_QUEUED", "TC_ACT_REPEAT", "TC_ACT_REDIRECT"}
	}
	if ret < uint64(len(names)) {
		return names[ret]
	}
	return ""
}

// runPcap runs a program on each packet of a capture, as a test run each,
// and prints each one's return value and duration, then how many packets
// got each return value; with out, the packets as the program left them
// go into a capture of their own.
func runPcap(prog *bpfvm.Program, in, out string, repeat uint32, stdout io.Writer, jw *jsonWriter) error {
	capture, err := readPcap(in)
	if err != nil {
		return err
	}
	if capture.linkType != linkEthernet {
		return fmt.Errorf("%s: link type %d: only Ethernet (1) captures", in, capture.linkType)
	}
	counts := map[uint64]int{}
	var order []uint64
	outPackets := make([]pcapPacket, 0, len(capture.packets))
	if jw != nil {
		jw.startArray()
	}
	for i, pkt := range capture.packets {
		buf := make([]byte, len(pkt.data)+defaultSizeOut)
		res, err := prog.Execute(&bpfvm.RunOptions{Data: pkt.data, DataOut: buf, Repeat: max(repeat, 1)})
		if err != nil {
			return fmt.Errorf("%s: packet %d: %w", in, i+1, err)
		}
		ret := res.R0
		if prog.Type() != ebpf.UnspecifiedProgram {
			ret = uint64(uint32(ret))
		}
		if counts[ret] == 0 {
			order = append(order, ret)
		}
		counts[ret]++
		outPackets = append(outPackets, pcapPacket{sec: pkt.sec, frac: pkt.frac, data: buf[:res.DataSize]})
		if jw != nil {
			jw.startObject()
			jw.name("packet")
			jw.int(int64(i + 1))
			jw.name("retval")
			jw.uint(ret)
			jw.name("duration")
			jw.int(res.Duration.Nanoseconds())
			jw.name("size_out")
			jw.int(int64(res.DataSize))
			jw.endObject()
			continue
		}
		name := retName(prog.Type(), ret)
		if name != "" {
			name = " (" + name + ")"
		}
		fmt.Fprintf(stdout, "packet %d: Return value: %d%s, duration: %dns, %d bytes in, %d out\n", i+1, ret, name, res.Duration.Nanoseconds(), len(pkt.data), res.DataSize)
	}
	if jw != nil {
		jw.endArray()
	} else {
		fmt.Fprintf(stdout, "%d packets:", len(capture.packets))
		for k, ret := range order {
			sep := ","
			if k == 0 {
				sep = ""
			}
			name := retName(prog.Type(), ret)
			if name == "" {
				name = fmt.Sprint(ret)
			}
			fmt.Fprintf(stdout, "%s %s %d", sep, name, counts[ret])
		}
		fmt.Fprintln(stdout)
	}
	if out != "" {
		return writePcap(out, capture.linkType, capture.nano, outPackets)
	}
	return nil
}
