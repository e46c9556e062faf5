package control_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/gaudi-go/gaudi/control"
	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// exampleDevice opens a simulated device of asic; the caller runs cleanup.
func exampleDevice(asic sim.ASIC) (*device.Device, func()) {
	dir, err := os.MkdirTemp("", "control-example")
	if err != nil {
		panic(err)
	}
	cfg := sim.Default(asic, 1)
	cfg.LockDir = dir
	s, err := sim.New(cfg)
	if err != nil {
		panic(err)
	}
	d, err := simdevice.OpenSim(s.Device(0))
	if err != nil {
		panic(err)
	}
	return d, func() { d.Close(); s.Close(); os.RemoveAll(dir) }
}

// Stall two engines of a Gaudi2 around some work, and learn that a
// first-generation Gaudi has no engine modes.
func ExampleStallEngines() {
	d, done := exampleDevice(sim.Gaudi2)
	defer done()
	tpc := uint32(hl.GAUDI2_DCORE0_ENGINE_ID_TPC_0)
	mme := uint32(hl.GAUDI2_DCORE0_ENGINE_ID_MME)
	if err := control.StallEngines(d, tpc, mme); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("stalled:", simdevice.Sim(d).EngineStalled(tpc), simdevice.Sim(d).EngineStalled(mme))
	if err := control.ResumeEngines(d, tpc, mme); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("stalled after resume:", simdevice.Sim(d).EngineStalled(tpc))

	g, done1 := exampleDevice(sim.Gaudi)
	defer done1()
	err := control.StallEngines(g, 0)
	fmt.Println("gaudi:", errors.Is(err, control.ErrNotSupported))
	// Output:
	// stalled: true true
	// stalled after resume: false
	// gaudi: true
}

// Map the DCCM of Gaudi2's first scheduler ARC into the process.
func ExampleMapBlock() {
	d, done := exampleDevice(sim.Gaudi2)
	defer done()
	const cfgBase = 0x1000007FF8000000 // CFG_BASE of Gaudi2
	b, err := control.MapBlock(d, cfgBase+0x4e90000)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	fmt.Printf("%d KiB of registers\n", len(b.Bytes())/1024)
	// Output: 64 KiB of registers
}
