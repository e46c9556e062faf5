package ioctl

import (
	"errors"
	"os"
	"slices"
	"strings"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Sentinel errors for the conditions callers branch on. Errors returned by
// this package match them with errors.Is; the errno stays reachable too, so
// errors.Is(err, unix.EBUSY) and errors.Is(err, ErrNotOperational) both
// hold for an ioctl the driver refused because the device is in reset.
var (
	// ErrDeviceBusy reports that opening failed with EBUSY because another
	// process owns the device's compute context (hl_device_open). Only
	// errors of Op "OPEN" match it: an EBUSY from an ioctl means something
	// else, see ErrNotOperational.
	ErrDeviceBusy = errors.New("device busy")

	// ErrInReset reports that opening failed with EAGAIN: the device is being
	// reset, scrubbed, or released by its previous owner. Opening again later
	// may succeed.
	ErrInReset = errors.New("device in reset")

	// ErrNotOperational reports that the driver considers the device not
	// operational: in reset, malfunctioning or waiting for a reset
	// (hl_device_operational). The ioctls test that first and answer EBUSY
	// (_hl_info_ioctl for all but a few queries, hl_cb_ioctl and
	// hl_cb_create, hl_cs_sanity_checks for CS, hl_wait_ioctl, hl_mem_ioctl,
	// hl_debug_ioctl; hl_cs_ctx_switch also answers EBUSY for a device too
	// stuck to switch context, and resets it), so every EBUSY of those
	// ioctls matches it (not that of DMA_BUF_SET_NAME, which is not the
	// driver's). Opening answers EPERM for a device that is not
	// operational and not merely in reset (hl_device_open; hl_device_open_ctrl
	// for a disabled device), which matches it too. A context that saw the
	// device go down is usually unusable until it is closed and reopened.
	ErrNotOperational = errors.New("device not operational")

	// ErrNotSupported reports that the file does not understand the request
	// (ENOTTY), that the driver does not implement it (EOPNOTSUPP), or that
	// the ASIC lacks the feature the request needs, which the driver answers
	// with EPERM: staged submissions (supports_staged_submission), engine
	// commands (supports_engine_modes), multi-CS waits
	// (supports_wait_for_multi_cs), user interrupt waits (no user interrupts)
	// and hardware blocks (gaudi_get_hw_block_id). See Error for which
	// operations' EPERM matches.
	ErrNotSupported = errors.New("not supported")

	// ErrTimeout reports a timeout detected by the driver or the device
	// (ETIMEDOUT), including a command submission that WAIT_CS reports as
	// timed out. A wait that merely ran out of its own time budget is not an
	// error; see Device.WaitCS.
	ErrTimeout = errors.New("timeout")

	// ErrClosed reports a call on a Device that was closed. It is
	// os.ErrClosed, so either sentinel may be used with errors.Is. An EBADF
	// the kernel answers (a bad descriptor passed in the arguments) does not
	// match it.
	ErrClosed = os.ErrClosed
)

// Error describes a failed device operation. It keeps the errno the kernel
// (or the simulator) returned and the operation that failed.
//
// Use errors.Is to test an Error against an errno or a sentinel, never ==:
//
//	errno       Op and Sub                              matches
//	EBUSY       OPEN                                    ErrDeviceBusy
//	EBUSY       INFO, CB, CS, WAIT_CS, MEMORY, DEBUG,   ErrNotOperational
//	            NIC
//	EPERM       OPEN                                    ErrNotOperational
//	EPERM       CS STAGED_SUBMISSION,                   ErrNotSupported
//	            CS ENGINE_CORE_COMMAND,
//	            CS ENGINES_COMMAND,
//	            WAIT_CS MULTI_CS, WAIT_CS INTERRUPT,
//	            MEMORY MAP_BLOCK,
//	            MEMORY REG_DMABUF_FD
//	EAGAIN      OPEN                                    ErrInReset
//	ENOTTY      any                                     ErrNotSupported
//	EOPNOTSUPP  any                                     ErrNotSupported
//	ETIMEDOUT   any                                     ErrTimeout
//	EBADF       a call on a closed Device               ErrClosed
//
// Other EPERMs match no sentinel: the driver answers EPERM for a plain
// submission both when its command buffer holds a packet users may not
// send (the Gaudi parser) and when the device stopped being operational
// between the checks and the queueing (hl_hw_queue_schedule_cs), and for
// MEMORY MAP of another context's memory that is not shared. EAGAIN from
// CS means the queues are full. An EBADF from the kernel, such as for a bad
// descriptor in the arguments, is only an errno; a Device that was closed
// answers an Error with Errno EBADF that also matches ErrClosed.
type Error struct {
	// Op is the operation: "INFO", "CB", "CS", "WAIT_CS", "MEMORY",
	// "DEBUG" and the out-of-tree driver's "NIC" for ioctls, "MMAP" and "MUNMAP" for mappings and "OPEN" for
	// opening the file.
	Op string
	// Sub names the sub-operation in the driver's spelling, such as
	// "HW_IP_INFO", "ALLOC" or "CREATE"; it may be empty. For CS and
	// WAIT_CS it is the kind of submission or wait, such as "SIGNAL" or
	// "MULTI_CS", or "STAGED_SUBMISSION" for a part of a staged
	// submission. For Op "OPEN" it is the path of the file.
	Sub string
	// Req is the ioctl request number that was issued, or 0.
	Req uint
	// Errno is the error number returned.
	Errno unix.Errno

	closed bool // refused by this package: the Device was closed
}

// Error returns a short description such as
// "ioctl MEMORY ALLOC: cannot allocate memory".
func (e *Error) Error() string {
	if e.closed {
		return opText(e.Op, e.Sub) + ": " + ErrClosed.Error()
	}
	return opText(e.Op, e.Sub) + ": " + e.Errno.Error()
}

// opText describes an operation for an error message.
func opText(op, sub string) string {
	var s string
	switch op {
	case "OPEN", "MMAP", "MUNMAP":
		s = strings.ToLower(op)
	default:
		s = "ioctl " + op
	}
	if sub != "" {
		s += " " + sub
	}
	return s
}

// Unwrap returns the errno, so that errors.Is(err, unix.EBUSY) works.
func (e *Error) Unwrap() error { return e.Errno }

// Is reports whether the error matches one of the package's sentinels; see
// the table on Error. Matching against an errno goes through Unwrap.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrDeviceBusy:
		return e.Op == "OPEN" && e.Errno == unix.EBUSY
	case ErrNotOperational:
		if e.Op == "OPEN" {
			return e.Errno == unix.EPERM
		}
		return e.Errno == unix.EBUSY && slices.Contains(opNames[:], e.Op)
	case ErrInReset:
		return e.Op == "OPEN" && e.Errno == unix.EAGAIN
	case ErrNotSupported:
		return e.Errno == unix.ENOTTY || e.Errno == unix.EOPNOTSUPP ||
			e.Errno == unix.EPERM && unsupportedEPERM(e.Op, e.Sub)
	case ErrTimeout:
		return e.Errno == unix.ETIMEDOUT
	case ErrClosed:
		return e.closed
	}
	return false
}

