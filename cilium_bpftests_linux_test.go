package bpfvm_test

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
)

// TestCiliumBPFTests runs Cilium's BPF unit tests (bpf/tests, built by
// scripts/cilium-tests.sh into $BPFVM_CILIUM_TESTS) as Cilium's own runner
// (bpf/tests/bpftest) runs them: per test, the pktgen program, then the
// setup program, then the check program, each by a test run that starts
// from the packet and context the one before left; the outcome is the
// check program's return value and the per-test results it wrote to
// suite_result_map, protobuf-encoded. Every object runs in the kernel
// (cilium/ebpf, in a network namespace of its own, as Cilium's runner) and
// on bpfvm's interpreter and JIT, with and without run-time checks; each
// test's outcome on bpfvm must be the kernel's.
func TestCiliumBPFTests(t *testing.T) {
	dir := os.Getenv("BPFVM_CILIUM_TESTS")
	if dir == "" {
		t.Skip("BPFVM_CILIUM_TESTS is not set (scripts/cilium-tests.sh builds the objects)")
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.o"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no objects in %s (%v)", dir, err)
	}
	if f := os.Getenv("BPFVM_CILIUM_TEST"); f != "" {
		files = slices.DeleteFunc(files, func(p string) bool { return !strings.HasPrefix(filepath.Base(p), f) })
	}
	slices.Sort(files)
	kernel := haveKernel(t)
	configs := ciliumConfigs()
	agreed := make([]int, len(configs))
	ran := make([]int, len(configs))
	var kernelRefused, total int
	var mu sync.Mutex   // the counts, from parallel subtests
	var vmMu sync.Mutex // bpfvm's runs
	t.Cleanup(func() {
		for i, c := range configs {
			if kernel {
				t.Logf("%s: %d/%d tests agree with the kernel (%d objects the kernel refused)", c.name, agreed[i], total, kernelRefused)
			} else {
				t.Logf("%s: %d tests ran (no kernel to compare with)", c.name, ran[i])
			}
		}
	})
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".o")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			spec, err := ciliumSpec(file)
			if err != nil {
				t.Fatal(err)
			}
			var want map[string]ciliumOutcome
			if kernel {
				start := time.Now()
				want, err = ciliumTestsKernel(spec)
				t.Logf("kernel: %d tests in %v", len(want), time.Since(start))
				if err != nil {
					mu.Lock()
					kernelRefused++
					mu.Unlock()
					t.Skipf("kernel: %v", err)
				}
				mu.Lock()
				total += len(want)
				mu.Unlock()
			}
			for i, c := range configs {
				t.Run(c.name, func(t *testing.T) {
					// One object on bpfvm at a time: a run of another
					// collection inside holds back the reuse of what a
					// run deletes (maps.Domain.Sole), where the
					// kernel's free lists reuse at once, and
					// nat4_port_allocation_udp runs out of elements.
					vmMu.Lock()
					defer vmMu.Unlock()
					start := time.Now()
					got, err := ciliumTestsVM(spec, c.opts)
					t.Logf("%d tests in %v", len(got), time.Since(start))
					if err != nil {
						t.Errorf("bpfvm: %v", err)
						return
					}
					mu.Lock()
					defer mu.Unlock()
					ran[i] += len(got)
					if want == nil {
						for _, n := range slices.Sorted(mapKeys(got)) {
							t.Logf("%s: %s", n, got[n])
						}
						return
					}
					for _, n := range slices.Sorted(mapKeys(want)) {
						w, g := want[n], got[n]
						if w.same(g) {
							agreed[i]++
							continue
						}
						t.Errorf("%s:\nbpfvm  %s\nkernel %s", n, g.detail(), w.detail())
					}
				})
			}
		})
	}
}

// ciliumConfig is one way of running the tests on bpfvm.
type ciliumConfig struct {
	name string
	opts bpfvm.CollectionOptions
}

func ciliumConfigs() []ciliumConfig {
	var out []ciliumConfig
	for _, e := range []bpfvm.Engine{bpfvm.EngineInterpreter, bpfvm.EngineJIT} {
		for _, c := range []bpfvm.Checks{bpfvm.ChecksOn, bpfvm.ChecksOff} {
			name := e.String() + "/checked"
			if c == bpfvm.ChecksOff {
				name = e.String() + "/unchecked"
			}
			out = append(out, ciliumConfig{name: name, opts: bpfvm.CollectionOptions{
				Programs: bpfvm.ProgramOptions{Engine: e, Checks: c},
				// Per-CPU values for every possible CPU, as the
				// kernel's and .data.aux's stride assume.
				NumCPU: ebpf.MustPossibleCPU(),
			}})
		}
	}
	return out
}

