package ioctl

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// DevNumber returns the major and minor device number of the node the
// Device is open on, from fstat(2) on its descriptor. Files that are not
// kernel descriptors (the simulator) have none: the error then matches
// ErrNotSupported. A closed Device gives an error matching ErrClosed.
func (d *Device) DevNumber() (major, minor uint32, err error) {
	kf, ok := d.f.(*kernelFile)
	if !ok {
		return 0, 0, fmt.Errorf("fstat %s: %w", d.f.Name(), ErrNotSupported)
	}
	if !d.acquire() {
		return 0, 0, fmt.Errorf("fstat %s: %w", d.f.Name(), ErrClosed)
	}
	defer d.release()
	st, err := kf.stat()
	if err != nil {
		return 0, 0, fmt.Errorf("fstat %s: %w", d.f.Name(), err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return 0, 0, fmt.Errorf("fstat %s: not a character device: %w", d.f.Name(), ErrNotSupported)
	}
	return unix.Major(st.Rdev), unix.Minor(st.Rdev), nil
}

// stat runs fstat on the descriptor while it is guaranteed open.
func (f *kernelFile) stat() (unix.Stat_t, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var st unix.Stat_t
	if f.fd < 0 {
		return st, unix.EBADF
	}
	for {
		err := unix.Fstat(f.fd, &st)
		if err != unix.EINTR {
			return st, err
		}
	}
}
