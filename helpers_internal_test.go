package bpfvm

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm/helper"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/loader"
	"github.com/bpfvm/bpfvm/vm"
)

// probeID is the id of the host helper probe installs.
const probeID = 1000

// call returns the built-in helper of a kernel name.
func call(name string) vm.Helper {
	id, _ := isa.HelperID(name)
	return helper.Builtin().Func(id)
}

// probe runs fn as a helper called from a small XDP program, so that fn
// calls helpers with the environment of a real checked run. It returns the
// run's error.
func probe(t *testing.T, fn func(e *vm.Env) (uint64, error)) error {
	return probeOutput(t, nil, fn)
}

// probeOutput is probe with the trace output going to out.
func probeOutput(t *testing.T, out io.Writer, fn func(e *vm.Env) (uint64, error)) error {
	t.Helper()
	insns, err := isa.Assemble("call 1000\nexit")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewRawProgram("probe", ebpf.XDP, insns, ProgramOptions{
		NoVerify: true,
		Output:   out,
		Helpers:  map[int32]vm.Helper{probeID: func(e *vm.Env, _, _, _, _, _ uint64) (uint64, error) { return fn(e) }},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, err = p.Run(&RunOptions{Data: make([]byte, 64)})
	return err
}

func loadUnverified(t *testing.T, file string) *Collection {
	t.Helper()
	spec, err := loader.LoadCollectionSpec(file)
	if err != nil {
		t.Fatal(err)
	}
	coll, err := NewCollectionWithOptions(spec, CollectionOptions{Programs: ProgramOptions{NoVerify: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(coll.Close)
	return coll
}

// TestHelperBadPointers calls every helper that takes pointers with
// pointers outside the run's memory: each must fail the run with an error
// wrapping vm.ErrMemory, and never touch the memory.
func TestHelperBadPointers(t *testing.T) {
	coll := loadUnverified(t, "testdata/helpers_maps.o")
	loops := loadUnverified(t, "testdata/helpers_loop.o")
	queue := coll.Maps["queue"].m.Handle()
	rb := coll.Maps["rb"].m.Handle()
	arr := loops.Maps["arr"].m.Handle()

	// Addresses a run may not touch: unmapped, just past the stack, and a
	// span straddling the end of the stack.
	const unmapped = 0x1000
	pastStack := func(e *vm.Env) uint64 { return e.Stack.End }
	straddle := func(e *vm.Env) uint64 { return e.Stack.End - 4 }
	stack := func(e *vm.Env) uint64 { return e.Stack.End - 64 }
	str := func(e *vm.Env, s string) uint64 {
		a := stack(e)
		copy(vm.Slice(a, 64), s+"\x00")
		return a
	}
	for _, c := range []struct {
		name string
		call func(e *vm.Env) (uint64, error)
	}{
		{"map_lookup_elem handle", func(e *vm.Env) (uint64, error) { return call("bpf_map_lookup_elem")(e, unmapped, stack(e), 0, 0, 0) }},
		{"map_push_elem value", func(e *vm.Env) (uint64, error) { return call("bpf_map_push_elem")(e, queue, unmapped, 0, 0, 0) }},
		{"map_pop_elem value", func(e *vm.Env) (uint64, error) { return call("bpf_map_pop_elem")(e, queue, e.Stack.End-2, 0, 0, 0) }},
		{"map_peek_elem value", func(e *vm.Env) (uint64, error) { return call("bpf_map_peek_elem")(e, queue, pastStack(e), 0, 0, 0) }},
		{"map_pop_elem handle", func(e *vm.Env) (uint64, error) { return call("bpf_map_pop_elem")(e, 12345, stack(e), 0, 0, 0) }},
		{"ringbuf_output data", func(e *vm.Env) (uint64, error) { return call("bpf_ringbuf_output")(e, rb, straddle(e), 8, 0, 0) }},
		{"ringbuf_output size", func(e *vm.Env) (uint64, error) { return call("bpf_ringbuf_output")(e, rb, stack(e), 1<<20, 0, 0) }},
		{"ringbuf_submit unreserved", func(e *vm.Env) (uint64, error) { return call("bpf_ringbuf_submit")(e, stack(e), 0, 0, 0, 0) }},
		{"ringbuf_discard unreserved", func(e *vm.Env) (uint64, error) { return call("bpf_ringbuf_discard")(e, unmapped, 0, 0, 0, 0) }},
		{"ringbuf_reserve handle", func(e *vm.Env) (uint64, error) { return call("bpf_ringbuf_reserve")(e, unmapped, 8, 0, 0, 0) }},
		{"tail_call handle", func(e *vm.Env) (uint64, error) { return call("bpf_tail_call")(e, 0, unmapped, 0, 0, 0) }},
		{"redirect_map handle", func(e *vm.Env) (uint64, error) { return call("bpf_redirect_map")(e, unmapped, 0, 0, 0, 0) }},
		{"for_each_map_elem handle", func(e *vm.Env) (uint64, error) { return call("bpf_for_each_map_elem")(e, unmapped, 0, 0, 0, 0) }},
		{"for_each_map_elem callback", func(e *vm.Env) (uint64, error) { return call("bpf_for_each_map_elem")(e, arr, 0xdead, 0, 0, 0) }},
		{"loop callback", func(e *vm.Env) (uint64, error) { return call("bpf_loop")(e, 3, 0xdead, 0, 0, 0) }},
		{"trace_printk fmt", func(e *vm.Env) (uint64, error) { return call("bpf_trace_printk")(e, unmapped, 8, 0, 0, 0) }},
		{"trace_printk fmt size", func(e *vm.Env) (uint64, error) { return call("bpf_trace_printk")(e, straddle(e), 8, 0, 0, 0) }},
		{"trace_vprintk data", func(e *vm.Env) (uint64, error) { return call("bpf_trace_vprintk")(e, str(e, "%d"), 3, unmapped, 8, 0) }},
		{"snprintf str", func(e *vm.Env) (uint64, error) { return call("bpf_snprintf")(e, unmapped, 8, str(e, "x"), 0, 0) }},
		{"snprintf fmt", func(e *vm.Env) (uint64, error) { return call("bpf_snprintf")(e, stack(e), 8, unmapped, 0, 0) }},
		{"snprintf data", func(e *vm.Env) (uint64, error) {
			return call("bpf_snprintf")(e, stack(e), 8, str(e, "%d"), pastStack(e), 8)
		}},
		{"strtol buf", func(e *vm.Env) (uint64, error) { return call("bpf_strtol")(e, unmapped, 4, 0, stack(e), 0) }},
		{"strtol res", func(e *vm.Env) (uint64, error) { return call("bpf_strtol")(e, str(e, "1"), 1, 0, straddle(e), 0) }},
		{"strtoul res", func(e *vm.Env) (uint64, error) { return call("bpf_strtoul")(e, str(e, "1"), 1, 0, unmapped, 0) }},
		{"skb_load_bytes to", func(e *vm.Env) (uint64, error) { return call("bpf_skb_load_bytes")(e, 0, 0, straddle(e), 8, 0) }},
		{"skb_store_bytes from", func(e *vm.Env) (uint64, error) { return call("bpf_skb_store_bytes")(e, 0, 0, unmapped, 8, 0) }},
		{"csum_diff from", func(e *vm.Env) (uint64, error) { return call("bpf_csum_diff")(e, unmapped, 4, 0, 0, 0) }},
		{"csum_diff to", func(e *vm.Env) (uint64, error) { return call("bpf_csum_diff")(e, 0, 0, straddle(e), 8, 0) }},
		{"get_current_comm buf", func(e *vm.Env) (uint64, error) { return call("bpf_get_current_comm")(e, straddle(e), 16, 0, 0, 0) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := probe(t, c.call)
			if !errors.Is(err, vm.ErrMemory) {
				t.Fatalf("run error %v, want one wrapping vm.ErrMemory", err)
			}
		})
	}
}

// TestHelperStringArgs checks that the format helpers read strings only
// from memory the run may read, in both modes: the kernel reads them with
// fault-tolerant copies, so a bad pointer prints nothing rather than
// failing the run.
func TestHelperStringArgs(t *testing.T) {
	var out strings.Builder
	for _, checked := range []bool{true, false} {
		err := probeOutput(t, &out, func(e *vm.Env) (uint64, error) {
			e.Checked = checked
			f := e.Stack.End - 64
			copy(vm.Slice(f, 64), "[%s] [%pI4]\x00")
			// The string runs up to the end of the stack without a NUL.
			s := e.Stack.End - 3
			copy(vm.Slice(s, 3), "abc")
			for _, arg := range []uint64{0x1000, s, e.Stack.End} {
				n, err := call("bpf_trace_printk")(e, f, 64, arg, arg, 0)
				if err != nil {
					return 0, err
				}
				if n != 12 {
					t.Errorf("printed %d bytes, want 12", n)
				}
			}
			return 0, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	want := strings.Repeat("bpf_trace_printk: [] [0.0.0.0]\n", 6)
	if out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
}
