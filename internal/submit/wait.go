package submit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gaudi-go/gaudi/ioctl"
	"golang.org/x/sys/unix"
)

// The retry policy for EBUSY from WAIT_CS (one for every package that
// waits for CSs). The driver answers a wait with EBUSY before it looks at
// the CS, while the device is not operational or a release watchdog runs
// (command_submission.c, hl_wait_ioctl: !hl_device_operational ||
// reset_info.watchdog_active), which is true for the whole of a reset: the
// answer says nothing about the CS, which the reset then aborts (EIO) or
// which had completed before it. So the wait asks again, the pause
// doubling from BusyMinPause to BusyMaxPause, until the driver gives the
// CS's verdict, ctx ends, or the device has answered EBUSY for longer
// than the caller's bound (a device that stays not operational: a
// malfunction, or a watchdog that waits for the caller to close the
// device). Then the error matches ioctl.ErrNotOperational (and ctx's error
// when ctx ended).
//
// A wait for a user interrupt on a counter in the caller's memory
// (stream.WaitInterrupt, WaitKernelCQ) is not asked again: after a reset
// the driver gives such a wait no verdict, and the counter may never reach
// its target, so the caller gets ErrNotOperational at once. The Gaudi3
// PDMA path waits on its own counters and asks again (dma's pqWait),
// since its jobs do get a verdict: the reset count moves and kills them.
const (
	BusyMinPause = time.Millisecond
	BusyMaxPause = 100 * time.Millisecond
	// BusyFor is the bound callers give Busy unless they have their own:
	// a reset ends within it (the simulator's in microseconds, a
	// hardware hard reset in a few seconds).
	BusyFor = 10 * time.Second
)

// Busy paces the retries of a wait the driver answers with EBUSY; the
// zero value is ready, for one wait. It is not safe for concurrent use.
type Busy struct {
	since time.Time
	pause time.Duration
}

// Retry reports whether err says the device is not operational (the
// driver's EBUSY, or any error matching ioctl.ErrNotOperational, such as
// a Gaudi3 wait aborted for a reset not done yet) and the wait should be
// asked again: it then sleeps the next pause first. It reports false for
// any other err, and, with an error to return in place of err, once ctx
// ended (during the pause too) or the device has not been operational for
// longer than bound (0: no bound but ctx).
func (b *Busy) Retry(ctx context.Context, err error, bound time.Duration) (bool, error) {
	if !errors.Is(err, unix.EBUSY) && !errors.Is(err, ioctl.ErrNotOperational) {
		return false, err
	}
	if cerr := ctx.Err(); cerr != nil {
		return false, fmt.Errorf("%w (last answer: %w)", cerr, err)
	}
	if b.since.IsZero() {
		b.since, b.pause = time.Now(), BusyMinPause
	} else if bound > 0 && time.Since(b.since) > bound {
		return false, fmt.Errorf("%w (for %v)", err, bound)
	}
	t := time.NewTimer(b.pause)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return false, fmt.Errorf("%w (last answer: %w)", ctx.Err(), err)
	}
	b.pause = min(2*b.pause, BusyMaxPause)
	return true, nil
}
