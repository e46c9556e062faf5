package ioctl_test

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/ioctl/internal/fakefile"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// TestCloseRace runs calls on many goroutines while another closes the
// Device. The fake fails the test if an ioctl starts after Close has begun
// closing the file, or if the file is closed while an ioctl is in flight:
// with a kernel descriptor either would be an ioctl on a number the kernel
// may already have given to another file.
func TestCloseRace(t *testing.T) {
	for round := range 20 {
		var (
			closing  atomic.Bool
			inflight atomic.Int32
			served   atomic.Int64
		)
		f := fakefile.New(func(req uint, arg unsafe.Pointer) error {
			inflight.Add(1)
			defer inflight.Add(-1)
			if closing.Load() {
				t.Errorf("round %d: ioctl %#x entered after Close started", round, req)
			}
			served.Add(1)
			runtime.Gosched()
			return nil
		})
		f.OnClose = func() {
			if closing.Swap(true) {
				t.Errorf("round %d: file closed twice", round)
			}
			if n := inflight.Load(); n != 0 {
				t.Errorf("round %d: file closed with %d ioctls in flight", round, n)
			}
		}
		d := ioctl.New(f)

		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				var args hl.InfoArgs
				out := make([]byte, 8)
				for {
					var err error
					if g%2 == 0 {
						err = d.Info(hl.HL_INFO_DEVICE_STATUS, &args, out)
					} else {
						var b []byte
						if b, err = d.Mmap(0, 4096, unix.PROT_READ, unix.MAP_SHARED); err == nil {
							err = d.Munmap(b)
						}
					}
					if err == nil {
						runtime.Gosched() // let Close run, even with GOMAXPROCS=1
						continue
					}
					if !errors.Is(err, ioctl.ErrClosed) || !errors.Is(err, os.ErrClosed) {
						t.Errorf("call during Close = %v, want ErrClosed", err)
					}
					return
				}
			}()
		}
		close(start)
		// Close while calls of both kinds are running.
		for deadline := time.Now().Add(5 * time.Second); served.Load() < 100 && time.Now().Before(deadline); {
			time.Sleep(100 * time.Microsecond)
		}
		if err := d.Close(); err != nil {
			t.Fatalf("Close() = %v", err)
		}
		if err := d.Close(); err != nil {
			t.Errorf("second Close() = %v, want nil", err)
		}
		wg.Wait()
		if f.Closes() != 1 {
			t.Errorf("file closed %d times, want 1", f.Closes())
		}
		if served.Load() < 100 {
			t.Errorf("round %d: only %d ioctls before Close", round, served.Load())
		}
	}
}

func TestCallsAfterClose(t *testing.T) {
	for _, probed := range []bool{true, false} {
		f := fakefile.New(func(req uint, arg unsafe.Pointer) error {
			return nil
		})
		d := ioctl.New(f)
		if probed {
			d.Encoding()
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		calls := f.Calls()
		for _, c := range typedCalls {
			err := c.call(d)
			if !errors.Is(err, ioctl.ErrClosed) || !errors.Is(err, os.ErrClosed) || !errors.Is(err, unix.EBADF) {
				t.Errorf("probed=%v: %s after Close = %v, want ErrClosed", probed, c.op, err)
			}
			var e *ioctl.Error
			if !errors.As(err, &e) || e.Op != c.op || e.Sub != c.sub {
				t.Errorf("probed=%v: %s after Close = %#v, want an *Error naming %s %s", probed, c.op, err, c.op, c.sub)
			}
		}
		if _, err := d.Mmap(0, 4096, unix.PROT_READ, unix.MAP_SHARED); !errors.Is(err, ioctl.ErrClosed) {
			t.Errorf("Mmap after Close = %v, want ErrClosed", err)
		}
		if f.Calls() != calls {
			t.Errorf("%d ioctls reached the file after Close", f.Calls()-calls)
		}
		if d.Encoding() != ioctl.EncodingUnknown && !probed {
			t.Errorf("Encoding() after Close without probe = %v, want unknown", d.Encoding())
		}
		if err := d.Close(); err != nil {
			t.Errorf("second Close() = %v, want nil", err)
		}
		if f.Closes() != 1 {
			t.Errorf("file closed %d times, want 1", f.Closes())
		}
	}
}

func TestMunmapAfterClose(t *testing.T) {
	d := ioctl.New(fakefile.New(func(req uint, arg unsafe.Pointer) error { return nil }))
	b, err := d.Mmap(0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Munmap(b); err != nil {
		t.Errorf("Munmap after Close = %v, want nil", err)
	}
}
