// Command bpfvm loads, inspects and runs eBPF programs in userspace.
//
//	bpfvm dump [--xlated | --jited] [-p PROG] FILE.o
//	bpfvm run FILE.o -p PROG [--data FILE | --data-hex HEX | --pcap FILE [--pcap-out FILE]] [--ctx-in FILE] [--ctx-out FILE|-] [--repeat N] [--engine E] [--data-out FILE|-]
//	bpfvm run --type raw FILE.bin|FILE.s [--data FILE | --data-hex HEX]
//	bpfvm verify [-l LEVEL] [-p PROG] [--type T] [--unpriv] FILE
//	bpfvm veristat [-e FIELDS]... [-s SORT]... [-n N] [-f FILTER]... [-G "VAR = VALUE"|@FILE]... [--dump[=xlated|jited]] [-o table|csv|json] [-v|-d [-l LEVEL]] [-q] [-j JOBS] [--kernel] FILES... | @LIST
//	bpfvm veristat -C [-f FILTER]... [-s SORT] base.csv new.csv
//	bpfvm veristat -R [-f FILTER]... [-s SORT] results.csv
//	bpfvm conformance [--engine E] PATH...
//	bpfvm plugin [--engine E] [MEMORY-HEX] < PROGRAM-HEX
//	bpfvm bench [--repeat N] [--run REGEXP]
//	bpfvm map {dump|lookup|update|delete|getnext|show} FILE.o [name] MAP [key [hex] BYTES] [value [hex] BYTES | value {id N|name MAP|name PROG}] [any|noexist|exist]
//	bpfvm map load FILE.o [name] MAP [file] DUMP.json
//	bpfvm prog run FILE.o [name] PROG [data_in FILE] [data_out FILE|-] [ctx_in FILE] [ctx_out FILE|-] [repeat N] ...
//	bpfvm prog dump {xlated|jited} FILE.o [name] PROG [opcodes] [linum] [visual]
//	bpfvm batch FILE.o SCRIPT|-
//	bpfvm version
//
// As with bpftool, -j (--json) or -p (--pretty) before the command, or
// --json or --pretty after it, prints JSON.
//
// Exit status: 0 when all went well, 1 when a program or an input was
// refused (a file that cannot be read or is not an ELF object, a program
// that fails to load, is rejected or fails to run), 2 for a wrong command
// line. veristat reports verdicts as data, as the kernel's does: its
// status is 1 only for a file or program it could not process.
package main

//go:generate sh testdata/build.sh

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// errUsage marks errors in how the command was called (exit status 2).
var errUsage = errors.New("usage")

type command struct {
	name  string
	short string
	run   func(args []string, stdin io.Reader, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"dump", "list the programs and maps of an object and disassemble its programs", runDump},
		{"run", "run a program on an input packet like bpftool prog run", runRun},
		{"verify", "verify programs and print verdicts and verifier logs", runVerify},
		{"veristat", "verifier statistics per program, like the kernel's veristat", runVeristat},
		{"map", "bpftool map dump/lookup/update/delete/getnext/show on the maps of an object", runMap},
		{"prog", "bpftool prog run (data_in, ctx_in, ...) and prog dump xlated|jited on a program of an object", runProg},
		{"batch", "run map and prog commands from a file on one loaded object, like bpftool batch", runBatch},
		{"conformance", "run bpf_conformance .data tests", runConformance},
		{"bench", "benchmark suite: interpreter, JIT and the kernel on the same programs", runBench},
		{"plugin", "act as a bpf_conformance plugin: program hex on stdin, memory hex as argument", runPlugin},
		{"version", "print the version, the Go toolchain and the engines available", runVersion},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run dispatches a command line and returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	args = globalJSON(args)
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(args[1:], stdin, stdout, stderr)
		var exit exitError
		code := 1
		switch {
		case err == nil:
			return 0
		case errors.As(err, &exit):
			return int(exit)
		case errors.Is(err, errUsage):
			code = 2
		}
		if wantsJSON(args[1:]) {
			// As bpftool in JSON mode: the error is the document.
			(&jsonOutput{on: true}).write(stdout, jsonError{fmt.Sprintf("%v", err)})
		} else {
			fmt.Fprintf(stderr, "bpfvm %s: %v\n", c.name, err)
		}
		return code
	}
	fmt.Fprintf(stderr, "bpfvm: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

// exitError ends a command with a status and no further message.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: bpfvm COMMAND [ARGS]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.short)
	}
	fmt.Fprintln(w, "\nRun 'bpfvm COMMAND -h' for a command's flags.")
}

func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errUsage}, args...)...)
}
