package sim

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ExportKind is the kind of file a simulated dma-buf export
// (EXPORT_DMABUF_FD) handed out; see ExportKindOf.
type ExportKind int

const (
	// ExportMemfd is a file of the memfd that holds the exported device
	// memory: it can be read, written and mmapped, but it is not a
	// dma-buf (dma-buf ioctls answer ENOTTY, no device can import it).
	// The simulator makes it when the host has no /dev/udmabuf or
	// udmabuf refuses the range.
	ExportMemfd ExportKind = iota + 1
	// ExportUdmabuf is a real dma-buf that the kernel's udmabuf made of
	// that memfd's pages: mmappable, DMA_BUF_IOCTL_SYNC works, and kernel
	// importers (an RDMA NIC's REG_DMABUF_MR) see the device memory.
	ExportUdmabuf
)

// String returns "memfd" or "udmabuf".
func (k ExportKind) String() string {
	switch k {
	case ExportMemfd:
		return "memfd"
	case ExportUdmabuf:
		return "udmabuf"
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
	case strings.HasPrefix(link, "/memfd:"+exportName+" "), link == "/memfd:"+exportName:
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
	}
	return 0, fmt.Errorf("export kind of %q: %w", link, ErrNotExport)
}
