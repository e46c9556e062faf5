package sim

import (
	"errors"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The driver reaches user memory with copy_to_user and copy_from_user,
// which fail with EFAULT on a bad address. The simulator runs in the
// caller's process and writes with process_vm_writev on its own pid: the
// kernel checks the addresses, so a bad pointer gives EFAULT instead of
// crashing the program. Reads (copyIn) copy directly and recover from a
// fault instead (copyin_unsafe.go).

var selfPID = os.Getpid()

// directCopy is set when process_vm_writev is unavailable (seccomp, old kernel);
// copies then go through the pointer directly and cannot detect EFAULT.
var directCopy atomic.Bool

// copyOut writes b to the caller's memory at addr.
func copyOut(addr uint64, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if addr == 0 {
		return unix.EFAULT
	}
	if directCopy.Load() {
		copy(unsafe.Slice(userPtr(addr), len(b)), b)
		return nil
	}
	local := []unix.Iovec{{Base: &b[0]}}
	local[0].SetLen(len(b))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}
	n, err := unix.ProcessVMWritev(selfPID, local, remote, 0)
	return vmResult(n, len(b), err, func() error { return copyOut(addr, b) })
}

func vmResult(n, want int, err error, retry func() error) error {
	switch {
	case err == nil && n == want:
		return nil
	case err == nil, errors.Is(err, unix.EFAULT):
		return unix.EFAULT
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM):
		directCopy.Store(true)
		return retry()
	}
	return unix.EFAULT
}

// userPtr turns a user address from an ioctl argument into a pointer. The
// address comes from the caller, who keeps the memory alive for the call.
func userPtr(addr uint64) *byte {
	return *(**byte)(unsafe.Pointer(&addr))
}

// structBytes views a struct as bytes, for copying it out.
func structBytes[T any](v *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
}

// sliceBytes views the elements of a slice as bytes.
func sliceBytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), uintptr(len(s))*unsafe.Sizeof(s[0]))
}

// hostBytes views n bytes of the caller's memory at addr, for DMA to and
// from host mappings. The caller mapped the memory and keeps it mapped.
func hostBytes(addr, n uint64) []byte {
	return unsafe.Slice(userPtr(addr), n)
}
