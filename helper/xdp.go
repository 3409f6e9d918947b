package helper

import (
	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/maps"
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// xdpHelpers move an XDP packet's boundaries and redirect packets
// (net/core/filter.c).
var xdpHelpers = []Helper{
	{Proto: Proto{Name: "bpf_xdp_adjust_head", Args: [5]ArgType{ArgCtx, ArgAnything}, ChangesPacket: true}, Func: helperXDPAdjustHead},
	{Proto: Proto{Name: "bpf_xdp_adjust_tail", Args: [5]ArgType{ArgCtx, ArgAnything}, ChangesPacket: true}, Func: helperXDPAdjustTail},
	{Proto: Proto{Name: "bpf_xdp_adjust_meta", Args: [5]ArgType{ArgCtx, ArgAnything}, ChangesPacket: true}, Func: helperXDPAdjustMeta},
	{Proto: Proto{Name: "bpf_redirect", Args: [5]ArgType{ArgAnything, ArgAnything}}, Func: helperRedirect},
	{Proto: Proto{Name: "bpf_redirect_map", Args: [5]ArgType{ArgConstMapPtr, ArgAnything, ArgAnything}, MapTypes: []maps.Type{maps.DevMap, maps.DevMapHash, maps.CPUMap, maps.XSKMap}}, Func: helperRedirectMap},
}

// Packet geometry the XDP helpers keep, as in the kernel.
const (
	// ethHLen is ETH_HLEN: bpf_xdp_adjust_head and bpf_xdp_adjust_tail
	// keep at least an Ethernet header of packet.
	ethHLen = 14
	// xdpFrameSize is sizeof(struct xdp_frame), which the kernel keeps free
	// at the start of the headroom to turn the buffer into a frame.
	xdpFrameSize = 40
	// xdpMaxMeta is the largest metadata area bpf_xdp_adjust_meta allows:
	// what skb_shared_info's u8 meta_len holds (32 before Linux 6.6).
	xdpMaxMeta = 255
)

// Verdicts the redirect helpers return.
const (
	xdpAborted    = 0 // XDP_ABORTED
	xdpTX         = 3 // XDP_TX, the largest verdict a redirect_map miss may return
	xdpRedirect   = 4 // XDP_REDIRECT
	tcActShot     = 2 // TC_ACT_SHOT
	tcActRedirect = 7 // TC_ACT_REDIRECT
)

// Redirect flags.
const (
	flagIngress        = 1 << 0 // BPF_F_INGRESS (tc bpf_redirect)
	flagBroadcast      = 1 << 3 // BPF_F_BROADCAST (devmap)
	flagExcludeIngress = 1 << 4 // BPF_F_EXCLUDE_INGRESS (devmap)
)

// helperXDPAdjustHead is bpf_xdp_adjust_head(xdp, delta): it moves the
// packet's start by delta bytes (negative: grow into the headroom, whose
// first xdpFrameSize bytes are reserved), keeping at least ETH_HLEN bytes,
// and moves the metadata with it.
func helperXDPAdjustHead(e *vm.Env, _, r2, _, _, _ uint64) (uint64, error) {
	r := runner.Of(e)
	p := r.Packet()
	delta := int64(int32(r2))
	metalen := p.Data - p.Meta
	data := p.Data + uint64(delta)
	if int64(p.Data)+delta < int64(p.Start+xdpFrameSize+metalen) || data+ethHLen > p.End {
		return neg(einval), nil
	}
	meta := p.Meta + uint64(delta)
	if metalen > 0 {
		copy(vm.Slice(meta, metalen), vm.Slice(p.Meta, metalen))
	}
	p.Meta, p.Data = meta, data
	r.SetPacket(p)
	return 0, nil
}

// helperXDPAdjustTail is bpf_xdp_adjust_tail(xdp, delta): it moves the
// packet's end by delta bytes, keeping at least ETH_HLEN bytes; growing
// zeroes the new bytes. The packet can grow by the runner's tailroom
// (256 bytes past the input's end; the kernel's test run allows up to
// 3520 bytes of packet).
func helperXDPAdjustTail(e *vm.Env, _, r2, _, _, _ uint64) (uint64, error) {
	r := runner.Of(e)
	p := r.Packet()
	delta := int64(int32(r2))
	end := p.End + uint64(delta)
	if int64(p.End)+delta > int64(p.Limit) || int64(p.End)+delta < int64(p.Data+ethHLen) {
		return neg(einval), nil
	}
	if delta > 0 {
		clear(vm.Slice(p.End, uint64(delta)))
	}
	p.End = end
	r.SetPacket(p)
	return 0, nil
}

// helperXDPAdjustMeta is bpf_xdp_adjust_meta(xdp, delta): it moves the
// start of the metadata area in front of the packet by delta bytes. The
// area must stay within the headroom, 4-byte aligned and at most 32 bytes
// (-EACCES otherwise).
func helperXDPAdjustMeta(e *vm.Env, _, r2, _, _, _ uint64) (uint64, error) {
	r := runner.Of(e)
	p := r.Packet()
	delta := int64(int32(r2))
	meta := p.Meta + uint64(delta)
	if int64(p.Meta)+delta < int64(p.Start+xdpFrameSize) || meta > p.Data {
		return neg(einval), nil
	}
	if metalen := p.Data - meta; metalen&3 != 0 || metalen > xdpMaxMeta {
		return neg(eacces), nil
	}
	p.Meta = meta
	r.SetPacket(p)
	return 0, nil
}

// isXDP reports whether the running program is an XDP program, whose
// redirect helpers return XDP verdicts rather than tc actions.
func isXDP(r *runner.Runner) bool { return r.Program().Kind == ebpf.XDP }

// helperRedirect is bpf_redirect(ifindex, flags). bpfvm records the target
// in Result.Redirect and returns XDP_REDIRECT (XDP programs) or
// TC_ACT_REDIRECT (others); invalid flags give XDP_ABORTED or TC_ACT_SHOT.
// XDP accepts no flags, tc only BPF_F_INGRESS.
func helperRedirect(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
	r := runner.Of(e)
	if isXDP(r) {
		if r2 != 0 {
			return xdpAborted, nil
		}
		r.SetRedirect(runner.Redirect{Key: uint64(uint32(r1)), Flags: r2, Valid: true})
		return xdpRedirect, nil
	}
	if r2&^flagIngress != 0 {
		return tcActShot, nil
	}
	r.SetRedirect(runner.Redirect{Key: uint64(uint32(r1)), Flags: r2, Valid: true})
	return tcActRedirect, nil
}

// helperRedirectMap is bpf_redirect_map(map, key, flags). bpfvm has no
// devmap, cpumap or xskmap; it accepts any map with 4- or 8-byte keys and
// looks key up in it. On a hit it records the map, key and flags in
// Result.Redirect and returns XDP_REDIRECT (TC_ACT_REDIRECT for non-XDP
// programs); on a miss it returns the low two bits of flags (an XDP verdict
// chosen by the program), as the kernel does, unless BPF_F_BROADCAST is
// set. Flags beyond those bits, BPF_F_BROADCAST and BPF_F_EXCLUDE_INGRESS
// give XDP_ABORTED.
func helperRedirectMap(e *vm.Env, r1, r2, r3, _, _ uint64) (uint64, error) {
	m, err := mapArg(e, r1)
	if err != nil {
		return 0, err
	}
	r := runner.Of(e)
	if r3&^(xdpTX|flagBroadcast|flagExcludeIngress) != 0 {
		return xdpAborted, nil
	}
	key := uint64(uint32(r2))
	found := false
	if ks := m.Spec().KeySize; ks == 4 || ks == 8 {
		found = m.Lookup(r.KeyPtr(key, ks), e.CPU) != nil
	}
	if !found && r3&flagBroadcast == 0 {
		r.SetRedirect(runner.Redirect{})
		return r3 & xdpTX, nil
	}
	r.SetRedirect(runner.Redirect{Map: m, Key: key, Flags: r3, Valid: true})
	if isXDP(r) {
		return xdpRedirect, nil
	}
	return tcActRedirect, nil
}
