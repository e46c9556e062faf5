package main

import (
	"os"
	"testing"
)

// TestMain runs the example with the arguments in argsEnv when it is set
// (an end of TestKernelTwoProcesses), else the tests.
func TestMain(m *testing.M) {
	if os.Getenv(argsEnv) != "" {
		os.Exit(runArgs())
	}
	os.Exit(m.Run())
}
