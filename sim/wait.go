package sim

import (
	"math"
	"sync"
	"time"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// The WAIT_CS ioctl (hl_wait_ioctl, common/command_submission.c).
//
// A CS wait looks the sequence number up in the context's fence ring
// (hl_ctx_get_fence): a number not yet given out is EINVAL; one whose slot
// was recycled since (seq + max_pending_cs < next) is gone, and answers
// from the outcome store when the CS asked for a timestamp (the 256 most
// recent such CSs; the answer is taken out of the store), else COMPLETED
// with the GONE flag. timeout_us is relative: 0 polls once; the driver
// converts it with usecs_to_jiffies, whose argument is an unsigned int,
// so only its low 32 bits count, and MAX_SCHEDULE_TIMEOUT (LONG_MAX) waits
// for ever. The simulator waits exactly that many microseconds (the driver
// rounds up to a jiffy). Statuses: COMPLETED (with TIMESTAMP_VLD and the
// completion time when the CS asked for one), BUSY (rc 0), TIMEDOUT
// (ETIMEDOUT), ABORTED (EIO); a CS that failed before it was submitted
// completes with -EBUSY, which the wait reports as COMPLETED.
//
// Multi-CS waits (Gaudi only; Gaudi2 EPERM) convert timeout_us with
// hl_usecs64_to_jiffies, all 64 bits, poll up to 32 fences and wait
// for any of them; the driver wakes them when a CS completes on one of
// the same stream masters, the simulator on any completion of the
// context, then polls again. Interrupt waits: Gaudi has no user
// interrupts (EPERM); on Gaudi2 the interrupt id is checked as the driver
// does (a disabled decoder's, or an id outside the decoders, the user
// range and the two common ids, is EINVAL), then interrupt.go waits.

// hlCSOutcomeHistoryLen is HL_CS_OUTCOME_HISTORY_LEN.
const hlCSOutcomeHistoryLen = 256

// outcome is a completed CS's result (struct hl_cs_outcome).
type outcome struct {
	seq uint64
	ts  int64
	err unix.Errno
}

// outcomeStore is struct hl_cs_outcome_store: the newest outcomes of CSs
// that asked for a timestamp; pushing into a full store drops the oldest.
type outcomeStore struct {
	mu   sync.Mutex
	used []outcome // oldest first
}

func (s *outcomeStore) push(seq uint64, ts int64, err unix.Errno) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.used) == hlCSOutcomeHistoryLen {
		copy(s.used, s.used[1:])
		s.used = s.used[:len(s.used)-1]
	}
	s.used = append(s.used, outcome{seq, ts, err})
}

// pop takes the outcome of seq out of the store.
func (s *outcomeStore) pop(seq uint64) (outcome, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.used) - 1; i >= 0; i-- {
		if s.used[i].seq == seq {
			o := s.used[i]
			s.used = append(s.used[:i], s.used[i+1:]...)
			return o, true
		}
	}
	return outcome{}, false
}

// Wait outcomes (enum hl_cs_wait_status).
const (
	waitBusy = iota
	waitCompleted
	waitGone
)

// holdFence is hl_ctx_get_fence: the fence of seq, nil when it is gone.
// The fence is held (its slot cannot reuse it) until its release.
func (c *csCtx) holdFence(seq uint64) (*fence, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if seq >= c.seq {
		return nil, unix.EINVAL
	}
	if seq+c.mask+1 < c.seq {
		return nil, nil
	}
	fc := c.pending[seq&c.mask]
	if fc == nil {
		// A slot no CS took yet: sequence 0 of a new context, which
		// starts at 1 (hl_ctx_init: cs_sequence = 1). The driver's
		// cs_pending array starts zeroed, hl_fence_get(NULL) is a no-op,
		// and the NULL fence reports the CS as gone.
		return nil, nil
	}
	fc.holds.Add(1)
	return fc, nil
}

