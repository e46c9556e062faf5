package dma

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// op is one copy or fill of a batch, in device addresses.
type op struct {
	dir     Direction
	dst     uint64
	src     uint64 // source address, or the pattern of a fill
	n       uint64
	memset  bool
	regions []memory.Region
}

// Batch collects copies and fills that are submitted together: as few CSs
// as the driver's limits allow (512 jobs per CS, HL_MAX_CB_SIZE per
// command buffer), their jobs spread over the queues of each direction.
// The operations of a batch may run in any order and concurrently. A Batch
// is not safe for concurrent use; the Transfer it starts is.
type Batch struct {
	e       *Engine
	ops     []op
	err     error
	timeout time.Duration // 0: the Engine's
}

// SetTimeout gives this batch's CSs their own timeout (whole seconds,
// rounded up; HL_CS_FLAGS_CUSTOM_TIMEOUT), overriding Options.Timeout. 0,
// or a negative d, leaves the Engine's; d is capped at 2^32-1 seconds, the
// most the driver's field holds.
func (b *Batch) SetTimeout(d time.Duration) { b.timeout = min(max(d, 0), maxTimeout) }

// NewBatch returns an empty batch.
func (e *Engine) NewBatch() *Batch { return &Batch{e: e} }

// Copy adds a copy of n bytes from src to dst. Each address is a device
// address of a buffer or host mapping, or a host pointer of mapped host
// memory, and the whole range must lie in one buffer or mapping. The first
// error of a batch is kept and returned by Start too.
func (b *Batch) Copy(dst, src, n uint64) error {
	if b.err != nil {
		return b.err
	}
	if n == 0 {
		return nil
	}
	rs, err := b.e.resolve(src, n, "copy source")
	if err != nil {
		b.err = err
		return err
	}
	rd, err := b.e.resolve(dst, n, "copy destination")
	if err != nil {
		b.err = err
		return err
	}
	b.ops = append(b.ops, op{dir: direction(rd.Kind, rs.Kind), dst: rd.DeviceVA(), src: rs.DeviceVA(), n: n, regions: []memory.Region{rs, rd}})
	return nil
}

// Memset adds a fill of n bytes at dst with the 64-bit pattern (the DMA
// engine repeats it, low byte first).
func (b *Batch) Memset(dst, pattern, n uint64) error {
	if b.err != nil {
		return b.err
	}
	if n == 0 {
		return nil
	}
	rd, err := b.e.resolve(dst, n, "memset destination")
	if err != nil {
		b.err = err
		return err
	}
	dir := HostToDevice
	if rd.Kind == memory.HostMemory {
		dir = HostToHost
	}
	if rd.Kind == memory.DeviceMemory {
		dir = DeviceToDevice
	}
	b.ops = append(b.ops, op{dir: dir, dst: rd.DeviceVA(), src: pattern, n: n, memset: true, regions: []memory.Region{rd}})
	return nil
}

// Len returns the number of operations added.
func (b *Batch) Len() int { return len(b.ops) }

// job is one CS chunk: a command buffer on a queue, filled up to buf.
type job struct {
	queue uint32
	cb    *cmdBuf
	buf   []byte // packets written so far, within cb.mem
}

// Start encodes and submits the batch and returns its Transfer. The
// memory the batch touches is held, and the command buffers kept, until
// the device is done with the transfer.
func (b *Batch) Start() (*Transfer, error) { return b.start(context.Background()) }

// start is Start with the context that bounds the retries of a submission
// the driver refuses for now (EAGAIN).
func (b *Batch) start(ctx context.Context) (*Transfer, error) {
	if b.err != nil {
		return nil, b.err
	}
	e := b.e
	if err := e.begin(); err != nil {
		return nil, err
	}
	t := &Transfer{e: e}
	// fail ends a transfer of which nothing was queued.
	fail := func(err error) (*Transfer, error) {
		t.finish(err, 0)
		return nil, err
	}
	// Hold the memory first: a Close from now on waits for the transfer.
	var err error
	if t.holds, err = b.holdAll(); err != nil {
		return fail(fmt.Errorf("start transfer: %w", err))
	}
	jobs, err := b.encode()
	for _, j := range jobs {
		t.cbs = append(t.cbs, j.cb)
	}
	if err != nil {
		return fail(err)
	}
	for start := 0; start < len(jobs); start += hl.HL_MAX_JOBS_PER_CS {
		part := jobs[start:min(start+hl.HL_MAX_JOBS_PER_CS, len(jobs))]
		seq, queued, err := e.submit(ctx, part, b.timeout)
		if queued {
			t.seqs = append(t.seqs, seq)
		}
		if err != nil {
			if len(t.seqs) == 0 {
				return fail(err)
			}
			// Earlier CSs are queued: the transfer fails with err once the
			// device is done with them, and only then releases the memory
			// and the command buffers.
			t.failed = err
			e.adopt(t)
			return nil, err
		}
		t.seqs = append(t.seqs, seq)
	}
	if !e.q.userCB {
		// The driver copied the kernel CBs at submission (Gaudi's patched
		// CB), so pooled ones may serve the next batch now; one-off CBs are
		// destroyed only after completion.
		kept := t.cbs[:0]
		for _, cb := range t.cbs {
			if cb.pooled {
				e.cbs.put(cb)
			} else {
				kept = append(kept, cb)
			}
		}
		t.cbs = kept
	}
	if !e.track(t, nil) {
		// The Engine is closing and did not see the transfer: it must be
		// finished in the background for Close to return.
		e.adopt(t)
	}
	return t, nil
}

