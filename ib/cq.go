package ib

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/gaudi-go/gaudi/uapi/rdma"
	"golang.org/x/sys/unix"
)

// CQOptions configure CreateCQ. The zero value asks for 256 entries, no
// completion channel and vector 0.
type CQOptions struct {
	// Entries is the least number of completions the CQ must hold; the
	// driver may give more (CQ.Entries). Size it to the sum of the depths
	// of the queues that report to it: rxe drops a send completion that
	// finds the CQ full (rxe_comp.c).
	Entries uint32
	// Channel, when set, receives the CQ's completion events after Arm,
	// which CQ.Wait needs.
	Channel *CompChannel
	// CompVector is the completion vector, below Context.NumCompVectors.
	CompVector uint32
}

// CQ is a completion queue. It belongs to its Context.
//
// A CQ is safe for concurrent use: Poll calls are serialised. Close
// destroys it; a CQ that queue pairs still report to refuses with EBUSY.
type CQ struct {
	c          *Context
	handle     uint32
	userHandle uint64
	entries    uint32
	ch         *CompChannel
	bell       []byte // REQ_NOTIFY_CQ, laid out once

	// notified is set when the channel delivered this CQ's event to
	// another CQ's waiter.
	notified atomic.Bool

	mu     sync.Mutex // serialises ring access and Close
	ring   cqRing     // nil once closed
	closed bool
	qps    int // queue pairs reporting here
}

// CreateCQ creates a completion queue (the write command CREATE_CQ through
// INVOKE_WRITE) and maps its ring. The device's driver needs a data path
// in this package (rxe today); others answer ErrNotSupported.
func (c *Context) CreateCQ(o CQOptions) (*CQ, error) {
	if err := c.use(opCreateCQ); err != nil {
		return nil, err
	}
	if c.prov == nil {
		return nil, &Error{Op: opCreateCQ, Device: c.dev.Name, Errno: unix.EOPNOTSUPP}
	}
	if o.Entries == 0 {
		o.Entries = 256
	}
	if o.Entries > 1<<20 {
		return nil, &Error{Op: opCreateCQ, Device: c.dev.Name, Errno: unix.EINVAL}
	}
	uh := c.nextHandle.Add(1)
	// struct ib_uverbs_create_cq: response@0, user_handle@8, cqe@16,
	// comp_vector@20, comp_channel@24 (-1: none), reserved@28.
	core := make([]byte, 32)
	le := binary.LittleEndian
	le.PutUint64(core[8:], uh)
	le.PutUint32(core[16:], o.Entries)
	le.PutUint32(core[20:], o.CompVector)
	in, outLen := c.prov.cqUdata(o.Entries)
	// struct ib_uverbs_create_cq_resp {cq_handle, cqe}.
	var resp, drv []byte
	var err error
	create := func(chfd int32) {
		le.PutUint32(core[24:], uint32(chfd))
		resp, drv, err = c.invokeWrite(opCreateCQ, rdma.IB_USER_VERBS_CMD_CREATE_CQ, core, 8, in, outLen)
	}
	if o.Channel == nil {
		create(-1)
	} else {
		if o.Channel.c != c {
			return nil, &Error{Op: opCreateCQ, Device: c.dev.Name, Errno: unix.EINVAL}
		}
		// Control holds the descriptor open for the call.
		if cerr := o.Channel.rc.Control(func(fd uintptr) { create(int32(fd)) }); cerr != nil {
			return nil, closedErr(opCreateCQ, c.dev.Name)
		}
	}
	if err != nil {
		return nil, err
	}
	cq := &CQ{c: c, handle: le.Uint32(resp), entries: le.Uint32(resp[4:]), userHandle: uh, ch: o.Channel}
	cq.ring, err = c.prov.newCQRing(c.f, drv)
	if err != nil {
		return nil, errors.Join(err, cq.destroy())
	}
	// struct ib_uverbs_cmd_hdr {23, in_words 4, out_words 0} and struct
	// ib_uverbs_req_notify_cq {cq_handle, solicited_only}: no response.
	cq.bell = make([]byte, 16)
	le.PutUint32(cq.bell[0:], uint32(rdma.IB_USER_VERBS_CMD_REQ_NOTIFY_CQ))
	le.PutUint16(cq.bell[4:], 4)
	le.PutUint32(cq.bell[8:], cq.handle)
	if o.Channel != nil && !o.Channel.attach(cq) {
		return nil, errors.Join(closedErr(opCreateCQ, c.dev.Name), cq.ring.unmap(), cq.destroy())
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errors.Join(closedErr(opCreateCQ, c.dev.Name), cq.ring.unmap())
	}
	c.cqs[cq] = struct{}{}
	c.mu.Unlock()
	return cq, nil
}

// Handle returns the kernel's handle of the CQ.
func (cq *CQ) Handle() uint32 { return cq.handle }

