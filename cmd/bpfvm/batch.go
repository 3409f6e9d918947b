package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/bpfvm/bpfvm"
)

// runProg is bpftool's prog command in its keyword syntax, on an object:
//
//	bpfvm prog run FILE.o [name] PROG [data_in FILE] [data_out FILE] [data_size_out N]
//	    [ctx_in FILE] [ctx_out FILE] [ctx_size_out N] [repeat N]
//	bpfvm prog dump { xlated | jited } FILE.o [name] PROG [opcodes] [linum] [visual]
func runProg(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("prog", stderr)
	flags := addSessionFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 && pos[0] == "dump" {
		return runProgDump(pos[1:], stdout, flags.js)
	}
	if len(pos) < 3 || pos[0] != "run" {
		return usageErr("usage: bpfvm prog run FILE.o [name] PROG [data_in FILE] [data_out FILE] [data_size_out N] [ctx_in FILE] [ctx_out FILE] [ctx_size_out N] [repeat N]")
	}
	path, rest := pos[1], pos[2:]
	name, _ := progRef(rest)
	// One run goes on the interpreter, as run's (runEngine).
	repeat, pcap := uint64(1), false
	for i, a := range rest {
		switch {
		case a == "repeat" && i+1 < len(rest):
			repeat, _ = strconv.ParseUint(rest[i+1], 0, 32)
		case a == "pcap_in":
			pcap = true
		}
	}
	flags.engine = runEngine(bpfvm.EngineDefault, uint32(repeat), pcap)
	s, err := flags.start(path, []string{name}, nil, stdout, stderr)
	if err != nil {
		return err
	}
	defer s.close()
	if err := s.progCommand(append([]string{"run"}, rest...), stdin); err != nil {
		return err
	}
	if s.jw != nil {
		return s.jw.flush()
	}
	return nil
}

// progRef takes a program reference, "name PROG" or PROG.
func progRef(args []string) (string, []string) {
	if len(args) > 0 && args[0] == "name" {
		args = args[1:]
	}
	if len(args) == 0 {
		return "", nil
	}
	return args[0], args[1:]
}

// progCommand runs "run [name] PROG KEYWORDS..." on the session.
func (s *session) progCommand(args []string, stdin io.Reader) error {
	if len(args) == 0 || args[0] != "run" {
		return usageErr("prog: only run is supported")
	}
	name, args := progRef(args[1:])
	prog := s.coll.Programs[name]
	if prog == nil {
		return usageErr("no program %q loaded from %s", name, s.path)
	}
	in := runArgs{repeat: 1}
	var dataIn, ctxIn, pcapIn, pcapOut string
	keywords := []string{"data_in", "data_out", "data_size_out", "ctx_in", "ctx_out", "ctx_size_out", "repeat", "pcap_in", "pcap_out"}
	for len(args) > 0 {
		kw, err := keyword(args[0], keywords)
		if err != nil {
			return err
		}
		if len(args) < 2 {
			return usageErr("%s: want an argument", kw)
		}
		arg := args[1]
		args = args[2:]
		var n uint64
		if strings.HasSuffix(kw, "size_out") || kw == "repeat" {
			if n, err = strconv.ParseUint(arg, 0, 32); err != nil {
				return usageErr("can't parse %s as %s", arg, strings.ReplaceAll(kw, "_", " "))
			}
		}
		switch kw {
		case "data_in":
			dataIn = arg
		case "data_out":
			in.dataOut = arg
		case "data_size_out":
			in.dataSizeOut = uint(n)
		case "ctx_in":
			ctxIn = arg
		case "ctx_out":
			in.ctxOut = arg
		case "ctx_size_out":
			in.ctxSizeOut = uint(n)
		case "repeat":
			in.repeat = uint32(n)
		case "pcap_in":
			pcapIn = arg
		case "pcap_out":
			pcapOut = arg
		}
	}
	if pcapIn != "" {
		if dataIn != "" || ctxIn != "" {
			return usageErr("pcap_in takes the packets from the capture: no data_in or ctx_in")
		}
		defer flushTrace(s.trace)
		return runPcap(prog, pcapIn, pcapOut, in.repeat, s.out, s.jw)
	}
	defer flushTrace(s.trace)
	var err error
	if in.data, in.ctx, err = readRunInputs(dataIn, ctxIn, stdin); err != nil {
		return err
	}
	if err := execRun(prog, in, s.out, s.jw); err != nil {
		return fmt.Errorf("failed to run program: %w", err)
	}
	return nil
}

