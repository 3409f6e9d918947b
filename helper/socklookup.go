package helper

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"

	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// sockLookupHelpers find the host's sockets (runner.Net.Sockets) for tc,
// XDP, the socket and cgroup programs, and cast and release what they
// found (net/core/filter.c). A socket found is a reference the verifier
// makes the program release with bpf_sk_release; bpfvm's sockets are the
// world's, so releasing does nothing at run time.
var sockLookupHelpers = []Helper{
	{Proto: Proto{Name: "bpf_sk_lookup_tcp", Args: lookupArgs, Ret: RetSocketOrNull, Acquire: true, PktAccess: true}, Func: sockLookup(runner.ProtoTCP, true)},
	{Proto: Proto{Name: "bpf_sk_lookup_udp", Args: lookupArgs, Ret: RetSocketOrNull, Acquire: true, PktAccess: true}, Func: sockLookup(runner.ProtoUDP, true)},
	{Proto: Proto{Name: "bpf_skc_lookup_tcp", Args: lookupArgs, Ret: RetSockCommonOrNull, Acquire: true, PktAccess: true}, Func: sockLookup(runner.ProtoTCP, false)},
	{Proto: Proto{Name: "bpf_sk_release", Args: [5]ArgType{ArgSockRelease}}, Func: helperSkRelease},
	{Proto: Proto{Name: "bpf_sk_fullsock", Args: [5]ArgType{ArgSockCommon}, Ret: RetSocketOrNull, Cast: true}, Func: helperSkFullsock},
	{Proto: Proto{Name: "bpf_tcp_sock", Args: [5]ArgType{ArgSockCommon}, Ret: RetTCPSockOrNull, Cast: true}, Func: helperTCPSock},
	{Proto: Proto{Name: "bpf_get_listener_sock", Args: [5]ArgType{ArgSockCommon}, Ret: RetSocketOrNull}, Func: helperGetListenerSock},
	{Proto: Proto{Name: "bpf_get_netns_cookie", Args: [5]ArgType{ArgCtxOrNull}}, Func: helperGetNetnsCookie},
	{Proto: Proto{Name: "bpf_sk_assign", Args: [5]ArgType{ArgCtx, ArgSockBTF, ArgAnything}}, Func: skbOnly(helperSkAssign)},
	{Proto: Proto{Name: "bpf_sk_assign", Args: [5]ArgType{ArgCtx, ArgSocketOrNull, ArgAnything}}, Func: helperSKLookupAssign, Variant: "lookup"},
}

// lookupArgs are the socket lookups' arguments: the context, the tuple
// and its size (which may be 0, as the running kernel has it: the lookup
// then finds nothing), the namespace id and flags.
var lookupArgs = [5]ArgType{ArgCtx, ArgMem, ArgConstSizeOrZero, ArgAnything, ArgAnything}

// Sizes of struct bpf_sock_tuple's ipv4 and ipv6 members.
const (
	tuple4Size = 12
	tuple6Size = 36
)

// sockLookup returns bpf_sk_lookup_tcp, bpf_sk_lookup_udp or (full false)
// bpf_skc_lookup_tcp (ctx, tuple, len, netns_id, flags): the socket of
// protocol proto a packet of the tuple comes to, NULL for none. len picks
// the family (the size of the tuple's ipv4 or ipv6 member, NULL for
// another); flags must be 0; a netns_id negative as an s32 is the
// caller's namespace, one up to S32_MAX a peer's id (XDP's is a u32).
func sockLookup(proto uint8, full bool) vm.Helper {
	return func(e *vm.Env, _, r2, r3, r4, r5 uint64) (uint64, error) {
		r := runner.Of(e)
		var t runner.Tuple
		switch uint32(r3) {
		case tuple4Size, tuple6Size:
		default:
			return 0, nil
		}
		b, err := e.Bytes(r2, uint64(uint32(r3)), false)
		if err != nil {
			return 0, err
		}
		if r.Program().Type.Name == "xdp" {
			r4 = uint64(uint32(r4))
		}
		if r5 != 0 || int32(r4) >= 0 && r4 > math.MaxInt32 {
			return 0, nil
		}
		var netns uint64
		if int32(r4) >= 0 {
			c, ok := r.PeerNetns(int32(r4))
			if !ok {
				return 0, nil
			}
			netns = c
		}
		be := binary.BigEndian
		if len(b) == tuple4Size {
			t.Src = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[0:4])), be.Uint16(b[8:]))
			t.Dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), be.Uint16(b[10:]))
		} else {
			t.Src = netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[0:16])), be.Uint16(b[32:]))
			t.Dst = netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[16:32])), be.Uint16(b[34:]))
		}
		return r.Lookup(proto, t, netns, r.IngressIfindex(), full), nil
	}
}

// helperSkRelease is bpf_sk_release(sk): drops the reference a lookup
// took; 0.
func helperSkRelease(*vm.Env, uint64, uint64, uint64, uint64, uint64) (uint64, error) {
	return 0, nil
}

// helperSkFullsock is bpf_sk_fullsock(sk): sk itself, a full socket, or
// NULL for a time-wait or request socket.
func helperSkFullsock(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	ref, ok := runner.Of(e).Sock(r1)
	if !ok {
		return 0, nil
	}
	if st, _ := runner.SockState(ref); st == runner.TCPTimeWait || st == runner.TCPNewSynRecv {
		return 0, nil
	}
	return ref.Addr, nil
}

