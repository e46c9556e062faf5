package dma

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gaudi-go/gaudi/internal/memlink"
	"github.com/gaudi-go/gaudi/internal/pqm"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// op is one copy or fill of a batch, in device addresses, and the buffers
// and mappings it touches (a *memory.Buffer or *memory.HostBuffer each).
type op struct {
	dir    Direction
	dst    uint64
	src    uint64 // source address, or the pattern of a fill
	n      uint64
	memset bool
	held   [2]any
}

// Batch collects copies and fills that are submitted together: as few CSs
// as the driver's limits allow (512 jobs per CS, HL_MAX_CB_SIZE per
// command buffer), their jobs spread over the queues of each direction.
// The operations of a batch may run in any order and concurrently, so
// none may write memory another reads or writes. A Batch is not safe for
// concurrent use; the Transfer it starts is.
type Batch struct {
	e    *Engine
	ops  []op
	err  error
	opts BatchOptions
}

// BatchOptions adjust a Batch.
type BatchOptions struct {
	// Timeout gives the batch's CSs their own timeout (whole seconds,
	// rounded up; HL_CS_FLAGS_CUSTOM_TIMEOUT), overriding Options.Timeout.
	// 0, or a negative value, leaves the Engine's; it is capped at 2^32-1
	// seconds, the most the driver's field holds.
	Timeout time.Duration
}

// NewBatch returns an empty batch.
func (e *Engine) NewBatch(opts BatchOptions) *Batch {
	opts.Timeout = min(max(opts.Timeout, 0), maxTimeout)
	return &Batch{e: e, opts: opts}
}

// CopyToDevice adds a copy from host memory to device memory. The ranges
// must have the same length. The first error of a batch is kept and
// returned by Start too.
func (b *Batch) CopyToDevice(dst memory.DeviceRange, src memory.HostRange) error {
	return b.add(HostToDevice, dst.Buffer(), dst.Check(), dst.VA(), dst.Len(), src.Buffer(), src.Check(), src.VA(), src.Len())
}

// CopyToHost adds a copy from device memory to host memory.
func (b *Batch) CopyToHost(dst memory.HostRange, src memory.DeviceRange) error {
	return b.add(DeviceToHost, dst.Buffer(), dst.Check(), dst.VA(), dst.Len(), src.Buffer(), src.Check(), src.VA(), src.Len())
}

// CopyOnDevice adds a copy between two ranges of device memory.
func (b *Batch) CopyOnDevice(dst, src memory.DeviceRange) error {
	return b.add(DeviceToDevice, dst.Buffer(), dst.Check(), dst.VA(), dst.Len(), src.Buffer(), src.Check(), src.VA(), src.Len())
}

// Memset adds a fill of device memory with a 64-bit pattern (the DMA
// engine repeats it, low byte first).
func (b *Batch) Memset(dst memory.DeviceRange, pattern uint64) error {
	if b.err != nil {
		return b.err
	}
	if err := dst.Check(); err != nil {
		b.err = fmt.Errorf("memset destination: %w", err)
		return b.err
	}
	if dst.Len() > 0 {
		b.ops = append(b.ops, op{dir: DeviceToDevice, dst: dst.VA(), src: pattern, n: dst.Len(), memset: true, held: [2]any{dst.Buffer()}})
	}
	return nil
}

// add adds a copy between two checked ranges.
func (b *Batch) add(dir Direction, dst any, dstErr error, dstVA, dstLen uint64, src any, srcErr error, srcVA, srcLen uint64) error {
	if b.err != nil {
		return b.err
	}
	switch {
	case dstErr != nil:
		b.err = fmt.Errorf("copy destination: %w", dstErr)
	case srcErr != nil:
		b.err = fmt.Errorf("copy source: %w", srcErr)
	case dstLen != srcLen:
		b.err = fmt.Errorf("copy of %d bytes into %d: %w", srcLen, dstLen, ErrLength)
	}
	if b.err != nil {
		return b.err
	}
	if dstLen > 0 {
		b.ops = append(b.ops, op{dir: dir, dst: dstVA, src: srcVA, n: dstLen, held: [2]any{src, dst}})
	}
	return nil
}

// CopyAddr adds a copy of n bytes between two addresses, for programs that
// compute addresses themselves. Each is a device address of a buffer or
// host mapping of the Engine's Manager, or a host pointer of mapped host
// memory, and the whole range must lie in one buffer or mapping; the
// direction follows from what the addresses are. Prefer the typed copies.
func (b *Batch) CopyAddr(dst, src, n uint64) error {
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
	b.ops = append(b.ops, op{dir: direction(rd.Kind, rs.Kind), dst: rd.DeviceVA(), src: rs.DeviceVA(), n: n, held: [2]any{regionOwner(rs), regionOwner(rd)}})
	return nil
}

