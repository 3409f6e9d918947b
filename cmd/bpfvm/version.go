package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
)

// runVersion prints the module's version, the Go toolchain and the engines
// that work here, as `bpftool version` prints its own and its features.
func runVersion(args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("version", stderr)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageErr("version takes no arguments")
	}
	version, goVersion := "(unknown)", runtime.Version()
	if bi, ok := debug.ReadBuildInfo(); ok {
		version, goVersion = bi.Main.Version, bi.GoVersion
		var rev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = ", modified"
				}
			}
		}
		if rev != "" {
			version += fmt.Sprintf(" (revision %.12s%s)", rev, modified)
		}
	}
	fmt.Fprintf(stdout, "bpfvm %s\n", version)
	fmt.Fprintf(stdout, "go: %s %s/%s\n", goVersion, runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(stdout, "engines: %s\n", strings.Join(availableEngines(), ", "))
	return nil
}

// availableEngines returns the engines that run programs here: the
// interpreter always, the JIT where it compiles a trivial program (on
// amd64 Linux with executable memory).
func availableEngines() []string {
	engines := []string{"interp"}
	insns, err := isa.Assemble("r0 = 0\nexit\n")
	if err != nil {
		return engines
	}
	p, err := bpfvm.NewRawProgram("probe", ebpf.UnspecifiedProgram, insns, bpfvm.ProgramOptions{Engine: bpfvm.EngineJIT})
	if err != nil {
		return engines
	}
	defer p.Close()
	if p.Engine() == bpfvm.EngineJIT {
		engines = append(engines, "jit")
	}
	return engines
}