// waiter is what a wait sleeps on: a completing fence sends to ch, and t
// bounds the wait. Waiters are reused (csCtx.waiters), so a wait allocates
// nothing.
type waiter struct {
	ch chan struct{} // buffered: a wake never blocks
	t  *time.Timer   // nil until a wait needs a timer

	// fire is when t fires (nanotime; it may fire later), 0 when it does
	// not run. A wait leaves t running when the fence completes first, and
	// the next wait resets it only when it would fire after the new
	// deadline; an earlier firing is waited past.
	fire int64
}

// wake wakes the waiter once.
func (w *waiter) wake() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// getWaiter returns an idle waiter.
func (c *csCtx) getWaiter() *waiter {
	c.waitMu.Lock()
	defer c.waitMu.Unlock()
	if k := len(c.waiters); k > 0 {
		w := c.waiters[k-1]
		c.waiters[k-1] = nil
		c.waiters = c.waiters[:k-1]
		return w
	}
	return &waiter{ch: make(chan struct{}, 1)}
}

// putWaiter gives back a waiter no fence refers to any more.
func (c *csCtx) putWaiter(w *waiter) {
	select {
	case <-w.ch: // a wake that came after the timer
	default:
	}
	c.waitMu.Lock()
	c.waiters = append(c.waiters, w)
	c.waitMu.Unlock()
}

// waitDuration converts timeout_us as the driver does; forever for
// MAX_SCHEDULE_TIMEOUT.
func waitDuration(us uint64) (time.Duration, bool) {
	if us == math.MaxInt64 {
		return 0, true
	}
	return time.Duration(uint32(us)) * time.Microsecond, false
}

// waitSeq is _hl_cs_wait_ioctl and hl_wait_for_fence.
// Closing intr ends the wait with EINTR (IoctlInterruptible).
func (c *csCtx) waitSeq(seq, timeoutUs uint64, intr <-chan struct{}) (status int, ts int64, err error) {
	fc, err := c.holdFence(seq)
	if err != nil {
		return waitBusy, 0, err
	}
	var e unix.Errno
	if fc == nil {
		o, ok := c.outcomes.pop(seq)
		if !ok {
			return waitGone, 0, nil
		}
		status, ts, e = waitCompleted, o.ts, o.err
	} else {
		done := fc.completed()
		if !done && timeoutUs != 0 {
			d, forever := waitDuration(timeoutUs)
			done = c.waitFence(fc, d, forever, intr)
		}
		if !done {
			fc.release()
			if interrupted(intr) {
				return waitBusy, 0, unix.EINTR
			}
			return waitBusy, 0, nil
		}
		e, ts = fc.result()
		status = waitCompleted
		fc.release()
	}
	if e == unix.ETIMEDOUT || e == unix.EIO {
		return status, ts, e
	}
	return status, ts, nil
}

// waitFence waits for a held fence for d (for ever when forever), or
// until intr is closed.
func (c *csCtx) waitFence(fc *fence, d time.Duration, forever bool, intr <-chan struct{}) bool {
	if !forever && d <= 0 {
		return fc.completed()
	}
	fc.mu.Lock()
	if fc.completed() {
		fc.mu.Unlock()
		return true
	}
	w := c.getWaiter()
	fc.waiters = append(fc.waiters, w)
	fc.mu.Unlock()
	if forever && intr == nil {
		<-w.ch
		c.putWaiter(w) // complete took it off the fence
		return true
	}
	var timeout <-chan time.Time // nil: for ever
	deadline := nanotime() + int64(d)
	if !forever {
		timeout = armWaiter(w, d, deadline)
	}
wait:
	for {
		select {
		case <-w.ch:
			break wait
		case <-intr:
			break wait
		case <-timeout:
			w.fire = 0
			now := nanotime()
			if now >= deadline {
				break wait
			}
			w.t.Reset(time.Duration(deadline - now)) // it was set for an earlier wait
			w.fire = deadline
		}
	}
	fc.mu.Lock()
	for i, o := range fc.waiters {
		if o == w {
			last := len(fc.waiters) - 1
			fc.waiters[i] = fc.waiters[last]
			fc.waiters[last] = nil
			fc.waiters = fc.waiters[:last]
			break
		}
	}
	fc.mu.Unlock()
	c.putWaiter(w)
	return fc.completed()
}

