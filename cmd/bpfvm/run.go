package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
)

func runRun(args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("run", stderr)
	progName := fs.String("p", "", "program (function) name, as in CollectionSpec.Programs")
	dataFile := fs.String("data", "", "file holding the input packet")
	dataHex := fs.String("data-hex", "", "input packet as hex")
	dataOut := fs.String("data-out", "", "write the output packet to this file (- for a hex dump on stdout)")
	repeat := fs.Uint("repeat", 1, "run this many times and report the mean duration")
	engineName := fs.String("engine", "default", "engine: "+strings.Join(engineNames, ", "))
	typ := fs.String("type", "", "input kind: empty for an ELF object, raw for instructions (.bin) or assembly text")
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
	var data []byte
	switch {
	case *dataFile != "":
		if data, err = os.ReadFile(*dataFile); err != nil {
			return err
		}
	case *dataHex != "":
		if data, err = hex.DecodeString(strings.Join(strings.Fields(*dataHex), "")); err != nil {
			return usageErr("--data-hex: %v", err)
		}
	}
	opts := bpfvm.ProgramOptions{Engine: engine}

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

	var out []byte
	if *dataOut != "" {
		out = make([]byte, len(data)+1024)
	}
	res, err := prog.Execute(&bpfvm.RunOptions{Data: data, DataOut: out, Repeat: uint32(*repeat)})
	if err != nil {
		return fmt.Errorf("%s: program %s: %w", pos[0], prog.Name(), err)
	}
	ret := res.R0
	if prog.Type() != ebpf.UnspecifiedProgram {
		ret = uint64(uint32(ret)) // the kernel's test run returns 32 bits
	}
	// bpftool prints the output data before the return value.
	switch *dataOut {
	case "":
	case "-":
		fmt.Fprintln(stdout, "data_out:")
		hexLines(stdout, out[:res.DataSize])
	default:
		if err := os.WriteFile(*dataOut, out[:res.DataSize], 0o644); err != nil {
			return err
		}
	}
	average := ""
	if *repeat > 1 {
		average = " (average)"
	}
	fmt.Fprintf(stdout, "Return value: %d, duration%s: %dns\n", ret, average, res.Duration.Nanoseconds())
	return nil
}

// engineNames are the names ParseEngine takes.
var engineNames = []string{"default", "interp", "jit"}

// hexLines prints bytes as bpftool's hex dump does: 16 a line, space-separated.
func hexLines(w io.Writer, b []byte) {
	for len(b) > 0 {
		n := min(len(b), 16)
		fmt.Fprintf(w, "% x\n", b[:n])
		b = b[n:]
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
