// Command embed shows bpfvm as an extension language: the host application
// defines its own program type (the context struct and which fields the
// program may read and write) and a host helper, loads a clang-built policy
// program and runs it on requests.
//
//	go run ./examples/embed
package main

//go:generate clang-19 -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu -c bpf/policy.c -o policy.o

import (
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/loader"
	"github.com/bpfvm/bpfvm/progtype"
	"github.com/bpfvm/bpfvm/verifier"
	"github.com/bpfvm/bpfvm/vm"
)

// requestType describes struct request of bpf/policy.c.
var requestType = &progtype.Type{
	Name:        "request",
	ContextSize: 24,
	Fields: []progtype.Field{
		{Name: "user_class", Offset: 0, Size: 4, Read: true},
		{Name: "verdict", Offset: 4, Size: 4, Read: true, Write: true},
		{Name: "data", Offset: 8, Size: 8, Read: true, Kind: progtype.PacketData},
		{Name: "data_end", Offset: 16, Size: 8, Read: true, Kind: progtype.PacketEnd},
	},
	// The kernel's base helpers (maps, time, ring buffers...); the host's
	// own helper 10000 has no kernel name and needs no entry. Without a
	// set, every helper would be allowed.
	Helpers: progtype.BaseHelpers(),
}

// request mirrors the context's scalar fields for RunOptions.Context.
type request struct {
	UserClass uint32
	Verdict   uint32
	_         [16]byte // data, data_end: filled by bpfvm
}

//go:embed policy.o
var policyObject []byte

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(w io.Writer) error {
	spec, err := loader.LoadCollectionSpecFromReader(bytes.NewReader(policyObject), "policy.o")
	if err != nil {
		return err
	}
	var audits int
	audit := func(_ *vm.Env, class, verdict, _, _, _ uint64) (uint64, error) {
		audits++
		return 0, nil
	}
	coll, err := bpfvm.NewCollectionWithOptions(spec, bpfvm.CollectionOptions{
		Programs: bpfvm.ProgramOptions{
			Helpers: map[int32]vm.Helper{10000: audit},
			// The verifier checks calls against the helper's prototype.
			HelperProtos: map[int32]*verifier.Proto{10000: {
				Name: "host_audit",
				Args: [5]verifier.ArgType{verifier.ArgScalar, verifier.ArgScalar},
			}},
		},
		Types:  map[string]*progtype.Type{"host/policy": requestType},
		NumCPU: 1,
	})
	if err != nil {
		return err
	}
	defer coll.Close()

	for _, r := range []struct {
		class uint32
		path  string
	}{{2, "/index.html"}, {2, "/admin/users"}, {0, "/admin/users"}, {1, "/adm"}} {
		var out request
		verdict, err := coll.Programs["policy"].Run(&bpfvm.RunOptions{
			Data:       []byte(r.path),
			Context:    request{UserClass: r.class},
			ContextOut: &out,
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "class %d %-14s verdict %d (ctx verdict %d)\n", r.class, r.path, verdict, out.Verdict)
	}
	var n uint64
	for class := uint32(0); class < 4; class++ {
		if err := coll.Maps["decisions"].Lookup(class, &n); err != nil {
			return err
		}
		if n > 0 {
			fmt.Fprintf(w, "class %d: %d decisions\n", class, n)
		}
	}
	fmt.Fprintf(w, "host_audit called %d times\n", audits)
	return nil
}
