package helper

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/vm"
)

// syncookieHelpers make and check TCP SYN cookies (net/core/filter.c,
// CONFIG_SYN_COOKIES): for a listener of the host's world
// (bpf_tcp_gen_syncookie, bpf_tcp_check_syncookie) or for headers alone
// (the raw helpers). Argument validation and errors are the kernel's; the
// cookies are bpfvm's own (see syncookie), deterministic for a given
// runner.Syncookies, so a cookie bpfvm made is valid for bpfvm and one the
// kernel made is not (their secrets differ), and the MSS the cookie
// encodes is the kernel's.
var syncookieHelpers = []Helper{
	{Proto: Proto{Name: "bpf_tcp_check_syncookie", Args: sockCookieArgs, PktAccess: true}, Func: helperTCPCheckSyncookie},
	{Proto: Proto{Name: "bpf_tcp_gen_syncookie", Args: sockCookieArgs, PktAccess: true}, Func: helperTCPGenSyncookie},
	{Proto: Proto{Name: "bpf_tcp_raw_gen_syncookie_ipv4", Args: rawGenArgs, ArgSize: [5]int32{ipv4HdrLen}, PktAccess: true}, Func: rawGenSyncookie(false)},
	{Proto: Proto{Name: "bpf_tcp_raw_gen_syncookie_ipv6", Args: rawGenArgs, ArgSize: [5]int32{ipv6HdrLen}, PktAccess: true}, Func: rawGenSyncookie(true)},
	{Proto: Proto{Name: "bpf_tcp_raw_check_syncookie_ipv4", Args: [5]ArgType{ArgFixedMem, ArgFixedMem}, ArgSize: [5]int32{ipv4HdrLen, tcpHdrLen}, PktAccess: true}, Func: rawCheckSyncookie(false)},
	{Proto: Proto{Name: "bpf_tcp_raw_check_syncookie_ipv6", Args: [5]ArgType{ArgFixedMem, ArgFixedMem}, ArgSize: [5]int32{ipv6HdrLen, tcpHdrLen}, PktAccess: true}, Func: rawCheckSyncookie(true)},
}

// rawGenArgs are the raw gen helpers': the IP header, the TCP header and
// its size, which 6.18 lets be 0 (the helper then fails with EINVAL).
var rawGenArgs = [5]ArgType{ArgFixedMem, ArgMem, ArgConstSizeOrZero}

// sockCookieArgs are bpf_tcp_gen_syncookie's and bpf_tcp_check_syncookie's:
// a socket, the IP header and its size, the TCP header and its size.
var sockCookieArgs = [5]ArgType{ArgSockBTF, ArgMem, ArgConstSize, ArgMem, ArgConstSize}

// Header sizes and fields.
const (
	ipv4HdrLen = 20
	ipv6HdrLen = 40
	tcpHdrLen  = 20

	tcpFIN = 0x01
	tcpSYN = 0x02
	tcpRST = 0x04
	tcpACK = 0x10
)

// eprotonosupport is the syncookie helpers' error for an IP version but
// 4 and 6.
const eprotonosupport = 93

// The MSS values a cookie can encode, by family (the kernel's msstab and
// msstab in net/ipv6/syncookies.c), and the MSS of a SYN without the
// option.
var (
	mssTab4 = [4]uint16{536, 1300, 1440, 1460}
	mssTab6 = [4]uint16{1220, 1420, 1440, 8940}
)

const (
	mssDefault4 = 536  // TCP_MSS_DEFAULT
	mssDefault6 = 1220 // IPV6_MIN_MTU - tcp and ipv6 headers
)

// A cookie is the standard SYN cookie layout (as the kernel's
// secure_tcp_syn_cookie): h0 + the client's ISN + minute<<24 +
// ((h1(minute) + MSS index) & 0xffffff), h0 and h1 keyed hashes of the
// addresses and ports (bpfvm's: the first four bytes of SHA-256 over the
// secret, a salt, the minute and the tuple). A check undoes it for the
// last two minutes and takes an index below 4.
const (
	cookieBits = 24
	cookieMask = 1<<cookieBits - 1
	cookieAge  = 2 // MAX_SYNCOOKIE_AGE
)

