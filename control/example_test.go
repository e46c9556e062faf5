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
	tpc, err := d.Engine("DCORE0_TPC_0")
	if err != nil {
		fmt.Println(err)
		return
	}
	mme := device.Gaudi2Engine(hl.GAUDI2_DCORE0_ENGINE_ID_MME) // the same, from the driver's enum
	if err := control.StallEngines(d, tpc, mme); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("stalled:", simdevice.Sim(d).EngineStalled(tpc.ID()), simdevice.Sim(d).EngineStalled(mme.ID()))
	if err := control.ResumeEngines(d, tpc, mme); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("stalled after resume:", simdevice.Sim(d).EngineStalled(tpc.ID()))

	g, done1 := exampleDevice(sim.Gaudi)
	defer done1()
	gtpc, err := g.Engine("TPC_0")
	if err != nil {
		fmt.Println(err)
		return
	}
	err = control.StallEngines(g, gtpc)
	fmt.Println("gaudi:", errors.Is(err, control.ErrNotSupported))
	// Output:
	// stalled: true true
	// stalled after resume: false
	// gaudi: true
}

// Halt the ARC cores of Gaudi2's first TPC queue manager and of its first
// scheduler, then let one run again. Engines and engine cores print as the
// driver names them.
func ExampleHaltEngineCores() {
	d, done := exampleDevice(sim.Gaudi2)
	defer done()
	var cores []device.EngineCore
	for _, name := range []string{"SCHED_ARC0", "TPC_QMAN_ARC0"} {
		c, err := d.EngineCore(name)
		if err != nil {
			fmt.Println(err)
			return
		}
		cores = append(cores, c)
	}
	if err := control.HaltEngineCores(d, cores...); err != nil {
		fmt.Println(err)
		return
	}
	if err := control.RunEngineCores(d, cores[0]); err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range cores {
		fmt.Printf("%v (core %d) halted: %v\n", c, c.ID(), simdevice.Sim(d).EngineCoreHalted(c.ID()))
	}
	// Output:
	// SCHED_ARC0 (core 0) halted: false
	// TPC_QMAN_ARC0 (core 6) halted: true
}

// An engine belongs to one ASIC, and each command takes one kind: engines
// for Stall and Resume, engine cores for CoreHalt and CoreRun. Both
// mistakes are refused before the request goes out.
func ExampleEngines() {
	d, done := exampleDevice(sim.Gaudi2)
	defer done()
	err := control.Engines(d, control.Stall, device.GaudiEngine(hl.GAUDI_ENGINE_ID_TPC_0))
	fmt.Println(err)
	err = control.Engines(d, control.Stall, device.Gaudi2EngineCore(0))
	fmt.Println(err)
	// Output:
	// engines STALL: engine TPC_0 is a GAUDI engine, not one of a GAUDI2 device
	// engines STALL: SCHED_ARC0 is an engine core, not an engine: invalid argument
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
	if err := b.Write32(0x100, 0xcafe); err != nil {
		fmt.Println(err)
		return
	}
	v, _ := b.Read32(0x100)
	fmt.Printf("%d KiB of registers, %#x at 0x100\n", b.Size()/1024, v)
	_, err = b.Read32(0x102)
	fmt.Println(err)
	// Output:
	// 64 KiB of registers, 0xcafe at 0x100
	// read register 0x102 of hw block 0x1000007ffce90000 (65536 bytes): register offset outside the block or not 32-bit aligned
}