// holdAll holds every region the batch touches. On error the returned
// slice has the holds taken so far, for the caller to release.
func (b *Batch) holdAll() ([]holder, error) {
	var hs []holder
	for _, o := range b.ops {
		for _, r := range o.regions {
			h, err := hold(r)
			if err != nil {
				return hs, err
			}
			hs = append(hs, h)
		}
	}
	return hs, nil
}

// hold takes a hold on the buffer or mapping of a region.
func hold(r memory.Region) (holder, error) {
	switch r.Kind {
	case memory.DeviceMemory:
		if err := r.Device.Hold(); err != nil {
			return nil, err
		}
		return r.Device, nil
	case memory.HostMemory:
		if err := r.Host.Hold(); err != nil {
			return nil, err
		}
		return r.Host, nil
	}
	return nil, ErrUnmapped
}

// maxPacket is the most one LIN_DMA moves here: the driver's own 2 GiB
// split (tsize allows up to 4 GiB - 1).
const maxPacket = packet.DriverChunkSize

// encode turns the operations into jobs: each op is split into stripes on
// different queues when large, and each stripe into LIN_DMA packets.
func (b *Batch) encode() ([]*job, error) {
	e := b.e
	hdr := packet.Header{EngineBarrier: true, MsgBarrier: true, RegBarrier: e.format == packet.Gaudi}
	copyEnc := packet.NewCopyEncoder(e.format, hdr, false, false)
	fillEnc := packet.NewCopyEncoder(e.format, hdr, true, false)
	current := map[uint32]*job{}
	var jobs []*job
	add := func(q uint32, enc packet.CopyEncoder, src, dst uint64, n uint32) error {
		j := current[q]
		for {
			if j == nil {
				cb, err := e.cbs.get(cbSize)
				if err != nil {
					return err
				}
				j = &job{queue: q, cb: cb, buf: cb.mem[:0]}
				current[q] = j
				jobs = append(jobs, j)
			}
			out, err := enc.Append(j.buf, src, dst, n)
			if errors.Is(err, packet.ErrNoRoom) {
				j = nil
				continue
			}
			if err != nil {
				return err
			}
			j.buf = out
			return nil
		}
	}
	for _, o := range b.ops {
		stripes := uint64(1)
		if o.n >= e.opts.StripeSize {
			stripes = min(uint64(len(e.q.byDir[o.dir].ids)), o.n/(e.opts.StripeSize/2))
		}
		per := (o.n + stripes - 1) / stripes
		enc := copyEnc
		if o.memset {
			enc = fillEnc
		}
		for s := uint64(0); s < stripes; s++ {
			q := e.queue(o.dir)
			off := s * per
			end := min(off+per, o.n)
			for off < end {
				n := min(end-off, maxPacket)
				src := o.src + off
				if o.memset {
					src = o.src
				}
				if err := add(q, enc, src, o.dst+off, uint32(n)); err != nil {
					return jobs, fmt.Errorf("encode transfer: %w", err)
				}
				off += n
			}
		}
	}
	if len(jobs) == 0 {
		return nil, errors.New("encode transfer: empty batch")
	}
	return jobs, nil
}

// Copy copies n bytes from src to dst and waits for the copy; see
// Batch.Copy for the addresses it takes.
func (e *Engine) Copy(ctx context.Context, dst, src, n uint64) error {
	if n == 0 {
		return nil
	}
	b := Batch{e: e}
	if err := b.Copy(dst, src, n); err != nil {
		return err
	}
	t, err := b.start(ctx)
	if err != nil {
		return err
	}
	return t.Wait(ctx)
}

// StartCopy starts a copy and returns without waiting.
func (e *Engine) StartCopy(dst, src, n uint64) (*Transfer, error) {
	b := Batch{e: e}
	if err := b.Copy(dst, src, n); err != nil {
		return nil, err
	}
	return b.Start()
}

// Memset fills n bytes at dst with a 64-bit pattern and waits.
func (e *Engine) Memset(ctx context.Context, dst, pattern, n uint64) error {
	if n == 0 {
		return nil
	}
	b := Batch{e: e}
	if err := b.Memset(dst, pattern, n); err != nil {
		return err
	}
	t, err := b.start(ctx)
	if err != nil {
		return err
	}
	return t.Wait(ctx)
}
