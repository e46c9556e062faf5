package device

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/gaudi-go/gaudi/uapi/gaudi3"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// Engine is one engine of an ASIC, as the driver numbers them in its uapi
// enums (hl.GAUDI_ENGINE_ID_*, hl.GAUDI2_*_ENGINE_ID_*,
// gaudi3.GAUDI3_*_ENGINE_ID_*): the ids that
// engine commands (control.StallEngines) and Gaudi's collective waits
// take. The zero Engine names no engine; every call that takes one
// refuses it.
//
// Get one by name from an open device (Device.Engine), from the list of
// the device's engines (Device.Engines), or from the driver's enum
// (GaudiEngine, Gaudi2Engine, Gaudi3Engine). Engines are comparable.
type Engine struct {
	asic ASIC // Gaudi, Gaudi2 or Gaudi3; ASICUnknown for the zero Engine
	id   uint32
}

// GaudiEngine returns the first-generation Gaudi engine id
// (hl.GAUDI_ENGINE_ID_*).
func GaudiEngine(id hl.GaudiEngineID) Engine { return Engine{asic: Gaudi, id: uint32(id)} }

// Gaudi2Engine returns the Gaudi2 engine id (hl.GAUDI2_*_ENGINE_ID_*).
func Gaudi2Engine(id hl.Gaudi2EngineID) Engine { return Engine{asic: Gaudi2, id: uint32(id)} }

// Gaudi3Engine returns the Gaudi3 engine id (gaudi3.GAUDI3_*_ENGINE_ID_*,
// the out-of-tree driver's enum gaudi3_engine_id).
func Gaudi3Engine(id gaudi3.EngineID) Engine { return Engine{asic: Gaudi3, id: uint32(id)} }

// ASIC returns the ASIC whose engine e is: Gaudi, Gaudi2 or Gaudi3 (see
// Queue.ASIC), or ASICUnknown for the zero Engine.
func (e Engine) ASIC() ASIC { return e.asic }

// ID returns the driver's number for the engine, whatever ASIC it belongs
// to; Device.EngineID checks the ASIC.
func (e Engine) ID() uint32 { return e.id }

// String returns the driver's name of the engine without the enum's
// prefix: "TPC_7" for GAUDI_ENGINE_ID_TPC_7, and for Gaudi2, whose enum
// spells ENGINE_ID_ in the middle, without that too: "DCORE0_EDMA_0" for
// GAUDI2_DCORE0_ENGINE_ID_EDMA_0, "PCIE_DEC_0" for
// GAUDI2_PCIE_ENGINE_ID_DEC_0; Gaudi3 likewise: "DIE0_PDMA_0_CH_0" for
// GAUDI3_DIE0_ENGINE_ID_PDMA_0_CH_0.
func (e Engine) String() string {
	var name string
	switch e.asic {
	case Gaudi:
		name = hl.GaudiEngineIDNames[hl.GaudiEngineID(e.id)]
	case Gaudi2:
		name = hl.Gaudi2EngineIDNames[hl.Gaudi2EngineID(e.id)]
	case Gaudi3:
		name = gaudi3.EngineIDNames[gaudi3.EngineID(e.id)]
	case ASICUnknown:
		return "Engine(none)"
	}
	if name == "" {
		return fmt.Sprintf("Engine(%s, %d)", e.asic, e.id)
	}
	return name
}

// Engines returns every engine the driver numbers for the device's ASIC,
// in the driver's order (an empty list for ASICs other than Gaudi and
// Gaudi2), whether the device has enabled it or not.
func (d *Device) Engines() []Engine {
	return slices.Clone(engineTables()[d.asic.family()].list)
}

// Engine returns the device's engine of the given name, as Engine.String
// spells it; case does not matter. An unknown name gives an error matching
// ErrUnknownName.
func (d *Device) Engine(name string) (Engine, error) {
	e, ok := engineTables()[d.asic.family()].byName[strings.ToUpper(name)]
	if !ok {
		return Engine{}, fmt.Errorf("%s has no engine %q: %w", d.asic, name, ErrUnknownName)
	}
	return e, nil
}

// EngineID returns the driver's number for e on the device. An engine of
// another ASIC, or the zero Engine, gives a *WrongASICError.
func (d *Device) EngineID(e Engine) (uint32, error) {
	if e.asic == ASICUnknown || e.asic != d.asic.family() {
		return 0, &WrongASICError{Kind: "engine", Name: e.String(), Have: e.asic, Device: d.asic}
	}
	return e.id, nil
}

