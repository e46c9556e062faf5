package ioctl

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// File is an open device file: the kernel's habanalabs node or a software
// device that obeys the same rules. Everything above this package talks to a
// Gaudi through a File, so the same code runs on hardware and on a simulator.
//
// Implementations report failures as a unix.Errno, the value the kernel
// would return, and must be safe for concurrent use. After Close has started,
// Ioctl and Mmap must not touch the underlying object; they return EBADF, as
// the kernel does for a closed descriptor. A Device answers ErrClosed
// itself once it is closed, without calling the File, so an EBADF a File
// returns reaches the caller as a plain errno, never as ErrClosed.
type File interface {
	// Ioctl issues request req with the argument at arg and returns nil or
	// the errno. Memory that arg points at, directly or through 64-bit
	// addresses inside it, must stay valid for the whole call.
	Ioctl(req uint, arg unsafe.Pointer) error

	// Mmap maps length bytes of the file at offset, as mmap(2) does.
	Mmap(offset int64, length int, prot, flags int) ([]byte, error)

	// Munmap removes a mapping returned by Mmap. A mapping outlives Close,
	// so Munmap keeps working after the file is closed.
	Munmap(b []byte) error

	// Close releases the file. It waits for calls in flight, and closing
	// twice does nothing and returns nil.
	Close() error

	// Name returns the path of the file, or a name such as "sim:accel0" for a
	// software device.
	Name() string
}

// Ioctl implements File.
func (f *kernelFile) Ioctl(req uint, arg unsafe.Pointer) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.fd < 0 {
		return unix.EBADF
	}
	return f.ioctlOpen(req, arg)
}

// ioctlOpen is Ioctl for a caller that keeps f open for the call itself: a
// Device that owns f, whose in-flight gate (Device.acquire) already keeps
// its Close, the only one of f, from running during the call. It spares
// the second gate's two atomic read-modify-writes per ioctl (about 25 ns
// on the two-core test machine; issue 29).
func (f *kernelFile) ioctlOpen(req uint, arg unsafe.Pointer) error {
	export := f.srv != nil && isExport(req, arg)
	// The conversion of arg to uintptr happens in the call expression, which
	// keeps the object it points at alive until the system call returns.
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(f.fd), uintptr(req), uintptr(arg))
	if errno != 0 {
		return errno
	}
	if export {
		return f.takeExport(arg)
	}
	return nil
}
