package simtest

import (
	"testing"

	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
)

// TestStrictInTests: the simulated devices tests open run in strict mode
// unless GAUDI_SIM_STRICT says otherwise.
func TestStrictInTests(t *testing.T) {
	t.Setenv("GAUDI_SIM_STRICT", "")
	d := Device(t, sim.Gaudi2)
	if !simdevice.Sim(d).Strict() {
		t.Error("strict mode is off in a test binary")
	}
	t.Setenv("GAUDI_SIM_STRICT", "0")
	if System(t, sim.Gaudi).Device(0).Strict() {
		t.Error("strict mode is on with GAUDI_SIM_STRICT=0")
	}
}
