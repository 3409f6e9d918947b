package bpfvm_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
)

// Helper memory arguments through the public API (issue #11): the shapes
// that broke soundness are rejected with the kernel's messages, and the
// programs next to them that the verifier accepts run alike verified and
// in checked mode, on both engines. Rejected programs also run in checked
// mode, where they must end in an error or a result, never a crash.

// memMap is a map of a helper memory case: the name programs reference
// as map[fd:N] (N its index) and what it holds before the runs.
type memMap struct {
	spec  *ebpf.MapSpec
	value []byte // of key 0, or nil
	key   any    // key 0 of the map's key size: nil is a uint32
}

// asmCollection assembles a program of type typ referencing maps by index
// (map[fd:N]) into a collection spec with one program, "prog".
func asmCollection(t *testing.T, typ ebpf.ProgramType, text string, ms []memMap) *ebpf.CollectionSpec {
	t.Helper()
	insns, err := isa.Assemble(text)
	if err != nil {
		t.Fatal(err)
	}
	kinsns, err := asm.AppendInstructions(nil, bytes.NewReader(isa.EncodeProgram(insns)), binary.LittleEndian, "linux")
	if err != nil {
		t.Fatal(err)
	}
	spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{}, Programs: map[string]*ebpf.ProgramSpec{
		"prog": {Name: "prog", Type: typ, License: "GPL", Instructions: kinsns},
	}}
	for _, m := range ms {
		s := *m.spec
		if m.value != nil {
			key := m.key
			if key == nil {
				key = uint32(0)
			}
			s.Contents = []ebpf.MapKV{{Key: key, Value: m.value}}
		}
		spec.Maps[s.Name] = &s
	}
	for i := range kinsns {
		if kinsns[i].IsKfuncCall() {
			kinsns[i] = kinsns[i].WithReference(isa.KfuncName(int32(kinsns[i].Constant)))
		}
		if kinsns[i].IsLoadFromMap() {
			// By name, with no fd left (loaders keep a nonzero one).
			fd := uint32(kinsns[i].Constant)
			kinsns[i].Constant &^= 0xffffffff
			kinsns[i] = kinsns[i].WithReference(ms[fd].spec.Name)
		}
	}
	return spec
}

// memRun runs prog once; a run error is returned, not fatal.
func memRun(p *bpfvm.Program) (uint64, error) {
	res, err := p.Execute(&bpfvm.RunOptions{Data: make([]byte, 64)})
	if err != nil {
		return 0, err
	}
	return res.R0, nil
}

// memConfigs are the ways an accepted program runs.
var memConfigs = []struct {
	name string
	opts bpfvm.ProgramOptions
}{
	{"verified/interp", bpfvm.ProgramOptions{Engine: bpfvm.EngineInterpreter}},
	{"verified/jit", bpfvm.ProgramOptions{Engine: bpfvm.EngineJIT}},
	{"checked/interp", bpfvm.ProgramOptions{Engine: bpfvm.EngineInterpreter, NoVerify: true}},
	{"checked/jit", bpfvm.ProgramOptions{Engine: bpfvm.EngineJIT, NoVerify: true}},
}

