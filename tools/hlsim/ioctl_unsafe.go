package main

import (
	"errors"
	"strings"
	"unsafe"

	"github.com/gaudi-go/gaudi/internal/hlsimproto"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// serveIoctl runs a client's request on its open file. The kernel (FUSE's
// restricted ioctls) has copied in the _IOC_SIZE bytes of the argument
// when the request has _IOC_WRITE and copies back what the reply carries
// when it has _IOC_READ; pointers inside the argument are the client's
// and the file reaches them itself (sim.Device.OpenFor). The reply always
// carries the argument, also when the request fails, as drm_ioctl and
// _hl_ioctl copy it out whatever the handler returned, and the result is
// the negative errno (which the system call returns) or 0.
//
// hlsim's own requests (internal/hlsimproto) are answered here, and a
// dma-buf export's descriptor is kept for the client to take.
func (s *server) serveIoctl(of *openFile, cmd uint32, in, out []byte, cancel <-chan struct{}) int32 {
	switch cmd {
	case hlsimproto.HelloRequest:
		return s.hello(of, out)
	case hlsimproto.TakenRequest:
		return s.taken(of, in)
	}
	size := max(len(in), len(out), int(cmd>>16&0x3fff), 8)
	// A buffer the garbage collector does not scan, aligned for the
	// argument structs: the pointer fields hold the client's addresses.
	// It covers the largest struct the checks below read, zero past what
	// the client sent, as the simulator (drm_ioctl) zero-extends a short
	// argument.
	words := make([]uint64, (max(size, int(argMax))+7)/8)
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), size)
	copy(buf, in)
	arg := unsafe.Pointer(&words[0])
	export := sameRequest(cmd, hl.DRM_IOCTL_HL_MEMORY) && (*hl.MemArgs)(arg).In().Op == hl.HL_MEM_OP_EXPORT_DMABUF_FD
	var exportFlags int
	if export {
		exportFlags = int((*hl.MemArgs)(arg).In().Flags)
	}
	if sameRequest(cmd, hl.DRM_IOCTL_HL_INFO) && (*hl.InfoArgs)(arg).Op == hl.HL_INFO_REGISTER_EVENTFD && !of.ctl {
		// The eventfd is a descriptor of the client: the device signals
		// the server's duplicate of it.
		a := (*hl.InfoArgs)(arg)
		theirs := a.Eventfd()
		mine, err := s.clientFD(of, int(int32(theirs)))
		if err == nil {
			a.SetEventfd(uint32(mine))
			err = of.f.Ioctl(uint(whole(cmd, unsafe.Sizeof(*a))), arg)
			unix.Close(mine)
			a.SetEventfd(theirs)
		}
		copy(out, buf)
		return -int32(errnoOf(err))
	}
	if sameRequest(cmd, hl.DRM_IOCTL_HL_MEMORY) && (*hl.MemArgs)(arg).In().Op == hl.HL_MEM_OP_REG_DMABUF_FD && !of.ctl {
		err := s.regDMABuf(of, cmd, (*hl.MemRegDmabufFDArgs)(arg))
		copy(out, buf)
		return -int32(errnoOf(err))
	}
	// A wait ends with EINTR when the kernel interrupts the request (the
	// caller got a signal): a killed client's thread stays in D state
	// until its request is answered (fs/fuse/dev.c request_wait_answer
	// waits uninterruptibly once the server read it).
	req := cmd
	if export {
		// The export's descriptor must come back into the server's
		// argument whatever size the client encoded (exported keeps it).
		req = whole(cmd, unsafe.Sizeof(hl.MemArgs{}))
	}
	refusable := sameRequest(cmd, hl.DRM_IOCTL_HL_MEMORY) && releasePending(of, arg)
	gen := s.releaseGen()
	err := of.f.IoctlInterruptible(uint(req), arg, cancel)
	if err != nil && refusable {
		err = s.afterRelease(of, err, gen, func() error {
			copy(buf, in)
			return of.f.IoctlInterruptible(uint(req), arg, cancel)
		})
	}
	if export && err == nil {
		err = s.exported(of, (*hl.MemArgs)(arg).Out(), exportFlags)
	}
	copy(out, buf)
	return -int32(errnoOf(err))
}

// argMax is the size of the largest argument struct serveIoctl reads.
const argMax = max(unsafe.Sizeof(hl.MemArgs{}), unsafe.Sizeof(hl.InfoArgs{}), unsafe.Sizeof(hl.MemRegDmabufFDArgs{}))

