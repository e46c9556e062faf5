package dma

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gaudi-go/gaudi/internal/devio"
	"github.com/gaudi-go/gaudi/internal/memlink"
	"github.com/gaudi-go/gaudi/internal/pqm"
	"github.com/gaudi-go/gaudi/internal/submit"
	"github.com/gaudi-go/gaudi/internal/warm"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/packet"
	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
	"golang.org/x/sys/unix"
)

// Gaudi3: the PDMA channels' queue managers.
//
// A Gaudi3 takes no user work through CS: an Engine claims Options.Streams
// of the PDMA channels the driver gives users (internal/pqm), and its
// transfers are jobs written into those channels' rings instead of CSs,
// each finished when the channel's completion queue has counted it: its
// counter reaches the job's ticket. The rest is the CS path's: holds from before
// the first job until the last is done, a context that ends a wait but
// not the transfer, reapers, Close waiting for the device.
//
// What differs follows from there being no driver between the library
// and the channel: nothing times a job out or aborts it. A transfer whose
// deadline (Options.Timeout or BatchOptions.Timeout, else pqDefaultTimeout)
// passes fails with an error matching ioctl.ErrTimeout, as on the other
// ASICs, but its memory stays held (the channel may still move it) until
// the device completes the job; Engine.Close waits for that as long as
// the same timeout, then gives up (ErrInFlight), leaving the memory, the
// rings and the channels allocated rather than freeing them under a DMA.
// A device reset ends a wait with EIO, and the job with it (ErrAborted).

// pqDefaultTimeout is a Gaudi3 transfer's timeout when the options give
// none: the driver's default CS timeout on the other ASICs.
const pqDefaultTimeout = 30 * time.Second

// pqRing is the size of each channel's ring: room for 11,000 LIN_PDMA
// packets, each moving up to 2 GiB.
const pqRing = 256 << 10

// newPQM makes an Engine for a Gaudi3.
func newPQM(m *memory.Manager, opts Options) (*Engine, error) {
	d := m.Device()
	io := devio.Of(d)
	hw := d.HWIPInfo()
	n := opts.Streams
	host, err := m.AllocHost(uint64(pqm.HostBytes(n, pqRing)), memory.HostOptions{})
	if err != nil {
		return nil, fmt.Errorf("dma: rings: %w", err)
	}
	// Held, so that neither the Manager's Close nor anything else unmaps
	// the rings under a channel that reads them: only Close, once the
	// channels are done, releases them.
	if err := memlink.Hold(host); err != nil {
		return nil, errors.Join(fmt.Errorf("dma: rings: %w", err), host.Close())
	}
	pool, err := pqm.Open(pqm.Config{
		Dev: pqm.IoctlDevice{IO: io}, Key: io,
		Mask: hw.PDMAUserChannelMask, Channels: n, Ring: pqRing,
		Interrupt: uint32(hw.FirstUserInterrupt), Doorbell: g3.D0_PCIE_MSIX_BASE,
		Resets: func() (uint64, error) {
			n, err := d.ResetCount()
			return uint64(n.Hard) + uint64(n.Soft), err
		},
	}, host.Bytes(), host.VA())
	if err != nil {
		return nil, errors.Join(fmt.Errorf("dma: %w", err), host.Close(), memlink.Release(host))
	}
	ids := make([]uint32, len(pool.Channels()))
	for i := range ids {
		ids[i] = uint32(i) // a job's queue is its channel's index in the pool
	}
	e := &Engine{
		mem:    m,
		dev:    d,
		io:     io,
		format: packet.Gaudi3PQM,
		cbs:    newCBPool(io, m, false, false),
		opts:   opts,
		pq:     pool,
		pqHost: host,
		// As newEngine's.
		reapers: warm.New(4),
	}
	for i := range e.q.byDir {
		e.q.byDir[i] = queueSet{ids}
	}
	e.q.maxStripe = len(ids)
	e.reapCtx, e.stopReaps = context.WithCancel(context.Background())
	memlink.Attach(m, e)
	return e, nil
}

// Channels returns the PDMA channels a Gaudi3 Engine claimed (their bits
// in hw_ip_info's pdma_user_owned_ch_mask), and nil on the other ASICs,
// whose copies go through CS queues.
func (e *Engine) Channels() []int {
	if e.pq == nil {
		return nil
	}
	var ids []int
	for _, c := range e.pq.Channels() {
		ids = append(ids, c.ID())
	}
	return ids
}