// armWaiter sets w's timer to fire in d, at deadline, unless it fires
// before, and returns its channel.
func armWaiter(w *waiter, d time.Duration, deadline int64) <-chan time.Time {
	switch {
	case w.t == nil:
		w.t = time.NewTimer(d)
		w.fire = deadline
	case w.fire == 0 || w.fire > deadline:
		w.t.Reset(d)
		w.fire = deadline
	}
	return w.t.C
}

// interrupted reports whether intr is closed.
func interrupted(intr <-chan struct{}) bool {
	select {
	case <-intr:
		return true
	default:
		return false
	}
}

// waitIoctl is hl_wait_ioctl.
func (f *File) waitIoctl(a *hl.WaitCSArgs, intr <-chan struct{}) error {
	// hl_wait_ioctl: no waits on a device that is not operational or
	// whose release watchdog runs (the user should close the device).
	if !f.dev.State().operational() || f.dev.WatchdogActive() {
		return unix.EBUSY
	}
	c := f.subm()
	flags := a.In().Flags
	switch {
	case flags&hl.HL_WAIT_CS_FLAGS_INTERRUPT != 0:
		return c.waitInterrupt(a, intr)
	case flags&hl.HL_WAIT_CS_FLAGS_MULTI_CS != 0:
		return c.waitMulti(a, intr)
	}
	return c.waitCS(a, intr)
}

// waitCS is hl_cs_wait_ioctl.
func (c *csCtx) waitCS(a *hl.WaitCSArgs, intr <-chan struct{}) error {
	in := a.In()
	status, ts, err := c.waitSeq(in.Seq(), in.TimeoutUs(), intr)
	if err == unix.EINTR {
		return err // the argument as it came, as the driver leaves it
	}
	*a = hl.WaitCSArgs{}
	out := a.Out()
	if err != nil {
		switch err {
		case unix.ETIMEDOUT:
			out.Status = hl.HL_WAIT_CS_STATUS_TIMEDOUT
		case unix.EIO:
			out.Status = hl.HL_WAIT_CS_STATUS_ABORTED
		}
		return err
	}
	if ts != 0 {
		out.Flags |= hl.HL_WAIT_CS_STATUS_FLAG_TIMESTAMP_VLD
		out.TimestampNsec = ts
	}
	switch status {
	case waitGone:
		out.Flags |= hl.HL_WAIT_CS_STATUS_FLAG_GONE
		out.Status = hl.HL_WAIT_CS_STATUS_COMPLETED
	case waitCompleted:
		out.Status = hl.HL_WAIT_CS_STATUS_COMPLETED
	default:
		out.Status = hl.HL_WAIT_CS_STATUS_BUSY
	}
	return nil
}

// waitMulti is hl_multi_cs_wait_ioctl.
func (c *csCtx) waitMulti(a *hl.WaitCSArgs, intr <-chan struct{}) error {
	in := a.In()
	for _, b := range in.Pad() {
		if b != 0 {
			return unix.EINVAL
		}
	}
	if c.dev.prof.dramVirtual {
		return unix.EPERM // supports_wait_for_multi_cs
	}
	n := in.SeqArrLen()
	if n > hl.HL_WAIT_MULTI_CS_LIST_MAX_LEN {
		return unix.EINVAL
	}
	seqs := make([]uint64, n)
	if err := c.f.copyIn(in.Seq(), sliceBytes(seqs)); err != nil {
		return unix.EFAULT
	}
	// hl_multi_cs_wait_ioctl converts timeout_us with
	// hl_usecs64_to_jiffies, all 64 bits of it (a single-CS wait keeps
	// only the low 32).
	d, forever := usecs64Duration(in.TimeoutUs())
	deadline := time.Now().Add(d)
	wake := c.completionChan()
	bitmap, ts, _, err := c.pollFences(seqs, true)
	for err == nil && bitmap == 0 && in.TimeoutUs() != 0 {
		if c.f.Killed() {
			// A hard reset killed the process (File.kill), whose
			// signal ends the wait.
			return ErrKilled
		}
		left := time.Until(deadline)
		if !forever && left <= 0 {
			break
		}
		if forever {
			select {
			case <-wake:
			case <-intr:
				return unix.EINTR
			}
		} else {
			t := time.NewTimer(left)
			select {
			case <-wake:
			case <-t.C:
			case <-intr:
				t.Stop()
				return unix.EINTR
			}
			t.Stop()
		}
		wake = c.completionChan()
		// The driver takes the timestamp of the CS that woke it; the
		// simulator the earliest among the completed ones.
		bitmap, _, ts, err = c.pollFences(seqs, false)
	}
	if err != nil {
		return err
	}
	*a = hl.WaitCSArgs{}
	out := a.Out()
	if bitmap == 0 {
		out.Status = hl.HL_WAIT_CS_STATUS_BUSY
		return nil
	}
	out.Status = hl.HL_WAIT_CS_STATUS_COMPLETED
	out.CSCompletionMap = bitmap
	if ts != 0 {
		out.TimestampNsec = ts
		out.Flags |= hl.HL_WAIT_CS_STATUS_FLAG_TIMESTAMP_VLD
	} else {
		out.Flags |= hl.HL_WAIT_CS_STATUS_FLAG_GONE // the driver's test: no timestamp
	}
	return nil
}

