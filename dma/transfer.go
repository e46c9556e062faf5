package dma

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/gaudi-go/gaudi/internal/memlink"
	"github.com/gaudi-go/gaudi/internal/pqm"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// Transfer is a submitted batch of copies and fills. Wait for it, or
// select on Done. The memory it uses stays held, and the command buffers
// the device reads stay out of the pool, until the device reports every
// CS of it done (completed, timed out or aborted), whoever waits or gives
// up waiting. A Transfer is safe for concurrent use.
type Transfer struct {
	transferState
	store transferStore
}

// transferState is what a pooled Transfer clears before its reuse: its
// state and what refers to the caller's memory.
type transferState struct {
	e     *Engine
	seqs  []uint64
	cbs   []*cmdBuf
	holds []any // the *memory.Buffer and *memory.HostBuffer it holds (memlink)
	// failed is the result when a submission failed after earlier CSs of
	// the transfer were queued: they are waited for, and the transfer then
	// fails with this error.
	failed error

	// tickets are the jobs of a transfer on a Gaudi3's PDMA channels
	// (pqm.go), which take the place of CSs there, and deadline when the
	// transfer times out.
	tickets  []pqm.Ticket
	deadline time.Time

	// resetGen is the device's reset count the Engine saw last when the
	// transfer was made: an aborted wait is its CSs' end only once the
	// count moved past it (resetwait.go).
	resetGen uint64

	mu        sync.Mutex
	finished  bool // the result is known (err, ts)
	released  bool // the memory and command buffers went back (or are going)
	releasing bool // a finish is giving them back: waiters wait for it
	settled   bool // waiters may go: done is closed (if made)
	adopted   bool // a reaper waits for it (flight.go)
	abandoned bool // the reaper gave up on it (flight.go)
	err       error
	ts        time.Duration
	done      chan struct{}

	// owned marks a Transfer of the Engine's own (a Copy that waits), which
	// returns to the Engine's pool when nothing refers to it any more: refs
	// counts the Copy and the reaper that adopted it (under mu), and the
	// last to let go pools it. batch is the batch it runs.
	owned bool
	refs  int
	batch Batch

	// Inline storage for the memory holds and the operation of a single
	// copy: they refer to the caller's buffers, which a pooled Transfer
	// must not keep alive.
	holdArr [4]any
	opArr   [1]op
}

// transferStore is a Transfer's inline storage, so that a transfer of a
// few jobs (every single copy below the stripe size) allocates nothing
// beyond the Transfer. A pooled Transfer keeps it as it was: every
// element is written before it is read (encode, chunksFor, submit, await
// and the appends to seqs, cbs and tickets), and what it refers to (command
// buffers, pooled Gaudi3 jobs) is the Engine's, which outlives its pool.
// Not clearing its 2.8 KB saves about 150 ns per copy (issue 29).
type transferStore struct {
	seqArr    [1]uint64
	ticketArr [inlineJobs]pqm.Ticket
	cbArr     [inlineJobs]*cmdBuf
	jobArr    [inlineJobs]job
	jobPtrs   [inlineJobs]*job
	chunkArr  [inlineJobs]hl.CSChunk
	args      hl.CSChunksArgs // the CS arguments of its first CS
	wait      hl.WaitCSArgs   // the WAIT_CS arguments of an owned Transfer's wait
}

// inlineJobs is how many jobs a Transfer holds without allocating.
const inlineJobs = 8

// init prepares a zero Transfer for e.
func (t *Transfer) init(e *Engine) {
	t.e = e
	t.resetGen = e.resets.gen()
	t.seqs, t.cbs, t.holds = t.store.seqArr[:0], t.store.cbArr[:0], t.holdArr[:0]
	t.tickets = t.store.ticketArr[:0]
}

// getTransfer returns a pooled Transfer of the Engine's own, with an empty
// batch.
func (e *Engine) getTransfer() *Transfer {
	t, _ := e.transfers.Get().(*Transfer)
	if t == nil {
		t = new(Transfer)
	}
	t.init(e)
	t.owned, t.refs = true, 1
	t.batch = Batch{e: e, ops: t.opArr[:0]}
	return t
}

