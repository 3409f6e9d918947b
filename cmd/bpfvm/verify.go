package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
)

// contextLines is how much of a rejected program's level-1 log verify
// shows by default: the error and the path that led to it.
const contextLines = 10

// runVerify verifies the programs of a file, each on its own, and prints
// their verdicts: exit status 0 when none is refused, 1 when one is
// rejected or fails to load, 2 for a wrong command line. By default only
// the verdicts, and a rejection's context (the end of its log and the
// kernel's statistics line); -l prints whole logs.
func runVerify(args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("verify", stderr)
	level := fs.Int("l", -1, "log level: 1 branches, 2 every instruction; +4 statistics (default: the verdicts and a rejection's context)")
	progName := fs.String("p", "", "verify only this program")
	typ := fs.String("type", "", "for raw instructions (.bin) or assembly (.s): the program type (xdp, tc, socket)")
	unpriv := fs.Bool("unpriv", false, "verify with the rules for unprivileged loads")
	js := addJSONFlags(fs, true)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("want exactly one program file, got %d", len(pos))
	}
	if *level < -1 || *level > 7 {
		return usageErr("-l %d: want 0 to 7", *level)
	}
	path := pos[0]
	out := stdout
	if js.enabled() {
		out = io.Discard // the text; the JSON document comes at the end
	}
	// The programs loaded at a log level (only the one named, when not
	// empty): the default asks only for the statistics, cheap on success,
	// and loads a rejected program again for its log.
	loadAt := func(logLevel int, only string) []loaded {
		opts := bpfvm.ProgramOptions{LogLevel: bpfvm.LogLevel(logLevel), Unprivileged: *unpriv}
		if *typ != "" || isRawFile(path) {
			pt, ok := rawTypes[*typ]
			if !ok {
				return []loaded{{err: usageErr("unknown --type %q (want xdp, tc or socket)", *typ)}}
			}
			insns, err := readRaw(path)
			if err != nil {
				return []loaded{{err: err}}
			}
			p, err := bpfvm.NewRawProgram(path, pt, insns, opts)
			return []loaded{{name: path, prog: p, err: err}}
		}
		spec, err := openObject(path)
		if err != nil {
			return []loaded{{err: err}}
		}
		names := specNames(spec)
		if len(names) == 0 {
			return []loaded{{err: fmt.Errorf("%s: no programs", path)}}
		}
		if *progName != "" {
			if spec.Programs[*progName] == nil {
				return []loaded{{err: usageErr("no program %q in %s; programs: %s", *progName, path, strings.Join(names, ", "))}}
			}
			names = []string{*progName}
		}
		if only != "" {
			names = []string{only}
		}
		var out []loaded
		for _, name := range names {
			out = append(out, loadOne(path, spec, name, bpfvm.CollectionOptions{Programs: opts}))
		}
		return out
	}
	logLevel := *level | 4
	if *level <= 0 {
		logLevel = 4
	}
	results := loadAt(logLevel, "")
	if len(results) == 1 && results[0].name == "" {
		return results[0].err // the file, not a program
	}
	refused := false
	var doc []verifyJSON
	for _, r := range results {
		defer r.close()
		if r.prog != nil && r.coll == nil {
			defer r.prog.Close()
		}
		var ve *bpfvm.VerifierError
		v := verifyJSON{Program: r.name}
		var log []string
		switch {
		case r.err == nil && unverified(r.prog):
			v.Verdict = "not verified"
			fmt.Fprintf(out, "%s: %s\n", r.name, notVerified)
		case r.err == nil:
			v.Verdict = "accepted"
			fmt.Fprintf(out, "%s: accepted\n", r.name)
			if *level > 0 {
				log = logLines(r.prog.VerifierLog, *level, 0)
			}
		case errors.As(r.err, &ve):
			refused = true
			v.Verdict, v.Error = "rejected", ve.Cause.Error()
			fmt.Fprintf(out, "%s: rejected: %v\n", r.name, ve.Cause)
			full := joinLog(ve.Log)
			if *level < 0 {
				again := loadAt(1|4, r.name)
				var ve2 *bpfvm.VerifierError
				if len(again) == 1 && errors.As(again[0].err, &ve2) {
					full = joinLog(ve2.Log)
				}
				for _, a := range again {
					a.close()
				}
			}
			switch {
			case *level > 0:
				log = logLines(full, *level, 0)
			case *level < 0:
				log = logLines(full, 1, contextLines)
			}
		default:
			refused = true
			v.Verdict, v.Error = "error", r.err.Error()
			if !js.enabled() {
				fmt.Fprintf(stderr, "bpfvm verify: %v\n", r.err)
			}
		}
		for _, l := range log {
			fmt.Fprintln(out, l)
		}
		v.Log = log
		doc = append(doc, v)
	}
	if js.enabled() {
		if err := js.write(stdout, doc); err != nil {
			return err
		}
	}
	if refused {
		return exitError(1)
	}
	return nil
}

// rawTypes are the program types verify takes for raw instructions.
var rawTypes = map[string]ebpf.ProgramType{
	"": ebpf.XDP, "xdp": ebpf.XDP, "tc": ebpf.SchedCLS, "sched_cls": ebpf.SchedCLS,
	"socket": ebpf.SocketFilter, "socket_filter": ebpf.SocketFilter,
}

// isRawFile reports whether a file holds raw instructions or assembly by
// its name: FILE.bin or FILE.s.
func isRawFile(path string) bool {
	return strings.HasSuffix(path, ".bin") || strings.HasSuffix(path, ".s")
}

// verifyJSON is one program's verdict in verify's JSON output.
type verifyJSON struct {
	Program string   `json:"program"`
	Verdict string   `json:"verdict"` // accepted, rejected, not verified or error
	Error   string   `json:"error,omitempty"`
	Log     []string `json:"log,omitempty"`
}

// logLines returns the lines of a verifier log loaded at level|4 as the
// kernel's would read at level: the statistics only with 4 set, but the
// "processed N insns" line always, as the kernel ends every log with it.
// last > 0 keeps only the last lines before the statistics.
func logLines(log string, level, last int) []string {
	body, stats := splitStats(log)
	if last > 0 && len(body) > last {
		body = body[len(body)-last:]
	}
	out := append([]string(nil), body...)
	for _, l := range stats {
		if level&4 != 0 || strings.HasPrefix(l, "processed ") {
			out = append(out, l)
		}
	}
	return out
}

// statsPrefixes start the lines of the statistics block that ends a log at
// level 4.
var statsPrefixes = []string{"verification time ", "stack depth ", "processed ", "pending_branches_peak ", "insn_hist "}

// splitStats splits a log into its lines and its trailing statistics.
func splitStats(log string) (body, stats []string) {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil, nil
	}
	n := len(lines)
	for n > 0 && hasAnyPrefix(lines[n-1], statsPrefixes) {
		n--
	}
	return lines[:n], lines[n:]
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// joinLog is a VerifierError's log as the verifier wrote it.
func joinLog(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}
