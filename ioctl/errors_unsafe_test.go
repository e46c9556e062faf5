package ioctl_test

import (
	"errors"
	"os"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// sentinels records which sentinels an error matches.
type sentinels struct {
	DeviceBusy, InReset, NotSupported, Timeout, Closed bool
}

func matches(err error) sentinels {
	return sentinels{
		DeviceBusy:   errors.Is(err, ioctl.ErrDeviceBusy),
		InReset:      errors.Is(err, ioctl.ErrInReset),
		NotSupported: errors.Is(err, ioctl.ErrNotSupported),
		Timeout:      errors.Is(err, ioctl.ErrTimeout),
		Closed:       errors.Is(err, ioctl.ErrClosed),
	}
}

// errnoTable gives the sentinels an ioctl failing with each errno matches.
var errnoTable = []struct {
	errno unix.Errno
	want  sentinels
}{
	{unix.EBUSY, sentinels{DeviceBusy: true}},
	{unix.EAGAIN, sentinels{}}, // in reset only when opening
	{unix.ENOTTY, sentinels{NotSupported: true}},
	{unix.EOPNOTSUPP, sentinels{NotSupported: true}},
	{unix.ETIMEDOUT, sentinels{Timeout: true}},
	{unix.EBADF, sentinels{Closed: true}},
	{unix.EPERM, sentinels{}},
	{unix.EINVAL, sentinels{}},
	{unix.ENOMEM, sentinels{}},
	{unix.EFAULT, sentinels{}},
	{unix.EIO, sentinels{}},
}

func TestErrnoMapping(t *testing.T) {
	for _, row := range errnoTable {
		for _, c := range typedCalls {
			t.Run(c.op+"/"+row.errno.Error(), func(t *testing.T) {
				d, r, _ := newDRMDevice(t, func(req uint, arg unsafe.Pointer) error {
					return row.errno
				})
				err := c.call(d)
				if !errors.Is(err, row.errno) {
					t.Fatalf("%s = %v, want an error matching %v", c.op, err, row.errno)
				}
				if diff := cmp.Diff(row.want, matches(err)); diff != "" {
					t.Errorf("%s: sentinels (-want +got):\n%s", c.op, diff)
				}
				var e *ioctl.Error
				if !errors.As(err, &e) {
					t.Fatalf("%s = %T, want *ioctl.Error", c.op, err)
				}
				want := &ioctl.Error{Op: c.op, Sub: c.sub, Req: drmRequests[c.op], Errno: row.errno}
				if diff := cmp.Diff(want, e); diff != "" {
					t.Errorf("%s: error (-want +got):\n%s", c.op, diff)
				}
				msg := "ioctl " + c.op
				if c.sub != "" {
					msg += " " + c.sub
				}
				msg += ": " + row.errno.Error()
				if got := err.Error(); got != msg {
					t.Errorf("message = %q, want %q", got, msg)
				}
				if n := len(r.requests()); n != 1 {
					t.Errorf("%d ioctls, want 1 (no retry)", n)
				}
			})
		}
	}
}

func TestErrorOpen(t *testing.T) {
	tests := []struct {
		errno unix.Errno
		want  sentinels
		msg   string
	}{
		{unix.EBUSY, sentinels{DeviceBusy: true}, "open /dev/accel/accel0: device or resource busy"},
		{unix.EAGAIN, sentinels{InReset: true}, "open /dev/accel/accel0: resource temporarily unavailable"},
		{unix.EPERM, sentinels{}, "open /dev/accel/accel0: operation not permitted"},
		{unix.ENOENT, sentinels{}, "open /dev/accel/accel0: no such file or directory"},
	}
	for _, tt := range tests {
		err := error(&ioctl.Error{Op: "OPEN", Sub: "/dev/accel/accel0", Errno: tt.errno})
		if diff := cmp.Diff(tt.want, matches(err)); diff != "" {
			t.Errorf("%v: sentinels (-want +got):\n%s", tt.errno, diff)
		}
		if got := err.Error(); got != tt.msg {
			t.Errorf("message = %q, want %q", got, tt.msg)
		}
		if !errors.Is(err, tt.errno) {
			t.Errorf("%v does not match its errno", err)
		}
	}
}

func TestErrorMessages(t *testing.T) {
	tests := []struct {
		err  ioctl.Error
		want string
	}{
		{ioctl.Error{Op: "MEMORY", Sub: "ALLOC", Errno: unix.ENOMEM}, "ioctl MEMORY ALLOC: cannot allocate memory"},
		{ioctl.Error{Op: "CS", Errno: unix.EAGAIN}, "ioctl CS: resource temporarily unavailable"},
		{ioctl.Error{Op: "MMAP", Errno: unix.EINVAL}, "mmap: invalid argument"},
		{ioctl.Error{Op: "MUNMAP", Errno: unix.EINVAL}, "munmap: invalid argument"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestErrClosedIsOSErrClosed(t *testing.T) {
	err := error(&ioctl.Error{Op: "CB", Errno: unix.EBADF})
	if !errors.Is(err, os.ErrClosed) || !errors.Is(err, ioctl.ErrClosed) {
		t.Errorf("%v does not match os.ErrClosed and ErrClosed", err)
	}
}