// Sub-operations whose EPERM means the ASIC lacks a feature.
var (
	subStaged      = hl.CSFlagNames[hl.HL_CS_FLAGS_STAGED_SUBMISSION]
	subEngineCores = hl.CSFlagNames[hl.HL_CS_FLAGS_ENGINE_CORE_COMMAND]
	subEngines     = hl.CSFlagNames[hl.HL_CS_FLAGS_ENGINES_COMMAND]
	subMultiCS     = hl.WaitCSFlagNames[hl.HL_WAIT_CS_FLAGS_MULTI_CS]
	subInterrupt   = hl.WaitCSFlagNames[hl.HL_WAIT_CS_FLAGS_INTERRUPT]
	subMapBlock    = hl.MemOpNames[hl.HL_MEM_OP_MAP_BLOCK]
	subRegDMABuf   = hl.OutOfTreeMemOpNames[hl.HL_MEM_OP_REG_DMABUF_FD]
)

// unsupportedEPERM reports whether the driver answers EPERM to operation op
// sub only when the ASIC lacks the feature: hl_cs_sanity_checks (staged
// submission), cs_ioctl_engine_cores and cs_ioctl_engines (engine modes),
// hl_multi_cs_wait_ioctl, hl_interrupt_wait_ioctl (no user interrupts) and
// gaudi_get_hw_block_id (MAP_BLOCK on Gaudi), all in the Linux 6.12 driver,
// and the out-of-tree driver's map_device_va_from_dmabuf_fd (REG_DMABUF_FD
// built for a kernel without peer-to-peer dma-buf attachments).
func unsupportedEPERM(op, sub string) bool {
	switch op {
	case "CS":
		return sub == subStaged || sub == subEngineCores || sub == subEngines
	case "WAIT_CS":
		return sub == subMultiCS || sub == subInterrupt
	case "MEMORY":
		return sub == subMapBlock || sub == subRegDMABuf
	}
	return false
}

// closedErr is the error of operation op sub on a closed Device.
func closedErr(op, sub string, req uint) *Error {
	return &Error{Op: op, Sub: sub, Req: req, Errno: unix.EBADF, closed: true}
}

// errDeviceClosed is what attempt returns for a closed Device; wrapErr
// turns it into the operation's closedErr.
var errDeviceClosed = errors.New("ioctl: device closed")
