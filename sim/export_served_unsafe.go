package sim

import (
	"unsafe"

	"github.com/gaudi-go/gaudi/internal/hlsimproto"
	"golang.org/x/sys/unix"
)

// A dma-buf exported through a node tools/hlsim serves is a file of the
// server's node hlsim/dmabuf (internal/hlsimproto): it stands for the
// server's export, which it keeps until the file's last reference goes.
// The test hook reads it with hlsimproto.DMABufReadRequest.

// isServedDMABuf reports whether fd is a served dma-buf: a regular file
// (never a device node) that answers DMABufReadRequest.
func isServedDMABuf(fd int) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false
	}
	var r hlsimproto.DMABufRead
	return servedReadCall(fd, &r) == nil
}

// readServedDMABuf reads len(b) bytes at off of a served dma-buf, in
// requests of at most hlsimproto.DMABufReadMax bytes.
func readServedDMABuf(fd int, off int64, b []byte) (int, error) {
	if off < 0 {
		return 0, unix.EINVAL
	}
	var r hlsimproto.DMABufRead
	n := 0
	for n < len(b) {
		r.Offset = uint64(off) + uint64(n)
		r.Len = uint32(min(len(b)-n, hlsimproto.DMABufReadMax))
		if err := servedReadCall(fd, &r); err != nil {
			return n, err
		}
		if r.Len == 0 {
			break
		}
		n += copy(b[n:], r.Data[:r.Len])
	}
	return n, nil
}

func servedReadCall(fd int, r *hlsimproto.DMABufRead) error {
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), hlsimproto.DMABufReadRequest, uintptr(unsafe.Pointer(r))); e != 0 {
		return e
	}
	return nil
}
