package bpfvm_test

import (
	"syscall"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
)

// TestNetfilterKernel compares bpfvm's netfilter test runs with the
// kernel's (bpf_prog_test_run_nf) over the table of hooks, families,
// packets, context inputs and run options: the errno, the verdict and
// every slot the program fills, in both modes.
func TestNetfilterKernel(t *testing.T) {
	kern := kernelCollection(t, "testdata/netfilter.o")
	if kern == nil {
		t.Skip("no kernel oracle")
	}
	cases := nfCases()
	want := make([]nfOut, len(cases))
	m := kern.Maps["seen"]
	for i, nc := range cases {
		for k := range uint32(nfSeen) {
			if err := m.Put(k, uint64(0)); err != nil {
				t.Fatal(err)
			}
		}
		opts := &ebpf.RunOptions{Data: nc.data, Flags: nc.flags, CPU: nc.cpu, BatchSize: nc.batch, Repeat: nc.repeat}
		if nc.ctx != nil {
			opts.Context = nc.ctx
		}
		if nc.ctxOut {
			opts.ContextOut = make([]byte, 48)
		}
		ret, err := kern.Programs["nf_report"].Run(opts)
		want[i] = nfOut{errno: runErrno(err), ret: ret}
		if want[i].errno == ^syscall.Errno(0) {
			t.Fatalf("%s: kernel: %v", nc.name, err)
		}
		if want[i].errno != 0 {
			want[i].ret = 0
		}
		for k := range uint32(nfSeen) {
			if err := m.Lookup(k, &want[i].seen[k]); err != nil {
				t.Fatal(err)
			}
		}
	}
	modes(t, func(t *testing.T, noVerify bool) {
		c := loadVM(t, noVerify, "testdata/netfilter.o", bpfvm.CollectionOptions{})
		agree := 0
		for i, nc := range cases {
			got := nfRunVM(t, c, nc)
			if got.errno != 0 {
				got.ret = 0
			}
			if got != want[i] {
				t.Errorf("%s:\n bpfvm  errno %d ret %d %x\n kernel errno %d ret %d %x", nc.name, got.errno, got.ret, got.seen, want[i].errno, want[i].ret, want[i].seen)
				continue
			}
			agree++
		}
		t.Logf("%d/%d runs agree with the kernel", agree, len(cases))
	})
}
