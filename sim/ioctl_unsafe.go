package sim

import (
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// The habanalabs ioctls by number (HL_IOCTL_*), their names for fault
// injection, and the argument size the driver expects.
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
}

// decode splits a request into its ioctl index (HL_IOCTL_*) and argument
// size. ok is false for requests the node does not know; errno is what the
// kernel answers them with.
func (f *File) decode(req uint) (idx int, errno unix.Errno, ok bool) {
	nr := int(req & 0xff)
	typ := (req >> 8) & 0xff
	size := uintptr((req >> 16) & 0x3fff)
	if f.dev.legacy {
		// The pre-DRM driver dispatched on the number alone and refused
		// anything outside its table with ENOTTY.
		idx = nr - 1
		if idx < 0 || idx >= len(ioctlTable) {
			return 0, unix.ENOTTY, false
		}
	} else {
		if typ != hl.DRM_IOCTL_BASE {
			return 0, unix.ENOTTY, false
		}
		idx = nr - hl.DRM_COMMAND_BASE
		if idx < 0 || idx >= len(ioctlTable) {
			// drm_ioctl refuses driver numbers past the driver's table.
			return 0, unix.EINVAL, false
		}
	}
	if size != ioctlTable[idx].size {
		// The simulator reads the whole argument, so it insists on the
		// size the driver declares; the kernel would accept a shorter one.
		return 0, unix.EINVAL, false
	}
	if f.control && idx != hl.HL_IOCTL_INFO {
		return 0, unix.ENOTTY, false
	}
	return idx, 0, true
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
	return f.ioctl(req, arg)
}

// ioctl runs a request on the open file, for any of its handles.
func (f *File) ioctl(req uint, arg unsafe.Pointer) error {
	if !f.enter() {
		return unix.EBADF
	}
	defer f.exit()
	idx, errno, ok := f.decode(req)
	if !ok {
		return errno
	}
	if arg == nil {
		return unix.EFAULT
	}
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
	}
	if err := f.dev.fault(ioctlTable[idx].name, -1); err != nil {
		return err
	}
	switch idx {
	case hl.HL_IOCTL_CS:
		return f.csIoctl((*hl.CSArgs)(arg))
	case hl.HL_IOCTL_WAIT_CS:
		return f.waitIoctl((*hl.WaitCSArgs)(arg))
	case hl.HL_IOCTL_DEBUG:
		return f.debugIoctl((*hl.DebugArgs)(arg))
	}
	return unix.ENOSYS
}
