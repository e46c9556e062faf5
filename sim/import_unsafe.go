package sim

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Importing a dma-buf (MEMORY REG_DMABUF_FD, out-of-tree driver only).
//
// map_device_va_from_dmabuf_fd (common/memory.c of
// HabanaAI/drivers.accel.habanalabs.kernel @e20162dd26ce2d0de9f0d5674fb11c7780ee1a49,
// in its "DO NOT UPSTREAM" block) takes reg_dmabuf_fd {fd, length}:
// dma_buf_get(fd) fails with EBADF for a bad descriptor and EINVAL for a
// file that is not a dma-buf; a dma-buf smaller than length is EINVAL; it
// attaches dynamically, allowing peer to peer, takes a block of length
// bytes from the context's host VA range (the PMMU's page size, no hint;
// ENOMEM when none is free), maps the dma-buf's pages there and answers
// the block's address plus the first page's offset (0 for page-aligned
// buffers) in out.device_virt_addr, after clearing the arguments
// (hl_mem_ioctl). UNMAP of that address detaches and drops the dma-buf;
// so does the end of the context. Built for a kernel without
// _HAS_PEER2PEER the op answers EPERM before looking at anything.
//
// The simulator's engines reach the imported memory through a shared
// mapping it makes of the buffer in the calling process, so the importing
// device's DMA engines copy to and from the exporter's memory:
//
//   - an export of a simulated device given as a file of its memfd
//     (ExportMemfd), in this process or received from another one: the
//     simulator reopens the memfd read-write through /proc/self/fd and maps
//     it; its pages are the exporting device's memory wherever that
//     device is simulated, so both stay coherent;
//   - any dma-buf that can be mapped (ExportUdmabuf exports, other
//     udmabufs): a duplicate of the descriptor is mapped.
//
// A context may import its own export. On the driver that is a cycle no
// close breaks: the dma-buf holds the compute file (export_dmabuf's
// get_file, put by hl_release_dmabuf), the import holds the dma-buf
// (dma_buf_get, put by UNMAP or the context's end), and the context ends
// only when the file is released. Unless the address is unmapped first,
// the context, its memory and the compute node stay taken after every
// descriptor is closed (Open answers EBUSY); as the code reads, nothing
// but a reboot gives them back.
// The simulator keeps the cycle (the context lingers, device.go) until
// System.Close, which ends it.
//
// Differences from the driver, all of them refusals: a dma-buf the
// simulator cannot map answers EOPNOTSUPP (the driver maps the exporter's
// pages without the CPU); length 0 answers EINVAL (the driver reserves an
// empty block and maps the whole dma-buf past it); and the simulator maps
// length rounded up to whole pages where the driver maps every page of
// the dma-buf whatever length says. A simulator export imported by
// another process stays coherent while it is exported: an udmabuf export
// whose every descriptor in the exporting process was closed may be moved
// back into the exporter's DRAM (see export.go).

// importMap is what an imported dma-buf's mapping holds: the descriptor
// the simulator keeps (a reference, as dma_buf_get takes one) and its
// mapping of the buffer.
type importMap struct {
	fd       int
	mem      []byte
	readOnly bool // the importer's descriptor was not open for writing
	// view, of the device memory dram, is the export imported when it is
	// a view (export_view.go): mem maps its runs, fd is its witness.
	view *view
	dram *sparseMem
}

// MaxServedImports bounds the dma-bufs one file opened for another
// process (OpenFor: a client of tools/hlsim) may have imported
// (REG_DMABUF_FD) at once: each holds a descriptor and a mapping in the
// server. Beyond it the import answers ENOMEM, as the driver does when
// no host VA block is free. A served file's imports are released with
// its last close (Device.release), so importing its own export does not
// keep the device taken.
const MaxServedImports = 256

// importCount returns the number of imported dma-bufs mapped. c.mu must
// not be held.
func (c *context) importCount() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := 0
	for _, m := range c.index {
		if m.imported != nil {
			n++
		}
	}
	return n
}

// dropImports unmaps every imported dma-buf, as UNMAP of each would.
func (c *context) dropImports() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range slices.Clone(c.index) {
		if m.imported == nil {
			continue
		}
		c.remove(m)
		c.ranges[m.rangeType].add(m.vaStart, m.vaStart+m.size-1)
		m.imported.release()
	}
}

// release unmaps and closes the buffer.
func (im *importMap) release() {
	if im.view != nil {
		unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(im.mem)), uintptr(len(im.mem)))
	} else {
		unix.Munmap(im.mem)
	}
	unix.Close(im.fd)
}

