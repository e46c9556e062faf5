package dma

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/gaudi-go/gaudi/internal/submit"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// The lifetime of a submission.
//
// A CS the driver accepted belongs to the device until WAIT_CS reports it
// done: completed (or retired long ago, GONE), timed out (the driver's TDR
// fired and it reset the device, which halts the engines), aborted (a
// reset), unknown to the driver (EINVAL), or the device file closed (the
// driver then keeps the context and its mappings until its CSs end). Only
// then are the CS's command buffers returned to the pool and its memory
// holds released. Every CS's resources travel in a Transfer (a Prepared
// hands its own to one when it is closed), and a Transfer releases them
// in finish, which runs once the device reported every one of its CSs
// done.
//
// Whoever waits for a Transfer with a context (Wait, Copy, Memset,
// Prepared.Run) returns when the context ends, with its error; the CSs
// stay the device's, and a reaper (one goroutine per such Transfer, which
// the Engine's in-flight count covers) keeps waiting without a context and
// finishes the Transfer when the device is done. Engine.Close hands every
// unfinished Transfer to a reaper and waits for them all, so no goroutine
// outlives it and nothing is released early.
//
// A device that answers WAIT_CS with errors that say nothing about the CS
// (EBUSY while it is not operational, anything unexpected) is asked again
// (await itself asks again through a reset, EBUSY, within its ctx),
// with a growing pause, for up to abandonAfter; a reset ends with the CS
// aborted well within that. After that the reaper gives up: the
// resources are leaked, never released (the memory returns to the driver
// when the device file closes), the Transfer fails with ErrInFlight, and
// Engine.Close reports it.

// abandonAfter is how long a reaper asks a device that answers WAIT_CS
// with errors other than the CS's outcome before it gives up on the CS.
var abandonAfter = 10 * time.Second

// waitForever is the timeout await gives WAIT_CS: none. The ioctl layer
// then waits until the CS ends or ctx does, issuing it in short slices
// only so that a cancelled ctx or a Close ends it promptly, and reads no
// clock on the way (a timed wait reads it twice).
const waitForever = math.MaxUint64

// issueCS submits CS arguments the caller filled (fillCS); keep is what
// they point at. It is the one submission path of the package: Copy,
// Memset, Batch.Start and Prepared.Run all come here, and so does the
// retry policy (submit.CS: EAGAIN retried with backoff from 10 µs to 10 ms,
// at most Options.MaxRetries times, within ctx; the status checked).
//
// On error, queued tells whether the CS may nonetheless be in flight under
// seq (a driver that answered success with a failed status); otherwise
// nothing was queued and the caller may release what the CS would have
// used at once. On success the CS is the device's: its resources go to a
// Transfer.
func (e *Engine) issueCS(ctx context.Context, a *hl.CSChunksArgs) (seq uint64, queued bool, err error) {
	out, err := submit.CS(ctx, e.io, a, e.opts.MaxRetries)
	if err != nil {
		var se *submit.StatusError
		if errors.As(err, &se) {
			return se.Seq, true, fmt.Errorf("submit: %w", err)
		}
		return 0, false, fmt.Errorf("submit: %w", err)
	}
	return out.Seq(), false, nil
}

