package conformance

import (
	"fmt"
	"runtime"

	"github.com/cilium/ebpf"

	"github.com/bpfvm/bpfvm"
	"github.com/bpfvm/bpfvm/isa"
)

// NewEngine runs conformance programs on a bpfvm engine as programs of
// unspecified type: R1 points at the memory and R2 holds its length. Asked
// for the JIT where it exists, it fails rather than quietly running a
// program on the interpreter.
func NewEngine(engine bpfvm.Engine) Engine {
	return NewEngineWithJIT(engine, bpfvm.JITOptions{})
}

// NewEngineWithJIT is NewEngine with JIT options (e.g. constant blinding).
func NewEngineWithJIT(engine bpfvm.Engine, jit bpfvm.JITOptions) Engine {
	return func(prog []isa.Instruction, mem []byte) (uint64, error) {
		p, err := bpfvm.NewRawProgram("conformance", ebpf.UnspecifiedProgram, prog, bpfvm.ProgramOptions{
			Engine:  engine,
			Helpers: Helpers(),
			Budget:  1 << 24,
			JIT:     jit,
		})
		if err != nil {
			return 0, err
		}
		defer p.Close()
		if engine == bpfvm.EngineJIT && runtime.GOARCH == "amd64" && runtime.GOOS == "linux" && p.Engine() != bpfvm.EngineJIT {
			return 0, fmt.Errorf("the JIT did not compile the program (engine %s)", p.Engine())
		}
		res, err := p.Execute(&bpfvm.RunOptions{Data: mem})
		return res.R0, err
	}
}
