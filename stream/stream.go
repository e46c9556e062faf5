package stream

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
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
	return &Streams{dev: d, io: d.Ioctl(), gaudi: d.ASIC().IsGaudi()}, nil
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

// applyOptions applies opts to the CS arguments and returns them.
func applyOptions(in *hl.CSIn, opts []Option) options {
	var o options
	o.timeout = -1
	for _, f := range opts {
		f(&o)
	}
	if o.timestamp {
		in.CSFlags |= hl.HL_CS_FLAGS_TIMESTAMP
	}
	if o.skipReset {
		in.CSFlags |= hl.HL_CS_FLAGS_SKIP_RESET_ON_TIMEOUT
	}
	if o.timeout >= 0 {
		in.CSFlags |= hl.HL_CS_FLAGS_CUSTOM_TIMEOUT
		in.Timeout = uint32(min((o.timeout+time.Second-1)/time.Second, math.MaxUint32))
	}
	return o
}

// maxRetries bounds how often a submission the driver answers EAGAIN
// (queue full, too many submissions in flight) is issued again.
const maxRetries = 1000

// issueCS issues CS with a, retrying EAGAIN (which leaves the arguments
// untouched) with a growing pause; keep is what a points at.
func (s *Streams) issueCS(op string, a *hl.CSArgs, keep any) (*hl.CSOut, error) {
	saved := *a
	pause := 10 * time.Microsecond
	for try := 0; ; try++ {
		err := s.io.CS(a, keep)
		if err == nil {
			return a.Out(), nil
		}
		if !errors.Is(err, unix.EAGAIN) || try >= maxRetries {
			return nil, wrap(op, err)
		}
		*a = saved
		time.Sleep(pause)
		pause = min(2*pause, 10*time.Millisecond)
	}
}

// wrap adds op to an error. The sentinels it matches are ioctl's.
func wrap(op string, err error) error {
	return fmt.Errorf("%s: %w", op, err)
}
