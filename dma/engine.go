package dma

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/devio"
	"github.com/gaudi-go/gaudi/internal/errclosed"
	"github.com/gaudi-go/gaudi/internal/memlink"
	"github.com/gaudi-go/gaudi/internal/pqm"
	"github.com/gaudi-go/gaudi/internal/submit"
	"github.com/gaudi-go/gaudi/internal/warm"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/packet"
)

// Options configure an Engine. New rejects values out of range with an
// error matching ErrBadOptions.
type Options struct {
	// Streams is how many queues of each direction a copy may be striped
	// over (1 to 4 on the PCI DMA engines); 0 means 2. On a Gaudi3 it is
	// how many PDMA channels the Engine claims, for every direction.
	Streams int
	// StripeSize is the size from which a copy is split over several
	// queues, from 4 KiB to 1 TiB; 0 means 16 MiB.
	StripeSize uint64
	// Timeout, when not 0, replaces the driver's default CS timeout (TDR)
	// for this Engine's submissions (HL_CS_FLAGS_CUSTOM_TIMEOUT, whole
	// seconds, rounded up; at most 2^32-1 seconds). It also bounds how
	// long Close may wait for a CS the device does not complete: when the
	// timeout expires the driver resets the device, which aborts the CS.
	// On a Gaudi3 the library applies it (default 30 s) to its jobs, and
	// Close waits for them that long before it gives up (see the package
	// documentation).
	Timeout time.Duration
	// Timestamps asks the driver for completion timestamps
	// (HL_CS_FLAGS_TIMESTAMP); Transfer.Timestamp returns them. A Gaudi3
	// has none: its transfers are not CSs.
	Timestamps bool
	// MappedKernelCBs makes Gaudi2 command buffers kernel CBs mapped into
	// the device MMU (CB CREATE with HL_CB_FLAGS_MAP, then CB INFO
	// GET_DEVICE_VA) instead of user CBs in mapped host memory. Gaudi always
	// uses kernel CBs.
	MappedKernelCBs bool
	// MaxRetries bounds how often a submission the driver refused with
	// EAGAIN (queues full, too many CSs in flight) is retried, with
	// exponential backoff from 10 µs to 10 ms; 0 means 1000.
	MaxRetries int
}

// The bounds of Options.StripeSize.
const (
	minStripe = 4 << 10
	maxStripe = 1 << 40
)

// maxTimeout is the largest CS timeout the driver's field holds: 2^32-1
// whole seconds.
const maxTimeout = time.Duration(math.MaxUint32) * time.Second

// normalize checks the options and fills in the defaults.
func (o *Options) normalize() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("dma: "+format+": %w", append(args, ErrBadOptions)...)
	}
	switch {
	case o.Streams < 0 || o.Streams > 4:
		return bad("Streams %d outside 1 to 4 (0 for the default)", o.Streams)
	case o.StripeSize != 0 && (o.StripeSize < minStripe || o.StripeSize > maxStripe):
		return bad("StripeSize %d outside %d to %d (0 for the default)", o.StripeSize, minStripe, uint64(maxStripe))
	case o.Timeout < 0 || o.Timeout > maxTimeout:
		return bad("Timeout %v outside 0 to %v", o.Timeout, maxTimeout)
	case o.MaxRetries < 0:
		return bad("MaxRetries %d is negative", o.MaxRetries)
	}
	if o.Streams == 0 {
		o.Streams = 2
	}
	if o.StripeSize == 0 {
		o.StripeSize = 16 << 20
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = submit.DefaultRetries
	}
	return nil
}