// cookieTuple is what a cookie is bound to.
type cookieTuple struct {
	src, dst     []byte // 4 or 16 bytes
	sport, dport uint16
	seq          uint32 // the client's ISN
	mssTab       *[4]uint16
	secret       [16]byte
	minute       uint32
	defaultMSS   uint16
}

// hash is the keyed hash h0 (salt 0, minute 0) or h1 (salt 1).
func (t *cookieTuple) hash(salt byte, minute uint32) uint32 {
	var b [16 + 1 + 4 + 32 + 4]byte
	n := copy(b[:], t.secret[:])
	b[n] = salt
	n++
	binary.BigEndian.PutUint32(b[n:], minute)
	n += 4
	n += copy(b[n:], t.src)
	n += copy(b[n:], t.dst)
	binary.BigEndian.PutUint16(b[n:], t.sport)
	binary.BigEndian.PutUint16(b[n+2:], t.dport)
	sum := sha256.Sum256(b[:n+4])
	return binary.BigEndian.Uint32(sum[:])
}

// make returns the cookie for an MSS and the MSS it encodes: the largest
// of the table at most mss (the smallest for less).
func (t *cookieTuple) make(mss uint16) (uint32, uint16) {
	idx := len(t.mssTab) - 1
	for ; idx > 0 && mss < t.mssTab[idx]; idx-- {
	}
	c := t.hash(0, 0) + t.seq + t.minute<<cookieBits + (t.hash(1, t.minute)+uint32(idx))&cookieMask
	return c, t.mssTab[idx]
}

// valid reports whether cookie is one make gave in the last two minutes.
func (t *cookieTuple) valid(cookie uint32) bool {
	c := cookie - t.hash(0, 0) - t.seq
	age := (t.minute - c>>cookieBits) & (0xffffffff >> cookieBits)
	if age >= cookieAge {
		return false
	}
	return (c-t.hash(1, t.minute-age))&cookieMask < uint32(len(t.mssTab))
}

// tupleOf reads the tuple of an IPv4 or IPv6 header and a TCP header;
// isn is the client's ISN (for an ACK, its sequence number - 1).
func tupleOf(r *runner.Runner, iph, th []byte, v6 bool, isn uint32) *cookieTuple {
	sc := r.Syncookies()
	t := &cookieTuple{
		sport: binary.BigEndian.Uint16(th[0:]), dport: binary.BigEndian.Uint16(th[2:]), seq: isn,
		secret: sc.Secret, minute: sc.Minute, mssTab: &mssTab4, defaultMSS: mssDefault4,
	}
	if v6 {
		t.src, t.dst, t.mssTab, t.defaultMSS = iph[8:24], iph[24:40], &mssTab6, mssDefault6
	} else {
		t.src, t.dst = iph[12:16], iph[16:20]
	}
	return t
}

// parseMSS returns the MSS option of a TCP header of doff*4 bytes, 0 for
// none (the kernel's tcp_parse_mss_option with no user MSS): the options
// are walked until the end, an EOL or a malformed one.
func parseMSS(th []byte) uint16 {
	end := min(len(th), int(th[12]>>4)*4)
	if end <= tcpHdrLen {
		// A data offset short of the header: no options (the helpers
		// refuse such headers before they parse).
		return 0
	}
	opts := th[tcpHdrLen:end]
	var mss uint16
	for len(opts) > 0 {
		switch opts[0] {
		case 0: // EOL
			return mss
		case 1: // NOP
			opts = opts[1:]
			continue
		}
		if len(opts) < 2 || opts[1] < 2 || int(opts[1]) > len(opts) {
			return mss
		}
		if opts[0] == 2 && opts[1] == 4 {
			if v := binary.BigEndian.Uint16(opts[2:]); v != 0 {
				mss = v
			}
		}
		opts = opts[opts[1]:]
	}
	return mss
}

