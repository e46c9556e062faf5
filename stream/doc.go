// Package stream provides sync streams, signals, encapsulated signals,
// multi-CS and interrupt waits, and timestamps: the parts of the driver's
// CS and WAIT_CS ioctls that order work between queues and report when it
// finished, as hl-thunk's signal, wait, staged submission, multi-CS,
// interrupt and timestamp functions do.
//
// A Streams wraps an open compute device (device.Device). Its methods
// issue one ioctl each, the way hl-thunk does, but return Go values and
// errors:
//
//   - Signal, WaitForSignal and CollectiveWait submit the driver-made
//     signal and wait command submissions of a queue's sync stream;
//   - Reserve and Unreserve manage encapsulated signals, which a staged
//     submission (SubmitStagedEncaps) claims and WaitForReserved waits on;
//   - Submit, SubmitStaged and SubmitStagedEncaps submit command buffers
//     of the caller's own;
//   - Wait, WaitMulti and PollMulti wait for command submissions, with
//     their completion timestamps;
//   - WaitInterrupt and WaitKernelCQ wait for user interrupts, and
//     TimestampBuffer with RegisterTimestamp has the driver record when an
//     interrupt brought a counter to its target.
//
// Queues are device.Queue values (from Device.Queue, Device.Queues or
// device.Gaudi2Queue), and the collective engine a device.Engine; one of
// another ASIC than the device's is refused with a *device.WrongASICError
// before anything reaches the driver. Every submission takes a
// SubmitOptions, whose zero value asks for the driver's defaults.
//
// Errors keep the driver's errno (errors.Is(err, unix.EINVAL)) and match
// the sentinels of package ioctl by its rule (see ioctl.Error): requests an
// ASIC refuses by design (EPERM: multi-CS waits and staged submissions on
// Gaudi2, user interrupts on Gaudi) match ErrNotSupported, a device in
// reset ioctl.ErrNotOperational, a closed device ioctl.ErrClosed. Wait and
// WaitMulti ask again while the driver answers EBUSY (a reset under way
// says nothing about the CS), with a pause doubling from 1 ms to 100 ms,
// until it gives the CS's verdict, the context ends or 10 s passed, as
// package dma does (internal/submit's retry policy).
//
// Every call that submits or waits takes a context.Context first. Waits
// are issued in slices, so cancelling the context ends them promptly. A
// submission the driver refuses for the moment (EAGAIN: a queue is full,
// or too many submissions are in flight) is issued again after a pause
// growing from 10 µs to 10 ms, at most 1000 times, as hl-thunk retries
// it, for as long as the context lasts. A context that has ended before a
// call stops it before it reaches the driver.
package stream
