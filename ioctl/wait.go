package ioctl

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// defaultWaitSlice is the longest single WAIT_CS a Device issues. Between
// slices it checks the context, and Close can proceed; a longer wait is a
// series of slices.
const defaultWaitSlice = 10 * time.Millisecond

// maxTimeoutUs is the largest timeout, in microseconds, that a time.Duration
// can hold; larger timeouts are treated as unbounded.
const maxTimeoutUs = math.MaxInt64 / uint64(time.Microsecond)

// WaitCS issues WAIT_CS with args and waits, within ctx, for what args
// names: a submission sequence number, several of them (multi-CS), or a
// user interrupt. The timeout given in args (TimeoutUs, or the interrupt
// timeout for an interrupt wait) is relative, in microseconds, measured from
// the call; 0 polls once without sleeping. WaitCS reads it once, before the
// first attempt, and ends the wait at that deadline or at ctx's deadline,
// whichever comes first.
//
// The driver sleeps interruptibly. When a signal arrives it answers EINTR
// without a result, and WaitCS issues the wait again with only the time that
// remains. Long waits are issued in short slices so that cancelling ctx, or
// closing the Device, ends them promptly. Registering a timestamp for an
// interrupt (HL_WAIT_CS_FLAGS_REGISTER_INTERRUPT) does not wait and is
// issued once, as given.
//
// args.In() is restored before each attempt and args.Out() holds the
// driver's last answer. The outcomes are:
//
//   - nil, status HL_WAIT_CS_STATUS_COMPLETED: done (with
//     HL_WAIT_CS_STATUS_FLAG_GONE if the sequence had already been retired);
//   - nil, status HL_WAIT_CS_STATUS_BUSY: the timeout in args passed first;
//     like the driver, WaitCS does not treat this as an error;
//   - an error matching ctx.Err() (context.Canceled or
//     context.DeadlineExceeded): ctx ended first;
//   - an *Error matching ErrTimeout and unix.ETIMEDOUT, status
//     HL_WAIT_CS_STATUS_TIMEDOUT: the submission itself timed out on the
//     device, which the driver answers with ETIMEDOUT;
//   - an *Error matching unix.EIO, status HL_WAIT_CS_STATUS_ABORTED: the
//     submission was aborted, typically by a device reset (the driver
//     answers EIO, or 0 with this status for some interrupt waits);
//   - an *Error matching ErrNotOperational (EBUSY): the device is not
//     operational, for example in reset;
//   - an *Error matching unix.EINVAL: for example a sequence number that was
//     never submitted.
//
// WaitCS serves the waits that pass no user memory: one sequence number,
// or an interrupt whose completion the driver reads from a kernel CQ
// counter (HL_WAIT_CS_FLAGS_INTERRUPT_KERNEL_CQ). A multi-CS wait goes
// through WaitMultiCS and a wait on a value in user memory through
// WaitInterrupt; given here, they are refused with EINVAL before any call.
func (d *Device) WaitCS(ctx context.Context, args *hl.WaitCSArgs) error {
	flags := args.In().Flags
	userAddr := flags&hl.HL_WAIT_CS_FLAGS_INTERRUPT != 0 && flags&hl.HL_WAIT_CS_FLAGS_INTERRUPT_KERNEL_CQ == 0
	if flags&hl.HL_WAIT_CS_FLAGS_MULTI_CS != 0 || userAddr {
		return &Error{Op: opNames[nrWaitCS], Sub: subName(nrWaitCS, flags), Errno: unix.EINVAL}
	}
	return waitCS(d, ctx, args)
}

// WaitMultiCS is WaitCS for a multi-CS wait (HL_WAIT_CS_FLAGS_MULTI_CS,
// which it sets): args.Seqs points at the array of args.SeqArrLen sequence
// numbers, which the driver reads on every attempt. The completion bitmap
// is args.Out().CSCompletionMap.
func (d *Device) WaitMultiCS(ctx context.Context, args *hl.WaitCSMultiArgs) error {
	args.Flags |= hl.HL_WAIT_CS_FLAGS_MULTI_CS
	return waitCS(d, ctx, args)
}

// WaitInterrupt is WaitCS for a user interrupt whose completion the
// driver reads from user memory (HL_WAIT_CS_FLAGS_INTERRUPT, which it
// sets): args.Addr points at the value the driver compares with
// args.Target, and it is read for as long as the wait lasts.
func (d *Device) WaitInterrupt(ctx context.Context, args *hl.WaitCSInterruptArgs) error {
	args.Flags |= hl.HL_WAIT_CS_FLAGS_INTERRUPT
	return waitCS(d, ctx, args)
}

