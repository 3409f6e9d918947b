package progtype

import "encoding/binary"

// SockSize is the size of struct bpf_sock.
const SockSize = 80

// SockCommon is struct bpf_sock as a PTR_TO_SOCK_COMMON shows it
// (bpf_sock_common_is_valid_access), a description of the socket a
// SockCommonOrNull field points at rather than a program type: read-only,
// everything but type, protocol, mark and priority, the fields narrow as
// bpf_sock_is_valid_access has them. The socket is laid out as the program
// reads it: the kernel's u16 and byte fields zero-extended.
var SockCommon = &Type{Name: "sock_common", ContextSize: SockSize, Fields: sockFields(false)}

// Sock is struct bpf_sock as a PTR_TO_SOCKET shows it
// (bpf_sock_is_valid_access): every field, read-only, laid out as
// SockCommon's.
var Sock = &Type{Name: "sock", ContextSize: SockSize, Fields: sockFields(true)}

// sockFields lays out struct bpf_sock: with full, type, protocol, mark
// and priority readable too.
func sockFields(full bool) []Field {
	start := Field{Read: true, Narrow: true, NarrowStart: true}
	addr := Field{Read: true, Narrow: true}
	var f []Field
	f = append(f, u32Fields(0, "bound_dev_if", Field{Read: true})...)
	f = append(f, u32Fields(4, "family", start)...)
	if full {
		f = append(f, u32Fields(8, "type protocol", start)...)
		f = append(f, u32Fields(16, "mark priority", Field{Read: true})...)
	}
	f = append(f, u32Fields(24, "src_ip4 src_ip6[4]", addr)...)
	f = append(f, u32Fields(44, "src_port", start)...)
	f = append(f, Field{Name: "dst_port", Offset: 48, Size: 4, Read: true, Narrow: true, NarrowSpan: 2})
	f = append(f, u32Fields(52, "dst_ip4 dst_ip6[4]", addr)...)
	f = append(f, u32Fields(72, "state", start)...)
	f = append(f, u32Fields(sockRxQueue, "rx_queue_mapping", rxQueueMapping(start))...)
	return f
}

// rxQueueMapping is bpf_sock.rx_queue_mapping as the kernel converts it:
// stored in the socket's u16 sk_rx_queue_mapping, NO_QUEUE_MAPPING (all
// ones) read as 0xffffffff by a load of four bytes, the stored bytes by
// narrower loads (bpf_sock_convert_ctx_access, as Linux 6.18.44 runs it).
// Sockets here are laid out with the u16 stored, zero-extended.
func rxQueueMapping(f Field) Field {
	f.Backing, f.NoneMinusOne = 2, true
	return f
}

// struct bpf_sock offsets.
const (
	sockFamily   = 4
	sockType     = 8
	sockProtocol = 12
	sockSrcPort  = 44
	sockDstPort  = 48
	sockSrcIP4   = 24
	sockSrcIP6   = 28
	sockDstIP4   = 52
	sockDstIP6   = 56
	sockState    = 72
	sockRxQueue  = 76
	tcpClose     = 7
	noQueueIndex = 0xffff // NO_QUEUE_MAPPING
)

// skbSocket is the socket of the kernel's skb test run: a fresh one
// (TCP_CLOSE, no receive queue) of the packet's family, its local address
// the packet's source and its remote address the destination, as
// socketSetup gives __sk_buff. The IP header's presence was checked by
// skbSetup.
func skbSocket(sk, ctx, frame []byte) bool {
	testRunSocket(frame, sk, sockFamily, sockSrcIP4, sockDstIP4, sockSrcIP6, sockDstIP6)
	le := binary.LittleEndian
	le.PutUint32(sk[sockState:], tcpClose)
	le.PutUint16(sk[sockRxQueue:], noQueueIndex)
	return true
}

// msgSocket is an sk_msg run's socket: a sockmap's TCP socket, established,
// its family, addresses and ports the context input's (sk_msg_md's local
// ones its source, the remote ones its destination; remote_port holds the
// port in network order in its high half, as the kernel shows it).
func msgSocket(sk, ctx, frame []byte) bool {
	le := binary.LittleEndian
	le.PutUint32(sk[sockFamily:], le.Uint32(ctx[skMsgFamily:])&0xffff)
	le.PutUint32(sk[sockType:], sockStream)
	le.PutUint32(sk[sockProtocol:], ipProtoTCP)
	copy(sk[sockSrcIP4:sockSrcIP4+4], ctx[skMsgLocalIP4:])
	copy(sk[sockDstIP4:sockDstIP4+4], ctx[skMsgRemoteIP4:])
	copy(sk[sockSrcIP6:sockSrcIP6+16], ctx[skMsgLocalIP6:])
	copy(sk[sockDstIP6:sockDstIP6+16], ctx[skMsgRemoteIP6:])
	le.PutUint32(sk[sockSrcPort:], le.Uint32(ctx[skMsgLocalPort:])&0xffff)
	le.PutUint16(sk[sockDstPort:], uint16(le.Uint32(ctx[skMsgRemotePort:])>>16))
	le.PutUint32(sk[sockState:], tcpEstablished)
	le.PutUint16(sk[sockRxQueue:], noQueueIndex)
	return true
}

// Socket constants.
const (
	sockStream     = 1
	ipProtoTCP     = 6
	tcpEstablished = 1
)

// TCPSockSize is the size of struct bpf_tcp_sock, what bpf_tcp_sock's
// result points at: u32 fields but for the u64 bytes_received and
// bytes_acked.
const TCPSockSize = 112

// struct bpf_tcp_sock offsets of its u64 fields.
const (
	TCPSockBytesReceived = 80
	TCPSockBytesAcked    = 88
)
