package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
)

func runRun(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("run", stderr)
	progName := fs.String("p", "", "program (function) name, as in CollectionSpec.Programs")
	dataFile := fs.String("data", "", "file holding the input packet (- for stdin); bpftool's data_in")
	fs.StringVar(dataFile, "data-in", "", "same as --data")
	dataHex := fs.String("data-hex", "", "input packet as hex")
	dataOut := fs.String("data-out", "", "write the output packet to this file (- for a hex dump on stdout)")
	dataSizeOut := fs.Uint("data-size-out", 0, "size of the output packet buffer (default 32 KiB, as bpftool)")
	ctxIn := fs.String("ctx-in", "", "file holding the input context (- for stdin), e.g. a struct xdp_md or __sk_buff")
	ctxOut := fs.String("ctx-out", "", "write the output context to this file (- for a hex dump on stdout)")
	ctxSizeOut := fs.Uint("ctx-size-out", 0, "size of the output context buffer (default 32 KiB, as bpftool)")
	repeat := fs.Uint("repeat", 1, "run this many times and report the mean duration")
	engineName := fs.String("engine", "default", "engine: "+strings.Join(engineNames, ", ")+" (default: the interpreter for one run, the JIT for more)")
	typ := fs.String("type", "", "input kind: empty for an ELF object, raw for instructions (.bin) or assembly text")
	pcapIn := fs.String("pcap", "", "run on each packet of a pcap capture (Ethernet), one test run each")
	pcapOut := fs.String("pcap-out", "", "with --pcap: write the packets as the program left them to this pcap file")
	trace := fs.String("trace", "-", "where bpf_trace_printk output goes, as trace_pipe shows it: - for stderr, a file, or none")
	js := addJSONFlags(fs, true)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("want exactly one program file, got %d", len(pos))
	}
	if *dataFile != "" && *dataHex != "" {
		return usageErr("--data and --data-hex are exclusive")
	}
	if *repeat == 0 || *repeat > 1<<32-1 {
		return usageErr("--repeat %d out of range", *repeat)
	}
	engine, err := bpfvm.ParseEngine(*engineName)
	if err != nil {
		return usageErr("%v", err)
	}
	in := runArgs{dataOut: *dataOut, ctxOut: *ctxOut, dataSizeOut: *dataSizeOut, ctxSizeOut: *ctxSizeOut, repeat: uint32(*repeat)}
	if in.data, in.ctx, err = readRunInputs(*dataFile, *ctxIn, stdin); err != nil {
		return err
	}
	if *dataHex != "" {
		if in.data, err = hex.DecodeString(strings.Join(strings.Fields(*dataHex), "")); err != nil {
			return usageErr("--data-hex: %v", err)
		}
	}
	traceOut, closeTrace, err := openTrace(*trace, stderr)
	if err != nil {
		return err
	}
	defer closeTrace()
	opts := bpfvm.ProgramOptions{Engine: runEngine(engine, in.repeat, *pcapIn != ""), Output: traceOut}

	var prog *bpfvm.Program
	switch *typ {
	case "raw":
		insns, err := readRaw(pos[0])
		if err != nil {
			return err
		}
		prog, err = bpfvm.NewRawProgram(filepath.Base(pos[0]), ebpf.UnspecifiedProgram, insns, opts)
		if err != nil {
			return err
		}
	case "":
		spec, err := openObject(pos[0])
		if err != nil {
			return err
		}
		if len(spec.Programs) == 0 {
			return fmt.Errorf("%s: no programs", pos[0])
		}
		names := strings.Join(specNames(spec), ", ")
		if *progName == "" {
			return usageErr("-p PROG is required; programs: %s", names)
		}
		if spec.Programs[*progName] == nil {
			return usageErr("no program %q in %s; programs: %s", *progName, pos[0], names)
		}
		// Only this program: others in the file that fail to load do
		// not keep it from running.
		l := loadOne(pos[0], spec, *progName, bpfvm.CollectionOptions{Programs: opts})
		if l.err != nil {
			return l.err
		}
		defer l.close()
		prog = l.prog
	default:
		return usageErr("unknown --type %q (want raw)", *typ)
	}
	defer prog.Close()
	var jw *jsonWriter
	if js.enabled() {
		jw = js.writer(stdout)
	}
	if *pcapIn != "" {
		if in.data != nil || in.ctx != nil {
			return usageErr("--pcap takes the packets from the capture: no --data or --ctx-in")
		}
		if err := runPcap(prog, *pcapIn, *pcapOut, in.repeat, stdout, jw); err != nil {
			return fmt.Errorf("%s: program %s: %w", pos[0], prog.Name(), err)
		}
	} else if err := execRun(prog, in, stdout, jw); err != nil {
		return fmt.Errorf("%s: program %s: %w", pos[0], prog.Name(), err)
	}
	if jw != nil {
		return jw.flush()
	}
	return nil
}

