package tclpm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
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

// cidr is struct cidr of bpf/tc_lpm.c, the trie's key.
type cidr struct {
	PrefixLen uint32
	Addr      [4]byte
}

func key(p netip.Prefix) cidr { return cidr{uint32(p.Bits()), p.Addr().As4()} }

// event is its struct event.
type event struct {
	Saddr, Daddr [4]byte
	Reason, Len  uint32
}

func (e event) String() string {
	return fmt.Sprintf("%v -> %v reason %d len %d", netip.AddrFrom4(e.Saddr), netip.AddrFrom4(e.Daddr), e.Reason, e.Len)
}

// The policy: two denied networks and one allowed host inside one.
var policy = map[string]uint32{"10.2.5.0/24": 1, "10.2.5.7/32": 0, "192.0.2.0/24": 1}

// packet is an Ethernet + IPv4 + UDP frame to dst.
func packet(dst string) []byte {
	f := make([]byte, 14+20+8+32)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
	copy(ip[12:], []byte{198, 51, 100, 1})
	d := netip.MustParseAddr(dst).As4()
	copy(ip[16:], d[:])
	return f
}

// The host: veth0 (10.1.0.1/24, MAC 02:..:01) with neighbour 10.1.0.2,
// routes to 10.2.0.0/16 through it and to 10.3.0.0/16 through 10.1.0.3,
// which has no neighbour entry; forwarding on.
var netnsSetup = []string{
	"link set lo up",
	"link add veth0 type veth peer name veth1",
	"link set veth0 address 02:00:00:00:00:01",
	"link set veth0 up",
	"link set veth1 up",
	"addr add 10.1.0.1/24 dev veth0",
	"neigh add 10.1.0.2 lladdr 02:00:00:00:00:aa dev veth0 nud permanent",
	"route add 10.2.0.0/16 via 10.1.0.2 dev veth0",
	"route add 10.3.0.0/16 via 10.1.0.3 dev veth0",
}

// world is the same host for bpfvm, veth0 being ifindex veth0.
func world(veth0 uint32) *bpfvm.Net {
	p, a := netip.MustParsePrefix, netip.MustParseAddr
	return &bpfvm.Net{
		Devices: []bpfvm.Device{
			{Ifindex: 1, MTU: 65536, HeaderLen: 14, Forwarding: true, Addrs: []netip.Addr{a("127.0.0.1")}},
			{Ifindex: veth0, MTU: 1500, HeaderLen: 14, MAC: [6]byte{2, 0, 0, 0, 0, 1}, Forwarding: true, Addrs: []netip.Addr{a("10.1.0.1")}},
		},
		Routes: []bpfvm.Route{
			{Dst: p("127.0.0.0/8"), Type: bpfvm.RouteLocal, Ifindex: 1, Table: 255},
			{Dst: p("10.1.0.1/32"), Type: bpfvm.RouteLocal, Ifindex: veth0, Table: 255},
			{Dst: p("10.1.0.0/24"), Ifindex: veth0, Src: a("10.1.0.1")},
			{Dst: p("10.2.0.0/16"), Gateway: a("10.1.0.2"), Ifindex: veth0},
			{Dst: p("10.3.0.0/16"), Gateway: a("10.1.0.3"), Ifindex: veth0},
		},
		Neighbors: []bpfvm.Neighbor{{Ifindex: veth0, Addr: a("10.1.0.2"), MAC: [6]byte{2, 0, 0, 0, 0, 0xaa}}},
	}
}

// outcome is what a packet's run gives: the verdict, the packet after it
// and the events it reported.
type outcome struct {
	verdict uint32
	data    []byte
	events  []string
}

var dsts = []string{"10.2.1.1", "10.2.5.9", "10.2.5.7", "10.3.0.1", "192.0.2.1", "10.9.9.9"}

// TestTCLPM runs the example on both engines and compares it with the
// kernel where it can.
func TestTCLPM(t *testing.T) {
	want := []string{
		"verdict 7 (redirect to veth0)",                             // forwarded
		"verdict 2 event 198.51.100.1 -> 10.2.5.9 reason 0 len 74",  // denied
		"verdict 7 (redirect to veth0)",                             // the allowed host
		"verdict 0 event 198.51.100.1 -> 10.3.0.1 reason 8 len 74",  // no neighbour
		"verdict 2 event 198.51.100.1 -> 192.0.2.1 reason 0 len 74", // denied
		"verdict 0 event 198.51.100.1 -> 10.9.9.9 reason 5 len 74",  // no route
	}
	kernel, veth0 := kernelOutcomes(t)
	if veth0 == 0 {
		veth0 = 2
	}
	for _, c := range []struct {
		e        bpfvm.Engine
		noVerify bool // checked mode: every access validated at run time
	}{{bpfvm.EngineInterpreter, false}, {bpfvm.EngineJIT, false}, {bpfvm.EngineInterpreter, true}, {bpfvm.EngineJIT, true}} {
		e := c.e
		got := bpfvmOutcomes(t, e, c.noVerify, veth0)
		for i, o := range got {
			if s := describe(o, veth0); s != want[i] {
				t.Errorf("%v: %s: %s, want %s", e, dsts[i], s, want[i])
			}
			if kernel == nil {
				continue
			}
			k := kernel[i]
			if o.verdict != k.verdict || !bytes.Equal(o.data, k.data) || strings.Join(o.events, ";") != strings.Join(k.events, ";") {
				t.Errorf("%v: %s: bpfvm %+v, kernel %+v", e, dsts[i], o, k)
			}
		}
	}
	if kernel != nil {
		t.Logf("%d packets compared with the kernel's test run on each engine, verified and checked", len(kernel))
	}
}

