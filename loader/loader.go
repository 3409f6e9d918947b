// Package loader reads eBPF ELF objects into cilium/ebpf CollectionSpecs.
//
// It wraps ebpf.LoadCollectionSpecFromReader and adds what cilium/ebpf
// v0.22.0 lacks for objects that declare their maps the pre-BTF way, in a
// section called "maps" holding struct bpf_map_def (20 bytes, libbpf and
// kernel samples) or iproute2's struct bpf_elf_map (36 bytes, tc objects):
//
//   - map symbols without a size (old toolchains, assembly) get the entry
//     size libbpf and tc use, section size / number of map symbols;
//   - entries are validated as a whole, so a bad one yields an error naming
//     it instead of a half-parsed MapSpec;
//   - the bpf_elf_map fields past the first five, which cilium/ebpf leaves in
//     MapSpec.Extra (and then refuses to create the map when they are
//     non-zero), become Pinning, InnerMap and Contents the way tc applies
//     them.
//
// Errors are a single line starting with "load <file>: ", and panics inside
// cilium/ebpf or debug/elf on malformed input are returned as errors.
package loader

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/cilium/ebpf"
)

// LoadCollectionSpec parses the eBPF ELF object at path, including legacy
// "maps" sections.
func LoadCollectionSpec(path string) (*ebpf.CollectionSpec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &loadError{name: path, err: err}
	}
	defer f.Close()

	return LoadCollectionSpecFromReader(f, path)
}

// LoadCollectionSpecFromReader parses an eBPF ELF object read from r,
// including legacy "maps" sections. name identifies the object in errors,
// typically its file name.
func LoadCollectionSpecFromReader(r io.ReaderAt, name string) (spec *ebpf.CollectionSpec, err error) {
	// debug/elf and cilium/ebpf are not panic-free on hostile input; a
	// loader for untrusted objects must not take the process down.
	defer func() {
		if p := recover(); p != nil {
			spec, err = nil, &loadError{name: name, err: newPanicError(p)}
		}
	}()

	spec, err = load(r)
	if err != nil {
		return nil, &loadError{name: name, err: err}
	}
	return spec, nil
}

// load does the work of LoadCollectionSpecFromReader without the error
// decoration.
func load(r io.ReaderAt) (*ebpf.CollectionSpec, error) {
	legacy, err := scanLegacyMaps(r)
	if err != nil {
		return nil, err
	}

	sizes, err := programSymbolSizes(r)
	if err != nil {
		return nil, err
	}

	spec, err := ebpf.LoadCollectionSpecFromReader(legacy.reader(r, sizes))
	if err != nil {
		return nil, err
	}

	if err := legacy.apply(spec); err != nil {
		return nil, err
	}
	if err := appendExceptionCallbacks(r, spec); err != nil {
		return nil, err
	}
	return spec, nil
}

// loadError names the object a load failed for and keeps the message on one
// line, so it reads well in logs and test output.
type loadError struct {
	name string
	err  error
}

func (e *loadError) Error() string {
	msg := strings.Join(strings.Fields(strings.ReplaceAll(e.err.Error(), "\n", "; ")), " ")
	return "load " + e.name + ": " + msg
}

func (e *loadError) Unwrap() error { return e.err }

// panicError is a recovered panic and the function it was raised in, which
// tells a bug here apart from malformed input tripping up a dependency.
type panicError struct {
	function string
	value    any
}

// newPanicError must be called from the deferred function that recovered p.
func newPanicError(p any) *panicError {
	pcs := make([]uintptr, 64)
	// Skip runtime.Callers, newPanicError and the deferred function; the
	// panicking function is the first frame outside the runtime after that.
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "runtime.") {
			return &panicError{f.Function, p}
		}
		if !more {
			return &panicError{"unknown function", p}
		}
	}
}

func (e *panicError) Error() string {
	return fmt.Sprintf("panic in %s: %v", e.function, e.value)
}
