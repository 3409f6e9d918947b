//go:build !(amd64 && linux)

package amd64

import (
	"github.com/bpfvm/bpfvm/interp"
	"github.com/bpfvm/bpfvm/isa"
	"github.com/bpfvm/bpfvm/vm"
)

// Program is a compiled program; there is none on this platform.
type Program struct{}

// Compile fails with ErrNotSupported on this platform.
func Compile(prog []isa.Instruction, helpers interp.HelperFunc, opts Options) (*Program, error) {
	return nil, ErrNotSupported
}

// Run fails with ErrNotSupported.
func (p *Program) Run(env *vm.Env, r1, r2, budget uint64) (uint64, error) {
	return 0, ErrNotSupported
}

// Call fails with ErrNotSupported.
func (p *Program) Call(env *vm.Env, fn uint64, r1, r2, r3, r4, r5 uint64) (uint64, error) {
	return 0, ErrNotSupported
}

// Close does nothing.
func (p *Program) Close() error { return nil }

// Info reports no machine code.
func (p *Program) Info(checked bool) Info { return Info{} }

// Memory is an executable memory pool; there is none on this platform.
type Memory struct{}

// NewMemory returns an empty pool.
func NewMemory(cfg MemoryConfig) *Memory { return &Memory{} }

// DefaultMemory returns an empty pool.
func DefaultMemory() *Memory { return &Memory{} }

// Usage reports no pages.
func (m *Memory) Usage() (near, far int) { return 0, 0 }
