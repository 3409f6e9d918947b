package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
)

// variant selects one of a statistic's values in comparison mode, with
// the kernel's veristat suffixes: _a (the baseline), _b (the comparison,
// the default), _diff (B - A) and _pct (the difference in percent).
type variant int

const (
	variantA variant = iota
	variantB
	variantDiff
	variantPct
)

var variantSuffixes = []string{"_a", "_b", "_diff", "_pct"}

// statRef is a statistic as sort keys and filters name it: "insns",
// "insns_diff", "|insns_pct|" (the absolute value).
type statRef struct {
	f   statField
	v   variant
	abs bool
}

// parseStatRef parses a statistic's name with an optional variant suffix,
// between bars for the absolute value, as veristat's parse_stat_id_var.
func parseStatRef(s string) (statRef, bool) {
	var r statRef
	if len(s) > 2 && s[0] == '|' && s[len(s)-1] == '|' {
		r.abs, s = true, s[1:len(s)-1]
	}
	r.v = variantB
	if f, ok := lookupField(s); ok {
		r.f = f
		return r, true
	}
	for v, sfx := range variantSuffixes {
		if base, ok := strings.CutSuffix(s, sfx); ok {
			if f, ok := lookupField(base); ok {
				r.f, r.v = f, variant(v)
				return r, true
			}
		}
	}
	return statRef{}, false
}

// sortKey is one key of -s: a statistic and its direction.
type sortKey struct {
	statRef
	desc bool
}

