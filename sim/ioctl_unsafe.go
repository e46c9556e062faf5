package sim

import (
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// The habanalabs ioctls by number (HL_IOCTL_*), their names for fault
// injection, and the size of the driver's argument struct. The upstream
// driver's table ends before HL_IOCTL_NIC, which only the out-of-tree
// driver has (ioctlCount).
var ioctlTable = [...]struct {
	name string
	size uintptr
}{
	hl.HL_IOCTL_INFO:    {"INFO", unsafe.Sizeof(hl.InfoArgs{})},
	hl.HL_IOCTL_CB:      {"CB", unsafe.Sizeof(hl.CBArgs{})},
	hl.HL_IOCTL_CS:      {"CS", unsafe.Sizeof(hl.CSArgs{})},
	hl.HL_IOCTL_WAIT_CS: {"WAIT_CS", unsafe.Sizeof(hl.WaitCSArgs{})},
	hl.HL_IOCTL_MEMORY:  {"MEMORY", unsafe.Sizeof(hl.MemArgs{})},
	hl.HL_IOCTL_DEBUG:   {"DEBUG", unsafe.Sizeof(hl.DebugArgs{})},
	hl.HL_IOCTL_NIC:     {"NIC", unsafe.Sizeof(hl.NICArgs{})},
}

// ioctlCount returns how many ioctls the device's driver has: the
// upstream driver's six (HL_COMMAND_END 0x46), or seven with the
// out-of-tree driver's NIC (HL_COMMAND_END 0x47).
func (d *Device) ioctlCount() int {
	if d.oot() {
		return hl.HL_IOCTL_NIC + 1
	}
	return hl.HL_IOCTL_NIC
}

// The direction bits of an ioctl request (_IOC_WRITE, _IOC_READ shifted
// into place): IOC_IN copies the argument in, IOC_OUT back out.
const (
	iocIn  = 1 << 30
	iocOut = 2 << 30
)

// argPlan is how a request's argument moves between the caller and the
// handler: how many bytes of the caller's memory are read before the
// handler runs and written back after it.
type argPlan struct {
	idx     int     // HL_IOCTL_*
	in, out uintptr // bytes copied in and out
}

// decode splits a request into its ioctl index (HL_IOCTL_*) and the copies
// of its argument. ok is false for requests the node does not know; errno
// is what the kernel answers them with.
//
// The argument's size is the caller's, as the kernel takes it: a shorter
// argument is zero-extended to the driver's struct and only the caller's
// bytes are written back; a longer one is copied in and out whole.
//
//   - The DRM compute node (drm_ioctl): the type must be DRM_IOCTL_BASE
//     (else ENOTTY) and the number a driver ioctl (else EINVAL: the NIC
//     number too on the upstream driver, whose table ends before it); the
//     argument is copied in only when both the request and the driver's
//     definition have IOC_IN, and out only when both have IOC_OUT (every
//     habanalabs ioctl is DRM_IOWR).
//   - The control node (hl_ioctl_control) and the legacy 'H' driver's
//     nodes (hl_ioctl, hl_ioctl_control of the pre-DRM driver): the
//     number alone picks the ioctl, whatever the type (ENOTTY for a number
//     outside the table, or other than INFO's on the control node), and
//     _hl_ioctl copies the caller's size in and out by the driver's own
//     direction bits (IOWR), ignoring the request's.
func (f *File) decode(req uint) (plan argPlan, errno unix.Errno, ok bool) {
	nr := int(req & 0xff)
	typ := (req >> 8) & 0xff
	size := uintptr((req >> 16) & 0x3fff)
	base := hl.DRM_COMMAND_BASE
	if f.dev.legacy {
		base = 1 // the legacy numbers start at 1 (HL_COMMAND_START)
	}
	idx := nr - base
	if f.control {
		// hl_ioctl_control: nr == _IOC_NR(*_HL_INFO) or ENOTTY.
		if idx != hl.HL_IOCTL_INFO {
			return argPlan{}, unix.ENOTTY, false
		}
		return argPlan{idx: idx, in: size, out: size}, 0, true
	}
	count := f.dev.ioctlCount()
	if f.dev.legacy {
		// The pre-DRM hl_ioctl dispatched on the number alone and refused
		// anything outside its table with ENOTTY.
		if idx < 0 || idx >= count {
			return argPlan{}, unix.ENOTTY, false
		}
		return argPlan{idx: idx, in: size, out: size}, 0, true
	}
	if typ != hl.DRM_IOCTL_BASE {
		return argPlan{}, unix.ENOTTY, false
	}
	if idx < 0 || idx >= count {
		// drm_ioctl refuses driver numbers past the driver's table.
		return argPlan{}, unix.EINVAL, false
	}
	plan = argPlan{idx: idx, in: size, out: size}
	if req&iocIn == 0 {
		plan.in = 0
	}
	if req&iocOut == 0 {
		plan.out = 0
	}
	return plan, 0, true
}

// Ioctl implements the ioctl layer's File: it runs request req with the
// argument at arg, which must point to the argument struct of that request,
// and returns a unix.Errno on failure, as the driver does.
func (f *File) Ioctl(req uint, arg unsafe.Pointer) error {
	f.mu.Lock()
	closed := f.closed
	f.mu.Unlock()
	if closed {
		return unix.EBADF
	}
	return f.ioctl(req, arg, nil)
}

// IoctlInterruptible is Ioctl for a server that runs the request on behalf
// of a thread of another process (OpenFor): closing intr is a signal to
// that thread, which ends a wait in progress (WAIT_CS in any of its modes)
// with EINTR, as the driver's interruptible waits end (-ERESTARTSYS).
// The other requests do not sleep and ignore it.
func (f *File) IoctlInterruptible(req uint, arg unsafe.Pointer, intr <-chan struct{}) error {
	f.mu.Lock()
	closed := f.closed
	f.mu.Unlock()
	if closed {
		return unix.EBADF
	}
	return f.ioctl(req, arg, intr)
}

// ioctl runs a request on the open file, for any of its handles; closing
// intr interrupts a wait (IoctlInterruptible), nil never does.
func (f *File) ioctl(req uint, arg unsafe.Pointer, intr <-chan struct{}) error {
	if !f.enter() {
		return unix.EBADF
	}
	defer f.exit()
	if f.killed.Load() {
		return ErrKilled
	}
	plan, errno, ok := f.decode(req)
	if !ok {
		return errno
	}
	drv := ioctlTable[plan.idx].size
	if plan.in >= drv && plan.out >= drv {
		// The caller's argument holds the driver's whole struct both
		// ways: the handler works on it in place (bytes past the struct
		// go in and come back unchanged, as the kernel copies them).
		if arg == nil {
			return unix.EFAULT // copy_from_user of NULL
		}
		return f.dispatch(plan.idx, arg, intr)
	}
	return f.bounce(plan, arg, intr)
}

// bounce runs a request whose argument does not cover the driver's struct
// both ways, as drm_ioctl and _hl_ioctl do: a zeroed kernel buffer of the
// largest of the three sizes, the caller's in bytes copied into it (EFAULT,
// without running, when that faults), the handler, then out bytes copied
// back (EFAULT, after running, when that faults).
func (f *File) bounce(plan argPlan, arg unsafe.Pointer, intr <-chan struct{}) error {
	ksize := max(plan.in, plan.out, ioctlTable[plan.idx].size)
	words := make([]uint64, (ksize+7)/8) // aligned for the argument structs
	kdata := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), ksize)
	if plan.in > 0 {
		if arg == nil || faultingCopy(kdata[:plan.in], unsafe.Slice((*byte)(arg), plan.in)) != nil {
			return unix.EFAULT
		}
	}
	err := f.dispatch(plan.idx, unsafe.Pointer(&words[0]), intr)
	if plan.out > 0 {
		if arg == nil || faultingCopy(unsafe.Slice((*byte)(arg), plan.out), kdata[:plan.out]) != nil {
			return unix.EFAULT
		}
	}
	return err
}