func TestHelperMemSoundness(t *testing.T) {
	rodata := &ebpf.MapSpec{Name: ".rodata", Type: ebpf.Array, KeySize: 4, ValueSize: 16, MaxEntries: 1, Flags: 1 << 7}
	hash8 := &ebpf.MapSpec{Name: "hash8", Type: ebpf.Hash, KeySize: 8, ValueSize: 8, MaxEntries: 4}
	val16 := &ebpf.MapSpec{Name: "val16", Type: ebpf.Hash, KeySize: 4, ValueSize: 16, MaxEntries: 4}
	xy := []byte("xy\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")
	noNUL := []byte("0123456789abcdef")
	// strtol parses "42" at fp-32 into the 8 bytes at r4.
	strtol := "*(u64 *)(r10 -32) = 0x3234\nr1 = r10\nr1 += -32\nr2 = 2\nr3 = 0\ncall bpf_strtol#105\n"
	const efault = uint64(0xfffffffffffffff2) // -EFAULT
	for _, c := range []struct {
		name string
		typ  ebpf.ProgramType
		maps []memMap
		asm  string
		err  string // "" accepts, and every configuration returns want
		want uint64
	}{
		// Class 1: the end of an unbounded variable-offset range
		// wrapped negative.
		{name: "unbounded stack write", asm: "r6 = *(u64 *)(r10 -64)\nif r6 s< 0 goto out\nr4 = r10\nr4 += 16\nr4 += r6\n" + strtol + "out: r0 = 0\nexit", err: "invalid unbounded variable-offset write to stack R4"},
		{name: "unbounded stack read", asm: "r6 = *(u64 *)(r10 -64)\nif r6 s< 0 goto out\nr1 = r10\nr1 += 16\nr1 += r6\nr2 = 8\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28\nout: r0 = 0\nexit", err: "invalid unbounded variable-offset read from stack R1"},
		{name: "bounded stack write", asm: "*(u64 *)(r10 -16) = 0\n*(u64 *)(r10 -8) = 0\ncall bpf_get_prandom_u32#7\nr0 &= 8\nr4 = r10\nr4 += -16\nr4 += r0\n" + strtol + "r0 = *(u64 *)(r10 -16)\nr1 = *(u64 *)(r10 -8)\nr0 += r1\nexit", want: 42},
		// Class 4: NULL with a size that may be more than 0.
		{name: "null with size range", asm: "call bpf_get_prandom_u32#7\nr2 = r0\nr2 &= 8\nr1 = 0\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28\nr0 = 0\nexit", err: "R1 type=scalar expected=fp"},
		{name: "null with size 0", asm: "r1 = 0\nr2 = 0\nr3 = 0\nr4 = 0\nr5 = 7\ncall bpf_csum_diff#28\nexit", want: 7},
		{name: "maybe-null value with size", maps: []memMap{{spec: val16}}, asm: "*(u32 *)(r10 -4) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\nr1 = r0\nr2 = 8\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28\nexit", want: efault},
		{name: "snprintf into maybe-null value", maps: []memMap{{spec: val16}, {spec: rodata, value: xy}}, asm: "*(u32 *)(r10 -4) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -4\ncall bpf_map_lookup_elem#1\nr1 = r0\nr2 = 16\nr3 = map_value[fd:1]+0 ll\nr4 = 0\nr5 = 0\ncall bpf_snprintf#165\nexit", want: efault},
		// Class 5: constant strings.
		{name: "format without NUL", maps: []memMap{{spec: rodata, value: noNUL}}, asm: "*(u64 *)(r10 -8) = 0\nr1 = r10\nr1 += -8\nr2 = 8\nr3 = map_value[fd:0]+0 ll\nr4 = 0\nr5 = 0\ncall bpf_snprintf#165\nexit", err: "string is not zero-terminated"},
		{name: "format at variable offset", maps: []memMap{{spec: rodata, value: xy}}, asm: "call bpf_get_prandom_u32#7\nr0 &= 1\n*(u64 *)(r10 -8) = 0\nr1 = r10\nr1 += -8\nr2 = 8\nr3 = map_value[fd:0]+0 ll\nr3 += r0\nr4 = 0\nr5 = 0\ncall bpf_snprintf#165\nexit", err: "R3 is not a constant address'"},
		{name: "format", maps: []memMap{{spec: rodata, value: xy}}, asm: "*(u64 *)(r10 -8) = 0\nr1 = r10\nr1 += -8\nr2 = 8\nr3 = map_value[fd:0]+0 ll\nr4 = 0\nr5 = 0\ncall bpf_snprintf#165\nexit", want: 3},
		// Class 10: a helper writes a for_each callback's key.
		{name: "strtol into key", maps: []memMap{{spec: hash8}}, asm: "r1 = map[fd:0] ll\nr2 = subprog[cb] ll\nr3 = 0\nr4 = 0\ncall bpf_for_each_map_elem#164\nr0 = 0\nexit\ncb: r4 = r2\n" + strtol + "r0 = 0\nexit", err: "R4 cannot write into map_key"},
		{name: "strtol into value", maps: []memMap{{spec: hash8, value: make([]byte, 8), key: uint64(0)}}, asm: "r1 = map[fd:0] ll\nr2 = subprog[cb] ll\nr3 = 0\nr4 = 0\ncall bpf_for_each_map_elem#164\n*(u64 *)(r10 -8) = 0\nr1 = map[fd:0] ll\nr2 = r10\nr2 += -8\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto out\nr0 = *(u64 *)(r0 +0)\nexit\nout: r0 = 1\nexit\ncb: r4 = r3\n" + strtol + "r0 = 0\nexit", want: 42},
	} {
		t.Run(c.name, func(t *testing.T) {
			typ := c.typ
			if typ == ebpf.UnspecifiedProgram {
				typ = ebpf.XDP
			}
			spec := asmCollection(t, typ, c.asm, c.maps)
			for _, cfg := range memConfigs {
				if c.err != "" && !cfg.opts.NoVerify {
					_, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: cfg.opts})
					var ve *bpfvm.VerifierError
					if !errors.As(err, &ve) || !strings.Contains(err.Error(), c.err) {
						t.Errorf("%s: %v, want a verifier error with %q", cfg.name, err, c.err)
					}
					continue
				}
				opts := cfg.opts
				if c.err != "" {
					opts.Budget = 1 << 20 // a rejected program may loop
				}
				coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: opts})
				if err != nil {
					t.Fatalf("%s: %v", cfg.name, err)
				}
				got, err := memRun(coll.Programs["prog"])
				if c.err == "" && (err != nil || got != c.want) {
					t.Errorf("%s: %#x, %v; want %#x", cfg.name, got, err, c.want)
				}
				coll.Close()
			}
		})
	}
}