// pollFences is hl_cs_poll_fences: which of seqs completed (bit i for
// seqs[i]; a gone CS counts as completed). With updateTS, ts is the
// earliest completion timestamp among them, unless a gone CS came first
// in the list, as the driver stops looking then; earliest is that
// timestamp whatever the order.
func (c *csCtx) pollFences(seqs []uint64, updateTS bool) (bitmap uint32, ts, earliest int64, err error) {
	fences := make([]*fence, len(seqs))
	defer func() {
		for _, fc := range fences {
			if fc != nil {
				fc.release()
			}
		}
	}()
	for i, s := range seqs {
		if fences[i], err = c.holdFence(s); err != nil {
			return 0, 0, 0, err
		}
	}
	first, least := int64(math.MaxInt64), int64(math.MaxInt64)
	for i, fc := range fences {
		status, fts, err := c.waitOne(seqs[i], fc)
		if err != nil {
			return 0, 0, 0, err
		}
		switch status {
		case waitCompleted:
			bitmap |= 1 << i
			if updateTS && fts < first {
				first = fts
			}
			if fts != 0 && fts < least {
				least = fts
			}
		case waitGone:
			updateTS = false
			bitmap |= 1 << i
		}
	}
	if updateTS && first != math.MaxInt64 {
		ts = first
	}
	if least != math.MaxInt64 {
		earliest = least
	}
	return bitmap, ts, earliest, nil
}

// waitOne is hl_wait_for_fence with timeout 0 on a fence already looked up.
func (c *csCtx) waitOne(seq uint64, fc *fence) (int, int64, error) {
	if fc == nil {
		o, ok := c.outcomes.pop(seq)
		if !ok {
			return waitGone, 0, nil
		}
		if o.err == unix.ETIMEDOUT || o.err == unix.EIO {
			return waitCompleted, o.ts, o.err
		}
		return waitCompleted, o.ts, nil
	}
	if !fc.completed() {
		return waitBusy, 0, nil
	}
	err, ts := fc.result()
	if err == unix.ETIMEDOUT || err == unix.EIO {
		return waitCompleted, ts, err
	}
	return waitCompleted, ts, nil
}

// waitInterrupt is hl_interrupt_wait_ioctl up to the interrupt lookup.
func (c *csCtx) waitInterrupt(a *hl.WaitCSArgs, intr <-chan struct{}) error {
	p := &c.dev.prof
	if p.userInterrupts == 0 {
		return unix.EPERM // no user interrupts (Gaudi)
	}
	const decoders = 10 // user_dec_intr_count: NUMBER_OF_DEC
	id := a.In().Flags >> 20
	first := uint32(p.firstUserInterrupt)
	last := first + uint32(p.userInterrupts) - 1
	switch {
	case id < decoders:
		if p.decoderMask&(1<<id) == 0 {
			return unix.EINVAL
		}
	case id >= first && id <= last, id == 0xFFF, id == 0xFFE:
	default:
		return unix.EINVAL
	}
	return c.interruptWait(a, id, intr) // interrupt.go
}
