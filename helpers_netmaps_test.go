package bpfvm_test

import (
	"encoding/binary"
	"errors"
	"runtime"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm"
)

// Runs of the cgroup and socket maps' helpers (testdata/helpers_netmaps.c),
// compared with the kernel's BPF_PROG_TEST_RUN where it can run the
// program type (cgroup_skb, tc), and checked against the semantics bpfvm
// implements from the kernel's source where it cannot (sk_skb, sk_msg,
// sock_ops, sk_reuseport).

const netmapsObj = "testdata/helpers_netmaps.o"

// loopbackPacket is an Ethernet frame with a minimal IPv4 header from and
// to 127.0.0.1.
func loopbackPacket() []byte {
	p := make([]byte, 64)
	binary.BigEndian.PutUint16(p[12:], 0x0800)
	p[14] = 0x45
	binary.BigEndian.PutUint16(p[16:], 50)
	p[22], p[23] = 64, 17
	copy(p[26:], []byte{127, 0, 0, 1, 127, 0, 0, 1})
	return p
}

// runWith runs a bpfvm program with a context, a world and a repeat count.
func runWith(t *testing.T, p *bpfvm.Program, ctx []byte, net *bpfvm.Net, repeat uint32) bpfvm.Result {
	t.Helper()
	res, err := p.Execute(&bpfvm.RunOptions{Data: loopbackPacket(), Context: ctx, Net: net, Repeat: repeat})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// kernelRunRepeat is a kernel test run with a repeat count; ok is false
// without an oracle.
func kernelRunRepeat(t *testing.T, kern *ebpf.Collection, name string, ctx []byte, repeat uint32) (uint32, bool) {
	t.Helper()
	if kern == nil {
		return 0, false
	}
	ret, err := kern.Programs[name].Run(&ebpf.RunOptions{Data: loopbackPacket(), Context: ctx, Repeat: repeat})
	if err != nil {
		t.Fatalf("kernel run %s: %v", name, err)
	}
	return ret, true
}

// outValue reads out[0] of a collection.
func outValue(t *testing.T, m interface{ Lookup(key, value any) error }) uint64 {
	t.Helper()
	var v uint64
	if err := m.Lookup(uint32(0), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestHelperCgroupStorage(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		vm, kern := loadHelpers(t, noVerify, netmapsObj, bpfvm.CollectionOptions{})
		p := vm.Programs["storage_count"]
		// One test run of three repeats: a storage that counts 3, shared
		// and per-CPU (the repeats run on one CPU).
		runWith(t, p, nil, nil, 3)
		want := uint64(3 | 3<<32)
		if got := outValue(t, vm.Maps["out"]); got != want {
			t.Errorf("bpfvm counted %#x, want %#x", got, want)
		}
		if _, ok := kernelRunRepeat(t, kern, "storage_count", nil, 3); ok {
			if got := outValue(t, kern.Maps["out"]); got != want {
				t.Errorf("kernel counted %#x, want %#x", got, want)
			}
		}
		// bpfvm keeps the storage of the program's attachment (the root
		// cgroup, egress) in the map, where Go code sees it; the kernel's
		// test run gives each run a fresh one.
		// (The per-CPU count, in the high half, is the count of the CPU
		// the run took.)
		runWith(t, p, nil, nil, 1)
		if got := outValue(t, vm.Maps["out"]); uint32(got) != 4 {
			t.Errorf("second run counted %d, want 4", uint32(got))
		}
		key := make([]byte, 16)
		binary.NativeEndian.PutUint64(key, 1)
		binary.NativeEndian.PutUint32(key[8:], uint32(ebpf.AttachCGroupInetEgress))
		var v uint64
		if err := vm.Maps["cgstore"].Lookup(key, &v); err != nil || v != 4 {
			t.Errorf("Go-side lookup of the storage: %d, %v", v, err)
		}
		// The per-CPU storage: one value per CPU, the runs' counts.
		var per []uint64
		if err := vm.Maps["pcgstore"].Lookup(key, &per); err != nil {
			t.Fatal(err)
		}
		var sum uint64
		for _, c := range per {
			sum += c
		}
		if sum != 4 {
			t.Errorf("per-CPU storage %v, want 4 runs in all", per)
		}
		if err := vm.Maps["cgstore"].Update(key, uint64(10), bpfvm.UpdateExist); err != nil {
			t.Fatal(err)
		}
		runWith(t, p, nil, nil, 1)
		if got := outValue(t, vm.Maps["out"]); uint32(got) != 11 {
			t.Errorf("after a Go-side update the run counted %d, want 11", uint32(got))
		}
		// Another cgroup has a storage of its own.
		runWith(t, p, nil, &bpfvm.Net{AttachCgroup: 1234}, 1)
		if got := outValue(t, vm.Maps["out"]); got != 1|1<<32 {
			t.Errorf("another cgroup counted %#x, want 1 and 1 (a storage of its own)", got)
		}
		other := append([]byte(nil), key...)
		binary.NativeEndian.PutUint64(other, 99)
		if err := vm.Maps["cgstore"].Update(other, uint64(1), bpfvm.UpdateAny); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("update of a storage no run made: %v", err)
		}
		if err := vm.Maps["cgstore"].Delete(key); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("delete of a storage: %v", err)
		}
	})
}

