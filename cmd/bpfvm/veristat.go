package main

import (
	"encoding/csv"
	"encoding/json"
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
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/verifier"
)

// veristat fields, with the kernel tool's names (the first is the CSV
// column's) and aliases, and ours.
type statField struct {
	name    string
	aliases []string
	header  string
	numeric bool
}

var statFields = []statField{
	{"file_name", []string{"filename", "file"}, "File", false},
	{"prog_name", []string{"progname", "prog"}, "Program", false},
	{"verdict", nil, "Verdict", false},
	{"duration", []string{"dur"}, "Duration (us)", true},
	{"total_insns", []string{"insns"}, "Insns", true},
	{"total_states", []string{"states"}, "States", true},
	{"peak_states", nil, "Peak states", true},
	{"max_states_per_insn", []string{"max_states"}, "Max states per insn", true},
	{"max_mark_read_len", []string{"mark_read"}, "Max mark read length", true},
	{"prog_size", nil, "Program size", true},
	{"prog_size_jited", nil, "Jited size", true},
	{"stack_depth", []string{"stack"}, "Stack depth", true},
	{"prog_type", nil, "Program type", false},
	{"attach_type", nil, "Attach type", false},
	{"mem_peak", nil, "Peak memory (MiB)", true},
	{"pending_peak", nil, "Pending peak", true},
	{"hist_allocs", nil, "History allocs", true},
	{"hist_entries", nil, "History entries", true},
	{"hist_peak", nil, "History peak", true},
	{"peak_mem", nil, "Peak memory", true},
	{"kernel_verdict", nil, "Kernel verdict", false},
	{"kernel_insns", nil, "Kernel insns", true},
	{"kernel_states", nil, "Kernel states", true},
	{"kernel_peak_states", nil, "Kernel peak states", true},
	{"kernel_duration", nil, "Kernel duration (us)", true},
}

// The fields veristat shows without -e: in a table, and in CSV (also our
// JSON, keyed like the CSV).
var (
	defaultFields    = "file_name,prog_name,verdict,duration,total_insns,total_states,prog_size,prog_size_jited"
	defaultCSVFields = "file_name,prog_name,verdict,duration,total_insns,total_states,peak_states,max_states_per_insn,max_mark_read_len,prog_size,prog_size_jited,prog_type,attach_type,stack_depth,mem_peak"
)

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

// veristatOptions are what veristat does with each program.
type veristatOptions struct {
	kernel  bool
	filters *filters
	// logLevel > 0 keeps each program's log at that level (-v), and
	// topLines > 0 counts its source lines (-S).
	logLevel, logSize, topLines int
	// flags are added to each program's load flags (-t, -r).
	flags uint32
	// flagsLog is added to the log level (--log-fixed).
	flagsLog int
	// presets are set in each object's global variables (-G).
	presets varPresets
	// debug notes each object's maps and programs as it opens them (-d).
	debug bool
	// dump prints each loaded program's dumps (--dump).
	dump dumpModes
}

