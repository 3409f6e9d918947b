package migration

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// imports maps the import lines of cilium/ebpf's packages to bpfvm's: the
// whole of the migration.
var imports = map[string]string{
	`"github.com/cilium/ebpf"`:         `ebpf "github.com/bpfvm/bpfvm"`,
	`"github.com/cilium/ebpf/perf"`:    `"github.com/bpfvm/bpfvm/perf"`,
	`"github.com/cilium/ebpf/ringbuf"`: `"github.com/bpfvm/bpfvm/ringbuf"`,
	`"github.com/cilium/ebpf/rlimit"`:  `"github.com/bpfvm/bpfvm/rlimit"`,
}

// TestMigrationDiff: the bpfvm package is the kernel one with its imports
// switched, line for line, for the generated code, the object and the
// test file.
func TestMigrationDiff(t *testing.T) {
	for _, name := range []string{"bpf_bpfel.go", "migration_test.go", "mapinmap_test.go", "bpf_bpfel.o"} {
		kernel, err := os.ReadFile("kernel/" + name)
		if err != nil {
			t.Fatal(err)
		}
		vm, err := os.ReadFile("bpfvm/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".o") {
			if !bytes.Equal(kernel, vm) {
				t.Errorf("%s differs", name)
			}
			continue
		}
		// The kernel's test file builds where cilium/ebpf's readers do
		// (not on Windows): its build constraint is the back end's.
		if _, rest, ok := bytes.Cut(kernel, []byte("//go:build !windows\n\n")); ok && bytes.HasPrefix(kernel, []byte("// cilium/ebpf's perf reader")) {
			kernel = rest
		}
		kl, vl := strings.Split(string(kernel), "\n"), strings.Split(string(vm), "\n")
		if len(kl) != len(vl) {
			t.Fatalf("%s: %d lines, %d in bpfvm's", name, len(kl), len(vl))
		}
		changed := 0
		for i := range kl {
			if kl[i] == vl[i] {
				continue
			}
			changed++
			if want, ok := imports[strings.TrimSpace(kl[i])]; !ok || strings.TrimSpace(vl[i]) != want {
				t.Errorf("%s:%d: %q became %q, not an import switch", name, i+1, kl[i], vl[i])
			}
		}
		t.Logf("%s: %d import lines changed", name, changed)
	}
}
