package scenario

import (
	"unsafe"

	"github.com/gaudi-go/gaudi/internal/hlsimproto"
	"golang.org/x/sys/unix"
)

// hello sends hlsim's Hello on fd.
func hello(fd uintptr, h *hlsimproto.Hello) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, fd, hlsimproto.HelloRequest, uintptr(unsafe.Pointer(h)))
	if errno != 0 {
		return errno
	}
	return nil
}
