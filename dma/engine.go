package dma

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/errclosed"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/packet"
)

// Options configure an Engine.
type Options struct {
	// Streams is how many queues of each direction a copy may be striped
	// over (1 to 4 on the PCI DMA engines); 0 means 2.
	Streams int
	// StripeSize is the size from which a copy is split over several
	// queues; 0 means 16 MiB.
	StripeSize uint64
	// Timeout, when not 0, replaces the driver's default CS timeout (TDR)
	// for this Engine's submissions (HL_CS_FLAGS_CUSTOM_TIMEOUT, whole
	// seconds, rounded up).
	Timeout time.Duration
	// Timestamps asks the driver for completion timestamps
	// (HL_CS_FLAGS_TIMESTAMP); Transfer.Timestamp returns them.
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

// Engine issues DMA transfers on one device. Safe for concurrent use.
type Engine struct {
	mem    *memory.Manager
	dev    *device.Device
	io     *ioctl.Device
	format packet.Format
	q      queueTable
	cbs    *cbPool
	opts   Options
	next   [4]atomic.Uint32 // round-robin position per direction

	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup
	pending  map[*Transfer]struct{} // started, not finished
	prepared map[*Prepared]struct{} // not closed
}

// New returns an Engine that moves memory of m.
func New(m *memory.Manager, opts Options) (*Engine, error) {
	d := m.Device()
	if opts.Streams == 0 {
		opts.Streams = 2
	}
	if opts.StripeSize == 0 {
		opts.StripeSize = 16 << 20
	}
	if opts.MaxRetries == 0 {
		opts.MaxRetries = 1000
	}
	q, err := queuesFor(d, opts.Streams)
	if err != nil {
		return nil, err
	}
	f := packet.Gaudi2
	if d.ASIC().IsGaudi() {
		f = packet.Gaudi
	}
	return &Engine{
		mem:    m,
		dev:    d,
		io:     d.Ioctl(),
		format: f,
		q:      q,
		cbs:    newCBPool(d.Ioctl(), m, q.userCB, opts.MappedKernelCBs),
		opts:   opts,
	}, nil
}

// Close waits for the Engine's transfers to complete (including ones
// nobody waits for), closes its prepared batches, and releases its command
// buffers. It returns the errors of those releases, and of the releases
// transfers did when they finished (CB DESTROY, munmap, the release of a
// memory buffer whose Close was deferred), joined. It is idempotent.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	var ts []*Transfer
	for t := range e.pending {
		ts = append(ts, t)
	}
	var ps []*Prepared
	for p := range e.prepared {
		ps = append(ps, p)
	}
	e.mu.Unlock()
	for _, t := range ts {
		t.Wait(context.Background())
	}
	var errs []error
	for _, p := range ps {
		errs = append(errs, p.Close())
	}
	e.inflight.Wait()
	errs = append(errs, e.cbs.close())
	return errors.Join(errs...)
}

// track and untrack keep the sets Close must finish.
func (e *Engine) track(t *Transfer, p *Prepared) {
	e.mu.Lock()
	defer e.mu.Unlock()
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
}

func (e *Engine) untrack(t *Transfer, p *Prepared) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.pending, t)
	delete(e.prepared, p)
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
		return r, fmt.Errorf("%s %#x: %w", what, addr, ErrUnmapped)
	}
	if r.Len() < n {
		return r, fmt.Errorf("%s [%#x, +%#x) runs %#x bytes past its buffer: %w", what, addr, n, n-r.Len(), ErrUnmapped)
	}
	return r, nil
}
