package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// FuzzCLI runs command lines on an input file: no command may panic, on
// any arguments or any file (a mutated object, a pcap, a batch script, a
// filter or preset list), and every exit status is 0, 1 or 2. FILE in the
// command line is the input file, written to a temporary directory that is
// the working directory, so that outputs stay there; the file is also
// standard input. Commands that could run for as long as they are told
// are left out: bench, the kernel (--kernel), raw programs (--type: an
// unverified loop runs until stopped) and large counts.
//
//	go test -run '^$' -fuzz '^FuzzCLI$' -fuzztime 5m -fuzzminimizetime 5s ./cmd/bpfvm
func FuzzCLI(f *testing.F) {
	obj := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	maps, dump, globals, mom := obj("maps_cli.o"), obj("dump.o"), obj("globals.o"), obj("mapofmaps.o")
	for _, seed := range []struct {
		cmd  string
		file []byte
	}{
		{"verify FILE", dump},
		{"verify -l 2 -p pick FILE", dump},
		{"veristat -o csv -e prog,verdict,insns -s insns FILE", globals},
		{"veristat -G mode=MODE_SAFE -G cfg.inner[1].c=1 -f insns>10 FILE", globals},
		{"veristat -G @FILE globals.o", []byte("mode = MODE_SAFE\ncfg.arr[9] = 1\n")},
		{"veristat -f @FILE -v", []byte("!*\n#\ninsns<5\n")},
		{"veristat -R FILE", []byte("file_name,prog_name,verdict,total_insns\na.o,p,success,5\n")},
		{"run FILE -p count --data-hex 0000000000000000 --data-out - --ctx-out -", maps},
		{"run FILE -p count --data - --trace none", maps},
		{"run FILE -p lookup --pcap FILE", mom},
		{"map dump FILE name flows", maps},
		{"-j map dump FILE counters", maps},
		{"map update FILE outer key 0 0 0 0 value name inner_a", mom},
		{"map update FILE flows key hex 01 02 value 1 any", maps},
		{"map load FILE counters FILE", []byte(`[{"key":["0x00","0x00","0x00","0x00"],"value":[1,2,3,4,5,6,7,8]}]`)},
		{"prog dump xlated FILE pick opcodes linum visual", dump},
		{"-p prog dump jited FILE pick opcodes", dump},
		{"dump --xlated FILE", dump},
		{"batch maps.o FILE", []byte("map dump name counters\nprog run name count data_in FILE repeat 2\nmap lookup name counters key 0 0 0 0 \\\n\n")},
		{"prog run FILE count data_in FILE ctx_in FILE", maps},
		{"conformance FILE", []byte("-- asm\nmov %r0, 1\nexit\n-- result\n0x1\n")},
		{"version", nil},
	} {
		f.Add(seed.cmd, seed.file)
	}
	f.Fuzz(func(t *testing.T, cmdline string, file []byte) {
		args := strings.Fields(cmdline)
		if len(args) == 0 || len(args) > 40 || len(file) > 1<<20 {
			return
		}
		for i, a := range args {
			switch {
			case a == "bench" || a == "plugin" || strings.Contains(a, "kernel") || strings.HasPrefix(a, "-type") || strings.HasPrefix(a, "--type"):
				return
			case strings.ContainsAny(a, "/\\"):
				return // stay in the directory
			}
			if n, err := strconv.ParseInt(strings.TrimLeft(a, "-=repeatn"), 0, 64); err == nil && (n > 1000 || n < -1000) {
				return
			}
			if a == "FILE" {
				args[i] = "in"
			}
		}
		dir := t.TempDir()
		for _, o := range []string{"maps.o", "globals.o"} {
			// Objects the seeds name besides FILE.
			src := map[string][]byte{"maps.o": maps, "globals.o": globals}[o]
			os.WriteFile(filepath.Join(dir, o), src, 0o644)
		}
		if err := os.WriteFile(filepath.Join(dir, "in"), file, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Chdir(dir)
		if log := os.Getenv("BPFVM_FUZZ_LOG"); log != "" {
			os.WriteFile(log, append([]byte(cmdline+"\n"), file...), 0o644)
		}
		var stdout, stderr bytes.Buffer
		code := run(args, bytes.NewReader(file), &stdout, &stderr)
		if code < 0 || code > 2 {
			t.Errorf("bpfvm %s: exit %d", cmdline, code)
		}
	})
}
