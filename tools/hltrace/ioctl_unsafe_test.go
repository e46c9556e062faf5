package main

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gaudi-go/gaudi/uapi/hl"
)

// This file is the one place in hltrace that issues ioctls, and only in
// tests: ioctl/ owns every ioctl on a device file, but these go to file
// descriptors that are not Gaudi, RDMA or dma-buf devices (/dev/null, a
// pipe, a memfd). The kernel rejects the requests (ENOTTY), which is all
// the tracer needs: it decodes the arguments at entry whatever the answer.

// rawIoctl issues ioctl(fd, req, arg) and returns the errno (0 on success).
// keep holds what arg points at, and what that points at, alive.
func rawIoctl(fd int, req uint32, arg unsafe.Pointer, keep ...any) unix.Errno {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
	runtime.KeepAlive(keep)
	return errno
}

// ioctlAt issues an ioctl whose argument is a raw address (for faults).
func ioctlAt(fd int, req uint32, addr uintptr) unix.Errno {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), addr)
	return errno
}

// addr returns the address of v for the uapi's __u64 pointer fields; the
// caller keeps v alive across the ioctl (Go's heap does not move).
func addr[T any](v *T) uint64 { return uint64(uintptr(unsafe.Pointer(v))) }

// ptr converts for rawIoctl.
func ptr[T any](v *T) unsafe.Pointer { return unsafe.Pointer(v) }

// sizeofHWIPInfo is the size of the HW_IP_INFO answer.
const sizeofHWIPInfo = unsafe.Sizeof(hl.InfoHWIPInfo{})
