// Package scale holds eBPF programs that stress the verifier: the shapes of
// the kernel's verifier scale tests, a near-1M-instruction straight-line
// program, a path explosion the kernel rejects, and loop-free programs shaped
// like real network code. See README.md; scale_test.go at the repository
// root loads them.
package scale

//go:generate sh build.sh
