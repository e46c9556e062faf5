package sim

import (
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// The captured-error ops, served in any state. The driver answers them in
// three ways:
//   - CS_TIMEOUT_EVENT and UNDEFINED_OPCODE_EVENT always copy their struct,
//     all zeros when nothing was captured;
//   - RAZWI_EVENT and PAGE_FAULT_EVENT copy min(return_size, struct) bytes,
//     and nothing (returning 0) when nothing was captured;
//   - HW_ERR_EVENT, FW_ERR_EVENT and USER_ENGINE_ERR_EVENT need only a
//     pointer, copy nothing when nothing was captured, and otherwise need a
//     buffer of the whole 16-byte struct (ENOMEM).

// recorded returns, read under d.mu, a copy of one captured record as the
// bytes the driver copies out, and whether it was captured.
func recorded[T any](d *Device, rec func(e *errorInfo) (T, bool)) ([]byte, bool) {
	d.mu.Lock()
	r, ok := rec(&d.errs)
	d.mu.Unlock()
	return structBytes(&r), ok
}

// cs_timeout_info
func (f *File) infoCSTimeoutEvent(a *hl.InfoArgs) error {
	b, _ := recorded(f.dev, func(e *errorInfo) (hl.InfoCSTimeoutEvent, bool) { return e.csTimeout, true })
	return f.copyResult(a, b)
}

// undefined_opcode_info
func (f *File) infoUndefinedOpcodeEvent(a *hl.InfoArgs) error {
	b, _ := recorded(f.dev, func(e *errorInfo) (hl.InfoUndefinedOpcodeEvent, bool) { return e.undefOpcode, true })
	return f.copyResult(a, b)
}

// razwi_info
func (f *File) infoRazwiEvent(a *hl.InfoArgs) error {
	b, ok := recorded(f.dev, func(e *errorInfo) (hl.InfoRazwiEvent, bool) { return e.razwi, e.razwiAvailable })
	return f.copyIfRecorded(a, b, ok)
}

// page_fault_info
func (f *File) infoPageFaultEvent(a *hl.InfoArgs) error {
	b, ok := recorded(f.dev, func(e *errorInfo) (hl.PageFaultInfo, bool) { return e.pageFault, e.pageFaultAvailable })
	return f.copyIfRecorded(a, b, ok)
}

// copyIfRecorded is the rule of RAZWI_EVENT and PAGE_FAULT_EVENT: a
// pointer and a size are needed, nothing is copied when nothing was
// captured, else min(return_size, struct) bytes.
func (f *File) copyIfRecorded(a *hl.InfoArgs, b []byte, available bool) error {
	if err := checkOut(a); err != nil {
		return err
	}
	if !available {
		return nil
	}
	return f.copyResult(a, b)
}

// user_mappings_info: only the pointer is checked. Once a page fault was
// captured, array_size is set to the number of mappings even when the
// buffer turns out too small (ENOMEM), and the whole array is copied.
func (f *File) infoUserMappings(a *hl.InfoArgs) error {
	if a.ReturnPointer.IsNil() {
		return unix.EINVAL
	}
	d := f.dev
	d.mu.Lock()
	ok := d.errs.pageFaultAvailable
	b := append([]byte(nil), sliceBytes(d.errs.userMappings)...)
	n := len(d.errs.userMappings)
	d.mu.Unlock()
	if !ok {
		return nil
	}
	a.SetArraySize(uint32(n))
	if uint64(a.ReturnSize) < uint64(len(b)) {
		return unix.ENOMEM
	}
	return f.copyOut(a.ReturnPointer.Addr(), b)
}

// hw_err_info
func (f *File) infoHWErrEvent(a *hl.InfoArgs) error {
	b, ok := recorded(f.dev, func(e *errorInfo) (hl.InfoHWErrEvent, bool) { return e.hwErr, e.hwErrAvailable })
	return f.copyWhole(a, b, ok)
}

// fw_err_info
func (f *File) infoFWErrEvent(a *hl.InfoArgs) error {
	b, ok := recorded(f.dev, func(e *errorInfo) (hl.InfoFWErrEvent, bool) { return e.fwErr, e.fwErrAvailable })
	return f.copyWhole(a, b, ok)
}

// engine_err_info
func (f *File) infoEngineErrEvent(a *hl.InfoArgs) error {
	b, ok := recorded(f.dev, func(e *errorInfo) (hl.InfoEngineErrEvent, bool) { return e.engineErr, e.engineErrAvailable })
	return f.copyWhole(a, b, ok)
}

// copyWhole is the rule of the three *_ERR ops: EINVAL without a pointer,
// nothing when nothing was captured (available false), ENOMEM when the
// buffer cannot hold all of b, else all of b.
func (f *File) copyWhole(a *hl.InfoArgs, b []byte, available bool) error {
	if a.ReturnPointer.IsNil() {
		return unix.EINVAL
	}
	if !available {
		return nil
	}
	if int(a.ReturnSize) < len(b) {
		return unix.ENOMEM
	}
	return f.copyOut(a.ReturnPointer.Addr(), b)
}
