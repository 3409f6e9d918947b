package progtype

import (
	"encoding/binary"
	"fmt"
	"syscall"

	"github.com/bpfvm/bpfvm/internal/errs"
)

// Netfilter is BPF_PROG_TYPE_NETFILTER (attach type BPF_NETFILTER) with
// struct bpf_nf_ctx (nf_is_valid_access): read-only, two 64-bit loads,
// state a trusted struct nf_hook_state pointer and skb a trusted struct
// sk_buff one, which the program reads through the kernel's BTF
// (Options.KernelTypes) as it reads any kernel object. Programs return
// NF_DROP (0) or NF_ACCEPT (1); the helpers are bpf_base_func_proto's.
//
// Test runs are the kernel's (bpf_prog_test_run_nf, Hook): the context
// input is a struct nf_hook_state, the packet an IP packet; the run lays
// out the sk_buff, hook state and loopback device the kernel's builds
// (runner.Objects) for the context's pointers.
var Netfilter = &Type{
	Name:        "netfilter",
	ContextSize: 16,
	Fields: []Field{
		{Name: "state", Offset: 0, Size: 8, Read: true, Kind: KernelObject, Object: "nf_hook_state"},
		{Name: "skb", Offset: 8, Size: 8, Read: true, Kind: KernelObject, Object: "sk_buff"},
	},
	ContextNames: []string{"bpf_nf_ctx"},
	Hook:         &HookRun{Check: checkNFInput},
	Helpers:      Helpers(baseHelpers),
	CheckReturn:  true,
	ReturnMax:    1,
}

// Netfilter hooks (enum nf_inet_hooks) and the protocol families a
// netfilter test run takes (NFPROTO_*).
const (
	NFInetPreRouting  = 0
	NFInetLocalIn     = 1
	NFInetForward     = 2
	NFInetLocalOut    = 3
	NFInetPostRouting = 4
	NFProtoIPv4       = 2
	NFProtoIPv6       = 10
)

// Ethernet protocols and packet types the netfilter test run gives its
// socket buffer (skb->protocol's host-order value, skb->pkt_type).
const (
	EthPIP        = 0x0800
	EthPIPv6      = 0x86dd
	PacketHost    = 0
	PacketMcast   = 2
	PacketOther   = 3
	ipv4HeaderLen = 20
	ipv6HeaderLen = 40
	ethHeaderLen  = 14
)

// NFMaxData is the longest packet a netfilter test run takes: a page less
// the socket buffer's headroom (NET_SKB_PAD, 64 bytes) and the aligned
// struct skb_shared_info (320 bytes) on x86-64.
const NFMaxData = 4096 - 64 - 320

var (
	errNFInvalid = errs.New("invalid argument", syscall.EINVAL)
	errNFProto   = errs.New("protocol error", syscall.EPROTO)
	errNFTooBig  = errs.New("argument list too long", syscall.E2BIG)
)

// HookRun is the test run of a type whose programs run at a netfilter
// hook (netfilter: bpf_prog_test_run_nf). The context input is the
// struct nf_hook_state the run starts from, not the type's context;
// there is no context output and no output packet.
type HookRun struct {
	// Check refuses a run the kernel's test run refuses and says what the
	// run's socket buffer and hook state are: the hook state input (in,
	// Given false when the run has none) and the packet.
	Check func(in HookInput, data []byte) (HookRunState, error)
}

// HookInput is what a netfilter test run takes from its context input,
// a struct nf_hook_state.
type HookInput struct {
	// Given says the run has a context input (or asks for a context
	// output, for which the kernel makes one, zero).
	Given bool
	// Hook and PF are the input's hook and family.
	Hook, PF uint8
	// Pointers says one of the input's pointers (in, out, sk, net, okfn)
	// is not NULL.
	Pointers bool
	// Tail says the input is longer than the structure and its bytes
	// past it are not zero (the kernel's bpf_check_uarg_tail_zero: E2BIG).
	Tail bool
}

