package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/verifier"
)

// veristat fields, with the kernel tool's names and aliases, and ours.
type statField struct {
	name    string
	aliases []string
	header  string
	numeric bool
}

var statFields = []statField{
	{"file_name", []string{"file"}, "File", false},
	{"prog_name", []string{"prog"}, "Program", false},
	{"verdict", nil, "Verdict", false},
	{"duration", []string{"dur"}, "Duration (us)", true},
	{"total_insns", []string{"insns"}, "Insns", true},
	{"total_states", []string{"states"}, "States", true},
	{"peak_states", nil, "Peak states", true},
	{"max_states_per_insn", []string{"max_states"}, "Max states per insn", true},
	{"mark_read", nil, "Mark read", true},
	{"stack_depth", nil, "Stack depth", false},
	{"pending_peak", nil, "Pending peak", true},
	{"hist_allocs", nil, "History allocs", true},
	{"hist_entries", nil, "History entries", true},
	{"hist_peak", nil, "History peak", true},
	{"peak_mem", nil, "Peak memory", true},
	{"kernel_verdict", nil, "Kernel verdict", false},
	{"kernel_insns", nil, "Kernel insns", true},
	{"kernel_duration", nil, "Kernel duration (us)", true},
}

var defaultFields = "file_name,prog_name,verdict,duration,total_insns,total_states,peak_states"

func lookupField(name string) (statField, bool) {
	for _, f := range statFields {
		if f.name == name || contains(f.aliases, name) {
			return f, true
		}
	}
	return statField{}, false
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// statRow is one program's statistics, by field name.
type statRow map[string]string

func runVeristat(args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("veristat", stderr)
	fieldsFlag := fs.String("e", "", "comma-separated fields to show (default "+defaultFields+")")
	sortFlag := fs.String("s", "", "comma-separated fields to sort by; append :desc for descending")
	topN := fs.Int("n", 0, "show only the first N rows")
	output := fs.String("o", "table", "output format: table or csv")
	compare := fs.Bool("C", false, "compare two CSV files: veristat -C base.csv new.csv")
	withKernel := fs.Bool("kernel", false, "also load each program into the running kernel and report its verdict, instructions and time")
	quiet := fs.Bool("q", false, "quiet: no load errors or progress on stderr")
	jobs := fs.Int("j", runtime.GOMAXPROCS(0), "files verified at once (default: every core)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *output != "table" && *output != "csv" {
		return usageErr("-o must be table or csv")
	}
	if *jobs < 1 {
		return usageErr("-j %d: want at least 1", *jobs)
	}
	if *compare {
		if len(pos) != 2 {
			return usageErr("-C takes two CSV files")
		}
		return veristatCompare(pos[0], pos[1], *fieldsFlag, *output, stdout)
	}
	if len(pos) == 0 {
		return usageErr("no object files given")
	}
	fields := *fieldsFlag
	if fields == "" {
		fields = defaultFields
		if *withKernel {
			fields += ",kernel_verdict,kernel_insns,kernel_duration"
		}
	}
	cols, err := parseFields(fields)
	if err != nil {
		return err
	}
	if err := sortRows(nil, *sortFlag); err != nil {
		return err // a bad sort field, before the work
	}
	var progress io.Writer
	if !*quiet {
		progress = stderr
	}
	results := veristatFiles(pos, *withKernel, *jobs, progress, progressAfter, time.Second)
	var rows []statRow
	failed, skipped := false, 0
	for _, r := range results {
		if r.err != nil {
			// Like the kernel's veristat: report the file and go on.
			if !*quiet {
				fmt.Fprintf(stderr, "bpfvm veristat: %v\n", r.err)
			}
			failed = true
			skipped++
			continue
		}
		for _, err := range r.progErrs {
			if !*quiet {
				fmt.Fprintf(stderr, "bpfvm veristat: %v\n", err)
			}
			failed = true
		}
		rows = append(rows, r.rows...)
	}
	nrows := len(rows)
	if err := sortRows(rows, *sortFlag); err != nil {
		return err
	}
	if *topN > 0 && len(rows) > *topN {
		rows = rows[:*topN]
	}
	// The kernel's summary, after the table's closing rule.
	summary := fmt.Sprintf("Done. Processed %d files, %d programs. Skipped %d files, %d programs.",
		len(pos)-skipped, nrows, skipped, 0)
	if err := printRows(stdout, *output, cols, rows, summary); err != nil {
		return err
	}
	if failed {
		return exitError(1)
	}
	return nil
}

// fileStats is the outcome of one object file: its rows, or why it could
// not be read.
type fileStats struct {
	rows     []statRow
	progErrs []error // programs that failed to load (not verdicts)
	err      error
}

// progressAfter is how long a run goes before it shows progress.
const progressAfter = 3 * time.Second

// veristatFiles verifies the files on jobs goroutines and returns their
// results in the files' order. A run longer than after shows how far it
// is on progress, when not nil, every interval.
func veristatFiles(files []string, withKernel bool, jobs int, progress io.Writer, after, every time.Duration) []fileStats {
	results := make([]fileStats, len(files))
	next := make(chan int)
	var done atomic.Int64
	var wg sync.WaitGroup
	for range min(jobs, len(files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = veristatFile(files[i], withKernel)
				done.Add(1)
			}
		}()
	}
	stop := make(chan struct{})
	shown := make(chan bool)
	go func() {
		start, ticker, showed := time.Now(), time.NewTicker(every), false
		defer func() { ticker.Stop(); shown <- showed }()
		for {
			select {
			case <-stop:
				return
			case now := <-ticker.C:
				if progress != nil && now.Sub(start) >= after {
					fmt.Fprintf(progress, "\rveristat: %d/%d files, %s", done.Load(), len(files), now.Sub(start).Round(time.Second))
					showed = true
				}
			}
		}
	}()
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()
	close(stop)
	if <-shown {
		fmt.Fprintf(progress, "\rveristat: %d/%d files, done\n", len(files), len(files))
	}
	return results
}

