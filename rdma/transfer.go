package rdma

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/ib"
	"github.com/gaudi-go/gaudi/internal/memlink"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/memory"
)

// Result tells how a transfer ran.
type Result struct {
	// Path is how this side moved its device memory: PathZeroCopy when
	// the NIC used it directly, PathPipelined when the DMA engines staged
	// it through host memory.
	Path Path
	// PeerPath is how the peer moved its side.
	PeerPath Path
	// Bytes is the length of the range, Chunks how many work requests
	// carried it.
	Bytes  uint64
	Chunks int
}

// abortWait bounds how long a failing transfer waits for the NIC to
// deliver its abort message before it shuts the connection anyway.
const abortWait = 10 * time.Second

// run runs a transfer on side s in the background and waits for it or
// for ctx. When ctx ends first, run returns ctx's error at once and the
// transfer stops in the background (see the package's Lifetimes).
func (c *Conn) run(ctx context.Context, s *side, op string, r memory.DeviceRange, body func(cancel <-chan struct{}) (Result, error)) (Result, error) {
	if err := c.begin(s, op); err != nil {
		return Result{}, err
	}
	if err := r.Check(); err != nil {
		c.end(s)
		return Result{}, fmt.Errorf("rdma %s: %w", op, err)
	}
	// Hold the range's buffer: its Close waits until the NIC's completions
	// and the DMA engines' are all in.
	buf := r.Buffer()
	if err := memlink.Hold(buf); err != nil {
		c.end(s)
		return Result{}, fmt.Errorf("rdma %s: %w", op, err)
	}
	bg, cancel := context.WithCancel(context.Background())
	stopAfter := context.AfterFunc(ctx, cancel)
	type outcome struct {
		res Result
		err error
	}
	done := make(chan outcome, 1)
	c.bodies.Go(func() {
		res, err := body(bg.Done())
		if rerr := memlink.Release(buf); rerr != nil && err == nil {
			err = rerr
		}
		if err != nil {
			err = fmt.Errorf("rdma %s: %w", op, err)
		}
		stopAfter()
		cancel()
		c.end(s)
		done <- outcome{res, err}
	})
	select {
	case o := <-done:
		return o.res, o.err
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}

// Send sends the device range src to the peer's Recv, which supplies
// where it goes. It returns when the peer has the bytes (in its device
// memory, or in the registered device memory the NIC wrote): every chunk
// was written and, on a pipelined receiver, copied out of its ring.
func (c *Conn) Send(ctx context.Context, src memory.DeviceRange) (Result, error) {
	return c.run(ctx, &c.snd, "send", src, func(cancel <-chan struct{}) (Result, error) {
		return c.send(src, cancel)
	})
}

// Recv receives the peer's Send into the device range dst, whose length
// must be the sender's. It returns when the bytes are in dst.
func (c *Conn) Recv(ctx context.Context, dst memory.DeviceRange) (Result, error) {
	return c.run(ctx, &c.rcv, "recv", dst, func(cancel <-chan struct{}) (Result, error) {
		return c.recv(dst, cancel)
	})
}

// ringOnly reports whether every transfer this Conn receives from now on
// takes the ring: its Options force the pipeline, or its NIC cannot
// register dma-bufs at all (refused is never cleared).
func (c *Conn) ringOnly() bool {
	return c.opts.Path == PathPipelined || c.refused.Load() != nil
}

// register registers r's device memory with the NIC, as Options.Path
// allows: nil (and no error) means the pipelined path. The NIC's region
// covers whole pages (a dma-buf exports no less); where the peer may
// write it (remote), the range must be whole pages itself, or the peer
// could write the bytes around it, and the pipeline is taken instead.
// The registration comes from the Conn's cache (regCache); the caller
// gives it back with c.regs.put once the NIC is done with it.
func (c *Conn) register(r memory.DeviceRange, access ib.Access, remote bool) (*regEntry, error) {
	if c.opts.Path == PathPipelined || r.Len() == 0 {
		return nil, nil
	}
	page := uint64(os.Getpagesize())
	lo := r.Offset() &^ (page - 1)
	hi := (r.Offset() + r.Len() + page - 1) &^ (page - 1)
	var err error
	if remote && (lo != r.Offset() || hi != r.Offset()+r.Len()) {
		err = fmt.Errorf("device range at offset %d, %d bytes: not whole %d-byte pages a peer may write: %w", r.Offset(), r.Len(), page, memory.ErrRange)
	} else if p := c.refused.Load(); p != nil {
		err = *p
	} else {
		var e *regEntry
		if e, err = c.regs.get(regKey{buf: r.Buffer(), off: lo, n: hi - lo, access: access}); err == nil {
			return e, nil
		}
		if errors.Is(err, ib.ErrDMABufNotSupported) {
			c.refused.Store(&err)
		}
	}
	if c.opts.Path == PathZeroCopy {
		return nil, fmt.Errorf("%w: %w", ErrPathRefused, err)
	}
	return nil, nil
}

// failure is how a transfer that went wrong ends: tell the peer why
// (unless it is the peer that gave up or went away), wait for that
// message to leave, shut the connection (the QP goes to the error state,
// so everything still posted completes as flushed), then wait for
// the DMA engines and the NIC. Only then may the caller release memory.
type failure struct {
	c    *Conn
	s    *side
	role uint32 // roleBit for the sending side
	// posted counts the data WRITEs not yet completed; dmas the DMA
	// transfers not yet waited for.
	posted int
	dmas   []*dma.Transfer
}

func (f *failure) finish(err error) error {
	c := f.c
	var peer *PeerError
	select {
	case <-c.broken:
	default:
		if !errors.As(err, &peer) {
			v := imm(kindAbort, abortCode(err)) | f.role
			if perr := c.nic.postSend(ib.SendWR{ID: wrCtl | uint64(f.role) | ctlAbort, Op: ib.OpSendImm, Imm: v}); perr == nil {
				f.await(func(ev event) bool { return ev.kind == evCtlSent && ev.value == ctlAbort }, abortWait)
			}
		}
	}
	c.shut(fmt.Errorf("%w by a failed transfer: %w", ErrBroken, err))
	// The engines first: a DMA transfer's Wait returns once the device is
	// done with it (or its timeout passed), whatever the QP does.
	for _, t := range f.dmas {
		if t != nil {
			_ = t.Wait(context.Background())
		}
	}
	// Then the NIC: in the error state every posted WRITE completes,
	// flushed if it had not run.
	for f.posted > 0 {
		ev := <-f.s.ev
		if ev.kind == evSent {
			f.posted--
		}
	}
	return err
}

// await waits up to d for an event ok accepts, dropping others.
func (f *failure) await(ok func(event) bool, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case ev := <-f.s.ev:
			if ev.kind == evSent {
				f.posted--
			}
			if ok(ev) {
				return
			}
		case <-f.c.broken:
			return
		case <-t.C:
			return
		}
	}
}