// MemsetAddr adds a fill of n bytes at the address dst (see CopyAddr) with
// a 64-bit pattern.
func (b *Batch) MemsetAddr(dst, pattern, n uint64) error {
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
	dir := DeviceToDevice
	if rd.Kind == memory.HostMemory {
		dir = HostToHost
	}
	b.ops = append(b.ops, op{dir: dir, dst: rd.DeviceVA(), src: pattern, n: n, memset: true, held: [2]any{regionOwner(rd)}})
	return nil
}

// regionOwner returns the buffer or mapping of a resolved region.
func regionOwner(r memory.Region) any {
	if r.Kind == memory.DeviceMemory {
		return r.Device
	}
	return r.Host
}

// Len returns the number of operations added.
func (b *Batch) Len() int { return len(b.ops) }

// job is one CS chunk: a command buffer on a queue, filled up to buf.
type job struct {
	queue  uint32
	pj     *pqm.Job // the packets, on a Gaudi3 (pqm.go); cb and buf are unused there
	cb     *cmdBuf
	buf    []byte // packets written so far, within cb.mem
	flight flight // what its packets since the last engine barrier touch
}

// Start encodes and submits the batch and returns its Transfer. The
// memory the batch touches is held, and the command buffers kept, until
// the device is done with the transfer. ctx bounds the retries of a
// submission the driver refuses for now (EAGAIN); once a CS is queued, the
// transfer is the device's whatever ctx does.
func (b *Batch) Start(ctx context.Context) (*Transfer, error) {
	t := new(Transfer)
	t.init(b.e)
	if err := b.startInto(ctx, t); err != nil {
		return nil, err
	}
	return t, nil
}

