package verifier_test

import (
	"strings"
	"testing"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/verifier"
)

// The level-2 log shows each instruction with the registers it touched,
// aligned as the kernel's (these lines are from a Linux 6.18 log).
func TestLogLevel2Format(t *testing.T) {
	insns, err := isa.Assemble(`
		r2 = *(u32 *)(r1 +0)
		r3 = *(u32 *)(r1 +4)
		r4 = r2
		r4 += 14
		if r4 > r3 goto out
		r5 = *(u16 *)(r2 +12)
	out:
		r0 = 2
		exit`)
	if err != nil {
		t.Fatal(err)
	}
	res, err := verifier.Verify(insns, verifier.Options{Type: progtype.XDP, LogLevel: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"0: R1=ctx() R10=fp0\n",
		"0: (61) r2 = *(u32 *)(r1 +0)          ; R1=ctx() R2=pkt(r=0)\n",
		"1: (61) r3 = *(u32 *)(r1 +4)          ; R1=ctx() R3=pkt_end()\n",
		"2: (bf) r4 = r2                       ; R2=pkt(r=0) R4=pkt(r=0)\n",
		"3: (07) r4 += 14                      ; R4=pkt(off=14,r=0)\n",
		"4: (2d) if r4 > r3 goto pc+1          ; R3=pkt_end() R4=pkt(off=14,r=14)\n",
		"6: (b7) r0 = 2                        ; R0=2\n",
		"7: (95) exit\n",
	} {
		if !strings.Contains(res.Log, want) {
			t.Errorf("log lacks %q:\n%s", want, res.Log)
		}
	}
}

// Every log, at any level, ends with the kernel's "processed N insns"
// line; only level 4 adds the time and stack depth (and our own lines).
func TestLogStatsLines(t *testing.T) {
	insns, err := isa.Assemble("r0 = 0\nexit")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		level     int
		processed bool
		time      bool
	}{
		{0, false, false},
		{1, true, false},
		{2, true, false},
		{4, true, true},
		{1 | 4, true, true},
	} {
		res, err := verifier.Verify(insns, verifier.Options{Type: progtype.XDP, LogLevel: c.level})
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(res.Log), "\n")
		last := ""
		for _, l := range lines {
			if strings.HasPrefix(l, "processed ") {
				last = l
			}
		}
		if got := last == "processed 2 insns (limit 1000000) max_states_per_insn 0 total_states 0 peak_states 0 mark_read 0"; got != c.processed {
			t.Errorf("level %d: processed line %q, want it %v\n%s", c.level, last, c.processed, res.Log)
		}
		if got := strings.Contains(res.Log, "verification time "); got != c.time {
			t.Errorf("level %d: verification time line %v, want %v", c.level, got, c.time)
		}
	}
}