func TestHelperSkStorage(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		vm, kern := loadHelpers(t, noVerify, netmapsObj, bpfvm.CollectionOptions{})
		p := vm.Programs["sk_storage"]
		// Each test run has a socket of its own, in bpfvm as in the
		// kernel.
		for _, tt := range []struct {
			name   string
			cb     []uint32
			repeat uint32
			want   uint64
		}{
			{"get", []uint32{0}, 1, ^uint64(0)},
			{"create", []uint32{1}, 1, 1},
			{"create again", []uint32{1}, 1, 1},
			{"create, repeated", []uint32{1}, 3, 3},
			{"bad flags", []uint32{2}, 1, ^uint64(0)},
			{"delete", []uint32{0, 1}, 1, uint64(errno(2)) | 0xffffffff00000000},
		} {
			ctx := skbCB(tt.cb...)
			runWith(t, p, ctx, nil, tt.repeat)
			if got := outValue(t, vm.Maps["out"]); got != tt.want {
				t.Errorf("%s: bpfvm %#x, want %#x", tt.name, got, tt.want)
			}
			if _, ok := kernelRunRepeat(t, kern, "sk_storage", ctx, tt.repeat); ok {
				if got := outValue(t, kern.Maps["out"]); got != tt.want {
					t.Errorf("%s: kernel %#x, want %#x", tt.name, got, tt.want)
				}
			}
		}
		// A socket of the host's world keeps its storage across runs, and
		// Go code reaches it by cookie.
		net := &bpfvm.Net{Socket: &bpfvm.Socket{Cookie: 77}}
		runWith(t, p, skbCB(1), net, 1)
		runWith(t, p, skbCB(1), net, 1)
		m := vm.Maps["skstore"]
		var v uint64
		if err := m.LookupSocket(77, &v); err != nil || v != 2 {
			t.Errorf("LookupSocket: %d, %v", v, err)
		}
		if err := m.UpdateSocket(77, uint64(40), bpfvm.UpdateExist); err != nil {
			t.Fatal(err)
		}
		runWith(t, p, skbCB(0), net, 1)
		if got := outValue(t, vm.Maps["out"]); got != 41 {
			t.Errorf("after UpdateSocket: %d, want 41", got)
		}
		runWith(t, p, skbCB(0, 1), net, 1)
		if got := outValue(t, vm.Maps["out"]); got != 0 {
			t.Errorf("delete: %d, want 0", got)
		}
		if err := m.LookupSocket(77, &v); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("LookupSocket after the delete: %v", err)
		}
		if err := m.Lookup(int32(3), &v); !errors.Is(err, syscall.EBADF) {
			t.Errorf("Lookup by descriptor: %v", err)
		}
		// cgroup_sock's context is its socket (bpfvm only: the kernel
		// cannot test-run cgroup_sock).
		sock := vm.Programs["sock_storage"]
		for range 2 {
			if _, err := sock.Execute(&bpfvm.RunOptions{Net: net}); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.LookupSocket(77, &v); err != nil || v != 2 {
			t.Errorf("cgroup_sock's storage: %d, %v", v, err)
		}
	})
}

func TestHelperPercpuElem(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		ncpu, err := ebpf.PossibleCPU()
		if err != nil {
			// No kernel to compare with.
			ncpu = runtime.NumCPU()
		}
		vm, kern := loadHelpers(t, noVerify, netmapsObj, bpfvm.CollectionOptions{NumCPU: ncpu})
		values := make([]uint64, ncpu)
		for c := range values {
			values[c] = uint64(100 + c)
		}
		if err := vm.Maps["pcpu"].Put(uint32(0), values); err != nil {
			t.Fatal(err)
		}
		if kern != nil {
			if err := kern.Maps["pcpu"].Put(uint32(0), values); err != nil {
				t.Fatal(err)
			}
		}
		for _, cpu := range []uint32{0, uint32(ncpu - 1), uint32(ncpu), 1 << 20, ^uint32(0)} {
			want := ^uint32(0)
			if int(cpu) < ncpu {
				want = 100 + cpu
			}
			ctx := skbCB(cpu)
			got := uint32(runWith(t, vm.Programs["percpu_elem"], ctx, nil, 1).R0)
			if got != want {
				t.Errorf("cpu %d: %d, want %d", cpu, int32(got), int32(want))
			}
			if k, ok := kernelRunRepeat(t, kern, "percpu_elem", ctx, 1); ok && k != got {
				t.Errorf("cpu %d: kernel %d, bpfvm %d", cpu, int32(k), int32(got))
			}
		}
	})
}