// sameRequest reports whether cmd is request req with any encoded size or
// direction: the simulator, as drm_ioctl, runs a request by its type and
// number whatever size the caller encodes, so the server recognises the
// requests whose descriptors it must translate the same way (by the whole
// word, another size went through untranslated and the simulator took the
// client's number in the server's own table).
func sameRequest(cmd, req uint32) bool { return cmd&0xffff == req&0xffff }

// whole returns request cmd encoded with the driver's argument size and
// both directions, for a request whose argument the server translated:
// the simulator reads the translated descriptor, which a shorter or
// write-less encoding would hide from it (it would zero-extend the
// argument, and take 0 for the server's descriptor 0), while the reply
// carries no more than the client's encoding lets through (the kernel
// copies back what it asked for).
func whole(cmd uint32, size uintptr) uint32 {
	return cmd&0xffff | 3<<30 | uint32(size)<<16
}

// regDMABuf runs MEMORY REG_DMABUF_FD with the client's descriptor: the
// number in the argument is the client's, so the server takes a duplicate
// of that descriptor from the client (pidfd_getfd, as for
// REGISTER_EVENTFD), never a number of its own table; the duplicate shares
// the client's open file, so its access mode (a read-only export imports
// read-only) is the client's. A number the client does not have is EBADF,
// as dma_buf_get answers. The simulator keeps its own reference and
// bounds the imports per file (sim.MaxServedImports).
func (s *server) regDMABuf(of *openFile, cmd uint32, a *hl.MemRegDmabufFDArgs) error {
	theirs := a.FD
	mine, err := s.clientFD(of, int(int32(theirs)))
	if err != nil {
		a.FD = theirs
		return err
	}
	if own := s.servedExport(mine); own >= 0 {
		// A served dma-buf: the import takes the export it stands for.
		unix.Close(mine)
		mine = own
	}
	a.FD = uint64(mine)
	err = of.f.Ioctl(uint(whole(cmd, unsafe.Sizeof(*a))), unsafe.Pointer(a))
	unix.Close(mine)
	return err
}

// hello answers hlsimproto.Hello: the client knows the protocol and can
// take dma-bufs.
func (s *server) hello(of *openFile, out []byte) int32 {
	if len(out) < int(unsafe.Sizeof(hlsimproto.Hello{})) {
		return -int32(unix.EINVAL)
	}
	h := (*hlsimproto.Hello)(unsafe.Pointer(&out[0]))
	*h = hlsimproto.Hello{Magic: hlsimproto.Magic, Version: hlsimproto.Version, ServerPID: int32(unix.Getpid()), Device: uint32(of.dev)}
	copy(h.PCIAddress[:len(h.PCIAddress)-1], s.sys.Device(of.dev).Config().PCIAddress)
	s.mu.Lock()
	of.hello = true
	s.mu.Unlock()
	return 0
}

// exported keeps a served dma-buf of the export (wrapExport) for the
// client to take, or refuses the export to a client that cannot take it.
func (s *server) exported(of *openFile, out *hl.MemOut, flags int) error {
	fd := int(out.FD())
	s.mu.Lock()
	hello := of.hello
	s.mu.Unlock()
	if hello {
		var err error
		if fd, err = s.wrapExport(of, fd, flags); err != nil {
			out.SetFD(-1)
			return err
		}
		out.SetFD(int32(fd))
	}
	s.mu.Lock()
	if hello {
		if of.exports == nil {
			of.exports = map[int]bool{}
		}
		of.exports[fd] = true
	}
	s.mu.Unlock()
	if !hello {
		unix.Close(fd)
		out.SetFD(-1)
		s.log.Printf("process %d exported a dma-buf of %s but cannot receive the descriptor, which is the server's: refused with EOPNOTSUPP (a client takes it with pidfd_getfd after saying Hello, see internal/hlsimproto; the Go library does)", of.pid, of.f.Name())
		return unix.EOPNOTSUPP
	}
	return nil
}

// taken closes the server's copy of a descriptor the client took.
func (s *server) taken(of *openFile, in []byte) int32 {
	if len(in) < int(unsafe.Sizeof(hlsimproto.Taken{})) {
		return -int32(unix.EINVAL)
	}
	t := *(*hlsimproto.Taken)(unsafe.Pointer(&in[0]))
	s.mu.Lock()
	ok := of.exports[int(t.FD)]
	delete(of.exports, int(t.FD))
	s.mu.Unlock()
	if !ok {
		return -int32(unix.EBADF)
	}
	unix.Close(int(t.FD))
	if t.Errno != 0 {
		s.log.Printf("process %d could not take the dma-buf the server exported for it (pidfd_getfd: %v): it needs ptrace access to the server (the same user, or CAP_SYS_PTRACE)", of.pid, unix.Errno(t.Errno))
	}
	return 0
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