// Entries returns how many completions the CQ holds.
func (cq *CQ) Entries() uint32 { return cq.entries }

// Poll moves up to len(wcs) completions into wcs, oldest first, and returns
// how many. It does not block and allocates nothing.
func (cq *CQ) Poll(wcs []WC) (int, error) {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.ring == nil {
		return 0, closedErr(opPollCQ, cq.c.dev.Name)
	}
	return cq.ring.poll(wcs), nil
}

// Arm asks for one completion event on the CQ's channel when the next
// completion arrives (only a solicited one with solicitedOnly). The kernel
// does not report completions that arrived before: poll again after
// arming (Wait does).
func (cq *CQ) Arm(solicitedOnly bool) error {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.closed {
		return closedErr(opReqNotifyCQ, cq.c.dev.Name)
	}
	if cq.ch == nil {
		return &Error{Op: opReqNotifyCQ, Device: cq.c.dev.Name, Errno: unix.EINVAL}
	}
	v := uint32(0)
	if solicitedOnly {
		v = 1
	}
	binary.LittleEndian.PutUint32(cq.bell[12:], v)
	for {
		err := cq.c.f.write(cq.bell, len(cq.bell))
		if err == nil {
			return nil
		}
		if err != unix.EINTR {
			errno, _ := err.(unix.Errno)
			return &Error{Op: opReqNotifyCQ, Device: cq.c.dev.Name, Errno: errno}
		}
	}
}

// Wait polls up to len(wcs) completions; when there are none it arms the
// CQ and sleeps on its completion channel until one arrives, ctx ends
// (ctx.Err()) or the CQ closes (ErrClosed). It needs a CQ created with a
// Channel, and allocates nothing per call once the wait machinery is warm.
func (cq *CQ) Wait(ctx context.Context, wcs []WC) (int, error) {
	if len(wcs) == 0 {
		return 0, nil
	}
	if cq.ch == nil {
		return 0, &Error{Op: opReqNotifyCQ, Device: cq.c.dev.Name, Errno: unix.EINVAL}
	}
	for {
		n, err := cq.Poll(wcs)
		if n > 0 || err != nil {
			return n, err
		}
		if err := cq.Arm(false); err != nil {
			return 0, err
		}
		// The kernel arms without REPORT_MISSED_EVENTS
		// (uverbs_cmd.c, ib_uverbs_req_notify_cq): what arrived between
		// the poll and the arm raises no event, so poll again.
		if n, err := cq.Poll(wcs); n > 0 || err != nil {
			return n, err
		}
		if err := cq.ch.waitFor(ctx, cq); err != nil {
			return 0, err
		}
	}
}

// Close destroys the CQ (DESTROY_CQ) and unmaps its ring. Queue pairs
// that report to it must be closed first (EBUSY otherwise). Closing twice
// does nothing.
func (cq *CQ) Close() error {
	cq.mu.Lock()
	if cq.closed {
		cq.mu.Unlock()
		return nil
	}
	if cq.qps > 0 {
		cq.mu.Unlock()
		return &Error{Op: opDestroyCQ, Device: cq.c.dev.Name, Errno: unix.EBUSY}
	}
	cq.closed = true
	ring := cq.ring
	cq.ring = nil
	cq.mu.Unlock()
	c := cq.c
	c.mu.Lock()
	gone := c.closed
	delete(c.cqs, cq)
	c.mu.Unlock()
	if cq.ch != nil {
		cq.ch.detach(cq)
		// Wake a Wait sleeping on the channel for this CQ: it finds the
		// flag, polls and gets ErrClosed.
		cq.notified.Store(true)
		cq.ch.interrupt()
	}
	var err error
	if !gone {
		err = cq.destroy()
	}
	// Unmap only after the kernel's CQ is gone: until then the kernel may
	// still write completions into the ring.
	return errors.Join(err, ring.unmap())
}

// destroy issues DESTROY_CQ: struct ib_uverbs_destroy_cq {response,
// cq_handle@8}, answer {comp_events_reported, async_events_reported}.
func (cq *CQ) destroy() error {
	core := make([]byte, 16)
	binary.LittleEndian.PutUint32(core[8:], cq.handle)
	_, _, err := cq.c.invokeWrite(opDestroyCQ, rdma.IB_USER_VERBS_CMD_DESTROY_CQ, core, 8, nil, 0)
	return err
}

// attachQP and detachQP count the queue pairs reporting to the CQ.
func (cq *CQ) attachQP() bool {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.closed {
		return false
	}
	cq.qps++
	return true
}

func (cq *CQ) detachQP() {
	cq.mu.Lock()
	cq.qps--
	cq.mu.Unlock()
}

// abandon unmaps the ring without telling the kernel: the Context's file
// is being closed, which destroys the CQ.
func (cq *CQ) abandon() error {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	cq.closed = true
	if cq.ring == nil {
		return nil
	}
	ring := cq.ring
	cq.ring = nil
	return ring.unmap()
}
