package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestRunPcap runs a program on each packet of a capture: per-packet
// results equal to runs on the packets one by one, the summary, the
// output capture, and refused captures.
func TestRunPcap(t *testing.T) {
	const obj = "../../examples/xdp_filter/xdp_filter.o"
	telnet, err := os.ReadFile("../../examples/xdp_filter/telnet.pkt")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	packets := [][]byte{telnet, make([]byte, 60), telnet[:20]}
	in := filepath.Join(dir, "in.pcap")
	var recs []pcapPacket
	for i, p := range packets {
		recs = append(recs, pcapPacket{sec: uint32(100 + i), frac: 7, data: p})
	}
	if err := writePcap(in, linkEthernet, false, recs); err != nil {
		t.Fatal(err)
	}
	// The return value of each packet on its own.
	var want []string
	for i, p := range packets {
		f := filepath.Join(dir, "pkt")
		os.WriteFile(f, p, 0o644)
		_, out, _ := runCLI(t, "", "run", obj, "-p", "xdp_filter", "--data", f)
		ret := regexp.MustCompile(`Return value: (\d+)`).FindStringSubmatch(out)
		if ret == nil {
			t.Fatalf("packet %d alone: %q", i+1, out)
		}
		want = append(want, ret[1])
	}
	out := filepath.Join(dir, "out.pcap")
	code, stdout, stderr := runCLI(t, "", "run", obj, "-p", "xdp_filter", "--pcap", in, "--pcap-out", out)
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if code != 0 || len(lines) != 4 {
		t.Fatalf("exit %d, stderr %q\n%s", code, stderr, stdout)
	}
	for i, p := range packets {
		re := regexp.MustCompile(`^packet ` + strconv.Itoa(i+1) + `: Return value: ` + want[i] + ` \(XDP_[A-Z]+\), duration: \d+ns, ` + strconv.Itoa(len(p)) + ` bytes in, ` + strconv.Itoa(len(p)) + ` out$`)
		if !re.MatchString(lines[i]) {
			t.Errorf("line %q, want %s", lines[i], re)
		}
	}
	if !regexp.MustCompile(`^3 packets: XDP_[A-Z]+ \d(, XDP_[A-Z]+ \d)*$`).MatchString(lines[3]) {
		t.Errorf("summary %q", lines[3])
	}
	back, err := readPcap(out)
	if err != nil || len(back.packets) != 3 || back.packets[1].sec != 101 || back.packets[1].frac != 7 || !bytes.Equal(back.packets[0].data, telnet) {
		t.Errorf("output capture: %v %+v", err, back)
	}
	// JSON, and the batch keyword.
	if code, stdout, _ := runCLI(t, "", "-j", "run", obj, "-p", "xdp_filter", "--pcap", in); code != 0 ||
		!regexp.MustCompile(`^\[\{"packet":1,"retval":`+want[0]+`,"duration":\d+,"size_out":54\},\{"packet":2,`).MatchString(stdout) {
		t.Errorf("-j: exit %d\n%s", code, stdout)
	}
	if code, stdout, stderr := runCLI(t, "prog run name xdp_filter pcap_in "+in+"\n", "batch", obj, "-"); code != 0 || !strings.HasPrefix(stdout, "packet 1: Return value: "+want[0]) {
		t.Errorf("batch: exit %d, stderr %q\n%s", code, stderr, stdout)
	}
	// Captures bpfvm does not read are refused with the reason.
	be := binary.BigEndian.AppendUint32(nil, 0xa1b2c3d4)
	be = append(be, 0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 1)
	be = append(be, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 14, 0, 0, 0, 14)
	be = append(be, telnet[:14]...)
	for _, tc := range []struct {
		name string
		b    []byte
		err  string
	}{
		{"pcapng", []byte{0x0a, 0x0d, 0x0d, 0x0a, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "pcapng: not a pcap file"},
		{"text", []byte("hello, this is not a capture\n"), "not a pcap file (magic"},
		{"short", []byte{0xd4, 0xc3}, "not a pcap file"},
		{"truncated", append([]byte(nil), be[:len(be)-4]...), "packet 1: truncated"},
		{"linktype", func() []byte { b := append([]byte(nil), be...); b[23] = 113; return b }(), "link type 113"},
	} {
		f := filepath.Join(dir, tc.name)
		os.WriteFile(f, tc.b, 0o644)
		if code, _, stderr := runCLI(t, "", "run", obj, "-p", "xdp_filter", "--pcap", f); code != 1 || !strings.Contains(stderr, tc.err) {
			t.Errorf("%s: exit %d, stderr %q, want %q", tc.name, code, stderr, tc.err)
		}
	}
	// Big-endian captures read.
	f := filepath.Join(dir, "be.pcap")
	os.WriteFile(f, be, 0o644)
	if p, err := readPcap(f); err != nil || len(p.packets) != 1 || p.packets[0].sec != 1 || p.packets[0].frac != 2 || !bytes.Equal(p.packets[0].data, telnet[:14]) {
		t.Errorf("big-endian: %v %+v", err, p)
	}
}
