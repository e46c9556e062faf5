package ioctl

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gaudi-go/gaudi/internal/leak"
	"golang.org/x/sys/unix"
)

// Device issues typed habanalabs ioctls on a File, in the encoding the file
// accepts, retrying calls the kernel interrupted.
//
// A Device is safe for concurrent use. Close waits for calls in flight and
// makes every later call fail with an error matching ErrClosed, so no ioctl
// ever reaches a File that is closing or closed.
type Device struct {
	enc atomic.Uint32 // Encoding, set once the probe succeeded

	f File
	// kf is f when it is a kernel file, which attempt calls without its
	// own gate: the Device owns f and its gate (mu) already keeps Close
	// away from calls in flight.
	kf *kernelFile

	probeMu  sync.Mutex
	probeErr error // a definitive probe failure, returned from then on

	// mu is held for reading by every call that uses f and for writing by
	// Close, which sets closed.
	mu     sync.RWMutex
	closed bool

	now   func() time.Time // the clock WaitCS measures time with
	slice time.Duration    // the longest single WAIT_CS
}

// New returns a Device that issues its calls on f. The ioctl encoding is
// probed on the first call that needs it; see Encoding. The Device owns f
// and closes it in Close.
func New(f File) *Device {
	kf, _ := f.(*kernelFile)
	return &Device{f: f, kf: kf, now: time.Now, slice: defaultWaitSlice}
}

// Open opens the device node at path, such as /dev/accel/accel0 or the
// legacy /dev/hl0, and probes its ioctl encoding. Errors from the open itself
// are *Error values with Op "OPEN"; see ErrDeviceBusy, ErrInReset and
// ErrNotOperational. A file
// that accepts neither encoding is closed again and reported with an error
// matching ErrNotSupported.
func Open(path string) (*Device, error) {
	f, err := OpenFile(path)
	if err != nil {
		return nil, err
	}
	d := New(f)
	if _, err := d.encoding(); err != nil {
		if cerr := f.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close %s: %w", path, cerr))
		}
		return nil, err
	}
	return d, nil
}

// Name returns the name of the underlying File.
func (d *Device) Name() string { return d.f.Name() }

// Encoding returns the ioctl encoding the file accepts, probing it first if
// no call has done so yet. The probe issues INFO HW_IP_INFO with the DRM
// request and falls back to the legacy request only when the DRM one is
// rejected with ENOTTY or EINVAL. It returns EncodingUnknown if the probe
// failed, or if the Device was closed before anything probed it.
func (d *Device) Encoding() Encoding {
	e, _ := d.encoding()
	return e
}

// Close closes the underlying File after waiting for calls in flight. Calls
// made after Close return an error matching ErrClosed. Close is idempotent:
// later calls do nothing and return nil.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	return d.f.Close()
}

// Mmap maps length bytes of the device at offset, as mmap(2) does. The
// offset is a handle returned by the driver, such as a command buffer's
// mmap handle. Errors are *Error values with Op "MMAP".
func (d *Device) Mmap(offset int64, length int, prot, flags int) ([]byte, error) {
	for {
		if !d.acquire() {
			return nil, closedErr("MMAP", "", 0)
		}
		b, err := d.f.Mmap(offset, length, prot, flags)
		d.release()
		if err == nil {
			if leak.Recording() {
				leak.Mapped(b, fmt.Sprintf("mmap of %s at offset %#x", d.f.Name(), offset))
			}
			return b, nil
		}
		if !isEINTR(err) {
			return nil, wrapErr("MMAP", "", 0, err)
		}
	}
}

// Munmap removes a mapping returned by Mmap. Mappings outlive the file, so
// Munmap also works after Close; unmap before freeing what was mapped.
// Errors are *Error values with Op "MUNMAP".
func (d *Device) Munmap(b []byte) error {
	if err := d.f.Munmap(b); err != nil {
		return wrapErr("MUNMAP", "", 0, err)
	}
	leak.Unmapped(b)
	return nil
}

// acquire makes the caller an in-flight user of f. It reports false, and
// holds nothing, once the Device is closed.
func (d *Device) acquire() bool {
	d.mu.RLock()
	if d.closed {
		d.mu.RUnlock()
		return false
	}
	return true
}

// release ends a use of f begun by a successful acquire.
func (d *Device) release() { d.mu.RUnlock() }

// request returns the request number of ioctl nr, probing the encoding first
// if needed. code is the sub-operation, used only to name errors.
func (d *Device) request(nr int, code uint32) (uint, error) {
	enc, err := d.encoding()
	if err == nil {
		if req := requests[enc][nr]; req != 0 {
			return req, nil
		}
		// No number in this encoding: the kernel could not understand it.
		return 0, &Error{Op: opNames[nr], Sub: subName(nr, code), Errno: unix.ENOTTY}
	}
	var e *Error
	if errors.As(err, &e) && e.closed {
		return 0, closedErr(opNames[nr], subName(nr, code), 0)
	}
	return 0, err
}

// wrapErr turns an error from a File into an *Error, or wraps it with the
// operation when the File broke its contract and returned no errno. The
// errDeviceClosed of attempt becomes an *Error matching ErrClosed; an EBADF
// from the File is the kernel's and does not match it.
func wrapErr(op, sub string, req uint, err error) error {
	if err == errDeviceClosed {
		return closedErr(op, sub, req)
	}
	if errno, ok := errnoOf(err); ok {
		return &Error{Op: op, Sub: sub, Req: req, Errno: errno}
	}
	return fmt.Errorf("%s: %w", opText(op, sub), err)
}

// errnoOf returns the errno in err. Files return a bare unix.Errno, which is
// checked first so that the common case does not allocate.
func errnoOf(err error) (unix.Errno, bool) {
	if errno, ok := err.(unix.Errno); ok {
		return errno, true
	}
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno, true
	}
	return 0, false
}

// isEINTR reports whether err is EINTR.
func isEINTR(err error) bool {
	errno, ok := errnoOf(err)
	return ok && errno == unix.EINTR
}
