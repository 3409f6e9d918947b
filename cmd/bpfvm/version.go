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
	js := addJSONFlags(fs, true)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageErr("version takes no arguments")
	}
	version, goVersion := "(unknown)", runtime.Version()
	var rev string
	modified := false
	if bi, ok := debug.ReadBuildInfo(); ok {
		version, goVersion = bi.Main.Version, bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	if js.enabled() {
		// bpftool -j version's shape: the version, then what it was
		// built with and what it can do.
		return js.write(stdout, struct {
			Version   string   `json:"version"`
			Revision  string   `json:"revision,omitempty"`
			Modified  bool     `json:"modified,omitempty"`
			GoVersion string   `json:"go_version"`
			Platform  string   `json:"platform"`
			Engines   []string `json:"engines"`
		}{version, rev, modified, goVersion, platform, availableEngines()})
	}
	if rev != "" {
		m := ""
		if modified {
			m = ", modified"
		}
		version += fmt.Sprintf(" (revision %.12s%s)", rev, m)
	}
	fmt.Fprintf(stdout, "bpfvm %s\n", version)
	fmt.Fprintf(stdout, "go: %s %s\n", goVersion, platform)
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
