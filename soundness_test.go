package bpfvm

import (
	"bytes"
	"encoding/binary"
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

// The soundness fuzzer generates random but plausible XDP programs, and
// runs every program the verifier accepts in checked mode, where each
// memory access is validated at run time: an invalid access means the
// verifier accepted an unsafe program. Programs are never run unchecked
// here, as a verifier bug would then crash the process.

// soundnessEnv is what every fuzz iteration shares: runners and two maps,
// an array with a single 16-byte value (so that checked mode's region for
// it is exactly the value) and a hash map with 16-byte values, keys 0 and
// 1 present and 2 and 3 absent.
type soundnessEnv struct {
	cpus  *runner.CPUs
	maps  []*Map
	infos []verifier.MapInfo
}

var (
	soundnessOnce sync.Once
	soundness     *soundnessEnv
	soundnessErr  error
)

func getSoundnessEnv() (*soundnessEnv, error) {
	soundnessOnce.Do(func() {
		env := &soundnessEnv{cpus: runner.NewCPUs(1)}
		specs := []*ebpf.MapSpec{
			{Name: "arr", Type: ebpf.Array, KeySize: 4, ValueSize: 16, MaxEntries: 1},
			{Name: "hash", Type: ebpf.Hash, KeySize: 4, ValueSize: 16, MaxEntries: 4},
		}
		for i, s := range specs {
			m, err := newMap(s, env.cpus)
			if err != nil {
				soundnessErr = err
				return
			}
			env.maps = append(env.maps, m)
			env.infos = append(env.infos, verifier.MapInfo{Name: s.Name, Spec: m.m.Spec(), Index: i})
		}
		val := []byte{0xff, 0xee, 0x80, 0x7f, 0x01, 0x00, 0x10, 0x20, 0xfe, 0xff, 0xff, 0xff, 0x30, 0x00, 0x00, 0x80}
		for _, k := range []uint32{0, 1} {
			if err := env.maps[1].Put(k, val); err != nil {
				soundnessErr = err
				return
			}
		}
		if err := env.maps[0].Put(uint32(0), val); err != nil {
			soundnessErr = err
			return
		}
		soundness = env
	})
	return soundness, soundnessErr
}

// progGen turns fuzz bytes into a program text.
type progGen struct {
	data   []byte
	b      strings.Builder
	subs   strings.Builder // functions, after the entry's exit
	nsubs  int
	labels int
	// pending are labels to place after a number of further ops.
	pending []pendingLabel
}

type pendingLabel struct {
	name  string
	after int
}

func (g *progGen) byte() byte {
	if len(g.data) == 0 {
		return 0
	}
	c := g.data[0]
	g.data = g.data[1:]
	return c
}

func (g *progGen) intn(n int) int { return int(g.byte()) % n }

func (g *progGen) pick(s ...string) string { return s[g.intn(len(s))] }

func (g *progGen) label() string {
	g.labels++
	return fmt.Sprintf("l%d", g.labels)
}

func (g *progGen) emit(format string, args ...any) {
	fmt.Fprintf(&g.b, format, args...)
	g.b.WriteByte('\n')
}

// scalar names one of the scalar registers r0-r5.
func (g *progGen) scalar() string { return fmt.Sprintf("r%d", g.intn(6)) }

// imm is an interesting immediate.
func (g *progGen) imm() int64 {
	vals := []int64{0, 1, 2, 3, 4, 7, 8, 12, 14, 15, 16, 20, 31, 32, 47, 48, 63, 64, 255, 256, 0x7fff, 0xffff, -1, -2, -8, -16, 0x7fffffff, -0x80000000}
	if i := g.intn(len(vals) + 4); i < len(vals) {
		return vals[i]
	}
	return int64(int32(binary.LittleEndian.Uint32([]byte{g.byte(), g.byte(), g.byte(), g.byte()})))
}

func (g *progGen) size() (string, int) {
	switch g.intn(4) {
	case 0:
		return "u8", 1
	case 1:
		return "u16", 2
	case 2:
		return "u32", 4
	}
	return "u64", 8
}

// pktCheck emits a bounds check of [rA, rA+n) against data_end (r8) in one
// of the comparison forms, jumping to skip when out of bounds (or, for a
// wrong form, when in bounds).
func (g *progGen) pktCheck(reg string, n int, skip string) {
	g.emit("r9 = %s", reg)
	g.emit("r9 += %d", n)
	switch g.intn(9) {
	case 0:
		g.emit("if r9 > r8 goto %s", skip)
	case 1:
		g.emit("if r8 < r9 goto %s", skip)
	case 2:
		g.emit("if r9 >= r8 goto %s", skip)
	case 3:
		g.emit("if r8 <= r9 goto %s", skip)
	case 4:
		ok := g.label()
		g.emit("if r9 <= r8 goto %s", ok)
		g.emit("goto %s", skip)
		g.emit("%s:", ok)
	case 5:
		ok := g.label()
		g.emit("if r8 >= r9 goto %s", ok)
		g.emit("goto %s", skip)
		g.emit("%s:", ok)
	case 6:
		ok := g.label()
		g.emit("if r9 < r8 goto %s", ok)
		g.emit("goto %s", skip)
		g.emit("%s:", ok)
	case 7:
		g.emit("if w9 > w8 goto %s", skip) // no range
	default:
		g.emit("if r9 < r8 goto %s", skip) // the wrong branch
	}
}

// bound emits something that bounds a scalar register: a mask or a
// comparison (jumping to skip when out of range).
func (g *progGen) bound(reg, skip string) {
	switch g.intn(8) {
	case 0:
		g.emit("%s &= %d", reg, g.imm())
	case 1:
		g.emit("w%s &= %d", reg[1:], g.imm())
	case 2:
		g.emit("if %s > %d goto %s", reg, g.imm(), skip)
	case 3:
		g.emit("if %s s> %d goto %s", reg, g.imm(), skip)
		g.emit("if %s s< %d goto %s", reg, g.imm(), skip)
	case 4:
		g.emit("if w%s > %d goto %s", reg[1:], g.imm(), skip)
	case 5:
		g.emit("%s >>= %d", reg, 56+g.intn(8))
	case 6:
		g.emit("%s %%= %d", reg, 1+g.intn(64))
	default:
		g.emit("if %s >= %d goto %s", reg, g.imm(), skip)
		g.emit("%s <<= 32", reg)
		g.emit("%s s>>= 32", reg)
	}
}

var aluOps = []string{"+=", "-=", "*=", "/=", "%=", "|=", "&=", "^=", "<<=", ">>=", "s>>=", "s/=", "s%="}

func (g *progGen) op() {
	skip := g.label()
	switch g.intn(16) {
	case 0, 1: // ALU with an immediate
		w, op := g.pick("r", "w"), aluOps[g.intn(len(aluOps))]
		dst := g.scalar()[1:]
		imm := g.imm()
		if strings.Contains(op, ">>") || op == "<<=" {
			imm &= 63
			if w == "w" {
				imm &= 31
			}
		}
		if (op == "/=" || op == "%=" || op == "s/=" || op == "s%=") && imm == 0 {
			imm = 3
		}
		g.emit("%s%s %s %d", w, dst, op, imm)
	case 2: // ALU between registers, moves and unary operations
		w := g.pick("r", "w")
		dst, src := g.scalar()[1:], g.scalar()[1:]
		switch g.intn(6) {
		case 0:
			g.emit("%s%s = %s%s", w, dst, w, src)
		case 1:
			g.emit("%s%s = -%s%s", w, dst, w, dst)
		case 2:
			g.emit("r%s = %s r%s", dst, g.pick("be16", "be32", "le16", "le32", "bswap16", "bswap32", "bswap64"), dst)
		case 3:
			g.emit("%s%s = (%s)%s%s", w, dst, g.pick("s8", "s16", "s32"), w, src)
		default:
			g.emit("%s%s %s %s%s", w, dst, aluOps[g.intn(len(aluOps))], w, src)
		}
	case 3, 4: // packet access at a constant offset after a check
		size, n := g.size()
		off := g.intn(24)
		g.emit("r1 = r7")
		g.emit("r1 += %d", off)
		g.pktCheck("r1", n+g.intn(3)-1, skip)
		if g.intn(3) == 0 {
			g.emit("*(%s *)(r1 %+d) = %s", size, g.intn(4)-1, g.scalar())
		} else {
			g.emit("%s = *(%s *)(r1 %+d)", g.scalar(), size, g.intn(4)-1)
		}
	case 5: // packet access at a variable offset
		size, n := g.size()
		src := g.scalar()
		g.emit("r9 = %s", src)
		g.bound("r9", skip)
		g.emit("r1 = r7")
		g.emit("r1 += r9")
		g.pktCheck("r1", n, skip)
		g.emit("%s = *(%s *)(r1 +0)", g.scalar(), size)
	case 6: // stack store and load
		size, n := g.size()
		off := -8 * (1 + g.intn(8))
		if g.intn(4) == 0 {
			off += g.intn(8)
		}
		if g.intn(2) == 0 {
			g.emit("*(%s *)(r10 %+d) = %s", size, off, g.scalar())
		} else {
			g.emit("*(%s *)(r10 %+d) = %d", size, off, g.imm())
		}
		_ = n
		size2, _ := g.size()
		g.emit("%s = *(%s *)(r10 %+d)", g.scalar(), size2, off-off%8+[]int{0, 0, 4, 2}[g.intn(4)])
	case 7: // stack access at a variable offset
		g.emit("r9 = %s", g.scalar())
		g.bound("r9", skip)
		g.emit("r1 = r10")
		g.emit("r1 += -64")
		g.emit("r1 += r9")
		if g.intn(2) == 0 {
			g.emit("*(u8 *)(r1 +0) = %s", g.scalar())
		} else {
			g.emit("%s = *(u8 *)(r1 +0)", g.scalar())
		}
	case 8, 9: // map lookup and value access
		m := g.intn(2)
		if g.intn(2) == 0 {
			src := g.scalar()
			if g.intn(2) == 0 {
				g.bound(src, skip)
			}
			g.emit("*(%s *)(r10 %+d) = %s", g.pick("u64", "u32", "u16", "u8"), -8*(1+g.intn(9)), src)
		}
		g.emit("*(u32 *)(r10 -4) = %d", g.intn(4))
		g.emit("r1 = map[fd:%d] ll", m)
		g.emit("r2 = r10")
		g.emit("r2 += -4")
		g.emit("call bpf_map_lookup_elem#1")
		g.emit("r1 = 1\nr2 = 2\nr3 = 3\nr4 = 4\nr5 = 5")
		g.emit("if r0 == 0 goto %s", skip)
		g.emit("r9 = r0")
		g.emit("r0 = 0")
		size, _ := g.size()
		switch g.intn(3) {
		case 0:
			g.emit("r1 = *(u64 *)(r9 +0)")
			g.bound("r1", skip)
			g.emit("r9 += r1")
		case 1:
			// An offset that went through the stack.
			g.emit("r1 = *(%s *)(r10 %+d)", g.pick("u64", "u32", "u16", "u8"), -8*(1+g.intn(9)))
			if g.intn(2) == 0 {
				g.bound("r1", skip)
			}
			g.emit("r9 += r1")
		}
		if g.intn(2) == 0 {
			g.emit("r9 += %d", g.intn(20)-2)
		}
		switch g.intn(3) {
		case 0:
			g.emit("*(%s *)(r9 %+d) = %s", size, g.intn(18)-1, g.scalar())
		case 1:
			g.emit("lock *(u64 *)(r9 %+d) += %s", 8*g.intn(3), g.scalar())
		default:
			g.emit("%s = *(%s *)(r9 %+d)", g.scalar(), size, g.intn(18)-1)
		}
	case 10: // conditional jump over the next ops
		l := g.label()
		a := g.scalar()
		w := g.pick("", "w")
		cmp := g.pick(">", ">=", "<", "<=", "s>", "s>=", "s<", "s<=", "==", "!=", "&")
		if w == "w" {
			a = "w" + a[1:]
		}
		if g.intn(2) == 0 {
			b := g.scalar()
			if w == "w" {
				b = "w" + b[1:]
			}
			g.emit("if %s %s %s goto %s", a, cmp, b, l)
		} else {
			g.emit("if %s %s %d goto %s", a, cmp, g.imm(), l)
		}
		g.pending = append(g.pending, pendingLabel{name: l, after: 1 + g.intn(4)})
	case 11: // spill and fill
		off := -8 * (1 + g.intn(8))
		src := g.pick("r7", "r8", "r6", g.scalar())
		g.emit("*(u64 *)(r10 %+d) = %s", off, src)
		if g.intn(3) == 0 {
			g.emit("*(%s *)(r10 %+d) = 0", g.pick("u8", "u32"), off)
		}
		g.emit("%s = *(u64 *)(r10 %+d)", g.pick("r7", g.scalar()), off)
	case 12: // narrow spill of a scalar
		off := -8 * (1 + g.intn(8))
		size, _ := g.size()
		src := g.scalar()
		g.bound(src, skip)
		g.emit("*(%s *)(r10 %+d) = %s", size, off, src)
		size2, _ := g.size()
		g.emit("%s = *(%s *)(r10 %+d)", g.scalar(), size2, off)
	case 13: // helpers
		switch g.intn(6) {
		case 5:
			g.callbackLoop()
		case 3:
			// A helper writing to the stack, over spills.
			g.emit("r1 = r10")
			g.emit("r1 += %d", -8*(1+g.intn(9)))
			g.emit("r2 = %d", 1+g.intn(16))
			g.emit("call bpf_get_current_comm#16")
		case 4:
			// A function working through a pointer to this stack.
			g.nsubs++
			name := fmt.Sprintf("f%d", g.nsubs)
			g.emit("r1 = r10")
			g.emit("r1 += %d", -8*(1+g.intn(9)))
			g.emit("r2 = %s", g.scalar())
			g.emit("call %s", name)
			g.emit("%s = r0", g.scalar())
			size, _ := g.size()
			fmt.Fprintf(&g.subs, "%s:\n", name)
			switch g.intn(3) {
			case 0:
				fmt.Fprintf(&g.subs, "*(%s *)(r1 %+d) = r2\nr0 = 0\n", size, g.intn(12)-2)
			case 1:
				fmt.Fprintf(&g.subs, "r0 = *(%s *)(r1 %+d)\n", size, g.intn(12)-2)
			default:
				fmt.Fprintf(&g.subs, "r2 &= %d\nr1 += r2\nr0 = *(u8 *)(r1 +0)\n", g.imm())
			}
			fmt.Fprintf(&g.subs, "exit\n")
		case 0:
			g.emit("call bpf_get_prandom_u32#7")
		case 1:
			g.emit("r1 = r6")
			g.emit("r2 = %d", g.intn(16)-8)
			g.emit("call bpf_xdp_adjust_head#44")
			if g.intn(4) != 0 {
				g.emit("r7 = *(u32 *)(r6 +0)")
				g.emit("r8 = *(u32 *)(r6 +4)")
			}
		default:
			g.emit("r1 = r10")
			g.emit("r1 += %d", -8*(1+g.intn(4)))
			g.emit("r2 = %d", g.intn(34))
			g.emit("r3 = 0\nr4 = 0\nr5 = 0")
			g.emit("call bpf_csum_diff#28")
		}
		g.emit("r1 = %d\nr2 = %d\nr3 = 0\nr4 = 1\nr5 = -1", g.imm(), g.imm())
	case 14: // context loads and loads of scalars from the packet
		g.emit("%s = *(u32 *)(r6 +%d)", g.scalar(), []int{12, 16, 0, 8}[g.intn(4)])
	default: // pointer arithmetic on a packet pointer, checked later
		g.emit("r7 += %d", g.intn(8))
	}
	g.emit("%s:", skip)
	for i := 0; i < len(g.pending); i++ {
		g.pending[i].after--
		if g.pending[i].after <= 0 {
			g.emit("%s:", g.pending[i].name)
			g.pending = append(g.pending[:i], g.pending[i+1:]...)
			i--
		}
	}
}

// callbackLoop emits a bpf_loop whose callback carries a value through its
// rounds in a context on this stack: counting, a state machine, a mask,
// or used as an offset into the array's value; the value is read back
// after the loop, to be used by later ops.
func (g *progGen) callbackLoop() {
	g.nsubs++
	name := fmt.Sprintf("cb%d", g.nsubs)
	off := -8 * (1 + g.intn(8))
	g.emit("*(u64 *)(r10 %+d) = %s", off, g.pick("0", "1", g.scalar()))
	if g.intn(4) == 0 {
		// A count the verifier does not know.
		g.emit("r1 = %s\nr1 &= %d", g.scalar(), g.intn(64))
	} else {
		g.emit("r1 = %d", g.intn(6))
	}
	g.emit("r2 = subprog[%s] ll\nr3 = r10\nr3 += %d\nr4 = 0\ncall bpf_loop#181", name, off)
	g.emit("%s = *(u64 *)(r10 %+d)", g.scalar(), off)
	fmt.Fprintf(&g.subs, "%s:\nr6 = r2\nr3 = *(u64 *)(r6 +0)\n", name)
	switch g.intn(4) {
	case 0:
		fmt.Fprintf(&g.subs, "r3 += %d\n", 1+g.intn(8))
	case 1:
		fmt.Fprintf(&g.subs, "if r3 == 0 goto %s_a\nif r3 == 1 goto %s_b\ngoto %s_st\n%s_a: r3 = 1\ngoto %s_st\n%s_b: r3 = %d\n", name, name, name, name, name, name, g.intn(20))
	case 2:
		fmt.Fprintf(&g.subs, "r3 += 1\nr3 &= %d\n", g.intn(32))
	default:
		fmt.Fprintf(&g.subs, "*(u32 *)(r10 -4) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto %s_st\nr3 = *(u64 *)(r6 +0)\nr0 += r3\nr0 = *(u8 *)(r0 +0)\nr3 += %d\n", name, g.intn(3))
	}
	fmt.Fprintf(&g.subs, "%s_st: *(u64 *)(r6 +0) = r3\nr0 = %d\nexit\n", name, g.intn(2))
}

// generate makes a program from fuzz bytes.
func generateProgram(data []byte) string {
	g := &progGen{data: data}
	g.emit("r6 = r1")
	g.emit("r7 = *(u32 *)(r6 +0)")
	g.emit("r8 = *(u32 *)(r6 +4)")
	for i := range 6 {
		g.emit("r%d = %d", i, g.imm())
	}
	n := 1 + g.intn(24)
	for range n {
		if len(g.data) == 0 {
			break
		}
		g.op()
	}
	for _, p := range g.pending {
		g.emit("%s:", p.name)
	}
	g.emit("r0 = 2")
	g.emit("exit")
	return g.b.String() + g.subs.String()
}

func dump(insns []isa.Instruction) string {
	var b bytes.Buffer
	isa.Dump(&b, insns, nil)
	return b.String()
}

// checkSoundness verifies a generated program and, when the verifier
// accepts it, runs it checked on a few packets. It reports whether the
// verifier accepted the program.
func checkSoundness(t *testing.T, data []byte) bool {
	env, err := getSoundnessEnv()
	if err != nil {
		t.Fatal(err)
	}
	src := generateProgram(data)
	insns, err := isa.Assemble(src)
	if err != nil {
		t.Fatalf("generated program does not assemble: %v\n%s", err, src)
	}
	if _, err := verifier.Verify(insns, verifier.Options{Type: progtype.XDP, Maps: env.infos}); err != nil {
		if !errors.Is(err, verifier.ErrRejected) {
			t.Fatalf("verifier error that is no rejection: %v", err)
		}
		return false
	}
	p, err := newProgram("fuzz", ebpf.XDP, insns, env.maps, env.cpus, ProgramOptions{NoVerify: true, Engine: EngineInterpreter})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	defer p.Close()
	rng := rand.New(rand.NewPCG(uint64(len(data)), uint64(len(src))))
	for _, n := range []int{14, 15 + rng.IntN(50), 64 + rng.IntN(200)} {
		pkt := make([]byte, n)
		for i := range pkt {
			pkt[i] = byte(rng.Uint32())
		}
		if _, _, err := p.Test(pkt); err != nil {
			if errors.Is(err, vm.ErrMemory) {
				t.Fatalf("the verifier accepted an unsafe program: %v\npacket of %d bytes\n%s", err, n, dump(insns))
			}
			t.Fatalf("run: %v\n%s", err, dump(insns))
		}
	}
	return true
}

// soundnessSeeds are inputs that exercise every kind of op.
var soundnessSeeds = [][]byte{
	{5, 3, 4, 0, 1, 2, 3},
	{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20},
	{20, 9, 9, 9, 0, 1, 0, 2, 3, 4, 8, 1, 7, 7, 3, 0, 2, 5, 12, 3},
	{8, 3, 3, 3, 1, 0, 0, 0, 4, 2, 1, 3, 5, 1, 0, 0, 8, 1},
	{16, 5, 5, 5, 5, 5, 0, 6, 0, 5, 1, 2, 3, 7, 0, 0, 0, 0, 5, 6, 1, 2},
	{12, 12, 0, 1, 1, 0, 0, 3, 3, 12, 1, 2, 3, 2, 1},
}

func FuzzVerifierSoundness(f *testing.F) {
	for _, s := range soundnessSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkSoundness(t, data) })
}

// TestVerifierSoundnessRandom runs the soundness check on pseudo-random
// inputs, so that plain `go test` covers it too.
func TestVerifierSoundnessRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 3000
	if testing.Short() {
		n = 300
	}
	accepted := 0
	for range n {
		data := make([]byte, 16+rng.IntN(200))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		if checkSoundness(t, data) {
			accepted++
		}
	}
	t.Logf("%d of %d programs accepted and run checked", accepted, n)
}
