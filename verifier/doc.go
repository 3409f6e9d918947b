// Package verifier checks eBPF programs the way the Linux kernel's verifier
// does, walking every path with an abstract state of each register and stack
// slot, and rejects the programs the kernel would reject.
//
// Scalars are tracked with a tnum (which bits are known) and unsigned and
// signed bounds of the 64-bit value and of its low 32 bits, as in the
// kernel. Unlike the kernel, Scalar.Sync reduces these nine constraints
// exactly, so every bound is attained by a value the scalar holds; the ALU
// operations and branch refinements are at least as precise as the
// kernel's, which only matters for programs near the edge of acceptance.
package verifier
