// Package bpf2gotest holds the code bpf2go generates for one program
// (dropin.c), once per back end: kernel_bpfel.go as bpf2go writes it, for
// cilium/ebpf and the kernel, and vm_bpfel.go, the same output with its
// import naming bpfvm as ebpf. Its tests load, assign and run both through
// the generated loadXxxObjects functions, which is how a bpf2go project
// keeps one generated struct per back end.
package bpf2gotest

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang-19 -target bpfel -go-package bpf2gotest kernel dropin.c -- -I/usr/include/x86_64-linux-gnu
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang-19 -target bpfel -go-package bpf2gotest vm dropin.c -- -I/usr/include/x86_64-linux-gnu
//go:generate sed -i "s#\t\"github.com/cilium/ebpf\"#\tebpf \"github.com/bpfvm/bpfvm\"#" vm_bpfel.go