// memRegDMABuf is HL_MEM_OP_REG_DMABUF_FD: the arguments are cleared and
// the address (0 on failure) written back.
func (f *File) memRegDMABuf(a *hl.MemArgs) error {
	v := (*hl.MemRegDmabufFDArgs)(unsafe.Pointer(a))
	fd, length := int32(v.FD), v.Length // the driver's fd is an int
	va, err := f.ctx.importDMABuf(int(fd), length)
	*a = hl.MemArgs{}
	a.Out().SetDeviceVirtAddr(va)
	return err
}

// importDMABuf is map_device_va_from_dmabuf_fd.
func (c *context) importDMABuf(fd int, length uint64) (uint64, error) {
	d := c.dev
	if d.noP2P {
		return 0, unix.EPERM
	}
	if c.rem != nil && c.importCount() >= MaxServedImports {
		return 0, unix.ENOMEM
	}
	im, size, err := openImport(fd)
	if err != nil {
		return 0, err
	}
	v := &d.prof.vm
	total := (length + v.hostPage - 1) / v.hostPage * v.hostPage
	if size < length || length == 0 || total < length {
		unix.Close(im.fd)
		return 0, unix.EINVAL
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.ranges[vaHost]
	start := r.get(v, vaRequest{size: total, align: v.hostPage, rangeType: vaHost})
	if start == 0 {
		unix.Close(im.fd)
		return 0, unix.ENOMEM
	}
	share := unix.MAP_SHARED
	if im.readOnly {
		// Device writes land in pages of the simulator's own, never in
		// the exporter's memory.
		share = unix.MAP_PRIVATE
	}
	var mem []byte
	if im.view != nil {
		mem, err = im.dram.mapView(im.view, share)
	} else {
		mem, err = unix.Mmap(im.fd, 0, int(total), unix.PROT_READ|unix.PROT_WRITE, share)
	}
	if err != nil {
		r.add(start, start+total-1)
		unix.Close(im.fd)
		return 0, unix.EOPNOTSUPP
	}
	im.mem = mem
	c.insert(&mapping{
		va:        start,
		vaStart:   start,
		size:      total,
		pageSize:  v.hostPage,
		rangeType: vaHost,
		host:      true,
		hostAddr:  uint64(uintptr(unsafe.Pointer(unsafe.SliceData(mem)))),
		hostSize:  length,
		imported:  im,
	})
	return start, nil
}

// openImport is dma_buf_get for the simulator: it returns a descriptor
// of its own for the buffer fd names, and the buffer's size. EBADF for a
// descriptor that is not open, EINVAL for a file that is neither a
// dma-buf nor a simulator export.
func openImport(fd int) (*importMap, uint64, error) {
	var st unix.Stat_t
	if fd < 0 || unix.Fstat(fd, &st) != nil {
		return nil, 0, unix.EBADF
	}
	link, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return nil, 0, unix.EBADF
	}
	// The importer's access mode: a writable export is a write-only file
	// of the memfd, a read-only one a file of its witness
	// (export_witness.go); a descriptor opened read-only or O_PATH
	// imports read-only.
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return nil, 0, unix.EBADF
	}
	readOnly := fl&unix.O_PATH != 0 || fl&unix.O_ACCMODE == unix.O_RDONLY
	var own int
	switch {
	case isMemfd(link, witnessName):
		// A read-only export, the segment it stands for read-only
		// (export_witness.go), or a view (export_view.go), which the
		// import maps from the device memory and holds through a
		// duplicate of the witness.
		w, ok := witnessOf(fd)
		if !ok {
			return nil, 0, unix.EOPNOTSUPP
		}
		if w.v != nil {
			own, err = unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
			if err != nil {
				return nil, 0, unix.ENOMEM
			}
			return &importMap{fd: own, readOnly: readOnly || w.v.readOnly, view: w.v, dram: w.m}, w.v.size, nil
		}
		readOnly = true
		own, err = openSegmentData(fileID{st.Dev, st.Ino}, w.seg)
	case isMemfd(link, exportName):
		// An export: reopen the memfd for reading (and writing, when the
		// importer's descriptor may write), as the device reaches it.
		mode := unix.O_RDWR
		if readOnly {
			mode = unix.O_RDONLY
		}
		own, err = unix.Open("/proc/self/fd/"+strconv.Itoa(fd), mode|unix.O_CLOEXEC, 0)
	case strings.HasPrefix(link, "/dmabuf:"), link == "anon_inode:dmabuf":
		own, err = unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	default:
		return nil, 0, unix.EINVAL
	}
	if err != nil {
		return nil, 0, unix.ENOMEM
	}
	size := uint64(st.Size)
	if size == 0 {
		// dma-buf files report their size through SEEK_END.
		if n, err := unix.Seek(own, 0, unix.SEEK_END); err == nil && n > 0 {
			size = uint64(n)
		}
	}
	return &importMap{fd: own, readOnly: readOnly}, size, nil
}
