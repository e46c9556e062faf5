package ioctl

import (
	"errors"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Sentinel errors for the conditions callers branch on. Errors returned by
// this package match them with errors.Is; the errno stays reachable too, so
// errors.Is(err, unix.EBUSY) and errors.Is(err, ErrDeviceBusy) both hold for
// a device that refused a call because it is busy.
var (
	// ErrDeviceBusy reports that the device cannot serve the caller right now:
	// opening failed with EBUSY because another process owns the compute
	// context, or an ioctl failed with EBUSY because the device is not
	// operational (in reset, malfunctioning or waiting for a reset). After the
	// latter the device is usually unusable until it is closed and reopened.
	ErrDeviceBusy = errors.New("device busy")

	// ErrInReset reports that opening failed with EAGAIN: the device is being
	// reset, scrubbed, or released by its previous owner. Opening again later
	// may succeed.
	ErrInReset = errors.New("device in reset")

	// ErrNotSupported reports that the file does not understand the request
	// (ENOTTY) or that the driver does not implement it (EOPNOTSUPP).
	ErrNotSupported = errors.New("not supported")

	// ErrTimeout reports a timeout detected by the driver or the device
	// (ETIMEDOUT), including a command submission that WAIT_CS reports as
	// timed out. A wait that merely ran out of its own time budget is not an
	// error; see Device.WaitCS.
	ErrTimeout = errors.New("timeout")

	// ErrClosed reports a call on a closed Device or File. It is os.ErrClosed,
	// so either sentinel may be used with errors.Is.
	ErrClosed = os.ErrClosed
)

// Error describes a failed device operation. It keeps the errno the kernel
// (or the simulator) returned and the operation that failed.
//
// Use errors.Is to test an Error against an errno or a sentinel, never ==:
//
//	errno        matches
//	EBUSY        ErrDeviceBusy
//	EAGAIN       ErrInReset, for Op "OPEN" only (for CS it means queues are full)
//	ENOTTY       ErrNotSupported
//	EOPNOTSUPP   ErrNotSupported
//	ETIMEDOUT    ErrTimeout
//	EBADF        ErrClosed
//
// EPERM is deliberately not mapped: the driver uses it both for "not allowed
// on this ASIC" and for "device disabled", which callers must not confuse
// with ErrNotSupported.
type Error struct {
	// Op is the operation: "INFO", "CB", "CS", "WAIT_CS", "MEMORY",
	// "DEBUG" for ioctls, "MMAP" and "MUNMAP" for mappings and "OPEN" for
	// opening the file.
	Op string
	// Sub names the sub-operation in the driver's spelling, such as
	// "HW_IP_INFO", "ALLOC" or "CREATE"; it may be empty. For Op "OPEN" it is
	// the path of the file.
	Sub string
	// Req is the ioctl request number that was issued, or 0.
	Req uint
	// Errno is the error number returned.
	Errno unix.Errno
}

// Error returns a short description such as
// "ioctl MEMORY ALLOC: cannot allocate memory".
func (e *Error) Error() string {
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
		return e.Errno == unix.EBUSY
	case ErrInReset:
		return e.Op == "OPEN" && e.Errno == unix.EAGAIN
	case ErrNotSupported:
		return e.Errno == unix.ENOTTY || e.Errno == unix.EOPNOTSUPP
	case ErrTimeout:
		return e.Errno == unix.ETIMEDOUT
	case ErrClosed:
		return e.Errno == unix.EBADF
	}
	return false
}
