package ioctl

import (
	"math"
	"runtime"
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// EngineCores issues CS with HL_CS_FLAGS_ENGINE_CORE_COMMAND: cmd
// (hl.HL_ENGINE_CORE_RUN or hl.HL_ENGINE_CORE_HALT) for the engine cores
// ids. The driver answers EPERM on ASICs without engine modes (Gaudi) and
// EINVAL for an empty list, more cores than the ASIC has or another
// command.
func (d *Device) EngineCores(cmd hl.EngineCommand, ids []uint32) error {
	var a hl.CSArgs
	in := a.In()
	in.CSFlags = hl.HL_CS_FLAGS_ENGINE_CORE_COMMAND
	ptr, n, err := idArray(ids)
	if err != nil {
		return &Error{Op: opNames[nrCS], Sub: subName(nrCS, in.CSFlags), Errno: unix.EINVAL}
	}
	in.SetEngineCores(ptr)
	in.SetNumEngineCores(n)
	in.SetCoreCommand(uint32(cmd))
	err = d.CS(&a)
	runtime.KeepAlive(ids)
	return err
}

// Engines issues CS with HL_CS_FLAGS_ENGINES_COMMAND: cmd (one of the
// hl.HL_ENGINE_* commands) for the engines ids (hl.GAUDI2_*_ENGINE_ID_*
// for stall and resume, engine core ids for core run and halt). The
// driver answers EPERM on ASICs without engine modes (Gaudi) and EINVAL
// for a bad command, count or engine id.
func (d *Device) Engines(cmd hl.EngineCommand, ids []uint32) error {
	var a hl.CSArgs
	in := a.In()
	in.CSFlags = hl.HL_CS_FLAGS_ENGINES_COMMAND
	ptr, n, err := idArray(ids)
	if err != nil {
		return &Error{Op: opNames[nrCS], Sub: subName(nrCS, in.CSFlags), Errno: unix.EINVAL}
	}
	in.SetEngines(ptr)
	in.SetNumEngines(n)
	in.SetEngineCommand(uint32(cmd))
	err = d.CS(&a)
	runtime.KeepAlive(ids)
	return err
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

// idArray returns the address and length the driver should see for ids,
// made to escape to the heap; the caller keeps ids alive for the call.
func idArray(ids []uint32) (uint64, uint32, error) {
	if len(ids) == 0 {
		return 0, 0, nil
	}
	if uint64(len(ids)) > math.MaxUint32 {
		return 0, 0, unix.EINVAL
	}
	p := unsafe.Pointer(unsafe.SliceData(ids))
	forceEscape(p)
	return uint64(uintptr(p)), uint32(len(ids)), nil
}