func parseFields(s string) ([]statField, error) {
	var cols []statField
	for _, name := range strings.Split(s, ",") {
		f, ok := lookupField(strings.TrimSpace(name))
		if !ok {
			return nil, usageErr("unknown field %q", name)
		}
		cols = append(cols, f)
	}
	return cols, nil
}

// veristatFile verifies every program of an object on its own, as the
// kernel's veristat does: each is a row, whatever the others do.
func veristatFile(file string, withKernel bool) fileStats {
	spec, err := openObject(file)
	if err != nil {
		return fileStats{err: err}
	}
	var out fileStats
	for _, name := range specNames(spec) {
		row := statRow{"file_name": filepath.Base(file), "prog_name": name}
		l := loadOne(file, spec, name, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{LogLevel: 4}})
		var ve *bpfvm.VerifierError
		switch {
		case l.err == nil && unverified(l.prog):
			row["verdict"] = "not verified"
		case l.err == nil:
			row["verdict"] = "success"
			fillFromStats(row, l.prog.Stats())
		case errors.As(l.err, &ve):
			row["verdict"] = "failure"
			fillFromLog(row, ve.Log)
		default:
			// Not a verdict: the program could not be loaded here.
			row["verdict"] = "error"
			out.progErrs = append(out.progErrs, l.err)
		}
		l.close()
		if withKernel {
			if err := kernelStats(row, spec, name); err != nil {
				out.progErrs = append(out.progErrs, fmt.Errorf("%s: program %s: kernel: %w", file, name, err))
			}
		}
		out.rows = append(out.rows, row)
	}
	return out
}

func fillFromStats(row statRow, s verifier.Stats) {
	row["duration"] = fmt.Sprint(s.Duration.Microseconds())
	row["total_insns"] = fmt.Sprint(s.Processed)
	row["total_states"] = fmt.Sprint(s.TotalStates)
	row["peak_states"] = fmt.Sprint(s.PeakStates)
	row["max_states_per_insn"] = fmt.Sprint(s.MaxStatesPerInsn)
	row["mark_read"] = fmt.Sprint(s.MarkRead)
	var depths []string
	for _, d := range s.StackDepth {
		depths = append(depths, fmt.Sprint(d))
	}
	row["stack_depth"] = strings.Join(depths, "+")
	row["pending_peak"] = fmt.Sprint(s.PendingBranchPeak)
	row["hist_allocs"] = fmt.Sprint(s.HistoryAllocs)
	row["hist_entries"] = fmt.Sprint(s.HistoryEntries)
	row["hist_peak"] = fmt.Sprint(s.HistoryPeak)
	row["peak_mem"] = fmt.Sprint(s.PeakMemory)
}

