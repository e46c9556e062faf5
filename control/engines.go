package control

import (
	"fmt"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/devio"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
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

// HaltEngineCores halts the engine cores given (Gaudi2's ARC CPUs: see
// device.EngineCore and Device.EngineCores). The driver skips cores the
// device has not enabled. It replaces hlthunk_engine_cores_set_mode with
// HL_ENGINE_CORE_HALT. First-generation Gaudi has no engine cores: a core
// given for one is refused with a *device.WrongASICError.
func HaltEngineCores(d *device.Device, cores ...device.EngineCore) error {
	return setCores(d, CoreHalt, cores)
}

// RunEngineCores lets the engine cores given run again. It replaces
// hlthunk_engine_cores_set_mode with HL_ENGINE_CORE_RUN.
func RunEngineCores(d *device.Device, cores ...device.EngineCore) error {
	return setCores(d, CoreRun, cores)
}

func setCores(d *device.Device, cmd EngineCommand, cores []device.EngineCore) error {
	ids, err := engineIDs(d, cmd, cores)
	if err != nil {
		return fmt.Errorf("engine cores %s: %w", cmd, err)
	}
	if err := devio.Of(d).EngineCores(hl.EngineCommand(cmd), ids); err != nil {
		return fmt.Errorf("engine cores %s: %w", cmd, err)
	}
	return nil
}

// StallEngines stalls the engines given (Gaudi2's TPC 0-5, MME and EDMA
// engines of each dcore: see device.Engine and Device.Engines). The driver
// stalls them in order and stops at the first engine it does not accept,
// with EINVAL. It replaces hlthunk_engines_command with HL_ENGINE_STALL.
func StallEngines(d *device.Device, engines ...device.Engine) error {
	return Engines(d, Stall, engines...)
}

// ResumeEngines lets stalled engines run again. It replaces
// hlthunk_engines_command with HL_ENGINE_RESUME.
func ResumeEngines(d *device.Device, engines ...device.Engine) error {
	return Engines(d, Resume, engines...)
}

// Engines sends cmd to the engines or engine cores ids through
// ENGINES_COMMAND: Stall and Resume take engines (device.Engine), CoreHalt
// and CoreRun engine cores (device.EngineCore), and the other kind is
// refused (EINVAL) before the request goes out, as is an engine or core of
// another ASIC (*device.WrongASICError). It replaces
// hlthunk_engines_command. On first-generation Gaudi the driver's error
// matches ErrNotSupported.
func Engines[ID device.Engine | device.EngineCore](d *device.Device, cmd EngineCommand, ids ...ID) error {
	raw, err := engineIDs(d, cmd, ids)
	if err == nil {
		err = devio.Of(d).Engines(hl.EngineCommand(cmd), raw)
	}
	if err != nil {
		return fmt.Errorf("engines %s: %w", cmd, err)
	}
	return nil
}

// engineIDs returns the driver's numbers for ids on d, checking that they
// are of d's ASIC and of the kind cmd takes.
func engineIDs[ID device.Engine | device.EngineCore](d *device.Device, cmd EngineCommand, ids []ID) ([]uint32, error) {
	raw := make([]uint32, len(ids))
	for i, id := range ids {
		var err error
		switch id := any(id).(type) {
		case device.Engine:
			if cmd == CoreHalt || cmd == CoreRun {
				return nil, fmt.Errorf("%v is an engine, not an engine core: %w", id, unix.EINVAL)
			}
			raw[i], err = d.EngineID(id)
		case device.EngineCore:
			if cmd == Stall || cmd == Resume {
				return nil, fmt.Errorf("%v is an engine core, not an engine: %w", id, unix.EINVAL)
			}
			raw[i], err = d.EngineCoreID(id)
		}
		if err != nil {
			return nil, err
		}
	}
	return raw, nil
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
