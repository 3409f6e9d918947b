package progtype

// Raw is the type of programs without a context structure: R1 points at the
// input and R2 holds its length, as in the ISA conformance suite.
var Raw = &Type{Name: "raw"}
