// Package testdata holds the C eBPF corpus used by the loader and VM tests,
// together with the clang-built objects. See README.md for what each program
// does.
package testdata

//go:generate sh build.sh
