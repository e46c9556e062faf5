package submit

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/ioctl"
	"golang.org/x/sys/unix"
)

// TestBusy: the retry policy for EBUSY from WAIT_CS asks again only for
// EBUSY, and ends with an error that says why once ctx ends or the bound
// passes.
func TestBusy(t *testing.T) {
	busy := &ioctl.Error{Op: "WAIT_CS", Errno: unix.EBUSY}
	t.Run("other errors", func(t *testing.T) {
		var b Busy
		for _, err := range []error{nil, unix.EIO, unix.EINVAL, context.Canceled} {
			again, got := b.Retry(context.Background(), err, 0)
			if again || got != err {
				t.Errorf("Retry(%v) = %v, %v; want false and the error unchanged", err, again, got)
			}
		}
	})
	t.Run("asks again", func(t *testing.T) {
		var b Busy
		// EBUSY, and an error that says the device is not operational
		// without it (a Gaudi3 wait aborted for a reset not done yet).
		pending := fmt.Errorf("reset pending: %w", ioctl.ErrNotOperational)
		for i, err := range []error{busy, pending, busy} {
			if again, err := b.Retry(context.Background(), err, 0); !again || err != nil {
				t.Fatalf("try %d: %v, %v; want another try", i, again, err)
			}
		}
	})
	t.Run("context ends", func(t *testing.T) {
		var b Busy
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		again, err := b.Retry(ctx, busy, 0)
		if again || !errors.Is(err, context.Canceled) || !errors.Is(err, ioctl.ErrNotOperational) {
			t.Errorf("Retry after the context ended: %v, %v; want false, context.Canceled and ErrNotOperational", again, err)
		}
	})
	t.Run("bound", func(t *testing.T) {
		var b Busy
		const bound = 5 * time.Millisecond
		start := time.Now()
		for {
			again, err := b.Retry(context.Background(), busy, bound)
			if again {
				continue
			}
			if !errors.Is(err, ioctl.ErrNotOperational) {
				t.Errorf("Retry past its bound: %v, want ErrNotOperational", err)
			}
			if d := time.Since(start); d < bound {
				t.Errorf("gave up after %v, before its bound %v", d, bound)
			}
			return
		}
	})
}