var (
	processedRe = regexp.MustCompile(`processed (\d+) insns \(limit \d+\) max_states_per_insn (\d+) total_states (\d+) peak_states (\d+) mark_read (\d+)`)
	durationRe  = regexp.MustCompile(`verification time (\d+) usec`)
)

// fillFromLog takes statistics from a level-4 log (a rejected program has
// no Stats but its log ends with them).
func fillFromLog(row statRow, log string) {
	if m := processedRe.FindStringSubmatch(log); m != nil {
		row["total_insns"], row["max_states_per_insn"], row["total_states"], row["peak_states"], row["mark_read"] = m[1], m[2], m[3], m[4], m[5]
	}
	if m := durationRe.FindStringSubmatch(log); m != nil {
		row["duration"] = m[1]
	}
}

// kernelStats loads the program into the running kernel, where bpf() is
// permitted, and records its verdict and statistics. A load error that is
// not the verifier's verdict is a row with verdict "error", and returned.
func kernelStats(row statRow, spec *ebpf.CollectionSpec, name string) error {
	row["kernel_verdict"] = "n/a"
	if os.Getuid() != 0 || rlimit.RemoveMemlock() != nil {
		return nil
	}
	one := spec.Copy()
	for other := range one.Programs {
		if other != name {
			delete(one.Programs, other)
		}
	}
	row["kernel_verdict"] = "error"
	if pt := one.Programs[name].Type; pt == ebpf.UnspecifiedProgram {
		// cilium/ebpf does not load these at all; the kernel refuses them.
		return fmt.Errorf("program type %s: not loadable", progTypeName(pt))
	}
	coll, err := ebpf.NewCollectionWithOptions(one, ebpf.CollectionOptions{
		Programs: ebpf.ProgramOptions{LogLevel: ebpf.LogLevelStats, LogSizeStart: 1 << 16},
	})
	var log string
	var ve *ebpf.VerifierError
	switch {
	case err == nil:
		defer coll.Close()
		p := coll.Programs[name]
		if p == nil {
			return fmt.Errorf("cilium/ebpf loaded no program")
		}
		row["kernel_verdict"] = "success"
		log = p.VerifierLog
	case errors.As(err, &ve):
		row["kernel_verdict"] = "failure"
		log = strings.Join(ve.Log, "\n")
	default:
		return err
	}
	if m := processedRe.FindStringSubmatch(log); m != nil {
		row["kernel_insns"] = m[1]
	}
	if m := durationRe.FindStringSubmatch(log); m != nil {
		row["kernel_duration"] = m[1]
	}
	return nil
}

func sortRows(rows []statRow, spec string) error {
	if spec == "" {
		spec = "file_name,prog_name"
	}
	type key struct {
		f    statField
		desc bool
	}
	var keys []key
	for _, part := range strings.Split(spec, ",") {
		name, dir, _ := strings.Cut(strings.TrimSpace(part), ":")
		f, ok := lookupField(name)
		if !ok {
			return usageErr("unknown sort field %q", name)
		}
		keys = append(keys, key{f, dir == "desc"})
	}
	sort.SliceStable(rows, func(i, j int) bool {
		for _, k := range keys {
			a, b := rows[i][k.f.name], rows[j][k.f.name]
			if a == b {
				continue
			}
			less := a < b
			if k.f.numeric {
				x, _ := strconv.ParseInt(a, 10, 64)
				y, _ := strconv.ParseInt(b, 10, 64)
				less = x < y
			}
			return less != k.desc
		}
		return false
	})
	return nil
}

