package runner

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cilium/ebpf/btf"

	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/vm"
)

// The kernel objects of a netfilter test run (progtype.HookRun): the
// struct sk_buff, struct nf_hook_state and the loopback device's struct
// net_device that bpf_prog_test_run_nf builds, laid out at the offsets of
// the kernel BTF the program was loaded against (Objects), in the run's
// buffer after the packet's tailroom. The program reads them through the
// context's trusted pointers, read-only: probe loads, which read 0 outside
// them as the kernel's read of memory it does not map. Fields the kernel's
// test run leaves zero are zero; those bpfvm does not model (the
// namespace, the shared info, the allocating CPU) are zero too.

// Objects is where the fields a netfilter test run fills are in the
// kernel's structures, from the BTF a program was loaded against.
type Objects struct {
	// SkbSize, StateSize and DevSize are the structures' sizes.
	SkbSize, StateSize, DevSize uint32
	// The struct sk_buff fields.
	Len, DataLen, Protocol, Data, Head, Tail, End, Network, Mac, Transport, Dev, Truesize, Users field
	PktType                                                                                      field
	// The struct nf_hook_state fields.
	Hook, PF, In, Out, StateSk, Net, Okfn field
	// The struct net_device fields.
	Ifindex, Flags, MTU, DevType, Name field
}

// field is a member of a kernel structure: its offset and size in bytes,
// and for a bitfield its bit offset in the byte at off and its width.
type field struct {
	off, size    uint32
	shift, width uint8
}

// errNoObjects is wrapped by the error of a netfilter run whose kernel
// types lack the structures it lays out.
var errNoObjects = errors.New("kernel BTF without the netfilter test run's structures")

// ObjectsOf finds the fields of a netfilter test run in kernel types.
func ObjectsOf(spec *btf.Spec) (*Objects, error) {
	if spec == nil {
		return nil, fmt.Errorf("no kernel BTF: %w: %w", errNoObjects, progtype.ErrNotSupported)
	}
	var o Objects
	var err error
	find := func(name string, size *uint32, fields map[string]*field) {
		var s *btf.Struct
		if err != nil {
			return
		}
		if err = spec.TypeByName(name, &s); err != nil {
			err = fmt.Errorf("struct %s: %w: %w: %w", name, err, errNoObjects, progtype.ErrNotSupported)
			return
		}
		*size = s.Size
		for n, f := range fields {
			if !member(s, 0, n, f) {
				err = fmt.Errorf("struct %s has no %s: %w: %w", name, n, errNoObjects, progtype.ErrNotSupported)
				return
			}
		}
	}
	find("sk_buff", &o.SkbSize, map[string]*field{
		"len": &o.Len, "data_len": &o.DataLen, "protocol": &o.Protocol, "data": &o.Data, "head": &o.Head,
		"tail": &o.Tail, "end": &o.End, "network_header": &o.Network, "mac_header": &o.Mac,
		"transport_header": &o.Transport, "dev": &o.Dev, "truesize": &o.Truesize, "users": &o.Users,
		"pkt_type": &o.PktType,
	})
	find("nf_hook_state", &o.StateSize, map[string]*field{
		"hook": &o.Hook, "pf": &o.PF, "in": &o.In, "out": &o.Out, "sk": &o.StateSk, "net": &o.Net, "okfn": &o.Okfn,
	})
	find("net_device", &o.DevSize, map[string]*field{
		"ifindex": &o.Ifindex, "flags": &o.Flags, "mtu": &o.MTU, "type": &o.DevType, "name": &o.Name,
	})
	if err != nil {
		return nil, err
	}
	return &o, nil
}

// member finds the member name of s, looking into anonymous structs and
// unions, at base bits into the outermost structure.
func member(s btf.Type, base btf.Bits, name string, f *field) bool {
	var ms []btf.Member
	switch c := btf.UnderlyingType(s).(type) {
	case *btf.Struct:
		ms = c.Members
	case *btf.Union:
		ms = c.Members
	}
	for _, m := range ms {
		off := base + m.Offset
		if m.Name == "" {
			if member(m.Type, off, name, f) {
				return true
			}
			continue
		}
		if m.Name != name {
			continue
		}
		size, err := btf.Sizeof(m.Type)
		if err != nil {
			return false
		}
		f.off, f.size = uint32(off/8), uint32(size)
		if m.BitfieldSize != 0 {
			f.shift, f.width = uint8(off%8), uint8(m.BitfieldSize)
		}
		return true
	}
	return false
}

// put stores v in the field of the object at b (little-endian, as the
// host's kernel).
func (f field) put(b []byte, v uint64) {
	if f.width != 0 {
		mask := byte(1<<f.width-1) << f.shift
		b[f.off] = b[f.off]&^mask | byte(v<<f.shift)&mask
		return
	}
	for i := range f.size {
		b[f.off+i] = byte(v >> (8 * i))
	}
}

// objectsSize is the room a netfilter run's objects take: the sk_buff,
// the hook state and the device, each 64-byte aligned.
func (o *Objects) objectsSize() int {
	a := func(n uint32) int { return int(n+63) &^ 63 }
	return a(o.SkbSize) + a(o.StateSize) + a(o.DevSize)
}

