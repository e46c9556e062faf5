// Package fakefile provides a fake device file for tests: a File whose ioctls
// are answered by a single function. It implements ioctl.File without
// importing package ioctl, so that package's own tests can use it.
package fakefile

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Func answers one ioctl: it reads and writes the argument at arg, whose
// type follows from req, and returns nil or a unix.Errno.
type Func func(req uint, arg unsafe.Pointer) error

// File is a fake device file. Ioctl calls Func; Mmap hands out ordinary
// memory. It is safe for concurrent use if Func is.
type File struct {
	// OnClose, if set, is called at the start of every Close.
	OnClose func()

	fn     Func
	name   string
	closed atomic.Bool
	closes atomic.Int32
	calls  atomic.Int64
}

// New returns a File named "fake" whose ioctls are answered by fn.
func New(fn Func) *File {
	return &File{fn: fn, name: "fake"}
}

// Ioctl calls the Func, or returns EBADF once Close has been called.
func (f *File) Ioctl(req uint, arg unsafe.Pointer) error {
	if f.closed.Load() {
		return unix.EBADF
	}
	f.calls.Add(1)
	return f.fn(req, arg)
}

// Mmap returns length zeroed bytes, or EINVAL for a length <= 0.
func (f *File) Mmap(offset int64, length int, prot, flags int) ([]byte, error) {
	if f.closed.Load() {
		return nil, unix.EBADF
	}
	if length <= 0 {
		return nil, unix.EINVAL
	}
	return make([]byte, length), nil
}

// Munmap accepts any mapping.
func (f *File) Munmap(b []byte) error { return nil }

// Close calls OnClose, marks the file closed and counts the call.
func (f *File) Close() error {
	if f.OnClose != nil {
		f.OnClose()
	}
	f.closes.Add(1)
	f.closed.Store(true)
	return nil
}

// Name returns "fake".
func (f *File) Name() string { return f.name }

// Closes returns how many times Close was called.
func (f *File) Closes() int { return int(f.closes.Load()) }

// Calls returns how many ioctls reached the Func.
func (f *File) Calls() int { return int(f.calls.Load()) }

// Arg views an ioctl argument as a *T.
func Arg[T any](arg unsafe.Pointer) *T { return (*T)(arg) }
