package main

import (
	"os"
	"testing"

	"github.com/gaudi-go/gaudi/internal/leakcheck"
)

// TestMain runs the example with the arguments in argsEnv when it is set
// (an end of TestKernelTwoProcesses), else the tests, failing the run
// when they leave descriptors, mappings, goroutines or unclosed objects
// behind (internal/leakcheck).
func TestMain(m *testing.M) {
	if os.Getenv(argsEnv) != "" {
		os.Exit(runArgs())
	}
	os.Exit(leakcheck.Run(m))
}
