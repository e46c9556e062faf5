package control

import (
	"fmt"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/devio"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// EngineCommand is what ENGINES_COMMAND asks of a set of engines.
type EngineCommand uint32

// The engine commands (enum hl_engine_command).
const (
	// CoreHalt halts engine cores (the Gaudi2 ARC CPUs, by CPU id).
	CoreHalt = EngineCommand(hl.HL_ENGINE_CORE_HALT)
	// CoreRun lets halted engine cores run again.
	CoreRun = EngineCommand(hl.HL_ENGINE_CORE_RUN)
	// Stall stalls engines (TPC, MME and EDMA, by engine id).
	Stall = EngineCommand(hl.HL_ENGINE_STALL)
	// Resume lets stalled engines run again.
	Resume = EngineCommand(hl.HL_ENGINE_RESUME)
)

// String returns the command's name, such as "STALL".
func (c EngineCommand) String() string {
	switch c {
	case CoreHalt:
		return "CORE_HALT"
	case CoreRun:
		return "CORE_RUN"
	case Stall:
		return "STALL"
	case Resume:
		return "RESUME"
	}
	return fmt.Sprintf("EngineCommand(%d)", uint32(c))
}

// HaltEngineCores halts the engine cores with the given ids (Gaudi2 ARC
// CPU ids, 0 to 68). Ids of cores the device has not enabled are skipped
// by the driver. It replaces hlthunk_engine_cores_set_mode with
// HL_ENGINE_CORE_HALT. On first-generation Gaudi the error matches
// ErrNotSupported.
func HaltEngineCores(d *device.Device, cores ...uint32) error {
	return setCores(d, CoreHalt, cores)
}

// RunEngineCores lets the engine cores with the given ids run again. It
// replaces hlthunk_engine_cores_set_mode with HL_ENGINE_CORE_RUN.
func RunEngineCores(d *device.Device, cores ...uint32) error {
	return setCores(d, CoreRun, cores)
}

func setCores(d *device.Device, cmd EngineCommand, cores []uint32) error {
	if err := devio.Of(d).EngineCores(hl.EngineCommand(cmd), cores); err != nil {
		return fmt.Errorf("engine cores %s: %w", cmd, err)
	}
	return nil
}

// StallEngines stalls the engines with the given ids (hl.GAUDI2_*_ENGINE_ID_*
// of the TPC 0-5, MME and EDMA engines). The driver stalls them in order
// and stops at the first id it does not accept, with EINVAL. It replaces
// hlthunk_engines_command with HL_ENGINE_STALL.
func StallEngines(d *device.Device, engines ...uint32) error {
	return Engines(d, Stall, engines...)
}

// ResumeEngines lets stalled engines run again. It replaces
// hlthunk_engines_command with HL_ENGINE_RESUME.
func ResumeEngines(d *device.Device, engines ...uint32) error {
	return Engines(d, Resume, engines...)
}

// Engines sends cmd to the engines with the given ids through
// ENGINES_COMMAND; the core commands take engine core ids. It replaces
// hlthunk_engines_command. On first-generation Gaudi the error matches
// ErrNotSupported.
func Engines(d *device.Device, cmd EngineCommand, engines ...uint32) error {
	if err := devio.Of(d).Engines(hl.EngineCommand(cmd), engines); err != nil {
		return fmt.Errorf("engines %s: %w", cmd, err)
	}
	return nil
}

// FlushPCIWrites makes sure the writes the host posted to the device over
// PCIe (through mapped hardware blocks or device memory) have landed. It
// replaces hlthunk_cs_flush_pci_hbw_writes.
func FlushPCIWrites(d *device.Device) error {
	if err := devio.Of(d).FlushPCIHBWWrites(); err != nil {
		return fmt.Errorf("flush pci writes: %w", err)
	}
	return nil
}
