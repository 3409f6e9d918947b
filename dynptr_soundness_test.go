package bpfvm

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/runner"
	"github.com/bpfvm/bpfvm/verifier"
	"github.com/bpfvm/bpfvm/vm"
)

// The soundness oracle applied to programs built from dynptr parts: local
// dynptrs over a map value, XDP and ring buffer ones, made in overlapping
// stack slots, read, written, sliced, adjusted, cloned, overwritten by
// stores and released, with slices used after any of that and after the
// packet moved. Whatever the verifier accepts must run clean in checked
// mode.

var (
	dynptrEnvOnce sync.Once
	dynptrEnv     *soundnessEnv
	dynptrEnvErr  error
)

func getDynptrEnv() (*soundnessEnv, error) {
	dynptrEnvOnce.Do(func() {
		env := &soundnessEnv{cpus: runner.NewCPUs(1)}
		for i, s := range []*ebpf.MapSpec{
			{Name: "arr", Type: ebpf.Array, KeySize: 4, ValueSize: 32, MaxEntries: 1},
			{Name: "rb", Type: ebpf.RingBuf, MaxEntries: 4096},
		} {
			m, err := newMap(s, env.cpus)
			if err != nil {
				dynptrEnvErr = err
				return
			}
			env.maps = append(env.maps, m)
			env.infos = append(env.infos, verifier.MapInfo{Name: s.Name, Spec: m.m.Spec(), Index: i})
		}
		dynptrEnv = env
	})
	return dynptrEnv, dynptrEnvErr
}

// dynptrGen turns fuzz bytes into a program text.
type dynptrGen struct {
	data   []byte
	b      strings.Builder
	labels int
}

func (g *dynptrGen) intn(n int) int {
	if len(g.data) == 0 {
		return 0
	}
	v := int(g.data[0]) % n
	g.data = g.data[1:]
	return v
}

func (g *dynptrGen) emit(f string, a ...any) { fmt.Fprintf(&g.b, f+"\n", a...) }

func (g *dynptrGen) label() string {
	g.labels++
	return fmt.Sprintf("l%d", g.labels)
}

// slot is where a dynptr goes: mostly aligned pairs, sometimes halves of
// others or misaligned.
func (g *dynptrGen) slot() int { return []int{-16, -16, -16, -32, -48, -24, -40, -12}[g.intn(8)] }

// size and off are a length or offset, mostly in range.
func (g *dynptrGen) size() int { return []int{0, 1, 4, 8, 16, 32, 33, 64}[g.intn(8)] }
func (g *dynptrGen) off() int  { return []int{0, 1, 4, 8, 24, 31, 32, -1}[g.intn(8)] }

func (g *dynptrGen) op() {
	s := g.slot()
	switch g.intn(14) {
	case 0: // a local dynptr over the array's value
		g.emit("r1 = r9\nr2 = %d\nr3 = %d\nr4 = r10\nr4 += %d\ncall bpf_dynptr_from_mem#197", g.size(), g.intn(2), s)
	case 1:
		g.emit("r1 = r6\nr2 = %d\nr3 = r10\nr3 += %d\ncall bpf_dynptr_from_xdp#0", g.intn(2), s)
	case 2: // a ring buffer dynptr, released at once or later
		g.emit("r1 = map[fd:1] ll\nr2 = %d\nr3 = 0\nr4 = r10\nr4 += %d\ncall bpf_ringbuf_reserve_dynptr#198", g.size(), s)
	case 3:
		g.emit("r1 = r10\nr1 += -64\nr2 = %d\nr3 = r10\nr3 += %d\nr4 = %d\nr5 = 0\ncall bpf_dynptr_read#201", g.intn(9), s, g.off())
	case 4:
		g.emit("*(u64 *)(r10 -64) = 0\nr1 = r10\nr1 += %d\nr2 = %d\nr3 = r10\nr3 += -64\nr4 = %d\nr5 = 0\ncall bpf_dynptr_write#202", s, g.off(), g.intn(9))
	case 5:
		g.emit("r1 = r10\nr1 += %d\nr2 = %d\nr3 = %d\ncall bpf_dynptr_data#203\nr7 = r0", s, g.off(), g.size())
	case 6:
		buf := []string{"r3 = 0", "r3 = r10\nr3 += -64"}[g.intn(2)]
		fn := []string{"bpf_dynptr_slice#0", "bpf_dynptr_slice_rdwr#0"}[g.intn(2)]
		g.emit("r1 = r10\nr1 += %d\nr2 = %d\n%s\nr4 = %d\ncall %s\nr7 = r0", s, g.off(), buf, g.intn(9), fn)
	case 7: // use the last slice
		l := g.label()
		size := []string{"u8", "u32", "u64"}[g.intn(3)]
		if g.intn(2) == 0 {
			g.emit("if r7 == 0 goto %s\nr0 = *(%s *)(r7 %+d)\n%s:", l, size, g.off(), l)
		} else {
			g.emit("if r7 == 0 goto %s\n*(%s *)(r7 %+d) = 1\n%s:", l, size, g.off(), l)
		}
	case 8: // a store over the stack
		g.emit("*(%s *)(r10 %+d) = 0", []string{"u64", "u32", "u8"}[g.intn(3)], -8*(1+g.intn(7)))
	case 9:
		g.emit("r1 = r10\nr1 += %d\nr2 = 0\ncall %s", s, []string{"bpf_ringbuf_submit_dynptr#199", "bpf_ringbuf_discard_dynptr#200"}[g.intn(2)])
	case 10:
		g.emit("r1 = r10\nr1 += %d\nr2 = %d\nr3 = %d\ncall bpf_dynptr_adjust#0", s, g.off(), g.off())
	case 11:
		g.emit("r1 = r10\nr1 += %d\nr2 = r10\nr2 += %d\ncall bpf_dynptr_clone#0", s, g.slot())
	case 12: // the packet moves
		g.emit("r1 = r6\nr2 = %d\ncall bpf_xdp_adjust_head#44", []int{0, 4, -4}[g.intn(3)])
	default:
		g.emit("r1 = r10\nr1 += %d\ncall %s", s, []string{"bpf_dynptr_size#0", "bpf_dynptr_is_null#0", "bpf_dynptr_is_rdonly#0"}[g.intn(3)])
	}
}