// brokenErr is what a transfer reports for a shut connection: an abort
// the peer sent just before, when one is queued, else the cause.
func (c *Conn) shutErr(s *side, f *failure) error {
	for {
		select {
		case ev := <-s.ev:
			if ev.kind == evSent {
				f.posted--
			}
			if ev.kind == evAbort {
				return &PeerError{Code: ev.value}
			}
		default:
			return c.brokenErr
		}
	}
}

// send is Send's body, on its own goroutine.
func (c *Conn) send(src memory.DeviceRange, cancel <-chan struct{}) (Result, error) {
	f := &failure{c: c, s: &c.snd, role: roleBit}
	n := src.Len()
	// Both ends settled the chunk size at connect (setPeer), and cut a
	// short transfer alike (transferChunk), so the chunks are known
	// before the receiver's descriptor comes.
	chunk := transferChunk(n, c.chunk)
	nchunks := (n + chunk - 1) / chunk
	if nchunks > maxChunks {
		return Result{}, f.finish(fmt.Errorf("%d chunks of %d bytes, at most %d: %w", nchunks, chunk, maxChunks, ErrLength))
	}
	rb, err := c.register(src, ib.AccessLocalWrite, false)
	if err != nil {
		return Result{}, f.finish(err)
	}
	if rb != nil {
		defer c.regs.put(rb) // after every WRITE that names it completed
	}
	// The first chunks go to this side's staging ring while the
	// descriptor is on its way: they need nothing from the receiver.
	f.dmas = make([]*dma.Transfer, c.opts.Depth)
	started := 0
	for rb == nil && started < int(nchunks) && started < c.opts.Depth {
		if err := c.stage(f, src, started, chunk); err != nil {
			return Result{}, f.finish(err)
		}
		started++
	}
	// The receiver's descriptor of this transfer; a receiver committed to
	// its ring sends none, and checks the length itself.
	var d Descriptor
	if c.peerCommitted {
		d = Descriptor{Path: PathPipelined, RKey: c.peer.RKey, Addr: c.peer.Addr, Len: n, ChunkSize: uint32(chunk), Slots: c.peer.Slots}
	}
	for d.Path == PathAuto {
		select {
		case ev := <-c.snd.ev:
			switch ev.kind {
			case evDesc:
				if ev.err != nil {
					return Result{}, f.finish(fmt.Errorf("%w: %w", ErrProtocol, ev.err))
				}
				d = ev.desc
			case evAbort:
				return Result{}, f.finish(&PeerError{Code: ev.value})
			case evFin:
				return Result{}, f.finish(fmt.Errorf("a fin before the descriptor: %w", ErrProtocol))
			}
		case <-c.broken:
			if len(c.snd.ev) > 0 {
				continue // what came before the shut first
			}
			return Result{}, f.finish(c.shutErr(&c.snd, f))
		case <-cancel:
			return Result{}, f.finish(context.Canceled)
		}
	}
	if d.Len != n {
		return Result{}, f.finish(fmt.Errorf("sending %d bytes to a receiver of %d: %w", n, d.Len, ErrLength))
	}
	if d.Path == PathPipelined && uint64(d.ChunkSize) != chunk {
		return Result{}, f.finish(fmt.Errorf("receiver's chunk %d, the transfer's %d: %w", d.ChunkSize, chunk, ErrProtocol))
	}
	res := Result{Path: PathPipelined, PeerPath: d.Path, Bytes: n, Chunks: int(nchunks)}
	if rb != nil {
		res.Path = PathZeroCopy
	}
	if err := c.sendChunks(f, src, d, rb, chunk, int(nchunks), started, res.Path, cancel); err != nil {
		return Result{}, f.finish(err)
	}
	return res, nil
}