// HookRunState is the socket buffer and hook state of a netfilter test
// run.
type HookRunState struct {
	// Hook and PF are the hook state's.
	Hook, PF uint8
	// Out says the state's out device is the loopback device (the
	// kernel's test run sets it for every hook state it is given, as it
	// chooses by the default hook, NF_INET_LOCAL_OUT, before taking the
	// given one); in is always NULL.
	Out bool
	// Eth says the packet starts with an Ethernet header, which the
	// socket buffer has pulled (every hook but NF_INET_LOCAL_OUT): the
	// buffer's device is the loopback device, its MAC header the frame's
	// start, its network header and data after the Ethernet header.
	// Without, the data is the packet's start, the network header the
	// buffer's head, no MAC header and no device.
	Eth bool
	// Protocol is skb->protocol (host order), PktType skb->pkt_type.
	Protocol uint16
	PktType  uint8
}

// checkNFInput is bpf_prog_test_run_nf's checks, in its order.
func checkNFInput(in HookInput, data []byte) (HookRunState, error) {
	st := HookRunState{Hook: NFInetLocalOut, PF: NFProtoIPv4}
	if len(data) < ipv4HeaderLen || len(data) > NFMaxData {
		return st, fmt.Errorf("%d bytes of data, a netfilter test run takes %d to %d: %w", len(data), ipv4HeaderLen, NFMaxData, errNFInvalid)
	}
	if in.Tail {
		return st, fmt.Errorf("context: bytes past struct nf_hook_state are not zero: %w", errNFTooBig)
	}
	if in.Given {
		if in.Pointers {
			return st, fmt.Errorf("context: struct nf_hook_state with pointers set: %w", errNFInvalid)
		}
		if in.PF != NFProtoIPv4 && in.PF != NFProtoIPv6 {
			return st, fmt.Errorf("context: protocol family %d, not NFPROTO_IPV4 or NFPROTO_IPV6: %w", in.PF, errNFInvalid)
		}
		st.Hook, st.PF, st.Out = in.Hook, in.PF, true
	}
	if st.Hook == NFInetLocalOut {
		st.Protocol = EthPIPv6
		if st.PF == NFProtoIPv4 {
			st.Protocol = EthPIP
		}
		return st, nil
	}
	if len(data) < ethHeaderLen+ipv4HeaderLen {
		return st, fmt.Errorf("%d bytes of data, hook %d needs an Ethernet and an IPv4 header: %w", len(data), st.Hook, errNFInvalid)
	}
	st.Eth = true
	st.Protocol, st.PktType = ethTypeTrans(data)
	switch st.Protocol {
	case EthPIP:
		if st.PF != NFProtoIPv4 {
			return st, fmt.Errorf("an IPv4 packet at a family %d hook: %w", st.PF, errNFInvalid)
		}
	case EthPIPv6:
		if len(data) < ethHeaderLen+ipv6HeaderLen {
			return st, fmt.Errorf("%d bytes of data, an IPv6 packet needs %d: %w", len(data), ethHeaderLen+ipv6HeaderLen, errNFInvalid)
		}
		if st.PF != NFProtoIPv6 {
			return st, fmt.Errorf("an IPv6 packet at a family %d hook: %w", st.PF, errNFInvalid)
		}
	default:
		return st, fmt.Errorf("Ethernet protocol %#04x, neither IPv4 nor IPv6: %w", st.Protocol, errNFProto)
	}
	return st, nil
}

// ethTypeTrans is the kernel's eth_type_trans on the loopback device
// (whose address is all zeros): the frame's protocol and packet type.
func ethTypeTrans(frame []byte) (proto uint16, pktType uint8) {
	dst := frame[:6]
	switch {
	case dst[0]&1 != 0:
		// The loopback device's broadcast address is all zeros, so
		// that no frame is a broadcast (PACKET_BROADCAST).
		pktType = PacketMcast
	case [6]byte(dst) != [6]byte{}:
		pktType = PacketOther
	}
	proto = binary.BigEndian.Uint16(frame[12:])
	switch {
	case proto >= 0x0600:
	case binary.BigEndian.Uint16(frame[14:]) == 0xffff:
		proto = 0x0001 // ETH_P_802_3: raw IPX
	default:
		proto = 0x0004 // ETH_P_802_2
	}
	return proto, pktType
}
