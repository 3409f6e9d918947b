package helper

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf/btf"
)

// parseDecl turns a kfunc's C declaration (Kfunc.Decl) into the BTF
// prototype the kernel's BTF would give it: the function's name and its
// FuncProto. It knows what kfunc declarations use: void, the kernel's
// integer names, bool, struct types (as opaque structs of that name, which
// the verifier resolves in the target BTF), const and pointers. structs
// shares struct types by name across declarations.
func parseDecl(decl string, structs map[string]*btf.Struct) (string, *btf.FuncProto, error) {
	open, end := strings.IndexByte(decl, '('), strings.LastIndexByte(decl, ')')
	if open < 0 || end < open {
		return "", nil, fmt.Errorf("declaration %q: no parameter list", decl)
	}
	ret, name, err := parseTypeName(decl[:open], structs)
	if err != nil {
		return "", nil, fmt.Errorf("declaration %q: %w", decl, err)
	}
	fp := &btf.FuncProto{Return: ret}
	params := strings.TrimSpace(decl[open+1 : end])
	if params == "void" || params == "" {
		return name, fp, nil
	}
	for _, p := range strings.Split(params, ",") {
		t, pname, err := parseTypeName(p, structs)
		if err != nil {
			return "", nil, fmt.Errorf("declaration %q: %w", decl, err)
		}
		fp.Params = append(fp.Params, btf.FuncParam{Name: pname, Type: t})
	}
	return name, fp, nil
}

// declInts are the integer types kfunc declarations use: size and
// whether signed.
var declInts = map[string]struct {
	size   uint32
	signed bool
}{
	"int": {4, true}, "unsigned int": {4, false}, "long": {8, true}, "unsigned long": {8, false},
	"u8": {1, false}, "u16": {2, false}, "u32": {4, false}, "u64": {8, false},
	"s8": {1, true}, "s16": {2, true}, "s32": {4, true}, "s64": {8, true},
	"__u8": {1, false}, "__u16": {2, false}, "__u32": {4, false}, "__u64": {8, false},
	"size_t": {8, false}, "char": {1, true}, "bool": {1, false},
}

// parseTypeName parses "type name" (a parameter, or a function's return
// type and name): qualifiers, a base type, then stars.
func parseTypeName(s string, structs map[string]*btf.Struct) (btf.Type, string, error) {
	s = strings.ReplaceAll(s, "*", " * ")
	words := strings.Fields(s)
	if len(words) < 2 {
		return nil, "", fmt.Errorf("%q: want a type and a name", strings.TrimSpace(s))
	}
	name := words[len(words)-1]
	words = words[:len(words)-1]
	stars := 0
	for len(words) > 0 && words[len(words)-1] == "*" {
		stars++
		words = words[:len(words)-1]
	}
	konst := false
	if len(words) > 0 && words[0] == "const" {
		konst, words = true, words[1:]
	}
	var t btf.Type
	base := strings.Join(words, " ")
	switch {
	case base == "void":
		t = &btf.Void{}
	case strings.HasPrefix(base, "struct ") && len(words) == 2:
		st, ok := structs[words[1]]
		if !ok {
			st = &btf.Struct{Name: words[1]}
			structs[words[1]] = st
		}
		t = st
	default:
		in, ok := declInts[base]
		if !ok {
			return nil, "", fmt.Errorf("unknown type %q", base)
		}
		enc := btf.Unsigned
		if in.signed {
			enc = btf.Signed
		}
		if base == "bool" {
			enc = btf.Bool
		}
		t = &btf.Int{Name: base, Size: in.size, Encoding: enc}
	}
	if konst {
		t = &btf.Const{Type: t}
	}
	for range stars {
		t = &btf.Pointer{Target: t}
	}
	return t, name, nil
}
