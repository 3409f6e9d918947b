package isa

import "testing"

// Kfunc calls print by name and assemble back, also from a kernel log,
// whose ids are the running kernel's BTF ids.
func TestKfuncNames(t *testing.T) {
	for id := KfuncIterNumNew; id <= KfuncIterNumDestroy; id++ {
		name := KfuncName(id)
		if got, ok := KfuncID(name); !ok || got != id {
			t.Errorf("KfuncID(%q) = %d, %v", name, got, ok)
		}
		call := Instruction{Op: OpCall, Src: Register(CallKfunc), Imm: id}
		for _, text := range []string{Format([]Instruction{call}, 0, nil), "call " + name + "#52341"} {
			prog, err := Assemble(text + "\nexit")
			if err != nil || prog[0] != call {
				t.Errorf("Assemble(%q) = %+v, %v", text, prog, err)
			}
		}
	}
	if _, ok := KfuncID("bpf_no_such_kfunc"); ok || KfuncName(0) != "" || KfuncName(999) != "" {
		t.Error("unknown kfuncs resolve")
	}
}
