package bpfvm_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sort"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/progtype"
)

// counterObject is examples/xdp_counter's object: an XDP program that
// counts packets per IPv4 source in an LRU hash ("counters") and drops
// sources found in a hash ("blocklist").
const counterObject = "examples/xdp_counter/xdp_counter.o"

// ipv4Packet is an Ethernet + IPv4 + UDP frame from src with n payload
// bytes.
func ipv4Packet(src string, n int) []byte {
	frame := make([]byte, 14+20+8+n)
	binary.BigEndian.PutUint16(frame[12:], 0x0800)
	ip := frame[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(20+8+n))
	s := netip.MustParseAddr(src).As4()
	copy(ip[12:], s[:])
	return frame
}

// addrKey is an IPv4 address as the program's map key: network byte order
// in a host-order __u32.
func addrKey(addr string) uint32 {
	b := netip.MustParseAddr(addr).As4()
	return binary.NativeEndian.Uint32(b[:])
}

// Load an ELF object's spec, inspect it and load it, as with cilium/ebpf
// (bpf2go's generated loaders call the same functions).
func ExampleLoadCollectionSpec() {
	spec, err := bpfvm.LoadCollectionSpec(counterObject)
	if err != nil {
		panic(err)
	}
	for _, name := range []string{"blocklist", "counters"} {
		m := spec.Maps[name]
		fmt.Println(name, m.Type, m.KeySize, m.ValueSize, m.MaxEntries)
	}
	fmt.Println(spec.Programs["xdp_counter"].Type)

	coll, err := bpfvm.NewCollection(spec)
	if err != nil {
		panic(err)
	}
	defer coll.Close()
	fmt.Println(len(coll.Programs), len(coll.Maps))
	// Output:
	// blocklist Hash 4 1 1024
	// counters LRUHash 4 24 4096
	// XDP
	// 1 2
}

// Run an XDP program on a packet, as cilium/ebpf's Program.Run runs it
// with BPF_PROG_TEST_RUN: the result is the program's verdict.
func ExampleProgram_Run() {
	coll, err := bpfvm.LoadCollection(counterObject)
	if err != nil {
		panic(err)
	}
	defer coll.Close()
	prog := coll.Programs["xdp_counter"]
	verdicts := map[uint32]string{1: "XDP_DROP", 2: "XDP_PASS"}

	ret, err := prog.Run(&bpfvm.RunOptions{Data: ipv4Packet("198.51.100.7", 64)})
	if err != nil {
		panic(err)
	}
	fmt.Println(verdicts[ret])

	// Block the source from Go, and run the packet again.
	if err := coll.Maps["blocklist"].Put(addrKey("198.51.100.7"), uint8(1)); err != nil {
		panic(err)
	}
	ret, err = prog.Run(&bpfvm.RunOptions{Data: ipv4Packet("198.51.100.7", 64)})
	if err != nil {
		panic(err)
	}
	fmt.Println(verdicts[ret])
	// Output:
	// XDP_PASS
	// XDP_DROP
}

// Read what a program wrote to a map: a lookup by key, and an iteration
// over every entry, decoding values into a struct as cilium/ebpf does.
func ExampleMap_Iterate() {
	coll, err := bpfvm.LoadCollection(counterObject)
	if err != nil {
		panic(err)
	}
	defer coll.Close()
	for i, src := range []string{"203.0.113.1", "203.0.113.2", "203.0.113.1"} {
		if _, err := coll.Programs["xdp_counter"].Run(&bpfvm.RunOptions{Data: ipv4Packet(src, 100*(i+1))}); err != nil {
			panic(err)
		}
	}
	// struct stats of the program.
	type stats struct{ Packets, Bytes, Dropped uint64 }
	counters := coll.Maps["counters"]

	var s stats
	if err := counters.Lookup(addrKey("203.0.113.1"), &s); err != nil {
		panic(err)
	}
	fmt.Printf("203.0.113.1: %+v\n", s)
	err = counters.Lookup(addrKey("192.0.2.9"), &s)
	fmt.Println(errors.Is(err, ebpf.ErrKeyNotExist))

	var key [4]byte // the address, in network byte order
	var lines []string
	it := counters.Iterate()
	for it.Next(&key, &s) {
		lines = append(lines, fmt.Sprintf("%s packets %d bytes %d", netip.AddrFrom4(key), s.Packets, s.Bytes))
	}
	if err := it.Err(); err != nil {
		panic(err)
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// 203.0.113.1: {Packets:2 Bytes:484 Dropped:0}
	// true
	// 203.0.113.1 packets 2 bytes 484
	// 203.0.113.2 packets 1 bytes 242
}

// Fill a struct of tagged fields, as bpf2go's generated objects are
// filled: the fields' types are bpfvm's, the tags the ELF names.
func ExampleCollectionSpec_LoadAndAssign() {
	spec, err := bpfvm.LoadCollectionSpec(counterObject)
	if err != nil {
		panic(err)
	}
	var objs struct {
		XdpCounter *bpfvm.Program `ebpf:"xdp_counter"`
		Blocklist  *bpfvm.Map     `ebpf:"blocklist"`
		Counters   *bpfvm.Map     `ebpf:"counters"`
	}
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		panic(err)
	}
	defer objs.XdpCounter.Close()
	defer objs.Blocklist.Close()
	defer objs.Counters.Close()
	ret, err := objs.XdpCounter.Run(&bpfvm.RunOptions{Data: ipv4Packet("203.0.113.1", 10)})
	fmt.Println(ret, err, objs.Counters.Type())
	// Output: 2 <nil> LRUHash
}

