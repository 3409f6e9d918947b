package bpfvm_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/bpfvm/bpfvm"
)

// fibNetns is the network namespace TestFIBLookupKernel builds for the
// kernel, with iproute2: a veth pair (veth0 forwarding, addressed,
// routed; veth1 not forwarding), routes of every type, a policy rule, a
// route of another table, neighbours, an IPv4 route through an IPv6 next
// hop.
var fibNetns = []string{
	"link set lo up",
	"link add veth0 mtu 1500 address 02:00:00:00:00:01 type veth peer name veth1 address 02:00:00:00:00:02",
	"link set veth0 up",
	"link set veth1 up",
	"addr add 10.1.0.1/24 dev veth0",
	"-6 addr add fd01::1/64 dev veth0 nodad",
	"route add 10.2.0.0/16 via 10.1.0.2 dev veth0 metric 5",
	"route add 10.3.0.0/16 via 10.1.0.3 dev veth0 mtu lock 1300",
	"route add 10.10.0.0/16 via 10.1.0.2 dev veth0 mtu 1300",
	"route add blackhole 10.4.0.0/16",
	"route add unreachable 10.5.0.0/16",
	"route add prohibit 10.6.0.0/16",
	"route add 10.7.0.0/16 via 10.1.0.2 dev veth0 table 100",
	"route add 10.8.0.0/16 via inet6 fd01::2 dev veth0",
	"rule add fwmark 7 table 100 pref 100",
	"neigh add 10.1.0.2 lladdr 02:00:00:00:00:aa dev veth0 nud permanent",
	"-6 route add fd02::/64 via fd01::2 dev veth0 metric 10",
	"-6 route add blackhole fd03::/64",
	"-6 neigh add fd01::2 lladdr 02:00:00:00:00:bb dev veth0 nud permanent",
}

// fibWorld is bpfvm's description of the same namespace: the routes the
// kernel adds for the addresses (local, broadcast, connected) included.
func fibWorld(lo, veth0, veth1 uint32) *bpfvm.Net {
	p, a := netip.MustParsePrefix, netip.MustParseAddr
	mac := func(b byte) [6]byte { return [6]byte{2, 0, 0, 0, 0, b} }
	return &bpfvm.Net{
		Devices: []bpfvm.Device{
			{Ifindex: lo, MTU: 65536, HeaderLen: 14, Forwarding: true, Addrs: []netip.Addr{a("127.0.0.1"), a("::1")}},
			{Ifindex: veth0, MTU: 1500, HeaderLen: 14, MAC: mac(1), Forwarding: true, Addrs: []netip.Addr{a("10.1.0.1"), a("fd01::1")}},
			{Ifindex: veth1, MTU: 1500, HeaderLen: 14, MAC: mac(2)},
		},
		Routes: []bpfvm.Route{
			{Dst: p("127.0.0.0/8"), Type: bpfvm.RouteLocal, Ifindex: lo, Table: 255},
			{Dst: p("127.0.0.1/32"), Type: bpfvm.RouteLocal, Ifindex: lo, Table: 255},
			{Dst: p("10.1.0.1/32"), Type: bpfvm.RouteLocal, Ifindex: veth0, Table: 255},
			{Dst: p("10.1.0.255/32"), Type: bpfvm.RouteBroadcast, Ifindex: veth0, Table: 255},
			{Dst: p("10.1.0.0/24"), Ifindex: veth0, Src: a("10.1.0.1")},
			{Dst: p("10.2.0.0/16"), Gateway: a("10.1.0.2"), Ifindex: veth0, Metric: 5},
			{Dst: p("10.3.0.0/16"), Gateway: a("10.1.0.3"), Ifindex: veth0, MTU: 1300},
			{Dst: p("10.10.0.0/16"), Gateway: a("10.1.0.2"), Ifindex: veth0}, // its MTU is not locked
			{Dst: p("10.4.0.0/16"), Type: bpfvm.RouteBlackhole},
			{Dst: p("10.5.0.0/16"), Type: bpfvm.RouteUnreachable},
			{Dst: p("10.6.0.0/16"), Type: bpfvm.RouteProhibit},
			{Dst: p("10.7.0.0/16"), Gateway: a("10.1.0.2"), Ifindex: veth0, Table: 100},
			{Dst: p("10.8.0.0/16"), Gateway: a("fd01::2"), Ifindex: veth0},
			{Dst: p("::1/128"), Type: bpfvm.RouteLocal, Ifindex: lo, Table: 255},
			{Dst: p("fd01::1/128"), Type: bpfvm.RouteLocal, Ifindex: veth0, Table: 255},
			{Dst: p("ff00::/8"), Type: bpfvm.RouteMulticast, Ifindex: veth0, Table: 255, Metric: 256},
			{Dst: p("fd01::/64"), Ifindex: veth0, Metric: 256},
			{Dst: p("fe80::/64"), Ifindex: veth0, Metric: 256},
			{Dst: p("fd02::/64"), Gateway: a("fd01::2"), Ifindex: veth0, Metric: 10},
			{Dst: p("fd03::/64"), Type: bpfvm.RouteBlackhole, Metric: 1024},
		},
		Rules: []bpfvm.Rule{{Mark: 7, Mask: 0xffffffff, Table: 100}},
		Neighbors: []bpfvm.Neighbor{
			{Ifindex: veth0, Addr: a("10.1.0.2"), MAC: [6]byte{2, 0, 0, 0, 0, 0xaa}},
			{Ifindex: veth0, Addr: a("fd01::2"), MAC: [6]byte{2, 0, 0, 0, 0, 0xbb}},
		},
	}
}

