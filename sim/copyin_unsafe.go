package sim

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// copyIn reads len(b) bytes of the caller's memory at addr into b, as
// copy_from_user does: a bad address gives EFAULT (process_vm_readv checks
// it) instead of a crash.
func copyIn(addr uint64, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if addr == 0 {
		return unix.EFAULT
	}
	if directCopy.Load() {
		copy(b, unsafe.Slice(userPtr(addr), len(b)))
		return nil
	}
	local := []unix.Iovec{{Base: &b[0]}}
	local[0].SetLen(len(b))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}
	n, err := unix.ProcessVMReadv(selfPID, local, remote, 0)
	return vmResult(n, len(b), err, func() error { return copyIn(addr, b) })
}
