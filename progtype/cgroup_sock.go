package progtype

import (
	"encoding/binary"
	"slices"

	"github.com/cilium/ebpf"
)

// cgroupSock returns BPF_PROG_TYPE_CGROUP_SOCK for attach type a, with
// struct bpf_sock (sock_filter_is_valid_access): the fields u32, family,
// type, protocol, src_port, state and rx_queue_mapping narrow at their
// offset, the addresses narrow anywhere in them, dst_port a __be16 read
// whole as a u32 or in halves and bytes of its two bytes; bound_dev_if,
// mark and priority readable and writable only by socket creation and
// release programs, the source address and port readable only by the
// post-bind programs of their family. Programs return 0 or 1. The kernel
// has no test run for it; bpfvm's runs take every field from the context
// input and return the writable ones in the context output.
func cgroupSock(a ebpf.AttachType) *Type {
	create := a == ebpf.AttachCGroupInetSockCreate || a == ebpf.AttachCgroupInetSockRelease
	post4, post6 := a == ebpf.AttachCGroupInet4PostBind, a == ebpf.AttachCGroupInet6PostBind
	// The kernel stores family, type and protocol in u16s, state in a
	// byte, the ports in u16s (Backing).
	start := Field{Read: true, Input: true, Narrow: true, NarrowStart: true, Backing: 2}
	addr := Field{Read: true, Input: true, Narrow: true}
	rw := Field{Read: create, Write: create, Input: true, Output: create}
	var f []Field
	f = append(f, u32Fields(0, "bound_dev_if", rw)...)
	f = append(f, u32Fields(4, "family type protocol", start)...)
	f = append(f, u32Fields(16, "mark priority", rw)...)
	f = append(f, u32Fields(24, "src_ip4", Field{Read: post4, Input: true, Narrow: true})...)
	f = append(f, u32Fields(28, "src_ip6[4]", Field{Read: post6, Input: true, Narrow: true})...)
	f = append(f, u32Fields(44, "src_port", Field{Read: post4 || post6, Input: true, Narrow: true, NarrowStart: true, Backing: 2})...)
	f = append(f, Field{Name: "dst_port", Offset: 48, Size: 4, Read: true, Input: true, Narrow: true, NarrowSpan: 2, Backing: 2})
	f = append(f, u32Fields(52, "dst_ip4 dst_ip6[4]", addr)...)
	state := start
	state.Backing = 1
	f = append(f, u32Fields(72, "state", state)...)
	f = append(f, u32Fields(sockRxQueue, "rx_queue_mapping", rxQueueMapping(start))...)
	return &Type{
		Name:         "cgroup_sock",
		ContextSize:  80,
		Fields:       f,
		ContextNames: []string{"bpf_sock", "sock"},
		Helpers:      Helpers(cgroupCommon(a), cgroupCurrentHelpers, cgroupSockHelpers, baseHelpers),
		Attach:       a,
		CheckReturn:  true,
		ReturnMax:    1,
	}
}

// cgroupSockHelpers is sock_filter_func_proto's own cases, before
// bpf_base_func_proto.
var cgroupSockHelpers = names(CapNone, `get_socket_cookie get_netns_cookie
	perf_event_output sk_storage_get@cg_sock ktime_get_coarse_ns`)

// cgroupSockAttach are cgroup_sock's attach types (bpf_prog_load_check_attach).
var cgroupSockAttach = []ebpf.AttachType{
	ebpf.AttachCGroupInetSockCreate, ebpf.AttachCgroupInetSockRelease,
	ebpf.AttachCGroupInet4PostBind, ebpf.AttachCGroupInet6PostBind,
}

// Attach types of cgroup_sock_addr by what they see.
var (
	sockAddr4 = []ebpf.AttachType{ebpf.AttachCGroupInet4Bind, ebpf.AttachCGroupInet4Connect,
		ebpf.AttachCgroupInet4GetPeername, ebpf.AttachCgroupInet4GetSockname,
		ebpf.AttachCGroupUDP4Sendmsg, ebpf.AttachCGroupUDP4Recvmsg}
	sockAddr6 = []ebpf.AttachType{ebpf.AttachCGroupInet6Bind, ebpf.AttachCGroupInet6Connect,
		ebpf.AttachCgroupInet6GetPeername, ebpf.AttachCgroupInet6GetSockname,
		ebpf.AttachCGroupUDP6Sendmsg, ebpf.AttachCGroupUDP6Recvmsg}
	sockAddrUnix = []ebpf.AttachType{ebpf.AttachCgroupUnixConnect, ebpf.AttachCgroupUnixGetpeername,
		ebpf.AttachCgroupUnixGetsockname, ebpf.AttachCgroupUnixSendmsg, ebpf.AttachCgroupUnixRecvmsg}
	// sockAddrOne are the hooks whose programs must return 1: the address
	// is the kernel's to give, the program may only rewrite it.
	sockAddrOne = []ebpf.AttachType{ebpf.AttachCGroupUDP4Recvmsg, ebpf.AttachCGroupUDP6Recvmsg,
		ebpf.AttachCgroupUnixRecvmsg, ebpf.AttachCgroupInet4GetPeername, ebpf.AttachCgroupInet6GetPeername,
		ebpf.AttachCgroupUnixGetpeername, ebpf.AttachCgroupInet4GetSockname,
		ebpf.AttachCgroupInet6GetSockname, ebpf.AttachCgroupUnixGetsockname}
)