// runArgs are bpftool prog run's inputs: data_in, ctx_in (nil when not
// given), where data_out and ctx_out go, their buffer sizes and repeat.
type runArgs struct {
	data, ctx               []byte
	dataOut, ctxOut         string
	dataSizeOut, ctxSizeOut uint
	repeat                  uint32
}

// defaultSizeOut is bpftool's output buffer for data_out and ctx_out.
const defaultSizeOut = 32 << 10

// readRunInputs reads data_in and ctx_in from files, or stdin for "-"
// (not both, as bpftool).
func readRunInputs(dataIn, ctxIn string, stdin io.Reader) (data, ctx []byte, err error) {
	if dataIn == "-" && ctxIn == "-" {
		return nil, nil, usageErr("cannot use standard input for both data_in and ctx_in")
	}
	read := func(name string) ([]byte, error) {
		switch name {
		case "":
			return nil, nil
		case "-":
			b, err := io.ReadAll(stdin)
			if b == nil {
				b = []byte{}
			}
			return b, err
		}
		b, err := os.ReadFile(name)
		if err == nil && b == nil {
			b = []byte{} // an empty file is still given
		}
		return b, err
	}
	if data, err = read(dataIn); err != nil {
		return nil, nil, err
	}
	if ctx, err = read(ctxIn); err != nil {
		return nil, nil, err
	}
	return data, ctx, nil
}

// execRun runs a program once (or repeat times) as bpftool prog run does
// and prints what it prints: data_out and ctx_out (as hex dumps for "-",
// else into files), then the return value and duration; into jw in JSON
// mode.
func execRun(prog *bpfvm.Program, in runArgs, stdout io.Writer, jw *jsonWriter) error {
	opts := bpfvm.RunOptions{Data: in.data, Repeat: max(in.repeat, 1)}
	if in.data != nil || in.dataSizeOut > 0 {
		size := in.dataSizeOut
		if size == 0 {
			size = defaultSizeOut
		}
		opts.DataOut = make([]byte, size)
	}
	var ctxOut []byte
	if in.ctx != nil {
		opts.Context = in.ctx
		size := in.ctxSizeOut
		if size == 0 {
			size = defaultSizeOut
		}
		if int(size) < prog.ContextSize() {
			// The kernel's bpf_ctx_finish refuses a short buffer.
			return fmt.Errorf("ctx_size_out %d is smaller than the %d byte context: %w", size, prog.ContextSize(), syscall.ENOSPC)
		}
		ctxOut = make([]byte, prog.ContextSize())
		opts.ContextOut = ctxOut
	}
	res, err := prog.Execute(&opts)
	if err != nil {
		return err
	}
	ret := res.R0
	if prog.Type() != ebpf.UnspecifiedProgram {
		ret = uint64(uint32(ret)) // the kernel's test run returns 32 bits
	}
	if jw != nil {
		jw.startObject()
	}
	// bpftool prints the output data and context before the return value.
	outputs := []struct {
		name, dest string
		b          []byte
	}{{"data_out", in.dataOut, nil}, {"ctx_out", in.ctxOut, ctxOut}}
	if opts.DataOut != nil {
		outputs[0].b = opts.DataOut[:res.DataSize]
	}
	for _, o := range outputs {
		switch {
		case o.dest == "" || len(o.b) == 0:
		case o.dest == "-" && jw != nil:
			jw.name(o.name)
			jw.startArray()
			for _, c := range o.b {
				jw.uint(uint64(c))
			}
			jw.endArray()
		case o.dest == "-":
			hexDump(stdout, o.b)
		default:
			if err := os.WriteFile(o.dest, o.b, 0o644); err != nil {
				return err
			}
		}
	}
	if jw != nil {
		jw.name("retval")
		jw.uint(ret)
		jw.name("duration")
		jw.int(res.Duration.Nanoseconds())
		jw.endObject()
		return nil
	}
	average := ""
	if opts.Repeat > 1 {
		average = " (average)"
	}
	fmt.Fprintf(stdout, "Return value: %d, duration%s: %dns\n", ret, average, res.Duration.Nanoseconds())
	return nil
}