// ciliumTestSection names a test program: <type>/test/<test>/<stage>.
var ciliumTestSection = regexp.MustCompile(`[^/]+/test/([^/]+)/(check|setup|pktgen)`)

// ciliumSpec reads a test object and prepares it as Cilium's runner and
// loader (pkg/bpf.LoadCollection) do: no pinning; only the program types
// BPF_PROG_TEST_RUN runs; the tail calls in cilium_calls at the slots
// their __declare_tail tags name, those that no entry or test program can
// reach left out; .data.aux sized for every possible CPU.
func ciliumSpec(file string) (*ebpf.CollectionSpec, error) {
	spec, err := loader.LoadCollectionSpec(file)
	if err != nil {
		return nil, err
	}
	for _, m := range spec.Maps {
		m.Pinning = ebpf.PinNone
	}
	for n, p := range spec.Programs {
		switch p.Type {
		case ebpf.XDP, ebpf.SchedACT, ebpf.SchedCLS:
		default:
			delete(spec.Programs, n)
		}
	}
	if err := ciliumTailCalls(spec); err != nil {
		return nil, err
	}
	if err := ciliumAuxData(spec); err != nil {
		return nil, err
	}
	return spec, nil
}

// ciliumTailCalls fills cilium_calls with the tail calls (sections ending
// in /tail, with a "tail:cilium_calls/<slot>" decl tag) reachable from the
// entry points and test programs through static tail calls (mov r3, slot
// after loading cilium_calls into r2), and drops the others.
func ciliumTailCalls(spec *ebpf.CollectionSpec) error {
	calls := spec.Maps["cilium_calls"]
	if calls == nil {
		return nil
	}
	slots := map[uint32]string{}
	for name, p := range spec.Programs {
		if !strings.HasSuffix(p.SectionName, "/tail") {
			continue
		}
		fn := btf.FuncMetadata(&p.Instructions[0])
		if fn == nil {
			return fmt.Errorf("tail call %s: no function metadata", name)
		}
		found := false
		for _, tag := range fn.Tags {
			var slot uint32
			if _, err := fmt.Sscanf(tag, "tail:cilium_calls/%v", &slot); err == nil {
				if prev, dup := slots[slot]; dup {
					return fmt.Errorf("tail calls %s and %s at slot %d", prev, name, slot)
				}
				slots[slot] = name
				found = true
			}
		}
		if !found {
			return fmt.Errorf("tail call %s: no slot", name)
		}
	}
	live := map[string]bool{}
	var visit func(name string)
	visit = func(name string) {
		if live[name] {
			return
		}
		live[name] = true
		insns := spec.Programs[name].Instructions
		for i := 2; i < len(insns); i++ {
			call, idx, ld := insns[i], insns[i-1], insns[i-2]
			if !call.IsBuiltinCall() || call.Constant != int64(asm.FnTailCall) {
				continue
			}
			if idx.OpCode.ALUOp() != asm.Mov || idx.Dst != asm.R3 || !ld.IsLoadFromMap() || ld.Reference() != "cilium_calls" {
				continue
			}
			if tail, ok := slots[uint32(idx.Constant)]; ok {
				visit(tail)
			}
		}
	}
	for name, p := range spec.Programs {
		if strings.HasSuffix(p.SectionName, "/entry") || ciliumTestSection.MatchString(p.SectionName) {
			visit(name)
		}
	}
	for _, slot := range slices.Sorted(mapKeys(slots)) {
		name := slots[slot]
		if !live[name] {
			delete(spec.Programs, name)
			continue
		}
		calls.Contents = append(calls.Contents, ebpf.MapKV{Key: slot, Value: name})
	}
	return nil
}