func TestHelperSockMapUpdate(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		vm, kern := loadHelpers(t, noVerify, netmapsObj, bpfvm.CollectionOptions{})
		p := vm.Programs["sk_update"]
		// The kernel's test run's socket is none a sockmap takes
		// (-EOPNOTSUPP, before the flags and the index); deletes of
		// empty slots and out of range are -EINVAL.
		for _, cb := range [][]uint32{{0, 0}, {9, 0}, {0, 5}, {0, 0, 1}, {9, 0, 1}} {
			ctx := skbCB(cb...)
			got := uint32(runWith(t, p, ctx, nil, 1).R0)
			want := errno(95)
			if cb2 := append(cb, 0, 0); cb2[2] != 0 {
				want = errno(22)
			}
			if got != want {
				t.Errorf("%v: %d, want %d", cb, int32(got), int32(want))
			}
			if k, ok := kernelRunRepeat(t, kern, "sk_update", ctx, 1); ok && k != got {
				t.Errorf("%v: kernel %d, bpfvm %d", cb, int32(k), int32(got))
			}
		}
		// A socket of the host's world goes in, with the update flags'
		// errors.
		net := &bpfvm.Net{Socket: &bpfvm.Socket{Cookie: 321}}
		for _, tt := range []struct {
			cb   []uint32
			want int32
		}{
			{[]uint32{1, 0}, 0}, {[]uint32{1, 1}, -17}, {[]uint32{2, 2}, -2},
			{[]uint32{9, 0}, -7}, {[]uint32{1, 5}, -22}, {[]uint32{1, 0, 1}, 0}, {[]uint32{1, 0, 1}, -22},
		} {
			if got := int32(runWith(t, p, skbCB(tt.cb...), net, 1).R0); got != tt.want {
				t.Errorf("%v: %d, want %d", tt.cb, got, tt.want)
			}
		}
	})
}

// TestHelperSocketMaps runs the sockmap helpers of the types the kernel
// cannot test-run: what they do is net/core/sock_map.c's and filter.c's,
// on sockets that are cookies of the host's world.
func TestHelperSocketMaps(t *testing.T) {
	modes(t, func(t *testing.T, noVerify bool) {
		vm := loadVM(t, noVerify, netmapsObj, bpfvm.CollectionOptions{})
		socks, socksh, reuse := vm.Maps["socks"], vm.Maps["socksh"], vm.Maps["reuse"]
		for _, put := range []struct {
			m      *bpfvm.Map
			key    uint32
			cookie uint64
		}{{socks, 0, 500}, {socksh, 1, 501}, {reuse, 1, 502}} {
			if err := put.m.Put(put.key, put.cookie); err != nil {
				t.Fatal(err)
			}
		}
		exec := func(name string, data, ctx []byte, net *bpfvm.Net) bpfvm.Result {
			t.Helper()
			res, err := vm.Programs[name].Execute(&bpfvm.RunOptions{Data: data, Context: ctx, Net: net})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return res
		}
		redirect := func(name string, res bpfvm.Result, ret uint64, m *bpfvm.Map, key, flags, socket uint64) {
			t.Helper()
			rd := res.Redirect
			if res.R0 != ret {
				t.Errorf("%s returned %d, want %d", name, res.R0, ret)
			}
			if socket == 0 {
				if rd.Valid {
					t.Errorf("%s redirected: %+v", name, rd)
				}
				return
			}
			if !rd.Valid || rd.Map != m || rd.Key != key || rd.Flags != flags || rd.Socket != socket {
				t.Errorf("%s redirect %+v, want map %s key %d flags %d socket %d", name, rd, m.Name(), key, flags, socket)
			}
		}
		pkt := make([]byte, 16)
		redirect("sk_redirect", exec("sk_redirect", pkt, nil, nil), 1, socks, 0, 0, 500)
		redirect("sk_redirect ingress", exec("sk_redirect", with(pkt, 0, 1), nil, nil), 1, socks, 0, 1, 500)
		redirect("sk_redirect bad flags", exec("sk_redirect", with(pkt, 0, 2), nil, nil), 0, nil, 0, 0, 0)
		redirect("sk_redirect_hash", exec("sk_redirect_hash", pkt, nil, nil), 1, socksh, 0, 1, 501)
		redirect("msg_redirect to an empty slot", exec("msg_redirect", pkt, nil, nil), 0, nil, 0, 0, 0)
		redirect("msg_redirect_hash", exec("msg_redirect_hash", pkt, nil, nil), 1, socksh, 0, 0, 501)
		redirect("select", exec("select", pkt, nil, nil), 1, reuse, 1, 0, 502)
		if err := reuse.Delete(uint32(1)); err != nil {
			t.Fatal(err)
		}
		redirect("select from an empty slot", exec("select", pkt, nil, nil), 0, nil, 0, 0, 0)

		// sock_ops: the socket goes in socks[3] in an established
		// callback (op 4), BPF_NOEXIST the second time; not in others.
		ops := func(op uint32) []byte {
			ctx := make([]byte, 224)
			binary.NativeEndian.PutUint32(ctx, op)
			return ctx
		}
		net := &bpfvm.Net{Socket: &bpfvm.Socket{Cookie: 900}}
		reply := func(op uint32) int32 {
			t.Helper()
			out := make([]byte, 224)
			if _, err := vm.Programs["sock_update"].Execute(&bpfvm.RunOptions{Context: ops(op), ContextOut: out, Net: net}); err != nil {
				t.Fatal(err)
			}
			return int32(binary.NativeEndian.Uint32(out[4:]))
		}
		if r := reply(1); r != -95 {
			t.Errorf("sock_map_update in callback 1: %d, want -EOPNOTSUPP", r)
		}
		if r := reply(4); r != 0 {
			t.Errorf("sock_map_update: %d", r)
		}
		if r := reply(5); r != -17 {
			t.Errorf("sock_map_update again with BPF_NOEXIST: %d, want -EEXIST", r)
		}
		var c uint64
		if err := socks.Lookup(uint32(3), &c); err != nil || c != 900 {
			t.Errorf("socks[3]: %d, %v", c, err)
		}
		if err := socksh.Lookup(uint32(3), &c); err != nil || c != 900 {
			t.Errorf("socksh[3]: %d, %v", c, err)
		}
	})
}