// stage starts the DMA of chunk k of src into its staging slot.
func (c *Conn) stage(f *failure, src memory.DeviceRange, k int, chunk uint64) error {
	depth := c.opts.Depth
	n := min(chunk, src.Len()-uint64(k)*chunk)
	b := c.eng.NewBatch(dma.BatchOptions{})
	_ = b.CopyToHost(c.sbuf.Range(uint64(k%depth)*uint64(c.opts.ChunkSize), n), src.Slice(uint64(k)*chunk, n))
	t, err := b.Start(context.Background())
	if err != nil {
		return fmt.Errorf("stage chunk %d: %w", k, dmaErr(err))
	}
	f.dmas[k%depth] = t
	if testHookStaged != nil {
		testHookStaged(k)
	}
	return nil
}

// sendChunks moves the chunks: DMA into a staging slot (unless rb names
// the source itself; the first started were staged already), WRITE to
// the receiver (its ring slot, once it has credit for one, or its
// registered device memory), and on a ring, the credits back for every
// chunk. The done (with path, this side's) rides on the last chunk to a
// ring, else goes right behind the last WRITE: RC delivers it after every
// WRITE before it, so the receiver learns the end with the last chunk. It
// returns once the receiver's fin came (it has every byte) and every
// WRITE completed: the NIC names the source or the staging ring until
// then. A WRITE or the done flushed after the fin (the receiver closed
// at once, and its DISCONNECT overtook the acknowledgement) fails
// nothing.
func (c *Conn) sendChunks(f *failure, src memory.DeviceRange, d Descriptor, rb *regEntry, chunk uint64, nchunks, started int, path Path, cancel <-chan struct{}) error {
	donePosted, fin := false, false
	depth := c.opts.Depth
	stride := uint64(c.opts.ChunkSize)
	ring := d.Path == PathPipelined
	credits := 0
	if ring {
		credits = int(d.Slots)
	}
	credited := 0
	ready, posted, completed := 0, 0, 0
	length := func(k int) uint64 { return min(chunk, src.Len()-uint64(k)*chunk) }
	broken := c.broken
	for completed < nchunks || !fin {
		// Fill free staging slots.
		for started < nchunks && started-completed < depth {
			if rb == nil {
				if err := c.stage(f, src, started, chunk); err != nil {
					return err
				}
			} else {
				ready++
			}
			started++
		}
		// Post what is staged, as credit allows.
		for posted < ready && (!ring || credits > 0) {
			k := posted
			var sg [1]ib.SGE
			if rb != nil {
				sg[0] = ib.SGE{Addr: src.VA() + uint64(k)*chunk, Length: uint32(length(k)), LKey: rb.LKey()}
			} else {
				sg[0] = ib.SGE{Addr: c.skey.iova + uint64(k%depth)*stride, Length: uint32(length(k)), LKey: c.skey.lkey}
			}
			wr := ib.SendWR{ID: wrData | uint64(k), Op: ib.OpRDMAWrite, RKey: d.RKey, SG: sg[:]}
			if ring {
				wr.Op, wr.Imm = ib.OpRDMAWriteImm, imm(kindData, uint32(k))
				wr.RemoteAddr = d.Addr + uint64(k%int(d.Slots))*uint64(d.ChunkSize)
				credits--
				if k == nchunks-1 { // the done rides on the last chunk
					wr.Imm |= lastBit | uint32(path)<<pathShift
					donePosted = true
				}
			} else {
				wr.RemoteAddr = d.Addr + uint64(k)*chunk
			}
			if err := c.nic.postSend(wr); err != nil {
				return fmt.Errorf("post chunk %d: %w", k, err)
			}
			posted++
			f.posted++
		}
		if posted == nchunks && !donePosted {
			donePosted = true
			if err := c.nic.postSend(ib.SendWR{ID: wrCtl | roleBit | ctlDone, Op: ib.OpSendImm, Imm: imm(kindDone, uint32(path))}); err != nil {
				return err
			}
		}
		var staged <-chan struct{}
		if ready < started {
			staged = f.dmas[ready%depth].Done()
		}
		select {
		case <-staged:
			t := f.dmas[ready%depth]
			f.dmas[ready%depth] = nil
			if err := t.Err(); err != nil {
				return fmt.Errorf("stage chunk %d: %w", ready, dmaErr(err))
			}
			ready++
		case ev := <-c.snd.ev:
			switch ev.kind {
			case evSent:
				f.posted--
				if ev.err != nil && !fin {
					return c.writeErr(ev)
				}
				completed++
			case evCtlSent:
				if ev.value == ctlDone && ev.err != nil && !fin {
					return &goneError{ev.err}
				}
			case evCredit:
				credits += int(ev.value)
				credited += int(ev.value)
				if credited > nchunks || credits > int(d.Slots) {
					return fmt.Errorf("%d credits for %d chunks: %w", credited, nchunks, ErrProtocol)
				}
			case evFin:
				// The receiver sends it behind every credit, once it has
				// the done, which follows every chunk; the last credit
				// rides on it.
				n := int(ev.value &^ finRing)
				credited += n
				if !donePosted || !ring && n != 0 || ring && credited != nchunks {
					return fmt.Errorf("a fin returning %d credits after %d of %d chunks and %d credits: %w", n, posted, nchunks, credited-n, ErrProtocol)
				}
				if ev.value&finRing != 0 {
					c.peerCommitted = true
				}
				fin = true
				// The rest are completions of WRITEs that arrived: in a
				// shut connection they come flushed.
				broken = nil
			case evAbort:
				return &PeerError{Code: ev.value}
			case evDesc:
				return fmt.Errorf("a descriptor during a transfer: %w", ErrProtocol)
			}
		case <-broken:
			if len(c.snd.ev) > 0 {
				continue // what came before the shut first
			}
			return c.shutErr(&c.snd, f)
		case <-cancel:
			return context.Canceled
		}
	}
	return nil
}