func runVeristat(args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("veristat", stderr)
	fieldsFlag, sortFlag := new(string), new(string)
	fs.Func("e", "comma-separated fields to show (default "+defaultFields+"; for CSV "+defaultCSVFields+"); repeated, the lists add up", appendList(fieldsFlag))
	fs.Func("s", "comma-separated fields to sort by, each ending in ^ (ascending) or v (descending), or :asc/:desc; repeated, the lists add up", appendList(sortFlag))
	topN := fs.Int("n", 0, "show only the first N rows")
	output := fs.String("o", "table", "output format: table, csv or json")
	compare := fs.Bool("C", false, "compare two CSV files: veristat -C base.csv new.csv")
	replay := fs.Bool("R", false, "replay a CSV file: filter, sort and print it again: veristat -R results.csv")
	withKernel := fs.Bool("kernel", false, "also load each program into the running kernel and report its verdict, instructions and time")
	quiet := fs.Bool("q", false, "quiet: no load errors or progress on stderr")
	verbose := fs.Bool("v", false, "verbose: print each program's verifier log (at -l, default 1) before the table")
	level := fs.Int("l", 0, "verifier log level with -v (default 1; 2 for every instruction)")
	logSize := fs.Int("log-size", 0, "verifier log buffer in bytes to start with (default: unlimited); a log that outgrows it is verified again with the size it needs, as libbpf does")
	logFixed := fs.Bool("log-fixed", false, "keep the start of a log that outgrows its buffer, not the end (BPF_LOG_FIXED)")
	topLines := fs.Int("S", 0, "print each program's N most frequent source lines in its log")
	stateFreq := fs.Bool("t", false, "remember states at every jump (BPF_F_TEST_STATE_FREQ)")
	regInv := fs.Bool("r", false, "fail verification on a register invariant violation (BPF_F_TEST_REG_INVARIANTS)")
	showVersion := fs.Bool("V", false, "print the version")
	debug := fs.Bool("d", false, "debug: -v, and each object's maps and programs on stderr as it is opened")
	var dump dumpModes
	fs.Var(&dump, "dump", "print each loaded program's dump, as bpftool prog dump: --dump or --dump=xlated, --dump=jited (repeatable)")
	var presets varPresets
	fs.Func("G", `set a global variable before loading: "VAR = VALUE" (an integer, or an enumerator's name; VAR may be a path: "cfg.arr[2].x"); @FILE reads them from a file, one a line (repeatable)`, presets.add)
	var flt filters
	fs.Func("f", "filter: GLOB, FILE-GLOB/PROG-GLOB or STAT OP VALUE (insns>1000, verdict=failure, insns_diff<0); !EXPR denies; @FILE reads them from a file (repeatable)", flt.add)
	jobs := fs.Int("j", runtime.GOMAXPROCS(0), "files verified at once (default: every core)")
	js := addJSONFlags(fs, false)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	format := *output
	switch {
	case js.pretty:
		format = "json-pretty"
	case js.on:
		format = "json"
	case format != "table" && format != "csv" && format != "json":
		return usageErr("-o must be table, csv or json")
	}
	if *jobs < 1 {
		return usageErr("-j %d: want at least 1", *jobs)
	}
	if *showVersion {
		return runVersion(nil, nil, stdout, stderr)
	}
	if *debug {
		*verbose = true
	}
	if *verbose && *quiet {
		return usageErr("-v and -q are exclusive")
	}
	if *compare && *replay {
		return usageErr("-C and -R are exclusive")
	}
	keys, err := parseSortSpec(*sortFlag)
	if err != nil {
		return err // a bad sort field, before the work
	}
	if *compare {
		if len(pos) != 2 {
			return usageErr("-C takes two CSV files")
		}
		return veristatCompare(pos[0], pos[1], *fieldsFlag, format, keys, &flt, *topN, stdout)
	}
	if *replay {
		if len(pos) != 1 {
			return usageErr("-R takes one CSV file")
		}
		return veristatReplay(pos[0], *fieldsFlag, format, keys, &flt, *topN, stdout)
	}
	if pos, err = objectList(pos); err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErr("no object files given")
	}
	fields := *fieldsFlag
	if fields == "" {
		fields = defaultFields
		if format != "table" {
			fields = defaultCSVFields
		}
		if *withKernel {
			fields += ",kernel_verdict,kernel_insns,kernel_duration"
		}
	}
	cols, err := parseFields(fields)
	if err != nil {
		return err
	}
	opts := veristatOptions{kernel: *withKernel, filters: &flt, logSize: *logSize, topLines: *topLines, presets: presets, debug: *debug, dump: dump}
	if *verbose {
		opts.logLevel = max(*level, 1)
	}
	if *logFixed {
		opts.flagsLog = verifier.LogFixed
	}
	if *stateFreq {
		opts.flags |= verifier.FlagTestStateFreq
	}
	if *regInv {
		opts.flags |= verifier.FlagTestRegInvariants
	}
	var progress io.Writer
	if !*quiet {
		progress = stderr
	}
	results := veristatFiles(pos, opts, *jobs, progress, progressAfter, time.Second)
	var rows []statRow
	failed := false
	var files, filesSkipped, progsSkipped int
	for i, r := range results {
		// What -v and -S print, in the files' order, before the table.
		for _, l := range r.logs {
			if *verbose {
				fmt.Fprintf(stdout, "PROCESSING %s/%s, DURATION US: %s, VERDICT: %s, VERIFIER LOG:\n%s\n",
					pos[i], l.row["prog_name"], l.row["duration"], l.row["verdict"], l.log)
			}
			if *topLines > 0 {
				printTopLines(stdout, l.log, l.row["prog_name"], *topLines)
			}
			io.WriteString(stdout, l.dump)
		}
		progsSkipped += r.progsSkipped
		if !*quiet {
			for _, n := range r.notes {
				fmt.Fprintln(stderr, n)
			}
		}
		switch {
		case r.filtered:
			filesSkipped++
			if *verbose {
				fmt.Fprintf(stdout, "Skipping '%s' due to filters...\n", pos[i])
			}
			continue
		case r.err != nil:
			// Like the kernel's veristat: report the file and go on.
			if !*quiet {
				fmt.Fprintf(stderr, "bpfvm veristat: %v\n", r.err)
			}
			failed = true
			filesSkipped++
			continue
		}
		files++
		for _, err := range r.progErrs {
			if !*quiet {
				fmt.Fprintf(stderr, "bpfvm veristat: %v\n", err)
			}
			failed = true
		}
		rows = append(rows, r.rows...)
	}
	nrows := len(rows)
	rows = filterRows(rows, &flt, keys, *topN)
	// The kernel's summary, after the table's closing rule (in the order
	// its format means: veristat's own passes the counts out of order).
	summary := fmt.Sprintf("Done. Processed %d files, %d programs. Skipped %d files, %d programs.",
		files, nrows, filesSkipped, progsSkipped)
	if err := printRows(stdout, format, cols, rows, summary, true); err != nil {
		return err
	}
	if failed {
		return exitError(1)
	}
	return nil
}