// fibReq is struct fibreq of testdata/helpers_sock.c: the params, their
// size (64 or not) and the flags.
type fibReq struct {
	family       uint8
	ifindex      uint32
	src, dst     netip.Addr
	totLen       uint16
	tbid, mark   uint32
	plen, flags  uint32
	sport, dport uint16
	proto, tos   uint8
}

func (q fibReq) packet() []byte {
	b := make([]byte, 14+72+16)
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	p := b[14:]
	le := binary.NativeEndian
	p[0] = q.family
	p[1] = q.proto
	binary.BigEndian.PutUint16(p[2:], q.sport)
	binary.BigEndian.PutUint16(p[4:], q.dport)
	le.PutUint16(p[6:], q.totLen)
	le.PutUint32(p[8:], q.ifindex)
	p[12] = q.tos
	if q.src.IsValid() {
		if q.src.Is4() {
			s := q.src.As4()
			copy(p[16:], s[:])
		} else {
			s := q.src.As16()
			copy(p[16:], s[:])
		}
	}
	if q.dst.Is4() {
		d := q.dst.As4()
		copy(p[32:], d[:])
	} else {
		d := q.dst.As16()
		copy(p[32:], d[:])
	}
	le.PutUint32(p[48:], q.tbid)
	le.PutUint32(p[52:], q.mark)
	le.PutUint32(p[64:], q.plen)
	le.PutUint32(p[68:], q.flags)
	return b
}