var engineTables = sync.OnceValue(func() map[ASIC]idTable[Engine] {
	return map[ASIC]idTable[Engine]{
		Gaudi:  newIDTable(hl.GaudiEngineIDNames, GaudiEngine),
		Gaudi2: newIDTable(hl.Gaudi2EngineIDNames, Gaudi2Engine),
		Gaudi3: newIDTable(gaudi3.EngineIDNames, Gaudi3Engine),
	}
})

// EngineCore is one engine core: on Gaudi2 one of the ARC CPUs that run
// the schedulers and the queue managers of the engines, numbered by the
// driver's enum arc_cpu_id (CPU_ID_*, in
// drivers/accel/habanalabs/include/gaudi2/arc/gaudi2_arc_common_packets.h,
// which is not part of the uapi). They are what control.HaltEngineCores
// takes. First-generation Gaudi has none. The zero EngineCore names no
// core; every call that takes one refuses it.
type EngineCore struct {
	asic ASIC // Gaudi2; ASICUnknown for the zero EngineCore
	id   uint32
}

// Gaudi2EngineCore returns the Gaudi2 engine core id, a CPU_ID_* value
// from 0 (SCHED_ARC0) to 68 (NIC_QMAN_ARC23).
func Gaudi2EngineCore(id uint32) EngineCore { return EngineCore{asic: Gaudi2, id: id} }

// ASIC returns Gaudi2, or ASICUnknown for the zero EngineCore.
func (c EngineCore) ASIC() ASIC { return c.asic }

// ID returns the driver's number for the core; Device.EngineCoreID checks
// the ASIC.
func (c EngineCore) ID() uint32 { return c.id }

// String returns the driver's name of the core without the CPU_ID_
// prefix, such as "SCHED_ARC0" or "TPC_QMAN_ARC7".
func (c EngineCore) String() string {
	if c.asic == ASICUnknown {
		return "EngineCore(none)"
	}
	if name, ok := gaudi2CoreNames()[c.id]; ok {
		return name
	}
	return fmt.Sprintf("EngineCore(%s, %d)", c.asic, c.id)
}

// gaudi2CoreRuns are Gaudi2's engine cores, enum arc_cpu_id: runs of
// CPU_ID_<name><i> with consecutive ids from first, i from 0 to n-1.
var gaudi2CoreRuns = [...]struct {
	name     string
	first, n uint32
}{
	{"SCHED_ARC", 0, 6},
	{"TPC_QMAN_ARC", 6, 25},
	{"MME_QMAN_ARC", 31, 2},
	{"EDMA_QMAN_ARC", 33, 8},
	{"PDMA_QMAN_ARC", 41, 2},
	{"ROT_QMAN_ARC", 43, 2},
	{"NIC_QMAN_ARC", 45, 24},
}

// gaudi2CoreNames maps the engine core ids to their names.
var gaudi2CoreNames = sync.OnceValue(func() map[uint32]string {
	m := make(map[uint32]string)
	for _, r := range gaudi2CoreRuns {
		for i := range r.n {
			m[r.first+i] = fmt.Sprintf("%s%d", r.name, i)
		}
	}
	return m
})

// EngineCores returns every engine core the driver numbers for the
// device's ASIC, in the driver's order: Gaudi2's 69 ARC CPUs, and none on
// first-generation Gaudi.
func (d *Device) EngineCores() []EngineCore {
	return slices.Clone(coreTables()[d.asic.family()].list)
}

// EngineCore returns the device's engine core of the given name, as
// EngineCore.String spells it; case does not matter. An unknown name gives
// an error matching ErrUnknownName.
func (d *Device) EngineCore(name string) (EngineCore, error) {
	c, ok := coreTables()[d.asic.family()].byName[strings.ToUpper(name)]
	if !ok {
		return EngineCore{}, fmt.Errorf("%s has no engine core %q: %w", d.asic, name, ErrUnknownName)
	}
	return c, nil
}

// EngineCoreID returns the driver's number for c on the device. A core of
// another ASIC, or the zero EngineCore, gives a *WrongASICError.
func (d *Device) EngineCoreID(c EngineCore) (uint32, error) {
	if c.asic == ASICUnknown || c.asic != d.asic.family() {
		return 0, &WrongASICError{Kind: "engine core", Name: c.String(), Have: c.asic, Device: d.asic}
	}
	return c.id, nil
}

var coreTables = sync.OnceValue(func() map[ASIC]idTable[EngineCore] {
	return map[ASIC]idTable[EngineCore]{
		Gaudi2: newIDTable(gaudi2CoreNames(), Gaudi2EngineCore),
	}
})
