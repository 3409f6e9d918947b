package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/conformance"
	"github.com/bpfvm/bpfvm/isa"
)

func runConformance(args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("conformance", stderr)
	engineName := fs.String("engine", "interp", "engine: interp, jit")
	verbose := fs.Bool("v", false, "print a line for passing tests too")
	paths, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return usageErr("no test files or directories given")
	}
	engine, err := bpfvm.ParseEngine(*engineName)
	if err != nil {
		return usageErr("%v", err)
	}
	files, err := conformance.Files(paths)
	if err != nil {
		return err // refused input, as a missing object elsewhere
	}
	passed, failed := 0, 0
	for _, f := range files {
		t, err := conformance.ParseFile(f)
		if err == nil {
			err = t.Run(conformance.NewEngine(engine))
		}
		name := strings.TrimSuffix(f, ".data")
		if t != nil {
			name = t.Name
		}
		if err != nil {
			failed++
			fmt.Fprintf(stdout, "FAIL %s: %v\n", name, err)
			continue
		}
		passed++
		if *verbose {
			fmt.Fprintf(stdout, "PASS %s\n", name)
		}
	}
	fmt.Fprintf(stdout, "%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		return exitError(1)
	}
	return nil
}

// runPlugin implements the bpf_conformance plugin protocol: the program as
// hex on stdin, the memory as hex in the first argument; R0 is printed in
// hex, errors go to stderr with a non-zero exit.
func runPlugin(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("plugin", stderr)
	engineName := fs.String("engine", "interp", "engine: interp, jit")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	engine, err := bpfvm.ParseEngine(*engineName)
	if err != nil {
		return usageErr("%v", err)
	}
	var mem []byte
	if len(pos) > 0 {
		if mem, err = hex.DecodeString(strings.Join(strings.Fields(pos[0]), "")); err != nil {
			return usageErr("memory: %v", err)
		}
	}
	in, err := io.ReadAll(stdin)
	if err != nil {
		return err
	}
	code, err := hex.DecodeString(strings.Join(strings.Fields(string(in)), ""))
	if err != nil {
		return fmt.Errorf("program: %v", err)
	}
	prog, err := isa.DecodeProgram(code)
	if err != nil {
		return err
	}
	r0, err := conformance.NewEngine(engine)(prog, mem)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%x\n", r0)
	return nil
}
