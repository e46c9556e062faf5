package sim

import (
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/dmabuf"
	"golang.org/x/sys/unix"
)

// udmabufPath is the node of the kernel's udmabuf driver, which turns
// memfd pages into a dma-buf. A variable so tests can make it absent.
var udmabufPath = "/dev/udmabuf"

// exportName is the name exports carry: the memfd's, and the dma-buf's
// (DMA_BUF_SET_NAME), so /proc/<pid>/fd shows "/memfd:gaudi-sim-dmabuf"
// or "/dmabuf:gaudi-sim-dmabuf".
const exportName = "gaudi-sim-dmabuf"

// udmabufExport makes a dma-buf of all of the segment's memfd through
// /dev/udmabuf: the kernel pins the memfd's pages and hands out a real
// dma-buf of them, so the device (the DRAM mapping over the same pages)
// and the dma-buf stay coherent. The node is opened for the call only, so
// exporting leaves no descriptor behind but the dma-buf. The dma-buf is
// always read-write; flags' O_CLOEXEC and O_NONBLOCK are honoured. It
// fails when the node is missing or the kernel refuses: udmabuf takes
// only page-aligned ranges of a memfd sealed against shrinking and not
// against writing, and by default at most 64 MiB (module parameter
// size_limit_mb).
func udmabufExport(s *segment, flags int) (int, error) {
	dev, err := unix.Open(udmabufPath, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(dev)
	arg := dmabuf.UdmabufCreate{Memfd: uint32(s.fd), Offset: 0, Size: s.size}
	if flags&unix.O_CLOEXEC != 0 {
		arg.Flags = dmabuf.UDMABUF_FLAGS_CLOEXEC
	}
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(dev), dmabuf.UDMABUF_CREATE, uintptr(unsafe.Pointer(&arg)))
	if errno != 0 {
		return -1, errno
	}
	fd := int(r)
	// The name only helps people reading /proc; a kernel that refuses it
	// still made a good dma-buf.
	name := [len(exportName) + 1]byte{}
	copy(name[:], exportName)
	unix.Syscall(unix.SYS_IOCTL, uintptr(fd), dmabuf.DMA_BUF_SET_NAME, uintptr(unsafe.Pointer(&name[0])))
	if flags&unix.O_NONBLOCK != 0 {
		if err := unix.SetNonblock(fd, true); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}
