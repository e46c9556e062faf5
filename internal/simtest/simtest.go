// Package simtest opens simulated Gaudis for the tests of packages above
// device, memory and dma: a fresh simulated server per test, its lock files
// in the test's temporary directory, and everything closed by t.Cleanup.
//
// The simulator runs in strict mode in tests (sim.StrictMode): it records
// what real hardware would punish, such as an address into a goroutine
// stack in an ioctl argument, memory unmapped under a CS in flight or a
// command buffer rewritten before the engine fetched it. A System from
// this package fails its test at cleanup when a violation was recorded
// that the test neither expected (sim.Device.ExpectViolations) nor took
// (sim.Device.TakeViolations).
package simtest

import (
	"testing"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
)

// New returns a simulated server built from cfg, with its lock files in a
// fresh temporary directory unless cfg names one. Cleanup closes it and
// fails the test on strict mode violations (see Check). A benchmark's
// server runs without strict mode unless cfg asks for it (see Strict).
func New(t testing.TB, cfg sim.Config) *sim.System {
	t.Helper()
	if cfg.LockDir == "" {
		cfg.LockDir = t.TempDir()
	}
	if cfg.Strict == sim.StrictAuto {
		cfg.Strict = Strict(t)
	}
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("simulated system: %v", err)
		}
	})
	return s
}

// Strict returns the strict mode for t's simulated servers: StrictAuto (on
// in tests) for a test, StrictOff for a benchmark, which measures what
// programs run: strict mode's checks read /proc and hash command buffers
// on every CS.
func Strict(t testing.TB) sim.StrictMode {
	if _, ok := t.(*testing.B); ok {
		return sim.StrictOff
	}
	return sim.StrictAuto
}

// Check fails the test at cleanup when a device of s recorded strict mode
// violations the test did not expect or take, for a System the test made
// itself. Cleanups run last first: call Check before registering the
// cleanups that close devices, so that it runs after them.
func Check(t testing.TB, s *sim.System) {
	t.Helper()
	t.Cleanup(func() {
		if err := s.CheckStrict(); err != nil {
			t.Errorf("simulated system: %v", err)
		}
	})
}

// System returns a fresh simulated server of one asic device.
func System(t testing.TB, asic sim.ASIC) *sim.System {
	t.Helper()
	return New(t, sim.Default(asic, 1))
}

// Device opens the compute node of a fresh simulated asic.
func Device(t testing.TB, asic sim.ASIC) *device.Device {
	t.Helper()
	d, err := simdevice.OpenSim(System(t, asic).Device(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// Memory returns a memory manager of d.
func Memory(t testing.TB, d *device.Device) *memory.Manager {
	t.Helper()
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// DMA returns a DMA engine with default options on m.
func DMA(t testing.TB, m *memory.Manager) *dma.Engine {
	t.Helper()
	e, err := dma.New(m, dma.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}
