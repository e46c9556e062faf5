package dma

import (
	"fmt"
	"sync/atomic"

	"github.com/gaudi-go/gaudi/ioctl"
)

// A WAIT_CS the driver answers with EIO (or the ABORTED status) says a
// reset was asked for, not that it happened. hl_device_cond_reset
// (common/device.c) with an eventfd registered, as after a CS timeout or
// a queue manager's error, postpones the reset until the device is
// released or its release watchdog fires, and meanwhile completes every
// CS in flight with -EIO (hl_abort_waiting_for_completions,
// force_complete_cs in common/command_submission.c): the engines run on,
// and a CS on another queue still reads and writes its memory. So an
// aborted wait is final only when the device's reset count (INFO
// RESET_COUNT, hard and compute) moved past the transfer's generation
// (below): else the CS stays the device's (errResetPending), waited for
// again, and its memory held. The driver counts a reset at its end, so a wait a reset in
// progress aborts may be held a little longer than needed, never less;
// on hardware that reset kills the holder anyway. A transfer's
// generation is the count the Engine saw last when the transfer was
// made: a reset the Engine never saw (none of its waits was aborted by
// it) before a transfer, and then a postponed one, would be taken for the
// reset; on hardware the first one kills the holder.

// errResetPending reports a wait the driver aborted while the device's
// reset count did not move: the CS may still run. It matches
// ioctl.ErrNotOperational.
var errResetPending = fmt.Errorf("wait aborted for a device reset not done yet: %w", ioctl.ErrNotOperational)

// resetWatch is the Engine's view of the device's reset count.
type resetWatch struct {
	count func() (uint64, error) // nil: every abort is taken for a reset
	seen  atomic.Uint64
}

// init notes the count now.
func (w *resetWatch) init(count func() (uint64, error)) {
	w.count = count
	if n, err := count(); err == nil {
		w.seen.Store(n)
	} else {
		w.count = nil
	}
}

// gen returns the count the Engine saw last: a transfer notes it when it
// is made, as the generation its CSs run in.
func (w *resetWatch) gen() uint64 { return w.seen.Load() }

// pending reports whether an abort the driver answered for a CS of
// generation gen leaves the reset not done: the count did not move since
// gen. A count that moved is noted, so later transfers run in the new
// generation. A count that cannot be read takes the driver's word (a
// reset).
func (w *resetWatch) pending(gen uint64) bool {
	if w.count == nil {
		return false
	}
	n, err := w.count()
	if err != nil {
		return false
	}
	for {
		seen := w.seen.Load()
		if n <= seen || w.seen.CompareAndSwap(seen, n) {
			break
		}
	}
	return n == gen
}
