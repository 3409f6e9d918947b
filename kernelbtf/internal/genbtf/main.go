// Command genbtf writes the target BTF that bpfvm ships (kernelbtf's
// vmlinux.btf): a subset of a kernel's vmlinux BTF holding the types
// tracing programs read, laid out exactly as in that kernel.
//
// The subset is the closure of the root types below under embedding: a
// root's members, arrays, typedefs, qualifiers and function prototypes are
// kept whole, so every kept type has the kernel's size and member offsets.
// A pointer to a struct or union outside that closure points to a forward
// declaration of the same name instead, which keeps the pointer (8 bytes)
// and cuts the graph that would otherwise pull in most of the kernel.
//
// Usage: go run ./internal/genbtf [-in /sys/kernel/btf/vmlinux] [-out vmlinux.btf]
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/cilium/ebpf/btf"
)

// roots are the types kept whole with what they embed: what the tracing
// program types read (tasks, registers, files, sockets, network headers),
// their contexts, and enums programs test with bpf_core_enum_value_exists.
var roots = []string{
	// Tasks and what a task points to.
	"task_struct", "mm_struct", "vm_area_struct", "cred", "nsproxy",
	"pid_namespace", "pid", "upid", "signal_struct", "files_struct",
	"fdtable", "css_set", "cgroup", "cgroup_subsys_state", "kernfs_node",
	"linux_binprm", "uts_namespace", "new_utsname", "user_namespace",
	// Files.
	"file", "inode", "dentry", "path", "qstr", "super_block", "vfsmount",
	"mount",
	// Registers and tracing contexts.
	"pt_regs", "bpf_perf_event_data", "trace_entry",
	"trace_event_raw_sys_enter", "trace_event_raw_sys_exit",
	"bpf_raw_tracepoint_args",
	// Networking.
	"sk_buff", "sock", "sock_common", "inet_sock", "inet_connection_sock",
	"tcp_sock", "udp_sock", "socket", "net", "net_device", "sockaddr",
	"sockaddr_in", "sockaddr_in6", "in6_addr", "ethhdr", "iphdr",
	"ipv6hdr", "tcphdr", "udphdr", "icmphdr", "xdp_md", "__sk_buff",
	"bpf_sock", "bpf_sock_ops", "bpf_sk_lookup", "sk_msg_md",
	// BPF objects and enums.
	"bpf_map", "bpf_prog", "bpf_func_id", "bpf_map_type", "bpf_prog_type",
	"bpf_attach_type", "xdp_action", "sk_action", "pid_type",
}

func main() {
	in := flag.String("in", "/sys/kernel/btf/vmlinux", "vmlinux BTF to take the types from")
	out := flag.String("out", "vmlinux.btf.gz", "gzip-compressed BTF to write")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "genbtf:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	spec, err := btf.LoadSpec(in)
	if err != nil {
		return fmt.Errorf("read %s: %w", in, err)
	}
	var rootTypes []btf.Type
	for _, name := range roots {
		types, err := spec.AnyTypesByName(name)
		if err != nil {
			return fmt.Errorf("root %s: %w", name, err)
		}
		// Keep the definition, not a forward declaration of the name.
		for _, t := range types {
			if _, fwd := t.(*btf.Fwd); !fwd {
				rootTypes = append(rootTypes, t)
			}
		}
	}
	cutPointers(rootTypes)
	var b btf.Builder
	for _, t := range rootTypes {
		if _, err := b.Add(t); err != nil {
			return fmt.Errorf("add %s: %w", t.TypeName(), err)
		}
	}
	raw, err := b.Marshal(nil, &btf.MarshalOptions{Order: binary.LittleEndian})
	if err != nil {
		return err
	}
	// The result must read back as a spec that has every root.
	check, err := btf.LoadSpecFromReader(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	for _, name := range roots {
		if _, err := check.AnyTypesByName(name); err != nil {
			return fmt.Errorf("read back: %s: %w", name, err)
		}
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	// No name or time in the header: the output depends only on the input.
	if _, err := zw.Write(raw); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Printf("genbtf: %s: %d types, %d bytes of BTF, %d compressed\n", out, typeCount(check), len(raw), buf.Len())
	return writeRelease(out)
}

// cutPointers walks the closure of roots under embedding and points every
// pointer to a struct or union outside it at a forward declaration. It
// changes the types in place: they belong to a spec only this run uses.
func cutPointers(roots []btf.Type) {
	kept := map[btf.Type]bool{}
	var embed func(t btf.Type)
	var pointers []*btf.Pointer
	embed = func(t btf.Type) {
		if t == nil || kept[t] {
			return
		}
		kept[t] = true
		switch t := t.(type) {
		case *btf.Pointer:
			pointers = append(pointers, t)
		case *btf.Array:
			embed(t.Index)
			embed(t.Type)
		case *btf.Struct:
			for _, m := range t.Members {
				embed(m.Type)
			}
		case *btf.Union:
			for _, m := range t.Members {
				embed(m.Type)
			}
		case *btf.Typedef:
			embed(t.Type)
		case *btf.Volatile:
			embed(t.Type)
		case *btf.Const:
			embed(t.Type)
		case *btf.Restrict:
			embed(t.Type)
		case *btf.TypeTag:
			embed(t.Type)
		case *btf.FuncProto:
			embed(t.Return)
			for _, p := range t.Params {
				embed(p.Type)
			}
		}
	}
	for _, t := range roots {
		embed(t)
	}
	// A pointer's target is reached through qualifiers and typedefs; the
	// first struct or union on the way decides.
	fwds := map[btf.Type]*btf.Fwd{}
	for i := 0; i < len(pointers); i++ {
		p := pointers[i]
		target := p.Target
		for {
			switch t := target.(type) {
			case *btf.Typedef, *btf.Volatile, *btf.Const, *btf.Restrict, *btf.TypeTag:
				target = btf.UnderlyingType(t)
				continue
			}
			break
		}
		var kind btf.FwdKind
		switch target.(type) {
		case *btf.Struct:
			kind = btf.FwdStruct
		case *btf.Union:
			kind = btf.FwdUnion
		default:
			// Pointers to scalars, pointers and function prototypes: keep
			// what they point to, with the same rule for pointers within.
			embed(p.Target)
			continue
		}
		if kept[target] || target.TypeName() == "" {
			embed(p.Target)
			continue
		}
		f := fwds[target]
		if f == nil {
			f = &btf.Fwd{Name: target.TypeName(), Kind: kind}
			fwds[target] = f
		}
		p.Target = f
	}
}

func typeCount(s *btf.Spec) int {
	n := 0
	for _, err := range s.All() {
		if err == nil {
			n++
		}
	}
	return n
}

// writeRelease records which kernel the types come from next to them.
func writeRelease(out string) error {
	release, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	r := strings.TrimSpace(string(release))
	if r == "" {
		r = "unknown"
	}
	src := fmt.Sprintf("// Code generated by genbtf; DO NOT EDIT.\n\npackage kernelbtf\n\n// ShippedRelease is the kernel release the shipped types were taken from.\nconst ShippedRelease = %q\n", r)
	return os.WriteFile(strings.TrimSuffix(out, ".btf.gz")+"_release.go", []byte(src), 0o644)
}
