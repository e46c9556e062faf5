package main

import (
	"errors"
	"strings"
	"unsafe"

	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// serveIoctl runs a client's request on its file. The kernel (FUSE's
// restricted ioctls) has copied in the _IOC_SIZE bytes of the argument
// when the request has _IOC_WRITE and copies back what the reply carries
// when it has _IOC_READ; pointers inside the argument are the client's
// and the file reaches them itself (sim.Device.OpenFor). The reply always
// carries the argument, also when the request fails, as drm_ioctl and
// _hl_ioctl copy it out whatever the handler returned, and the result is
// the negative errno (which the system call returns) or 0.
func serveIoctl(f *sim.File, cmd uint32, in, out []byte) int32 {
	size := max(len(in), len(out), int(cmd>>16&0x3fff), 8)
	// A buffer the garbage collector does not scan, aligned for the
	// argument structs: the pointer fields hold the client's addresses.
	words := make([]uint64, (size+7)/8)
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), size)
	copy(buf, in)
	err := f.Ioctl(uint(cmd), unsafe.Pointer(&words[0]))
	copy(out, buf)
	return -int32(errnoOf(err))
}

// errnoOf is the errno an ioctl answers for err: the simulator answers
// unix.Errno values; anything else is EIO.
func errnoOf(err error) unix.Errno {
	if err == nil {
		return 0
	}
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return unix.EIO
}

// info runs INFO op on device i's control file of the server into the
// size bytes at p; the answer stays zero when it fails.
func (s *server) info(i int, op uint32, p unsafe.Pointer, size uintptr) {
	f := s.control[i]
	if f == nil {
		return
	}
	a := hl.InfoArgs{ReturnPointer: hl.NewPointer(p), ReturnSize: uint32(size), Op: op}
	f.Ioctl(hl.DRM_IOCTL_HL_INFO, unsafe.Pointer(&a))
}

// resetCount asks device i for INFO RESET_COUNT.
func (s *server) resetCount(i int) hl.InfoResetCount {
	var r hl.InfoResetCount
	s.info(i, hl.HL_INFO_RESET_COUNT, unsafe.Pointer(&r), unsafe.Sizeof(r))
	return r
}

// cpucpVersion asks device i for HW_IP_INFO's firmware version.
func (s *server) cpucpVersion(i int) string {
	var r hl.InfoHWIPInfo
	s.info(i, hl.HL_INFO_HW_IP_INFO, unsafe.Pointer(&r), unsafe.Sizeof(r))
	v := string(r.CPUCPVersion[:])
	if n := strings.IndexByte(v, 0); n >= 0 {
		v = v[:n]
	}
	return v
}