// Kernel constants of the objects the test run builds.
const (
	netSkbPad     = 64      // NET_SKB_PAD: the headroom skb_reserve leaves
	skbSharedInfo = 320     // SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
	skbStruct     = 256     // SKB_DATA_ALIGN(sizeof(struct sk_buff))
	loIfindex     = 1       // the loopback device's
	loMTU         = 1 << 16 // its MTU
	loFlags       = 0x9     // IFF_UP | IFF_LOOPBACK
	arphrdLoop    = 772     // ARPHRD_LOOPBACK
)

// kmallocSize is the slab object size kmalloc gives a request of n bytes
// (n > 256): the next power of two.
func kmallocSize(n int) int {
	s := 512
	for s < n {
		s *= 2
	}
	return s
}

// hookInput reads a netfilter test run's context input, a struct
// nf_hook_state: its hook, family, whether a pointer is set and whether
// a longer input has bytes past the structure that are not zero.
func (o *Objects) hookInput(in *Input) progtype.HookInput {
	hi := progtype.HookInput{Given: in.HasContext || in.ContextOut != nil}
	st := make([]byte, o.StateSize)
	if in.HasContext {
		b := in.Context
		if len(b) > len(st) {
			for _, c := range b[len(st):] {
				hi.Tail = hi.Tail || c != 0
			}
			b = b[:len(st)]
		}
		copy(st, b)
	}
	hi.Hook, hi.PF = st[o.Hook.off], st[o.PF.off]
	for _, f := range []field{o.In, o.Out, o.StateSk, o.Net, o.Okfn} {
		for _, c := range st[f.off : f.off+f.size] {
			hi.Pointers = hi.Pointers || c != 0
		}
	}
	return hi
}

// layNF lays out the objects of a netfilter run at addr (b, zero before)
// for the run's state and its frame at frame (n bytes), and returns the
// addresses of the hook state and of the socket buffer.
func (o *Objects) layNF(b []byte, addr uint64, st progtype.HookRunState, frame uint64, n int) (state, skb uint64) {
	a := func(n uint32) uint32 { return (n + 63) &^ 63 }
	sb := b[:o.SkbSize]
	sst := b[a(o.SkbSize) : a(o.SkbSize)+o.StateSize]
	dev := b[a(o.SkbSize)+a(o.StateSize):][:o.DevSize]
	skb, state = addr, addr+uint64(a(o.SkbSize))
	devAddr := state + uint64(a(o.StateSize))

	o.Ifindex.put(dev, loIfindex)
	o.Flags.put(dev, loFlags)
	o.MTU.put(dev, loMTU)
	o.DevType.put(dev, arphrdLoop)
	copy(dev[o.Name.off:o.Name.off+o.Name.size], "lo")

	o.Hook.put(sst, uint64(st.Hook))
	o.PF.put(sst, uint64(st.PF))
	if st.Out {
		o.Out.put(sst, devAddr)
	}

	end := kmallocSize(n+netSkbPad+skbSharedInfo) - skbSharedInfo
	o.Head.put(sb, frame-netSkbPad)
	o.Tail.put(sb, uint64(netSkbPad+n))
	o.End.put(sb, uint64(end))
	o.Truesize.put(sb, uint64(end+skbStruct+skbSharedInfo))
	o.Users.put(sb, 1)
	o.Transport.put(sb, 0xffff)
	var proto [2]byte
	binary.BigEndian.PutUint16(proto[:], st.Protocol)
	o.Protocol.put(sb, uint64(binary.LittleEndian.Uint16(proto[:])))
	if st.Eth {
		o.Data.put(sb, frame+ethHeader)
		o.Len.put(sb, uint64(n-ethHeader))
		o.Mac.put(sb, netSkbPad)
		o.Network.put(sb, netSkbPad+ethHeader)
		o.Dev.put(sb, devAddr)
		o.PktType.put(sb, uint64(st.PktType))
	} else {
		o.Data.put(sb, frame)
		o.Len.put(sb, uint64(n))
		o.Mac.put(sb, 0xffff)
	}
	return state, skb
}

// nfRegion is the read-only region of a netfilter run's objects.
func (r *Runner) nfRegion() vm.Region {
	return vm.Region{Start: r.nfObjs, End: r.nfObjs + r.nfLen}
}

// beginNF checks a netfilter test run's input and lays out its objects
// after the packet's tailroom (the buffer has room for them at off):
// the packet the program sees (from the network header on) and the
// context's pointers.
func (r *Runner) beginNF(p *Program, st progtype.HookRunState, ctx, frame []byte, frameOff, off int) []byte {
	o := p.Objects
	buf := r.buf.Bytes()[off : off+o.objectsSize()]
	clear(buf)
	base := r.buf.Addr()
	state, skb := o.layNF(buf, base+uint64(off), st, base+uint64(frameOff), len(frame))
	r.nfObjs, r.nfLen = base+uint64(off), uint64(len(buf))
	clear(ctx[:16])
	binary.LittleEndian.PutUint64(ctx[0:], state)
	binary.LittleEndian.PutUint64(ctx[8:], skb)
	if st.Eth {
		return frame[ethHeader:]
	}
	return frame
}
