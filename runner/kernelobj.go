package runner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/vm"
)

// KernelObject is an object of the traced world's kernel memory: a value
// of a kernel type (a struct such as task_struct or tcp_sock, as the BTF
// the program is loaded against lays it out) at an address of the
// world's (Addr, best a kernel-like one such as 0xffff8880_00100000, which
// no host memory of the run can shadow). Tracing programs reach it
// through pointers their context, helpers or other objects hold: probe
// loads through BTF pointers (the kernel's BPF_PROBE_MEM) and the
// bpf_probe_read_kernel family read its bytes, and helpers that take a
// kernel object (the socket casts, bpf_d_path, bpf_snprintf_btf) read it
// by its Type. Runs only read an object; the host may change Data
// between runs.
type KernelObject struct {
	// Addr is the object's address in the world's kernel memory.
	Addr uint64
	// Type is the object's type (a *btf.Struct, usually), whose size
	// Data has; nil for untyped bytes, which probe loads read but
	// helpers that need a type do not take.
	Type btf.Type
	// Data is the object's bytes, in the host's byte order.
	Data []byte
}

// ErrNoField is returned by KernelObject.Set and Offset for a path that
// does not name a member of the object's type.
var ErrNoField = errors.New("no such member")

// DefaultKernelTypes gives the kernel BTF objects are laid out by when
// none is given (set by package bpfvm: the default CO-RE target).
var DefaultKernelTypes func() *btf.Spec

// NewKernelObject returns a zeroed object of the struct or union named
// name in types (nil: DefaultKernelTypes's) at addr.
func NewKernelObject(types *btf.Spec, name string, addr uint64) (*KernelObject, error) {
	if types == nil && DefaultKernelTypes != nil {
		types = DefaultKernelTypes()
	}
	if types == nil {
		return nil, fmt.Errorf("kernel object %s: no kernel BTF", name)
	}
	var t btf.Type
	var st *btf.Struct
	if err := types.TypeByName(name, &st); err == nil {
		t = st
	} else {
		var u *btf.Union
		if err := types.TypeByName(name, &u); err != nil {
			return nil, fmt.Errorf("kernel object %s: %w", name, err)
		}
		t = u
	}
	size, err := btf.Sizeof(t)
	if err != nil {
		return nil, fmt.Errorf("kernel object %s: %w", name, err)
	}
	return &KernelObject{Addr: addr, Type: t, Data: make([]byte, size)}, nil
}

// End is the address past the object.
func (o *KernelObject) End() uint64 { return o.Addr + uint64(len(o.Data)) }

// objField is a member a path names: its byte offset, its type, and for a
// bitfield its bit offset in the byte and its width.
type objField struct {
	off        uint32
	typ        btf.Type
	bit, width uint32
}

// Offset returns the byte offset in the object of the member path names:
// member names separated by dots, each found in the enclosing struct or
// union or in its anonymous members, else as the first member of that
// name in the structs it embeds, depth first in declaration order (so a
// tcp_sock's "skc_family" is inet_conn.icsk_inet.sk.__sk_common.skc_family,
// as C's sk_family macros reach it), with "[i]" after an array member for
// its element i.
func (o *KernelObject) Offset(path string) (uint32, error) {
	f, err := o.field(path)
	return f.off, err
}

func (o *KernelObject) field(path string) (objField, error) {
	if o.Type == nil {
		return objField{}, fmt.Errorf("%s: untyped kernel object: %w", path, ErrNoField)
	}
	f := objField{typ: o.Type}
	for part := range strings.SplitSeq(path, ".") {
		name, index, hasIndex := strings.Cut(part, "[")
		ms, ok := members(f.typ)
		if !ok {
			return objField{}, fmt.Errorf("%s: %s is not a struct or union: %w", path, name, ErrNoField)
		}
		m, off, ok := findMember(ms, name)
		if !ok {
			m, off, ok = findEmbedded(ms, name, 0)
		}
		if !ok {
			return objField{}, fmt.Errorf("%s: %s in %s: %w", path, name, typeName(f.typ), ErrNoField)
		}
		f.off += off
		f.typ = m.Type
		f.bit, f.width = 0, 0
		if m.BitfieldSize > 0 {
			f.bit, f.width = uint32(m.Offset)%8, uint32(m.BitfieldSize)
		}
		if hasIndex {
			i, err := strconv.ParseUint(strings.TrimSuffix(index, "]"), 0, 32)
			a, ok := btf.UnderlyingType(f.typ).(*btf.Array)
			if err != nil || !ok || uint32(i) >= a.Nelems {
				return objField{}, fmt.Errorf("%s: bad index into %s: %w", path, name, ErrNoField)
			}
			es, err := btf.Sizeof(a.Type)
			if err != nil {
				return objField{}, fmt.Errorf("%s: %w", path, err)
			}
			f.off += uint32(i) * uint32(es)
			f.typ = a.Type
		}
	}
	return f, nil
}

