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
// (final: its resources may be released) and which do not. An abort is
// final only when the device's reset count moved past the CS's
// generation (resetwait.go): the rows with a count give it; the others
// have no count to read, and take the driver's word.
func TestAwait(t *testing.T) {
	moved := func() (uint64, error) { return 1, nil }       // the CS's generation is 0
	still := func() (uint64, error) { return 0, nil }       // no reset since
	broken := func() (uint64, error) { return 0, unix.EIO } // cannot tell
	for _, tc := range []struct {
		name   string
		f      waitFile
		resets func() (uint64, error)
		final  bool
		want   error // nil: success
	}{
		{"aborted, reset done", waitFile{errno: unix.EIO}, moved, true, ErrAborted},
		{"aborted, reset postponed", waitFile{errno: unix.EIO}, still, false, ioctl.ErrNotOperational},
		{"aborted status, reset done", waitFile{status: hl.HL_WAIT_CS_STATUS_ABORTED}, moved, true, ErrAborted},
		{"aborted status, reset postponed", waitFile{status: hl.HL_WAIT_CS_STATUS_ABORTED}, still, false, ioctl.ErrNotOperational},
		{"aborted, count unreadable", waitFile{errno: unix.EIO}, broken, true, ErrAborted},
		{"completed", waitFile{status: hl.HL_WAIT_CS_STATUS_COMPLETED}, nil, true, nil},
		{"timed out", waitFile{errno: unix.ETIMEDOUT}, nil, true, ioctl.ErrTimeout},
		{"aborted", waitFile{errno: unix.EIO}, nil, true, ErrAborted},
		{"aborted without errno", waitFile{status: hl.HL_WAIT_CS_STATUS_ABORTED}, nil, true, ErrAborted},
		{"unknown sequence", waitFile{errno: unix.EINVAL}, nil, true, unix.EINVAL},
		{"not operational", waitFile{errno: unix.EBUSY}, nil, false, ioctl.ErrNotOperational},
		{"unexpected errno", waitFile{errno: unix.ENOMEM}, nil, false, unix.ENOMEM},
		{"unexpected status", waitFile{status: 77}, nil, false, ioctl.ErrNotSupported},
		{"busy until the deadline", waitFile{status: hl.HL_WAIT_CS_STATUS_BUSY}, nil, false, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f
			io := ioctl.New(&f)
			defer io.Close()
			e := &Engine{io: io}
			if tc.resets != nil {
				e.resets.count = tc.resets // seen stays 0: the CS's generation
			}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			var a hl.WaitCSArgs
			_, final, err := e.await(ctx, 7, 0, &a)
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
	if _, final, err := (&Engine{io: io}).await(context.Background(), 7, 0, &a); !final || !errors.Is(err, ioctl.ErrClosed) {
		t.Errorf("await on a closed device: final %v, %v", final, err)
	}
}

// TestAwaitGenerations: one reset aborts every CS of the generation it
// ended, whichever wait hears of it first, and a CS made after it (the
// next generation) aborted again without another reset is not taken for
// ended.
func TestAwaitGenerations(t *testing.T) {
	f := waitFile{errno: unix.EIO}
	io := ioctl.New(&f)
	defer io.Close()
	count := uint64(0)
	e := &Engine{io: io}
	e.resets.init(func() (uint64, error) { return count, nil })
	old := e.resets.gen()
	count++ // a reset
	var a hl.WaitCSArgs
	for i := range 2 {
		if _, final, err := e.await(context.Background(), uint64(7+i), old, &a); !final || !errors.Is(err, ErrAborted) {
			t.Errorf("CS %d of the generation the reset ended: final %v, %v; want final, ErrAborted", i, final, err)
		}
	}
	next := e.resets.gen()
	if next != count {
		t.Fatalf("generation after the reset: %d, want %d", next, count)
	}
	if _, final, err := e.await(context.Background(), 9, next, &a); final || !errors.Is(err, ioctl.ErrNotOperational) {
		t.Errorf("a CS of the next generation aborted with no reset since: final %v, %v; want not final, ErrNotOperational", final, err)
	}
}
