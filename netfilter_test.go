package bpfvm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/bpfvm/bpfvm"
)

// nfSeen is how many slots of netfilter.o's map nf_report fills.
const nfSeen = 25

// nfCase is a netfilter test run: a packet, a context input (a struct
// nf_hook_state, nil for none) and the run's options.
type nfCase struct {
	name   string
	data   []byte
	ctx    []byte
	ctxOut bool
	flags  uint32
	cpu    uint32
	batch  uint32
	repeat uint32
}

// nfOut is the outcome of a netfilter run: the errno it failed with (0
// for none), the verdict and what the program reported.
type nfOut struct {
	errno syscall.Errno
	ret   uint32
	seen  [nfSeen]uint64
}

// runErrno is the errno an error of a test run stands for, 0 for nil and
// -1 for one that stands for none of the test runs' errnos.
func runErrno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	for _, e := range []syscall.Errno{syscall.EINVAL, syscall.E2BIG, syscall.EPROTO, syscall.EFAULT, syscall.ENOSPC, syscall.EOPNOTSUPP} {
		if errors.Is(err, e) {
			return e
		}
	}
	return ^syscall.Errno(0)
}

// nfState is a struct nf_hook_state input of hook and family pf.
func nfState(hook, pf byte) []byte {
	b := make([]byte, 48)
	b[0], b[1] = hook, pf
	return b
}

// nfPackets are the netfilter runs' packets: IP headers alone and behind
// Ethernet headers of every packet type, protocols the run refuses, the
// limits of the lengths.
func nfPackets() []struct {
	name string
	data []byte
} {
	ip4 := func(ttl, proto byte, n int) []byte {
		b := make([]byte, n)
		b[0], b[8], b[9] = 0x45, ttl, proto
		binary.BigEndian.PutUint16(b[2:], uint16(n))
		return b
	}
	ip6 := func(hop byte, n int) []byte {
		b := make([]byte, n)
		b[0], b[6], b[7] = 0x60, 17, hop
		return b
	}
	eth := func(dst []byte, proto uint16, payload []byte) []byte {
		b := make([]byte, 14, 14+len(payload))
		copy(b, dst)
		copy(b[6:], []byte{2, 0, 0, 0, 0, 1})
		binary.BigEndian.PutUint16(b[12:], proto)
		return append(b, payload...)
	}
	zero, bcast := make([]byte, 6), bytes.Repeat([]byte{0xff}, 6)
	mcast, other := []byte{1, 0, 0x5e, 0, 0, 1}, []byte{2, 0, 0, 0, 0, 2}
	ffff := append([]byte{0xff, 0xff}, make([]byte, 30)...)
	return []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"13 bytes", make([]byte, 13)},
		{"19 bytes", ip4(64, 6, 19)},
		{"ipv4 ttl 64", ip4(64, 6, 20)},
		{"ipv4 ttl 63", ip4(63, 17, 28)},
		{"ipv6 alone", ip6(64, 40)},
		{"not ip", append([]byte{0x15}, make([]byte, 40)...)},
		{"eth ipv4 short", eth(zero, 0x0800, ip4(64, 6, 19))},
		{"eth ipv4", eth(zero, 0x0800, ip4(64, 6, 20))},
		{"eth ipv4 odd ttl", eth(zero, 0x0800, ip4(1, 1, 60))},
		{"eth ipv4 broadcast", eth(bcast, 0x0800, ip4(64, 6, 20))},
		{"eth ipv4 multicast", eth(mcast, 0x0800, ip4(64, 6, 20))},
		{"eth ipv4 other host", eth(other, 0x0800, ip4(64, 6, 20))},
		{"eth ipv6 short", eth(zero, 0x86dd, ip6(64, 39))},
		{"eth ipv6", eth(zero, 0x86dd, ip6(64, 40))},
		{"eth ipv6 odd hop", eth(other, 0x86dd, ip6(255, 100))},
		{"eth arp", eth(zero, 0x0806, make([]byte, 28))},
		{"eth 802.3", eth(zero, 0x0020, ffff)},
		{"eth 802.2", eth(zero, 0x0020, make([]byte, 32))},
		{"eth ipv4 longest", eth(zero, 0x0800, ip4(64, 6, bpfvmNFMax-14))},
		{"eth ipv4 too long", eth(zero, 0x0800, ip4(64, 6, bpfvmNFMax-13))},
		{"ipv4 1k", ip4(8, 6, 1024-384+1)},
	}
}

// bpfvmNFMax is the longest packet of a netfilter test run.
const bpfvmNFMax = 4096 - 64 - 320