// parseSortSpec parses -s: comma-separated statistics, each ending in ^
// (ascending) or v, V, ., ! or _ (descending) as in the kernel's veristat,
// or :asc/:desc. Without either, names and the verdict sort ascending and
// numbers descending, as veristat's defaults.
func parseSortSpec(spec string) ([]sortKey, error) {
	if spec == "" {
		spec = "file_name,prog_name"
	}
	var keys []sortKey
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		dir := ""
		if name, d, ok := strings.Cut(part, ":"); ok {
			part, dir = name, d
		} else if n := len(part); n > 1 && strings.ContainsAny(part[n-1:], "^vV.!_") {
			part, dir = part[:n-1], part[n-1:]
		}
		r, ok := parseStatRef(part)
		if !ok {
			return nil, usageErr("unknown sort field %q", part)
		}
		k := sortKey{statRef: r, desc: r.f.numeric}
		switch dir {
		case "":
		case "^", "asc":
			k.desc = false
		case "v", "V", ".", "!", "_", "desc":
			k.desc = true
		default:
			return nil, usageErr("sort field %q: unknown order %q (want asc or desc)", part, dir)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// statView is a row as sort keys and filters see it: a plain row, or a
// baseline and a comparison joined.
type statView interface {
	// value returns a statistic as a number (numeric statistics, and the
	// verdict as success 1 and failure 0) or a string; ok is false when
	// the row has no such number.
	value(r statRef) (num float64, str string, ok bool)
}

func (row statRow) value(r statRef) (float64, string, bool) {
	return rowValue(row, r.f)
}

// rowValue is one row's statistic; N/A and the verdicts other than
// success and failure have no number.
func rowValue(row statRow, f statField) (float64, string, bool) {
	s := row[f.name]
	switch {
	case f.name == "verdict" && s == "success":
		return 1, s, true
	case f.name == "verdict" && s == "failure":
		return 0, s, true
	case !f.numeric:
		return 0, s, s != ""
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return float64(n), s, err == nil
}

// joinedRow is a program's baseline (a) and comparison (b) row; either is
// nil when the program is in one file only.
type joinedRow struct{ a, b statRow }

func (j joinedRow) value(r statRef) (float64, string, bool) {
	if r.f.name == "file_name" || r.f.name == "prog_name" {
		if j.a != nil {
			return 0, j.a[r.f.name], true
		}
		return 0, j.b[r.f.name], true
	}
	x, xs, xok := rowValue(j.a, r.f)
	y, ys, yok := rowValue(j.b, r.f)
	switch r.v {
	case variantA:
		return x, xs, j.a != nil && xok
	case variantB:
		return y, ys, j.b != nil && yok
	}
	if j.a == nil || j.b == nil || !xok || !yok {
		return 0, "", false
	}
	if r.f.name == "verdict" {
		if r.v == variantPct {
			return 0, "", false // veristat has no verdict_pct
		}
		if x == y {
			return 1, "MATCH", true
		}
		return 0, "MISMATCH", true
	}
	if !r.f.numeric {
		return 0, "", false
	}
	if r.v == variantDiff {
		return y - x, "", true
	}
	return pct(x, y), "", true
}

// pct is the difference from a to b in percent, +-100% from 0, as the
// kernel's veristat computes it.
func pct(a, b float64) float64 {
	switch {
	case a == b:
		return 0
	case a == 0 && b < a:
		return -100
	case a == 0:
		return 100
	}
	return (b - a) * 100 / a
}

// sortViews sorts rows by the keys, then by file and program name, which
// are unique, as veristat's cmp_prog_stats.
func sortViews[T statView](rows []T, keys []sortKey) {
	name := []sortKey{{statRef: statRef{f: mustField("file_name")}}, {statRef: statRef{f: mustField("prog_name")}}}
	keys = append(append([]sortKey(nil), keys...), name...)
	sort.SliceStable(rows, func(i, j int) bool {
		for _, k := range keys {
			x, xs, xok := rows[i].value(k.statRef)
			y, ys, yok := rows[j].value(k.statRef)
			var c int
			switch {
			case k.f.numeric && xok && yok:
				if k.abs {
					x, y = math.Abs(x), math.Abs(y)
				}
				c = cmpFloat(x, y)
			case k.f.numeric && xok != yok:
				// N/A after the numbers, in either direction.
				if xok {
					return true
				}
				return false
			default:
				c = strings.Compare(xs, ys)
			}
			if c != 0 {
				return (c < 0) != k.desc
			}
		}
		return false
	})
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func mustField(name string) statField {
	f, ok := lookupField(name)
	if !ok {
		panic("no field " + name)
	}
	return f
}

// filterOp is a comparison of a statistic filter.
type filterOp int

const (
	opEQ filterOp = iota
	opNE
	opLT
	opLE
	opGT
	opGE
)

// filterOps are the operators in the order they are looked for, longer
// first so that "<" does not take the start of "<=" or "<>".
var filterOps = []struct {
	s  string
	op filterOp
}{{"==", opEQ}, {"!=", opNE}, {"<>", opNE}, {"<=", opLE}, {"<", opLT}, {">=", opGE}, {">", opGT}, {"=", opEQ}}

// statFilter is one -f expression: a glob on names ("*.o", "file/prog",
// "/prog", "file/") or a comparison of a statistic ("insns>1000",
// "verdict=failure", "|insns_pct|>=10").
type statFilter struct {
	// A name filter: any matches the file or the program name.
	any, file, prog *string
	// A statistic filter.
	stat  *statRef
	op    filterOp
	value float64
}

// listFile reads a list veristat takes as @FILE (filters, presets,
// objects): a line each, blank lines and lines starting with # skipped.
func listFile(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && line[0] != '#' {
			lines = append(lines, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return lines, nil
}

// filters are veristat's allow (-f EXPR) and deny (-f !EXPR) lists.
type filters struct {
	allow, deny []statFilter
}

// add takes one -f argument: an expression, !EXPR to deny, or @FILE for a
// file of them, one a line, # starting comments.
func (fs *filters) add(arg string) error {
	if path, ok := strings.CutPrefix(arg, "@"); ok {
		lines, err := listFile(path)
		if err != nil {
			return fmt.Errorf("filters: %w", err)
		}
		for _, line := range lines {
			if err := fs.addExpr(line); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		}
		return nil
	}
	return fs.addExpr(arg)
}

func (fs *filters) addExpr(s string) error {
	list := &fs.allow
	if rest, ok := strings.CutPrefix(s, "!"); ok {
		list, s = &fs.deny, rest
	}
	f, err := parseFilter(s)
	if err != nil {
		return err
	}
	*list = append(*list, f)
	return nil
}

// parseFilter parses an expression: a statistic comparison when it holds
// an operator, a name glob otherwise.
func parseFilter(s string) (statFilter, error) {
	for _, o := range filterOps {
		i := strings.Index(s, o.s)
		if i < 0 {
			continue
		}
		name, val := strings.TrimSpace(s[:i]), strings.TrimSpace(s[i+len(o.s):])
		r, ok := parseStatRef(name)
		if !ok {
			return statFilter{}, usageErr("filter %q: unknown statistic %q", s, name)
		}
		if !r.f.numeric && r.f.name != "verdict" {
			return statFilter{}, usageErr("filter %q: %s is not a number", s, r.f.name)
		}
		f := statFilter{stat: &r, op: o.op}
		switch strings.ToLower(val) {
		case "true", "t", "success", "succ", "s", "match", "m":
			f.value = 1
		case "false", "f", "failure", "fail", "mismatch", "mis":
			f.value = 0
		default:
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				return statFilter{}, usageErr("filter %q: %q is not an integer", s, val)
			}
			f.value = float64(n)
		}
		return f, nil
	}
	file, prog, found := strings.Cut(s, "/")
	if !found {
		return statFilter{any: &s}, nil
	}
	var f statFilter
	if file != "" {
		f.file = &file
	}
	if prog != "" {
		f.prog = &prog
	}
	return f, nil
}

// wantProg reports whether the name filters let a file's program through
// (prog "" asks about the file before its programs are known), with the
// kernel's veristat's rules: a deny filter matching the file or the
// program drops it, and with allow filters one must match.
func (fs *filters) wantProg(file, prog string) bool {
	for _, f := range fs.deny {
		switch {
		case f.stat != nil:
		case f.any != nil && (globMatch(file, *f.any) || prog != "" && globMatch(prog, *f.any)):
			return false
		case f.file != nil && globMatch(file, *f.file):
			return false
		case f.prog != nil && prog != "" && globMatch(prog, *f.prog):
			return false
		}
	}
	n := 0
	for _, f := range fs.allow {
		if f.stat != nil {
			continue
		}
		n++
		if f.any != nil {
			if globMatch(file, *f.any) || prog == "" || globMatch(prog, *f.any) {
				return true
			}
			continue
		}
		if f.file != nil && !globMatch(file, *f.file) {
			continue
		}
		if f.prog != nil && prog != "" && !globMatch(prog, *f.prog) {
			continue
		}
		return true
	}
	return n == 0
}

// wantStats reports whether the statistic filters let a row through: no
// deny filter matches it and, with allow filters, one does.
func (fs *filters) wantStats(row statView) bool {
	for _, f := range fs.deny {
		if f.stat != nil && f.matches(row) {
			return false
		}
	}
	n := 0
	for _, f := range fs.allow {
		if f.stat == nil {
			continue
		}
		n++
		if f.matches(row) {
			return true
		}
	}
	return n == 0
}

// matches compares the row's statistic; a row without the number (N/A)
// matches nothing.
func (f *statFilter) matches(row statView) bool {
	v, _, ok := row.value(*f.stat)
	if !ok {
		return false
	}
	if f.stat.abs {
		v = math.Abs(v)
	}
	// Percentages are fractions: compare within an epsilon, as veristat.
	const eps = 1e-9
	switch f.op {
	case opEQ:
		return v > f.value-eps && v < f.value+eps
	case opNE:
		return v < f.value-eps || v > f.value+eps
	case opLT:
		return v < f.value-eps
	case opLE:
		return v <= f.value+eps
	case opGT:
		return v > f.value+eps
	case opGE:
		return v >= f.value-eps
	}
	return false
}

// globMatch matches s against a pattern where * stands for any run of
// characters and every other character for itself, as veristat's globs
// (no ?, no classes).
func globMatch(s, pat string) bool {
	for len(pat) > 0 && pat[0] != '*' {
		if len(s) == 0 || s[0] != pat[0] {
			return false
		}
		s, pat = s[1:], pat[1:]
	}
	if len(pat) == 0 {
		return len(s) == 0
	}
	pat = strings.TrimLeft(pat, "*")
	if pat == "" {
		return true
	}
	for i := 0; i <= len(s); i++ {
		if globMatch(s[i:], pat) {
			return true
		}
	}
	return false
}
