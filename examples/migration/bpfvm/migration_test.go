package app

// Tests of the bpf2go objects in the style of cilium/ebpf's examples
// (xdp, ringbuffer, tcx): programs run on packets with Program.Run, maps
// read with Lookup and Iterate, events read with the ringbuf and perf
// readers. bpfvm/migration_test.go is this file with its imports switched.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"os"
	"syscall"
	"testing"
	"time"

	ebpf "github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/perf"
	"github.com/bpfvm/bpfvm/ringbuf"
	"github.com/bpfvm/bpfvm/rlimit"
)

// loadObjects loads the programs and maps, skipping where they cannot be
// loaded for lack of privileges.
func loadObjects(t *testing.T) *bpfObjects {
	t.Helper()
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Skipf("remove memlock: %v", err)
	}
	var objs bpfObjects
	if err := loadBpfObjects(&objs, nil); err != nil {
		if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.ENOSYS) || errors.Is(err, ebpf.ErrNotSupported) {
			t.Skipf("loading objects: %v", err)
		}
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			t.Fatalf("verifier: %+v", ve)
		}
		t.Fatalf("loading objects: %v", err)
	}
	t.Cleanup(func() { objs.Close() })
	return &objs
}

// packet is an Ethernet + IPv4 + UDP frame from src with n payload bytes.
func packet(src string, n int) []byte {
	frame := make([]byte, 14+20+8+n)
	binary.BigEndian.PutUint16(frame[12:], 0x0800)
	ip := frame[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(20+8+n))
	addr := netip.MustParseAddr(src).As4()
	copy(ip[12:], addr[:])
	return frame
}

func TestXDPStats(t *testing.T) {
	objs := loadObjects(t)
	for _, src := range []string{"192.0.2.1", "192.0.2.2", "192.0.2.1", "192.0.2.1"} {
		ret, err := objs.XdpProgFunc.Run(&ebpf.RunOptions{Data: packet(src, 64)})
		if err != nil {
			t.Fatal(err)
		}
		if ret != 2 { // XDP_PASS
			t.Errorf("%s: verdict %d", src, ret)
		}
	}

	// As the xdp example's formatMapContents reads the map.
	var (
		key netip.Addr
		val uint32
	)
	got := map[netip.Addr]uint32{}
	iter := objs.XdpStatsMap.Iterate()
	for iter.Next(&key, &val) {
		got[key] = val
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[netip.Addr]uint32{netip.MustParseAddr("192.0.2.1"): 3, netip.MustParseAddr("192.0.2.2"): 1}
	if len(got) != len(want) || got[netip.MustParseAddr("192.0.2.1")] != 3 || got[netip.MustParseAddr("192.0.2.2")] != 1 {
		t.Errorf("xdp_stats_map %v, want %v", got, want)
	}
	if err := objs.XdpStatsMap.Lookup(netip.MustParseAddr("192.0.2.9"), &val); !errors.Is(err, ebpf.ErrKeyNotExist) {
		t.Errorf("lookup of a missing address: %v", err)
	}
	if err := objs.XdpStatsMap.Update(netip.MustParseAddr("192.0.2.1"), uint32(7), ebpf.UpdateNoExist); !errors.Is(err, ebpf.ErrKeyExist) {
		t.Errorf("update of an existing address with UpdateNoExist: %v", err)
	}
}

func TestRingBuffer(t *testing.T) {
	objs := loadObjects(t)
	rd, err := ringbuf.NewReader(objs.Events)
	if err != nil {
		t.Fatalf("opening ringbuf reader: %s", err)
	}
	defer rd.Close()

	if _, err := objs.XdpProgFunc.Run(&ebpf.RunOptions{Data: packet("198.51.100.4", 100)}); err != nil {
		t.Fatal(err)
	}
	rd.SetDeadline(time.Now().Add(time.Second))
	record, err := rd.Read()
	if err != nil {
		t.Fatalf("reading from reader: %s", err)
	}
	// As the ringbuffer example decodes its events.
	var event bpfEvent
	if err := binary.Read(bytes.NewBuffer(record.RawSample), binary.LittleEndian, &event); err != nil {
		t.Fatalf("parsing ringbuf event: %s", err)
	}
	var saddr [4]byte
	binary.LittleEndian.PutUint32(saddr[:], event.Saddr)
	if src := netip.AddrFrom4(saddr); src != netip.MustParseAddr("198.51.100.4") || event.Len != 142 {
		t.Errorf("event from %s of %d bytes", src, event.Len)
	}

	rd.SetDeadline(time.Now().Add(10 * time.Millisecond))
	if _, err := rd.Read(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read of an empty ring: %v", err)
	}
	rd.Close()
	if _, err := rd.Read(); !errors.Is(err, ringbuf.ErrClosed) {
		t.Errorf("read of a closed reader: %v", err)
	}
}

func TestTCPerfEvents(t *testing.T) {
	objs := loadObjects(t)
	rd, err := perf.NewReader(objs.PerfEvents, os.Getpagesize())
	if err != nil {
		t.Fatalf("creating perf event reader: %s", err)
	}
	defer rd.Close()

	for range 2 {
		ret, err := objs.IngressProgFunc.Run(&ebpf.RunOptions{Data: packet("203.0.113.8", 20)})
		if err != nil {
			t.Fatal(err)
		}
		if ret != 0 { // TC_ACT_OK
			t.Errorf("verdict %d", ret)
		}
	}
	var count uint64
	if err := objs.PktCount.Lookup(uint32(0), &count); err != nil || count != 2 {
		t.Errorf("pkt_count %d, %v", count, err)
	}
	for range 2 {
		rd.SetDeadline(time.Now().Add(time.Second))
		record, err := rd.Read()
		if err != nil {
			t.Fatalf("reading from perf event reader: %s", err)
		}
		if record.LostSamples != 0 {
			t.Fatalf("perf event ring buffer full, dropped %d samples", record.LostSamples)
		}
		var event bpfEvent
		if err := binary.Read(bytes.NewBuffer(record.RawSample), binary.LittleEndian, &event); err != nil {
			t.Fatalf("parsing perf event: %s", err)
		}
		if event.Len != 62 {
			t.Errorf("event of %d bytes", event.Len)
		}
	}
}
