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
	dev   *device.Device
	io    *ioctl.Device
	gaudi bool
}

// New returns the Streams of d, a compute node (not a control node).
func New(d *device.Device) (*Streams, error) {
	if d.IsControl() {
		return nil, fmt.Errorf("stream: %s is a control node", d.Path())
	}
	return &Streams{dev: d, io: devio.Of(d), gaudi: d.ASIC().IsGaudi()}, nil
}

// Device returns the device the Streams uses.
func (s *Streams) Device() *device.Device { return s.dev }

// Option adjusts one submission.
type Option func(*options)

type options struct {
	timeout   time.Duration
	timestamp bool
	skipReset bool
	restore   []Chunk
}

// WithTimeout replaces the driver's default CS timeout (its TDR) for the
// submission (HL_CS_FLAGS_CUSTOM_TIMEOUT, whole seconds, rounded up; 0
// makes the driver time the submission out at once). It is what hl-thunk's
// *_timeout variants do.
func WithTimeout(d time.Duration) Option {
	return func(o *options) { o.timeout = max(d, 0) }
}

// WithTimestamp asks the driver to record the submission's completion time
// (HL_CS_FLAGS_TIMESTAMP), which Wait then returns.
func WithTimestamp() Option { return func(o *options) { o.timestamp = true } }

// WithSkipResetOnTimeout asks the driver to report a timed-out submission
// without resetting the device (HL_CS_FLAGS_SKIP_RESET_ON_TIMEOUT).
func WithSkipResetOnTimeout() Option { return func(o *options) { o.skipReset = true } }

// WithRestore gives a submission restore chunks, which the driver runs
// first, as a submission of their own that it waits for
// (HL_CS_FLAGS_FORCE_RESTORE with chunks_restore; hl-thunk's restore
// array). Only Submit and SubmitStaged use it.
func WithRestore(chunks ...Chunk) Option {
	return func(o *options) { o.restore = append(o.restore, chunks...) }
}

// applyOptions applies opts to the CS flags and timeout and returns them.
func applyOptions(flags, timeout *uint32, opts []Option) options {
	var o options
	o.timeout = -1
	for _, f := range opts {
		f(&o)
	}
	if o.timestamp {
		*flags |= hl.HL_CS_FLAGS_TIMESTAMP
	}
	if o.skipReset {
		*flags |= hl.HL_CS_FLAGS_SKIP_RESET_ON_TIMEOUT
	}
	if o.timeout >= 0 {
		*flags |= hl.HL_CS_FLAGS_CUSTOM_TIMEOUT
		*timeout = uint32(min((o.timeout+time.Second-1)/time.Second, math.MaxUint32))
	}
	return o
}

// issueCS issues CS with a through the library's one submission path
// (internal/submit): EAGAIN (queue full, too many submissions in flight)
// is retried with backoff from 10 µs to 10 ms, at most
// submit.DefaultRetries times, and the driver's status is checked. What a
// points at is held by its hl.Pointer fields.
func issueCS[T submit.Args](s *Streams, op string, a *T) (*hl.CSOut, error) {
	out, err := submit.CS(context.Background(), s.io, a, submit.DefaultRetries)
	if err != nil {
		return nil, wrap(op, err)
	}
	return out, nil
}

// wrap adds op to an error. The sentinels it matches are ioctl's.
func wrap(op string, err error) error {
	return fmt.Errorf("%s: %w", op, err)
}
