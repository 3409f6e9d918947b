package bpfvm_test

import (
	"encoding/binary"
	"os"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
)

// packet returns n bytes where byte i is i&0xff.
func packet(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

// eth builds an Ethernet frame with the given ethertype and payload.
func eth(ethertype uint16, payload ...[]byte) []byte {
	b := []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, byte(ethertype >> 8), byte(ethertype)}
	for _, p := range payload {
		b = append(b, p...)
	}
	return b
}

func ipv4(proto byte, fragOff uint16, l4 []byte) []byte {
	h := []byte{0x45, 0, 0, 0, 0, 1, byte(fragOff >> 8), byte(fragOff), 64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2}
	binary.BigEndian.PutUint16(h[2:], uint16(20+len(l4)))
	return append(h, l4...)
}

func ipv6(next byte, l4 []byte) []byte {
	h := make([]byte, 40)
	h[0] = 0x60
	binary.BigEndian.PutUint16(h[4:], uint16(len(l4)))
	h[6], h[7] = next, 64
	return append(h, l4...)
}

func tcp(dport uint16) []byte {
	h := make([]byte, 20)
	binary.BigEndian.PutUint16(h[0:], 40000)
	binary.BigEndian.PutUint16(h[2:], dport)
	h[12] = 5 << 4
	return h
}

func udp(dport uint16) []byte {
	h := make([]byte, 8)
	binary.BigEndian.PutUint16(h[0:], 40000)
	binary.BigEndian.PutUint16(h[2:], dport)
	binary.BigEndian.PutUint16(h[4:], 8)
	return h
}

func vlan(tpid uint16, id uint16, next uint16) []byte {
	_ = tpid
	return []byte{byte(id >> 8), byte(id), byte(next >> 8), byte(next)}
}

type elfCase struct {
	name string
	data []byte
	want uint32
}

func TestELFPrograms(t *testing.T) {
	xdpParse := []elfCase{
		{"ipv4 tcp 23", eth(0x0800, ipv4(6, 0, tcp(23))), 1},
		{"vlan ipv6 udp 19", eth(0x8100, vlan(0x8100, 100, 0x86dd), ipv6(17, udp(19))), 1},
		{"ipv4 tcp 80", eth(0x0800, ipv4(6, 0, tcp(80))), 2},
		{"ipv6 udp 53", eth(0x86dd, ipv6(17, udp(53))), 2},
		{"qinq ipv4 tcp 23", eth(0x88a8, vlan(0, 1, 0x8100), vlan(0, 2, 0x0800), ipv4(6, 0, tcp(23))), 1},
		{"fragment", eth(0x0800, ipv4(6, 16, tcp(23))), 2},
		{"icmp", eth(0x0800, ipv4(1, 0, make([]byte, 8))), 2},
		{"arp", eth(0x0806, make([]byte, 28)), 2},
		{"short ipv4", eth(0x0800, ipv4(6, 0, nil)[:10]), 0},
		{"short tcp", eth(0x0800, ipv4(6, 0, tcp(23))[:30]), 0},
	}
	subprog := []elfCase{
		{"ascending", append([]byte{1, 2, 3, 4, 5, 6, 7, 8}, make([]byte, 8)...), 250},
		{"all ones", append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, make([]byte, 8)...), 8090},
	}
	jhash := []elfCase{
		{"14 bytes", packet(14), 0x9609e9d3},
		{"64 bytes", packet(64), 0x9ff036cc},
		{"1024 bytes", packet(1024), 0x2a05ad7f},
		{"1500 bytes", packet(1500), 0x2a05ad7f},
	}
	for _, obj := range []struct {
		file, prog string
		cases      []elfCase
	}{
		{"testdata/xdp_parse.o", "", xdpParse},
		{"testdata/subprog.o", "", subprog},
		{"testdata/jhash.o", "", jhash},
	} {
		t.Run(obj.file, func(t *testing.T) {
			coll, err := bpfvm.LoadCollection(obj.file)
			if err != nil {
				t.Fatal(err)
			}
			defer coll.Close()
			if len(coll.Programs) != 1 {
				t.Fatalf("%d programs, want 1", len(coll.Programs))
			}
			var name string
			for name = range coll.Programs {
			}
			kern := kernelProgram(t, obj.file, name)
			for _, c := range obj.cases {
				t.Run(c.name, func(t *testing.T) {
					got, err := coll.Programs[name].Run(&bpfvm.RunOptions{Data: c.data})
					if err != nil {
						t.Fatal(err)
					}
					if got != c.want {
						t.Errorf("got %d (%#x), want %d (%#x)", got, got, c.want, c.want)
					}
					if kern != nil {
						kgot, err := kern.Run(&ebpf.RunOptions{Data: c.data})
						if err != nil {
							t.Fatalf("kernel: %v", err)
						}
						if kgot != got {
							t.Errorf("kernel returned %d, bpfvm %d", kgot, got)
						}
					}
				})
			}
		})
	}
}

func TestGlobals(t *testing.T) {
	coll, err := bpfvm.LoadCollection("testdata/globals.o")
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	p := coll.Programs["globals_entry"]
	for i, want := range []uint32{1149, 2156} {
		got, err := p.Run(&bpfvm.RunOptions{Data: packet(14)})
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("run %d: got %d, want %d", i+1, got, want)
		}
	}
	var bss [8]byte
	if err := coll.Maps[".bss"].Lookup(uint32(0), bss[:]); err != nil {
		t.Fatal(err)
	}
	if runs := binary.LittleEndian.Uint64(bss[:]); runs != 2 {
		t.Errorf(".bss runs = %d, want 2", runs)
	}
}