// headers returns the memory of an IP header and a TCP header argument.
func headers(e *vm.Env, iph, iphLen, th, thLen uint64) ([]byte, []byte, error) {
	ip, err := e.Bytes(iph, uint64(uint32(iphLen)), false)
	if err != nil {
		return nil, nil, err
	}
	t, err := e.Bytes(th, uint64(uint32(thLen)), false)
	if err != nil {
		return nil, nil, err
	}
	return ip, t, nil
}

// listener resolves the socket argument of the socket helpers: its
// struct bpf_sock's family and whether it is an IPv6-only socket; ok is
// false unless it is a TCP listener.
func listener(r *runner.Runner, addr uint64) (ref runner.SockRef, family uint32, v6only, ok bool, err error) {
	ref, found := r.Sock(addr)
	if !found {
		return ref, 0, false, false, fmt.Errorf("%w: R1 %#x is not a socket", vm.ErrMemory, addr)
	}
	state, proto := runner.SockState(ref)
	family = binary.LittleEndian.Uint32(vm.Slice(ref.Addr+bpfSockFamily, 4))
	v6only = ref.Socket != nil && ref.Socket.V6Only
	return ref, family, v6only, proto == runner.ProtoTCP && state == runner.TCPListen, nil
}

// helperTCPGenSyncookie is bpf_tcp_gen_syncookie(sk, iph, iph_len, th,
// th_len): a cookie for the SYN th to listener sk, with the MSS it encodes
// in bits 32-47; the kernel's errors in its order (EINVAL for a header
// size, not a listener, not a plain SYN, the wrong family; ENOENT when
// cookies are off or not due: tcp_syncookies 1 without Socket.SynFlood;
// EPROTONOSUPPORT for an IP version but 4 and 6). Making one marks the
// listener as overflowed for the rest of the run.
func helperTCPGenSyncookie(e *vm.Env, r1, r2, r3, r4, r5 uint64) (uint64, error) {
	r := runner.Of(e)
	iph, th, err := headers(e, r2, r3, r4, r5)
	if err != nil {
		return 0, err
	}
	if len(th) < tcpHdrLen || len(th) != int(th[12]>>4)*4 {
		return neg(einval), nil
	}
	ref, family, v6only, ok, err := listener(r, r1)
	if err != nil || !ok {
		return neg(einval), err
	}
	sc := r.Syncookies()
	if sc.Mode == 0 {
		return neg(enoent), nil
	}
	if th[13]&(tcpSYN|tcpACK|tcpFIN|tcpRST) != tcpSYN {
		return neg(einval), nil
	}
	if len(iph) < ipv4HdrLen {
		return neg(einval), nil
	}
	v6, errno := cookieFamily(iph, family, v6only)
	if errno != 0 {
		return neg(errno), nil
	}
	if sc.Mode != 2 && (ref.Socket == nil || !ref.Socket.SynFlood) {
		return neg(enoent), nil
	}
	t := tupleOf(r, iph, th, v6, binary.BigEndian.Uint32(th[4:]))
	mss := parseMSS(th)
	if mss == 0 {
		mss = t.defaultMSS
	}
	cookie, mss := t.make(mss)
	r.SynOverflow(ref.Addr)
	return uint64(cookie) | uint64(mss)<<32, nil
}