// startInto is Start into a Transfer the caller initialized.
func (b *Batch) startInto(ctx context.Context, t *Transfer) error {
	if b.err != nil {
		return b.err
	}
	e := b.e
	if err := e.begin(); err != nil {
		return err
	}
	// fail ends a transfer of which nothing was queued.
	fail := func(err error) error {
		t.finish(err, 0)
		return err
	}
	// Hold the memory first: a Close from now on waits for the transfer.
	var err error
	if t.holds, err = b.holdAll(t.holds); err != nil {
		return fail(fmt.Errorf("start transfer: %w", err))
	}
	jobs, err := b.encode(t.store.jobPtrs[:0], t.store.jobArr[:])
	if e.pq != nil {
		if err != nil {
			e.putJobs(jobs)
			return fail(err)
		}
		return b.startPQM(ctx, t, jobs)
	}
	for _, j := range jobs {
		t.cbs = append(t.cbs, j.cb)
	}
	if err != nil {
		return fail(err)
	}
	for start := 0; start < len(jobs); start += hl.HL_MAX_JOBS_PER_CS {
		part := jobs[start:min(start+hl.HL_MAX_JOBS_PER_CS, len(jobs))]
		var chunks []hl.CSChunk
		var args *hl.CSChunksArgs
		if start == 0 && len(part) <= len(t.store.chunkArr) {
			chunks, args = t.store.chunkArr[:len(part)], &t.store.args
		} else {
			args = new(hl.CSChunksArgs)
		}
		seq, queued, err := e.submit(ctx, part, b.opts.Timeout, chunks, args)
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
			return err
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
	e.started(t)
	return nil
}

// holdAll holds every buffer and mapping the batch touches, appending them
// to hs. On error the returned slice has the holds taken so far, for the
// caller to release.
func (b *Batch) holdAll(hs []any) ([]any, error) {
	for _, o := range b.ops {
		for _, x := range o.held {
			if x == nil {
				continue
			}
			if err := memlink.Hold(x); err != nil {
				return hs, err
			}
			hs = append(hs, x)
		}
	}
	return hs, nil
}

// maxPacket is the most one LIN_DMA moves here: the driver's own 2 GiB
// split (tsize allows up to 4 GiB - 1).
const maxPacket = packet.DriverChunkSize

// encode turns the operations into jobs: each op is split into stripes on
// different queues when large, and each stripe into LIN_DMA packets.
//
// The jobs are appended to jobs, and taken from store before any is
// allocated: a transfer's inline storage, so that a small transfer
// allocates nothing here.
func (b *Batch) encode(jobs []*job, store []job) ([]*job, error) {
	e := b.e
	if e.pq != nil {
		return b.encodePQM(jobs, store)
	}
	enc := e.enc
	first := len(jobs)
	add := func(q uint32, memset bool, src, dst uint64, n uint32) error {
		j := current(jobs[first:], q)
		for {
			if j == nil {
				cb, err := e.cbs.get(cbSize)
				if err != nil {
					return err
				}
				if len(store) > 0 {
					j, store = &store[0], store[1:]
				} else {
					j = new(job)
				}
				*j = job{queue: q, cb: cb, buf: cb.mem[:0]}
				j.flight.init()
				jobs = append(jobs, j)
			}
			out, err := enc.pick(memset, j.flight.admit(memset, src, dst, uint64(n))).Append(j.buf, src, dst, n)
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
	for i := range b.ops {
		o := &b.ops[i]
		if err := e.split(o, func(q uint32, src, dst uint64, n uint32) error { return add(q, o.memset, src, dst, n) }); err != nil {
			return jobs, fmt.Errorf("encode transfer: %w", err)
		}
	}
	if len(jobs) == first {
		return jobs, errors.New("encode transfer: empty batch")
	}
	return jobs, nil
}

// CopyToDevice copies host memory to device memory and waits for the copy.
// The ranges must have the same length. When ctx ends first it returns
// ctx's error at once; the copy may still run, and the memory stays held
// until the device is done (see Transfer.Wait). In steady state it
// allocates nothing.
func (e *Engine) CopyToDevice(ctx context.Context, dst memory.DeviceRange, src memory.HostRange) error {
	t := e.getTransfer()
	if err := t.batch.CopyToDevice(dst, src); err != nil {
		e.putTransfer(t)
		return err
	}
	return e.runOwned(ctx, t)
}

// CopyToHost copies device memory to host memory and waits for the copy.
func (e *Engine) CopyToHost(ctx context.Context, dst memory.HostRange, src memory.DeviceRange) error {
	t := e.getTransfer()
	if err := t.batch.CopyToHost(dst, src); err != nil {
		e.putTransfer(t)
		return err
	}
	return e.runOwned(ctx, t)
}

// CopyOnDevice copies between two ranges of device memory and waits.
func (e *Engine) CopyOnDevice(ctx context.Context, dst, src memory.DeviceRange) error {
	t := e.getTransfer()
	if err := t.batch.CopyOnDevice(dst, src); err != nil {
		e.putTransfer(t)
		return err
	}
	return e.runOwned(ctx, t)
}

// Memset fills device memory with a 64-bit pattern and waits.
func (e *Engine) Memset(ctx context.Context, dst memory.DeviceRange, pattern uint64) error {
	t := e.getTransfer()
	if err := t.batch.Memset(dst, pattern); err != nil {
		e.putTransfer(t)
		return err
	}
	return e.runOwned(ctx, t)
}

// runOwned starts the batch inside a pooled Transfer and waits for it; an
// empty batch does nothing. The Transfer goes back to the pool once
// nothing refers to it: here when the wait ended it, else when the reaper
// that adopted it is done.
func (e *Engine) runOwned(ctx context.Context, t *Transfer) error {
	if len(t.batch.ops) == 0 {
		e.putTransfer(t)
		return nil
	}
	err := t.batch.startInto(ctx, t)
	if err == nil {
		err = t.wait(ctx)
	}
	t.unref()
	return err
}

// run starts the batch and waits for it; an empty batch does nothing.
func (b *Batch) run(ctx context.Context) error {
	if len(b.ops) == 0 {
		return nil
	}
	t, err := b.Start(ctx)
	if err != nil {
		return err
	}
	return t.Wait(ctx)
}

// split calls fn for each piece of op o: striped from StripeSize up over
// the engine's queues (PDMA channels on Gaudi3) of its direction, each
// stripe cut into pieces of at most maxPacket bytes; a memset's source is
// its value, the same for every piece.
func (e *Engine) split(o *op, fn func(q uint32, src, dst uint64, n uint32) error) error {
	stripes := uint64(1)
	if o.n >= e.opts.StripeSize {
		stripes = min(uint64(len(e.q.byDir[o.dir].ids)), o.n/(e.opts.StripeSize/2))
	}
	per := (o.n + stripes - 1) / stripes
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
			if err := fn(q, src, o.dst+off, uint32(n)); err != nil {
				return err
			}
			off += n
		}
	}
	return nil
}

// current returns the job of jobs being filled for queue q: the last one
// for q, or nil.
func current(jobs []*job, q uint32) *job {
	for i := len(jobs) - 1; i >= 0; i-- {
		if jobs[i].queue == q {
			return jobs[i]
		}
	}
	return nil
}