// Engine issues DMA transfers on one device. Safe for concurrent use.
type Engine struct {
	mem    *memory.Manager
	dev    *device.Device
	io     *ioctl.Device
	format packet.Format
	enc    *encoders
	q      queueTable
	cbs    *cbPool
	opts   Options
	next   [4]atomic.Uint32 // round-robin position per direction
	resets resetWatch       // the device's reset count, for aborted waits (resetwait.go)

	transfers sync.Pool // *Transfer: the Engine's own, for copies that wait
	waitArgs  sync.Pool // *hl.WaitCSArgs

	// inflight counts the unfinished Transfers and open Prepareds, and
	// the reapers that wait for Transfers (flight.go).
	inflight sync.WaitGroup
	// reapers runs the reapers on goroutines kept between transfers, so
	// a reaper's wait into the driver does not grow a new stack each time
	// (internal/warm); Close stops it after the last reaper.
	reapers *warm.Pool

	// On a Gaudi3 (pqm.go): the claimed PDMA channels, the host memory of
	// their rings and counters, pooled jobs, and what ends the reapers
	// once Close has waited long enough.
	pq         *pqm.Pool
	pqHost     *memory.HostBuffer
	pjobs      sync.Pool // *pqm.Job
	reapCtx    context.Context
	stopReaps  context.CancelFunc
	closeTimer *time.Timer

	mu       sync.Mutex
	detach   func() // leaves the device's dependents; nil until New returns
	closed   bool
	closing  chan struct{}          // closed when Close finished
	leaked   int                    // Transfers given up on (flight.go)
	pending  map[*Transfer]struct{} // started, not finished
	prepared map[*Prepared]struct{} // not closed
}

// New returns an Engine that moves memory of m. Options out of range are
// an error matching ErrBadOptions. The Engine is one of its device's
// dependents: device.Device.Close closes it, before the Manager, if it is
// still open.
func New(m *memory.Manager, opts Options) (*Engine, error) {
	e, err := newEngine(m, opts)
	if err != nil {
		return nil, err
	}
	detach, err := devio.Attach(m.Device(), "*dma.Engine", e)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("dma engine: %w", err), e.Close())
	}
	e.mu.Lock()
	e.detach = detach
	e.mu.Unlock()
	return e, nil
}

// newEngine builds the Engine for m's ASIC.
func newEngine(m *memory.Manager, opts Options) (*Engine, error) {
	if err := opts.normalize(); err != nil {
		return nil, err
	}
	d := m.Device()
	if d.ASIC().IsGaudi3() {
		return newPQM(m, opts)
	}
	q, err := queuesFor(d, opts.Streams)
	if err != nil {
		return nil, err
	}
	f := packet.Gaudi2
	if d.ASIC().IsGaudi() {
		f = packet.Gaudi
	}
	e := &Engine{
		mem:    m,
		dev:    d,
		io:     devio.Of(d),
		format: f,
		enc:    newEncoders(f),
		q:      q,
		cbs:    newCBPool(devio.Of(d), m, q.userCB, opts.MappedKernelCBs),
		opts:   opts,
		// One reaper per transfer in flight; a few stay for the next.
		reapers: warm.New(4),
	}
	e.resets.init(func() (uint64, error) {
		n, err := d.ResetCount()
		return uint64(n.Hard) + uint64(n.Soft), err
	})
	// The first open Engine moves the bytes of the Manager's ReadAt and
	// WriteAt.
	memlink.Attach(m, e)
	return e, nil
}

// Close closes the Engine's prepared batches and waits until the device
// is done with every CS the Engine submitted (including transfers nobody
// waits for, and CSs left running by a cancelled Wait or Run): it
// completed, or the driver timed it out or aborted it. Only then does it
// release the memory holds and the command buffers, so Close never
// returns while a DMA engine may still use memory it frees. How long it
// waits is bounded by the CS timeout the driver applies (Options.Timeout,
// or the driver's default: 30 s on Gaudi2 unless the habanalabs module
// was loaded with another timeout_locked), after which the driver resets
// the device and aborts the CS; a device that keeps answering WAIT_CS with
// errors instead is given up on after 10 s, its resources left unreleased,
// and Close reports ErrInFlight.
//
// Close returns the errors of the releases it did, and of the ones
// transfers did when they finished (CB DESTROY, munmap, the release of a
// memory buffer whose Close was deferred), joined. It is idempotent: a later or concurrent call waits for the first to
// finish and returns nil.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		done := e.closing
		e.mu.Unlock()
		<-done
		return nil
	}
	e.closed = true
	e.closing = make(chan struct{})
	// Leave the device's dependents only when done, so that a concurrent
	// device Close waits for this one (through the wait above).
	if e.detach != nil {
		defer e.detach()
	}
	memlink.Detach(e.mem, e)
	if e.pq != nil {
		// The reapers wait for the device until the bound, then give up.
		e.closeTimer = time.AfterFunc(e.pqTimeout(0), e.stopReaps)
	}
	// Adopt under e.mu: a transfer leaves pending (untrack, under e.mu)
	// before a Copy may put it back in the pool and reuse it, so every one
	// seen here is still the transfer it was.
	for t := range e.pending {
		e.adopt(t)
	}
	var ps []*Prepared
	for p := range e.prepared {
		ps = append(ps, p)
	}
	e.mu.Unlock()
	var errs []error
	for _, p := range ps {
		errs = append(errs, p.Close())
	}
	e.inflight.Wait()
	e.reapers.Stop()
	e.mu.Lock()
	leaked := e.leaked
	e.mu.Unlock()
	if leaked > 0 {
		// Command buffers the device may still read stay allocated, and
		// so does the rest of the pool with them.
		errs = append(errs, fmt.Errorf("close dma engine: %d transfer(s) the device never reported done, their memory and command buffers left allocated: %w", leaked, ErrInFlight))
	} else {
		errs = append(errs, e.cbs.close())
	}
	if e.pq != nil {
		errs = append(errs, e.closePQM(leaked))
	}
	close(e.closing)
	return errors.Join(errs...)
}

