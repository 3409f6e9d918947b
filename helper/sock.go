package helper

import (
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// sockHelpers tell programs on a socket buffer about the packet's socket,
// cgroup and route (net/core/filter.c), from the host's world
// (runner.Net).
var sockHelpers = []Helper{
	{Proto: Proto{Name: "bpf_get_socket_cookie", Args: [5]ArgType{ArgCtx}}, Func: helperGetSocketCookie},
	// sk_reuseport's (bpf_get_socket_ptr_cookie_proto): of a socket
	// pointer, 0 for NULL.
	{Proto: Proto{Name: "bpf_get_socket_cookie", Args: [5]ArgType{ArgSockBTFOrNull}}, Func: helperGetSocketPtrCookie, Variant: "ptr"},
	{Proto: Proto{Name: "bpf_get_socket_uid", Args: [5]ArgType{ArgCtx}}, Func: helperGetSocketUID},
	{Proto: Proto{Name: "bpf_skb_cgroup_id", Args: [5]ArgType{ArgCtx}}, Func: helperSkbCgroupID},
	// tc's (bpf_get_cgroup_classid_proto), from the skb; the base set's
	// (bpf_get_cgroup_classid_curr_proto), which takes no argument, is the
	// current task's, which the host gives as well.
	{Proto: Proto{Name: "bpf_get_cgroup_classid", Args: [5]ArgType{ArgCtx}}, Func: helperGetCgroupClassid},
	{Proto: Proto{Name: "bpf_get_cgroup_classid"}, Func: helperGetCgroupClassid, Variant: "curr"},
	{Proto: Proto{Name: "bpf_get_route_realm", Args: [5]ArgType{ArgCtx}}, Func: helperGetRouteRealm},
}

// helperGetSocketCookie is bpf_get_socket_cookie(skb): the cookie of the
// packet's socket, 0 without one.
func helperGetSocketCookie(e *vm.Env, _, _, _, _, _ uint64) (uint64, error) {
	return runner.Of(e).SocketCookie(), nil
}

// helperGetSocketPtrCookie is bpf_get_socket_cookie(sk) of sk_reuseport:
// the cookie of socket sk, 0 for NULL.
func helperGetSocketPtrCookie(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	r := runner.Of(e)
	ref, ok := r.Sock(r1)
	if !ok {
		return 0, nil
	}
	return r.SockCookie(ref), nil
}

// helperGetSocketUID is bpf_get_socket_uid(skb): the uid of the packet's
// socket's owner, the overflow uid (65534) without a socket.
func helperGetSocketUID(e *vm.Env, _, _, _, _, _ uint64) (uint64, error) {
	if s := runner.Of(e).SkbSocket(); s != nil {
		return uint64(s.UID), nil
	}
	return overflowUID, nil
}

// helperSkbCgroupID is bpf_skb_cgroup_id(skb): the id of the cgroup v2 of
// the packet's socket, 0 without one.
func helperSkbCgroupID(e *vm.Env, _, _, _, _, _ uint64) (uint64, error) {
	if s := runner.Of(e).SkbSocket(); s != nil {
		return s.CgroupID, nil
	}
	return 0, nil
}

// helperGetCgroupClassid is bpf_get_cgroup_classid(skb): the net_cls class
// id the host gives (runner.Net.ClassID; the kernel's test run: 0).
func helperGetCgroupClassid(e *vm.Env, _, _, _, _, _ uint64) (uint64, error) {
	return uint64(runner.Of(e).Net().ClassID), nil
}

// helperGetRouteRealm is bpf_get_route_realm(skb): the realm of the
// packet's route (runner.Net.RouteRealm; the kernel's test run has no
// route: 0).
func helperGetRouteRealm(e *vm.Env, _, _, _, _, _ uint64) (uint64, error) {
	return uint64(runner.Of(e).Net().RouteRealm), nil
}
