package main

import "testing"

// TestRun runs the example on the simulator (a Gaudi2; the process's
// simulated system is built once, so one ASIC per test binary: the same
// flow on Gaudi is stream's TestSignalWaitDMA).
func TestRun(t *testing.T) {
	t.Setenv("GAUDI_DEVICE", "sim")
	t.Setenv("GAUDI_SIM", "gaudi2:1")
	t.Setenv("GAUDI_SIM_LOCKDIR", t.TempDir())
	if err := run(newCommand(), 1<<20); err != nil {
		t.Fatal(err)
	}
}
