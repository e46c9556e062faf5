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

// cs_timeout_info
func (f *File) infoCSTimeoutEvent(a *hl.InfoArgs) error {
	d := f.dev
	d.mu.Lock()
	r := d.errs.csTimeout
	d.mu.Unlock()
	return copyResult(a, structBytes(&r))
}

// undefined_opcode_info
func (f *File) infoUndefinedOpcodeEvent(a *hl.InfoArgs) error {
	d := f.dev
	d.mu.Lock()
	r := d.errs.undefOpcode
	d.mu.Unlock()
	return copyResult(a, structBytes(&r))
}

// razwi_info
func (f *File) infoRazwiEvent(a *hl.InfoArgs) error {
	if err := checkOut(a); err != nil {
		return err
	}
	d := f.dev
	d.mu.Lock()
	r, ok := d.errs.razwi, d.errs.razwiAvailable
	d.mu.Unlock()
	if !ok {
		return nil
	}
	return copyResult(a, structBytes(&r))
}

// page_fault_info
func (f *File) infoPageFaultEvent(a *hl.InfoArgs) error {
	if err := checkOut(a); err != nil {
		return err
	}
	d := f.dev
	d.mu.Lock()
	r, ok := d.errs.pageFault, d.errs.pageFaultAvailable
	d.mu.Unlock()
	if !ok {
		return nil
	}
	return copyResult(a, structBytes(&r))
}

// user_mappings_info: only the pointer is checked. Once a page fault was
// captured, array_size is set to the number of mappings even when the
// buffer turns out too small (ENOMEM), and the whole array is copied.
func (f *File) infoUserMappings(a *hl.InfoArgs) error {
	if a.ReturnPointer == 0 {
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
	return copyOut(a.ReturnPointer, b)
}

// hw_err_info
func (f *File) infoHWErrEvent(a *hl.InfoArgs) error {
	d := f.dev
	d.mu.Lock()
	r, ok := d.errs.hwErr, d.errs.hwErrAvailable
	d.mu.Unlock()
	return copyWhole(a, ok, structBytes(&r))
}

// fw_err_info
func (f *File) infoFWErrEvent(a *hl.InfoArgs) error {
	d := f.dev
	d.mu.Lock()
	r, ok := d.errs.fwErr, d.errs.fwErrAvailable
	d.mu.Unlock()
	return copyWhole(a, ok, structBytes(&r))
}

// engine_err_info
func (f *File) infoEngineErrEvent(a *hl.InfoArgs) error {
	d := f.dev
	d.mu.Lock()
	r, ok := d.errs.engineErr, d.errs.engineErrAvailable
	d.mu.Unlock()
	return copyWhole(a, ok, structBytes(&r))
}

// copyWhole is the rule of the three *_ERR ops: EINVAL without a pointer,
// nothing when nothing was captured (available false), ENOMEM when the
// buffer cannot hold all of b, else all of b.
func copyWhole(a *hl.InfoArgs, available bool, b []byte) error {
	if a.ReturnPointer == 0 {
		return unix.EINVAL
	}
	if !available {
		return nil
	}
	if int(a.ReturnSize) < len(b) {
		return unix.ENOMEM
	}
	return copyOut(a.ReturnPointer, b)
}