// runEngine is the engine a run command uses: the one asked for, or by
// default the interpreter for a single run and the JIT for more. One run
// does not pay back the JIT's compile and first-run setup (its execution
// context, cold machine code): measured by BenchmarkSingleRun, a run of
// maps_cli.o's count takes about half as long on the interpreter.
func runEngine(e bpfvm.Engine, repeat uint32, pcap bool) bpfvm.Engine {
	if e == bpfvm.EngineDefault && repeat <= 1 && !pcap {
		return bpfvm.EngineInterpreter
	}
	return e
}

// engineNames are the names ParseEngine takes.
var engineNames = []string{"default", "interp", "jit"}

// hexDump prints bytes as bpftool prog run prints data_out and ctx_out
// to stdout: the offset in 7 hex digits and a tab, 16 bytes a line in
// groups of two, then "| " and the bytes as ASCII ('.' where not
// printable) with a space after the eighth.
func hexDump(w io.Writer, b []byte) {
	var line []byte
	for i := 0; i < len(b); i += 16 {
		line = fmt.Appendf(line[:0], "%07x\t", i)
		for j := i; j < i+16; j++ {
			if j < len(b) {
				line = fmt.Appendf(line, "%02x", b[j])
			} else {
				line = append(line, "  "...)
			}
			if j%2 == 1 {
				line = append(line, ' ')
			}
		}
		line = append(line, "| "...)
		for j := i; j < i+16 && j < len(b); j++ {
			c := b[j]
			if c < ' ' || c > '~' {
				c = '.'
			}
			line = append(line, c)
			if j == i+7 {
				line = append(line, ' ')
			}
		}
		line = append(line, '\n')
		w.Write(line)
	}
}

// readRaw reads a program as 8-byte little-endian instruction words (.bin)
// or, for any other file, as assembly text in either supported dialect.
func readRaw(path string) ([]isa.Instruction, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(path, ".bin") {
		prog, err := isa.DecodeProgram(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return prog, nil
	}
	prog, err := isa.Assemble(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return prog, nil
}

// openTrace opens where bpf_trace_printk output goes: stderr for "-",
// nowhere for "none" or "", else a file (created or truncated).
func openTrace(dest string, stderr io.Writer) (io.Writer, func(), error) {
	switch dest {
	case "", "none":
		return nil, func() {}, nil
	case "-":
		t := newTracePipe(stderr)
		return t, func() { t.Flush() }, nil
	}
	f, err := os.Create(dest)
	if err != nil {
		return nil, nil, err
	}
	t := newTracePipe(f)
	return t, func() { t.Flush(); f.Close() }, nil
}
