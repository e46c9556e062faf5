package dma

import (
	"context"
	"errors"
	"testing"
	"time"
	"unsafe"

	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// waitFile answers every WAIT_CS with errno (or, when errno is 0, with
// status and no error).
type waitFile struct {
	errno  unix.Errno
	status uint32
}

func (f *waitFile) Ioctl(req uint, arg unsafe.Pointer) error {
	switch req {
	case uint(hl.DRM_IOCTL_HL_INFO):
		return nil
	case uint(hl.DRM_IOCTL_HL_WAIT_CS):
		a := (*hl.WaitCSArgs)(arg)
		*a = hl.WaitCSArgs{}
		if f.errno != 0 {
			return f.errno
		}
		a.Out().Status = f.status
		return nil
	}
	return unix.ENOTTY
}

func (f *waitFile) Mmap(int64, int, int, int) ([]byte, error) { return nil, unix.ENODEV }
func (f *waitFile) Munmap([]byte) error                       { return nil }
func (f *waitFile) Close() error                              { return nil }
func (f *waitFile) Name() string                              { return "wait" }

// TestAwait: which answers of WAIT_CS end the device's claim on a CS
// (final: its resources may be released) and which do not.
func TestAwait(t *testing.T) {
	for _, tc := range []struct {
		name  string
		f     waitFile
		final bool
		want  error // nil: success
	}{
		{"completed", waitFile{status: hl.HL_WAIT_CS_STATUS_COMPLETED}, true, nil},
		{"timed out", waitFile{errno: unix.ETIMEDOUT}, true, ioctl.ErrTimeout},
		{"aborted", waitFile{errno: unix.EIO}, true, ErrAborted},
		{"aborted without errno", waitFile{status: hl.HL_WAIT_CS_STATUS_ABORTED}, true, ErrAborted},
		{"unknown sequence", waitFile{errno: unix.EINVAL}, true, unix.EINVAL},
		{"not operational", waitFile{errno: unix.EBUSY}, false, ioctl.ErrNotOperational},
		{"unexpected errno", waitFile{errno: unix.ENOMEM}, false, unix.ENOMEM},
		{"unexpected status", waitFile{status: 77}, false, ioctl.ErrNotSupported},
		{"busy until the deadline", waitFile{status: hl.HL_WAIT_CS_STATUS_BUSY}, false, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f
			io := ioctl.New(&f)
			defer io.Close()
			e := &Engine{io: io}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			var a hl.WaitCSArgs
			_, final, err := e.await(ctx, 7, &a)
			if final != tc.final {
				t.Errorf("final = %v, want %v (err %v)", final, tc.final, err)
			}
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
	// A closed device: the driver keeps the context until its CSs end.
	f := waitFile{status: hl.HL_WAIT_CS_STATUS_BUSY}
	io := ioctl.New(&f)
	io.Close()
	var a hl.WaitCSArgs
	if _, final, err := (&Engine{io: io}).await(context.Background(), 7, &a); !final || !errors.Is(err, ioctl.ErrClosed) {
		t.Errorf("await on a closed device: final %v, %v", final, err)
	}
}
