package progtype

import "fmt"

// Netfilter is BPF_PROG_TYPE_NETFILTER (attach type BPF_NETFILTER) with
// struct bpf_nf_ctx (nf_is_valid_access): read-only, two 64-bit loads,
// state a trusted struct nf_hook_state pointer and skb a trusted struct
// sk_buff one, which the program reads through the kernel's BTF
// (Options.KernelTypes) as it reads any kernel object. Programs return
// NF_DROP (0) or NF_ACCEPT (1); the helpers are bpf_base_func_proto's.
//
// Test runs are not modelled: the kernel's (bpf_prog_test_run_nf) builds
// a real sk_buff and nf_hook_state for the program to read, which bpfvm
// does not lay out (DESIGN.md).
var Netfilter = &Type{
	Name:        "netfilter",
	ContextSize: 16,
	Fields: []Field{
		{Name: "state", Offset: 0, Size: 8, Read: true, Kind: KernelObject, Object: "nf_hook_state"},
		{Name: "skb", Offset: 8, Size: 8, Read: true, Kind: KernelObject, Object: "sk_buff"},
	},
	ContextNames: []string{"bpf_nf_ctx"},
	Setup: func(_, _, _ []byte, _ bool) error {
		return fmt.Errorf("netfilter test runs (a kernel sk_buff and nf_hook_state) are not modelled: %w", ErrNotSupported)
	},
	Helpers:     Helpers(baseHelpers),
	CheckReturn: true,
	ReturnMax:   1,
}
