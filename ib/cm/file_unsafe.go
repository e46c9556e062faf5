package cm

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file holds the package's uses of unsafe: the addresses of
// response buffers, which commands carry as integers (the kernel writes
// there), and the write(2) of a command.

// addrOf returns the address of b[0] for the kernel. b must be a heap
// slice made by this package (heap objects do not move); the command's
// write keeps it alive with runtime.KeepAlive.
func addrOf(b []byte) uint64 {
	p := unsafe.Pointer(unsafe.SliceData(b))
	escape(p)
	return uint64(uintptr(p))
}

var sink struct {
	on bool
	p  unsafe.Pointer
}

// escape makes p escape to the heap.
func escape(p unsafe.Pointer) {
	if sink.on {
		sink.p = p
	}
}

// writeCmd writes the command b on fd; resp (which b's response field
// points at, or nil) is kept alive until the call returns.
func writeCmd(fd uintptr, b, resp []byte) error {
	_, _, errno := unix.Syscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	runtime.KeepAlive(b)
	runtime.KeepAlive(resp)
	if errno != 0 {
		return errno
	}
	return nil
}
