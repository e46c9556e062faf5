package ioctl

import (
	"math"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// EngineCores issues CS with HL_CS_FLAGS_ENGINE_CORE_COMMAND: cmd
// (hl.HL_ENGINE_CORE_RUN or hl.HL_ENGINE_CORE_HALT) for the engine cores
// ids. The driver answers EPERM on ASICs without engine modes (Gaudi) and
// EINVAL for an empty list, more cores than the ASIC has or another
// command.
func (d *Device) EngineCores(cmd hl.EngineCommand, ids []uint32) error {
	var a hl.CSEngineCoresArgs
	a.CSFlags = hl.HL_CS_FLAGS_ENGINE_CORE_COMMAND
	if uint64(len(ids)) > math.MaxUint32 {
		return &Error{Op: opNames[nrCS], Sub: subName(nrCS, a.CSFlags), Errno: unix.EINVAL}
	}
	a.EngineCores, a.NumEngineCores = hl.SlicePointer(ids), uint32(len(ids))
	a.CoreCommand = uint32(cmd)
	req, err := d.request(nrCS, a.CSFlags)
	if err != nil {
		return err
	}
	return issue(d, req, nrCS, a.CSFlags, &a)
}

// Engines issues CS with HL_CS_FLAGS_ENGINES_COMMAND: cmd (one of the
// hl.HL_ENGINE_* commands) for the engines ids (hl.GAUDI2_*_ENGINE_ID_*
// for stall and resume, engine core ids for core run and halt). The
// driver answers EPERM on ASICs without engine modes (Gaudi) and EINVAL
// for a bad command, count or engine id.
func (d *Device) Engines(cmd hl.EngineCommand, ids []uint32) error {
	var a hl.CSEnginesArgs
	a.CSFlags = hl.HL_CS_FLAGS_ENGINES_COMMAND
	if uint64(len(ids)) > math.MaxUint32 {
		return &Error{Op: opNames[nrCS], Sub: subName(nrCS, a.CSFlags), Errno: unix.EINVAL}
	}
	a.Engines, a.NumEngines = hl.SlicePointer(ids), uint32(len(ids))
	a.EngineCommand = uint32(cmd)
	req, err := d.request(nrCS, a.CSFlags)
	if err != nil {
		return err
	}
	return issue(d, req, nrCS, a.CSFlags, &a)
}

// FlushPCIHBWWrites issues CS with HL_CS_FLAGS_FLUSH_PCI_HBW_WRITES: the
// driver reads a register behind the PCIe bridge, so writes the host
// posted to the device before the call have landed when it returns.
// A driver whose ASIC has no flush register answers EOPNOTSUPP, which
// matches ErrNotSupported.
func (d *Device) FlushPCIHBWWrites() error {
	var a hl.CSArgs
	a.In().CSFlags = hl.HL_CS_FLAGS_FLUSH_PCI_HBW_WRITES
	return d.CS(&a)
}
