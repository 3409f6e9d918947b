package helper

import (
	"encoding/binary"
	"strings"

	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// The socket casts (net/core/filter.c, bpf_sk_base_func_proto and
// tracing_prog_func_proto): a socket seen as one of the kernel's socket
// structs, or NULL when it is not one. The argument is a socket pointer
// of any kind (ARG_PTR_TO_BTF_ID_SOCK_COMMON: the networking types'
// sockets and BTF pointers to kernel sockets; bpf_skc_to_mptcp_sock takes
// the networking types' only, ARG_PTR_TO_SOCK_COMMON), the result a BTF
// pointer carrying the argument's reference (is_ptr_cast_function; not
// bpf_skc_to_unix_sock). A socket is read where it is: a kernel object of
// the world (Trace.Objects and kernel Memory) by the program's kernel BTF,
// or a socket of the networking world by its struct bpf_sock; the cast
// returns the same address, so loads through the result read the world's
// kernel object, or for a networking socket bpfvm's struct bpf_sock
// image where the kernel struct's fields would be (as
// bpf_cast_to_kern_ctx's result reads the context).
var skcastHelpers = []Helper{
	skcCast("bpf_skc_to_tcp6_sock", "tcp6_sock", true, func(s *sockFacts) bool {
		return s.full() && s.protocol == runner.ProtoTCP && s.family == runner.AFInet6
	}),
	skcCast("bpf_skc_to_tcp_sock", "tcp_sock", true, func(s *sockFacts) bool {
		return s.full() && s.protocol == runner.ProtoTCP
	}),
	skcCast("bpf_skc_to_tcp_timewait_sock", "tcp_timewait_sock", true, func(s *sockFacts) bool {
		return s.tcpProt && s.state == runner.TCPTimeWait
	}),
	skcCast("bpf_skc_to_tcp_request_sock", "tcp_request_sock", true, func(s *sockFacts) bool {
		return s.tcpProt && s.state == runner.TCPNewSynRecv
	}),
	skcCast("bpf_skc_to_udp6_sock", "udp6_sock", true, func(s *sockFacts) bool {
		return s.full() && s.protocol == runner.ProtoUDP && s.typ == sockDgram && s.family == runner.AFInet6
	}),
	skcCast("bpf_skc_to_unix_sock", "unix_sock", false, func(s *sockFacts) bool {
		return s.full() && s.family == afUnix
	}),
	{
		Proto: Proto{Name: "bpf_skc_to_mptcp_sock", Args: [5]ArgType{ArgSockCommon}, Ret: RetBTFIDOrNull, RetBTF: "mptcp_sock", Cast: true},
		Func:  helperSkcToMPTCPSock,
	},
}

// Socket constants the casts test.
const (
	afUnix     = 1
	sockDgram  = 2
	protoMPTCP = 262
)

// skcCast is the entry of a cast to struct ret whose test is ok.
func skcCast(name, ret string, cast bool, ok func(*sockFacts) bool) Helper {
	return Helper{
		Proto: Proto{Name: name, Args: [5]ArgType{ArgSockBTF}, Ret: RetBTFIDOrNull, RetBTF: ret, Cast: cast},
		Func: func(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
			if s, found := readSock(e, runner.Of(e), r1); found && ok(&s) {
				return r1, nil
			}
			return 0, nil
		},
	}
}

// helperSkcToMPTCPSock: the MPTCP socket of an MPTCP socket itself, or
// of a TCP subflow of one (bpf_mptcp_sock_from_sock): the subflow
// context's conn, icsk_ulp_data's in a kernel object of the world.
func helperSkcToMPTCPSock(e *vm.Env, r1, _, _, _, _ uint64) (uint64, error) {
	r := runner.Of(e)
	s, found := readSock(e, r, r1)
	if !found || !s.full() {
		return 0, nil
	}
	switch {
	case s.protocol == protoMPTCP:
		return r1, nil
	case s.protocol == runner.ProtoTCP && s.mptcp:
		return s.conn, nil
	}
	return 0, nil
}

// sockFacts is what the casts test of a socket.
type sockFacts struct {
	family, typ, protocol uint16
	state                 uint8
	// tcpProt says sk_prot is the kernel's tcp_prot or tcpv6_prot.
	tcpProt bool
	// mptcp is tcp_sk(sk)->is_mptcp, conn its subflow's MPTCP socket.
	mptcp bool
	conn  uint64
}

// full is sk_fullsock: not a time-wait or request mini socket.
func (s *sockFacts) full() bool {
	return s.state != runner.TCPTimeWait && s.state != runner.TCPNewSynRecv
}

// readSock reads the socket at addr: a networking socket of the run's,
// or a kernel object of the world.
func readSock(e *vm.Env, r *runner.Runner, addr uint64) (sockFacts, bool) {
	if addr == 0 {
		return sockFacts{}, false
	}
	if ref, ok := r.Sock(addr); ok {
		// struct bpf_sock: family at 4, type at 8, protocol at 12.
		b := vm.Slice(ref.Addr, progtype.SockSize)
		state, proto := runner.SockState(ref)
		s := sockFacts{
			family: uint16(binary.LittleEndian.Uint32(b[4:])), typ: uint16(binary.LittleEndian.Uint32(b[8:])),
			protocol: uint16(proto), state: state,
		}
		s.tcpProt = proto == runner.ProtoTCP
		return s, true
	}
	l := layoutOf(r.Program(), sockLayoutKey{}, findSockLayout)
	if l == nil {
		return sockFacts{}, false
	}
	w := r.Trace()
	var s sockFacts
	s.family = uint16(readKernel(e, w, addr+uint64(l.family), 2))
	s.state = uint8(readKernel(e, w, addr+uint64(l.state), 1))
	s.typ = uint16(readKernel(e, w, addr+uint64(l.typ), 2))
	s.protocol = uint16(readKernel(e, w, addr+uint64(l.protocol), 2))
	if prot := readKernel(e, w, addr+uint64(l.prot), 8); prot != 0 {
		name, _ := w.Read(prot+uint64(l.protoName), 32, false)
		n, _, _ := strings.Cut(string(name), "\x00")
		s.tcpProt = n == "TCP" || n == "TCPv6"
	}
	if l.mptcpBit >= 0 {
		s.mptcp = readKernel(e, w, addr+uint64(l.mptcpBit/8), 1)>>(l.mptcpBit%8)&1 != 0
		if ctx := readKernel(e, w, addr+uint64(l.ulpData), 8); ctx != 0 && s.mptcp {
			s.conn = readKernel(e, w, ctx+uint64(l.conn), 8)
		}
	}
	return s, true
}

// readKernel reads a little integer of a kernel object: in the run's own
// memory (an iterator's element images), else the world's kernel memory;
// 0 where neither holds it (the kernel reads its objects without
// faulting).
func readKernel(e *vm.Env, w *runner.Trace, addr, size uint64) uint64 {
	var b []byte
	if readableSpan(e, addr) >= size {
		b = vm.Slice(addr, size)
	} else if kb, ok := w.Read(addr, size, false); ok {
		b = kb
	} else {
		return 0
	}
	var v [8]byte
	copy(v[:], b)
	return binary.LittleEndian.Uint64(v[:])
}

// sockLayout is where a kernel BTF puts what the casts read.
type sockLayout struct {
	family, state, typ, protocol, prot, protoName uint32
	// mptcpBit is tcp_sock's is_mptcp bit (-1 without MPTCP), ulpData
	// inet_connection_sock's icsk_ulp_data and conn the subflow
	// context's conn.
	mptcpBit      int
	ulpData, conn uint32
}

// sockLayoutKey keys the program's sockLayout (runner.Program.Layout).
type sockLayoutKey struct{}

func findSockLayout(spec *btf.Spec) *sockLayout {
	l := &sockLayout{mptcpBit: -1}
	for _, f := range []struct {
		typ, member string
		off         *uint32
	}{
		{"sock", "skc_family", &l.family}, {"sock", "skc_state", &l.state}, {"sock", "sk_type", &l.typ},
		{"sock", "sk_protocol", &l.protocol}, {"sock", "skc_prot", &l.prot}, {"proto", "name", &l.protoName},
	} {
		bits, ok := memberBits(spec, f.typ, f.member)
		if !ok {
			return nil
		}
		*f.off = bits / 8
	}
	if bits, ok := memberBits(spec, "tcp_sock", "is_mptcp"); ok {
		u, ok1 := memberBits(spec, "inet_connection_sock", "icsk_ulp_data")
		c, ok2 := memberBits(spec, "mptcp_subflow_context", "conn")
		if ok1 && ok2 {
			l.mptcpBit, l.ulpData, l.conn = int(bits), u/8, c/8
		}
	}
	return l
}

// memberBits finds the bit offset of member in struct typ, looking into
// its anonymous members and then the structs it embeds.
func memberBits(spec *btf.Spec, typ, member string) (uint32, bool) {
	var s *btf.Struct
	if err := spec.TypeByName(typ, &s); err != nil {
		return 0, false
	}
	return findBits(s.Members, member, 0)
}

func findBits(ms []btf.Member, name string, depth int) (uint32, bool) {
	if depth > 16 {
		return 0, false
	}
	for _, m := range ms {
		if m.Name == name {
			return uint32(m.Offset), true
		}
	}
	for _, m := range ms {
		var inner []btf.Member
		switch u := btf.UnderlyingType(m.Type).(type) {
		case *btf.Struct:
			inner = u.Members
		case *btf.Union:
			inner = u.Members
		default:
			continue
		}
		if off, ok := findBits(inner, name, depth+1); ok {
			return uint32(m.Offset) + off, true
		}
	}
	return 0, false
}