// ciliumAuxData gives .data.aux one cache-line-aligned copy of its values
// per possible CPU, and tells the programs the stride and the last copy's
// offset (_aux_stride, _aux_max_off), as Cilium's loader does.
func ciliumAuxData(spec *ebpf.CollectionSpec) error {
	aux := spec.Maps[".data.aux"]
	if aux == nil {
		return nil
	}
	stride := (uint64(aux.ValueSize) + 63) &^ 63
	size := uint64(ebpf.MustPossibleCPU()) * stride
	aux.Contents = []ebpf.MapKV{{Key: uint32(0), Value: make([]byte, size)}}
	aux.ValueSize = uint32(size)
	for name, v := range map[string]uint64{"_aux_stride": stride, "_aux_max_off": size - stride} {
		s := spec.Variables[name]
		if s == nil {
			return fmt.Errorf(".data.aux without %s", name)
		}
		if err := s.Set(v); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// ciliumOutcome is what one test of an object did: the error that stopped
// it (a failed run, or a pktgen or setup program reporting failure), the
// check program's return value, and the results and logs it wrote.
type ciliumOutcome struct {
	err     string
	status  uint32
	results []ciliumResult
	logs    []string
}

type ciliumResult struct {
	name   string
	status uint64
	logs   []string
}

// same compares the outcomes, logs aside (they may print random ports,
// times and addresses).
func (o ciliumOutcome) same(p ciliumOutcome) bool {
	return o.err == p.err && o.status == p.status && slices.EqualFunc(o.results, p.results, func(a, b ciliumResult) bool {
		return a.name == b.name && a.status == b.status
	})
}

func (o ciliumOutcome) String() string {
	if o.err != "" {
		return "error: " + o.err
	}
	s := fmt.Sprintf("status %s", ciliumStatus(uint64(o.status)))
	for _, r := range o.results {
		s += fmt.Sprintf(", %s %s", r.name, ciliumStatus(r.status))
	}
	return s
}

// detail is String with the logs.
func (o ciliumOutcome) detail() string {
	s := o.String()
	for _, l := range o.logs {
		s += "\n\t\t" + l
	}
	for _, r := range o.results {
		for _, l := range r.logs {
			s += "\n\t\t" + r.name + ": " + l
		}
	}
	return s
}

func ciliumStatus(s uint64) string {
	switch s {
	case 100:
		return "ERROR"
	case 101:
		return "PASS"
	case 102:
		return "FAIL"
	case 103:
		return "SKIP"
	}
	return fmt.Sprint(s)
}

// ciliumSide is the part of a program and map the runs need, on either
// side.
type ciliumSide struct {
	progs  map[string]ciliumProgs
	run    func(p any, data, ctx []byte) (uint32, []byte, []byte, error)
	result func() ([]byte, error)
	clear  func() error
}

type ciliumProgs struct {
	pktgen, setup, check any
	tc                   bool // the check program is a tc program: it gets a struct __sk_buff
}

// ciliumTests groups the test programs of a spec by test name.
func ciliumTests(spec *ebpf.CollectionSpec, prog func(name string) any) (map[string]ciliumProgs, error) {
	tests := map[string]ciliumProgs{}
	for name, p := range spec.Programs {
		m := ciliumTestSection.FindStringSubmatch(p.SectionName)
		if m == nil {
			continue
		}
		ps := tests[m[1]]
		switch m[2] {
		case "pktgen":
			ps.pktgen = prog(name)
		case "setup":
			ps.setup = prog(name)
		case "check":
			ps.check = prog(name)
			ps.tc = p.Type == ebpf.SchedCLS
		}
		tests[m[1]] = ps
	}
	for n, ps := range tests {
		if ps.check == nil {
			return nil, fmt.Errorf("test %s has no check program", n)
		}
	}
	return tests, nil
}

// runAll runs every test in name order, as Cilium's runner does (programs
// may depend on the order).
func (s ciliumSide) runAll() map[string]ciliumOutcome {
	out := map[string]ciliumOutcome{}
	for _, name := range slices.Sorted(mapKeys(s.progs)) {
		out[name] = s.runOne(s.progs[name])
	}
	return out
}

func (s ciliumSide) runOne(ps ciliumProgs) (o ciliumOutcome) {
	data := make([]byte, 4096-256-320)
	var ctx []byte
	if ps.tc {
		ctx = make([]byte, 256)
	}
	defer func() {
		if err := s.clear(); err != nil && o.err == "" {
			o.err = "clearing the result: " + err.Error()
		}
	}()
	var status uint32
	var err error
	for _, stage := range []struct {
		name string
		p    any
	}{{"pktgen", ps.pktgen}, {"setup", ps.setup}} {
		if stage.p == nil {
			continue
		}
		if status, data, ctx, err = s.run(stage.p, data, ctx); err != nil {
			return ciliumOutcome{err: stage.name + ": " + err.Error()}
		}
		if status == 100 || status == 102 {
			return ciliumOutcome{err: fmt.Sprintf("%s: status %s", stage.name, ciliumStatus(uint64(status)))}
		}
		if stage.name == "setup" {
			data = append(binary.NativeEndian.AppendUint32(nil, status), data...)
		}
	}
	if status, _, _, err = s.run(ps.check, data, ctx); err != nil {
		return ciliumOutcome{err: "check: " + err.Error()}
	}
	buf, err := s.result()
	if err != nil {
		return ciliumOutcome{err: "result: " + err.Error()}
	}
	o, err = decodeCiliumResult(buf)
	if err != nil {
		return ciliumOutcome{err: "result: " + err.Error()}
	}
	o.status = status
	return o
}

// ciliumRunOut sizes the output packet as Cilium's runner does.
func ciliumRunOut(data []byte) []byte {
	if len(data) == 0 {
		return nil
	}
	return make([]byte, len(data)+256+2)
}

// ciliumTestsKernel loads spec into the kernel and runs its tests there, in a
// network namespace of their own, on a thread that dies with it.
func ciliumTestsKernel(spec *ebpf.CollectionSpec) (map[string]ciliumOutcome, error) {
	coll, err := ebpf.NewCollection(spec.Copy())
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("%v", firstLines(fmt.Sprintf("%+v", ve), 3))
		}
		return nil, err
	}
	defer coll.Close()
	progs, err := ciliumTests(spec, func(n string) any { return coll.Programs[n] })
	if err != nil {
		return nil, err
	}
	result := coll.Maps["suite_result_map"]
	if result == nil {
		return nil, errors.New("no suite_result_map")
	}
	side := ciliumSide{
		progs: progs,
		run: func(p any, data, ctx []byte) (uint32, []byte, []byte, error) {
			opts := &ebpf.RunOptions{Data: data, DataOut: ciliumRunOut(data), Context: ctx, ContextOut: make([]byte, len(ctx)), Repeat: 1}
			ret, err := p.(*ebpf.Program).Run(opts)
			return ret, opts.DataOut, opts.ContextOut.([]byte), err
		},
		result: func() ([]byte, error) {
			v := make([]byte, result.ValueSize())
			return v, result.Lookup(uint32(0), v)
		},
		clear: func() error {
			for _, m := range []*ebpf.Map{result, coll.Maps["mock_skb_meta_map"]} {
				if m != nil {
					if err := m.Update(uint32(0), make([]byte, m.ValueSize()), ebpf.UpdateAny); err != nil {
						return err
					}
				}
			}
			return nil
		},
	}
	type answer struct {
		out map[string]ciliumOutcome
		err error
	}
	done := make(chan answer)
	go func() {
		// The thread stays locked: it dies with the goroutine, and the
		// namespace with it.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			done <- answer{err: fmt.Errorf("unshare: %w", err)}
			return
		}
		done <- answer{out: side.runAll()}
	}()
	a := <-done
	return a.out, a.err
}

