package bpfvm_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/cilium/ebpf"

	"bpfvm"
	"bpfvm/isa"
	"bpfvm/progtype"
)

// TestNetworkHeaderDataOut compares the output packet of the types whose
// programs see the packet from its network header with the kernel's test
// run, which gives back the frame with the link header it took off.
func TestNetworkHeaderDataOut(t *testing.T) {
	frame := ctxFrame("\x02\x00\x00\x00\x00\x02", 0x0800, 0x45, 64)
	insns, err := isa.Assemble("r0 = 1\nexit")
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []ebpf.ProgramType{ebpf.SocketFilter, ebpf.CGroupSKB, ebpf.LWTIn, ebpf.LWTOut, ebpf.LWTXmit} {
		for _, opts := range []bpfvm.ProgramOptions{{Engine: bpfvm.EngineInterpreter}, {Engine: bpfvm.EngineJIT}} {
			p, err := bpfvm.NewRawProgram("out", typ, insns, opts)
			if err != nil {
				t.Fatal(err)
			}
			out := make([]byte, 256)
			res, err := p.Execute(&bpfvm.RunOptions{Data: frame, DataOut: out})
			p.Close()
			if err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
			got := out[:res.DataSize]
			kp := kernelRawProgram(t, typ, insns)
			if kp == nil {
				continue
			}
			kout := make([]byte, 256)
			ko := &ebpf.RunOptions{Data: frame, DataOut: kout}
			if _, err := kp.Run(ko); err != nil {
				t.Fatalf("%s: kernel: %v", typ, err)
			}
			if !bytes.Equal(got, ko.DataOut) {
				t.Errorf("%s: output packet\nbpfvm  % x\nkernel % x", typ, got, ko.DataOut)
			}
		}
	}
}

// skLookupCtx builds a struct bpf_sk_lookup input.
func skLookupCtx(family, protocol uint32, remote4, local4 uint32, remote6, local6 [4]uint32, rport uint16, lport uint32) []byte {
	b := make([]byte, 72)
	le := binary.LittleEndian
	le.PutUint32(b[8:], family)
	le.PutUint32(b[12:], protocol)
	le.PutUint32(b[16:], remote4)
	for i, v := range remote6 {
		le.PutUint32(b[20+4*i:], v)
	}
	binary.BigEndian.PutUint16(b[36:], rport)
	le.PutUint32(b[40:], local4)
	for i, v := range local6 {
		le.PutUint32(b[44+4*i:], v)
	}
	le.PutUint32(b[60:], lport)
	return b
}

