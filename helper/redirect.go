package helper

import (
	"encoding/binary"

	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// redirectHelpers send tc packets elsewhere and check them against device
// MTUs (net/core/filter.c). bpf_redirect and bpf_redirect_map are XDP's
// and tc's common ones (xdp.go). What they do to the world is recorded
// for the host: Result.Redirect, Result.Clones.
var redirectHelpers = []Helper{
	{Proto: Proto{Name: "bpf_clone_redirect", Args: [5]ArgType{ArgCtx, ArgAnything, ArgAnything}, ChangesPacket: true}, Func: skbOnly(helperCloneRedirect)},
	{Proto: Proto{Name: "bpf_redirect_neigh", Args: [5]ArgType{ArgAnything, ArgMemOrNull, ArgConstSizeOrZero, ArgAnything}}, Func: helperRedirectNeigh},
	{Proto: Proto{Name: "bpf_redirect_peer", Args: [5]ArgType{ArgAnything, ArgAnything}}, Func: helperRedirectPeer},
	{Proto: Proto{Name: "bpf_check_mtu", Args: [5]ArgType{ArgCtx, ArgAnything, ArgPtrToInt, ArgAnything, ArgAnything}}, Func: helperCheckMTU},
}

// helperCloneRedirect is bpf_clone_redirect(skb, ifindex, flags): a copy
// of the packet goes out of (BPF_F_INGRESS: into) device ifindex, which
// must exist (-EINVAL otherwise, as for flags other than BPF_F_INGRESS);
// the program goes on with the packet. bpfvm records the copy
// (Result.Clones) and returns 0, what the kernel's transmission returns;
// a packet whose MAC header is not before its network header is -ERANGE.
func helperCloneRedirect(e *vm.Env, _, r2, r3, _, _ uint64) (uint64, error) {
	r := runner.Of(e)
	if r3&^flagIngress != 0 {
		return neg(einval), nil
	}
	ifindex := uint32(r2)
	d, ok := r.Device(ifindex)
	if !ok {
		return neg(einval), nil
	}
	if mac, nh := r.Headers(); d.HeaderLen != 0 && mac >= nh {
		return neg(erange), nil
	}
	r.AddClone(ifindex, r3)
	return 0, nil
}

// bpfRedirNeighSize is sizeof(struct bpf_redir_neigh).
const bpfRedirNeighSize = 20

// helperRedirectNeigh is bpf_redirect_neigh(ifindex, params, plen,
// flags): the packet goes out of device ifindex to the neighbour of the
// next hop in params (plen bytes, 0 or at least a struct
// bpf_redir_neigh), or of its route when there are none. bpfvm records
// it (Result.Redirect) and returns TC_ACT_REDIRECT; a short plen or any
// flags give TC_ACT_SHOT.
func helperRedirectNeigh(e *vm.Env, r1, r2, r3, r4, _ uint64) (uint64, error) {
	plen := uint64(uint32(r3))
	if plen != 0 && plen < bpfRedirNeighSize || r4 != 0 {
		return tcActShot, nil
	}
	rd := runner.Redirect{Key: uint64(uint32(r1)), Valid: true, Neigh: true}
	if plen != 0 {
		b, err := e.Bytes(r2, bpfRedirNeighSize, false)
		if err != nil {
			return 0, err
		}
		rd.NextHop.Family = binary.NativeEndian.Uint32(b)
		copy(rd.NextHop.Addr[:], b[4:])
	}
	runner.Of(e).SetRedirect(rd)
	return tcActRedirect, nil
}

// helperRedirectPeer is bpf_redirect_peer(ifindex, flags): the packet goes
// to the ingress of the peer of device ifindex (veth, netkit). bpfvm
// records it (Result.Redirect) and returns TC_ACT_REDIRECT; any flags give
// TC_ACT_SHOT.
func helperRedirectPeer(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
	if r2 != 0 {
		return tcActShot, nil
	}
	runner.Of(e).SetRedirect(runner.Redirect{Key: uint64(uint32(r1)), Valid: true, Peer: true})
	return tcActRedirect, nil
}

// bpf_check_mtu's flag and results.
const (
	mtuChkSegs         = 1 << 0 // BPF_MTU_CHK_SEGS
	mtuChkRetSuccess   = 0      // BPF_MTU_CHK_RET_SUCCESS
	mtuChkRetFragNeeed = 1      // BPF_MTU_CHK_RET_FRAG_NEEDED
	enodev             = 19
)

// helperCheckMTU is bpf_check_mtu(ctx, ifindex, mtu_len, len_diff,
// flags): whether the packet, len_diff bytes longer (or, if *mtu_len is
// not 0, an L3 packet of *mtu_len plus len_diff bytes), fits the MTU of
// device ifindex (0: the packet's device; -ENODEV if there is none),
// BPF_MTU_CHK_RET_SUCCESS or BPF_MTU_CHK_RET_FRAG_NEEDED, with the MTU in
// *mtu_len. The device's MTU is an L3 length, the packet's an L2 one: the
// device's header length is added. tc programs may pass
// BPF_MTU_CHK_SEGS (without len_diff or *mtu_len) for GSO packets, which
// then pass (bpfvm's GSO packets have no transport header: -EINVAL); XDP
// programs no flags.
func helperCheckMTU(e *vm.Env, _, r2, r3, r4, r5 uint64) (uint64, error) {
	mtuLen, err := e.Bytes(r3, 4, true)
	if err != nil {
		return 0, err
	}
	r := runner.Of(e)
	xdp := isXDP(r)
	in := binary.NativeEndian.Uint32(mtuLen)
	diff := int64(int32(r4))
	switch {
	case xdp && r5 != 0, !xdp && r5&^mtuChkSegs != 0:
		return neg(einval), nil
	case r5&mtuChkSegs != 0 && (diff != 0 || in != 0):
		return neg(einval), nil
	}
	ifindex := uint32(r2)
	p := r.Packet()
	gso := false
	if ifindex == 0 {
		if xdp {
			ifindex = binary.LittleEndian.Uint32(vm.Slice(e.Ctx.Start+xdpIngressIfindex, 4))
		} else {
			ctx := r.SkbContext()
			if ctx == nil {
				return 0, errNoSkb
			}
			ifindex = binary.LittleEndian.Uint32(ctx[runner.SkbIfindex:])
			gso = skbGSO(ctx)
		}
	}
	d, ok := r.Device(ifindex)
	if !ok {
		return neg(enodev), nil
	}
	devLen := int64(d.MTU) + int64(d.HeaderLen)
	n := int64(p.End - p.Data)
	if in != 0 {
		n = int64(in) + int64(d.HeaderLen)
	}
	ret := uint64(mtuChkRetSuccess)
	if int32(n+diff) > int32(devLen) {
		ret = mtuChkRetFragNeeed
		if gso {
			ret = mtuChkRetSuccess
			if r5&mtuChkSegs != 0 && r.Skb().Trans == 0 {
				return neg(einval), nil
			}
		}
	}
	binary.NativeEndian.PutUint32(mtuLen, d.MTU)
	return ret, nil
}

// xdpIngressIfindex is the offset of struct xdp_md's ingress_ifindex.
const xdpIngressIfindex = 12