// appendList is a flag that adds its comma-separated list to *dst, as
// veristat's -e and -s add to their specs.
func appendList(dst *string) func(string) error {
	return func(s string) error {
		if *dst != "" {
			s = *dst + "," + s
		}
		*dst = s
		return nil
	}
}

// filterRows applies the statistic filters, sorts and keeps the first n
// rows (all for n <= 0).
func filterRows[T statView](rows []T, flt *filters, keys []sortKey, n int) []T {
	var out []T
	for _, r := range rows {
		if flt.wantStats(r) {
			out = append(out, r)
		}
	}
	sortViews(out, keys)
	if n > 0 && len(out) > n {
		out = out[:n]
	}
	return out
}

// printTopLines prints the most frequent source lines ("; line @ file:N")
// of a log, as veristat -S: count, then the place in parentheses and the
// line.
func printTopLines(w io.Writer, log, prog string, n int) {
	counts := map[string]int{}
	for _, l := range strings.Split(log, "\n") {
		if src, ok := strings.CutPrefix(l, "; "); ok {
			counts[src]++
		}
	}
	if len(counts) == 0 {
		return
	}
	lines := make([]string, 0, len(counts))
	for l := range counts {
		lines = append(lines, l)
	}
	sort.Slice(lines, func(i, j int) bool {
		if counts[lines[i]] != counts[lines[j]] {
			return counts[lines[i]] > counts[lines[j]]
		}
		return lines[i] < lines[j]
	})
	fmt.Fprintf(w, "Top source lines (%s):\n", prog)
	for _, l := range lines[:min(n, len(lines))] {
		if i := strings.LastIndexByte(l, '@'); i >= 0 {
			fmt.Fprintf(w, "%5d: (%s)\t%s\n", counts[l], strings.TrimSpace(l[i+1:]), strings.TrimSpace(l[:i]))
		} else {
			fmt.Fprintf(w, "%5d: %s\n", counts[l], l)
		}
	}
	fmt.Fprintln(w)
}

