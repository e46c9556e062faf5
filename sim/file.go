package sim

import (
	"encoding/binary"
	"sync"

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

	mu      sync.Mutex
	closed  bool
	events  uint64     // notifier bits not yet read by GET_EVENTS
	eventfd int        // a duplicate of the registered eventfd, or -1
	csDrops csCounters // the compute context's dropped submissions
}

func newFile(d *Device, control bool) *File {
	name := d.Name()
	if control {
		name = d.Name() + "-control"
	}
	return &File{dev: d, control: control, name: name, eventfd: -1}
}

// Name returns the node the file stands for, e.g. "sim:accel0".
func (f *File) Name() string { return f.name }

// Device returns the simulated device the file belongs to.
func (f *File) Device() *Device { return f.dev }

// Mmap implements the ioctl layer's File. The control node has no mmap.
func (f *File) Mmap(offset int64, length int, prot, flags int) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, unix.EBADF
	}
	if f.control {
		return nil, unix.ENODEV
	}
	return nil, unix.EINVAL
}

// Munmap implements the ioctl layer's File.
func (f *File) Munmap(b []byte) error { return unix.EINVAL }

// Close releases the file: for a compute file, the device's compute context
// and its lock. Later calls return EBADF; Close itself is idempotent.
func (f *File) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	if f.eventfd >= 0 {
		unix.Close(f.eventfd)
		f.eventfd = -1
	}
	f.mu.Unlock()
	f.dev.release(f)
	f.lock.release()
	return nil
}

// notify records notifier bits and signals the registered eventfd.
func (f *File) notify(bits uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || f.control {
		return
	}
	f.events |= bits
	if f.eventfd >= 0 {
		var one [8]byte
		binary.NativeEndian.PutUint64(one[:], 1)
		unix.Write(f.eventfd, one[:])
	}
}

// abort ends the file's pending work after a reset. Waits arrive with the
// command submission support; nothing is pending yet.
func (f *File) abort() {}