// TestFIBLookupKernel compares bpf_fib_lookup (tc and XDP) with the
// kernel's in a network namespace of its own that iproute2 sets up
// (fibNetns), bpfvm given the same world (fibWorld): the result and
// every byte of the params it leaves.
func TestFIBLookupKernel(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root for a network namespace")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no iproute2")
	}
	vmc := map[bool]*bpfvm.Collection{}
	var kern *ebpf.Collection
	for _, nv := range []bool{true, false} {
		vm, k := loadHelpers(t, nv, "testdata/helpers_sock.o", bpfvm.CollectionOptions{})
		vmc[nv], kern = vm, k
	}
	if kern == nil {
		t.Skip("no kernel oracle")
	}
	errs := make(chan string, 1000)
	done := make(chan [2]int)
	go func() {
		// The thread stays locked: it dies with the goroutine, and the
		// namespace with it.
		runtime.LockOSThread()
		compared, agreed := 0, 0
		defer func() { done <- [2]int{compared, agreed} }()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errs <- "skip: unshare: " + err.Error()
			return
		}
		for _, cmd := range fibNetns {
			if out, err := exec.Command("ip", strings.Fields(cmd)...).CombinedOutput(); err != nil {
				errs <- fmt.Sprintf("skip: ip %s: %v: %s", cmd, err, out)
				return
			}
		}
		for _, f := range []string{"ipv4/conf/all/forwarding", "ipv6/conf/all/forwarding"} {
			if err := os.WriteFile("/proc/sys/net/"+f, []byte("1"), 0); err != nil {
				errs <- "skip: " + err.Error()
				return
			}
		}
		for _, f := range []string{"ipv4/conf/veth1/forwarding", "ipv6/conf/veth1/forwarding"} {
			if err := os.WriteFile("/proc/sys/net/"+f, []byte("0"), 0); err != nil {
				errs <- "skip: " + err.Error()
				return
			}
		}
		idx := map[string]uint32{}
		for _, n := range []string{"lo", "veth0", "veth1"} {
			i, err := net.InterfaceByName(n)
			if err != nil {
				errs <- "skip: " + err.Error()
				return
			}
			idx[n] = uint32(i.Index)
		}
		world := fibWorld(idx["lo"], idx["veth0"], idx["veth1"])
		a := netip.MustParseAddr
		lo, v0, v1 := idx["lo"], idx["veth0"], idx["veth1"]
		const (
			in4, in6                              = 2, 10
			direct, output, skip, tbid, src, mark = 1, 2, 4, 8, 16, 32
		)
		cases := []struct {
			name string
			q    fibReq
		}{
			{"routed", fibReq{family: in4, ifindex: lo, dst: a("10.2.3.4"), plen: 64}},
			{"routed from veth0", fibReq{family: in4, ifindex: v0, dst: a("10.2.3.4"), plen: 64}},
			{"no device", fibReq{family: in4, ifindex: 99, dst: a("10.2.3.4"), plen: 64}},
			{"forwarding off", fibReq{family: in4, ifindex: v1, dst: a("10.2.3.4"), plen: 64}},
			{"forwarding off v6", fibReq{family: in6, ifindex: v1, dst: a("fd02::5"), plen: 64}},
			{"no neighbour", fibReq{family: in4, ifindex: lo, dst: a("10.3.3.4"), plen: 64}},
			{"no neighbour skipped", fibReq{family: in4, ifindex: lo, dst: a("10.3.3.4"), plen: 64, flags: skip}},
			{"route mtu", fibReq{family: in4, ifindex: lo, dst: a("10.3.3.4"), plen: 64, totLen: 1400, flags: skip}},
			{"route mtu fits", fibReq{family: in4, ifindex: lo, dst: a("10.3.3.4"), plen: 64, totLen: 1300, flags: skip}},
			{"unlocked route mtu", fibReq{family: in4, ifindex: lo, dst: a("10.10.3.4"), plen: 64, totLen: 1400}},
			{"device mtu", fibReq{family: in4, ifindex: lo, dst: a("10.2.3.4"), plen: 64, totLen: 1501}},
			{"blackhole", fibReq{family: in4, ifindex: lo, dst: a("10.4.0.1"), plen: 64}},
			{"unreachable", fibReq{family: in4, ifindex: lo, dst: a("10.5.0.1"), plen: 64}},
			{"prohibit", fibReq{family: in4, ifindex: lo, dst: a("10.6.0.1"), plen: 64}},
			{"no route", fibReq{family: in4, ifindex: lo, dst: a("10.9.9.9"), plen: 64}},
			{"local", fibReq{family: in4, ifindex: lo, dst: a("10.1.0.1"), plen: 64}},
			{"loopback", fibReq{family: in4, ifindex: lo, dst: a("127.0.0.1"), plen: 64}},
			{"broadcast", fibReq{family: in4, ifindex: lo, dst: a("10.1.0.255"), plen: 64}},
			{"on link", fibReq{family: in4, ifindex: lo, dst: a("10.1.0.2"), plen: 64}},
			{"on link no neighbour", fibReq{family: in4, ifindex: lo, dst: a("10.1.0.9"), plen: 64}},
			{"other table", fibReq{family: in4, ifindex: lo, dst: a("10.7.1.1"), plen: 64}},
			{"other table by mark", fibReq{family: in4, ifindex: lo, dst: a("10.7.1.1"), plen: 64, flags: mark, mark: 7}},
			{"mark without rule", fibReq{family: in4, ifindex: lo, dst: a("10.7.1.1"), plen: 64, flags: mark, mark: 8}},
			{"mark ignored", fibReq{family: in4, ifindex: lo, dst: a("10.7.1.1"), plen: 64, mark: 7}},
			{"direct main", fibReq{family: in4, ifindex: lo, dst: a("10.2.3.4"), plen: 64, flags: direct}},
			{"direct other table", fibReq{family: in4, ifindex: lo, dst: a("10.7.1.1"), plen: 64, flags: direct}},
			{"direct tbid", fibReq{family: in4, ifindex: lo, dst: a("10.7.1.1"), plen: 64, flags: direct | tbid, tbid: 100}},
			{"direct tbid missing", fibReq{family: in4, ifindex: lo, dst: a("10.7.1.1"), plen: 64, flags: direct | tbid, tbid: 200}},
			{"tbid without direct", fibReq{family: in4, ifindex: lo, dst: a("10.7.1.1"), plen: 64, flags: tbid, tbid: 100}},
			{"direct local", fibReq{family: in4, ifindex: lo, dst: a("10.1.0.1"), plen: 64, flags: direct}},
			{"output", fibReq{family: in4, ifindex: v0, dst: a("10.2.3.4"), plen: 64, flags: output}},
			{"output other device", fibReq{family: in4, ifindex: lo, dst: a("10.2.3.4"), plen: 64, flags: output}},
			{"source", fibReq{family: in4, ifindex: lo, dst: a("10.2.3.4"), plen: 64, flags: src}},
			{"source on link", fibReq{family: in4, ifindex: lo, dst: a("10.1.0.2"), plen: 64, flags: src}},
			{"ipv6 next hop", fibReq{family: in4, ifindex: lo, dst: a("10.8.1.1"), plen: 64}},
			{"short params", fibReq{family: in4, ifindex: lo, dst: a("10.2.3.4"), plen: 32}},
			{"bad flags", fibReq{family: in4, ifindex: lo, dst: a("10.2.3.4"), plen: 64, flags: 64}},
			{"bad family", fibReq{family: 3, ifindex: lo, dst: a("10.2.3.4"), plen: 64}},
			{"v6 routed", fibReq{family: in6, ifindex: lo, dst: a("fd02::5"), plen: 64}},
			{"v6 on link", fibReq{family: in6, ifindex: lo, dst: a("fd01::2"), plen: 64}},
			{"v6 on link no neighbour", fibReq{family: in6, ifindex: lo, dst: a("fd01::9"), plen: 64}},
			{"v6 no route", fibReq{family: in6, ifindex: lo, dst: a("fd09::1"), plen: 64}},
			{"v6 blackhole", fibReq{family: in6, ifindex: lo, dst: a("fd03::1"), plen: 64}},
			{"v6 local", fibReq{family: in6, ifindex: lo, dst: a("fd01::1"), plen: 64}},
			{"v6 link local", fibReq{family: in6, ifindex: lo, dst: a("fe80::1"), plen: 64}},
			{"v6 loopback", fibReq{family: in6, ifindex: lo, dst: a("::1"), plen: 64}},
			{"v6 multicast", fibReq{family: in6, ifindex: lo, dst: a("ff02::1"), plen: 64}},
			{"v6 link local source", fibReq{family: in6, ifindex: lo, src: a("fe80::1"), dst: a("fd02::5"), plen: 64}},
			{"v6 source", fibReq{family: in6, ifindex: lo, dst: a("fd02::5"), plen: 64, flags: src}},
			{"v6 skip neighbour", fibReq{family: in6, ifindex: lo, dst: a("fd01::9"), plen: 64, flags: skip}},
			{"v6 mtu", fibReq{family: in6, ifindex: lo, dst: a("fd02::5"), plen: 64, totLen: 1501}},
			{"v6 output", fibReq{family: in6, ifindex: v0, dst: a("fd02::5"), plen: 64, flags: output}},
			{"v6 no device", fibReq{family: in6, ifindex: 99, dst: a("fd02::5"), plen: 64}},
		}
		for _, nv := range []bool{true, false} {
			vm := vmc[nv]
			for _, prog := range []string{"tc_fib", "xdp_fib"} {
				for _, c := range cases {
					pkt := c.q.packet()
					res, err := vm.Programs[prog].Execute(&bpfvm.RunOptions{Data: pkt, Net: world})
					if err != nil {
						errs <- fmt.Sprintf("%s %s: %v", prog, c.name, err)
						return
					}
					var got, want []byte
					if err := vm.Maps["fib"].Lookup(uint32(0), &got); err != nil {
						errs <- err.Error()
						return
					}
					kret, err := kern.Programs[prog].Run(&ebpf.RunOptions{Data: pkt})
					if err != nil {
						errs <- fmt.Sprintf("%s %s: kernel: %v", prog, c.name, err)
						return
					}
					if err := kern.Maps["fib"].Lookup(uint32(0), &want); err != nil {
						errs <- err.Error()
						return
					}
					compared++
					if int32(res.R0) != int32(kret) || !bytes.Equal(got, want) {
						errs <- fmt.Sprintf("%s %s (checked %v): bpfvm %d % x, kernel %d % x", prog, c.name, nv, int32(res.R0), got, int32(kret), want)
						continue
					}
					if testing.Verbose() {
						errs <- fmt.Sprintf("log: %s %s: %d % x", prog, c.name, int32(kret), want)
					}
					agreed++
				}
			}
		}
	}()
	counts := <-done
	close(errs)
	for e := range errs {
		switch {
		case strings.HasPrefix(e, "skip: "):
			t.Skip(e)
		case strings.HasPrefix(e, "log: "):
			t.Log(e)
		default:
			t.Error(e)
		}
	}
	t.Logf("%d fib lookups compared with the kernel's, %d agree", counts[0], counts[1])
}