// pqTimeout returns a Gaudi3 transfer's timeout: the batch's, else the
// Engine's, else pqDefaultTimeout.
func (e *Engine) pqTimeout(batch time.Duration) time.Duration {
	switch {
	case batch > 0:
		return batch
	case e.opts.Timeout > 0:
		return e.opts.Timeout
	}
	return pqDefaultTimeout
}

// getJob returns an empty pooled job of a channel.
func (e *Engine) getJob() *pqm.Job {
	if j, _ := e.pjobs.Get().(*pqm.Job); j != nil {
		return j
	}
	return pqm.NewJob()
}

// putJobs returns the packets of jobs to the pool: their bytes are in the
// rings (or were never submitted).
func (e *Engine) putJobs(jobs []*job) {
	for _, j := range jobs {
		if j.pj != nil {
			j.pj.Reset()
			e.pjobs.Put(j.pj)
			j.pj = nil
		}
	}
}

// encodePQM is encode for a Gaudi3: each operation becomes LIN_PDMA
// packets in jobs, one per channel, split over several channels when
// large. The direction bit is clear only for device-to-host copies, as in
// Synapse's direct-mode streams.
func (b *Batch) encodePQM(jobs []*job, store []job) ([]*job, error) {
	e := b.e
	first := len(jobs)
	add := func(q uint32, o *op, src, dst uint64, n uint32) error {
		j := current(jobs[first:], q)
		for {
			if j == nil {
				if len(store) > 0 {
					j, store = &store[0], store[1:]
				} else {
					j = new(job)
				}
				*j = job{queue: q, pj: e.getJob()}
				j.flight.init()
				jobs = append(jobs, j)
			}
			if j.pj.Full() {
				j = nil
				continue
			}
			// The direction bit means "down", host to device: Habana's
			// Gaudi3 tests set it for host to DRAM or SRAM only
			// (hl-thunk, gaudi3_is_pdma_direction_down), so fills and
			// device-to-device copies leave it clear.
			p := packet.LinPDMA{Src: src, Dst: dst, Size: n, Memset: o.memset, HostToDevice: o.dir == HostToDevice}
			p.EngineBarrier = j.flight.admit(o.memset, src, dst, uint64(n))
			return j.pj.Add(p)
		}
	}
	for i := range b.ops {
		o := &b.ops[i]
		if err := e.split(o, func(q uint32, src, dst uint64, n uint32) error { return add(q, o, src, dst, n) }); err != nil {
			return jobs, fmt.Errorf("encode transfer: %w", err)
		}
	}
	if len(jobs) == first {
		return jobs, errors.New("encode transfer: empty batch")
	}
	return jobs, nil
}

// startPQM submits the encoded jobs of a transfer whose memory is held.
func (b *Batch) startPQM(ctx context.Context, t *Transfer, jobs []*job) error {
	e := b.e
	defer e.putJobs(jobs)
	if err := ctx.Err(); err != nil {
		t.finish(err, 0)
		return err
	}
	t.deadline = time.Now().Add(e.pqTimeout(b.opts.Timeout))
	chans := e.pq.Channels()
	for _, j := range jobs {
		tk, err := chans[j.queue].Submit(ctx, j.pj, t.deadline)
		if err != nil {
			err = fmt.Errorf("submit: %w", err)
			if len(t.tickets) == 0 {
				t.finish(err, 0)
				return err
			}
			// Earlier jobs are queued: the transfer fails with err once the
			// device is done with them, and only then releases the memory.
			t.failed = err
			e.adopt(t)
			return err
		}
		t.tickets = append(t.tickets, tk)
	}
	e.started(t)
	return nil
}

// pqVerdict reads the error of a wait for a job: final when the device is
// done with it (nil; a reset, EIO, which aborts it; the file closed or
// unknown to the driver), else the job may still run.
func pqVerdict(err error) (final bool, out error) {
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EIO):
		return true, errors.Join(ErrAborted, err)
	case errors.Is(err, ioctl.ErrClosed), errors.Is(err, unix.EINVAL):
		return true, err
	}
	return false, err
}