// putTransfer clears the state of a Transfer of the Engine's own (not its
// inline store, see transferStore) and pools it. Nothing may refer to it
// any more.
func (e *Engine) putTransfer(t *Transfer) {
	t.transferState = transferState{}
	e.transfers.Put(t)
}

// unref lets go of an owned Transfer: the Copy that made it, or a reaper
// that adopted it. The last one pools it, if it finished; one the device
// never reported done (abandoned) is never reused.
func (t *Transfer) unref() {
	if !t.owned {
		return
	}
	t.mu.Lock()
	t.refs--
	pool := t.refs == 0 && t.released
	t.mu.Unlock()
	if pool {
		t.e.putTransfer(t)
	}
}

// Seqs returns the sequence numbers of the transfer's CSs: none on a
// Gaudi3, whose transfers are jobs in PDMA channels' rings.
func (t *Transfer) Seqs() []uint64 { return t.seqs }

// Timestamp returns the device's completion time of the transfer's last CS
// (CLOCK_MONOTONIC), when the Engine asked for timestamps and the transfer
// completed.
func (t *Transfer) Timestamp() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ts
}

// Wait blocks until the device reported every CS of the transfer done, or
// ctx ended. When ctx ends first, Wait returns its error at once: the
// transfer still runs, its memory stays held until the device is done
// (the Engine keeps waiting for it in the background and then releases
// it), and Wait may be called again. Every other result is final: nil,
// or how the device failed the transfer (ioctl.ErrTimeout, ErrAborted).
// A final result comes after the transfer let go of the memory it held,
// so a buffer closed while the transfer used it is freed by then, unless
// the device still has it (a Gaudi3 transfer that timed out: see the
// package's Lifetimes).
func (t *Transfer) Wait(ctx context.Context) error {
	t.mu.Lock()
	if t.settled {
		err := t.err
		t.mu.Unlock()
		return err
	}
	if t.finished {
		// Another goroutine is releasing the transfer's memory: its result
		// comes once that is done.
		done := t.doneLocked()
		t.mu.Unlock()
		select {
		case <-done:
			return t.Err()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	t.mu.Unlock()
	return t.wait(ctx)
}

// wait is Wait for a transfer that had not finished: runOwned calls it
// for the Transfer it just started, which nothing else can have finished
// (no set or reaper has it), sparing a critical section on t.mu.
func (t *Transfer) wait(ctx context.Context) error {
	if t.e.pq != nil {
		return t.waitPQM(ctx)
	}
	// A Transfer of the Engine's own has one waiter, its Copy (a reaper
	// that adopts it has its own arguments): it waits with the Transfer's.
	a := &t.store.wait
	if !t.owned {
		a = t.e.getWaitArgs()
		defer t.e.waitArgs.Put(a)
	}
	var first error
	var last time.Duration
	for _, seq := range t.seqs {
		ts, final, err := t.e.await(ctx, seq, t.resetGen, a)
		if !final {
			// The CS may still run: the transfer stays the device's, and a
			// reaper finishes it when the device is done.
			t.e.adopt(t)
			return err
		}
		if err != nil && first == nil {
			first = err
		}
		last = max(last, ts)
	}
	return t.finish(first, last)
}

// Done returns a channel closed when the transfer finished, after it let
// go of the memory it held (as for Wait); Err then tells how.
func (t *Transfer) Done() <-chan struct{} {
	t.mu.Lock()
	done, finished := t.doneLocked(), t.finished
	t.mu.Unlock()
	if !finished {
		t.e.adopt(t)
	}
	return done
}

// doneLocked returns the done channel, made (closed if settled) on first
// use. t.mu is held.
func (t *Transfer) doneLocked() chan struct{} {
	if t.done == nil {
		t.done = make(chan struct{})
		if t.settled {
			close(t.done)
		}
	}
	return t.done
}

// settleLocked lets waiters go: Wait returns t.err, done closes. t.mu is
// held.
func (t *Transfer) settleLocked() {
	if t.settled {
		return
	}
	t.settled = true
	if t.done != nil {
		close(t.done)
	}
}

// Err returns the transfer's result once it finished, and nil before.
func (t *Transfer) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

func (t *Transfer) isReleased() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.released
}

// claimRelease reports whether the caller is the one to release the
// transfer's resources: the first, and not after a reaper gave up on it.
func (t *Transfer) claimRelease() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.claimLocked()
}