// helperTCPSock is bpf_tcp_sock(sk): the struct bpf_tcp_sock of a full TCP
// socket, NULL otherwise. (The run's own socket, the context's, is never
// TCP in bpfvm's test runs: it has none.)
func helperTCPSock(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	ref, ok := runner.Of(e).Sock(r1)
	if !ok || ref.Socket == nil {
		return 0, nil
	}
	if st, proto := runner.SockState(ref); st == runner.TCPTimeWait || st == runner.TCPNewSynRecv || proto != runner.ProtoTCP {
		return 0, nil
	}
	return ref.TCPSockAddr(), nil
}

// helperGetListenerSock is bpf_get_listener_sock(sk): sk if it is a TCP
// listener, the listener of a request socket, NULL otherwise.
func helperGetListenerSock(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	r := runner.Of(e)
	ref, ok := r.Sock(r1)
	if !ok {
		return 0, nil
	}
	st, proto := runner.SockState(ref)
	switch {
	case st == runner.TCPNewSynRecv && ref.Socket != nil:
		return r.Listener(ref.Socket), nil
	case st == runner.TCPListen && proto == runner.ProtoTCP:
		return ref.Addr, nil
	}
	return 0, nil
}

// helperSkAssign is tc's bpf_sk_assign(skb, sk, flags): the packet is to
// be delivered to sk, which only a packet at tc ingress may be. bpfvm's
// runs are the kernel's test run, whose packet is not at ingress:
// -EOPNOTSUPP, -EINVAL for flags. (sk_lookup programs' bpf_sk_assign is
// helperSKLookupAssign.)
func helperSkAssign(_ *vm.Env, _, _, r3, _, _ uint64) (uint64, error) {
	if r3 != 0 {
		return neg(einval), nil
	}
	return neg(eopnotsupp), nil
}

// helperGetNetnsCookie is bpf_get_netns_cookie(ctx): the cookie of the
// namespace of the context's socket, the initial namespace's for NULL
// or a packet without a socket.
func helperGetNetnsCookie(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	r := runner.Of(e)
	if r1 == 0 || r.Program().Type.Skb && r.Net().NoSocket {
		return runner.InitNetns, nil
	}
	return r.NetnsCookie(), nil
}

// bpf_sk_assign's flags in sk_lookup programs.
const (
	skLookupFReplace     = 1 << 0 // BPF_SK_LOOKUP_F_REPLACE
	skLookupFNoReuseport = 1 << 1 // BPF_SK_LOOKUP_F_NO_REUSEPORT
)

// Errors of sk_lookup's bpf_sk_assign.
const (
	eprototype      = 91
	esocktnosupport = 94
)

// struct bpf_sk_lookup's family and protocol (u16 in the kernel's
// context), struct bpf_sock's family, protocol and state.
const (
	skLookupFamily   = 8
	skLookupProtocol = 12
	bpfSockFamily    = 4
	bpfSockProtocol  = 12
	bpfSockState     = 72
)

// helperSKLookupAssign is sk_lookup's bpf_sk_assign(ctx, sk, flags)
// (bpf_sk_lookup_assign): sk, a socket or NULL, becomes the lookup's
// result, which ctx->sk then reads and the test run reports
// (runner.Runner.SelectSocket). The checks are the kernel's, in its order:
// unknown flags -EINVAL; a socket that is not RCU-freed or not a TCP
// listener or unconnected UDP socket -ESOCKTNOSUPPORT; another protocol
// than the packet's -EPROTOTYPE; another family, unless an IPv6 socket
// that takes IPv4 -EAFNOSUPPORT; a selection already made without
// BPF_SK_LOOKUP_F_REPLACE -EEXIST.
func helperSKLookupAssign(e *vm.Env, r1, r2, r3, _, _ uint64) (uint64, error) {
	r := runner.Of(e)
	if r3&^(skLookupFReplace|skLookupFNoReuseport) != 0 {
		return neg(einval), nil
	}
	if r1 != e.Ctx.Start {
		return 0, fmt.Errorf("%w: bpf_sk_assign: R1 %#x is not the context", vm.ErrMemory, r1)
	}
	ctx := vm.Slice(e.Ctx.Start, skLookupProtocol+2)
	le := binary.LittleEndian
	if r2 != 0 {
		ref, ok := r.Sock(r2)
		if !ok || ref.TCP {
			return 0, fmt.Errorf("%w: bpf_sk_assign: R2 %#x is not a socket", vm.ErrMemory, r2)
		}
		sk := vm.Slice(ref.Addr, bpfSockState+4)
		proto, state := le.Uint32(sk[bpfSockProtocol:]), le.Uint32(sk[bpfSockState:])
		switch {
		case proto == runner.ProtoTCP && state != runner.TCPListen,
			proto == runner.ProtoUDP && state != runner.TCPClose:
			// A connected or mini socket is refcounted, not RCU-freed.
			return neg(esocktnosupport), nil
		case proto != uint32(le.Uint16(ctx[skLookupProtocol:])):
			return neg(eprototype), nil
		}
		fam := le.Uint32(sk[bpfSockFamily:])
		if fam != uint32(le.Uint16(ctx[skLookupFamily:])) && (fam == runner.AFInet || ref.Socket != nil && ref.Socket.V6Only) {
			return neg(eafnosupport), nil
		}
	}
	if r.Selected() != 0 && r3&skLookupFReplace == 0 {
		return neg(eexist), nil
	}
	r.SelectSocket(r2, r3&skLookupFNoReuseport != 0)
	return 0, nil
}
