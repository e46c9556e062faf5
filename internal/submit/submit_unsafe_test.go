package submit

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

// csFile answers the CS ioctl: EAGAIN for the first busy calls (leaving
// the arguments as they are, as the driver does), then err, or success
// with the next sequence number and status.
type csFile struct {
	busy   int
	err    error
	status uint32
	calls  int
	seq    uint64
	inputs []hl.CSIn // the input of every call
}

func (f *csFile) Ioctl(req uint, arg unsafe.Pointer) error {
	switch req {
	case uint(hl.DRM_IOCTL_HL_INFO):
		return nil
	case uint(hl.DRM_IOCTL_HL_CS):
		a := (*hl.CSArgs)(arg)
		f.calls++
		f.inputs = append(f.inputs, *a.In())
		if f.calls <= f.busy {
			return unix.EAGAIN
		}
		if f.err != nil {
			return f.err
		}
		f.seq++
		*a = hl.CSArgs{}
		a.Out().SetSeq(f.seq)
		a.Out().Status = f.status
		return nil
	}
	return unix.ENOTTY
}

func (f *csFile) Mmap(int64, int, int, int) ([]byte, error) { return nil, unix.ENODEV }
func (f *csFile) Munmap([]byte) error                       { return nil }
func (f *csFile) Close() error                              { return nil }
func (f *csFile) Name() string                              { return "cs" }

func args() *hl.CSArgs {
	var a hl.CSArgs
	a.In().NumChunksExecute = 3
	a.In().CSFlags = hl.HL_CS_FLAGS_TIMESTAMP
	return &a
}

func TestCS(t *testing.T) {
	bg := context.Background()
	for _, tc := range []struct {
		name    string
		f       csFile
		retries int
		ctx     func() (context.Context, context.CancelFunc)
		calls   int
		want    error // nil: success
	}{
		{name: "at once", calls: 1},
		{name: "after EAGAIN", f: csFile{busy: 5}, retries: 10, calls: 6},
		{name: "retries exhausted", f: csFile{busy: 5}, retries: 3, calls: 4, want: unix.EAGAIN},
		{name: "no retries", f: csFile{busy: 1}, retries: 0, calls: 1, want: unix.EAGAIN},
		{name: "other error", f: csFile{err: unix.EINVAL}, retries: 10, calls: 1, want: unix.EINVAL},
		{name: "status", f: csFile{status: 5}, calls: 1, want: &StatusError{}},
		{name: "context ended before", ctx: func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(bg)
			cancel()
			return ctx, cancel
		}, calls: 0, want: context.Canceled},
		{name: "context ends while retrying", f: csFile{busy: 1 << 30}, retries: 1 << 30, ctx: func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(bg, 30*time.Millisecond)
		}, calls: -1, want: context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := bg
			if tc.ctx != nil {
				var cancel context.CancelFunc
				ctx, cancel = tc.ctx()
				defer cancel()
			}
			f := tc.f
			io := ioctl.New(&f)
			defer io.Close()
			a := args()
			want := *a.In()
			start := time.Now()
			out, err := CS(ctx, io, a, tc.retries)
			if tc.calls >= 0 && f.calls != tc.calls {
				t.Errorf("%d CS calls, want %d", f.calls, tc.calls)
			}
			for i, in := range f.inputs {
				if in != want {
					t.Errorf("call %d got input %+v, want %+v", i, in, want)
				}
			}
			var se *StatusError
			switch {
			case tc.want == nil:
				if err != nil || out == nil || out.Seq() != 1 {
					t.Fatalf("CS = %v, %v; want sequence 1", out, err)
				}
			case errors.As(tc.want, &se):
				if !errors.As(err, &se) || se.Status != 5 || se.Seq != 1 {
					t.Fatalf("CS error %v, want a StatusError with status 5, sequence 1", err)
				}
			default:
				if !errors.Is(err, tc.want) {
					t.Fatalf("CS error %v, want %v", err, tc.want)
				}
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("CS took %v", d)
			}
		})
	}
}

// TestCSBackoff: the pauses between retries grow from MinBackoff to
// MaxBackoff, so 20 retries take at least their sum.
func TestCSBackoff(t *testing.T) {
	f := csFile{busy: 20}
	io := ioctl.New(&f)
	defer io.Close()
	start := time.Now()
	if _, err := CS(context.Background(), io, args(), 100); err != nil {
		t.Fatal(err)
	}
	var least time.Duration
	for i, p := 0, MinBackoff; i < 20; i, p = i+1, min(2*p, MaxBackoff) {
		least += p
	}
	if d := time.Since(start); d < least {
		t.Errorf("20 retries took %v, less than the %v of backoff", d, least)
	}
}

// TestCSAllocs: a submission the driver accepts at once allocates nothing.
func TestCSAllocs(t *testing.T) {
	f := csFile{}
	io := ioctl.New(&f)
	defer io.Close()
	a := args()
	ctx := context.Background()
	f.inputs = make([]hl.CSIn, 0, 2000)
	if n := testing.AllocsPerRun(1000, func() {
		if _, err := CS(ctx, io, a, 10); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("CS allocates %v times", n)
	}
}