// generateDynptrProgram makes an XDP program from fuzz bytes.
func generateDynptrProgram(data []byte) string {
	g := &dynptrGen{data: data}
	g.emit("r6 = r1\nr7 = 0\n*(u32 *)(r10 -4) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto out\nr9 = r0")
	// Most programs start with a dynptr at fp-16, which most ops use.
	switch g.intn(3) {
	case 0:
		g.emit("r1 = r9\nr2 = 32\nr3 = 0\nr4 = r10\nr4 += -16\ncall bpf_dynptr_from_mem#197")
	case 1:
		g.emit("r1 = r6\nr2 = 0\nr3 = r10\nr3 += -16\ncall bpf_dynptr_from_xdp#0")
	}
	n := 1 + g.intn(12)
	for range n {
		if len(g.data) == 0 {
			break
		}
		g.op()
	}
	g.emit("out:\nr0 = 2\nexit")
	return g.b.String()
}

// checkDynptrSoundness verifies a generated program and, when the verifier
// accepts it, runs it checked on a few packets; it reports whether the
// verifier accepted it.
func checkDynptrSoundness(t *testing.T, data []byte) bool {
	env, err := getDynptrEnv()
	if err != nil {
		t.Fatal(err)
	}
	src := generateDynptrProgram(data)
	insns, err := isa.Assemble(src)
	if err != nil {
		t.Fatalf("generated program does not assemble: %v\n%s", err, src)
	}
	if _, err := verifier.Verify(insns, verifier.Options{Type: progtype.XDP, Maps: env.infos}); err != nil {
		if !errors.Is(err, verifier.ErrRejected) {
			t.Fatalf("verifier error that is no rejection: %v\n%s", err, src)
		}
		return false
	}
	p, err := newProgram("fuzz", ebpf.XDP, insns, env.maps, env.cpus, ProgramOptions{NoVerify: true, Engine: EngineInterpreter})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	defer p.Close()
	for _, n := range []int{14, 40, 100} {
		pkt := make([]byte, n)
		if _, _, err := p.Test(pkt); err != nil {
			if errors.Is(err, vm.ErrMemory) {
				t.Fatalf("the verifier accepted an unsafe program: %v\npacket of %d bytes\n%s", err, n, src)
			}
			t.Fatalf("run: %v\n%s", err, src)
		}
	}
	return true
}

func FuzzDynptrSoundness(f *testing.F) {
	f.Add([]byte{5, 0, 4, 0, 5, 3, 0, 7, 0, 1, 2})
	f.Add([]byte{6, 1, 1, 0, 6, 2, 0, 3, 1, 0, 7, 7, 1, 0})
	f.Add([]byte{4, 2, 4, 0, 3, 5, 0, 4, 4, 0, 7, 1, 0, 0, 9, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) { checkDynptrSoundness(t, data) })
}

// TestDynptrSoundnessRandom runs the dynptr soundness check on
// pseudo-random inputs, so that plain `go test` covers it.
func TestDynptrSoundnessRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := 2000
	if testing.Short() {
		n = 200
	}
	accepted := 0
	for range n {
		data := make([]byte, 8+rng.IntN(60))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		if checkDynptrSoundness(t, data) {
			accepted++
		}
	}
	t.Logf("%d of %d programs accepted and run checked", accepted, n)
}