// A program verified against a format string keeps it: .rodata is frozen
// before the program is verified, so Go code cannot take the format's NUL
// away (EPERM), and the run gives what the verifier saw. The same map not
// frozen (another name) is not a constant string to the verifier, as in
// the kernel.
func TestHelperMemFormatRewritten(t *testing.T) {
	text := "*(u64 *)(r10 -8) = 0\nr1 = r10\nr1 += -8\nr2 = 8\nr3 = map_value[fd:0]+4 ll\nr4 = 0\nr5 = 0\ncall bpf_snprintf#165\nexit"
	value := []byte("....xy\x00.........")
	rodata := &ebpf.MapSpec{Name: ".rodata", Type: ebpf.Array, KeySize: 4, ValueSize: 16, MaxEntries: 1, Flags: 1 << 7}
	spec := asmCollection(t, ebpf.XDP, text, []memMap{{spec: rodata, value: value}})
	for _, cfg := range memConfigs {
		coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: cfg.opts})
		if err != nil {
			t.Fatalf("%s: %v", cfg.name, err)
		}
		if got, err := memRun(coll.Programs["prog"]); err != nil || got != 3 {
			t.Errorf("%s: %d, %v; want 3", cfg.name, got, err)
		}
		if err := coll.Maps[".rodata"].Put(uint32(0), []byte("0123456789abcdef")); !errors.Is(err, bpfvm.ErrPermission) {
			t.Errorf("%s: Put on the frozen .rodata: %v, want ErrPermission", cfg.name, err)
		}
		if got, err := memRun(coll.Programs["prog"]); err != nil || got != 3 {
			t.Errorf("%s after the Put: %#x, %v; want 3", cfg.name, got, err)
		}
		coll.Close()
	}
	unfrozen := *rodata
	unfrozen.Name = "rodata"
	spec = asmCollection(t, ebpf.XDP, text, []memMap{{spec: &unfrozen, value: value}})
	_, err := bpfvm.NewCollection(spec)
	var ve *bpfvm.VerifierError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "R3 does not point to a readonly map'") {
		t.Errorf("format in a map not frozen: %v, want the kernel's rejection", err)
	}
}

