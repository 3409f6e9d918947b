package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"text/tabwriter"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/internal/benchscale"
)

// scalingRunner runs a program n times for goroutine i (run(i, n)): single
// calls or one batched call.
type scalingRunner func(i, n int) error

// benchScaling prints the scaling table: the programs of
// internal/benchscale run by 1, 2 and GOMAXPROCS goroutines at once on the
// JIT, by single Run calls and batched (Repeat), next to the kernel's test
// run of the same programs from as many threads and a control of pure Go
// arithmetic (what the machine has to spare). Each figure is the best
// wall-clock ns per run of the whole over rounds measuring every count in
// turn; xN is the throughput of N goroutines over one's, cpu-xN the CPU
// time per run of one over N's (1 when runs share nothing, whatever the
// machine's load).
func benchScaling(stdout io.Writer, kernel bool, repeat int) error {
	gs := benchscale.Goroutines(runtime.GOMAXPROCS(0))
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	head := []string{"scaling (ns per run)"}
	for _, g := range gs {
		head = append(head, fmt.Sprintf("g%d", g))
	}
	for _, g := range gs[1:] {
		head = append(head, fmt.Sprintf("x%d", g), fmt.Sprintf("cpu-x%d", g))
	}
	for _, g := range gs {
		head = append(head, fmt.Sprintf("kernel g%d", g))
	}
	for _, g := range gs[1:] {
		head = append(head, fmt.Sprintf("kernel x%d", g))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	rounds := min(max(repeat/2000, 3), 10)
	row := func(name string, ours, kern scalingRunner, total int) error {
		fs, err := benchscale.Interleaved(gs, total, rounds, ours)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		cols := []string{name}
		for _, f := range fs {
			cols = append(cols, fmt.Sprintf("%.1f", f.Wall))
		}
		for k := range gs[1:] {
			cols = append(cols, fmt.Sprintf("%.2f", fs[0].Wall/fs[k+1].Wall), fmt.Sprintf("%.2f", fs[0].CPU/fs[k+1].CPU))
		}
		var ks []benchscale.Figures
		if kern != nil {
			if ks, err = benchscale.Interleaved(gs, total, rounds, kern); err != nil {
				fmt.Fprintf(stdout, "kernel: %s: %v\n", name, err)
				ks = nil
			}
		}
		for range gs {
			if ks == nil {
				cols = append(cols, "n/a")
			}
		}
		for _, f := range ks {
			cols = append(cols, fmt.Sprintf("%.1f", f.Wall))
		}
		for k := range gs[1:] {
			if ks == nil {
				cols = append(cols, "n/a")
			} else {
				cols = append(cols, fmt.Sprintf("%.2f", ks[0].Wall/ks[k+1].Wall))
			}
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t")
		return nil
	}
	if err := row("control (Go arithmetic)", benchscale.Control, nil, 200*repeat); err != nil {
		return err
	}
	for _, c := range benchscale.Cases() {
		coll, err := bpfvm.NewCollectionWithOptions(c.Spec(), bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{Engine: bpfvm.EngineJIT}})
		if err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
		defer coll.Close()
		var kcoll *ebpf.Collection
		if kernel {
			if kcoll, err = ebpf.NewCollection(c.Spec()); err != nil {
				fmt.Fprintf(stdout, "kernel: %s: %v\n", c.Name, err)
				kcoll = nil
			} else {
				defer kcoll.Close()
			}
		}
		if c.Fill != nil {
			put := func(m string, k, v any) error { return coll.Maps[m].Put(k, v) }
			if err := c.Fill(put, runtime.GOMAXPROCS(0)); err != nil {
				return fmt.Errorf("%s: %w", c.Name, err)
			}
			if kcoll != nil {
				put := func(m string, k, v any) error { return kcoll.Maps[m].Put(k, v) }
				if err := c.Fill(put, 0); err != nil {
					return fmt.Errorf("%s: kernel: %w", c.Name, err)
				}
			}
		}
		p := coll.Programs[c.Prog]
		if p.Engine() != bpfvm.EngineJIT {
			return fmt.Errorf("%s: the JIT did not compile the program", c.Name)
		}
		single := func(i, n int) error {
			opts := &bpfvm.RunOptions{Data: benchscale.Data(i)}
			for range n {
				if r, err := p.Run(opts); err != nil || r != 2 {
					return fmt.Errorf("got %d, %v; want 2", r, err)
				}
			}
			return nil
		}
		batched := func(i, n int) error {
			r, err := p.Run(&bpfvm.RunOptions{Data: benchscale.Data(i), Repeat: uint32(n)})
			if err != nil || r != 2 {
				return fmt.Errorf("got %d, %v; want 2", r, err)
			}
			return nil
		}
		var ksingle, kbatched scalingRunner
		if kcoll != nil {
			kp := kcoll.Programs[c.Prog]
			ksingle = func(i, n int) error {
				opts := &ebpf.RunOptions{Data: benchscale.Data(i)}
				for range n {
					if r, err := kp.Run(opts); err != nil || r != 2 {
						return fmt.Errorf("got %d, %v; want 2", r, err)
					}
				}
				return nil
			}
			kbatched = func(i, n int) error {
				r, err := kp.Run(&ebpf.RunOptions{Data: benchscale.Data(i), Repeat: uint32(n)})
				if err != nil || r != 2 {
					return fmt.Errorf("got %d, %v; want 2", r, err)
				}
				return nil
			}
		}
		if err := row(c.Name+", single", single, ksingle, repeat); err != nil {
			return err
		}
		if err := row(c.Name+", repeat", batched, kbatched, 20*repeat); err != nil {
			return err
		}
	}
	return tw.Flush()
}
