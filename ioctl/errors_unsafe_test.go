package ioctl_test

import (
	"errors"
	"os"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// sentinels records which sentinels an error matches.
type sentinels struct {
	DeviceBusy, InReset, NotOperational, NotSupported, Timeout, Closed bool
}

func matches(err error) sentinels {
	return sentinels{
		DeviceBusy:     errors.Is(err, ioctl.ErrDeviceBusy),
		InReset:        errors.Is(err, ioctl.ErrInReset),
		NotOperational: errors.Is(err, ioctl.ErrNotOperational),
		NotSupported:   errors.Is(err, ioctl.ErrNotSupported),
		Timeout:        errors.Is(err, ioctl.ErrTimeout),
		Closed:         errors.Is(err, ioctl.ErrClosed),
	}
}

// errnoTable gives the sentinels an ioctl failing with each errno matches.
// None of the typed calls is one whose EPERM means a missing feature.
var errnoTable = []struct {
	errno unix.Errno
	want  sentinels
}{
	{unix.EBUSY, sentinels{NotOperational: true}}, // owned by another process only when opening
	{unix.EAGAIN, sentinels{}},                    // in reset only when opening
	{unix.ENOTTY, sentinels{NotSupported: true}},
	{unix.EOPNOTSUPP, sentinels{NotSupported: true}},
	{unix.ETIMEDOUT, sentinels{Timeout: true}},
	{unix.EBADF, sentinels{}}, // the kernel's: a bad descriptor, not a closed Device
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
				if diff := cmp.Diff(want, e, cmp.AllowUnexported(ioctl.Error{})); diff != "" {
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
		{unix.EPERM, sentinels{NotOperational: true}, "open /dev/accel/accel0: operation not permitted"},
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

// TestErrClosed: only a call on a closed Device matches ErrClosed (and
// os.ErrClosed); an EBADF the kernel answers, such as for a closed eventfd
// given to REGISTER_EVENTFD, does not.
func TestErrClosed(t *testing.T) {
	d, _, _ := newDRMDevice(t, func(req uint, arg unsafe.Pointer) error { return unix.EBADF })
	var a hl.InfoArgs
	a.SetEventfd(1 << 30)
	err := d.Info(hl.HL_INFO_REGISTER_EVENTFD, &a, nil)
	if !errors.Is(err, unix.EBADF) || errors.Is(err, ioctl.ErrClosed) || errors.Is(err, os.ErrClosed) {
		t.Errorf("kernel EBADF: %v, want EBADF not matching ErrClosed", err)
	}
	if got, want := err.Error(), "ioctl INFO REGISTER_EVENTFD: bad file descriptor"; got != want {
		t.Errorf("kernel EBADF: message %q, want %q", got, want)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	err = d.Info(hl.HL_INFO_REGISTER_EVENTFD, &a, nil)
	if !errors.Is(err, ioctl.ErrClosed) || !errors.Is(err, os.ErrClosed) || !errors.Is(err, unix.EBADF) {
		t.Errorf("closed Device: %v, want ErrClosed, os.ErrClosed and EBADF", err)
	}
	if errors.Is(err, ioctl.ErrNotOperational) || errors.Is(err, ioctl.ErrNotSupported) {
		t.Errorf("closed Device: %v matches another sentinel", err)
	}
	if got, want := err.Error(), "ioctl INFO REGISTER_EVENTFD: file already closed"; got != want {
		t.Errorf("closed Device: message %q, want %q", got, want)
	}
	// A hand-made Error with EBADF is the kernel's too.
	if errors.Is(&ioctl.Error{Op: "CB", Errno: unix.EBADF}, os.ErrClosed) {
		t.Error("an Error{Errno: EBADF} matches os.ErrClosed")
	}
}

// TestEPERM: the EPERMs of features an ASIC lacks match ErrNotSupported,
// the EPERM of opening a disabled device ErrNotOperational, and any other
// EPERM only its errno.
func TestEPERM(t *testing.T) {
	tests := []struct {
		name string
		call func(d *ioctl.Device) error
		sub  string
		want sentinels
	}{
		{"staged", func(d *ioctl.Device) error {
			var a hl.CSArgs
			a.In().CSFlags = hl.HL_CS_FLAGS_STAGED_SUBMISSION | hl.HL_CS_FLAGS_STAGED_SUBMISSION_FIRST
			return d.CS(&a)
		}, "STAGED_SUBMISSION", sentinels{NotSupported: true}},
		{"engine cores", func(d *ioctl.Device) error {
			return d.EngineCores(hl.HL_ENGINE_CORE_HALT, []uint32{1})
		}, "ENGINE_CORE_COMMAND", sentinels{NotSupported: true}},
		{"engines", func(d *ioctl.Device) error {
			return d.Engines(hl.HL_ENGINE_STALL, []uint32{1})
		}, "ENGINES_COMMAND", sentinels{NotSupported: true}},
		{"multi-CS", func(d *ioctl.Device) error {
			var a hl.WaitCSMultiArgs
			return d.WaitMultiCS(t.Context(), &a)
		}, "MULTI_CS", sentinels{NotSupported: true}},
		{"interrupt", func(d *ioctl.Device) error {
			var a hl.WaitCSInterruptArgs
			return d.WaitInterrupt(t.Context(), &a)
		}, "INTERRUPT", sentinels{NotSupported: true}},
		{"map block", func(d *ioctl.Device) error {
			var a hl.MemArgs
			a.In().Op = hl.HL_MEM_OP_MAP_BLOCK
			return d.Memory(&a)
		}, "MAP_BLOCK", sentinels{NotSupported: true}},
		// A plain submission: a privileged packet, or a device that went
		// down between the checks and the queueing.
		{"plain CS", func(d *ioctl.Device) error {
			var a hl.CSArgs
			return d.CS(&a)
		}, "", sentinels{}},
		{"signal", func(d *ioctl.Device) error {
			var a hl.CSArgs
			a.In().CSFlags = hl.HL_CS_FLAGS_SIGNAL
			return d.CS(&a)
		}, "SIGNAL", sentinels{}},
		// MAP of another context's memory that is not shared.
		{"map", func(d *ioctl.Device) error {
			var a hl.MemArgs
			a.In().Op = hl.HL_MEM_OP_MAP
			return d.Memory(&a)
		}, "MAP", sentinels{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _, _ := newDRMDevice(t, func(req uint, arg unsafe.Pointer) error { return unix.EPERM })
			err := tt.call(d)
			var e *ioctl.Error
			if !errors.As(err, &e) || e.Sub != tt.sub || !errors.Is(err, unix.EPERM) {
				t.Fatalf("error %#v, want an *Error with Sub %q and EPERM", err, tt.sub)
			}
			if diff := cmp.Diff(tt.want, matches(err)); diff != "" {
				t.Errorf("%v: sentinels (-want +got):\n%s", err, diff)
			}
		})
	}
}

// TestEBUSYOfOtherFiles: an EBUSY the driver's ioctls answer means a
// device that is not operational; that of DMA_BUF_SET_NAME (a dma-buf
// attached to a device) and of an open (another owner) do not.
func TestEBUSYOfOtherFiles(t *testing.T) {
	for _, tt := range []struct {
		err  *ioctl.Error
		want sentinels
	}{
		{&ioctl.Error{Op: "MEMORY", Sub: "EXPORT_DMABUF_FD", Errno: unix.EBUSY}, sentinels{NotOperational: true}},
		{&ioctl.Error{Op: "DMA_BUF_SET_NAME", Sub: "gaudi:0x1000", Errno: unix.EBUSY}, sentinels{}},
		{&ioctl.Error{Op: "OPEN", Sub: "/dev/accel/accel0", Errno: unix.EBUSY}, sentinels{DeviceBusy: true}},
	} {
		if diff := cmp.Diff(tt.want, matches(tt.err)); diff != "" {
			t.Errorf("%v: sentinels (-want +got):\n%s", tt.err, diff)
		}
	}
}
