package memory

import (
	"fmt"
	"os"
	"runtime"
	"sync"

	"github.com/gaudi-go/gaudi/internal/errclosed"
	"github.com/gaudi-go/gaudi/internal/leak"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// DMABuf is a range of a device buffer exported as a dma-buf file
// descriptor, for an RDMA NIC or another process. While it is open the
// buffer cannot be closed (ErrInUse). A DMABuf is safe for concurrent use;
// Close is idempotent.
//
// A DMABuf dropped without Close is reported when the garbage collector
// finds it (see device.SetLeakReporter). Its buffer then stays
// unclosable: the export is never counted as closed, although the
// *os.File's own cleanup closes the descriptor.
type DMABuf struct {
	f      *os.File
	buf    *Buffer
	offset uint64
	size   uint64

	mu     sync.Mutex
	closed bool
	hooks  map[*closeHook]struct{} // AfterClose functions not yet run or stopped

	leak runtime.Cleanup // reports a DMABuf dropped without Close
}

type closeHook struct{ f func() }

// ExportOptions adjust Export.
type ExportOptions struct {
	// Name labels the dma-buf (DMA_BUF_SET_NAME) where the kernel allows
	// it; empty means "gaudi:<device VA>".
	Name string
}

// Export exports size bytes of the buffer starting at offset as a dma-buf
// (MEMORY EXPORT_DMABUF_FD), opened O_RDWR|O_CLOEXEC. The driver wants the
// offset and size in whole host pages; Export checks that and the range
// first and answers ErrRange instead of a bare EINVAL. The range lies
// within the buffer's Size rounded up to the host page, so a buffer whose
// Size is not a whole number of pages is exported with its last page
// whole. Kernels of the legacy
// era (6.1) export from the start of an allocation only, so there a
// non-zero offset is ErrRange too.
func (b *Buffer) Export(offset, size uint64, opts ExportOptions) (*DMABuf, error) {
	page := uint64(os.Getpagesize())
	switch {
	case size == 0 || size%page != 0:
		return nil, fmt.Errorf("export device memory: size %#x is not a non-zero multiple of the %d-byte page: %w", size, page, ErrRange)
	case offset%page != 0:
		return nil, fmt.Errorf("export device memory: offset %#x is not a multiple of the %d-byte page: %w", offset, page, ErrRange)
	case offset > b.exportable(page) || size > b.exportable(page)-offset:
		return nil, fmt.Errorf("export device memory: [%#x, +%#x) outside the %#x-byte buffer: %w", offset, size, b.size, ErrRange)
	}
	b.mu.Lock()
	if b.closed || b.closing {
		b.mu.Unlock()
		return nil, fmt.Errorf("export device memory: %w", errclosed.New("device buffer"))
	}
	b.exports++
	b.mu.Unlock()

	m := b.m
	var a hl.MemArgs
	in := a.In()
	in.Op = hl.HL_MEM_OP_EXPORT_DMABUF_FD
	in.Flags = unix.O_RDWR | unix.O_CLOEXEC
	ex := in.ExportDmabufFD()
	switch {
	case !m.virtualDRAM:
		// No device MMU: the physical address of the range itself.
		ex.Addr, ex.MemSize = b.va+offset, size
	case m.io.Encoding() == ioctl.EncodingLegacy:
		// The 6.1 form {handle, mem_size} at the same offsets.
		if offset != 0 {
			b.dropExport()
			return nil, fmt.Errorf("export device memory: this kernel exports from the start of an allocation only, offset %#x: %w", offset, ErrRange)
		}
		ex.Addr, ex.MemSize = b.handle, size
	default:
		ex.Addr, ex.MemSize, ex.Offset = b.va, size, offset
	}
	if err := m.memory(&a); err != nil {
		b.dropExport()
		return nil, fmt.Errorf("export device memory: %w", err)
	}
	fd := int(a.Out().FD())
	name := opts.Name
	if name == "" {
		name = fmt.Sprintf("gaudi:%#x", b.va+offset)
	}
	// Naming is best effort: not every kernel or exporter allows it.
	_ = ioctl.SetDMABufName(fd, name)
	d := &DMABuf{f: os.NewFile(uintptr(fd), name), buf: b, offset: offset, size: size}
	d.leak = leak.Track(d, leak.Info{Type: "*memory.DMABuf", Device: m.dev.Path(), VA: b.va + offset, Size: size, FD: fd}, 0)
	return d, nil
}

// exportable returns how much of the buffer Export may cover: its length
// rounded up to the host page, as the driver exports whole pages, and
// never past the allocation (which is whole DRAM pages, themselves whole
// host pages). The bytes between Size and that bound are the allocation's
// padding: an importer of the last page sees them.
func (b *Buffer) exportable(page uint64) uint64 {
	return min(b.alloc, (b.size+page-1)/page*page)
}

func (b *Buffer) dropExport() {
	b.mu.Lock()
	b.exports--
	b.mu.Unlock()
}

// Fd returns the file descriptor. It stays owned by the DMABuf: dup it to
// keep it beyond Close.
func (d *DMABuf) Fd() int { return int(d.f.Fd()) }

// File returns the descriptor as an *os.File owned by the DMABuf.
func (d *DMABuf) File() *os.File { return d.f }

// Offset returns the start of the exported range within its buffer.
func (d *DMABuf) Offset() uint64 { return d.offset }

// Size returns the length of the exported range.
func (d *DMABuf) Size() uint64 { return d.size }

// DeviceVA returns the device address of the exported range.
func (d *DMABuf) DeviceVA() uint64 { return d.buf.va + d.offset }

// Buffer returns the buffer the range belongs to.
func (d *DMABuf) Buffer() *Buffer { return d.buf }

// Close closes the descriptor; once no export of the buffer is open, the
// buffer may be closed. Importers holding their own duplicate keep the
// dma-buf alive in the kernel regardless.
func (d *DMABuf) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.leak.Stop()
	hooks := d.hooks
	d.hooks = nil
	d.mu.Unlock()
	// Hooks run before the descriptor goes, so that a holder of a
	// duplicate (an ipc exporter) stops handing it out first.
	for h := range hooks {
		h.f()
	}
	err := d.f.Close()
	d.buf.dropExport()
	return err
}

// AfterClose arranges for f to run, in its own call of Close and before
// the descriptor is closed, when d closes. If d is already closed f runs at
// once, in a goroutine of its own. The returned stop cancels the call; it
// reports whether it did so before f was started. Holders of a duplicate of
// the descriptor (such as an ipc.Exporter) use it to withdraw the export
// with the DMABuf.
func (d *DMABuf) AfterClose(f func()) (stop func() bool) {
	h := &closeHook{f: f}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	if d.hooks == nil {
		d.hooks = map[*closeHook]struct{}{}
	}
	d.hooks[h] = struct{}{}
	d.mu.Unlock()
	return func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		if _, ok := d.hooks[h]; !ok {
			return false
		}
		delete(d.hooks, h)
		return true
	}
}
