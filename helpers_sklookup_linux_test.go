package bpfvm_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/bpfvm/bpfvm"
)

// skAssignReq is testdata/sk_lookup_assign.c's struct req.
type skAssignReq struct {
	Key1, Two uint32
	Flags1    uint64
	Key2, Pad uint32
	Flags2    uint64
}

// skAssignRes is its struct res.
type skAssignRes struct {
	Err1, Err2                       int64
	Selected, Family, Protocol, Port uint32
}

// TestSKLookupAssignKernel compares sk_lookup's bpf_sk_assign with the
// kernel's test run: its errors, its flags (REPLACE, NO_REUSEPORT), what
// ctx->sk shows after it and the selected socket's cookie in the context
// output (bpfvm's Result.Selected too), on this machine's sockets in a
// sockmap. Both engines, verified and checked.
func TestSKLookupAssignKernel(t *testing.T) {
	socks := sockmapSockets(t)
	listen := func(name, network, addr string, reuse bool) {
		lc := net.ListenConfig{}
		lc.SetMultipathTCP(false)
		if reuse {
			lc.Control = func(_, _ string, c syscall.RawConn) error {
				var serr error
				if err := c.Control(func(fd uintptr) {
					serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
				}); err != nil {
					return err
				}
				return serr
			}
		}
		l, err := lc.Listen(context.Background(), network, addr)
		if err != nil {
			t.Skipf("listen %s %s: %v", network, addr, err)
		}
		t.Cleanup(func() { l.Close() })
		s := sockmapSocket{conn: l.(*net.TCPListener), world: bpfvm.Socket{Protocol: 6, Local: addrPort(l.Addr()), Reuseport: reuse}}
		s.withFD(t, func(fd int) {
			c, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_COOKIE)
			if err != nil {
				t.Skipf("SO_COOKIE: %v", err)
			}
			s.world.Cookie = c
		})
		socks[name] = s
	}
	listen("dual", "tcp", "[::]:0", false)
	listen("reuse", "tcp4", "127.0.0.1:0", true)
	slots := map[uint32]string{0: "l4", 1: "client", 2: "udp", 3: "l6", 4: "dual", 5: "reuse", 7: "server"}
	const empty = 6
	var world bpfvm.Net
	for _, name := range []string{"l4", "client", "udp", "l6", "dual", "reuse", "server"} {
		world.Sockets = append(world.Sockets, socks[name].world)
	}
	const (
		replace     = 1
		noReuseport = 2
	)
	v4tcp := skLookupCtx(2, 6, 0x0100007f, 0x0100007f, [4]uint32{}, [4]uint32{}, 40000, 80)
	v4udp := skLookupCtx(2, 17, 0x0100007f, 0x0100007f, [4]uint32{}, [4]uint32{}, 40000, 53)
	v6tcp := skLookupCtx(10, 6, 0, 0, [4]uint32{0, 0, 0, 0x01000000}, [4]uint32{0, 0, 0, 0x01000000}, 40000, 80)
	cases := []struct {
		name string
		ctx  []byte
		req  skAssignReq
	}{
		{"listener", v4tcp, skAssignReq{Key1: 0}},
		{"null", v4tcp, skAssignReq{Key1: empty}},
		{"unknown flag", v4tcp, skAssignReq{Key1: 0, Flags1: 4}},
		{"high flag", v4tcp, skAssignReq{Key1: 0, Flags1: 1 << 32}},
		{"unknown flag null", v4tcp, skAssignReq{Key1: empty, Flags1: 8}},
		{"both flags", v4tcp, skAssignReq{Key1: 0, Flags1: replace | noReuseport}},
		{"established client", v4tcp, skAssignReq{Key1: 1}},
		{"established server", v4tcp, skAssignReq{Key1: 7}},
		{"udp for tcp", v4tcp, skAssignReq{Key1: 2}},
		{"udp", v4udp, skAssignReq{Key1: 2}},
		{"tcp for udp", v4udp, skAssignReq{Key1: 0}},
		{"ipv4 socket for ipv6", v6tcp, skAssignReq{Key1: 0}},
		{"v6only for ipv4", v4tcp, skAssignReq{Key1: 3}},
		{"v6only for ipv6", v6tcp, skAssignReq{Key1: 3}},
		{"dual stack for ipv4", v4tcp, skAssignReq{Key1: 4}},
		{"dual stack for ipv6", v6tcp, skAssignReq{Key1: 4}},
		{"twice", v4tcp, skAssignReq{Key1: 0, Two: 1, Key2: 0}},
		{"other without replace", v4tcp, skAssignReq{Key1: 0, Two: 1, Key2: 4}},
		{"replace", v4tcp, skAssignReq{Key1: 0, Two: 1, Key2: 4, Flags2: replace}},
		{"replace with null", v4tcp, skAssignReq{Key1: 0, Two: 1, Key2: empty, Flags2: replace}},
		{"null then one", v4tcp, skAssignReq{Key1: empty, Two: 1, Key2: 0}},
		{"replace refused keeps", v4tcp, skAssignReq{Key1: 0, Two: 1, Key2: 2, Flags2: replace}},
		{"reuseport no_reuseport", v4tcp, skAssignReq{Key1: 5, Flags1: noReuseport}},
		{"reuseport", v4tcp, skAssignReq{Key1: 5}},
		{"reuseport replaced", v4tcp, skAssignReq{Key1: 5, Two: 1, Key2: 0, Flags2: replace}},
	}
	type result struct {
		err    bool
		ret    uint32
		res    skAssignRes
		cookie uint64
	}
	want := make([]*result, len(cases))
	if kern := kernelCollection(t, "testdata/sk_lookup_assign.o"); kern != nil {
		for k, name := range slots {
			socks[name].withFD(t, func(fd int) {
				if err := kern.Maps["socks"].Put(k, uint64(fd)); err != nil {
					t.Fatalf("kernel socks[%d] = %s: %v", k, name, err)
				}
			})
		}
		for i, c := range cases {
			if err := kern.Maps["req"].Put(uint32(0), c.req); err != nil {
				t.Fatal(err)
			}
			ctxOut := make([]byte, len(c.ctx))
			ret, err := kern.Programs["assign"].Run(&ebpf.RunOptions{Context: c.ctx, ContextOut: ctxOut})
			w := &result{err: err != nil, ret: ret}
			if err == nil {
				if err := kern.Maps["out"].Lookup(uint32(0), &w.res); err != nil {
					t.Fatal(err)
				}
				w.cookie = binary.LittleEndian.Uint64(ctxOut)
			}
			want[i] = w
		}
	}
	compared, agreed := 0, 0
	for name, e := range map[string]bpfvm.Engine{"interp": bpfvm.EngineInterpreter, "jit": bpfvm.EngineJIT} {
		t.Run(name, func(t *testing.T) {
			modes(t, func(t *testing.T, noVerify bool) {
				vm := loadVM(t, noVerify, "testdata/sk_lookup_assign.o", bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Engine: e}})
				for k, name := range slots {
					if err := vm.Maps["socks"].Put(k, socks[name].world.Cookie); err != nil {
						t.Fatal(err)
					}
				}
				for i, c := range cases {
					if err := vm.Maps["req"].Put(uint32(0), c.req); err != nil {
						t.Fatal(err)
					}
					ctxOut := make([]byte, len(c.ctx))
					res, err := vm.Programs["assign"].Execute(&bpfvm.RunOptions{Context: c.ctx, ContextOut: ctxOut, Net: &world})
					got := &result{err: err != nil}
					if err == nil {
						got.ret = uint32(res.R0)
						if err := vm.Maps["out"].Lookup(uint32(0), &got.res); err != nil {
							t.Fatal(err)
						}
						got.cookie = binary.LittleEndian.Uint64(ctxOut)
						if res.Selected != got.cookie {
							t.Errorf("%s: Result.Selected %d, context cookie %d", c.name, res.Selected, got.cookie)
						}
					} else if !errors.Is(err, ebpf.ErrNotSupported) {
						t.Errorf("%s: %v, want ErrNotSupported", c.name, err)
					}
					if want[i] == nil {
						continue
					}
					compared++
					if *got != *want[i] {
						t.Errorf("%s: bpfvm %+v, kernel %+v", c.name, *got, *want[i])
						continue
					}
					agreed++
				}
			})
		})
	}
	if compared > 0 {
		t.Logf("%d sk_lookup bpf_sk_assign runs compared with the kernel's, %d agree", compared, agreed)
	}
}