// Class 11: a helper write over an iterator destroys it.
func TestHelperMemIterator(t *testing.T) {
	// The loop counts the rounds in r6; strtol writes 42 at r4 first.
	prog := func(at string) string {
		return "r1 = r10\nr1 += -8\nr2 = 0\nr3 = 10\ncall bpf_iter_num_new#0\n" +
			"r4 = r10\nr4 += " + at + "\n*(u64 *)(r10 -32) = 0x3234\nr1 = r10\nr1 += -32\nr2 = 2\nr3 = 0\ncall bpf_strtol#105\n" +
			"r6 = 0\nloop: r1 = r10\nr1 += -8\ncall bpf_iter_num_next#0\nif r0 == 0 goto done\nr6 += 1\ngoto loop\n" +
			"done: r1 = r10\nr1 += -8\ncall bpf_iter_num_destroy#0\nr0 = r6\nexit"
	}
	for _, c := range []struct {
		name, at, err string
		want          uint64
	}{
		{name: "over the iterator", at: "-8", err: "expected an initialized iter_num as arg #0"},
		{name: "next to the iterator", at: "-16", want: 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			insns, err := isa.Assemble(prog(c.at))
			if err != nil {
				t.Fatal(err)
			}
			for _, cfg := range memConfigs {
				opts := cfg.opts
				if c.err != "" && !opts.NoVerify {
					_, err := bpfvm.NewRawProgram("iter", ebpf.XDP, insns, opts)
					var ve *bpfvm.VerifierError
					if !errors.As(err, &ve) || !strings.Contains(err.Error(), c.err) {
						t.Errorf("%s: %v, want a verifier error with %q", cfg.name, err, c.err)
					}
					continue
				}
				opts.Budget = 1 << 20 // unverified, the clobbered iterator may run on
				p, err := bpfvm.NewRawProgram("iter", ebpf.XDP, insns, opts)
				if err != nil {
					t.Fatalf("%s: %v", cfg.name, err)
				}
				got, err := memRun(p)
				if c.err == "" && (err != nil || got != c.want) {
					t.Errorf("%s: %d, %v; want %d", cfg.name, got, err, c.want)
				}
				p.Close()
			}
		})
	}
}

