package sim

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// File is an open simulated device node: a compute file (the accelN node)
// or a control file. It implements the ioctl layer's File interface. A File
// is safe for concurrent use; Close is idempotent.
type File struct {
	dev     *Device
	control bool
	name    string
	lock    *ctxLock

	mu       sync.Mutex
	closed   bool         // this handle is closed
	refs     int          // open handles: this one and its duplicates
	released bool         // every handle is closed and the context is gone
	busy     int          // ioctls and mmaps in progress
	pending  bool         // released while busy: the last call out releases
	events   uint64       // notifier bits not yet read by GET_EVENTS
	eventfd  int          // a duplicate of the registered eventfd, or -1
	signaler *eventSignal // signals eventfd; nil without one
	csDrops  csCounters   // the compute context's dropped submissions
	cs       csHolder     // command buffers and submissions (cb.go, cs.go)
	mmaps    map[*byte]userMapping

	// Compute files only: the memory context and the mmap buffers. Both
	// outlive the last Close while a dma-buf export is open (lingering),
	// as the driver's exports hold the file.
	ctx       *context
	mm        *memMgr
	lingering bool
	final     sync.Once

	killed atomic.Bool // a hard reset killed the holder (watchdog.go)
	orphan orphanState // a served file's abort once its address space is gone (orphan.go)

	rem *remoteMem // the served process whose memory user pointers reach, or nil (served.go)
	// Strict mode (strict.go): the compute context's serial number
	// (Device.openCounter at its open, 0 for a control file) and the
	// calls per ioctl, which pick the ones that get the stack-move check.
	serial      uint64
	strictCalls [len(ioctlTable)]atomic.Uint32
}

func newFile(d *Device, control bool) *File {
	name := d.Name()
	if control {
		name = d.Name() + "-control"
	}
	return &File{dev: d, control: control, name: name, eventfd: -1, refs: 1}
}

// Name returns the node the file stands for, e.g. "sim:accel0".
func (f *File) Name() string { return f.name }

// Device returns the simulated device the file belongs to.
func (f *File) Device() *Device { return f.dev }

// Simulated returns true. It is how package device tells a simulated file
// from a kernel one without importing this package (device.Device.Simulated).
func (f *File) Simulated() bool { return true }

// PCIAddress returns the device's configured PCI address, which
// device.Device.PCIAddress reports for a simulated device.
func (f *File) PCIAddress() string { return f.dev.cfg.PCIAddress }

// Mmap implements the ioctl layer's File. The control node has no mmap.
func (f *File) Mmap(offset int64, length int, prot, flags int) ([]byte, error) {
	f.mu.Lock()
	closed := f.closed
	f.mu.Unlock()
	if closed {
		return nil, unix.EBADF
	}
	f.cbSweepFor(offset)
	return f.mmap(offset, length, prot, flags)
}

// Close closes this handle. When it is the last handle of the open file
// (see Dup), the file is released: for a compute file, the device's compute
// context and its lock. Later calls on this handle return EBADF; Close
// itself is idempotent.
//
// In strict mode, closing a compute file returns a *ViolationError when
// violations that were not expected were recorded while it was open (see
// Device.CheckStrict); the file is closed all the same.
func (f *File) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	f.mu.Unlock()
	f.put()
	if f.serial != 0 {
		return f.dev.checkStrict(f.serial)
	}
	return nil
}

// put drops one handle's reference and releases the file with the last.
func (f *File) put() {
	f.mu.Lock()
	f.refs--
	if f.refs > 0 {
		f.mu.Unlock()
		return
	}
	f.released = true
	sig := f.signaler
	f.signaler, f.eventfd = nil, -1
	// As the kernel holds a file for the duration of a system call, calls
	// in progress keep the file until they return; and a mapping holds it
	// (vma->vm_file) until it is unmapped: hl_device_release runs on the
	// last reference, so a CB still mapped keeps the compute context and
	// a new open answers EBUSY.
	f.pending = f.busy > 0 || len(f.mmaps) > 0
	pending := f.pending
	f.mu.Unlock()
	if sig != nil {
		sig.close() // outside f.mu: it may wait for a write to end
	}
	if !pending {
		f.dev.release(f)
	}
}

// enter starts a call on the file; false once every handle is closed.
func (f *File) enter() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refs == 0 {
		return false
	}
	f.busy++
	return true
}

// exit ends a call, releasing the file if it was closed meanwhile.
func (f *File) exit() {
	f.mu.Lock()
	f.busy--
	f.mu.Unlock()
	f.releaseIfUnheld()
}

// releaseIfUnheld releases a file whose handles are all closed once no
// call and no mapping holds it any more.
func (f *File) releaseIfUnheld() {
	f.mu.Lock()
	release := f.pending && f.busy == 0 && len(f.mmaps) == 0
	if release {
		f.pending = false
	}
	f.mu.Unlock()
	if release {
		f.dev.release(f)
	}
}

// Dup returns another handle to the same open file, as dup(2) gives another
// descriptor for the same open file description: both reach the same
// context, and the context ends only when every handle is closed.
func (f *File) Dup() (*Handle, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, unix.EBADF
	}
	f.refs++
	return &Handle{f: f}, nil
}

// Handle is a duplicate of a File (see File.Dup). It implements the ioctl
// layer's File interface, is safe for concurrent use, and its Close is
// idempotent.
type Handle struct {
	f      *File
	mu     sync.Mutex
	closed bool
}

// Name returns the node the handle stands for.
func (h *Handle) Name() string { return h.f.name }

// Ioctl runs a request on the shared file; EBADF once this handle is closed.
func (h *Handle) Ioctl(req uint, arg unsafe.Pointer) error {
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return unix.EBADF
	}
	return h.f.ioctl(req, arg, nil)
}

// Mmap maps through the shared file; EBADF once this handle is closed.
func (h *Handle) Mmap(offset int64, length int, prot, flags int) ([]byte, error) {
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return nil, unix.EBADF
	}
	h.f.cbSweepFor(offset)
	return h.f.mmap(offset, length, prot, flags)
}

// Munmap removes a mapping made through any handle of the file.
func (h *Handle) Munmap(b []byte) error { return h.f.Munmap(b) }

// Close closes this handle; the last handle of the file releases it.
func (h *Handle) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()
	h.f.put()
	return nil
}

// notify records notifier bits and signals the registered eventfd.
func (f *File) notify(bits uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.released || f.control {
		return
	}
	f.events |= bits
	if f.signaler != nil {
		f.signaler.signal() // never blocks (eventsignal.go)
	}
}

// abort ends the file's pending work in a reset, with the engines halted:
// its CSs in flight are rolled back and their waits answer EIO (ABORTED),
// or ETIMEDOUT for the CS whose timeout caused the reset.
func (f *File) abort() {
	if f.cs.p.Load() != nil {
		f.dev.hardware().abortCS(f)
	}
}

// cbSweepFor frees destroyed command buffers before a CB handle is mapped,
// so that one whose last mapping went away cannot be mapped again.
func (f *File) cbSweepFor(offset int64) {
	if (uint64(offset)>>12)&mmapTypeMask == mmapTypeCB && !f.control {
		f.cbSweep()
	}
}
