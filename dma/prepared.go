package dma

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gaudi-go/gaudi/internal/errclosed"
	"github.com/gaudi-go/gaudi/internal/pqm"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// Prepared is a batch encoded once and run many times: its command buffers,
// CS arguments and the memory it uses are kept until Close, so Run does no
// allocation in the library. Runs of one Prepared are serialized; a
// Prepared is safe for concurrent use.
type Prepared struct {
	e      *Engine
	mu     sync.Mutex
	args   hl.CSChunksArgs
	saved  hl.CSChunksArgs
	chunks []hl.CSChunk
	wait   hl.WaitCSArgs
	cbs    []*cmdBuf
	holds  []any
	// seq is the CS of a Run whose context ended before the device was
	// done with it, 0 for none: the next Run waits for it first, and Close
	// leaves the resources to a reaper until it is done.
	seq uint64
	// resetGen is the generation of seq (Transfer.resetGen).
	resetGen uint64
	closed   bool

	// On a Gaudi3 (pqm.go): the encoded jobs, the tickets of the last Run
	// and whether the device may still run them.
	pjobs    []*job
	timeout  time.Duration
	tickets  []pqm.Ticket
	deadline time.Time
	waiting  bool
}

// Prepare encodes the batch for repeated runs. It must fit in one CS (512
// jobs); a larger batch is ErrTooLarge.
//
// Preparing issues ioctls (command buffers) but submits nothing; ctx, when
// it has ended, refuses the work.
func (b *Batch) Prepare(ctx context.Context) (*Prepared, error) {
	if b.err != nil {
		return nil, b.err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("prepare transfer: %w", err)
	}
	e := b.e
	if err := e.begin(); err != nil {
		return nil, err
	}
	p := &Prepared{e: e}
	var err error
	if p.holds, err = b.holdAll(nil); err != nil {
		return nil, errors.Join(fmt.Errorf("prepare transfer: %w", err), p.Close())
	}
	jobs, err := b.encode(nil, nil)
	for _, j := range jobs {
		if j.cb != nil {
			p.cbs = append(p.cbs, j.cb)
		}
	}
	if err == nil && len(jobs) > hl.HL_MAX_JOBS_PER_CS {
		err = fmt.Errorf("prepare transfer: %d jobs: %w", len(jobs), ErrTooLarge)
	}
	if err != nil {
		return nil, errors.Join(err, p.Close())
	}
	if e.pq != nil {
		p.pjobs, p.timeout = jobs, b.opts.Timeout
	} else {
		p.setJobs(jobs, b.opts.Timeout)
	}
	if !e.track(nil, p) {
		p.Close()
		return nil, ErrClosed
	}
	return p, nil
}

// setJobs sets the CS arguments that Run submits: one execute chunk per
// encoded job.
func (p *Prepared) setJobs(jobs []*job, timeout time.Duration) {
	p.chunks = p.e.chunksFor(jobs, nil)
	p.e.fillCS(&p.args, p.chunks, timeout)
	p.saved = p.args
}

// Run submits the prepared CS and waits for it. When ctx ends first, Run
// returns its error at once and the CS stays the device's: the next Run
// waits for it before submitting again, and Close keeps the command
// buffers and the memory held until the device is done with it.
func (p *Prepared) Run(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errclosed.New("dma prepared batch")
	}
	e := p.e
	if e.pq != nil {
		return p.runPQM(ctx)
	}
	if p.seq != 0 {
		// Its outcome was the earlier Run's to report.
		if _, final, err := e.await(ctx, p.seq, p.resetGen, &p.wait); !final {
			return err
		}
		p.seq = 0
	}
	p.args = p.saved
	p.resetGen = e.resets.gen()
	seq, queued, err := e.issueCS(ctx, &p.args)
	if err != nil {
		if queued {
			p.seq = seq
		}
		return err
	}
	p.seq = seq
	_, final, err := e.await(ctx, seq, p.resetGen, &p.wait)
	if final {
		p.seq = 0
	}
	return err
}

// Close releases the command buffers and the memory holds; when a CS of
// the Prepared may still run (its Run's context ended first), it returns
// at once and they are released when the device is done with it. Close
// waits for a Run in progress. It returns the errors of the releases it
// did (CB DESTROY, munmap, the release of a memory buffer whose Close was
// deferred), joined; later ones go to the Engine's Close. It is idempotent.
func (p *Prepared) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	e := p.e
	e.untrack(nil, p)
	// The resources, and the Engine's in-flight count the Prepared holds,
	// go to a Transfer that finishes when the device is done.
	t := &Transfer{transferState: transferState{e: e, cbs: p.cbs, holds: p.holds, resetGen: p.resetGen}}
	p.cbs, p.holds = nil, nil
	if p.e.pq != nil {
		return p.closePQM(t)
	}
	if p.seq == 0 {
		t.end(nil, 0)
		t.claimRelease()
		return t.release()
	}
	t.seqs = []uint64{p.seq}
	p.seq = 0
	e.adopt(t)
	return nil
}