// The matrix of helper memory arguments: pointer kinds × offsets × sizes ×
// helpers. Each program's verdict is compared with the running kernel's,
// and each program bpfvm accepts runs in checked mode, where a memory
// fault would be a verifier bug.
func TestHelperMemMatrix(t *testing.T) {
	ms := []memMap{
		{spec: &ebpf.MapSpec{Name: "arr16", Type: ebpf.Array, KeySize: 4, ValueSize: 16, MaxEntries: 1}},
		// Named as a constant data section: cilium/ebpf freezes it.
		{spec: &ebpf.MapSpec{Name: ".rodata", Type: ebpf.Array, KeySize: 4, ValueSize: 16, MaxEntries: 1, Flags: 1 << 7}, value: []byte("xy\x00\x00%d\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")},
		{spec: &ebpf.MapSpec{Name: "hash8", Type: ebpf.Hash, KeySize: 8, ValueSize: 16, MaxEntries: 4}},
		{spec: &ebpf.MapSpec{Name: "rb", Type: ebpf.RingBuf, MaxEntries: 4096}},
		{spec: &ebpf.MapSpec{Name: "queue8", Type: ebpf.Queue, ValueSize: 8, MaxEntries: 4}},
	}
	// Every program starts with the context in r9, zeroed slots at fp-24
	// (a result), fp-40 (a hash key) and fp-48 (an array key), and "1" at
	// fp-32; it ends at "end" (after which a ring buffer sample in r8 is
	// discarded) or "end0".
	prologue := "r9 = r1\n*(u64 *)(r10 -24) = 0\n*(u64 *)(r10 -32) = 0x31\n*(u64 *)(r10 -40) = 0\n*(u64 *)(r10 -48) = 0\n"
	ptrs := []struct{ name, setup, tail string }{
		{"fp", "*(u64 *)(r10 -16) = 0\n*(u64 *)(r10 -8) = 0\nr6 = r10\nr6 += -16\n", ""},
		{"fp uninit", "r6 = r10\nr6 += -64\n", ""},
		// An iterator at fp-16, destroyed at the end; a spilled context
		// pointer at fp-16, used at the end.
		{"fp iter", "r1 = r10\nr1 += -16\nr2 = 0\nr3 = 4\ncall bpf_iter_num_new#0\n*(u64 *)(r10 -8) = 0\nr6 = r10\nr6 += -16\n", "r1 = r10\nr1 += -16\ncall bpf_iter_num_destroy#0\n"},
		// The caller's fp-16 in a function the helper is called from
		// (see below).
		{"caller fp", "", ""},
		{"fp spill", "*(u64 *)(r10 -16) = r9\n*(u64 *)(r10 -8) = 0\nr6 = r10\nr6 += -16\n", "r1 = *(u64 *)(r10 -16)\nr0 = *(u32 *)(r1 +0)\n"},
		{"value", "r1 = map[fd:0] ll\nr2 = r10\nr2 += -48\ncall bpf_map_lookup_elem#1\nif r0 == 0 goto end\nr6 = r0\n", ""},
		{"rdonly value", "r6 = map_value[fd:1]+0 ll\n", ""},
		{"maybe-null value", "r1 = map[fd:2] ll\nr2 = r10\nr2 += -40\ncall bpf_map_lookup_elem#1\nr6 = r0\n", ""},
		{"packet", "r2 = *(u32 *)(r9 +0)\nr3 = *(u32 *)(r9 +4)\nr4 = r2\nr4 += 16\nif r4 > r3 goto end\nr6 = r2\n", ""},
		{"ringbuf", "r1 = map[fd:3] ll\nr2 = 16\nr3 = 0\ncall bpf_ringbuf_reserve#131\nif r0 == 0 goto end0\nr8 = r0\nr6 = r0\n", "r1 = r8\nr2 = 0\ncall bpf_ringbuf_discard#133\n"},
		{"null", "r6 = 0\n", ""},
		{"ctx", "r6 = r9\n", ""},
	}
	offs := []struct{ name, setup string }{
		{"0", ""},
		{"+4", "r6 += 4\n"},
		{"+8", "r6 += 8\n"},
		{"+16", "r6 += 16\n"},
		{"-8", "r6 += -8\n"},
		{"var&7", "call bpf_get_prandom_u32#7\nr0 &= 7\nr6 += r0\n"},
		{"var&8", "call bpf_get_prandom_u32#7\nr0 &= 8\nr6 += r0\n"},
		{"var[-4,3]", "call bpf_get_prandom_u32#7\nr0 &= 7\nr0 -= 4\nr6 += r0\n"},
		{"u32", "call bpf_get_prandom_u32#7\nw0 = w0\nr6 += r0\n"},
		{"unbounded", "r0 = *(u64 *)(r10 -72)\nif r0 s< 0 goto end\nr6 += r0\n"},
		{"+32 unbounded", "r6 += 32\nr0 = *(u64 *)(r10 -72)\nif r0 s< 0 goto end\nr6 += r0\n"},
	}
	sizes := []struct{ name, setup string }{
		{"0", "r7 = 0\n"},
		{"1", "r7 = 1\n"},
		{"8", "r7 = 8\n"},
		{"16", "r7 = 16\n"},
		{"17", "r7 = 17\n"},
		{"[0,8]", "call bpf_get_prandom_u32#7\nr7 = r0\nr7 &= 8\n"},
		{"[1,16]", "call bpf_get_prandom_u32#7\nr7 = r0\nr7 &= 15\nr7 += 1\n"},
	}
	helpers := []struct {
		name, call string
		sized      bool
		tc         bool // a tc program: r9 is a struct __sk_buff
	}{
		{"skb_load_bytes", "r1 = r9\nr2 = 0\nr3 = r6\nr4 = r7\ncall bpf_skb_load_bytes#26\n", true, true},
		{"skb_store_bytes", "r1 = r9\nr2 = 0\nr3 = r6\nr4 = r7\nr5 = 0\ncall bpf_skb_store_bytes#9\n", true, true},
		{"csum_diff from", "r1 = r6\nr2 = r7\nr3 = 0\nr4 = 0\nr5 = 0\ncall bpf_csum_diff#28\n", true, false},
		{"csum_diff to", "r1 = 0\nr2 = 0\nr3 = r6\nr4 = r7\nr5 = 0\ncall bpf_csum_diff#28\n", true, false},
		{"snprintf str", "r1 = r6\nr2 = r7\nr3 = map_value[fd:1]+0 ll\nr4 = 0\nr5 = 0\ncall bpf_snprintf#165\n", true, false},
		{"ringbuf_output", "r1 = map[fd:3] ll\nr2 = r6\nr3 = r7\nr4 = 0\ncall bpf_ringbuf_output#130\n", true, false},
		{"trace_printk", "r1 = r6\nr2 = r7\ncall bpf_trace_printk#6\n", true, false},
		{"strtol buf", "r1 = r6\nr2 = r7\nr3 = 0\nr4 = r10\nr4 += -24\ncall bpf_strtol#105\n", true, false},
		{"strtol res", "r1 = r10\nr1 += -32\nr2 = 1\nr3 = 0\nr4 = r6\ncall bpf_strtol#105\n", false, false},
		{"lookup key", "r1 = map[fd:2] ll\nr2 = r6\ncall bpf_map_lookup_elem#1\n", false, false},
		{"update value", "r1 = map[fd:2] ll\nr2 = r10\nr2 += -40\nr3 = r6\nr4 = 0\ncall bpf_map_update_elem#2\n", false, false},
		{"pop", "r1 = map[fd:4] ll\nr2 = r6\ncall bpf_map_pop_elem#88\n", false, false},
	}
	kernelOK := os.Getuid() == 0 && rlimit.RemoveMemlock() == nil
	// Every fourth program (a stride that walks every size, offset and
	// pointer kind), every sixteenth with -short, all with
	// BPFVM_HELPERMEM=all.
	stride := 4
	switch {
	case os.Getenv("BPFVM_HELPERMEM") == "all":
		stride = 1
	case testing.Short():
		stride = 16
	}
	var n, compared, agreed, msgs, ran int
	for _, h := range helpers {
		for _, p := range ptrs {
			for _, o := range offs {
				for si, sz := range sizes {
					if !h.sized && si > 0 {
						break
					}
					n++
					if n%stride != 0 {
						continue
					}
					name := fmt.Sprintf("%s/%s/%s/%s", h.name, p.name, o.name, sz.name)
					setup, typ := p.setup, ebpf.XDP
					if h.tc {
						// struct __sk_buff's data and data_end.
						setup, typ = strings.ReplaceAll(strings.ReplaceAll(setup, "(r9 +0)", "(r9 +76)"), "(r9 +4)", "(r9 +80)"), ebpf.SchedCLS
					}
					text := prologue + setup + o.setup + sz.setup + h.call + "end: " + p.tail + "end0: r0 = 0\nexit"
					if p.tail == "" {
						text = prologue + setup + o.setup + sz.setup + h.call + "end: r0 = 0\nexit"
					}
					if p.name == "caller fp" {
						// The function gets the pointer in r1 and the
						// context in r2, and lays out its own slots.
						text = "*(u64 *)(r10 -16) = 0\n*(u64 *)(r10 -8) = 0\nr2 = r1\nr1 = r10\nr1 += -16\ncall sub\nr0 = 0\nexit\n" +
							"sub: r6 = r1\n" + strings.Replace(prologue, "r9 = r1", "r9 = r2", 1) + o.setup + sz.setup + h.call + "end: r0 = 0\nexit"
					}
					spec := asmCollection(t, typ, text, ms)
					coll, ours := bpfvm.NewCollection(spec)
					var ve *bpfvm.VerifierError
					if ours != nil && !errors.As(ours, &ve) {
						t.Fatalf("%s: %v", name, ours)
					}
					if ours == nil {
						coll.Close()
					}
					if kernelOK {
						kc, kerr := ebpf.NewCollection(kernelKfuncs(t, spec))
						if kerr == nil {
							kc.Close()
						}
						var kve *ebpf.VerifierError
						if kerr != nil && !errors.As(kerr, &kve) {
							t.Fatalf("%s: kernel: %v", name, kerr)
						}
						compared++
						switch {
						case (kerr == nil) != (ours == nil):
							t.Errorf("%s: bpfvm %v, kernel %v\n%s", name, ours, kerr, text)
						default:
							agreed++
							if ours != nil && strings.Contains(strings.Join(kve.Log, "\n"), lastLine(ve.Cause.Error())) {
								msgs++
							}
						}
					}
					if ours != nil {
						continue
					}
					// Accepted: checked mode must see no fault.
					cc, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{NoVerify: true}})
					if err != nil {
						t.Fatalf("%s: checked: %v", name, err)
					}
					if _, err := memRun(cc.Programs["prog"]); err != nil {
						t.Errorf("%s: accepted, and the checked run fails: %v\n%s", name, err, text)
					}
					cc.Close()
					ran++
				}
			}
		}
	}
	t.Logf("%d programs; %d compared with the kernel, %d verdicts agree, %d of the rejections with the kernel's message; %d accepted ran clean in checked mode", n, compared, agreed, msgs, ran)
}

