package ioctl

import (
	"sync"

	"golang.org/x/sys/unix"
)

// OpenFile opens the device node at path for reading and writing, with
// close-on-exec set, and returns it as a File. An open refused by the driver
// returns an *Error with Op "OPEN", so ErrDeviceBusy (EBUSY: another process
// owns the device), ErrInReset (EAGAIN: reset or release in progress) and
// ErrNotOperational (EPERM: the device is disabled or needs a reset) can be
// tested with errors.Is.
//
// The returned File is safe for concurrent use. Its Close waits for calls in
// flight and only then closes the descriptor, so no call is ever issued on a
// descriptor number that was closed and possibly reused by another open.
//
// A node that tools/hlsim serves (a regular file that answers hlsim's
// Hello, never a device node) is recognised: the File then reports itself
// simulated (a method Simulated() bool, as device.Device.Simulated asks)
// and receives the dma-bufs the server exports (served_unsafe.go).
func OpenFile(path string) (File, error) {
	var (
		fd  int
		err error
	)
	for {
		fd, err = unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if errno, ok := err.(unix.Errno); !ok || errno != unix.EINTR {
			break
		}
	}
	if err != nil {
		errno, ok := err.(unix.Errno)
		if !ok {
			return nil, err
		}
		return nil, &Error{Op: "OPEN", Sub: path, Errno: errno}
	}
	return &kernelFile{fd: fd, name: path, srv: probeServed(fd)}, nil
}

// kernelFile is a File backed by a kernel file descriptor.
//
// Every call that uses the descriptor holds mu for reading; Close takes it
// for writing, so it waits for those calls and the descriptor number cannot
// be closed, and then reused by an unrelated open, while a call is using it.
type kernelFile struct {
	name string
	srv  *served // a node tools/hlsim serves, or nil

	mu sync.RWMutex
	fd int // -1 once closed
}

// Mmap implements File.
func (f *kernelFile) Mmap(offset int64, length int, prot, flags int) ([]byte, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.fd < 0 {
		return nil, unix.EBADF
	}
	return unix.Mmap(f.fd, f.mmapOffset(offset), length, prot, flags)
}

// Munmap implements File. It does not need the descriptor.
func (f *kernelFile) Munmap(b []byte) error {
	return unix.Munmap(b)
}

// Close implements File.
func (f *kernelFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fd < 0 {
		return nil
	}
	fd := f.fd
	f.fd = -1
	f.srv.close()
	// close(2) must not be retried on EINTR: the descriptor is gone either way.
	return unix.Close(fd)
}

// Name implements File.
func (f *kernelFile) Name() string { return f.name }
