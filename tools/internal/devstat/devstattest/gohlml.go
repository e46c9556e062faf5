package devstattest

import (
	"testing"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/gohlml"
	"github.com/gaudi-go/gaudi/internal/hlsimtest"
)

// ServeGohlml serves spec's devices ("hlsim serve"), points GAUDI_ROOT at
// them, as a monitor on such a node sees them, and initializes gohlml on
// them until the test ends. It returns the server and how many devices
// gohlml counts (at least one).
func ServeGohlml(t *testing.T, spec string) (*hlsimtest.Server, uint) {
	t.Helper()
	srv := hlsimtest.Serve(t, spec)
	t.Setenv(device.RootEnv, srv.Dir)
	if err := gohlml.Initialize(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := gohlml.Shutdown(); err != nil {
			t.Errorf("gohlml Shutdown: %v", err)
		}
	})
	n, err := gohlml.DeviceCount()
	if err != nil || n == 0 {
		t.Fatalf("gohlml DeviceCount = %d, %v; want devices", n, err)
	}
	return srv, n
}

// GohlmlEnergy reads the energy counter of gohlml's devices 0 to n-1:
// a tool's reading taken between two of these lies between them.
func GohlmlEnergy(t testing.TB, n uint) []uint64 {
	t.Helper()
	var e []uint64
	for i := range n {
		d, err := gohlml.DeviceHandleByIndex(i)
		if err != nil {
			t.Fatal(err)
		}
		v, err := d.EnergyConsumptionCounter()
		if err != nil {
			t.Fatalf("gohlml energy of device %d: %v", i, err)
		}
		e = append(e, v)
	}
	return e
}
