package scenario

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/hlsimtest"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
)

var asics = []struct {
	sim  sim.ASIC
	dev  device.ASIC
	spec string
}{
	{sim.Gaudi2, device.Gaudi2, "gaudi2:1"},
	{sim.Gaudi, device.Gaudi, "gaudi:1"},
	{sim.Gaudi3, device.Gaudi3, "gaudi3:1"},
}

// TestInProcess runs the suite on the simulator in the test process.
func TestInProcess(t *testing.T) {
	for _, a := range asics {
		t.Run(a.sim.String(), func(t *testing.T) {
			cfg := sim.Default(a.sim, 1)
			cfg.LockDir = t.TempDir()
			sys, err := sim.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sys.Close() })
			run(t, backend{
				name: "in-process",
				asic: a.dev,
				open: func(t testing.TB, i int, control bool) (*device.Device, error) {
					if control {
						return simdevice.OpenSimControl(sys.Device(i))
					}
					return simdevice.OpenSim(sys.Device(i))
				},
				reset: func(t testing.TB, i int) { sys.Device(i).Reset() },
			})
		})
	}
}

// TestServed runs the suite on nodes tools/hlsim serves: the library opens
// them with ioctl.OpenFile and every call is a system call. Needs root and
// /dev/fuse.
func TestServed(t *testing.T) {
	for _, a := range asics {
		t.Run(a.sim.String(), func(t *testing.T) {
			s := hlsimtest.Serve(t, a.spec)
			run(t, backend{
				name: "served",
				asic: a.dev,
				open: func(t testing.TB, i int, control bool) (*device.Device, error) {
					if control {
						return device.OpenControl(s.Node(i, true))
					}
					return device.Open(s.Node(i, false))
				},
				reset: func(t testing.TB, i int) {
					// The driver's hard_reset attribute, which the
					// server serves.
					if err := os.WriteFile(filepath.Join(s.Dir, "sys/class/accel/accel0/device/hard_reset"), []byte("1"), 0); err != nil {
						t.Fatal(err)
					}
				},
			})
			if t.Failed() {
				t.Logf("hlsim:\n%s", s.Log())
			}
		})
	}
}