// waitArgs are the Go types of a WAIT_CS argument.
type waitArgs interface {
	hl.WaitCSArgs | hl.WaitCSMultiArgs | hl.WaitCSInterruptArgs
}

// waitCS is the wait loop of WaitCS and its variants.
func waitCS[T waitArgs](d *Device, ctx context.Context, args *T) error {
	v := waitView(args)
	in := v.In()
	flags := in.Flags
	req, err := d.request(nrWaitCS, flags)
	if err != nil {
		return err
	}
	saved := *args
	interrupt := flags&hl.HL_WAIT_CS_FLAGS_INTERRUPT != 0
	requested := waitTimeout(in, interrupt)

	unbounded := requested > maxTimeoutUs
	// start is the clock at the call, read once if a deadline needs it;
	// the first attempt's timeout is measured from it without a second
	// read (a clock read costs 30-60 ns on the test machine; issue 29).
	var start, deadline time.Time
	if !unbounded {
		start = d.now()
		deadline = start.Add(time.Duration(requested) * time.Microsecond)
	}
	byCtx := false
	if dl, ok := ctx.Deadline(); ok && (unbounded || dl.Before(deadline)) {
		deadline, unbounded, byCtx = dl, false, true
	}
	single := flags&hl.HL_WAIT_CS_FLAGS_REGISTER_INTERRUPT != 0
	// A wait nothing can cancel needs no slices, unless it is unbounded
	// (Close must still get its turn) or bounded only by ctx's deadline,
	// whose expiry the slices notice.
	whole := ctx.Done() == nil && !unbounded

	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return waitCtxErr(flags, err)
		}
		if attempt > 0 {
			*args = saved // the driver wrote its answer over the arguments
		}
		last := single
		if !single {
			var t time.Duration
			switch {
			case unbounded:
				t = d.slice
			default:
				now := start
				if attempt > 0 || now.IsZero() {
					now = d.now()
				}
				t = deadline.Sub(now)
				if whole || t <= d.slice {
					last = true
				} else {
					t = d.slice
				}
			}
			setWaitTimeout(in, interrupt, ceilMicroseconds(t))
		}

		err := attemptWait(d, req, args)
		if err != nil {
			if isEINTR(err) {
				continue
			}
			return wrapErr(opNames[nrWaitCS], subName(nrWaitCS, flags), req, err)
		}
		switch v.Out().Status {
		case hl.HL_WAIT_CS_STATUS_BUSY:
		case hl.HL_WAIT_CS_STATUS_TIMEDOUT:
			return &Error{Op: opNames[nrWaitCS], Sub: subName(nrWaitCS, flags), Req: req, Errno: unix.ETIMEDOUT}
		case hl.HL_WAIT_CS_STATUS_ABORTED:
			return &Error{Op: opNames[nrWaitCS], Sub: subName(nrWaitCS, flags), Req: req, Errno: unix.EIO}
		default:
			return nil
		}
		if last {
			if byCtx {
				err := ctx.Err()
				if err == nil {
					// The driver's clock ran out a moment before ctx's timer.
					err = context.DeadlineExceeded
				}
				return waitCtxErr(flags, err)
			}
			return nil
		}
	}
}

// waitTimeout returns the timeout field that applies to a wait.
func waitTimeout(in *hl.WaitCSIn, interrupt bool) uint64 {
	if interrupt {
		return in.InterruptTimeoutUs()
	}
	return in.TimeoutUs()
}

// setWaitTimeout sets the timeout field that applies to a wait.
func setWaitTimeout(in *hl.WaitCSIn, interrupt bool, us uint64) {
	if interrupt {
		in.SetInterruptTimeoutUs(us)
	} else {
		in.SetTimeoutUs(us)
	}
}

// ceilMicroseconds converts t to whole microseconds, rounding up so that a
// positive remainder never turns into a poll; t <= 0 gives 0.
func ceilMicroseconds(t time.Duration) uint64 {
	if t <= 0 {
		return 0
	}
	return uint64((t + time.Microsecond - 1) / time.Microsecond)
}

// waitCtxErr reports a wait ended by its context.
func waitCtxErr(flags uint32, err error) error {
	return fmt.Errorf("%s: %w", opText(opNames[nrWaitCS], subName(nrWaitCS, flags)), err)
}
