package ioctl

import (
	"bytes"
	"unsafe"

	"github.com/gaudi-go/gaudi/internal/hlsimproto"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Nodes that tools/hlsim serves (internal/hlsimproto).
//
// A served node is a regular file, where the driver's nodes are character
// devices, and answers hlsim's Hello request. OpenFile asks a regular file
// once; a kernel file of a served node then
//
//   - reports itself simulated (Simulated) with the device's PCI address
//     (PCIAddress), as a simulated file in the process does;
//   - takes each dma-buf that MEMORY EXPORT_DMABUF_FD made in the server
//     with pidfd_getfd and puts the client's descriptor in the reply;
//   - maps timestamp buffers at the offset the server keeps them at (a
//     regular file cannot be mapped from offset 2^63 on).

// served is what OpenFile learned from a served node.
type served struct {
	pidfd int // the server's, for pidfd_getfd
	pci   string
}

// probeServed returns what a served node at fd answers Hello, or nil for
// anything else (a device node is never asked).
func probeServed(fd int) *served {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil
	}
	var h hlsimproto.Hello
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), hlsimproto.HelloRequest, uintptr(unsafe.Pointer(&h)))
	if errno != 0 || h.Magic != hlsimproto.Magic {
		return nil
	}
	s := &served{pidfd: -1}
	if n := bytes.IndexByte(h.PCIAddress[:], 0); n >= 0 {
		s.pci = string(h.PCIAddress[:n])
	}
	if pidfd, err := unix.PidfdOpen(int(h.ServerPID), 0); err == nil {
		s.pidfd = pidfd
	}
	return s
}

// close releases the server's pidfd.
func (s *served) close() {
	if s != nil && s.pidfd >= 0 {
		unix.Close(s.pidfd)
		s.pidfd = -1
	}
}

// Simulated reports whether the file is a node tools/hlsim serves, for
// device.Device.Simulated.
func (f *kernelFile) Simulated() bool { return f.srv != nil }

// PCIAddress returns the PCI address of the device a served node stands
// for, or "" for a kernel node (whose address sysfs tells).
func (f *kernelFile) PCIAddress() string {
	if f.srv == nil {
		return ""
	}
	return f.srv.pci
}

// isExport reports whether a request is a MEMORY EXPORT_DMABUF_FD of the
// DRM encoding (the one served nodes speak), from its argument before the
// call.
func isExport(req uint, arg unsafe.Pointer) bool {
	return req == hl.DRM_IOCTL_HL_MEMORY && arg != nil && (*hl.MemArgs)(arg).In().Op == hl.HL_MEM_OP_EXPORT_DMABUF_FD
}

// takeExport replaces the server's descriptor in a successful export's
// reply with one of this process: pidfd_getfd of the server's, which the
// server is then told to close. A client that may not take it (ptrace
// access to the server is refused) gets that errno, and the export is
// dropped.
func (f *kernelFile) takeExport(arg unsafe.Pointer) error {
	out := (*hl.MemArgs)(arg).Out()
	theirs := out.FD()
	mine, err := -1, error(unix.ESRCH)
	if f.srv.pidfd >= 0 {
		mine, err = unix.PidfdGetfd(f.srv.pidfd, int(theirs), 0)
	}
	t := hlsimproto.Taken{FD: theirs}
	if errno, ok := err.(unix.Errno); ok {
		t.Errno = int32(errno)
	} else if err != nil {
		t.Errno = int32(unix.EIO)
	}
	unix.Syscall(unix.SYS_IOCTL, uintptr(f.fd), hlsimproto.TakenRequest, uintptr(unsafe.Pointer(&t)))
	if err != nil {
		out.SetFD(-1)
		return unix.Errno(t.Errno)
	}
	out.SetFD(int32(mine))
	return nil
}

// mmapOffset is where a served node keeps what the driver maps at offset.
func (f *kernelFile) mmapOffset(offset int64) int64 {
	if f.srv != nil && uint64(offset)&hlsimproto.TSBit != 0 {
		return int64(uint64(offset)&^hlsimproto.TSBit | hlsimproto.TSAliasBit)
	}
	return offset
}