// ciliumTestsVM loads spec into bpfvm with opts and runs its tests.
func ciliumTestsVM(spec *ebpf.CollectionSpec, opts bpfvm.CollectionOptions) (map[string]ciliumOutcome, error) {
	coll, err := bpfvm.NewCollectionWithOptions(spec.Copy(), opts)
	if err != nil {
		return nil, fmt.Errorf("load: %v", firstLines(err.Error(), 3))
	}
	defer coll.Close()
	progs, err := ciliumTests(spec, func(n string) any { return coll.Programs[n] })
	if err != nil {
		return nil, err
	}
	result := coll.Maps["suite_result_map"]
	if result == nil {
		return nil, errors.New("no suite_result_map")
	}
	side := ciliumSide{
		progs: progs,
		run: func(p any, data, ctx []byte) (uint32, []byte, []byte, error) {
			opts := &bpfvm.RunOptions{Data: data, DataOut: ciliumRunOut(data), Context: ctx, ContextOut: make([]byte, len(ctx)), Repeat: 1}
			res, err := p.(*bpfvm.Program).Execute(opts)
			if opts.DataOut != nil && err == nil {
				opts.DataOut = opts.DataOut[:res.DataSize]
			}
			return uint32(res.R0), opts.DataOut, opts.ContextOut.([]byte), err
		},
		result: func() ([]byte, error) {
			v := make([]byte, result.ValueSize())
			return v, result.Lookup(uint32(0), v)
		},
		clear: func() error {
			for _, m := range []*bpfvm.Map{result, coll.Maps["mock_skb_meta_map"]} {
				if m != nil {
					if err := m.Update(uint32(0), make([]byte, m.ValueSize()), bpfvm.UpdateAny); err != nil {
						return err
					}
				}
			}
			return nil
		},
	}
	return side.runAll(), nil
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], " | ")
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// protoField reads one protobuf field: its number, wire type, and its
// payload (varint and fixed64: the value; length-delimited: the bytes).
func protoField(b []byte) (num uint64, typ uint64, v uint64, payload []byte, rest []byte, err error) {
	tag, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, 0, 0, nil, nil, errors.New("bad tag")
	}
	b = b[n:]
	num, typ = tag>>3, tag&7
	if num == 0 {
		return 0, 0, 0, nil, nil, errors.New("field 0")
	}
	switch typ {
	case 0:
		v, n = binary.Uvarint(b)
		if n <= 0 {
			return 0, 0, 0, nil, nil, errors.New("bad varint")
		}
		return num, typ, v, nil, b[n:], nil
	case 1:
		if len(b) < 8 {
			return 0, 0, 0, nil, nil, errors.New("short fixed64")
		}
		return num, typ, binary.LittleEndian.Uint64(b), nil, b[8:], nil
	case 2:
		l, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < l {
			return 0, 0, 0, nil, nil, errors.New("bad length")
		}
		return num, typ, 0, b[n : n+int(l)], b[n+int(l):], nil
	}
	return 0, 0, 0, nil, nil, fmt.Errorf("wire type %d", typ)
}

