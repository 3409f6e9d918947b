package helper

import (
	"unsafe"

	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// sockMapHelpers put sockets in socket maps, redirect packets and
// messages to them and select among them (net/core/sock_map.c,
// net/core/filter.c), and keep storage per socket
// (net/core/bpf_sk_storage.c). Sockets are their cookies in the host's
// world (maps.SocketMap); what a redirect chose is recorded for the host
// (Result.Redirect, its Socket).
var sockMapHelpers = []Helper{
	{Proto: Proto{Name: "bpf_sock_map_update", Args: [5]ArgType{ArgCtx, ArgConstMapPtr, ArgMapKey, ArgAnything}, PktAccess: true}, Func: helperSockMapUpdate},
	{Proto: Proto{Name: "bpf_sock_hash_update", Args: [5]ArgType{ArgCtx, ArgConstMapPtr, ArgMapKey, ArgAnything}, PktAccess: true}, Func: helperSockMapUpdate},
	{Proto: Proto{Name: "bpf_sk_redirect_map", Args: [5]ArgType{ArgCtx, ArgConstMapPtr, ArgAnything, ArgAnything}}, Func: helperSockRedirectMap},
	{Proto: Proto{Name: "bpf_msg_redirect_map", Args: [5]ArgType{ArgCtx, ArgConstMapPtr, ArgAnything, ArgAnything}}, Func: helperSockRedirectMap},
	{Proto: Proto{Name: "bpf_sk_redirect_hash", Args: [5]ArgType{ArgCtx, ArgConstMapPtr, ArgMapKey, ArgAnything}}, Func: helperSockRedirectHash},
	{Proto: Proto{Name: "bpf_msg_redirect_hash", Args: [5]ArgType{ArgCtx, ArgConstMapPtr, ArgMapKey, ArgAnything}}, Func: helperSockRedirectHash},
	{Proto: Proto{Name: "bpf_sk_select_reuseport", Args: [5]ArgType{ArgCtx, ArgConstMapPtr, ArgMapKey, ArgAnything}}, Func: helperSkSelectReuseport},
	{Proto: Proto{Name: "bpf_sk_storage_get", Args: [5]ArgType{ArgConstMapPtr, ArgSockBTF, ArgMapValueOrNull, ArgAnything}, Ret: RetMapValueOrNull}, Func: helperSkStorageGet},
	// cgroup_sock's (bpf_sk_storage_get_cg_sock_proto): the socket is the
	// context.
	{Proto: Proto{Name: "bpf_sk_storage_get", Args: [5]ArgType{ArgConstMapPtr, ArgCtx, ArgMapValueOrNull, ArgAnything}, Ret: RetMapValueOrNull}, Func: helperSkStorageGet, Variant: "cg_sock"},
	{Proto: Proto{Name: "bpf_sk_storage_delete", Args: [5]ArgType{ArgConstMapPtr, ArgSockBTF}}, Func: helperSkStorageDelete},
}

// Verdicts of the socket redirect helpers.
const (
	skDrop = 0 // SK_DROP
	skPass = 1 // SK_PASS
)

// sock_ops callbacks in which bpf_sock_map_update may add the socket
// (sock_map_op_okay).
const (
	sockOpsActiveEstablished  = 4  // BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB
	sockOpsPassiveEstablished = 5  // BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB
	sockOpsTCPListen          = 11 // BPF_SOCK_OPS_TCP_LISTEN_CB
)

// skStorageGetCreate is BPF_SK_STORAGE_GET_F_CREATE.
const skStorageGetCreate = 1

// socketMapKey is the socket map at r2 and the key at r3 of the helpers
// that take both.
func socketMapKey(e *vm.Env, r2, r3 uint64) (maps.SocketMap, unsafe.Pointer, error) {
	m, err := mapArgOf[maps.SocketMap](e, r2, "a socket map helper")
	if err != nil {
		return nil, nil, err
	}
	key, err := memArg(e, r3, m.Spec().KeySize, false)
	return m, key, err
}

// helperSockMapUpdate is bpf_sock_map_update(skops, map, key, flags) and
// bpf_sock_hash_update: it puts the sock_ops program's socket in the map
// at key, with update flags, in the callbacks of established and
// listening sockets only (-EOPNOTSUPP in the others).
func helperSockMapUpdate(e *vm.Env, _, r2, r3, r4, _ uint64) (uint64, error) {
	m, key, err := socketMapKey(e, r2, r3)
	if err != nil {
		return 0, err
	}
	// The program's socket: sock_ops programs always have one, which
	// ctx->sk may not show (its state decides).
	cookie := runner.Of(e).SocketCookie()
	if e.Ctx.End-e.Ctx.Start < 4 || cookie == 0 {
		return neg(eopnotsupp), nil
	}
	switch op := *(*uint32)(vm.Ptr(e.Ctx.Start)); op {
	case sockOpsActiveEstablished, sockOpsPassiveEstablished, sockOpsTCPListen:
	default:
		return neg(eopnotsupp), nil
	}
	return errno(m.SetSocket(key, cookie, r4)), nil
}

// sockRedirect records a redirect to the socket at key of m: SK_PASS, or
// SK_DROP for flags other than BPF_F_INGRESS or no socket there. The
// kernel also drops redirects to listening TCP sockets and to
// unconnected others; bpfvm's sockets have no state.
func sockRedirect(e *vm.Env, m maps.SocketMap, key unsafe.Pointer, index, flags uint64) uint64 {
	if flags&^flagIngress != 0 {
		return skDrop
	}
	cookie, ok := m.Socket(key)
	if !ok {
		return skDrop
	}
	r := runner.Of(e)
	r.SetRedirect(runner.Redirect{Map: m, Key: index, Flags: flags, Valid: true, Socket: cookie})
	return skPass
}

// helperSockRedirectMap is bpf_sk_redirect_map(skb, map, key, flags) and
// bpf_msg_redirect_map(msg, ...): the packet or message goes to the
// socket at index key of a sockmap (BPF_F_INGRESS: to its receive queue).
func helperSockRedirectMap(e *vm.Env, _, r2, r3, r4, _ uint64) (uint64, error) {
	m, err := mapArgOf[maps.SocketMap](e, r2, "a socket map helper")
	if err != nil {
		return 0, err
	}
	i := uint64(uint32(r3))
	return sockRedirect(e, m, runner.Of(e).KeyPtr(i, 4), i, r4), nil
}

// helperSockRedirectHash is bpf_sk_redirect_hash(skb, map, key, flags)
// and bpf_msg_redirect_hash(msg, ...): bpf_sk_redirect_map's, by the key
// of a sockhash.
func helperSockRedirectHash(e *vm.Env, _, r2, r3, r4, _ uint64) (uint64, error) {
	m, key, err := socketMapKey(e, r2, r3)
	if err != nil {
		return 0, err
	}
	return sockRedirect(e, m, key, 0, r4), nil
}

// helperSkSelectReuseport is bpf_sk_select_reuseport(reuse, map, key,
// flags): the socket at key of a reuseport array, sockmap or sockhash
// takes the packet (recorded as Result.Redirect), -ENOENT without one,
// and the errors of the kernel's check that it is in the run's reuseport
// group (runner.ReuseportSelect). The flags are unused, as in the kernel.
func helperSkSelectReuseport(e *vm.Env, _, r2, r3, r4, _ uint64) (uint64, error) {
	m, key, err := socketMapKey(e, r2, r3)
	if err != nil {
		return 0, err
	}
	cookie, ok := m.Socket(key)
	if !ok {
		return neg(enoent), nil
	}
	if errno := runner.Of(e).ReuseportSelect(cookie, m.Spec().Type == maps.ReuseportSockArray); errno != 0 {
		return uint64(errno), nil
	}
	var index uint64
	if m.Spec().Type != maps.SockHash {
		index = uint64(*(*uint32)(key))
	}
	runner.Of(e).SetRedirect(runner.Redirect{Map: m, Key: index, Flags: r4, Valid: true, Socket: cookie})
	return 0, nil
}

// helperSkStorageGet is bpf_sk_storage_get(map, sk, value, flags) (sk the
// context itself for cgroup_sock programs): the storage of socket sk in
// the map; without one, with
// BPF_SK_STORAGE_GET_F_CREATE, a new one holding value (zeroed when value
// is NULL). NULL for other flags, a socket that is none of the run's, or
// no room.
func helperSkStorageGet(e *vm.Env, r1, r2, r3, r4, _ uint64) (uint64, error) {
	s, err := mapArgOf[*maps.SocketStorage](e, r1, "a socket storage helper")
	if err != nil {
		return 0, err
	}
	var value unsafe.Pointer
	if r3 != 0 {
		if value, err = memArg(e, r3, s.Spec().ValueSize, false); err != nil {
			return 0, err
		}
	}
	r := runner.Of(e)
	cookie, ok := r.SocketAt(r2)
	if r2 == e.Ctx.Start && r.ContextIsSocket() {
		cookie, ok = r.SocketCookie(), true
	}
	if !ok || r4 > skStorageGetCreate {
		return 0, nil
	}
	p := s.Get(cookie, value, r4 == skStorageGetCreate)
	if p != nil && e.Checked {
		grantMap(e, s)
	}
	return vm.Addr(p), nil
}

// helperSkStorageDelete is bpf_sk_storage_delete(map, sk): it removes the
// storage of socket sk, -ENOENT without one (-EINVAL for a socket that is
// none of the run's).
func helperSkStorageDelete(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
	s, err := mapArgOf[*maps.SocketStorage](e, r1, "a socket storage helper")
	if err != nil {
		return 0, err
	}
	cookie, ok := runner.Of(e).SocketAt(r2)
	if !ok {
		return neg(einval), nil
	}
	return errno(s.DeleteSocket(cookie)), nil
}