// testHookStaged, when set, runs after the DMA of chunk k was started on
// the sending side (tests reset the device there).
var testHookStaged func(k int)

// testHookLanded, when set, runs after the DMA of chunk k from the ring
// into device memory was started on the receiving side.
var testHookLanded func(k int)

// dmaErr is a DMA engine's error as a transfer reports it: a device in
// reset refusing the copy (ioctl.ErrNotOperational) is an aborted
// transfer as much as a copy the reset aborted (dma.ErrAborted).
func dmaErr(err error) error {
	if errors.Is(err, ioctl.ErrNotOperational) && !errors.Is(err, ErrAborted) {
		return fmt.Errorf("%w: %w", ErrAborted, err)
	}
	return err
}

// writeErr is a failed data WRITE as a transfer reports it: flushed by a
// shut connection, the shut's cause; given up after the retries, a peer
// gone; refused by the peer (ib.ErrRemoteAccess: a key it revoked), as
// the NIC said.
func (c *Conn) writeErr(ev event) error {
	select {
	case <-c.broken:
		if errors.Is(ev.err, ib.ErrFlushed) {
			return c.brokenErr
		}
	default:
		if l := c.leftCause(); l != nil && errors.Is(ev.err, ib.ErrFlushed) {
			return l
		}
	}
	if errors.Is(ev.err, ib.ErrRetryExceeded) {
		return &goneError{fmt.Errorf("write chunk %d: %w", ev.value, ev.err)}
	}
	return fmt.Errorf("write chunk %d: %w", ev.value, ev.err)
}

