package verifier_test

import (
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
)

// TestSelftestContext covers context accesses per program type: the fields
// of struct xdp_md and struct __sk_buff, their sizes, narrow loads, and
// writes to read-only fields.
func TestSelftestContext(t *testing.T) {
	x, sf, tc := ebpf.XDP, ebpf.SocketFilter, ebpf.SchedCLS
	load := func(size string, off int) string {
		return fmt.Sprintf("r0 = *(%s *)(r1 +%d)\nr0 = 0\nexit", size, off)
	}
	store := func(size string, off int) string {
		return fmt.Sprintf("r2 = 1\n*(%s *)(r1 +%d) = r2\nr0 = 0\nexit", size, off)
	}
	ctxErr := func(off, size int) string { return fmt.Sprintf("invalid bpf_context access off=%d size=%d", off, size) }
	c := func(name string, typ ebpf.ProgramType, asm, err string) vcase {
		v := vcase{name: name, typ: typ, asm: asm, err: err}
		if err != "" {
			v.kmsg = true
		}
		return v
	}
	runCases(t, []vcase{
		// struct xdp_md.
		c("xdp data", x, load("u32", 0), ""),
		c("xdp data_end", x, load("u32", 4), ""),
		c("xdp data_meta", x, load("u32", 8), ""),
		c("xdp ingress_ifindex", x, load("u32", 12), ""),
		c("xdp rx_queue_index", x, load("u32", 16), ""),
		c("xdp past end", x, load("u32", 24), ctxErr(24, 4)),
		c("xdp negative", x, "r0 = *(u32 *)(r1 -4)\nexit", "invalid bpf_context access off=-4 size=4"),
		c("xdp data u16", x, load("u16", 0), ctxErr(0, 2)),
		c("xdp data u64", x, load("u64", 0), ctxErr(0, 8)),
		c("xdp unaligned", x, load("u32", 2), ctxErr(2, 4)),
		c("xdp write data", x, store("u32", 0), ctxErr(0, 4)),
		c("xdp write ifindex", x, store("u32", 12), ctxErr(12, 4)),
		c("xdp write rx_queue_index", x, store("u32", 16), ctxErr(16, 4)),
		c("xdp st write", x, "*(u32 *)(r1 +12) = 0\nr0 = 0\nexit", ctxErr(12, 4)),
		c("xdp egress_ifindex", x, load("u32", 20), ctxErr(20, 4)),
		c("xdp narrow ifindex", x, load("u8", 12), ctxErr(12, 1)),
		c("xdp atomic", x, "r2 = 1\nlock *(u32 *)(r1 +12) += w2\nr0 = 0\nexit", "BPF_ATOMIC stores into R1 ctx is not allowed"),
		c("xdp load into pointer used", x, "r2 = *(u32 *)(r1 +12)\nr0 = *(u8 *)(r2 +0)\nexit", "R2 invalid mem access 'scalar'"),
		// struct __sk_buff of socket filters.
		c("sf len", sf, load("u32", 0), ""),
		c("sf len u8", sf, load("u8", 0), ""),
		c("sf len u16", sf, load("u16", 0), ""),
		c("sf len u64", sf, load("u64", 0), ctxErr(0, 8)),
		c("sf protocol", sf, load("u32", 16), ""),
		c("sf mark", sf, load("u32", 8), ""),
		c("sf cb read", sf, load("u32", 48), ""),
		c("sf cb write", sf, store("u32", 56), ""),
		c("sf cb last", sf, store("u32", 64), ""),
		c("sf cb past", sf, store("u32", 68), ctxErr(68, 4)),
		c("sf cb u64", sf, store("u64", 48), ""),
		c("sf write len", sf, store("u32", 0), ctxErr(0, 4)),
		c("sf hash", sf, load("u32", 68), ""),
		c("sf ifindex", sf, load("u32", 40), ""),
		c("sf data", sf, load("u32", 76), ctxErr(76, 4)),
		c("sf data_end", sf, load("u32", 80), ctxErr(80, 4)),
		c("sf past end", sf, load("u32", 192), ctxErr(192, 4)),
		c("sf write mark", sf, store("u32", 8), ctxErr(8, 4)),
		c("sf write priority", sf, store("u32", 32), ctxErr(32, 4)),
		c("sf family", sf, load("u32", 88), ctxErr(88, 4)),
		c("sf len second byte", sf, load("u8", 1), ""),
		c("sf remote_ip4", sf, load("u32", 92), ctxErr(92, 4)),
		c("sf tc_classid", sf, load("u32", 72), ctxErr(72, 4)),
		// struct __sk_buff of tc classifiers.
		c("tc data", tc, load("u32", 76), ""),
		c("tc data_end", tc, load("u32", 80), ""),
		c("tc data_meta", tc, load("u32", 140), ""),
		c("tc data u16", tc, load("u16", 76), ctxErr(76, 2)),
		c("tc write mark", tc, store("u32", 8), ""),
		c("tc write priority", tc, store("u32", 32), ""),
		c("tc write tc_index", tc, store("u32", 44), ""),
		c("tc write tc_classid", tc, store("u32", 72), ""),
		c("tc write queue_mapping", tc, store("u32", 12), ""),
		c("tc write len", tc, store("u32", 0), ctxErr(0, 4)),
		c("tc write protocol", tc, store("u32", 16), ctxErr(16, 4)),
		c("tc write data", tc, store("u32", 76), ctxErr(76, 4)),
		c("tc write mark u16", tc, store("u16", 8), ctxErr(8, 2)),
		c("tc tstamp", tc, load("u64", 152), ""),
		c("tc write tstamp", tc, store("u64", 152), ""),
		c("tc tstamp u32", tc, load("u32", 152), ctxErr(152, 4)),
		c("tc wire_len", tc, load("u32", 160), ""),
		c("tc gso_segs", tc, load("u32", 164), ""),
		c("tc gso_size", tc, load("u32", 176), ""),
		c("tc hwtstamp", tc, load("u64", 184), ""),
		c("tc write hwtstamp", tc, store("u64", 184), ctxErr(184, 8)),
		c("tc local_ip6", tc, load("u32", 120), ctxErr(120, 4)),
		c("tc local_port", tc, load("u32", 136), ctxErr(136, 4)),
		c("tc padding", tc, load("u32", 172), ctxErr(172, 4)),
		c("tc narrow mark", tc, load("u8", 8), ""),
		c("tc write pointer into cb", tc, "*(u64 *)(r1 +48) = r1\nr0 = 0\nexit", ""),
		c("tc ctx spilled and used", tc, "*(u64 *)(r10 -8) = r1\nr1 = 0\nr6 = *(u64 *)(r10 -8)\nr0 = *(u32 *)(r6 +0)\nexit", ""),
		c("tc ctx in r6 after call", tc, "r6 = r1\ncall bpf_get_prandom_u32#7\nr0 = *(u32 *)(r6 +0)\nexit", ""),
	})
}