// keyword matches an argument against keywords as bpftool's is_prefix
// does: any unambiguous prefix of one.
func keyword(arg string, keywords []string) (string, error) {
	var found []string
	for _, k := range keywords {
		if k == arg {
			return k, nil
		}
		if strings.HasPrefix(k, arg) && arg != "" {
			found = append(found, k)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", usageErr("expected no more arguments, %s, got: '%s'?", "'"+strings.Join(keywords, "', '")+"'", arg)
	}
	return "", usageErr("parameter '%s' is ambiguous: %s", arg, strings.Join(found, ", "))
}

// runBatch runs commands from a file on one object, as bpftool batch
// runs bpftool commands: "map ..." and "prog run ..." lines without the
// object, which stay loaded, so maps keep what earlier lines did to them.
//
//	bpfvm batch FILE.o [file] SCRIPT|-
func runBatch(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("batch", stderr)
	flags := addSessionFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 3 && pos[1] == "file" {
		pos = []string{pos[0], pos[2]}
	}
	if len(pos) != 2 {
		return usageErr("usage: bpfvm batch FILE.o [file] SCRIPT (- for stdin)")
	}
	path, script := pos[0], pos[1]
	var r io.Reader = stdin
	if script != "-" {
		f, err := os.Open(script)
		if err != nil {
			return fmt.Errorf("can't open file (%s): %w", script, err)
		}
		defer f.Close()
		r = f
	}
	lines, err := batchLines(r)
	if err != nil {
		return fmt.Errorf("%s: %w", script, err)
	}
	// The programs the script runs, loaded with the maps, and those its
	// map updates may put in program arrays.
	var progs, maybe []string
	for _, l := range lines {
		if len(l.args) > 1 && l.args[0] == "map" && l.args[1] == "update" {
			maybe = append(maybe, valueNames(l.args)...)
		}
		if len(l.args) > 1 && l.args[0] == "prog" && l.args[1] == "run" {
			if name, _ := progRef(l.args[2:]); name != "" && !contains(progs, name) {
				progs = append(progs, name)
			}
		}
	}
	s, err := flags.start(path, progs, maybe, stdout, stderr)
	if err != nil {
		return err
	}
	defer s.close()
	if s.jw != nil {
		s.jw.startArray()
	}
	n := 0
	var failure error
	for _, l := range lines {
		if s.jw != nil {
			s.jw.startObject()
			s.jw.name("command")
			s.jw.startArray()
			for _, a := range l.args {
				s.jw.str(a)
			}
			s.jw.endArray()
			s.jw.name("output")
		}
		var err error
		switch l.args[0] {
		case "map":
			err = s.mapCommand(l.args[1:])
		case "prog":
			err = s.progCommand(l.args[1:], stdin)
		default:
			err = usageErr("unknown command %q (want map or prog)", l.args[0])
		}
		if err != nil && !errors.Is(err, errNotFound) {
			failure = fmt.Errorf("%s:%d: %w", script, l.line, err)
			if s.jw != nil {
				s.jw.startObject()
				s.jw.name("error")
				s.jw.str(failure.Error())
				s.jw.endObject()
			}
		}
		if s.jw != nil {
			s.jw.endObject()
		}
		if failure != nil {
			break
		}
		n++
	}
	if s.jw != nil {
		s.jw.endArray()
		if err := s.jw.flush(); err != nil {
			return err
		}
		if failure != nil {
			if errors.Is(failure, errUsage) {
				return exitError(2)
			}
			return exitError(1)
		}
		return nil
	}
	if failure != nil {
		return failure
	}
	fmt.Fprintf(stdout, "processed %d commands\n", n)
	return nil
}

// batchLine is one command of a batch file and where it was.
type batchLine struct {
	line int
	args []string
}

// batchLines reads a batch file as bpftool does: # starts a comment, a
// backslash at the end of a line continues it, words are split at blanks
// and may be quoted with ' or ".
func batchLines(r io.Reader) ([]batchLine, error) {
	sc := bufio.NewScanner(r)
	var out []batchLine
	var cont strings.Builder
	n, start := 0, 0
	for sc.Scan() {
		n++
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		if cont.Len() == 0 {
			start = n
		}
		if t, ok := strings.CutSuffix(text, "\\"); ok {
			cont.WriteString(t)
			continue
		}
		cont.WriteString(text)
		args, err := splitWords(cont.String())
		cont.Reset()
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		if len(args) > 0 {
			out = append(out, batchLine{start, args})
		}
	}
	if cont.Len() > 0 {
		return nil, fmt.Errorf("missing continuation line on command at line %d", start)
	}
	return out, sc.Err()
}

// splitWords splits a command line at blanks; a word starting with ' or "
// runs to the same quote.
func splitWords(s string) ([]string, error) {
	var words []string
	for {
		s = strings.TrimLeft(s, " \t\r\n")
		if s == "" {
			return words, nil
		}
		if q := s[0]; q == '\'' || q == '"' {
			end := strings.IndexByte(s[1:], q)
			if end < 0 {
				return nil, errors.New("unterminated quoted string")
			}
			words = append(words, s[1:1+end])
			s = s[2+end:]
			continue
		}
		end := strings.IndexAny(s, " \t\r\n")
		if end < 0 {
			end = len(s)
		}
		words = append(words, s[:end])
		s = s[end:]
	}
}
