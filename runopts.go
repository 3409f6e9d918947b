package bpfvm

import (
	"encoding/binary"
	"fmt"
	"syscall"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/internal/errs"
	"github.com/bpfvm/bpfvm/maps"
)

// Test-run flags (RunOptions.Flags), the kernel's BPF_F_TEST_*.
const (
	// RunOnCPU runs on RunOptions.CPU (BPF_F_TEST_RUN_ON_CPU), for program
	// types without a kernel counterpart, as the kernel's raw tracepoints.
	RunOnCPU uint32 = 1 << 0
	// RunXDPLiveFrames sends XDP frames on (BPF_F_TEST_XDP_LIVE_FRAMES);
	// bpfvm has no network to send them to.
	RunXDPLiveFrames uint32 = 1 << 1
	// RunSKBChecksumComplete gives the skb a complete checksum
	// (BPF_F_TEST_SKB_CHECKSUM_COMPLETE), which bpfvm does not model.
	RunSKBChecksumComplete uint32 = 1 << 2
)

// errNoCPU is the kernel's ENXIO for a test run on a CPU that does not
// exist.
var errNoCPU = errs.New("no such device or address", syscall.ENXIO)

// runCPU checks the test-run fields of opts as the kernel's test run for
// the program type does, and says which runner to run on: the CPU's when
// on, else the first free.
//
//   - XDP: flags other than RunXDPLiveFrames, and a BatchSize without it,
//     are EINVAL; CPU is ignored by the kernel, which runs on the current
//     CPU, so a CPU other than 0 that exists is honoured (one of the
//     kernel's possible runs) and any other ignored: 0, the field's zero
//     value, leaves the choice to bpfvm, which runs on the caller's
//     runner: the one its P last ran on, as the kernel runs on the
//     current CPU (runner.CPUs).
//   - Socket filters and tc (the skb types): a CPU, a BatchSize or flags
//     other than RunSKBChecksumComplete are EINVAL.
//   - Netfilter: flags, a CPU or a BatchSize are EINVAL.
//   - Syscall programs: flags are EINVAL, CPU and BatchSize ignored, as
//     bpf_prog_test_run_syscall.
//   - Other types, which the kernel lacks, follow its raw tracepoints: a
//     CPU needs RunOnCPU (else EINVAL) and must exist (else ENXIO), and a
//     BatchSize is EINVAL.
//
// Flags bpfvm cannot honour fail with ErrNotSupported.
func (p *Program) runCPU(opts *RunOptions) (cpu int, on bool, err error) {
	n := uint32(p.run.CPUs.Len())
	switch p.typ {
	case ebpf.Syscall:
		// bpf_prog_test_run_syscall refuses flags and ignores the CPU
		// and batch size.
		if opts.Flags != 0 {
			return 0, false, fmt.Errorf("flags %#x: %w", opts.Flags, maps.ErrInvalid)
		}
		return 0, false, nil
	case ebpf.XDP:
		if opts.Flags&^RunXDPLiveFrames != 0 || opts.BatchSize != 0 && opts.Flags&RunXDPLiveFrames == 0 {
			return 0, false, fmt.Errorf("flags %#x, batch size %d: %w", opts.Flags, opts.BatchSize, maps.ErrInvalid)
		}
		if opts.Flags&RunXDPLiveFrames != 0 {
			return 0, false, fmt.Errorf("BPF_F_TEST_XDP_LIVE_FRAMES: %w", ErrNotSupported)
		}
		if opts.CPU != 0 && opts.CPU < n {
			return int(opts.CPU), true, nil
		}
	case ebpf.SocketFilter, ebpf.SchedCLS, ebpf.SchedACT:
		if opts.Flags&^RunSKBChecksumComplete != 0 || opts.CPU != 0 || opts.BatchSize != 0 {
			return 0, false, fmt.Errorf("flags %#x, CPU %d, batch size %d: %w", opts.Flags, opts.CPU, opts.BatchSize, maps.ErrInvalid)
		}
		if opts.Flags&RunSKBChecksumComplete != 0 {
			return 0, false, fmt.Errorf("BPF_F_TEST_SKB_CHECKSUM_COMPLETE: %w", ErrNotSupported)
		}
	case ebpf.Netfilter:
		if opts.Flags != 0 || opts.CPU != 0 || opts.BatchSize != 0 {
			return 0, false, fmt.Errorf("flags %#x, CPU %d, batch size %d: %w", opts.Flags, opts.CPU, opts.BatchSize, maps.ErrInvalid)
		}
	default:
		if opts.BatchSize != 0 || opts.CPU != 0 && opts.Flags&RunOnCPU == 0 {
			return 0, false, fmt.Errorf("flags %#x, CPU %d, batch size %d: %w", opts.Flags, opts.CPU, opts.BatchSize, maps.ErrInvalid)
		}
		if opts.Flags&RunOnCPU != 0 {
			if opts.CPU >= n {
				return 0, false, fmt.Errorf("CPU %d of %d: %w", opts.CPU, n, errNoCPU)
			}
			return int(opts.CPU), true, nil
		}
	}
	return 0, false, nil
}

// traceRun checks a tracing program's run as the kernel's test run for it
// does (progtype.TraceRun): no packet for any; for raw tracepoints, which
// the kernel test-runs, no repetitions or context output either, and a
// context input of at least the bytes the program reads of it and at
// most the 12 arguments (EINVAL). The other types take repetitions and
// give the context back.
func (p *Program) traceRun(opts *RunOptions) error {
	tr := p.run.Type.Trace
	if tr == nil {
		return nil
	}
	if len(opts.Data) != 0 || opts.DataOut != nil {
		return fmt.Errorf("a %s program takes no packet: %w", p.run.Type.Name, maps.ErrInvalid)
	}
	if !tr.Kernel {
		return nil
	}
	if opts.Repeat != 0 || opts.ContextOut != nil && !tr.WriteBack {
		return fmt.Errorf("a %s test run takes no repetitions or context output: %w", p.run.Type.Name, maps.ErrInvalid)
	}
	n := 0
	if opts.Context != nil {
		b, err := contextBytes(opts.Context)
		if err != nil {
			return err
		}
		n = len(b)
	}
	limit := p.run.Type.ContextSize
	if tr.MaxInput != 0 {
		limit = tr.MaxInput
	}
	if n < int(p.run.MaxCtx) || n > int(limit) {
		return fmt.Errorf("context of %d bytes, the program reaches %d and takes at most %d: %w", n, p.run.MaxCtx, limit, maps.ErrInvalid)
	}
	if opts.ContextOut != nil {
		// The kernel writes the context back to the input; cilium/ebpf
		// gives it as ContextOut, which must match the input's length
		// (without an input, cilium/ebpf passes the output buffer to
		// the kernel, which refuses it).
		if opts.Context == nil {
			return fmt.Errorf("a %s test run takes no context output: %w", p.run.Type.Name, maps.ErrInvalid)
		}
		m := 0
		if b, ok := opts.ContextOut.([]byte); ok {
			m = len(b)
		} else if m = binary.Size(opts.ContextOut); m < 0 {
			return fmt.Errorf("ContextOut of type %T: %w", opts.ContextOut, maps.ErrInvalid)
		}
		if m != n {
			return fmt.Errorf("length mismatch: Context (%d bytes) and ContextOut (%d bytes): %w", n, m, maps.ErrInvalid)
		}
	}
	return nil
}
