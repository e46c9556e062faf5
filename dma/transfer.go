package dma

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// holder is memory a transfer keeps from being released. Release returns
// the error of a release it finished (see memory.Buffer.Release).
type holder interface{ Release() error }

// Transfer is a submitted batch of copies and fills. Wait for it, or
// select on Done. The memory it uses stays held until it completes. A
// Transfer is safe for concurrent use.
type Transfer struct {
	e     *Engine
	seqs  []uint64
	cbs   []*cmdBuf
	holds []holder

	mu       sync.Mutex
	finished bool
	err      error
	ts       time.Duration
	done     chan struct{}
}

// Seqs returns the sequence numbers of the transfer's CSs.
func (t *Transfer) Seqs() []uint64 { return t.seqs }

// Timestamp returns the device's completion time of the transfer's last CS
// (CLOCK_MONOTONIC), when the Engine asked for timestamps and the transfer
// completed.
func (t *Transfer) Timestamp() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ts
}

// Wait blocks until every CS of the transfer completed, ctx ended, or the
// driver reported a failure. After ctx ends the transfer is still running
// and Wait may be called again; every other result is final.
func (t *Transfer) Wait(ctx context.Context) error {
	t.mu.Lock()
	if t.finished {
		err := t.err
		t.mu.Unlock()
		return err
	}
	t.mu.Unlock()
	var ts time.Duration
	for _, seq := range t.seqs {
		st, err := t.e.waitSeq(ctx, seq)
		if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return err
		}
		if st > ts {
			ts = st
		}
		if err != nil {
			t.finish(err, 0)
			return err
		}
	}
	t.finish(nil, ts)
	return nil
}

// Done returns a channel closed when the transfer finished; Err then tells
// how.
func (t *Transfer) Done() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done == nil {
		t.done = make(chan struct{})
		if t.finished {
			close(t.done)
		} else {
			go t.Wait(context.Background())
		}
	}
	return t.done
}

// Err returns the transfer's result once it finished, and nil before.
func (t *Transfer) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// finish records the result and releases the memory and command buffers.
// Errors of those releases are not the transfer's: they are reported to
// the Engine, whose Close returns them.
func (t *Transfer) finish(err error, ts time.Duration) {
	t.mu.Lock()
	if t.finished {
		t.mu.Unlock()
		return
	}
	t.finished, t.err, t.ts = true, err, ts
	if t.done != nil {
		close(t.done)
	}
	t.mu.Unlock()
	var errs []error
	for _, cb := range t.cbs {
		errs = append(errs, t.e.cbs.put(cb))
	}
	for _, h := range t.holds {
		errs = append(errs, h.Release())
	}
	t.e.cbs.report(errors.Join(errs...))
	t.e.untrack(t, nil)
	t.e.inflight.Done()
}

// waitSlice is the longest single wait the Engine asks the driver for; a
// longer wait is a series of them.
const waitSlice = time.Second

// waitSeq waits for one CS and returns its completion timestamp when the
// driver gave one.
func (e *Engine) waitSeq(ctx context.Context, seq uint64) (time.Duration, error) {
	var a hl.WaitCSArgs
	return e.waitSeqInto(ctx, seq, &a)
}

// waitSeqInto is waitSeq with the WAIT_CS arguments supplied by the caller,
// so a Prepared reuses its own and waits without allocating.
func (e *Engine) waitSeqInto(ctx context.Context, seq uint64, a *hl.WaitCSArgs) (time.Duration, error) {
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		*a = hl.WaitCSArgs{}
		in := a.In()
		in.SetSeq(seq)
		in.SetTimeoutUs(uint64(waitSlice / time.Microsecond))
		err := e.io.WaitCS(ctx, a)
		out := a.Out()
		switch {
		case err == nil && out.Status == hl.HL_WAIT_CS_STATUS_COMPLETED:
			if out.Flags&hl.HL_WAIT_CS_STATUS_FLAG_TIMESTAMP_VLD != 0 {
				return time.Duration(out.TimestampNsec), nil
			}
			return 0, nil
		case err == nil && out.Status == hl.HL_WAIT_CS_STATUS_BUSY:
			continue
		case err == nil && out.Status == hl.HL_WAIT_CS_STATUS_ABORTED:
			return 0, fmt.Errorf("wait for CS %d: %w", seq, ErrAborted)
		case err != nil && errors.Is(err, unix.EIO):
			return 0, fmt.Errorf("wait for CS %d: %w", seq, errors.Join(ErrAborted, err))
		case err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
			return 0, err
		case err != nil:
			return 0, fmt.Errorf("wait for CS %d: %w", seq, err)
		default:
			return 0, fmt.Errorf("wait for CS %d: unexpected status %d: %w", seq, out.Status, ioctl.ErrNotSupported)
		}
	}
}
