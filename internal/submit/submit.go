// Package submit issues command submissions (the CS ioctl) for the
// packages that submit work: one retry policy and one reading of the
// driver's answer, so dma and stream behave the same.
//
// The contract with callers: when CS returns an error, the driver queued
// nothing (it answers EAGAIN without touching the arguments, and any other
// error before the CS reached a queue), so whatever the arguments point at
// may be released at once. When it succeeds, the CS is the device's until
// WAIT_CS reports it completed, timed out or aborted; releasing the
// command buffers or the memory it uses before that lets the DMA engines
// read or write memory that is no longer there.
package submit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// The retry policy for EAGAIN: the driver's queues are full, or it has
// too many CSs in flight. The pause before each retry doubles from
// MinBackoff up to MaxBackoff.
const (
	MinBackoff = 10 * time.Microsecond
	MaxBackoff = 10 * time.Millisecond
	// DefaultRetries is the retry bound callers use unless configured
	// otherwise: with the backoff, about ten seconds of a full queue.
	DefaultRetries = 1000
)

// StatusError reports a CS the driver answered without an error but with
// a status other than HL_CS_STATUS_SUCCESS. The driver sets the status to
// its return code, so this does not happen with a correct driver; Seq is
// the sequence number it answered, which callers must treat as possibly
// queued.
type StatusError struct {
	Status uint32
	Seq    uint64
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("ioctl CS: status %d without an error (sequence %d)", e.Status, e.Seq)
}

// Args are the Go forms of the CS argument this package issues: a CS that
// passes no user memory, and a submission of chunk arrays, which holds
// them through hl.Pointer fields (so a saved copy keeps them alive too).
type Args interface {
	hl.CSArgs | hl.CSChunksArgs
}

// CS issues the CS ioctl with a, which the caller filled. EAGAIN is retried, with
// a restored to what it was, up to retries times with exponential backoff
// while ctx lasts. ctx is checked before the first attempt, so a CS is
// never issued for a caller whose context already ended.
//
// It returns the driver's output (a.Out()) on success. On error nothing
// was queued, except for a *StatusError (see there). The error is the
// ioctl's, or ctx.Err() when the context ended, unwrapped, for the caller
// to give context to. CS allocates nothing unless it has to retry.
func CS[T Args](ctx context.Context, io *ioctl.Device, a *T, retries int) (*hl.CSOut, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	saved := *a
	pause := MinBackoff
	var timer *time.Timer
	for try := 0; ; try++ {
		var err error
		var out *hl.CSOut
		switch a := any(a).(type) {
		case *hl.CSArgs:
			err, out = io.CS(a), a.Out()
		case *hl.CSChunksArgs:
			err, out = io.CSChunks(a), a.Out()
		}
		if err == nil {
			if out.Status != hl.HL_CS_STATUS_SUCCESS {
				return out, &StatusError{Status: out.Status, Seq: out.Seq()}
			}
			return out, nil
		}
		if !errors.Is(err, unix.EAGAIN) {
			return nil, err
		}
		if try >= retries {
			return nil, fmt.Errorf("%w (gave up after %d retries)", err, try)
		}
		*a = saved
		if timer == nil {
			timer = time.NewTimer(pause)
		} else {
			timer.Reset(pause)
		}
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
		pause = min(2*pause, MaxBackoff)
	}
}
