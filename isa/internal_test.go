package isa

import "testing"

// The rewrite's internal forms never load: Validate rejects trusted
// accesses and map field constants; the engines accept trusted accesses
// (ValidateXlated), and map fields are resolved before they run.
func TestInternalFormsRejected(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prog   []Instruction
		xlated bool
	}{
		{"trusted load", []Instruction{{Op: ClassLDX | ModeTrusted | SizeDW, Dst: R0, Src: R1}, {Op: OpExit}}, true},
		{"trusted store", []Instruction{{Op: ClassST | ModeTrusted | SizeW, Dst: R1, Imm: 1}, {Op: OpExit}}, true},
		{"trusted load into r10", []Instruction{{Op: ClassLDX | ModeTrusted | SizeDW, Dst: R10, Src: R1}, {Op: OpExit}}, false},
		{"map field", []Instruction{{Op: OpLdImm64, Dst: R0, Src: Register(PseudoMapField), Off: 8}, {}, {Op: OpExit}}, false},
	} {
		if err := Validate(tc.prog); err == nil {
			t.Errorf("%s: Validate accepts it", tc.name)
		}
		if err := ValidateXlated(tc.prog); (err == nil) != tc.xlated {
			t.Errorf("%s: ValidateXlated: %v, want accepted %v", tc.name, err, tc.xlated)
		}
	}
}
