package sim

import (
	"runtime"
	"runtime/debug"
	"unsafe"

	"golang.org/x/sys/unix"
)

// copyIn reads len(b) bytes of the caller's memory at addr into b, as
// copy_from_user does: a bad address gives EFAULT instead of a crash.
//
// The simulator runs in the caller's process, so like copy_from_user it
// reads the memory directly, without a system call: the copy runs with
// runtime/debug.SetPanicOnFault, which turns a fault on an unmapped or
// unreadable address into a panic that copyIn recovers as EFAULT.
func copyIn(addr uint64, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if addr == 0 || addr+uint64(len(b)) < addr {
		return unix.EFAULT
	}
	return faultingCopy(b, unsafe.Slice(userPtr(addr), len(b)))
}

// faultingCopy copies src to dst, returning EFAULT when an access faults.
func faultingCopy(dst, src []byte) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			if _, ok := r.(runtime.Error); !ok {
				panic(r)
			}
			err = unix.EFAULT
		}
	}()
	copy(dst, src)
	return nil
}