// members returns the members of a struct or union type.
func members(t btf.Type) ([]btf.Member, bool) {
	switch u := btf.UnderlyingType(t).(type) {
	case *btf.Struct:
		return u.Members, true
	case *btf.Union:
		return u.Members, true
	}
	return nil, false
}

// findMember finds member name in ms or their anonymous members, with
// its byte offset (for a bitfield, the byte holding its first bit).
func findMember(ms []btf.Member, name string) (btf.Member, uint32, bool) {
	for _, m := range ms {
		if m.Name == name {
			return m, uint32(m.Offset) / 8, true
		}
		if m.Name != "" {
			continue
		}
		if inner, ok := members(m.Type); ok {
			if im, off, ok := findMember(inner, name); ok {
				return im, uint32(m.Offset)/8 + off, true
			}
		}
	}
	return btf.Member{}, 0, false
}

// findEmbedded finds member name in the structs and unions ms embeds
// (not through pointers), depth first in declaration order.
func findEmbedded(ms []btf.Member, name string, depth int) (btf.Member, uint32, bool) {
	if depth > 16 {
		return btf.Member{}, 0, false
	}
	for _, m := range ms {
		inner, ok := members(m.Type)
		if !ok {
			continue
		}
		im, off, ok := findMember(inner, name)
		if !ok {
			im, off, ok = findEmbedded(inner, name, depth+1)
		}
		if ok {
			return im, uint32(m.Offset)/8 + off, true
		}
	}
	return btf.Member{}, 0, false
}

func typeName(t btf.Type) string {
	if n := t.TypeName(); n != "" {
		return n
	}
	return fmt.Sprintf("%T", t)
}

// Set stores v in the member path names (see Offset): an integer
// (int, uint and their sized kinds, bool) in an integer, enum, pointer
// or bitfield member, truncated to its size; a *KernelObject's address
// in a pointer; a string or []byte in a char array (NUL-padded, cut to
// leave a NUL for a string); a netip.Addr in its 4 or 16 bytes, in
// network order, in a member of that size (__be32 skc_daddr, struct
// in6_addr skc_v6_daddr).
func (o *KernelObject) Set(path string, v any) error {
	f, err := o.field(path)
	if err != nil {
		return fmt.Errorf("kernel object %s: %w", typeName(o.Type), err)
	}
	size, err := btf.Sizeof(f.typ)
	if err != nil {
		return fmt.Errorf("kernel object %s: %s: %w", typeName(o.Type), path, err)
	}
	dst := o.Data[f.off:]
	var n uint64
	switch x := v.(type) {
	case *KernelObject:
		n = x.Addr
	case bool:
		if x {
			n = 1
		}
	case int:
		n = uint64(x)
	case int8:
		n = uint64(x)
	case int16:
		n = uint64(x)
	case int32:
		n = uint64(x)
	case int64:
		n = uint64(x)
	case uint:
		n = uint64(x)
	case uint8:
		n = uint64(x)
	case uint16:
		n = uint64(x)
	case uint32:
		n = uint64(x)
	case uint64:
		n = x
	case string:
		if size == 0 {
			return fmt.Errorf("kernel object %s: %s: a string needs a char array", typeName(o.Type), path)
		}
		clear(dst[:size])
		copy(dst[:size-1], x)
		return nil
	case []byte:
		clear(dst[:size])
		copy(dst[:size], x)
		return nil
	case netip.Addr:
		b := x.AsSlice()
		if len(b) != size {
			return fmt.Errorf("kernel object %s: %s: %d-byte address in a %d-byte member", typeName(o.Type), path, len(b), size)
		}
		copy(dst, b)
		return nil
	default:
		return fmt.Errorf("kernel object %s: %s: cannot store a %T", typeName(o.Type), path, v)
	}
	if f.width > 0 {
		// A bitfield: its bits from the first byte's bit f.bit on, in
		// a little-endian word of the bytes it spans.
		span := (f.bit + f.width + 7) / 8
		var w [8]byte
		copy(w[:], dst[:span])
		word := binary.LittleEndian.Uint64(w[:])
		mask := (uint64(1)<<f.width - 1) << f.bit
		word = word&^mask | n<<f.bit&mask
		binary.LittleEndian.PutUint64(w[:], word)
		copy(dst[:span], w[:span])
		return nil
	}
	switch size {
	case 1:
		dst[0] = byte(n)
	case 2:
		binary.NativeEndian.PutUint16(dst, uint16(n))
	case 4:
		binary.NativeEndian.PutUint32(dst, uint32(n))
	case 8:
		binary.NativeEndian.PutUint64(dst, n)
	default:
		return fmt.Errorf("kernel object %s: %s: cannot store an integer in %d bytes", typeName(o.Type), path, size)
	}
	return nil
}

