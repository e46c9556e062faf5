package sim

import (
	"encoding/binary"
	"sync"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// The DEBUG ioctl (common/habanalabs_ioctl.c, hl_debug_ioctl, and the ASICs'
// debug_coresight in gaudi/gaudi_coresight.c and gaudi2/gaudi2_coresight.c).
//
// The device has one debug mode flag (hdev->in_debug): SET_MODE turns it on
// (EFAULT when it is on already) and off (EFAULT when it is off), and the
// end of the compute context turns it off. The CoreSight operations (ETR,
// ETF, STM, FUNNEL, BMON, SPMU, TIMESTAMP) need debug mode (EFAULT
// without it); their input is cut to the size of the operation's
// parameter struct, copied in (EFAULT), and checked as the ASIC code
// checks it: the component index against the ASIC's table (EINVAL), a
// missing input when enabling (EINVAL), an ETR buffer of size 0 or outside
// the device's address ranges (EINVAL), the SPMU event counts (see
// checkSPMU). The simulator has no trace hardware: it records each accepted
// operation (Device.DebugOps), answers the ETR write pointer with the start
// of the trace buffer (an empty trace) and SPMU counters with zeros. Every
// component index in the ASIC's table is taken as present; the driver
// silently skips the table entries whose address is 0.

// debugState is the device's debug mode and what was configured in it.
type debugState struct {
	mu    sync.Mutex
	owner *File     // the compute file that enabled debug mode, nil when off
	etrOn bool      // the ETR is enabled (PSOC_ETR_CTL != 0)
	etr   uint64    // the trace buffer address of the enabled ETR
	ops   []DebugOp // accepted CoreSight operations, oldest first
}

// DebugOp is a CoreSight configuration request the simulated device
// accepted through the DEBUG ioctl.
type DebugOp struct {
	Op     uint32 // hl.HL_DEBUG_OP_*
	RegIdx uint32 // component index
	Enable bool
	Input  []byte // the parameter struct as copied in (cut to its size), nil for none
}

// debugStructSize is hl_debug_struct_size: the parameter struct of each
// CoreSight operation, 0 for those that take none.
var debugStructSize = [...]uint32{
	hl.HL_DEBUG_OP_ETR:       24, // struct hl_debug_params_etr
	hl.HL_DEBUG_OP_ETF:       24, // struct hl_debug_params_etf
	hl.HL_DEBUG_OP_STM:       24, // struct hl_debug_params_stm
	hl.HL_DEBUG_OP_FUNNEL:    0,
	hl.HL_DEBUG_OP_BMON:      80, // struct hl_debug_params_bmon
	hl.HL_DEBUG_OP_SPMU:      96, // struct hl_debug_params_spmu
	hl.HL_DEBUG_OP_TIMESTAMP: 0,
}

// Component counts per ASIC: the sizes of the debug_*_regs tables, from
// the GAUDI_*_LAST and GAUDI2_*_LAST values of gaudi_coresight.h and
// gaudi2_coresight.h.
var (
	gaudiDebugRegs  = debugRegs{stm: 46, etf: 48, funnel: 76, bmon: 121, spmu: 40}
	gaudi2DebugRegs = debugRegs{stm: 139, etf: 141, funnel: 141, bmon: 385, spmu: 137}
)

type debugRegs struct{ stm, etf, funnel, bmon, spmu uint32 }

// spmuMaxCounters is SPMU_MAX_COUNTERS.
const spmuMaxCounters = 6

// debugIoctl is hl_debug_ioctl.
func (f *File) debugIoctl(a *hl.DebugArgs) error {
	d := f.dev
	if !d.State().operational() {
		return unix.EBUSY
	}
	// The out-of-tree driver (HabanaAI/drivers.accel.habanalabs.kernel,
	// common/habanalabs_ioctl.c, hl_debug_ioctl and
	// hl_debug_op_requires_debug) refuses the operations that need debug
	// mode with EPERM before looking at them, where upstream's CoreSight
	// case answers EFAULT; and it takes HL_DEBUG_ENABLE_ERR_INFO_CAPTURE
	// (1033), which re-arms the capture of the first error of each kind
	// (hl_enable_err_info_capture) and cannot fail.
	if d.oot() {
		switch a.Op {
		case hl.HL_DEBUG_OP_ETR, hl.HL_DEBUG_OP_ETF, hl.HL_DEBUG_OP_STM, hl.HL_DEBUG_OP_FUNNEL,
			hl.HL_DEBUG_OP_BMON, hl.HL_DEBUG_OP_SPMU, hl.HL_DEBUG_OP_TIMESTAMP,
			hl.HL_DEBUG_OP_FETCH_TRACE, hl.HL_DEBUG_OP_READBLOCK, hl.HL_DEBUG_OP_SCHED_SUBMIT_BUF:
			d.debug.mu.Lock()
			on := d.inDebugLocked()
			d.debug.mu.Unlock()
			if !on {
				return unix.EPERM
			}
		case hl.HL_DEBUG_ENABLE_ERR_INFO_CAPTURE:
			return nil
		}
	}
	switch a.Op {
	case hl.HL_DEBUG_OP_SET_MODE:
		return d.setDebugMode(f, a.Enable != 0)
	case hl.HL_DEBUG_OP_ETR, hl.HL_DEBUG_OP_ETF, hl.HL_DEBUG_OP_STM, hl.HL_DEBUG_OP_FUNNEL,
		hl.HL_DEBUG_OP_BMON, hl.HL_DEBUG_OP_SPMU, hl.HL_DEBUG_OP_TIMESTAMP:
		return d.coresight(f, a)
	}
	return unix.EINVAL
}

// inDebugLocked reports hdev->in_debug: set, and the context that set it
// still exists (the context's release turns debug mode off).
func (d *Device) inDebugLocked() bool {
	if d.debug.owner == nil {
		return false
	}
	d.mu.Lock()
	alive := d.compute == d.debug.owner
	d.mu.Unlock()
	if !alive {
		d.debug.owner = nil
		d.debug.etrOn = false
	}
	return alive
}

// setDebugMode is hl_device_set_debug_mode.
func (d *Device) setDebugMode(f *File, enable bool) error {
	d.debug.mu.Lock()
	defer d.debug.mu.Unlock()
	on := d.inDebugLocked()
	if enable == on {
		return unix.EFAULT
	}
	if enable {
		d.debug.owner = f
		return nil
	}
	d.debug.owner = nil
	d.debug.etrOn = false // halt_coresight stops the ETF and ETR
	return nil
}

// coresight is the CoreSight half of hl_debug_ioctl and debug_coresight.
func (d *Device) coresight(f *File, a *hl.DebugArgs) error {
	d.debug.mu.Lock()
	defer d.debug.mu.Unlock()
	if !d.inDebugLocked() {
		return unix.EFAULT
	}
	size := min(a.InputSize, debugStructSize[a.Op])
	var input []byte
	if !a.InputPtr.IsNil() && size != 0 {
		input = make([]byte, debugStructSize[a.Op]) // zero-filled past size
		if err := f.copyIn(a.InputPtr.Addr(), input[:size]); err != nil {
			return unix.EFAULT
		}
	}
	var output []byte
	if !a.OutputPtr.IsNil() && a.OutputSize != 0 {
		if a.OutputSize > maxDebugOutput {
			return unix.ENOMEM // kzalloc of a user-chosen size
		}
		output = make([]byte, a.OutputSize)
	}
	enable := a.Enable != 0
	recorded, err := d.configure(a.Op, a.RegIdx, enable, input, output)
	if err != nil {
		return err
	}
	if recorded {
		// The hardware is configured even when the answer cannot be
		// copied out.
		d.debug.ops = append(d.debug.ops, DebugOp{Op: a.Op, RegIdx: a.RegIdx, Enable: enable, Input: input})
	}
	if output != nil {
		if err := f.copyOut(a.OutputPtr.Addr(), output); err != nil {
			return unix.EFAULT
		}
	}
	return nil
}

// maxDebugOutput bounds the output buffer the simulator allocates; the
// driver's kzalloc fails with ENOMEM somewhere above a few megabytes.
const maxDebugOutput = 4 << 20

// configure is the ASIC's debug_coresight for one operation. recorded is
// false when the operation changed nothing (an ETR already in the asked
// state).
func (d *Device) configure(op, reg uint32, enable bool, input, output []byte) (recorded bool, err error) {
	regs := gaudi2DebugRegs
	if !d.prof.dramVirtual {
		regs = gaudiDebugRegs
	}
	var limit uint32
	switch op {
	case hl.HL_DEBUG_OP_STM:
		limit = regs.stm
	case hl.HL_DEBUG_OP_ETF:
		limit = regs.etf
	case hl.HL_DEBUG_OP_FUNNEL:
		limit = regs.funnel
	case hl.HL_DEBUG_OP_BMON:
		limit = regs.bmon
	case hl.HL_DEBUG_OP_SPMU:
		limit = regs.spmu
	case hl.HL_DEBUG_OP_ETR:
		return d.configureETR(enable, input, output)
	case hl.HL_DEBUG_OP_TIMESTAMP:
		return true, nil // deprecated: accepted, nothing to do
	}
	if reg >= limit {
		return false, unix.EINVAL
	}
	switch op {
	case hl.HL_DEBUG_OP_STM, hl.HL_DEBUG_OP_ETF, hl.HL_DEBUG_OP_BMON:
		if enable && input == nil {
			return false, unix.EINVAL
		}
	case hl.HL_DEBUG_OP_SPMU:
		if err := d.checkSPMU(enable, input, output); err != nil {
			return false, err
		}
		// Disabled counters read as zero: output stays zero-filled.
	}
	return true, nil
}

// checkSPMU is the ASIC's config_spmu checks. Enabling takes at most six
// event types, and on Gaudi at least three. Disabling reads the counters
// into the output, two u64 more than the events (overflow bits and cycle
// count): Gaudi insists on an output of at least three u64, Gaudi2 reads
// only into an output of more than two; more than six events is EINVAL.
func (d *Device) checkSPMU(enable bool, input, output []byte) error {
	gaudi := !d.prof.dramVirtual
	if enable {
		if input == nil {
			return unix.EINVAL
		}
		n := binary.LittleEndian.Uint32(input[80:]) // event_types_num
		if n > spmuMaxCounters || gaudi && n < 3 {
			return unix.EINVAL
		}
		return nil
	}
	n := len(output) / 8
	if gaudi && (output == nil || n < 3) {
		return unix.EINVAL
	}
	if n > 2 && n-2 > spmuMaxCounters {
		return unix.EINVAL
	}
	return nil
}

// configureETR is the ASIC's config_etr.
func (d *Device) configureETR(enable bool, input, output []byte) (bool, error) {
	if enable == d.debug.etrOn {
		return false, nil // the ETR is in that state already
	}
	if !enable {
		d.debug.etrOn = false
		if len(output) >= 8 {
			// RWP: where the next trace byte would go, the start of
			// the buffer for an empty trace.
			binary.LittleEndian.PutUint64(output, d.debug.etr)
		}
		return true, nil
	}
	if input == nil {
		return false, unix.EINVAL
	}
	addr, size := binary.LittleEndian.Uint64(input[0:]), binary.LittleEndian.Uint64(input[8:])
	if size == 0 || !d.prof.etrAddressValid(addr, size) {
		return false, unix.EINVAL
	}
	d.debug.etrOn, d.debug.etr = true, addr
	return true, nil
}

// etrAddressValid is the ASIC's etr_validate_address: the trace buffer
// must lie in one of the address ranges the ETR may write to. Gaudi also
// limits addresses to 50 bits. The simulator checks against its context
// VA ranges and user SRAM and DRAM, which the driver's fixed properties
// bound the same way up to rounding.
func (p *profile) etrAddressValid(addr, size uint64) bool {
	end := addr + size
	if end < addr {
		return false
	}
	inside := func(start, last uint64) bool { return addr >= start && end-1 <= last }
	if p.dramVirtual {
		return inside(p.vm.host.start, p.vm.host.end) ||
			inside(p.vm.hostHuge.start, p.vm.hostHuge.end) ||
			inside(p.vm.dmmuStart, p.vm.dmmuEnd-1)
	}
	if addr>>50 != 0 {
		return false
	}
	return inside(p.vm.host.start, p.vm.host.end) ||
		inside(p.dramUserBase, p.dramBase+p.dramSize-1) ||
		inside(p.sramUserBase, p.sramBase+p.sramSize-1)
}

// DebugMode reports whether the device is in debug mode (DEBUG SET_MODE).
func (d *Device) DebugMode() bool {
	d.debug.mu.Lock()
	defer d.debug.mu.Unlock()
	return d.inDebugLocked()
}

// DebugOps returns the CoreSight operations the device accepted, oldest
// first. The simulator keeps them across debug mode changes, for tests.
func (d *Device) DebugOps() []DebugOp {
	d.debug.mu.Lock()
	defer d.debug.mu.Unlock()
	out := make([]DebugOp, len(d.debug.ops))
	copy(out, d.debug.ops)
	return out
}