// Pin a map by name and load it again, as with cilium/ebpf and bpffs; the
// pins live in a namespace the program makes.
func ExamplePins() {
	pins := bpfvm.NewPins()
	defer pins.Close()
	spec, err := bpfvm.LoadCollectionSpec(counterObject)
	if err != nil {
		panic(err)
	}
	spec.Maps["counters"].Pinning = bpfvm.PinByName
	opts := &bpfvm.CollectionOptions{Maps: bpfvm.MapOptions{PinPath: "/sys/fs/bpf/xdp_counter", Pins: pins}}
	for i := range 2 {
		// The second load reuses the pinned counters.
		var objs struct {
			XdpCounter *bpfvm.Program `ebpf:"xdp_counter"`
			Counters   *bpfvm.Map     `ebpf:"counters"`
		}
		if err := spec.LoadAndAssign(&objs, opts); err != nil {
			panic(err)
		}
		if _, err := objs.XdpCounter.Run(&bpfvm.RunOptions{Data: ipv4Packet("203.0.113.1", 10)}); err != nil {
			panic(err)
		}
		var s struct{ Packets, Bytes, Dropped uint64 }
		if err := objs.Counters.Lookup(addrKey("203.0.113.1"), &s); err != nil {
			panic(err)
		}
		fmt.Println("load", i, "packets", s.Packets, "pinned", objs.Counters.IsPinned())
		objs.XdpCounter.Close()
		objs.Counters.Close()
	}
	m, err := pins.LoadPinnedMap("/sys/fs/bpf/xdp_counter/counters", nil)
	if err != nil {
		panic(err)
	}
	defer m.Close()
	fmt.Println(pins.Paths(), m.Type())
	// Output:
	// load 0 packets 1 pinned true
	// load 1 packets 2 pinned true
	// [/sys/fs/bpf/xdp_counter/counters] LRUHash
}

// A program the verifier rejects fails to load with a *VerifierError,
// summarised on one line as cilium/ebpf's; %+v prints the whole log.
func ExampleVerifierError() {
	insns, err := isa.Assemble("r0 = *(u64 *)(r1 + 0)\nexit")
	if err != nil {
		panic(err)
	}
	_, err = bpfvm.NewRawProgram("bad", ebpf.SocketFilter, insns, bpfvm.ProgramOptions{})
	var ve *bpfvm.VerifierError
	if errors.As(err, &ve) {
		fmt.Println(ve)
		fmt.Printf("%+v\n", ve)
	}
	// Output:
	// load program: 0: (79) r0 = *(u64 *)(r1 +0): invalid bpf_context access off=0 size=8 (2 line(s) omitted)
	// load program: invalid bpf_context access off=0 size=8:
	// 	0: R1=ctx() R10=fp0
	// 	0: (79) r0 = *(u64 *)(r1 +0)
	// 	invalid bpf_context access off=0 size=8
	// 	processed 1 insns (limit 1000000) max_states_per_insn 0 total_states 0 peak_states 0 mark_read 0
}

// Embed eBPF in an application with a program type of its own: the
// context struct and which fields programs may read and write. The
// verifier holds programs to it as the kernel holds them to its types.
func ExampleProgramOptions_hostDefinedType() {
	order := &progtype.Type{
		Name:        "order",
		ContextSize: 8,
		Fields: []progtype.Field{
			{Name: "quantity", Offset: 0, Size: 4, Read: true},
			{Name: "discount", Offset: 4, Size: 4, Read: true, Write: true},
		},
		Helpers: progtype.BaseHelpers(),
	}
	// discount = quantity >= 10 ? 15 : 0; return quantity
	insns, err := isa.Assemble(`
		r0 = *(u32 *)(r1 + 0)
		if r0 < 10 goto +1
		*(u32 *)(r1 + 4) = 15
		exit`)
	if err != nil {
		panic(err)
	}
	prog, err := bpfvm.NewRawProgram("pricing", ebpf.UnspecifiedProgram, insns, bpfvm.ProgramOptions{Type: order})
	if err != nil {
		panic(err)
	}
	defer prog.Close()
	type orderCtx struct{ Quantity, Discount uint32 }
	for _, q := range []uint32{3, 12} {
		var out orderCtx
		if _, err := prog.Run(&bpfvm.RunOptions{Context: orderCtx{Quantity: q}, ContextOut: &out}); err != nil {
			panic(err)
		}
		fmt.Println(q, out.Discount)
	}

	// A write to a read-only field is the verifier's error.
	bad, _ := isa.Assemble("*(u32 *)(r1 + 0) = 1\nr0 = 0\nexit")
	_, err = bpfvm.NewRawProgram("bad", ebpf.UnspecifiedProgram, bad, bpfvm.ProgramOptions{Type: order})
	fmt.Println(errors.As(err, new(*bpfvm.VerifierError)))
	// Output:
	// 3 0
	// 12 15
	// true
}
