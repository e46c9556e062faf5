//go:build amd64 || arm64

package sim

// readTSC returns the CPU's time stamp counter: RDTSC on amd64, the
// virtual counter CNTVCT_EL0 on arm64.
func readTSC() uint64