// dispatch runs ioctl idx on its argument struct at arg, with strict
// mode's argument checks when they are on (strict_args_unsafe.go). The
// checks read this process's memory and stack: a served process's calls
// (served.go) go without them. Closing intr interrupts a wait.
func (f *File) dispatch(idx int, arg unsafe.Pointer, intr <-chan struct{}) error {
	if f.dev.strict.on && f.rem == nil {
		return f.strictDispatch(idx, arg)
	}
	return f.serve(idx, arg, intr)
}

// serve runs ioctl idx on its argument struct at arg; closing intr
// interrupts a wait.
func (f *File) serve(idx int, arg unsafe.Pointer, intr <-chan struct{}) error {
	switch idx {
	case hl.HL_IOCTL_INFO:
		args := (*hl.InfoArgs)(arg)
		if err := f.dev.fault("INFO", int(args.Op)); err != nil {
			return err
		}
		return f.info(args)
	case hl.HL_IOCTL_MEMORY:
		args := (*hl.MemArgs)(arg)
		if err := f.dev.fault("MEMORY", int(args.In().Op)); err != nil {
			return err
		}
		return f.memory(args)
	case hl.HL_IOCTL_CB:
		args := (*hl.CBArgs)(arg)
		if err := f.dev.fault("CB", int(args.In().Op)); err != nil {
			return err
		}
		return f.cbIoctl(args)
	case hl.HL_IOCTL_NIC:
		args := (*hl.NICArgs)(arg)
		if err := f.dev.fault("NIC", int(args.Op)); err != nil {
			return err
		}
		return f.nicIoctl(args)
	}
	if err := f.dev.fault(ioctlTable[idx].name, -1); err != nil {
		return err
	}
	switch idx {
	case hl.HL_IOCTL_CS:
		return f.csIoctl((*hl.CSArgs)(arg))
	case hl.HL_IOCTL_WAIT_CS:
		return f.waitIoctl((*hl.WaitCSArgs)(arg), intr)
	case hl.HL_IOCTL_DEBUG:
		return f.debugIoctl((*hl.DebugArgs)(arg))
	}
	return unix.ENOSYS
}