// track and untrack keep the sets Close must finish. track reports false,
// and adds nothing, once Close began: the caller finishes what it tracked
// itself.
func (e *Engine) track(t *Transfer, p *Prepared) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	if t != nil {
		if e.pending == nil {
			e.pending = map[*Transfer]struct{}{}
		}
		e.pending[t] = struct{}{}
	}
	if p != nil {
		if e.prepared == nil {
			e.prepared = map[*Prepared]struct{}{}
		}
		e.prepared[p] = struct{}{}
	}
	return true
}

// untrack removes what track added.
func (e *Engine) untrack(t *Transfer, p *Prepared) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.pending, t)
	delete(e.prepared, p)
}

// started registers a transfer whose work is queued, for Close to
// finish: if Close began and did not see it, a reaper finishes it. A
// Transfer of the Engine's own is not registered: the Copy that made it
// waits for it at once, holding the Engine's in-flight count until the
// device is done with it or a reaper has it (Wait adopts it when its
// context ends), so Close waits for it without finding it. That spares a
// copy two critical sections on e.mu and a map insert and delete, about
// 180 ns (issue 29).
func (e *Engine) started(t *Transfer) {
	if t.owned {
		return
	}
	if !e.track(t, nil) {
		e.adopt(t)
	}
}

// begin registers a transfer; it fails once the Engine is closed.
func (e *Engine) begin() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errclosed.New("dma engine")
	}
	e.inflight.Add(1)
	return nil
}

// queue picks the next queue for a direction.
func (e *Engine) queue(d Direction) uint32 {
	ids := e.q.byDir[d].ids
	return ids[int(e.next[d].Add(1)-1)%len(ids)]
}

// direction classifies a copy from the address kinds.
func direction(dst, src memory.Kind) Direction {
	switch {
	case src == memory.HostMemory && dst == memory.DeviceMemory:
		return HostToDevice
	case src == memory.DeviceMemory && dst == memory.HostMemory:
		return DeviceToHost
	case src == memory.DeviceMemory && dst == memory.DeviceMemory:
		return DeviceToDevice
	}
	return HostToHost
}

// resolve finds the region covering [addr, addr+n) and returns its device
// address.
func (e *Engine) resolve(addr, n uint64, what string) (memory.Region, error) {
	r := e.mem.Lookup(addr)
	if r.Kind == memory.Unknown {
		e.mu.Lock()
		closed := e.closed
		e.mu.Unlock()
		if closed { // its device's Close closed the Engine, then the Manager
			return r, fmt.Errorf("%s %#x: %w", what, addr, errclosed.New("dma engine"))
		}
		return r, fmt.Errorf("%s %#x: %w", what, addr, ErrUnmapped)
	}
	if r.Len() < n {
		return r, fmt.Errorf("%s [%#x, +%#x) runs %#x bytes past its buffer: %w", what, addr, n, n-r.Len(), ErrUnmapped)
	}
	return r, nil
}