// recv is Recv's body, on its own goroutine.
func (c *Conn) recv(dst memory.DeviceRange, cancel <-chan struct{}) (Result, error) {
	f := &failure{c: c, s: &c.rcv}
	n := dst.Len()
	rb, err := c.register(dst, ib.AccessLocalWrite|ib.AccessRemoteWrite, true)
	if err != nil {
		return Result{}, f.finish(err)
	}
	chunk := transferChunk(n, c.chunk)
	d := Descriptor{Path: PathPipelined, RKey: c.rkey.rkey, Addr: c.rkey.iova, Len: n, ChunkSize: uint32(chunk), Slots: uint16(c.opts.Depth)}
	if rb != nil {
		// The NIC writes dst itself; the registration goes once the
		// sender's done (or the QP's error state) says it stopped.
		defer c.regs.put(rb)
		d = Descriptor{Path: PathZeroCopy, RKey: rb.RKey(), Addr: dst.VA(), Len: n}
	}
	if !c.committed {
		var msg [DescriptorSize]byte
		if err := d.put(msg[:]); err != nil {
			return Result{}, f.finish(err)
		}
		if err := c.nic.postSend(ib.SendWR{ID: wrCtl | ctlDesc, Op: ib.OpSend, Flags: ib.SendInline, Inline: msg[:]}); err != nil {
			return Result{}, f.finish(err)
		}
	}
	nchunks := int((n + chunk - 1) / chunk)
	if rb != nil {
		nchunks = 0 // the sender's chunks land without a word to us
	}
	res := Result{Path: d.Path, Bytes: n, Chunks: nchunks}
	if err := c.recvChunks(f, dst, chunk, nchunks, &res, cancel); err != nil {
		return Result{}, f.finish(err)
	}
	return res, nil
}

