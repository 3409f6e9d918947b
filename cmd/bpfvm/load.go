package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
)

// errNotELF is input that is not an ELF object at all.
var errNotELF = errors.New("not an ELF object")

// openObject reads the spec of an ELF object. A file that cannot be
// opened, is not an object, or that the loader refuses is refused input
// (exit status 1, as every refusal). Errors name the file.
func openObject(path string) (*ebpf.CollectionSpec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	} else if fi.IsDir() {
		return nil, fmt.Errorf("%s: is a directory, %w", path, errNotELF)
	}
	var magic [4]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil || string(magic[:]) != "\x7fELF" {
		return nil, fmt.Errorf("%s: %w", path, errNotELF)
	}
	spec, err := loadSpec(path)
	if spec != nil {
		// A command is a process of its own, where a map pinned by name
		// (iproute2's PIN_GLOBAL_NS) would be pinned only for the
		// command: it is created unpinned.
		for _, m := range spec.Maps {
			m.Pinning = ebpf.PinNone
		}
	}
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("%s: %w: truncated", path, errNotELF)
	case err != nil && strings.Contains(err.Error(), path):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return spec, nil
}

// loaded is one program of an object, loaded on its own.
type loaded struct {
	name string
	coll *bpfvm.Collection // nil when err is set
	prog *bpfvm.Program
	err  error // names the file and the program
}

func (l *loaded) close() {
	if l.coll != nil {
		l.coll.Close()
	}
}

// loadOne loads one program of an object with all its maps, so that other
// programs of the file that fail do not take it down (as the kernel's
// veristat loads each program with libbpf's autoload).
func loadOne(path string, spec *ebpf.CollectionSpec, name string, opts bpfvm.CollectionOptions) loaded {
	opts.ProgramNames = []string{name}
	coll, err := bpfvm.NewCollectionWithOptions(spec, opts)
	if err != nil {
		return loaded{name: name, err: loadErr(path, spec, name, err)}
	}
	return loaded{name: name, coll: coll, prog: coll.Programs[name]}
}

// loadErr names the file and the program in a load error, and the kernel's
// names of program types instead of numbers (map types name themselves:
// maps.Type.String).
func loadErr(path string, spec *ebpf.CollectionSpec, name string, err error) error {
	msg := err.Error()
	if !strings.HasPrefix(msg, "program "+name+":") {
		msg = "program " + name + ": " + msg
	}
	if ps := spec.Programs[name]; ps != nil {
		msg = strings.ReplaceAll(msg, "program type "+ps.Type.String()+":", "program type "+progTypeName(ps.Type)+":")
	}
	return &namedError{msg: path + ": " + msg, err: err}
}

// namedError rewords an error for the command line and keeps its chain for
// errors.Is and errors.As.
type namedError struct {
	msg string
	err error
}

func (e *namedError) Error() string { return e.msg }
func (e *namedError) Unwrap() error { return e.err }

// specNames returns the names of an object's programs, sorted.
func specNames(spec *ebpf.CollectionSpec) []string {
	var names []string
	for name := range spec.Programs {
		names = append(names, name)
	}
	return sorted(names)
}

// progTypeNames are the kernel's names of program types (enum
// bpf_prog_type without its prefix), as bpftool prints them.
var progTypeNames = []string{
	"unspec", "socket_filter", "kprobe", "sched_cls", "sched_act", "tracepoint",
	"xdp", "perf_event", "cgroup_skb", "cgroup_sock", "lwt_in", "lwt_out",
	"lwt_xmit", "sock_ops", "sk_skb", "cgroup_device", "sk_msg",
	"raw_tracepoint", "cgroup_sock_addr", "lwt_seg6local", "lirc_mode2",
	"sk_reuseport", "flow_dissector", "cgroup_sysctl",
	"raw_tracepoint_writable", "cgroup_sockopt", "tracing", "struct_ops", "ext",
	"lsm", "sk_lookup", "syscall", "netfilter",
}

// attachTypeNames are the kernel's names of attach types (enum
// bpf_attach_type without its prefix), as libbpf's
// libbpf_bpf_attach_type_str gives them to veristat and bpftool.
var attachTypeNames = []string{
	"cgroup_inet_ingress", "cgroup_inet_egress", "cgroup_inet_sock_create", "cgroup_sock_ops",
	"sk_skb_stream_parser", "sk_skb_stream_verdict", "cgroup_device", "sk_msg_verdict",
	"cgroup_inet4_bind", "cgroup_inet6_bind", "cgroup_inet4_connect", "cgroup_inet6_connect",
	"cgroup_inet4_post_bind", "cgroup_inet6_post_bind", "cgroup_udp4_sendmsg", "cgroup_udp6_sendmsg",
	"lirc_mode2", "flow_dissector", "cgroup_sysctl", "cgroup_udp4_recvmsg", "cgroup_udp6_recvmsg",
	"cgroup_getsockopt", "cgroup_setsockopt", "trace_raw_tp", "trace_fentry", "trace_fexit",
	"modify_return", "lsm_mac", "trace_iter", "cgroup_inet4_getpeername", "cgroup_inet6_getpeername",
	"cgroup_inet4_getsockname", "cgroup_inet6_getsockname", "xdp_devmap", "cgroup_inet_sock_release",
	"xdp_cpumap", "sk_lookup", "xdp", "sk_skb_verdict", "sk_reuseport_select",
	"sk_reuseport_select_or_migrate", "perf_event", "trace_kprobe_multi", "lsm_cgroup", "struct_ops",
	"netfilter", "tcx_ingress", "tcx_egress", "trace_uprobe_multi", "cgroup_unix_connect",
	"cgroup_unix_sendmsg", "cgroup_unix_recvmsg", "cgroup_unix_getpeername", "cgroup_unix_getsockname",
	"netkit_primary", "netkit_peer", "trace_kprobe_session", "trace_uprobe_session",
}

// attachTypeName names an attach type as the kernel does; 0, which is
// also "none", is cgroup_inet_ingress, as veristat prints it.
func attachTypeName(t ebpf.AttachType) string {
	if int(t) < len(attachTypeNames) {
		return attachTypeNames[t]
	}
	return "N/A"
}

// progTypeName names a program type as the kernel does.
func progTypeName(t ebpf.ProgramType) string {
	if int(t) < len(progTypeNames) {
		return progTypeNames[t]
	}
	return t.String()
}

// notVerified is the verdict of a program whose type has no verifier rules
// (unspecified): it loads and runs in checked mode, but nothing was proven.
const notVerified = "not verified: program type has no verifier rules"

// unverified reports whether a loaded program skipped the verifier because
// its type has no rules for it.
func unverified(p *bpfvm.Program) bool {
	return !p.Verified()
}
