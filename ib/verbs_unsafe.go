package ib

import (
	"runtime"
	"sync"
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/rdma"
	"golang.org/x/sys/unix"
)

// This file holds the package's only uses of unsafe: the address of a
// request's payload (stored into the request as an integer, which the
// kernel reads) and the uverbs system calls themselves.
//
// Addresses are only ever taken of slices made by request.encode or
// newWriteCmd (and of mmap'd memory the caller registers). addrOf makes
// the slice escape, so it lives on the heap, where objects do not move,
// and the system call wrappers keep it alive with runtime.KeepAlive.

// addrOf returns the address of b[off] as the kernel sees it.
func addrOf(b []byte, off int) uint64 {
	p := unsafe.Pointer(unsafe.SliceData(b))
	forceEscape(p)
	return uint64(uintptr(p) + uintptr(off))
}

// escapeSink is never written; the store in forceEscape is enough for the
// compiler to allocate what reaches it on the heap.
var escapeSink struct {
	enabled bool
	p       unsafe.Pointer
}

// forceEscape makes p escape at the cost of a load.
func forceEscape(p unsafe.Pointer) {
	if escapeSink.enabled {
		escapeSink.p = p
	}
}

// payloadAt returns the n bytes of b at address addr, or nil when the
// range is not inside b. Fakes of the kernel use it to follow a request's
// pointers, which always point into the request's own slice.
func payloadAt(b []byte, addr uint64, n int) []byte {
	if len(b) == 0 || n < 0 {
		return nil
	}
	base := addrOf(b, 0)
	if addr < base || addr-base > uint64(len(b)) || uint64(n) > uint64(len(b))-(addr-base) {
		return nil
	}
	off := int(addr - base)
	return b[off : off+n]
}

// verbsFile is the seam between the package and the kernel: an open
// uverbs character device. Tests substitute a fake that decodes the bytes.
// Implementations must be safe for concurrent use and return the errno
// (a unix.Errno) the kernel would.
type verbsFile interface {
	// ioctl issues RDMA_VERBS_IOCTL on b, a request laid out by encode.
	ioctl(b []byte) error
	// write issues write(2) of b, a legacy command laid out by
	// newWriteCmd (b[:n]; the rest is its response area).
	write(b []byte, n int) error
	// mmap maps size bytes of the file at offset off, shared and
	// read-write (a driver's queue), and munmap unmaps what mmap returned.
	mmap(off int64, size int) ([]byte, error)
	munmap(b []byte) error
	// close releases the file; closing twice returns nil.
	close() error
}

// kernelVerbs is a verbsFile backed by a descriptor. Calls hold mu for
// reading and Close takes it for writing, so a descriptor number is never
// used after it was closed (and possibly reused by another open).
type kernelVerbs struct {
	mu sync.RWMutex
	fd int // -1 once closed
}

// openVerbs opens a uverbs node read-write with close-on-exec.
func openVerbs(path string) (*kernelVerbs, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &kernelVerbs{fd: fd}, nil
	}
}

func (k *kernelVerbs) ioctl(b []byte) error {
	k.mu.RLock()
	defer k.mu.RUnlock()
	if k.fd < 0 {
		return unix.EBADF
	}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(k.fd), uintptr(rdma.RDMA_VERBS_IOCTL), uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	runtime.KeepAlive(b)
	if errno != 0 {
		return errno
	}
	return nil
}

func (k *kernelVerbs) write(b []byte, n int) error {
	k.mu.RLock()
	defer k.mu.RUnlock()
	if k.fd < 0 {
		return unix.EBADF
	}
	r, _, errno := unix.Syscall(unix.SYS_WRITE, uintptr(k.fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(n))
	runtime.KeepAlive(b)
	if errno != 0 {
		return errno
	}
	if int(r) != n {
		return unix.EIO
	}
	return nil
}

func (k *kernelVerbs) mmap(off int64, size int) ([]byte, error) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	if k.fd < 0 {
		return nil, unix.EBADF
	}
	return unix.Mmap(k.fd, off, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

func (k *kernelVerbs) munmap(b []byte) error { return unix.Munmap(b) }

func (k *kernelVerbs) close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fd < 0 {
		return nil
	}
	fd := k.fd
	k.fd = -1
	return unix.Close(fd)
}
