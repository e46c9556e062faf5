package ioctl

import (
	"runtime"
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/dmabuf"
	"golang.org/x/sys/unix"
)

// SetDMABufName names a dma-buf (DMA_BUF_SET_NAME), so /proc/<pid>/fdinfo
// and debugfs show what it is. Names longer than DMA_BUF_NAME_LEN-1 bytes
// are cut. Files that are not dma-bufs answer ENOTTY; a dma-buf already
// attached to a device may answer EBUSY. Errors are *Error values with Op
// "DMA_BUF_SET_NAME".
func SetDMABufName(fd int, name string) error {
	if len(name) > dmabuf.DMA_BUF_NAME_LEN-1 {
		name = name[:dmabuf.DMA_BUF_NAME_LEN-1]
	}
	b := append([]byte(name), 0)
	for {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(dmabuf.DMA_BUF_SET_NAME), uintptr(unsafe.Pointer(&b[0])))
		runtime.KeepAlive(b)
		switch errno {
		case 0:
			return nil
		case unix.EINTR:
			continue
		}
		return &Error{Op: "DMA_BUF_SET_NAME", Sub: name, Req: uint(dmabuf.DMA_BUF_SET_NAME), Errno: errno}
	}
}