// TestSKLookupRun reads every sk_lookup field, bit by bit (its programs
// return 0 or 1), through bpfvm's test run and the kernel's
// BPF_PROG_TEST_RUN on the same context inputs, valid and refused, on both
// engines, and compares the results, errors and context outputs.
func TestSKLookupRun(t *testing.T) {
	v6a, v6b := [4]uint32{0x20010db8, 1, 2, 3}, [4]uint32{0x20010db8, 4, 5, 6}
	with := func(b []byte, off int, v uint32) []byte {
		b = bytes.Clone(b)
		binary.LittleEndian.PutUint32(b[off:], v)
		return b
	}
	v4 := skLookupCtx(2, 6, 0x0100000a, 0x0200000a, v6a, v6b, 0x1234, 80)
	inputs := map[string][]byte{
		"v4":             v4,
		"v6":             skLookupCtx(10, 17, 0x0100000a, 0x0200000a, v6a, v6b, 0xfffe, 65535),
		"family high":    with(v4, 8, 0x10002),
		"protocol high":  with(v4, 12, 0xabcd0011),
		"port padding":   with(v4, 36, 0xffff3412),
		"short":          v4[:40],
		"bad family":     with(v4, 8, 1),
		"bad local_port": with(v4, 60, 65536),
		"bad sk":         with(v4, 0, 1),
		"bad ifindex":    with(v4, 64, 1),
		"bad tail":       with(v4, 68, 1),
	}
	engines := []bpfvm.ProgramOptions{{Engine: bpfvm.EngineInterpreter}, {Engine: bpfvm.EngineJIT}, {NoVerify: true}}
	var compared, agreed int
	for _, f := range progtype.SKLookup.Fields {
		if !f.Read {
			continue
		}
		for size := uint32(1); size <= f.Size; size *= 2 {
			if size != f.Size && !f.Narrow {
				continue
			}
			for off := f.Offset; off+size <= f.Offset+f.Size; off += size {
				for bit := 0; bit < int(size)*8; bit++ {
					src := fmt.Sprintf("r0 = *(u%d *)(r1 +%d)\nr0 >>= %d\nr0 &= 1\nexit", size*8, off, bit)
					insns, err := isa.Assemble(src)
					if err != nil {
						t.Fatal(err)
					}
					var ours []*bpfvm.Program
					for _, opts := range engines {
						opts.AttachType = ebpf.AttachSkLookup
						p, err := bpfvm.NewRawProgram("lookup", ebpf.SkLookup, insns, opts)
						if err != nil {
							t.Fatalf("%q: %v", src, err)
						}
						defer p.Close()
						ours = append(ours, p)
					}
					kp := kernelRawProgramAttach(t, ebpf.SkLookup, ebpf.AttachSkLookup, insns)
					for iname, in := range inputs {
						id := fmt.Sprintf("%s u%d@%d bit %d, %s", f.Name, size*8, off, bit, iname)
						out := make([]byte, 72)
						var got uint32
						var gotErr error
						for i, p := range ours {
							r, err := p.Run(&bpfvm.RunOptions{Context: in, ContextOut: out})
							if i == 0 {
								got, gotErr = r, err
							} else if r != got || (err == nil) != (gotErr == nil) {
								t.Errorf("%s: engine %d: %d, %v; engine 0: %d, %v", id, i, r, err, got, gotErr)
							}
						}
						if kp == nil {
							continue
						}
						kout := make([]byte, 72)
						kret, kerr := kp.Run(&ebpf.RunOptions{Context: in, ContextOut: kout})
						compared++
						switch {
						case (kerr == nil) != (gotErr == nil):
							t.Errorf("%s: bpfvm %d, %v; kernel %d, %v", id, got, gotErr, kret, kerr)
						case kerr == nil && kret != got:
							t.Errorf("%s: bpfvm %d, kernel %d", id, got, kret)
						case kerr == nil && !bytes.Equal(out, kout):
							t.Errorf("%s: context out\nbpfvm  % x\nkernel % x", id, out, kout)
						default:
							agreed++
						}
					}
				}
			}
		}
	}
	// Runs the kernel refuses whatever the program: no context, a packet.
	insns, _ := isa.Assemble("r0 = 1\nexit")
	p, err := bpfvm.NewRawProgram("lookup", ebpf.SkLookup, insns, bpfvm.ProgramOptions{AttachType: ebpf.AttachSkLookup})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	kp := kernelRawProgramAttach(t, ebpf.SkLookup, ebpf.AttachSkLookup, insns)
	for name, ro := range map[string]func() (*bpfvm.RunOptions, *ebpf.RunOptions){
		"no context": func() (*bpfvm.RunOptions, *ebpf.RunOptions) { return &bpfvm.RunOptions{}, &ebpf.RunOptions{} },
		"packet": func() (*bpfvm.RunOptions, *ebpf.RunOptions) {
			d := make([]byte, 64)
			return &bpfvm.RunOptions{Data: d, Context: v4}, &ebpf.RunOptions{Data: d, Context: v4}
		},
	} {
		o, k := ro()
		if _, err := p.Run(o); err == nil {
			t.Errorf("%s: bpfvm runs it", name)
		}
		if kp != nil {
			compared++
			if _, err := kp.Run(k); err == nil {
				t.Errorf("%s: the kernel runs it", name)
			} else {
				agreed++
			}
		}
	}
	if compared == 0 {
		t.Skip("no kernel to compare with")
	}
	t.Logf("sk_lookup test runs: %d/%d agree with the kernel", agreed, compared)
}