// pqWait is the pool's Wait for a caller with ctx: a device that is not
// operational (a reset under way) is asked again, as await does
// (internal/submit's policy for EBUSY, bounded by abandonAfter).
func (e *Engine) pqWait(ctx context.Context, tk pqm.Ticket, deadline time.Time) error {
	var busy submit.Busy
	for {
		err := e.pq.Wait(ctx, tk, deadline)
		again, err := busy.Retry(ctx, err, abandonAfter)
		if !again {
			return err
		}
	}
}

// waitPQM is Wait for a Gaudi3 transfer.
func (t *Transfer) waitPQM(ctx context.Context) error {
	e := t.e
	var first error
	for _, tk := range t.tickets {
		final, err := pqVerdict(e.pqWait(ctx, tk, t.deadline))
		if !final {
			if errors.Is(err, ioctl.ErrTimeout) && ctx.Err() == nil {
				// The transfer's result; its memory stays held until the
				// device is done with it.
				t.end(fmt.Errorf("wait for transfer: %w", err), 0)
				e.adopt(t)
				return t.Err()
			}
			e.adopt(t)
			return fmt.Errorf("wait for transfer: %w", err)
		}
		if err != nil && first == nil {
			first = fmt.Errorf("wait for transfer: %w", err)
		}
	}
	return t.finish(first, 0)
}

// reapPQM is reap for a Gaudi3 transfer: it waits for every job, without
// a deadline until the Engine's Close has waited its bound.
func (t *Transfer) reapPQM() bool {
	e := t.e
	var first error
	for _, tk := range t.tickets {
		tr := trouble{pause: time.Millisecond}
		for {
			if t.isReleased() {
				return true
			}
			err := e.pq.Wait(e.reapCtx, tk, time.Time{})
			final, err := pqVerdict(err)
			if final {
				if err != nil && first == nil {
					first = fmt.Errorf("wait for transfer: %w", err)
				}
				break
			}
			if e.reapCtx.Err() != nil {
				t.abandonAfter(e.pqTimeout(0), err)
				return false
			}
			if !tr.retry() {
				t.abandon(err)
				return false
			}
		}
	}
	t.finish(first, 0)
	return true
}

// runPQM is Prepared.Run on a Gaudi3; p.mu is held.
func (p *Prepared) runPQM(ctx context.Context) error {
	e := p.e
	if p.waiting {
		// The earlier Run's jobs: their outcome was its to report.
		for _, tk := range p.tickets {
			if final, err := pqVerdict(e.pqWait(ctx, tk, time.Time{})); !final {
				return fmt.Errorf("wait for transfer: %w", err)
			}
		}
		p.waiting = false
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	p.tickets = p.tickets[:0]
	p.deadline = time.Now().Add(e.pqTimeout(p.timeout))
	chans := e.pq.Channels()
	for _, j := range p.pjobs {
		tk, err := chans[j.queue].Submit(ctx, j.pj, p.deadline)
		if err != nil {
			p.waiting = len(p.tickets) > 0
			return fmt.Errorf("submit: %w", err)
		}
		p.tickets = append(p.tickets, tk)
	}
	p.waiting = true
	var first error
	for _, tk := range p.tickets {
		final, err := pqVerdict(e.pqWait(ctx, tk, p.deadline))
		if !final {
			return fmt.Errorf("wait for transfer: %w", err)
		}
		if err != nil && first == nil {
			first = fmt.Errorf("wait for transfer: %w", err)
		}
	}
	p.waiting = false
	return first
}

// closePQM is Prepared.Close on a Gaudi3: t holds the resources.
func (p *Prepared) closePQM(t *Transfer) error {
	e := p.e
	e.putJobs(p.pjobs)
	p.pjobs = nil
	if !p.waiting {
		t.end(nil, 0)
		t.claimRelease()
		return t.release()
	}
	t.tickets = append([]pqm.Ticket(nil), p.tickets...)
	p.waiting = false
	e.adopt(t)
	return nil
}

// closePQM stops the channels and frees their rings, once every transfer
// finished; when some never did (leaked), the device may still use both:
// the channels stay claimed and the rings allocated, only the register
// blocks are unmapped.
func (e *Engine) closePQM(leaked int) error {
	e.closeTimer.Stop()
	e.stopReaps()
	if leaked > 0 || !e.pq.Idle() {
		return e.pq.Unmap()
	}
	err := e.pq.Close()
	if cerr := errors.Join(e.pqHost.Close(), memlink.Release(e.pqHost)); cerr != nil {
		err = errors.Join(err, fmt.Errorf("free rings: %w", cerr))
	}
	return err
}
