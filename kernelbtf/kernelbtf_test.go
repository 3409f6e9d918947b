package kernelbtf

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// The shipped types keep the kernel's layout: every root the generator
// names is there, and where the host is the kernel they came from, each
// struct has the host's size and member offsets.
func TestShippedLayout(t *testing.T) {
	spec, err := Shipped()
	if err != nil {
		t.Fatal(err)
	}
	var host *btf.Spec
	if release, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil && strings.TrimSpace(string(release)) == ShippedRelease {
		if host, err = btf.LoadKernelSpec(); err != nil {
			t.Logf("no host BTF: %v", err)
		}
	}
	for _, name := range []string{"task_struct", "pt_regs", "sk_buff", "iphdr", "file", "mm_struct", "cred"} {
		var s *btf.Struct
		if err := spec.TypeByName(name, &s); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if host == nil {
			continue
		}
		var h *btf.Struct
		if err := host.TypeByName(name, &h); err != nil {
			t.Fatal(err)
		}
		if s.Size != h.Size || len(s.Members) != len(h.Members) {
			t.Errorf("%s: size %d with %d members, host %d with %d", name, s.Size, len(s.Members), h.Size, len(h.Members))
			continue
		}
		for i, m := range s.Members {
			if hm := h.Members[i]; m.Name != hm.Name || m.Offset != hm.Offset || m.BitfieldSize != hm.BitfieldSize {
				t.Errorf("%s: member %d %s@%d, host %s@%d", name, i, m.Name, m.Offset, hm.Name, hm.Offset)
			}
		}
	}
	// A pointer out of the set leads to a forward declaration.
	var task *btf.Struct
	if err := spec.TypeByName("task_struct", &task); err != nil {
		t.Fatal(err)
	}
	if !hasFwd(task) {
		t.Error("task_struct points to no forward declaration: the subset is not cut")
	}
	// A pointer to another root is followed: task->mm->... relocates.
	for _, m := range task.Members {
		if m.Name != "mm" {
			continue
		}
		if p, ok := m.Type.(*btf.Pointer); !ok {
			t.Errorf("task_struct.mm is %v", m.Type)
		} else if _, ok := btf.UnderlyingType(p.Target).(*btf.Struct); !ok {
			t.Errorf("task_struct.mm points to %v, want struct mm_struct", p.Target)
		}
	}
}

func hasFwd(s *btf.Struct) bool {
	for _, m := range s.Members {
		if p, ok := m.Type.(*btf.Pointer); ok {
			if _, ok := p.Target.(*btf.Fwd); ok {
				return true
			}
		}
	}
	return false
}

// The generator is deterministic: run on the kernel the shipped types came
// from, it writes the same bytes.
func TestGenerateReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the generator")
	}
	release, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil || strings.TrimSpace(string(release)) != ShippedRelease {
		t.Skipf("host is not %s", ShippedRelease)
	}
	if _, err := os.Stat(VMLinux); err != nil {
		t.Skip(err)
	}
	out := filepath.Join(t.TempDir(), "vmlinux.btf.gz")
	cmd := exec.Command("go", "run", "./internal/genbtf", "-out", out)
	// For the host, also when the test runs cross-built (GOARCH=arm64
	// under qemu-user): the go command would build for the target.
	cmd.Env = append(os.Environ(), "GOOS="+hostGOOS(), "GOARCH="+hostGOARCH())
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, shipped) {
		t.Error("generated types differ from the committed vmlinux.btf.gz: run go generate ./kernelbtf")
	}
}

// Without host BTF the targets are the shipped types; a host BTF that
// exists but does not parse is an error naming it, not a fallback.
func TestTargets(t *testing.T) {
	dir := t.TempDir()
	specs, err := targets(filepath.Join(dir, "missing"), nil)
	if err != nil || len(specs) != 1 {
		t.Fatalf("missing host BTF: %v, %d specs", err, len(specs))
	}
	if _, err := specs[0].AnyTypeByName("task_struct"); err != nil {
		t.Errorf("shipped target: %v", err)
	}
	bad := filepath.Join(dir, "garbage")
	if err := os.WriteFile(bad, []byte("not BTF at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{bad, dir} {
		_, err := targets(path, nil)
		if !errors.Is(err, ErrBadBTF) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want ErrBadBTF naming it", path, err)
		}
	}
	if _, err := os.Stat(VMLinux); err == nil {
		specs, err := Targets(btf.NewCache())
		if err != nil || len(specs) == 0 {
			t.Fatalf("host targets: %v", err)
		}
	}
}

// The embedded file is gzip of raw BTF.
func TestShippedFormat(t *testing.T) {
	zr, err := gzip.NewReader(bytes.NewReader(shipped))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) < 4 || raw[0] != 0x9f || raw[1] != 0xeb {
		t.Errorf("not raw BTF: % x", raw[:4])
	}
}

// BenchmarkShipped is what a load without host BTF pays for its target.
func BenchmarkShipped(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		spec, err := Shipped()
		if err != nil {
			b.Fatal(err)
		}
		var task *btf.Struct
		if err := spec.TypeByName("task_struct", &task); err != nil {
			b.Fatal(err)
		}
	}
}

// hostGOOS and hostGOARCH are the go command's own platform.
func hostGOOS() string   { return goEnv("GOHOSTOS") }
func hostGOARCH() string { return goEnv("GOHOSTARCH") }

func goEnv(name string) string {
	b, err := exec.Command("go", "env", name).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
