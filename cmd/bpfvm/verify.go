package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/cilium/ebpf"

	"bpfvm"
	"bpfvm/verifier"
)

// runVerify verifies the programs of a file and prints verdicts and logs:
// exit status 0 when all are accepted, 1 when one is rejected, 2 for
// unusable input.
func runVerify(args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("verify", stderr)
	level := fs.Int("l", 1, "log level: 0 none, 1 branches, 2 every instruction; +4 statistics")
	progName := fs.String("p", "", "verify only this program")
	typ := fs.String("type", "", "for raw instructions or assembly: the program type (xdp, tc, socket)")
	unpriv := fs.Bool("unpriv", false, "verify with the rules for unprivileged loads")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("want exactly one program file, got %d", len(pos))
	}
	opts := bpfvm.ProgramOptions{LogLevel: *level, Unprivileged: *unpriv}

	var progs []*bpfvm.Program
	var failed []error
	load := func(p *bpfvm.Program, err error) {
		if err != nil {
			failed = append(failed, err)
			return
		}
		progs = append(progs, p)
	}
	if *typ != "" || !isELF(pos[0]) {
		pt, ok := map[string]ebpf.ProgramType{"": ebpf.XDP, "xdp": ebpf.XDP, "tc": ebpf.SchedCLS, "sched_cls": ebpf.SchedCLS, "socket": ebpf.SocketFilter, "socket_filter": ebpf.SocketFilter}[*typ]
		if !ok {
			return usageErr("unknown --type %q", *typ)
		}
		insns, err := readRaw(pos[0])
		if err != nil {
			return err
		}
		load(bpfvm.NewRawProgram(pos[0], pt, insns, opts))
	} else {
		spec, err := loadSpec(pos[0])
		if err != nil {
			return usageErr("%v", err)
		}
		var names []string
		for name := range spec.Programs {
			if *progName == "" || name == *progName {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			return usageErr("no program %q in %s", *progName, pos[0])
		}
		sort.Strings(names)
		for _, name := range names {
			one := spec.Copy()
			for other := range one.Programs {
				if other != name {
					delete(one.Programs, other)
				}
			}
			coll, err := bpfvm.NewCollectionWithOptions(one, bpfvm.CollectionOptions{Programs: opts})
			if err != nil {
				failed = append(failed, err)
				continue
			}
			defer coll.Close()
			progs = append(progs, coll.Programs[name])
		}
	}
	for _, p := range progs {
		fmt.Fprintf(stdout, "%s: accepted\n", p.Name())
		if p.VerifierLog != "" {
			fmt.Fprint(stdout, p.VerifierLog)
		}
	}
	for _, err := range failed {
		var ve *bpfvm.VerifierError
		if errors.As(err, &ve) {
			fmt.Fprintf(stdout, "%v\n%s", err, ve.Log)
			continue
		}
		if errors.Is(err, verifier.ErrRejected) {
			fmt.Fprintln(stdout, err)
			continue
		}
		return err
	}
	if len(failed) > 0 {
		return exitError(1)
	}
	return nil
}

// isELF reports whether the file starts with the ELF magic.
func isELF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return strings.HasSuffix(path, ".o")
	}
	defer f.Close()
	var magic [4]byte
	_, err = io.ReadFull(f, magic[:])
	return err == nil && string(magic[:]) == "\x7fELF"
}