// kernelKfuncs returns a copy of spec whose kfunc calls call the kernel's
// functions by their vmlinux BTF ids.
func kernelKfuncs(t *testing.T, spec *ebpf.CollectionSpec) *ebpf.CollectionSpec {
	spec = spec.Copy()
	for _, p := range spec.Programs {
		for i := range p.Instructions {
			ins := &p.Instructions[i]
			if !ins.IsKfuncCall() {
				continue
			}
			kspec, err := btf.LoadKernelSpec()
			if err != nil {
				t.Skipf("kernel BTF: %v", err)
			}
			typ, err := kspec.AnyTypeByName(ins.Reference())
			if err != nil {
				t.Fatal(err)
			}
			id, err := kspec.TypeID(typ)
			if err != nil {
				t.Fatal(err)
			}
			*ins = ins.WithReference("")
			ins.Constant = int64(id)
		}
	}
	return spec
}

// lastLine is the verifier's message: an error's text after "insn N: ".
func lastLine(s string) string {
	if i := strings.Index(s, "insn "); i >= 0 {
		if j := strings.Index(s[i:], ": "); j >= 0 {
			return s[i+j+2:]
		}
	}
	return s
}

// Formats may hold bytes past ASCII, as in the kernel; control characters
// are refused at verification.
func TestHelperMemFormatBytes(t *testing.T) {
	text := "*(u64 *)(r10 -8) = 0\nr1 = r10\nr1 += -8\nr2 = 8\nr3 = map_value[fd:0]+0 ll\nr4 = 0\nr5 = 0\ncall bpf_snprintf#165\nr0 = *(u64 *)(r10 -8)\nexit"
	for _, c := range []struct {
		format string
		want   uint64 // the output, a NUL-terminated little-endian string
		err    string
	}{
		{format: "\x80xy", want: 0x797880},
		{format: "a\xffb", want: 0x62ff61},
		{format: "a\x01b", err: "Invalid format string"},
		{format: "a\x7fb", err: "Invalid format string"},
	} {
		v := make([]byte, 16)
		copy(v, c.format)
		spec := asmCollection(t, ebpf.XDP, text, []memMap{{spec: &ebpf.MapSpec{Name: ".rodata", Type: ebpf.Array, KeySize: 4, ValueSize: 16, MaxEntries: 1, Flags: 1 << 7}, value: v}})
		if c.err != "" {
			_, err := bpfvm.NewCollection(spec)
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want %q", c.format, err, c.err)
			}
			continue
		}
		if os.Getuid() == 0 && rlimit.RemoveMemlock() == nil {
			kc, err := ebpf.NewCollection(spec.Copy())
			if err != nil {
				t.Fatal(err)
			}
			got, err := kc.Programs["prog"].Run(&ebpf.RunOptions{Data: make([]byte, 64)})
			kc.Close()
			if err != nil || uint64(got) != c.want&0xffffffff {
				t.Errorf("%q: kernel %#x, %v; want %#x", c.format, got, err, c.want)
			}
		}
		for _, cfg := range memConfigs {
			coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: cfg.opts})
			if err != nil {
				t.Fatalf("%s: %v", cfg.name, err)
			}
			if got, err := memRun(coll.Programs["prog"]); err != nil || got != c.want {
				t.Errorf("%q %s: %#x, %v; want %#x", c.format, cfg.name, got, err, c.want)
			}
			coll.Close()
		}
	}
}