// await waits for CS seq within ctx; a is the caller's WAIT_CS arguments
// (a Prepared reuses its own, and waits without allocating). final reports
// that the device is done with the CS, whatever err says; the completion
// timestamp comes with a CS that asked for one. When final is false the
// CS may still be running: err is ctx's error (the context ended first) or
// an error of the device that says nothing about the CS.
func (e *Engine) await(ctx context.Context, seq, gen uint64, a *hl.WaitCSArgs) (ts time.Duration, final bool, err error) {
	var busy submit.Busy
	for {
		if err := ctx.Err(); err != nil {
			return 0, false, fmt.Errorf("wait for CS %d: %w", seq, err)
		}
		*a = hl.WaitCSArgs{}
		in := a.In()
		in.SetSeq(seq)
		in.SetTimeoutUs(waitForever)
		err := e.io.WaitCS(ctx, a)
		out := a.Out()
		switch {
		case err == nil && out.Status == hl.HL_WAIT_CS_STATUS_COMPLETED:
			if out.Flags&hl.HL_WAIT_CS_STATUS_FLAG_TIMESTAMP_VLD != 0 {
				return time.Duration(out.TimestampNsec), true, nil
			}
			return 0, true, nil
		case err == nil && out.Status == hl.HL_WAIT_CS_STATUS_BUSY:
			continue
		case err == nil && out.Status == hl.HL_WAIT_CS_STATUS_ABORTED:
			if e.resets.pending(gen) {
				return 0, false, fmt.Errorf("wait for CS %d: %w", seq, errResetPending)
			}
			return 0, true, fmt.Errorf("wait for CS %d: %w", seq, ErrAborted)
		case err == nil && out.Status == hl.HL_WAIT_CS_STATUS_TIMEDOUT:
			return 0, true, fmt.Errorf("wait for CS %d: %w", seq, ioctl.ErrTimeout)
		case err == nil:
			return 0, false, fmt.Errorf("wait for CS %d: unexpected status %d: %w", seq, out.Status, ioctl.ErrNotSupported)
		// The device's verdicts come before the context's: the ioctl layer
		// reports a wait its context ended as that context's error, which
		// no errno matches.
		case errors.Is(err, ioctl.ErrTimeout):
			return 0, true, fmt.Errorf("wait for CS %d: %w", seq, err)
		case errors.Is(err, unix.EIO):
			if e.resets.pending(gen) {
				return 0, false, fmt.Errorf("wait for CS %d: %w (%w)", seq, errResetPending, err)
			}
			return 0, true, fmt.Errorf("wait for CS %d: %w", seq, errors.Join(ErrAborted, err))
		case errors.Is(err, ioctl.ErrClosed), errors.Is(err, unix.EINVAL):
			return 0, true, fmt.Errorf("wait for CS %d: %w", seq, err)
		case errors.Is(err, unix.EBUSY):
			// A reset under way: ask again until it ends and the CS has
			// its verdict, within ctx and abandonAfter (internal/submit's
			// policy for EBUSY from WAIT_CS).
			again, berr := busy.Retry(ctx, err, abandonAfter)
			if again {
				continue
			}
			return 0, false, fmt.Errorf("wait for CS %d: %w", seq, berr)
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			// ctx ended, perhaps a moment before ctx.Err() says so.
			if cerr := ctx.Err(); cerr != nil {
				// Both: the context ended while the device was not
				// operational.
				return 0, false, fmt.Errorf("wait for CS %d: %w (last answer: %w)", seq, cerr, err)
			}
			return 0, false, fmt.Errorf("wait for CS %d: %w", seq, err)
		default:
			return 0, false, fmt.Errorf("wait for CS %d: %w", seq, err)
		}
	}
}

// adopt hands an unfinished Transfer to a reaper, which finishes it when
// the device is done with its CSs. It is idempotent, and a no-op for a
// finished Transfer.
func (e *Engine) adopt(t *Transfer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.released || t.abandoned || t.adopted {
		return
	}
	t.adopted = true
	if t.owned {
		t.refs++ // the reaper's; see unref
	}
	// The Transfer, unfinished, holds the Engine's in-flight count, so it
	// is above zero and Add may race with Close's Wait.
	e.inflight.Add(1)
	e.reapers.Go(func() {
		defer e.inflight.Done()
		t.reap()
		t.unref()
	})
}

// reap waits, without a context, until the device is done with every CS
// of the Transfer, then finishes it; or gives up (see abandonAfter), and
// then reports false.
func (t *Transfer) reap() bool {
	e := t.e
	if e.pq != nil {
		return t.reapPQM()
	}
	var a hl.WaitCSArgs
	var first error
	var last time.Duration
	for _, seq := range t.seqs {
		tr := trouble{pause: time.Millisecond}
		for {
			if t.isReleased() {
				return true // a Wait saw it done
			}
			ts, final, err := e.await(context.Background(), seq, t.resetGen, &a)
			if final {
				if err != nil && first == nil {
					first = err
				}
				last = max(last, ts)
				break
			}
			if !tr.retry() {
				t.abandon(err)
				return false
			}
		}
	}
	t.finish(first, last)
	return true
}

// abandon ends a Transfer whose CSs the device never reported done:
// nothing is released, the Engine remembers the leak.
func (t *Transfer) abandon(cause error) {
	t.abandonAfter(abandonAfter, cause)
}

// abandonAfter is abandon after a wait of d.
func (t *Transfer) abandonAfter(d time.Duration, cause error) {
	err := fmt.Errorf("%w: gave up after %v: %w", ErrInFlight, d, cause)
	t.mu.Lock()
	if t.released || t.abandoned {
		t.mu.Unlock()
		return
	}
	t.abandoned = true
	t.mu.Unlock()
	t.end(err, 0)
	e := t.e
	e.mu.Lock()
	e.leaked++
	e.mu.Unlock()
	e.untrack(t, nil)
	e.inflight.Done()
}

// trouble paces a reaper's retries of a wait the device keeps failing:
// the pause doubles up to 100 ms, and after abandonAfter of failures the
// reaper gives the transfer up.
type trouble struct {
	since time.Time
	pause time.Duration
}

// retry sleeps before the next try, or reports false once the device has
// failed the wait for longer than abandonAfter.
func (tr *trouble) retry() bool {
	if tr.pause == 0 {
		tr.pause = time.Millisecond
	}
	if tr.since.IsZero() {
		tr.since = time.Now()
	} else if time.Since(tr.since) > abandonAfter {
		return false
	}
	time.Sleep(tr.pause)
	tr.pause = min(2*tr.pause, 100*time.Millisecond)
	return true
}