func describe(o outcome, veth0 uint32) string {
	s := fmt.Sprintf("verdict %d", o.verdict)
	if o.verdict == 7 {
		s += " (redirect to veth0)"
	}
	for _, e := range o.events {
		s += " event " + e
	}
	return s
}

// bpfvmOutcomes loads the example into bpfvm and runs the packets.
func bpfvmOutcomes(t *testing.T, e bpfvm.Engine, noVerify bool, veth0 uint32) []outcome {
	spec, err := loader.LoadCollectionSpec("tc_lpm.o")
	if err != nil {
		t.Fatal(err)
	}
	coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Engine: e, NoVerify: noVerify}})
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	for p, action := range policy {
		if err := coll.Maps["policy"].Put(key(netip.MustParsePrefix(p)), action); err != nil {
			t.Fatal(err)
		}
	}
	rd, err := perf.NewReader(coll.Maps["events"], 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var out []outcome
	for _, d := range dsts {
		data := packet(d)
		buf := make([]byte, len(data))
		res, err := coll.Programs["tc_lpm"].Execute(&bpfvm.RunOptions{Data: data, DataOut: buf, Net: world(veth0)})
		if err != nil {
			t.Fatal(err)
		}
		if res.R0 == 7 && (!res.Redirect.Valid || res.Redirect.Key != uint64(veth0)) {
			t.Errorf("%s: redirect %+v, want to %d", d, res.Redirect, veth0)
		}
		o := outcome{verdict: uint32(res.R0), data: buf[:res.DataSize]}
		rd.SetDeadline(time.Now().Add(10 * time.Millisecond))
		for {
			rec, err := rd.Read()
			if err != nil {
				break
			}
			o.events = append(o.events, decode(t, rec.RawSample))
		}
		out = append(out, o)
	}
	return out
}

func decode(t *testing.T, raw []byte) string {
	var ev event
	if err := binary.Read(bytes.NewReader(raw), binary.NativeEndian, &ev); err != nil {
		t.Fatal(err)
	}
	return ev.String()
}

// kernelOutcomes runs the packets through the kernel in a network
// namespace set up as world; nil where that is not possible.
func kernelOutcomes(t *testing.T) ([]outcome, uint32) {
	if os.Getuid() != 0 || rlimit.RemoveMemlock() != nil {
		t.Log("kernel comparison skipped: not root")
		return nil, 0
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Log("kernel comparison skipped: no iproute2")
		return nil, 0
	}
	spec, err := ebpf.LoadCollectionSpec("tc_lpm.o")
	if err != nil {
		t.Fatal(err)
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			t.Logf("kernel comparison skipped: %v", err)
			return nil, 0
		}
		t.Fatal(err)
	}
	defer coll.Close()
	for p, action := range policy {
		if err := coll.Maps["policy"].Put(key(netip.MustParsePrefix(p)), action); err != nil {
			t.Fatal(err)
		}
	}
	rd, err := ebpfperf.NewReader(coll.Maps["events"], 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	type result struct {
		out   []outcome
		veth0 uint32
		err   string
	}
	done := make(chan result)
	go func() {
		runtime.LockOSThread() // dies with the goroutine, and the namespace with it
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			done <- result{err: "unshare: " + err.Error()}
			return
		}
		for _, c := range netnsSetup {
			if o, err := exec.Command("ip", strings.Fields(c)...).CombinedOutput(); err != nil {
				done <- result{err: fmt.Sprintf("ip %s: %v: %s", c, err, o)}
				return
			}
		}
		for _, f := range []string{"all", "lo", "veth0"} {
			if err := os.WriteFile("/proc/sys/net/ipv4/conf/"+f+"/forwarding", []byte("1"), 0); err != nil {
				done <- result{err: err.Error()}
				return
			}
		}
		i, err := net.InterfaceByName("veth0")
		if err != nil {
			done <- result{err: err.Error()}
			return
		}
		var out []outcome
		for _, d := range dsts {
			data := packet(d)
			buf := make([]byte, len(data))
			opts := &ebpf.RunOptions{Data: data, DataOut: buf}
			ret, err := coll.Programs["tc_lpm"].Run(opts)
			if err != nil {
				done <- result{err: err.Error()}
				return
			}
			o := outcome{verdict: ret, data: opts.DataOut}
			rd.SetDeadline(time.Now().Add(10 * time.Millisecond))
			for {
				rec, err := rd.Read()
				if err != nil {
					break
				}
				o.events = append(o.events, decode(t, rec.RawSample))
			}
			out = append(out, o)
		}
		done <- result{out: out, veth0: uint32(i.Index)}
	}()
	r := <-done
	if r.err != "" {
		t.Logf("kernel comparison skipped: %s", r.err)
		return nil, 0
	}
	return r.out, r.veth0
}