// Get reads the integer (up to 8 bytes) in the member path names.
func (o *KernelObject) Get(path string) (uint64, error) {
	f, err := o.field(path)
	if err != nil {
		return 0, fmt.Errorf("kernel object %s: %w", typeName(o.Type), err)
	}
	size, err := btf.Sizeof(f.typ)
	if err != nil || size > 8 {
		return 0, fmt.Errorf("kernel object %s: %s is not an integer", typeName(o.Type), path)
	}
	var w [8]byte
	span := size
	if f.width > 0 {
		span = int(f.bit+f.width+7) / 8
	}
	copy(w[:], o.Data[f.off:f.off+uint32(span)])
	n := binary.LittleEndian.Uint64(w[:])
	if f.width > 0 {
		return n >> f.bit & (uint64(1)<<f.width - 1), nil
	}
	return n, nil
}

// object finds the world's kernel object holding addr.
func (t *Trace) object(addr uint64) *KernelObject {
	for _, o := range t.Objects {
		if o != nil && addr >= o.Addr && addr-o.Addr < uint64(len(o.Data)) {
			return o
		}
	}
	return nil
}

// ObjectAt returns the world's typed kernel object that starts at addr,
// or nil.
func (t *Trace) ObjectAt(addr uint64) *KernelObject {
	if o := t.object(addr); o != nil && o.Addr == addr && o.Type != nil {
		return o
	}
	return nil
}

// kernelMemory appends to k the world's kernel memory, the spans probe
// loads read (vm.Env.Kernel): its objects, then its kernel Memory.
func (t *Trace) kernelMemory(k []vm.KernelMemory) []vm.KernelMemory {
	for _, o := range t.Objects {
		if o != nil && len(o.Data) > 0 {
			k = append(k, vm.KernelMemory{Addr: o.Addr, Data: o.Data})
		}
	}
	for _, m := range t.Memory {
		if !m.User && len(m.Data) > 0 {
			k = append(k, vm.KernelMemory{Addr: m.Addr, Data: m.Data})
		}
	}
	return k
}

