// Package simtest opens simulated Gaudis for the tests of packages above
// device, memory and dma: a fresh simulated server per test, its lock files
// in the test's temporary directory, and everything closed by t.Cleanup.
package simtest

import (
	"testing"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
)

// System returns a fresh simulated server of one asic device.
func System(t testing.TB, asic sim.ASIC) *sim.System {
	t.Helper()
	cfg := sim.Default(asic, 1)
	cfg.LockDir = t.TempDir()
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
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
