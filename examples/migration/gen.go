// Package migration shows code written against cilium/ebpf running on
// bpfvm by changing its imports: kernel/ and bpfvm/ hold the same
// bpf2go-generated objects of bpf/migration.c and the same test file in
// cilium/ebpf's style, differing only in their import lines (which
// TestMigrationDiff checks). kernel/ runs on the kernel where bpf() is
// permitted, bpfvm/ everywhere.
package migration

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang-19 -target bpfel -type event -go-package app -output-dir kernel bpf bpf/migration.c -- -I/usr/include/x86_64-linux-gnu
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang-19 -target bpfel -type event -go-package app -output-dir bpfvm bpf bpf/migration.c -- -I/usr/include/x86_64-linux-gnu
//go:generate sed -i "s#\t\"github.com/cilium/ebpf\"#\tebpf \"github.com/bpfvm/bpfvm\"#" bpfvm/bpf_bpfel.go