func TestExample(t *testing.T) {
	coll, err := bpfvm.LoadCollection("examples/xdp_filter/xdp_filter.o")
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	p := coll.Programs["xdp_filter"]
	for _, c := range []struct {
		file string
		want uint32
	}{{"examples/xdp_filter/telnet.pkt", 1}, {"examples/xdp_filter/https.pkt", 2}} {
		data, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		got, out, err := p.Test(data)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want || string(out) != string(data) {
			t.Errorf("%s: got %d, want %d (packet changed: %v)", c.file, got, c.want, string(out) != string(data))
		}
	}
}

// kernelProgram loads a program into the running kernel to serve as an
// oracle, or returns nil (after logging why) where bpf() is not permitted.
func kernelProgram(t *testing.T, file, name string) *ebpf.Program {
	t.Helper()
	coll := kernelCollection(t, file)
	if coll == nil {
		return nil
	}
	return coll.Programs[name]
}

// Legacy iproute2 maps of maps are filled with their inner maps by name.
// Their PIN_GLOBAL_NS maps are pinned by name, in a namespace at tc's path.
func TestLegacyMapInMap(t *testing.T) {
	spec, err := loader.LoadCollectionSpec("testdata/legacy_elf_maps.o")
	if err != nil {
		t.Fatal(err)
	}
	pins := bpfvm.NewPins()
	defer pins.Close()
	coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Maps: bpfvm.MapOptions{PinPath: "/sys/fs/bpf/tc/globals", Pins: pins}})
	if err != nil {
		t.Fatal(err)
	}
	if paths := pins.Paths(); len(paths) == 0 {
		t.Error("no map pinned")
	}
	defer coll.Close()
	var id uint32
	if err := coll.Maps["map_in_map"].Lookup(uint32(0), &id); err != nil {
		t.Fatal(err)
	}
	if want := coll.Maps["class_map"].ID(); id != want {
		t.Errorf("map_in_map[0] = map %d, want class_map (%d)", id, want)
	}
}

// The map_perf programs compute the same sums with inlined array lookups as
// with helper calls.
func TestInlinedArrayLookup(t *testing.T) {
	spec, err := loader.LoadCollectionSpec("testdata/map_perf.o")
	if err != nil {
		t.Fatal(err)
	}
	for _, noInline := range []bool{false, true} {
		coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{NoInline: noInline}})
		if err != nil {
			t.Fatal(err)
		}
		p := coll.Programs["array_lookup"]
		for _, filled := range []bool{false, true} {
			if filled {
				for k := uint32(0); k < 64; k++ {
					if err := coll.Maps["perf_array"].Put(k, uint64(k+1)); err != nil {
						t.Fatal(err)
					}
				}
			}
			want := uint32(0)
			if filled {
				want = 2080
			}
			got, err := p.Run(&bpfvm.RunOptions{Data: packet(64)})
			if err != nil || got != want {
				t.Errorf("noInline=%v filled=%v: got %d, %v; want %d", noInline, filled, got, err, want)
			}
		}
		inlined := len(p.XlatedInstructions()) > len(p.Instructions())
		if inlined == noInline {
			t.Errorf("noInline=%v: xlated %d insns, loaded %d", noInline, len(p.XlatedInstructions()), len(p.Instructions()))
		}
		coll.Close()
	}
}

// TestOldStyleObject runs testdata/legacy_old_style.o, an object in the
// shape old toolchains leave (program symbols without size or type, old
// section names, iproute2's 28- and 32-byte bpf_elf_map), with the results
// the kernel gives it (loader.TestKernelLoad); its PIN_GLOBAL_NS map is
// pinned by name as tc pins it.
func TestOldStyleObject(t *testing.T) {
	spec, err := loader.LoadCollectionSpec("testdata/legacy_old_style.o")
	if err != nil {
		t.Fatal(err)
	}
	pins := bpfvm.NewPins()
	defer pins.Close()
	coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Maps: bpfvm.MapOptions{PinPath: "/sys/fs/bpf/tc/globals", Pins: pins}})
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	if paths := pins.Paths(); len(paths) != 1 || paths[0] != "/sys/fs/bpf/tc/globals/totals" {
		t.Errorf("pinned %v, want totals", paths)
	}
	if err := coll.Maps["mid"].Put(uint32(1), uint32(9)); err != nil {
		t.Fatal(err)
	}
	pkt := eth(0x0800, ipv4(6, 0, tcp(80)))
	for _, tt := range []struct {
		prog string
		want uint32
	}{
		{"xdp_count", 2}, {"xdp_drop", 1}, {"sock_mid", 9},
	} {
		ret, err := coll.Programs[tt.prog].Run(&bpfvm.RunOptions{Data: pkt})
		if err != nil || ret != tt.want {
			t.Errorf("%s: %d, %v; want %d", tt.prog, ret, err, tt.want)
		}
	}
	var n uint64
	if err := coll.Maps["counts"].Lookup(uint32(0), &n); err != nil || n != 1 {
		t.Errorf("counts[0] = %d, %v; want 1", n, err)
	}
}