// fileStats is the outcome of one object file: its rows, or why it could
// not be read.
type fileStats struct {
	rows     []statRow
	logs     []progLog // with -v or -S
	progErrs []error   // programs that failed to load (not verdicts)
	err      error
	// filtered is set for a file the filters skip; progsSkipped counts its
	// programs they skip.
	filtered     bool
	progsSkipped int
	// notes go to stderr (unless -q): -d's, presets not applied.
	notes []string
	// start and end are when the file's verification ran: files overlap
	// on jobs goroutines (TestVeristatParallel).
	start, end time.Time
}

// progLog is a program's verifier log for -v and -S, and its dumps for
// --dump.
type progLog struct {
	row  statRow
	log  string
	dump string
}

// progressAfter is how long a run goes before it shows progress.
const progressAfter = 3 * time.Second

// veristatFiles verifies the files on jobs goroutines and returns their
// results in the files' order. A run longer than after shows how far it
// is on progress, when not nil, every interval.
func veristatFiles(files []string, opts veristatOptions, jobs int, progress io.Writer, after, every time.Duration) []fileStats {
	results := make([]fileStats, len(files))
	next := make(chan int)
	var done atomic.Int64
	var wg sync.WaitGroup
	for range min(jobs, len(files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				start := time.Now()
				results[i] = veristatFile(files[i], opts)
				results[i].start, results[i].end = start, time.Now()
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
func veristatFile(file string, opts veristatOptions) fileStats {
	base := filepath.Base(file)
	if opts.filters != nil && !opts.filters.wantProg(base, "") {
		return fileStats{filtered: true}
	}
	spec, err := openObject(file)
	if err != nil {
		return fileStats{err: err}
	}
	var out fileStats
	if opts.debug {
		out.notes = debugNotes(file, spec)
	}
	if len(opts.presets) > 0 {
		notes, err := opts.presets.apply(spec)
		out.notes = append(out.notes, notes...)
		if err != nil {
			out.err = fmt.Errorf("%s: failed to set global variables: %w", file, err)
			return out
		}
	}
	level := 4 | opts.logLevel | opts.flagsLog
	if opts.topLines > 0 && opts.logLevel == 0 {
		level |= 2 // -S needs the log, as veristat asks for level 2
	}
	for _, name := range specNames(spec) {
		if opts.filters != nil && !opts.filters.wantProg(base, name) {
			out.progsSkipped++
			continue
		}
		ps := spec.Programs[name]
		ps.Flags |= opts.flags
		row := statRow{"file_name": base, "prog_name": name, "prog_type": progTypeName(ps.Type), "attach_type": attachTypeName(ps.AttachType)}
		if insns, _, err := bpfvm.EncodeProgram(ps); err == nil {
			row["prog_size"] = fmt.Sprint(len(insns))
		}
		l := loadOne(file, spec, name, bpfvm.CollectionOptions{Programs: bpfvm.ProgramOptions{LogLevel: bpfvm.LogLevel(level), LogSize: opts.logSize}})
		var ve *bpfvm.VerifierError
		log := ""
		switch {
		case l.err == nil && unverified(l.prog):
			row["verdict"] = "not verified"
		case l.err == nil:
			row["verdict"] = "success"
			fillFromStats(row, l.prog.Stats())
			if code, _, ok := l.prog.NativeCode(); ok {
				row["prog_size_jited"] = fmt.Sprint(len(code))
			}
			log = l.prog.VerifierLog
		case errors.As(l.err, &ve):
			row["verdict"] = "failure"
			log = joinLog(ve.Log)
			fillFromLog(row, log)
		default:
			// Not a verdict: the program could not be loaded here.
			row["verdict"] = "error"
			out.progErrs = append(out.progErrs, l.err)
			log = l.err.Error() + "\n"
		}
		dump := ""
		if l.err == nil && opts.dump != 0 {
			dump = programDumps(l.prog, opts.dump, base, name)
		}
		l.close()
		if opts.logLevel > 0 || opts.topLines > 0 || dump != "" {
			out.logs = append(out.logs, progLog{row, log, dump})
		}
		if opts.kernel {
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
	row["max_mark_read_len"] = fmt.Sprint(s.MarkRead)
	// As veristat: the sum of the functions' stack depths.
	depth := 0
	for _, d := range s.StackDepth {
		depth += d
	}
	row["stack_depth"] = fmt.Sprint(depth)
	row["pending_peak"] = fmt.Sprint(s.PendingBranchPeak)
	row["hist_allocs"] = fmt.Sprint(s.HistoryAllocs)
	row["hist_entries"] = fmt.Sprint(s.HistoryEntries)
	row["hist_peak"] = fmt.Sprint(s.HistoryPeak)
	row["peak_mem"] = fmt.Sprint(s.PeakMemory)
	row["mem_peak"] = fmt.Sprint(s.PeakMemory >> 20)
}

var (
	stackRe     = regexp.MustCompile(`(?m)^stack depth ([\d+]+)$`)
	processedRe = regexp.MustCompile(`processed (\d+) insns \(limit \d+\) max_states_per_insn (\d+) total_states (\d+) peak_states (\d+) mark_read (\d+)`)
	durationRe  = regexp.MustCompile(`verification time (\d+) usec`)
)

// fillFromLog takes statistics from a level-4 log (a rejected program has
// no Stats but its log ends with them).
func fillFromLog(row statRow, log string) {
	if m := processedRe.FindStringSubmatch(log); m != nil {
		row["total_insns"], row["max_states_per_insn"], row["total_states"], row["peak_states"], row["max_mark_read_len"] = m[1], m[2], m[3], m[4], m[5]
	}
	if m := durationRe.FindStringSubmatch(log); m != nil {
		row["duration"] = m[1]
	}
	if m := stackRe.FindStringSubmatch(log); m != nil {
		depth := 0
		for _, d := range strings.Split(m[1], "+") {
			n, _ := strconv.Atoi(d)
			depth += n
		}
		row["stack_depth"] = fmt.Sprint(depth)
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
		row["kernel_insns"], row["kernel_states"], row["kernel_peak_states"] = m[1], m[3], m[4]
	}
	if m := durationRe.FindStringSubmatch(log); m != nil {
		row["kernel_duration"] = m[1]
	}
	return nil
}

// printRows prints a table, CSV or JSON; a table ends with a rule and the
// summary, when there is one.
func printRows(w io.Writer, format string, cols []statField, rows []statRow, summary string, rightNumbers bool) error {
	switch format {
	case "json", "json-pretty":
		// The kernel's veristat has no JSON: an array of objects keyed
		// by the CSV columns' names, numbers as numbers, N/A as null.
		doc := []jsonRow{}
		for _, r := range rows {
			doc = append(doc, jsonRow{cols, r})
		}
		return (&jsonOutput{on: true, pretty: format == "json-pretty"}).write(w, doc)
	case "csv":
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
	// veristat's table: each column as wide as its widest cell, two
	// spaces between, names and verdicts left-aligned and, but in
	// comparison mode, numbers right-aligned; a rule of dashes under the
	// header and, before the summary, again after the rows.
	cells := make([][]string, 0, len(rows)+1)
	header := make([]string, len(cols))
	for i, c := range cols {
		header[i] = c.header
	}
	cells = append(cells, header)
	for _, r := range rows {
		vals := make([]string, len(cols))
		for i, c := range cols {
			if vals[i] = r[c.name]; vals[i] == "" {
				vals[i] = "N/A"
			}
		}
		cells = append(cells, vals)
	}
	widths := make([]int, len(cols))
	for _, row := range cells {
		for i, v := range row {
			widths[i] = max(widths[i], len(v))
		}
	}
	var b strings.Builder
	line := func(row []string) {
		for i, v := range row {
			if i > 0 {
				b.WriteString("  ")
			}
			if rightNumbers && cols[i].numeric {
				b.WriteString(strings.Repeat(" ", widths[i]-len(v)) + v)
			} else {
				b.WriteString(v + strings.Repeat(" ", widths[i]-len(v)))
			}
		}
		b.WriteString("\n")
	}
	rule := func() {
		for i, n := range widths {
			if i > 0 {
				b.WriteString("  ")
			}
			b.WriteString(strings.Repeat("-", n))
		}
		b.WriteString("\n")
	}
	line(header)
	rule()
	for _, row := range cells[1:] {
		line(row)
	}
	if summary != "" {
		rule()
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
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
func veristatCompare(basePath, newPath, fields, format string, keys []sortKey, flt *filters, n int, w io.Writer) error {
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
	// veristat's CSV columns: NAME_base, NAME_comp, NAME_diff.
	cols := []statField{{name: "file_name", header: "File"}, {name: "prog_name", header: "Program"}}
	for _, s := range stats {
		if s.name == "file_name" || s.name == "prog_name" {
			continue
		}
		cols = append(cols,
			statField{name: s.name + "_base", header: s.header + " (A)", numeric: s.numeric},
			statField{name: s.name + "_comp", header: s.header + " (B)", numeric: s.numeric},
			statField{name: s.name + "_diff", header: s.header + " (DIFF)"})
	}
	var joined []joinedRow
	seen := map[string]bool{}
	for _, a := range base {
		seen[keyOf(a)] = true
		joined = append(joined, joinedRow{a, byKey[keyOf(a)]})
	}
	for _, b := range next {
		if !seen[keyOf(b)] {
			joined = append(joined, joinedRow{nil, b})
		}
	}
	var rows []statRow
	for _, j := range filterRows(joined, flt, keys, n) {
		a, b := j.a, j.b
		r := statRow{"file_name": a["file_name"], "prog_name": a["prog_name"]}
		if a == nil {
			r["file_name"], r["prog_name"] = b["file_name"], b["prog_name"]
		}
		for _, s := range stats {
			x, y := a[s.name], b[s.name]
			r[s.name+"_base"], r[s.name+"_comp"] = x, y
			r[s.name+"_diff"] = diff(x, y, s.numeric)
		}
		rows = append(rows, r)
	}
	return printRows(w, format, cols, rows, "", false)
}

// veristatReplay prints a CSV output again, filtered and sorted, as
// veristat -R: in the table, CSV or JSON, with its columns or -e's.
func veristatReplay(path, fields, format string, keys []sortKey, flt *filters, n int, w io.Writer) error {
	rows, cols, err := readStatsCSV(path)
	if err != nil {
		return err
	}
	if fields != "" {
		if cols, err = parseFields(fields); err != nil {
			return err
		}
	}
	var kept []statRow
	for _, r := range rows {
		if flt.wantProg(r["file_name"], r["prog_name"]) {
			kept = append(kept, r)
		}
	}
	return printRows(w, format, cols, filterRows(kept, flt, keys, n), "", true)
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
	return fmt.Sprintf("%+.0f (%+.2f%%)", y-x, pct(x, y))
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

// jsonRow is a row as a JSON object with its keys in the columns' order.
type jsonRow struct {
	cols []statField
	row  statRow
}

func (j jsonRow) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, c := range j.cols {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, c.name)
		b = append(b, ':')
		v, ok := j.row[c.name]
		switch {
		case !ok || v == "" || v == "N/A":
			b = append(b, "null"...)
		case c.numeric && isNumber(v):
			b = append(b, v...)
		default:
			s, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			b = append(b, s...)
		}
	}
	return append(b, '}'), nil
}

// isNumber reports whether s is a decimal integer, as veristat prints its
// numeric statistics.
func isNumber(s string) bool {
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}