// cgroupSockAddr returns BPF_PROG_TYPE_CGROUP_SOCK_ADDR for attach type a,
// with struct bpf_sock_addr (sock_addr_is_valid_access): the user address
// of the hook's family (IPv4 hooks user_ip4, IPv6 ones user_ip6, sendmsg
// hooks the message's source too) and user_port read narrow and written
// whole, the IPv6 addresses in 8-byte halves as well; user_family, family,
// type and protocol read whole; sk is the socket (addrSocket). Programs
// return 0 or 1, the bind
// hooks up to 3, recvmsg, getpeername and getsockname ones exactly 1
// (check_return_code). The kernel has no test run for it; bpfvm's runs
// take every scalar field from the context input and return the writable
// ones in the context output.
func cgroupSockAddr(a ebpf.AttachType) *Type {
	v4, v6 := slices.Contains(sockAddr4, a), slices.Contains(sockAddr6, a)
	addr := func(ok, wide bool) Field {
		return Field{Read: ok, Write: ok, Narrow: true, Wide: wide, Input: true, Output: ok}
	}
	ro := Field{Read: true, Input: true}
	var f []Field
	f = append(f, u32Fields(0, "user_family", ro)...)
	f = append(f, u32Fields(4, "user_ip4", addr(v4, false))...)
	f = append(f, u32Fields(8, "user_ip6[4]", addr(v6, true))...)
	// The port is a u16 behind (sin_port): stores keep two bytes, a u16
	// load of the field's high half reads it (Backing).
	port := addr(true, false)
	port.Backing = 2
	f = append(f, u32Fields(24, "user_port", port)...)
	f = append(f, u32Fields(28, "family type protocol", ro)...)
	f = append(f, u32Fields(40, "msg_src_ip4", addr(a == ebpf.AttachCGroupUDP4Sendmsg, false))...)
	f = append(f, u32Fields(44, "msg_src_ip6[4]", addr(a == ebpf.AttachCGroupUDP6Sendmsg, true))...)
	f = append(f, Field{Name: "sk", Offset: 64, Size: 8, Read: true, Kind: Socket})
	t := &Type{
		Name:         "cgroup_sock_addr",
		ContextSize:  72,
		Fields:       f,
		ContextNames: []string{"bpf_sock_addr", "bpf_sock_addr_kern"},
		Socket:       addrSocket,
		Helpers:      Helpers(cgroupCommon(a), cgroupCurrentHelpers, sockAddrHelpers(a), sockBaseHelpers),
		Attach:       a,
		CheckReturn:  true,
		ReturnMax:    1,
	}
	switch {
	case slices.Contains(sockAddrOne, a):
		t.ReturnMin = 1
	case a == ebpf.AttachCGroupInet4Bind || a == ebpf.AttachCGroupInet6Bind:
		t.ReturnMax = 3
	}
	return t
}

// sockAddrHelpers is sock_addr_func_proto's own cases (CONFIG_INET ones
// included), before bpf_sk_base_func_proto: bind only for connect hooks.
func sockAddrHelpers(a ebpf.AttachType) HelperSet {
	s := names(CapNone, `get_socket_cookie get_netns_cookie perf_event_output
		sk_lookup_tcp sk_lookup_udp sk_release skc_lookup_tcp
		sk_storage_get sk_storage_delete setsockopt getsockopt`)
	if a == ebpf.AttachCGroupInet4Connect || a == ebpf.AttachCGroupInet6Connect {
		s = Helpers(s, names(CapNone, "bind"))
	}
	return s
}

// The cgroup_sock and cgroup_sock_addr types by attach type.
var (
	cgroupSockTypes     = typesBy(cgroupSockAttach, cgroupSock)
	cgroupSockAddrTypes = typesBy(slices.Concat(sockAddr4, sockAddr6, sockAddrUnix), cgroupSockAddr)
)

// typesBy makes a type for each attach type.
func typesBy(as []ebpf.AttachType, mk func(ebpf.AttachType) *Type) map[ebpf.AttachType]*Type {
	m := make(map[ebpf.AttachType]*Type, len(as))
	for _, a := range as {
		m[a] = mk(a)
	}
	return m
}

// addrSocket is a cgroup_sock_addr run's socket: the one whose family,
// type and protocol the context shows (the kernel reads those fields from
// it), otherwise fresh: unbound, TCP_CLOSE, no receive queue.
func addrSocket(sk, ctx, frame []byte) bool {
	le := binary.LittleEndian
	le.PutUint32(sk[sockFamily:], le.Uint32(ctx[sockAddrFamily:])&0xffff)
	le.PutUint32(sk[sockType:], le.Uint32(ctx[sockAddrType:])&0xffff)
	le.PutUint32(sk[sockProtocol:], le.Uint32(ctx[sockAddrProtocol:])&0xffff)
	le.PutUint32(sk[sockState:], tcpClose)
	le.PutUint16(sk[sockRxQueue:], noQueueIndex)
	return true
}

// struct bpf_sock_addr offsets.
const (
	sockAddrFamily   = 28
	sockAddrType     = 32
	sockAddrProtocol = 36
)
