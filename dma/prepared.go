package dma

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gaudi-go/gaudi/internal/errclosed"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Prepared is a batch encoded once and run many times: its command buffers,
// CS arguments and the memory it uses are kept until Close, so Run does no
// allocation in the library. Runs of one Prepared are serialized; a
// Prepared is safe for concurrent use.
type Prepared struct {
	e      *Engine
	mu     sync.Mutex
	args   hl.CSArgs
	saved  hl.CSArgs
	chunks []hl.CSChunk
	wait   hl.WaitCSArgs
	cbs    []*cmdBuf
	holds  []holder
	closed bool
}

// Prepare encodes the batch for repeated runs. It must fit in one CS (512
// jobs); a larger batch is ErrTooLarge.
func (b *Batch) Prepare() (*Prepared, error) {
	if b.err != nil {
		return nil, b.err
	}
	e := b.e
	if err := e.begin(); err != nil {
		return nil, err
	}
	p := &Prepared{e: e}
	var err error
	if p.holds, err = b.holdAll(); err != nil {
		return nil, errors.Join(fmt.Errorf("prepare transfer: %w", err), p.Close())
	}
	jobs, err := b.encode()
	for _, j := range jobs {
		p.cbs = append(p.cbs, j.cb)
	}
	if err == nil && len(jobs) > hl.HL_MAX_JOBS_PER_CS {
		err = fmt.Errorf("prepare transfer: %d jobs: %w", len(jobs), ErrTooLarge)
	}
	if err != nil {
		return nil, errors.Join(err, p.Close())
	}
	p.setJobs(jobs, b.timeout)
	e.track(nil, p)
	return p, nil
}

// setJobs sets the CS arguments that Run submits: one execute chunk per
// encoded job.
func (p *Prepared) setJobs(jobs []*job, timeout time.Duration) {
	p.chunks = p.e.chunksFor(jobs)
	p.e.fillCS(&p.args, p.chunks, timeout)
	p.saved = p.args
}

// Run submits the prepared CS and waits for it.
func (p *Prepared) Run(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errclosed.New("dma prepared batch")
	}
	e := p.e
	p.args = p.saved
	var seq uint64
	for try := 0; ; try++ {
		err := e.io.CS(&p.args, p)
		if err == nil {
			seq = p.args.Out().Seq()
			break
		}
		if !errors.Is(err, unix.EAGAIN) || try >= e.opts.MaxRetries {
			return fmt.Errorf("submit: %w", err)
		}
		p.args = p.saved
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	_, err := e.waitSeqInto(ctx, seq, &p.wait)
	return err
}

// Close releases the command buffers and the memory holds, and returns the
// errors of those releases (CB DESTROY, munmap, the release of a memory
// buffer whose Close was deferred), joined. It is idempotent.
func (p *Prepared) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	var errs []error
	for _, cb := range p.cbs {
		errs = append(errs, p.e.cbs.put(cb))
	}
	for _, h := range p.holds {
		errs = append(errs, h.Release())
	}
	p.e.untrack(nil, p)
	p.e.inflight.Done()
	return errors.Join(errs...)
}