// nfCases are the table of netfilter runs: every packet at every hook and
// family given, with no context, and with the context inputs and run
// options the kernel's test run checks.
func nfCases() []nfCase {
	var cs []nfCase
	hooks := []byte{0, 1, 2, 3, 4, 5, 255}
	pfs := []byte{0, 1, 2, 7, 10, 12}
	for _, p := range nfPackets() {
		add := func(c nfCase) {
			c.name, c.data = p.name+"/"+c.name, p.data
			cs = append(cs, c)
		}
		add(nfCase{name: "no context"})
		for _, h := range hooks {
			for _, pf := range pfs {
				add(nfCase{name: fmt.Sprintf("hook %d pf %d", h, pf), ctx: nfState(h, pf)})
			}
		}
		for _, pf := range []byte{2, 10} {
			short := nfState(0, pf)[:2]
			long := append(nfState(1, pf), make([]byte, 8)...)
			tail := append(nfState(1, pf), 0, 0, 1)
			in := nfState(0, pf)
			in[8] = 1
			okfn := nfState(4, pf)
			okfn[47] = 0x80
			pad := nfState(2, pf)
			pad[5] = 7
			for _, c := range []nfCase{
				{name: fmt.Sprintf("pf %d short context", pf), ctx: short},
				{name: fmt.Sprintf("pf %d long context", pf), ctx: long},
				{name: fmt.Sprintf("pf %d long context tail", pf), ctx: tail},
				{name: fmt.Sprintf("pf %d in set", pf), ctx: in},
				{name: fmt.Sprintf("pf %d okfn set", pf), ctx: okfn},
				{name: fmt.Sprintf("pf %d padding", pf), ctx: pad},
				{name: fmt.Sprintf("pf %d context out", pf), ctx: nfState(3, pf), ctxOut: true},
				{name: fmt.Sprintf("pf %d repeat", pf), ctx: nfState(1, pf), repeat: 5},
			} {
				add(c)
			}
		}
		add(nfCase{name: "context out only", ctxOut: true})
		add(nfCase{name: "flags", flags: 1})
		add(nfCase{name: "cpu", cpu: 1})
		add(nfCase{name: "batch", batch: 1})
	}
	return cs
}

// nfRunVM runs a netfilter case on bpfvm.
func nfRunVM(t *testing.T, c *bpfvm.Collection, nc nfCase) nfOut {
	t.Helper()
	m := c.Maps["seen"]
	for i := range uint32(nfSeen) {
		if err := m.Update(i, uint64(0), bpfvm.UpdateAny); err != nil {
			t.Fatal(err)
		}
	}
	opts := &bpfvm.RunOptions{Data: nc.data, Flags: nc.flags, CPU: nc.cpu, BatchSize: nc.batch, Repeat: nc.repeat}
	if nc.ctx != nil {
		opts.Context = nc.ctx
	}
	if nc.ctxOut {
		opts.ContextOut = make([]byte, 48)
	}
	ret, err := c.Programs["nf_report"].Run(opts)
	out := nfOut{errno: runErrno(err), ret: ret}
	if out.errno == ^syscall.Errno(0) {
		t.Fatalf("%s: %v", nc.name, err)
	}
	for i := range uint32(nfSeen) {
		if err := m.Lookup(i, &out.seen[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestNetfilterRun runs netfilter.o's nf_report on bpfvm over the table
// and checks what the kernel's test run gives that the table's
// expectations pin (the kernel comparison is nfKernel's).
func TestNetfilterRun(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		c := loadVM(t, noVerify, "testdata/netfilter.o", bpfvm.CollectionOptions{})
		for _, tc := range []struct {
			nc    nfCase
			errno syscall.Errno
			ret   uint32
			seen  map[int]uint64
		}{
			{nc: nfCase{name: "raw ipv4", data: nfPackets()[3].data}, ret: 1,
				seen: map[int]uint64{0: 3, 1: 2, 2: 0xffff, 3: 0xffff, 5: 20, 7: 8, 9: 64, 10: 0, 11: 0xffff, 12: 0xffff, 13: 84, 14: 192, 15: 0xffff, 16: 768}},
			{nc: nfCase{name: "eth ipv4 pre-routing", data: nfPackets()[8].data, ctx: nfState(0, 2)}, ret: 1,
				seen: map[int]uint64{0: 0, 1: 2, 2: 0xffff, 3: 1, 5: 20, 9: 78, 10: 78, 11: 64, 15: 1, 20: 1 << 16, 21: 9, 22: 772, 23: 0x6f6c}},
			{nc: nfCase{name: "odd ttl", data: nfPackets()[9].data, ctx: nfState(1, 2)}, ret: 0},
			{nc: nfCase{name: "ipv6 at an ipv4 hook", data: nfPackets()[14].data, ctx: nfState(0, 2)}, errno: syscall.EINVAL},
			{nc: nfCase{name: "arp", data: nfPackets()[16].data, ctx: nfState(0, 2)}, errno: syscall.EPROTO},
			{nc: nfCase{name: "tail", data: nfPackets()[3].data, ctx: append(nfState(3, 2), 1)}, errno: syscall.E2BIG},
		} {
			got := nfRunVM(t, c, tc.nc)
			if got.errno != tc.errno || got.errno == 0 && got.ret != tc.ret {
				t.Errorf("%s: errno %d ret %d, want errno %d ret %d", tc.nc.name, got.errno, got.ret, tc.errno, tc.ret)
			}
			for i, v := range tc.seen {
				if got.seen[i] != v {
					t.Errorf("%s: slot %d is %#x, want %#x", tc.nc.name, i, got.seen[i], v)
				}
			}
		}
	})
}