// claimLocked is claimRelease with t.mu held.
func (t *Transfer) claimLocked() bool {
	if t.released || t.abandoned {
		return false
	}
	t.released = true
	return true
}

// end records the result, once; it reports whether this call did.
func (t *Transfer) end(err error, ts time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.endLocked(err, ts)
}

// endLocked is end with t.mu held.
func (t *Transfer) endLocked(err error, ts time.Duration) bool {
	if t.finished {
		return false
	}
	if t.failed != nil {
		err = t.failed
	}
	t.finished, t.err, t.ts = true, err, ts
	if !t.releasing {
		t.settleLocked()
	}
	return true
}

// finish records the result, unless one was recorded already (a Gaudi3
// transfer that timed out), releases the memory and command buffers, and
// returns the transfer's result. Only call it once the device is done
// with every CS or job of the transfer (or none was queued). Errors of the
// releases are not the transfer's: they are reported to the Engine, whose
// Close returns them.
//
// Waiters (Wait, Done, and a finish that lost the claim) go only once the
// release is done: a caller that closed a buffer the transfer used finds
// it freed when its wait returns. That matters where a wait is the last
// thing before a Close that must leave nothing allocated (rdma waits for
// its staging copies so, and TestKernelCancel failed once in CI when a
// reaper had recorded the result and not yet released the source).
func (t *Transfer) finish(err error, ts time.Duration) error {
	// One critical section for the result and the claim: a copy takes
	// t.mu a few times, at about 20 ns each on the test machine (issue
	// 29). A Transfer of the Engine's own has no other waiter (its Copy
	// is the finisher), so it needs no second one.
	t.mu.Lock()
	claimed := t.claimLocked()
	shared := claimed && !t.owned
	if shared {
		t.releasing = true
	}
	t.endLocked(err, ts)
	result := t.err
	var wait chan struct{}
	if !claimed && t.releasing {
		wait = t.doneLocked()
	}
	t.mu.Unlock()
	switch {
	case shared:
		if testHookReleasing != nil {
			testHookReleasing(t)
		}
		t.e.cbs.report(t.release())
		t.mu.Lock()
		t.releasing = false
		t.settleLocked()
		t.mu.Unlock()
	case claimed:
		t.e.cbs.report(t.release())
	case wait != nil:
		// Bounded: the release does not wait on the device.
		<-wait
	}
	return result
}

// testHookReleasing, when set, runs in finish between recording the
// result of a Transfer that is not the Engine's own and releasing its
// memory.
var testHookReleasing func(*Transfer)

// release gives back the command buffers and the memory holds of a
// transfer that ended, and returns the errors of those releases.
func (t *Transfer) release() error {
	var err error
	for _, cb := range t.cbs {
		if e := t.e.cbs.put(cb); e != nil {
			err = errors.Join(err, e)
		}
	}
	for _, h := range t.holds {
		if e := memlink.Release(h); e != nil {
			err = errors.Join(err, e)
		}
	}
	if !t.owned { // see started
		t.e.untrack(t, nil)
	}
	t.e.inflight.Done()
	return err
}

// getWaitArgs returns pooled WAIT_CS arguments; put them back in
// e.waitArgs.
func (e *Engine) getWaitArgs() *hl.WaitCSArgs {
	if a, _ := e.waitArgs.Get().(*hl.WaitCSArgs); a != nil {
		return a
	}
	return new(hl.WaitCSArgs)
}
