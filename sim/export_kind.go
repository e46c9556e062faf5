package sim

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ExportKind is the kind of file a simulated dma-buf export
// (EXPORT_DMABUF_FD) handed out; see ExportKindOf.
type ExportKind int

const (
	// ExportMemfd is a file of the memfd that holds the exported device
	// memory, opened write-only (when exported read-only, a write-only
	// file of an empty, write-sealed memfd that stands for it, which
	// refuses writes with EPERM): like a Gaudi dma-buf it cannot be
	// mapped or read, but a writable one takes writes; it
	// is not a dma-buf (dma-buf ioctls answer ENOTTY, no device can
	// import it). The simulator makes it when the host has no
	// /dev/udmabuf or udmabuf refuses the range.
	ExportMemfd ExportKind = iota + 1
	// ExportUdmabuf is a real dma-buf that the kernel's udmabuf made of
	// that memfd's pages: mmappable, DMA_BUF_IOCTL_SYNC works, and kernel
	// importers (an RDMA NIC's REG_DMABUF_MR) see the device memory.
	ExportUdmabuf
	// ExportServed is a dma-buf of a node tools/hlsim serves: a file of
	// the server's node hlsim/dmabuf that stands for the server's export
	// until its last reference goes; read and write answer EINVAL, a
	// shared mapping ENODEV (export_served_unsafe.go).
	ExportServed
)

// String returns "memfd", "udmabuf" or "served".
func (k ExportKind) String() string {
	switch k {
	case ExportMemfd:
		return "memfd"
	case ExportUdmabuf:
		return "udmabuf"
	case ExportServed:
		return "served"
	}
	return "ExportKind(" + strconv.Itoa(int(k)) + ")"
}

// ErrNotExport is returned by ExportKindOf for a descriptor that is not
// a dma-buf export of the simulator.
var ErrNotExport = errors.New("not a dma-buf export of the simulator")

// ExportKindOf reports the kind of file fd, a descriptor returned by the
// simulator's EXPORT_DMABUF_FD (or a duplicate of one), is. It reads
// /proc/self/fd and /proc/self/fdinfo; a descriptor of anything else
// gives an error wrapping ErrNotExport, a closed one an error wrapping
// the errno of /proc. It is safe for concurrent use.
func ExportKindOf(fd int) (ExportKind, error) {
	link, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return 0, fmt.Errorf("export kind: %w", err)
	}
	switch {
	case isMemfd(link, exportName), isMemfd(link, witnessName):
		return ExportMemfd, nil
	case strings.HasPrefix(link, "/dmabuf:"), link == "anon_inode:dmabuf":
		// Any dma-buf: ours are the ones udmabuf exported.
		info, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(fd))
		if err != nil {
			return 0, fmt.Errorf("export kind: %w", err)
		}
		for line := range bytes.Lines(info) {
			if f := bytes.Fields(line); len(f) == 2 && string(f[0]) == "exp_name:" && string(f[1]) == "udmabuf" {
				return ExportUdmabuf, nil
			}
		}
	default:
		if isServedDMABuf(fd) {
			return ExportServed, nil
		}
	}
	return 0, fmt.Errorf("export kind of %q: %w", link, ErrNotExport)
}

// TestHookReadDMABuf is a test hook, not something a Gaudi dma-buf
// allows: it reads len(b) bytes at offset off of fd, a dma-buf the
// simulator exported (or a duplicate of one, also in a process it was
// passed to), as the device memory holds them. The CPU cannot read or
// map a Gaudi dma-buf (the driver's dma-buf has no mmap, and dma-buf files
// no read), and neither can it the simulator's; tests and examples that
// run on the simulator use this hook to check what an importer would get.
// It reopens the file through /proc/self/fd (a memfd export) or maps it
// (an udmabuf export), or asks the server (a served one). A read-only memfd export holds no bytes of its own
// (export_witness.go): only the process that exported it can read it.
func TestHookReadDMABuf(fd int, off int64, b []byte) (int, error) {
	kind, err := ExportKindOf(fd)
	if err != nil {
		return 0, err
	}
	if kind == ExportServed {
		return readServedDMABuf(fd, off, b)
	}
	if kind == ExportUdmabuf {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return 0, err
		}
		if off < 0 || off > st.Size {
			return 0, unix.EINVAL
		}
		n := min(int64(len(b)), st.Size-off)
		start := off &^ (pageSize - 1)
		mem, err := unix.Mmap(fd, start, int(off+n-start), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return 0, err
		}
		defer unix.Munmap(mem)
		return copy(b, mem[off-start:]), nil
	}
	return readExportData(fd, off, b)
}

// isMemfd reports whether a /proc/self/fd link names a memfd called name.
func isMemfd(link, name string) bool {
	return strings.HasPrefix(link, "/memfd:"+name+" ") || link == "/memfd:"+name
}
