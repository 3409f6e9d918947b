package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/cilium/ebpf"

	"bpfvm"
	"bpfvm/isa"
)

func runRun(args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("run", stderr)
	progName := fs.String("p", "", "program (function) name, as in CollectionSpec.Programs")
	dataFile := fs.String("data", "", "file holding the input packet")
	dataHex := fs.String("data-hex", "", "input packet as hex")
	dataOut := fs.String("data-out", "", "write the output packet to this file")
	repeat := fs.Uint("repeat", 1, "run this many times and report the mean duration")
	engineName := fs.String("engine", "default", "engine: default, interp")
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
			return usageErr("%v", err)
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
		coll, err := loadCollection(pos[0], opts)
		if err != nil {
			return err
		}
		defer coll.Close()
		if *progName == "" {
			return usageErr("-p PROG is required; programs: %s", programNames(coll))
		}
		prog = coll.Programs[*progName]
		if prog == nil {
			return usageErr("no program %q in %s; programs: %s", *progName, pos[0], programNames(coll))
		}
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
		return err
	}
	ret := res.R0
	if prog.Type() != ebpf.UnspecifiedProgram {
		ret = uint64(uint32(ret)) // the kernel's test run returns 32 bits
	}
	fmt.Fprintf(stdout, "Return value: %d, duration (average): %dns\n", ret, res.Duration.Nanoseconds())
	if *dataOut != "" {
		if err := os.WriteFile(*dataOut, out[:res.DataSize], 0o644); err != nil {
			return err
		}
	}
	return nil
}

func loadCollection(path string, opts bpfvm.ProgramOptions) (*bpfvm.Collection, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, usageErr("%v", err)
	}
	spec, err := loadSpec(path)
	if err != nil {
		return nil, err
	}
	return bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{Programs: opts})
}

func programNames(coll *bpfvm.Collection) string {
	var names []string
	for name := range coll.Programs {
		names = append(names, name)
	}
	return strings.Join(sorted(names), ", ")
}

// readRaw reads a program as 8-byte little-endian instruction words (.bin)
// or, for any other file, as assembly text in either supported dialect.
func readRaw(path string) ([]isa.Instruction, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErr("%v", err)
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