// decodeCiliumResult decodes a SuiteResult (bpf/tests/bpftest/trf.proto):
// as Cilium's runner, the fields up to the first that does not parse (the
// zeros after the last).
func decodeCiliumResult(b []byte) (ciliumOutcome, error) {
	var o ciliumOutcome
	for len(b) > 0 {
		num, typ, _, payload, rest, err := protoField(b)
		if err != nil {
			break
		}
		b = rest
		if typ != 2 {
			continue
		}
		switch num {
		case 1:
			r, err := decodeCiliumTest(payload)
			if err != nil {
				return o, err
			}
			o.results = append(o.results, r)
		case 2:
			l, err := decodeCiliumLog(payload)
			if err != nil {
				return o, err
			}
			o.logs = append(o.logs, l)
		}
	}
	return o, nil
}

func decodeCiliumTest(b []byte) (ciliumResult, error) {
	var r ciliumResult
	for len(b) > 0 {
		num, typ, v, payload, rest, err := protoField(b)
		if err != nil {
			return r, fmt.Errorf("test result: %w", err)
		}
		b = rest
		switch {
		case num == 1 && typ == 2:
			r.name = strings.TrimSuffix(string(payload), "\x00")
		case num == 2 && typ == 0:
			r.status = v
		case num == 3 && typ == 2:
			l, err := decodeCiliumLog(payload)
			if err != nil {
				return r, err
			}
			r.logs = append(r.logs, l)
		}
	}
	return r, nil
}

// decodeCiliumLog decodes a Log and formats it as Cilium's runner does
// (Log.FmtString: %u and %d are 16 bits, %lu 32, %llu 64; %x hex of the
// big-endian bytes).
func decodeCiliumLog(b []byte) (string, error) {
	var f string
	var args []uint64
	for len(b) > 0 {
		num, typ, v, payload, rest, err := protoField(b)
		if err != nil {
			return "", fmt.Errorf("log: %w", err)
		}
		b = rest
		switch {
		case num == 1 && typ == 2:
			f = string(payload)
		case num == 2 && typ == 1:
			args = append(args, v)
		case num == 2 && typ == 2:
			for ; len(payload) >= 8; payload = payload[8:] {
				args = append(args, binary.LittleEndian.Uint64(payload))
			}
		}
	}
	f = strings.ReplaceAll(f, "\x00", "")
	var sb strings.Builder
	for i := 0; i < len(f); {
		if f[i] != '%' {
			sb.WriteByte(f[i])
			i++
			continue
		}
		i++
		j := i
		for j < len(f) && f[j] == 'l' {
			j++
		}
		if j == len(f) {
			sb.WriteString("%" + f[i:])
			break
		}
		verb := f[i : j+1]
		i = j + 1
		if len(args) == 0 {
			sb.WriteString("%!" + verb + "(MISSING)")
			continue
		}
		a := args[0]
		args = args[1:]
		bits := map[int]int{0: 16, 1: 32, 2: 64}[len(verb)-1]
		switch verb[len(verb)-1] {
		case 'u':
			fmt.Fprint(&sb, a&(1<<bits-1))
		case 'd', 'i', 's':
			fmt.Fprint(&sb, int64(a<<(64-bits))>>(64-bits))
		case 'x':
			sb.WriteString(hex.EncodeToString(binary.BigEndian.AppendUint64(nil, a)[8-bits/8:]))
		default:
			sb.WriteString("%!" + verb + "(INVALID)")
		}
	}
	return sb.String(), nil
}