// TestNetMapsNoBatch checks that the cgroup and socket types take no batch
// operations, as the kernel's (which has none for them).
func TestNetMapsNoBatch(t *testing.T) {
	u8 := &btf.Int{Name: "unsigned char", Size: 1}
	value := &btf.Array{Type: u8, Index: &btf.Int{Name: "unsigned int", Size: 4}, Nelems: 8}
	compared := 0
	for _, spec := range []*ebpf.MapSpec{
		{Name: "cga", Type: ebpf.CGroupArray, KeySize: 4, ValueSize: 4, MaxEntries: 4},
		{Name: "cgs", Type: ebpf.CGroupStorage, KeySize: 16, ValueSize: 8},
		{Name: "pcgs", Type: ebpf.PerCPUCGroupStorage, KeySize: 16, ValueSize: 8},
		{Name: "sockmap", Type: ebpf.SockMap, KeySize: 4, ValueSize: 8, MaxEntries: 4},
		{Name: "sockhash", Type: ebpf.SockHash, KeySize: 4, ValueSize: 8, MaxEntries: 4},
		{Name: "reuse", Type: ebpf.ReusePortSockArray, KeySize: 4, ValueSize: 8, MaxEntries: 4},
		{Name: "sks", Type: ebpf.SkStorage, KeySize: 4, ValueSize: 8, Flags: 1, Key: &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}, Value: value},
	} {
		var keys any = make([]uint32, 4)
		if spec.KeySize == 16 {
			keys = make([][16]byte, 4)
		}
		values := func(ncpu int) any {
			switch {
			case spec.Type == ebpf.PerCPUCGroupStorage:
				return make([]uint64, 4*ncpu)
			case spec.ValueSize == 4:
				return make([]uint32, 4)
			}
			return make([]uint64, 4)
		}
		check := func(who string, lookup, update, del error) {
			t.Helper()
			for op, err := range map[string]error{"lookup": lookup, "update": update, "delete": del} {
				if !errors.Is(err, ebpf.ErrNotSupported) {
					t.Errorf("%s: %s batch %s: %v, want not supported", spec.Type, who, op, err)
				}
			}
		}
		ours := newOurMap(t, spec, 2)
		_, lerr := ours.BatchLookup(new(bpfvm.MapBatchCursor), keys, values(2), nil)
		_, uerr := ours.BatchUpdate(keys, values(2), nil)
		_, derr := ours.BatchDelete(keys, nil)
		check("bpfvm", lerr, uerr, derr)
		if k := kernelMap(t, spec); k != nil {
			ncpu, err := ebpf.PossibleCPU()
			if err != nil {
				t.Fatal(err)
			}
			_, lerr := k.BatchLookup(new(ebpf.MapBatchCursor), keys, values(ncpu), nil)
			_, uerr := k.BatchUpdate(keys, values(ncpu), nil)
			_, derr := k.BatchDelete(keys, nil)
			check("kernel", lerr, uerr, derr)
			compared += 3
		}
	}
	t.Logf("%d batch operations compared with the kernel", compared)
}