// helperTCPCheckSyncookie is bpf_tcp_check_syncookie(sk, iph, iph_len,
// th, th_len): 0 if the ACK th carries a valid cookie of listener sk;
// the kernel's errors in its order (EINVAL for a header size, not a
// listener, cookies off, the wrong family; ENOENT for a segment that is
// not a plain ACK, a listener that did not overflow recently, an invalid
// cookie; EPROTONOSUPPORT for an IP version but 4 and 6).
func helperTCPCheckSyncookie(e *vm.Env, r1, r2, r3, r4, r5 uint64) (uint64, error) {
	r := runner.Of(e)
	iph, th, err := headers(e, r2, r3, r4, r5)
	if err != nil {
		return 0, err
	}
	if len(th) < tcpHdrLen {
		return neg(einval), nil
	}
	ref, family, v6only, ok, err := listener(r, r1)
	if err != nil || !ok {
		return neg(einval), err
	}
	if r.Syncookies().Mode == 0 {
		return neg(einval), nil
	}
	if th[13]&tcpACK == 0 || th[13]&(tcpRST|tcpSYN) != 0 {
		return neg(enoent), nil
	}
	if len(iph) < ipv4HdrLen {
		return neg(einval), nil
	}
	if !r.SynOverflowed(ref) {
		return neg(enoent), nil
	}
	v6, errno := cookieFamily(iph, family, v6only)
	if errno != 0 {
		return neg(errno), nil
	}
	if !checkAck(r, iph, th, v6) {
		return neg(enoent), nil
	}
	return 0, nil
}

// checkAck reports whether the ACK th acknowledges a cookie.
func checkAck(r *runner.Runner, iph, th []byte, v6 bool) bool {
	be := binary.BigEndian
	t := tupleOf(r, iph, th, v6, be.Uint32(th[4:])-1)
	return t.valid(be.Uint32(th[8:]) - 1)
}

// rawGenSyncookie returns bpf_tcp_raw_gen_syncookie_ipv4 or _ipv6 (iph,
// th, th_len): a cookie for the SYN's headers with the MSS it encodes in
// bits 32-47, whatever the segment's flags; EINVAL for a th_len that is
// short or not the header's data offset.
func rawGenSyncookie(v6 bool) vm.Helper {
	size := uint64(ipv4HdrLen)
	if v6 {
		size = ipv6HdrLen
	}
	return func(e *vm.Env, r1, r2, r3, _, _ uint64) (uint64, error) {
		iph, th, err := headers(e, r1, size, r2, r3)
		if err != nil {
			return 0, err
		}
		if len(th) < tcpHdrLen || len(th) != int(th[12]>>4)*4 {
			return neg(einval), nil
		}
		t := tupleOf(runner.Of(e), iph, th, v6, binary.BigEndian.Uint32(th[4:]))
		mss := parseMSS(th)
		if mss == 0 {
			mss = t.defaultMSS
		}
		cookie, mss := t.make(mss)
		return uint64(cookie) | uint64(mss)<<32, nil
	}
}

// rawCheckSyncookie returns bpf_tcp_raw_check_syncookie_ipv4 or _ipv6
// (iph, th): 0 if the ACK's headers carry a valid cookie, -EACCES
// otherwise, whatever the segment's flags.
func rawCheckSyncookie(v6 bool) vm.Helper {
	size := uint64(ipv4HdrLen)
	if v6 {
		size = ipv6HdrLen
	}
	return func(e *vm.Env, r1, r2, _, _, _ uint64) (uint64, error) {
		iph, th, err := headers(e, r1, size, r2, tcpHdrLen)
		if err != nil {
			return 0, err
		}
		if !checkAck(runner.Of(e), iph, th, v6) {
			return neg(eacces), nil
		}
		return 0, nil
	}
}

// cookieFamily reports whether the IP header of a syncookie helper is
// IPv6, or the errno the kernel gives when it does not fit the listener:
// an IPv4 header for a v6-only socket or an IPv6 one for an IPv4 socket
// (-EINVAL), another version (-EPROTONOSUPPORT).
func cookieFamily(iph []byte, family uint32, v6only bool) (bool, int64) {
	switch iph[0] >> 4 {
	case 4:
		if family == runner.AFInet6 && v6only {
			return false, einval
		}
		return false, 0
	case 6:
		if len(iph) < ipv6HdrLen || family != runner.AFInet6 {
			return false, einval
		}
		return true, 0
	}
	return false, eprotonosupport
}
