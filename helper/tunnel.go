package helper

import (
	"encoding/binary"

	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// tunnelHelpers read and set a tc packet's tunnel metadata
// (net/core/filter.c): the one it was received with (runner.Net.Tunnel),
// or what it is to be sent with, which the host finds in Result.Tunnel.
var tunnelHelpers = []Helper{
	{Proto: Proto{Name: "bpf_skb_get_tunnel_key", Args: [5]ArgType{ArgCtx, ArgUninitMem, ArgConstSize, ArgAnything}}, Func: skbOnly(helperSkbGetTunnelKey)},
	{Proto: Proto{Name: "bpf_skb_set_tunnel_key", Args: [5]ArgType{ArgCtx, ArgMem, ArgConstSize, ArgAnything}}, Func: skbOnly(helperSkbSetTunnelKey)},
	{Proto: Proto{Name: "bpf_skb_get_tunnel_opt", Args: [5]ArgType{ArgCtx, ArgUninitMem, ArgConstSize}}, Func: skbOnly(helperSkbGetTunnelOpt)},
	{Proto: Proto{Name: "bpf_skb_set_tunnel_opt", Args: [5]ArgType{ArgCtx, ArgMem, ArgConstSize}}, Func: skbOnly(helperSkbSetTunnelOpt)},
}

// The tunnel helpers' flags.
const (
	tunInfoIPv6     = 1 << 0 // BPF_F_TUNINFO_IPV6
	zeroCsumTX      = 1 << 1 // BPF_F_ZERO_CSUM_TX
	dontFragment    = 1 << 2 // BPF_F_DONT_FRAGMENT
	seqNumber       = 1 << 3 // BPF_F_SEQ_NUMBER
	tunInfoFlags    = 1 << 4 // BPF_F_TUNINFO_FLAGS
	ipv6FlowLabel   = 0x000fffff
	tunnelOptsMax   = 255 // IP_TUNNEL_OPTS_MAX
	eproto          = 71
	tunnelKeySize   = 44 // sizeof(struct bpf_tunnel_key)
	tunKeyRemote6_1 = 8  // offsetof(struct bpf_tunnel_key, remote_ipv6[1])
	tunKeyExt       = 22 // offsetof(struct bpf_tunnel_key, tunnel_ext)
	tunKeyLabel     = 24 // offsetof(struct bpf_tunnel_key, tunnel_label)
	tunKeyLocal6    = 28 // offsetof(struct bpf_tunnel_key, local_ipv6[0])
)

// helperSkbGetTunnelKey is bpf_skb_get_tunnel_key(skb, key, size, flags):
// the packet's tunnel metadata as a struct bpf_tunnel_key of size bytes
// (the current one or an older, shorter layout), remote being the outer
// source. -EINVAL without metadata or for flags other than
// BPF_F_TUNINFO_IPV6, -EPROTO if that flag does not match the metadata's
// family; key is zeroed on an error. BPF_F_TUNINFO_FLAGS fills in
// tunnel_flags, the TUNNEL_* flags bpf_skb_set_tunnel_key's flags give
// (tunnelFlags).
func helperSkbGetTunnelKey(e *vm.Env, _, r2, r3, r4, _ uint64) (uint64, error) {
	size := uint64(uint32(r3))
	to, err := e.Bytes(r2, size, true)
	if err != nil {
		return 0, err
	}
	fail := func(errno int64) (uint64, error) {
		clear(to)
		return neg(errno), nil
	}
	t := runner.Of(e).Skb().Tunnel
	if t == nil || r4&^(tunInfoIPv6|tunInfoFlags) != 0 {
		return fail(einval)
	}
	if t.IPv6 != (r4&tunInfoIPv6 != 0) {
		return fail(eproto)
	}
	switch size {
	case tunnelKeySize, tunKeyLocal6, tunKeyLabel, tunKeyExt:
	case tunKeyRemote6_1:
		if t.IPv6 {
			return fail(einval)
		}
	default:
		return fail(einval)
	}
	var k [tunnelKeySize]byte
	ne := binary.NativeEndian
	ne.PutUint32(k[0:], uint32(t.ID))
	k[20], k[21] = t.TOS, t.TTL
	if r4&tunInfoFlags != 0 {
		f := tunnelFlags(t.Flags)
		if len(t.Options) > 0 {
			f |= tunnelOptionsPresent
		}
		binary.BigEndian.PutUint16(k[22:], f)
	}
	if t.IPv6 {
		copy(k[4:20], t.Src[:])
		copy(k[28:44], t.Dst[:])
		ne.PutUint32(k[24:], t.Label)
	} else {
		ne.PutUint32(k[4:], binary.BigEndian.Uint32(t.Src[:]))
		ne.PutUint32(k[28:], binary.BigEndian.Uint32(t.Dst[:]))
	}
	copy(to, k[:])
	return 0, nil
}

// helperSkbSetTunnelKey is bpf_skb_set_tunnel_key(skb, key, size, flags):
// the packet is to be sent through a tunnel (a collect-metadata device)
// with the outer headers key describes, remote being the outer
// destination. Older, shorter layouts of struct bpf_tunnel_key are taken;
// a label without BPF_F_TUNINFO_IPV6, a tunnel_ext, or other flags than
// the tunnel ones are -EINVAL.
func helperSkbSetTunnelKey(e *vm.Env, _, r2, r3, r4, _ uint64) (uint64, error) {
	size := uint64(uint32(r3))
	from, err := e.Bytes(r2, size, false)
	if err != nil {
		return 0, err
	}
	if r4&^(tunInfoIPv6|zeroCsumTX|dontFragment|seqNumber) != 0 {
		return neg(einval), nil
	}
	var k [tunnelKeySize]byte
	switch size {
	case tunnelKeySize, tunKeyLocal6, tunKeyLabel, tunKeyExt, tunKeyRemote6_1:
		copy(k[:], from)
	default:
		return neg(einval), nil
	}
	ne := binary.NativeEndian
	v6 := r4&tunInfoIPv6 != 0
	if !v6 && ne.Uint32(k[24:]) != 0 || ne.Uint16(k[22:]) != 0 {
		return neg(einval), nil
	}
	t := runner.Of(e).TunnelTX()
	t.ID, t.TOS, t.TTL, t.Flags, t.IPv6 = uint64(ne.Uint32(k[0:])), k[20], k[21], r4, v6
	if v6 {
		copy(t.Dst[:], k[4:20])
		copy(t.Src[:], k[28:44])
		t.Label = ne.Uint32(k[24:]) & ipv6FlowLabel
	} else {
		binary.BigEndian.PutUint32(t.Dst[:], ne.Uint32(k[4:]))
		binary.BigEndian.PutUint32(t.Src[:], ne.Uint32(k[28:]))
	}
	return 0, nil
}

// helperSkbGetTunnelOpt is bpf_skb_get_tunnel_opt(skb, opt, size): the
// tunnel options into opt, the rest of it zeroed, and their length;
// -ENOENT without options, -ENOMEM if they do not fit (opt zeroed on an
// error).
func helperSkbGetTunnelOpt(e *vm.Env, _, r2, r3, _, _ uint64) (uint64, error) {
	size := uint64(uint32(r3))
	to, err := e.Bytes(r2, size, true)
	if err != nil {
		return 0, err
	}
	t := runner.Of(e).Skb().Tunnel
	switch {
	case t == nil || len(t.Options) == 0:
		clear(to)
		return neg(enoent), nil
	case uint64(len(t.Options)) > size:
		clear(to)
		return neg(enomem), nil
	}
	n := copy(to, t.Options)
	clear(to[n:])
	return uint64(n), nil
}

// helperSkbSetTunnelOpt is bpf_skb_set_tunnel_opt(skb, opt, size): the
// options of the tunnel bpf_skb_set_tunnel_key chose (-EINVAL without
// one), a multiple of 4 bytes (-EINVAL) of at most 255 (-ENOMEM).
func helperSkbSetTunnelOpt(e *vm.Env, _, r2, r3, _, _ uint64) (uint64, error) {
	size := uint64(uint32(r3))
	from, err := e.Bytes(r2, size, false)
	if err != nil {
		return 0, err
	}
	s := runner.Of(e).Skb()
	if !s.TunnelTX || size&3 != 0 {
		return neg(einval), nil
	}
	if size > tunnelOptsMax {
		return neg(enomem), nil
	}
	s.Tunnel.Options = append(s.Tunnel.Options[:0], from...)
	return 0, nil
}

// TUNNEL_* flags (the GRE header's, which ip_tunnel_info uses).
const (
	tunnelCsum         = 0x0001
	tunnelKey          = 0x0004
	tunnelSeq          = 0x0008
	tunnelDontFragment = 0x0100
	tunnelNoCache      = 0x2000
	// tunnelOptionsPresent is TUNNEL_OPTIONS_PRESENT: the Geneve, VXLAN,
	// ERSPAN and GTP option flags, which bpf_skb_set_tunnel_opt sets.
	tunnelOptionsPresent = 0x0800 | 0x1000 | 0x4000 | 0x8000
)

// tunnelFlags returns the TUNNEL_* flags of a tunnel key set with flags:
// a keyed, checksummed, uncached tunnel, as bpf_skb_set_tunnel_key makes
// it.
func tunnelFlags(flags uint64) uint16 {
	f := uint16(tunnelKey | tunnelCsum | tunnelNoCache)
	if flags&dontFragment != 0 {
		f |= tunnelDontFragment
	}
	if flags&zeroCsumTX != 0 {
		f &^= tunnelCsum
	}
	if flags&seqNumber != 0 {
		f |= tunnelSeq
	}
	return f
}