// recvChunks takes the chunks as they land in the ring, copies each into
// dst with the DMA engines and gives its slot back with a credit once the
// copy is done. Once the sender's done came and every copy finished, dst
// holds the bytes, and the fin (behind every credit) tells the sender
// so. It returns when its NIC acknowledged every credit and the fin, so
// that a Close right after Recv cannot destroy the queue pair with one
// of them unsent (the sender, still waiting for it, would fail with
// ErrPeerGone). That wait is for the sender's sake only: a credit or fin
// the NIC then fails to deliver (the sender closed at once after the fin
// came, and its NIC was torn down before acknowledging it; or it
// vanished) or a connection shut meanwhile does not fail the Recv.
func (c *Conn) recvChunks(f *failure, dst memory.DeviceRange, chunk uint64, nchunks int, res *Result, cancel <-chan struct{}) error {
	depth := c.opts.Depth
	f.dmas = make([]*dma.Transfer, depth)
	arrived, copied := 0, 0
	posted, acked := 0, 0 // credits and the fin
	done, finPosted := false, false
	// Without a descriptor the sender did not check the length: chunks
	// that do not add up to dst's are ErrLength, not a broken protocol.
	mismatch := ErrProtocol
	if c.committed {
		mismatch = ErrLength
	}
	// ended takes the sender's done, alone or on its last chunk.
	ended := func(path Path) error {
		if arrived != nchunks {
			return fmt.Errorf("done after %d of %d chunks: %w", arrived, nchunks, mismatch)
		}
		if path != PathZeroCopy && path != PathPipelined {
			return fmt.Errorf("done with path %d: %w", path, ErrProtocol)
		}
		res.PeerPath = path
		done = true
		return nil
	}
	// give returns n slots to the sender: with the fin (on which the last
	// credit rides) once every chunk is in dst, else with a credit.
	give := func(n uint32) error {
		wr := ib.SendWR{ID: wrCtl | ctlCredit, Op: ib.OpSendImm, Imm: imm(kindCredit, n)}
		commit := false
		if done && copied == nchunks {
			finPosted = true
			if commit = c.ringOnly(); commit {
				n |= finRing
			}
			wr.ID, wr.Imm = wrCtl|ctlFin, imm(kindFin, n)
		}
		posted++
		if err := c.nic.postSend(wr); err != nil {
			return err
		}
		c.committed = c.committed || commit
		return nil
	}
	for {
		if done && copied == nchunks && !finPosted {
			if err := give(0); err != nil {
				return fmt.Errorf("fin: %w", err)
			}
		}
		if finPosted && acked == posted {
			return nil
		}
		var landed <-chan struct{}
		if copied < arrived {
			landed = f.dmas[copied%depth].Done()
		}
		select {
		case <-landed:
			t := f.dmas[copied%depth]
			f.dmas[copied%depth] = nil
			if err := t.Err(); err != nil {
				return fmt.Errorf("copy chunk %d to device: %w", copied, dmaErr(err))
			}
			copied++
			if err := give(1); err != nil {
				return fmt.Errorf("credit chunk %d: %w", copied-1, err)
			}
		case ev := <-c.rcv.ev:
			switch ev.kind {
			case evChunk:
				k := arrived
				want := min(chunk, dst.Len()-uint64(k)*chunk)
				if k >= nchunks || uint64(ev.n) != want {
					return fmt.Errorf("chunk %d of %d bytes, expected chunk %d of %d (of %d): %w", ev.value, ev.n, k, want, nchunks, mismatch)
				}
				if int(ev.value) != k&valueMask || arrived-copied >= depth {
					return fmt.Errorf("chunk %d of %d bytes, expected chunk %d of %d (of %d): %w", ev.value, ev.n, k, want, nchunks, ErrProtocol)
				}
				b := c.eng.NewBatch(dma.BatchOptions{})
				_ = b.CopyToDevice(dst.Slice(uint64(k)*chunk, want), c.rbuf.Range(uint64(k%depth)*chunk, want))
				t, err := b.Start(context.Background())
				if err != nil {
					return fmt.Errorf("copy chunk %d to device: %w", k, dmaErr(err))
				}
				f.dmas[k%depth] = t
				if testHookLanded != nil {
					testHookLanded(k)
				}
				arrived++
				if ev.last {
					if err := ended(ev.path); err != nil {
						return err
					}
				}
			case evDone:
				if done {
					return fmt.Errorf("a second done: %w", ErrProtocol)
				}
				if err := ended(Path(ev.value)); err != nil {
					return err
				}
			case evCtlSent:
				if ev.value == ctlCredit || ev.value == ctlFin {
					if ev.err != nil {
						if finPosted {
							return nil
						}
						return &goneError{ev.err}
					}
					acked++
				}
			case evAbort:
				return &PeerError{Code: ev.value}
			}
		case <-c.broken:
			if len(c.rcv.ev) > 0 {
				continue // what came before the shut first
			}
			if finPosted {
				return nil
			}
			return c.shutErr(&c.rcv, f)
		case <-cancel:
			return context.Canceled
		}
	}
}
