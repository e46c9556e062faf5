package stream

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/devio"
	"github.com/gaudi-go/gaudi/internal/submit"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// ErrNotSupported matches requests the ASIC refuses by design (the driver
// answers EPERM): multi-CS waits and staged submissions on Gaudi2, user
// interrupts on Gaudi. It is ioctl.ErrNotSupported, and the errors match
// it by ioctl's rule (see ioctl.Error), so either sentinel works with
// errors.Is; the errno stays reachable too.
var ErrNotSupported = ioctl.ErrNotSupported

// NoSeq is the sequence number a wait for a signal answers when the driver
// did not need to submit anything: the signal had already completed (or
// its encapsulated signals handle is gone). Waiting for NoSeq is not
// meaningful; treat the signal as done.
const NoSeq = math.MaxUint64

// Streams issues sync stream, signal and wait requests on one compute
// device. It holds no state of its own beyond the device: every method is
// one or a few ioctls, and a Streams is safe for concurrent use.
type Streams struct {
	dev *device.Device
	io  *ioctl.Device
}

// New returns the Streams of d, a compute node (not a control node).
func New(d *device.Device) (*Streams, error) {
	if d.IsControl() {
		return nil, fmt.Errorf("stream: %s is a control node", d.Path())
	}
	return &Streams{dev: d, io: devio.Of(d)}, nil
}

// Device returns the device the Streams uses.
func (s *Streams) Device() *device.Device { return s.dev }

// SubmitOptions adjusts one command submission: Signal, WaitForSignal,
// CollectiveWait, WaitForReserved, CollectiveWaitForReserved, Submit,
// SubmitStaged and SubmitStagedEncaps take it by value, and the zero value
// asks for what the driver does by default.
type SubmitOptions struct {
	// Timeout replaces the driver's default CS timeout (its TDR, the
	// timeout_locked module parameter) for the submission
	// (HL_CS_FLAGS_CUSTOM_TIMEOUT); it is what hl-thunk's *_timeout
	// variants do. The driver counts whole seconds, so a positive Timeout
	// is rounded up to the next second; it turns them into milliseconds in
	// 32 bits, so one longer than MaxTimeout is cut to MaxTimeout (a longer
	// one would wrap around to a short timeout).
	//
	// 0, the zero value, keeps the driver's default. A negative Timeout
	// (ImmediateTimeout) asks for a custom timeout of 0 seconds, which the
	// driver takes literally: the submission times out at once, as soon
	// as it is queued. The zero value has to mean the default, as in every
	// options struct of this module; an immediate timeout is only of use
	// to test timeout handling, so it gets the unusual spelling.
	Timeout time.Duration
	// Timestamp asks the driver to record the submission's completion
	// time (HL_CS_FLAGS_TIMESTAMP), which Wait then returns.
	Timestamp bool
	// SkipResetOnTimeout asks the driver to report a timed-out submission
	// without resetting the device (HL_CS_FLAGS_SKIP_RESET_ON_TIMEOUT).
	SkipResetOnTimeout bool
	// Restore are chunks the driver runs first, as a submission of their
	// own that it waits for (HL_CS_FLAGS_FORCE_RESTORE with
	// chunks_restore; hl-thunk's restore array). Only Submit, SubmitStaged
	// and SubmitStagedEncaps take them; the signal and wait submissions
	// refuse them (EINVAL).
	Restore []Chunk
}

// MaxTimeout is the longest SubmitOptions.Timeout the driver can hold:
// 4294967 seconds (about 49 days), whose milliseconds still fit in 32
// bits.
const MaxTimeout = math.MaxUint32 / 1000 * time.Second

// ImmediateTimeout is the SubmitOptions.Timeout that makes the driver time
// the submission out at once (a custom timeout of 0 seconds). Every
// negative Timeout means the same.
const ImmediateTimeout time.Duration = -1

// apply sets the CS flags and timeout o asks for.
func (o SubmitOptions) apply(flags, timeout *uint32) {
	if o.Timestamp {
		*flags |= hl.HL_CS_FLAGS_TIMESTAMP
	}
	if o.SkipResetOnTimeout {
		*flags |= hl.HL_CS_FLAGS_SKIP_RESET_ON_TIMEOUT
	}
	if o.Timeout != 0 {
		*flags |= hl.HL_CS_FLAGS_CUSTOM_TIMEOUT
		secs := max(o.Timeout, 0) / time.Second
		if o.Timeout%time.Second > 0 {
			secs++
		}
		*timeout = uint32(min(secs, MaxTimeout/time.Second))
	}
}

// issueCS issues CS with a through the library's one submission path
// (internal/submit): EAGAIN (queue full, too many submissions in flight)
// is retried with backoff from 10 µs to 10 ms, at most
// submit.DefaultRetries times while ctx lasts, and the driver's status is
// checked. What a points at is held by its hl.Pointer fields.
func issueCS[T submit.Args](ctx context.Context, s *Streams, op string, a *T) (*hl.CSOut, error) {
	out, err := submit.CS(ctx, s.io, a, submit.DefaultRetries)
	if err != nil {
		return nil, wrap(op, err)
	}
	return out, nil
}

// wrap adds op to an error. The sentinels it matches are ioctl's.
func wrap(op string, err error) error {
	return fmt.Errorf("%s: %w", op, err)
}
