package perf_test

// config is the test object's configuration map value.
type config struct {
	Flags uint64
	Size  uint32
	Pad   uint32
}

// currentCPU is BPF_F_CURRENT_CPU.
const currentCPU = 0xffffffff