// printRows prints a table or CSV; a table ends with a rule and the
// summary, when there is one.
func printRows(w io.Writer, format string, cols []statField, rows []statRow, summary string) error {
	if format == "csv" {
		cw := csv.NewWriter(w)
		var header []string
		for _, c := range cols {
			header = append(header, c.name)
		}
		cw.Write(header)
		for _, r := range rows {
			var rec []string
			for _, c := range cols {
				rec = append(rec, r[c.name])
			}
			cw.Write(rec)
		}
		cw.Flush()
		return cw.Error()
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	var header, rule []string
	for _, c := range cols {
		header = append(header, c.header)
		rule = append(rule, strings.Repeat("-", len(c.header)))
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	fmt.Fprintln(tw, strings.Join(rule, "\t"))
	for _, r := range rows {
		var vals []string
		for _, c := range cols {
			v := r[c.name]
			if v == "" {
				v = "N/A"
			}
			vals = append(vals, v)
		}
		fmt.Fprintln(tw, strings.Join(vals, "\t"))
	}
	if summary != "" {
		fmt.Fprintln(tw, strings.Join(rule, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if summary != "" {
		_, err := fmt.Fprintln(w, summary)
		return err
	}
	return nil
}

// veristatCompare joins two CSV outputs on file and program name and prints
// each statistic for both with the difference, as veristat -C does.
func veristatCompare(basePath, newPath, fields, format string, w io.Writer) error {
	base, bcols, err := readStatsCSV(basePath)
	if err != nil {
		return err
	}
	next, _, err := readStatsCSV(newPath)
	if err != nil {
		return err
	}
	var stats []statField
	if fields == "" {
		for _, c := range bcols {
			if c.name != "file_name" && c.name != "prog_name" {
				stats = append(stats, c)
			}
		}
	} else if stats, err = parseFields(fields); err != nil {
		return err
	}
	keyOf := func(r statRow) string { return r["file_name"] + "\x00" + r["prog_name"] }
	byKey := map[string]statRow{}
	for _, r := range next {
		byKey[keyOf(r)] = r
	}
	cols := []statField{{name: "file_name", header: "File"}, {name: "prog_name", header: "Program"}}
	for _, s := range stats {
		if s.name == "file_name" || s.name == "prog_name" {
			continue
		}
		cols = append(cols,
			statField{name: s.name + "_base", header: s.header + " (A)"},
			statField{name: s.name + "_new", header: s.header + " (B)"},
			statField{name: s.name + "_diff", header: s.header + " (DIFF)"})
	}
	var rows []statRow
	seen := map[string]bool{}
	add := func(a, b statRow) {
		r := statRow{"file_name": a["file_name"], "prog_name": a["prog_name"]}
		if a["file_name"] == "" {
			r["file_name"], r["prog_name"] = b["file_name"], b["prog_name"]
		}
		for _, s := range stats {
			x, y := a[s.name], b[s.name]
			r[s.name+"_base"], r[s.name+"_new"] = x, y
			r[s.name+"_diff"] = diff(x, y, s.numeric)
		}
		rows = append(rows, r)
	}
	for _, a := range base {
		seen[keyOf(a)] = true
		add(a, byKey[keyOf(a)])
	}
	for _, b := range next {
		if !seen[keyOf(b)] {
			add(statRow{}, b)
		}
	}
	return printRows(w, format, cols, rows, "")
}

func diff(a, b string, numeric bool) string {
	if a == "" || b == "" {
		return "N/A"
	}
	if !numeric {
		if a == b {
			return "MATCH"
		}
		return "MISMATCH"
	}
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	if err1 != nil || err2 != nil {
		return "N/A"
	}
	// As the kernel's veristat: a percentage always, +-100% from 0.
	d, p := y-x, 0.0
	switch {
	case d == 0:
	case x == 0 && d < 0:
		p = -100
	case x == 0:
		p = 100
	default:
		p = 100 * d / x
	}
	return fmt.Sprintf("%+.0f (%+.2f%%)", d, p)
}

func readStatsCSV(path string) ([]statRow, []statField, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(recs) == 0 {
		return nil, nil, fmt.Errorf("%s: empty", path)
	}
	var cols []statField
	for _, name := range recs[0] {
		c, ok := lookupField(name)
		if !ok {
			return nil, nil, fmt.Errorf("%s: unknown field %q", path, name)
		}
		cols = append(cols, c)
	}
	var rows []statRow
	for _, rec := range recs[1:] {
		r := statRow{}
		for i, v := range rec {
			if i < len(cols) {
				r[cols[i].name] = v
			}
		}
		rows = append(rows, r)
	}
	return rows, cols, nil
}