// KernelObject lays the socket out as the kernel's struct for it at addr,
// by types: a tcp_sock (tcp6_sock for an IPv6 socket) for TCP, a
// udp_sock (udp6_sock) for UDP, with its family, type, protocol and state
// (TCP_ESTABLISHED for a connected socket, as State's default), its
// addresses and ports (skc_rcv_saddr, skc_daddr, skc_num, skc_dport and
// their IPv6 kind, inet_saddr and inet_sport), its mark, priority and
// bound device, and for TCP the counters of its TCPInfo in the members
// bpf_tcp_sock reads them from (srtt_us, snd_cwnd, ...; srtt_us is the
// kernel's, the smoothed RTT in microseconds << 3). Its sk_prot is 0: set
// it (skc_prot) to a struct proto object named "TCP" or "TCPv6" for the
// casts that test it. A time-wait or request socket (State 6 or 12) is a
// tcp_timewait_sock or tcp_request_sock, whose sock_common only is set.
func (s *Socket) KernelObject(types *btf.Spec, addr uint64) (*KernelObject, error) {
	six := s.family() == AFInet6
	name := "udp_sock"
	switch {
	case s.Protocol == ProtoTCP && s.state() == TCPTimeWait:
		name = "tcp_timewait_sock"
	case s.Protocol == ProtoTCP && s.state() == TCPNewSynRecv:
		name = "tcp_request_sock"
	case s.Protocol == ProtoTCP && six:
		name = "tcp6_sock"
	case s.Protocol == ProtoTCP:
		name = "tcp_sock"
	case six:
		name = "udp6_sock"
	}
	o, err := NewKernelObject(types, name, addr)
	if err != nil {
		return nil, err
	}
	typ := uint16(2) // SOCK_DGRAM
	if s.Protocol == ProtoTCP {
		typ = 1 // SOCK_STREAM
	}
	lv4, rv4 := v4Of(s.Local.Addr()), v4Of(s.Remote.Addr())
	sets := []struct {
		path string
		v    any
	}{
		{"skc_family", uint16(s.family())}, {"skc_state", s.state()},
		{"skc_rcv_saddr", lv4[:]}, {"skc_daddr", rv4[:]},
		{"skc_num", s.Local.Port()}, {"skc_dport", bigEndian16(s.Remote.Port())},
		{"skc_bound_dev_if", s.BoundDevIf},
	}
	if six {
		lv6, rv6 := v6Of(s.Local.Addr(), s), v6Of(s.Remote.Addr(), s)
		sets = append(sets, struct {
			path string
			v    any
		}{"skc_v6_rcv_saddr", lv6[:]}, struct {
			path string
			v    any
		}{"skc_v6_daddr", rv6[:]})
	}
	if fullsock(s.state()) {
		sets = append(sets, []struct {
			path string
			v    any
		}{
			{"sk_type", typ}, {"sk_protocol", uint16(s.Protocol)}, {"sk_mark", s.Mark}, {"sk_priority", s.Priority},
			{"inet_saddr", lv4[:]}, {"inet_sport", bigEndian16(s.Local.Port())},
		}...)
	}
	if s.Protocol == ProtoTCP && fullsock(s.state()) {
		t := &s.TCP
		for _, f := range []struct {
			path string
			v    any
		}{
			{"snd_cwnd", t.SndCwnd}, {"srtt_us", t.SrttUs}, {"snd_ssthresh", t.SndSsthresh},
			{"rcv_nxt", t.RcvNxt}, {"snd_nxt", t.SndNxt}, {"snd_una", t.SndUna}, {"mss_cache", t.MssCache},
			{"packets_out", t.PacketsOut}, {"retrans_out", t.RetransOut}, {"total_retrans", t.TotalRetrans},
			{"segs_in", t.SegsIn}, {"data_segs_in", t.DataSegsIn}, {"segs_out", t.SegsOut},
			{"data_segs_out", t.DataSegsOut}, {"lost_out", t.LostOut}, {"sacked_out", t.SackedOut},
			{"bytes_received", t.BytesReceived}, {"bytes_acked", t.BytesAcked}, {"dsack_dups", t.DsackDups},
			{"delivered", t.Delivered}, {"delivered_ce", t.DeliveredCE}, {"icsk_retransmits", uint8(t.IcskRetransmits)},
		} {
			sets = append(sets, struct {
				path string
				v    any
			}{f.path, f.v})
		}
	}
	for _, f := range sets {
		if err := o.Set(f.path, f.v); err != nil && !errors.Is(err, ErrNoField) {
			return nil, fmt.Errorf("socket %v: %w", s.Local, err)
		}
	}
	return o, nil
}

// bigEndian16 is a port in network order, as a __be16 member holds it.
func bigEndian16(p uint16) []byte { return []byte{byte(p >> 8), byte(p)} }
