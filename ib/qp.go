package ib

import (
	"encoding/binary"
	"errors"
	"sync"

	"github.com/gaudi-go/gaudi/uapi/rdma"
	"golang.org/x/sys/unix"
)

// QPCaps are a queue pair's queue sizes. In QPOptions they are what is
// asked (zero: 128 work requests, 1 SGE each way); QP.Caps returns what
// the driver gave, which may be more.
type QPCaps struct {
	MaxSendWR  uint32
	MaxRecvWR  uint32
	MaxSendSGE uint32
	MaxRecvSGE uint32
	MaxInline  uint32
}

// QPOptions configure CreateQP. SendCQ and RecvCQ are required (they may
// be the same CQ).
type QPOptions struct {
	SendCQ, RecvCQ *CQ
	Caps           QPCaps
	// SignalAll makes every send request produce a completion, as if each
	// had SendSignaled.
	SignalAll bool
}

// QP is a reliable-connected (RC) queue pair. It belongs to its PD.
//
// A QP is safe for concurrent use: posts to each queue are serialised.
// Moving it through its states is the caller's (Modify, with the
// attributes the RDMA CM gives: package ib/cm).
//
// Buffers named in posted work requests must stay registered and mapped
// until their completion is polled, including the flush completions a QP
// in the error state produces. Close moves the QP to the error state
// first, so the NIC stops using them, and destroys it; after Close
// returns, the kernel no longer touches any buffer the QP named.
type QP struct {
	pd     *PD
	handle uint32
	qpn    uint32
	caps   QPCaps
	scq    *CQ
	rcq    *CQ

	sendMu sync.Mutex
	send   sendRing // nil once closed
	recvMu sync.Mutex
	recv   recvRing // nil once closed

	// The request being posted, staged in memory the QP owns: the rings
	// are an interface (the provider seam), so a pointer handed to them
	// escapes, and staging keeps the caller's requests and SGE slices
	// off the heap. sendWR, sendSG and inline are guarded by sendMu,
	// recvWR and recvSG by recvMu.
	sendWR SendWR
	sendSG []SGE
	inline []byte
	recvWR RecvWR
	recvSG []SGE

	mu     sync.Mutex
	closed bool
}

// CreateQP creates an RC queue pair in the PD (the write command
// CREATE_QP through INVOKE_WRITE) and maps its queues.
func (pd *PD) CreateQP(o QPOptions) (*QP, error) {
	if err := pd.use(opCreateQP); err != nil {
		return nil, err
	}
	c := pd.c
	if c.prov == nil {
		return nil, &Error{Op: opCreateQP, Device: c.dev.Name, Errno: unix.EOPNOTSUPP}
	}
	if o.SendCQ == nil || o.RecvCQ == nil || o.SendCQ.c != c || o.RecvCQ.c != c {
		return nil, &Error{Op: opCreateQP, Device: c.dev.Name, Errno: unix.EINVAL}
	}
	caps := o.Caps
	if caps.MaxSendWR == 0 {
		caps.MaxSendWR = 128
	}
	if caps.MaxRecvWR == 0 {
		caps.MaxRecvWR = 128
	}
	caps.MaxSendSGE = max(caps.MaxSendSGE, 1)
	caps.MaxRecvSGE = max(caps.MaxRecvSGE, 1)
	if !o.SendCQ.attachQP() {
		return nil, closedErr(opCreateQP, c.dev.Name)
	}
	if !o.RecvCQ.attachQP() {
		o.SendCQ.detachQP()
		return nil, closedErr(opCreateQP, c.dev.Name)
	}
	qp, err := pd.createQP(o, caps)
	if err != nil {
		o.SendCQ.detachQP()
		o.RecvCQ.detachQP()
		return nil, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errors.Join(closedErr(opCreateQP, c.dev.Name), qp.abandon())
	}
	c.qps[qp] = struct{}{}
	c.mu.Unlock()
	return qp, nil
}

func (pd *PD) createQP(o QPOptions, caps QPCaps) (*QP, error) {
	c := pd.c
	// struct ib_uverbs_create_qp: response@0, user_handle@8, pd_handle@16,
	// send_cq_handle@20, recv_cq_handle@24, srq_handle@28,
	// max_send_wr@32, max_recv_wr@36, max_send_sge@40, max_recv_sge@44,
	// max_inline_data@48, sq_sig_all@52, qp_type@53 (IB_QPT_RC 2),
	// is_srq@54, reserved@55.
	core := make([]byte, 56)
	le := binary.LittleEndian
	le.PutUint64(core[8:], c.nextHandle.Add(1))
	le.PutUint32(core[16:], pd.handle)
	le.PutUint32(core[20:], o.SendCQ.handle)
	le.PutUint32(core[24:], o.RecvCQ.handle)
	le.PutUint32(core[32:], caps.MaxSendWR)
	le.PutUint32(core[36:], caps.MaxRecvWR)
	le.PutUint32(core[40:], caps.MaxSendSGE)
	le.PutUint32(core[44:], caps.MaxRecvSGE)
	le.PutUint32(core[48:], caps.MaxInline)
	if o.SignalAll {
		core[52] = 1
	}
	core[53] = qpTypeRC
	in, outLen := c.prov.qpUdata(caps)
	// struct ib_uverbs_create_qp_resp: qp_handle@0, qpn@4, max_send_wr@8,
	// max_recv_wr@12, max_send_sge@16, max_recv_sge@20,
	// max_inline_data@24, reserved@28.
	resp, drv, err := c.invokeWrite(opCreateQP, rdma.IB_USER_VERBS_CMD_CREATE_QP, core, 32, in, outLen)
	if err != nil {
		return nil, err
	}
	qp := &QP{
		pd: pd, handle: le.Uint32(resp[0:]), qpn: le.Uint32(resp[4:]), scq: o.SendCQ, rcq: o.RecvCQ,
		caps: QPCaps{
			MaxSendWR: le.Uint32(resp[8:]), MaxRecvWR: le.Uint32(resp[12:]),
			MaxSendSGE: le.Uint32(resp[16:]), MaxRecvSGE: le.Uint32(resp[20:]), MaxInline: le.Uint32(resp[24:]),
		},
	}
	qp.send, qp.recv, err = c.prov.newQPRings(c.f, drv, qp.handle, qp.caps)
	if err != nil {
		return nil, errors.Join(err, qp.destroy())
	}
	qp.stageBuffers()
	return qp, nil
}

// stageBuffers sizes the staging areas to the capacities the kernel
// reported (rxe may report more than was asked: rxe_qp.c, rxe_init_sq).
func (qp *QP) stageBuffers() {
	qp.sendSG = make([]SGE, qp.caps.MaxSendSGE)
	qp.inline = make([]byte, qp.caps.MaxInline)
	qp.recvSG = make([]SGE, qp.caps.MaxRecvSGE)
}

// stageSend copies wr into the QP's staging area; nothing of wr is kept.
func (qp *QP) stageSend(wr *SendWR) (*SendWR, error) {
	switch {
	case len(wr.SG) > len(qp.sendSG):
		return nil, &wrError{op: opPostSend, id: wr.ID, reason: "more SGEs than the send queue holds", err: ErrBadWorkRequest}
	case len(wr.Inline) > len(qp.inline):
		return nil, &wrError{op: opPostSend, id: wr.ID, reason: "more inline data than the send queue holds", err: ErrBadWorkRequest}
	}
	qp.sendWR = SendWR{
		ID: wr.ID, Op: wr.Op, Flags: wr.Flags, Imm: wr.Imm, RemoteAddr: wr.RemoteAddr, RKey: wr.RKey,
		SG:     qp.sendSG[:copy(qp.sendSG, wr.SG)],
		Inline: qp.inline[:copy(qp.inline, wr.Inline)],
	}
	return &qp.sendWR, nil
}

// qpTypeRC is IB_QPT_RC (enum ib_qp_type, include/rdma/ib_verbs.h).
const qpTypeRC = 2

// Handle returns the kernel's handle of the QP.
func (qp *QP) Handle() uint32 { return qp.handle }

// Num returns the QP number peers address (24 bits).
func (qp *QP) Num() uint32 { return qp.qpn }

// Caps returns the queue sizes the driver gave.
func (qp *QP) Caps() QPCaps { return qp.caps }

// PD returns the protection domain the QP belongs to.
func (qp *QP) PD() *PD { return qp.pd }

// Modify changes the QP's attributes named in a.Mask (MODIFY_QP): the
// transitions RESET to INIT to RTR to RTS, and to ERR. The kernel checks
// that the mask fits the transition (EINVAL otherwise).
func (qp *QP) Modify(a *QPAttr) error {
	qp.mu.Lock()
	closed := qp.closed
	qp.mu.Unlock()
	if closed {
		return closedErr(opModifyQP, qp.pd.c.dev.Name)
	}
	return qp.modify(a)
}

func (qp *QP) modify(a *QPAttr) error {
	_, _, err := qp.pd.c.invokeWrite(opModifyQP, rdma.IB_USER_VERBS_CMD_MODIFY_QP, encodeModifyQP(qp.handle, a), 0, nil, 0)
	return err
}

// PostSend queues send work requests in order and rings the doorbell
// once. It stops at the first request that does not fit (ErrQueueFull) or
// is malformed (ErrBadWorkRequest) and returns how many were queued; those
// run. It allocates nothing. Before the QP reaches RTS the kernel refuses
// the doorbell (EINVAL) and the queued requests wait for the next one.
func (qp *QP) PostSend(wrs ...SendWR) (int, error) {
	qp.sendMu.Lock()
	defer qp.sendMu.Unlock()
	if qp.send == nil {
		return 0, closedErr(opPostSend, qp.pd.c.dev.Name)
	}
	n := 0
	var err error
	for i := range wrs {
		var wr *SendWR
		if wr, err = qp.stageSend(&wrs[i]); err != nil {
			break
		}
		if err = qp.send.post(wr); err != nil {
			break
		}
		n++
	}
	if n > 0 {
		if berr := qp.send.doorbell(); berr != nil {
			errno, _ := berr.(unix.Errno)
			return n, errors.Join(err, &Error{Op: opPostSend, Device: qp.pd.c.dev.Name, Errno: errno})
		}
	}
	return n, err
}

// PostRecv queues receive work requests in order; it stops at the first
// that does not fit or is malformed and returns how many were queued. It
// allocates nothing.
func (qp *QP) PostRecv(wrs ...RecvWR) (int, error) {
	qp.recvMu.Lock()
	defer qp.recvMu.Unlock()
	if qp.recv == nil {
		return 0, closedErr(opPostRecv, qp.pd.c.dev.Name)
	}
	for i := range wrs {
		wr := &wrs[i]
		if len(wr.SG) > len(qp.recvSG) {
			return i, &wrError{op: opPostRecv, id: wr.ID, reason: "more SGEs than the receive queue holds", err: ErrBadWorkRequest}
		}
		qp.recvWR = RecvWR{ID: wr.ID, SG: qp.recvSG[:copy(qp.recvSG, wr.SG)]}
		if err := qp.recv.post(&qp.recvWR); err != nil {
			return i, err
		}
	}
	return len(wrs), nil
}

// Close moves the QP to the error state (outstanding requests complete as
// flushed, ErrFlushed), destroys it (DESTROY_QP) and unmaps its queues.
// Closing twice does nothing.
func (qp *QP) Close() error {
	qp.mu.Lock()
	if qp.closed {
		qp.mu.Unlock()
		return nil
	}
	qp.closed = true
	qp.mu.Unlock()
	c := qp.pd.c
	c.mu.Lock()
	gone := c.closed
	delete(c.qps, qp)
	c.mu.Unlock()
	var errs []error
	if !gone {
		// To ERR first: the NIC stops and flushes what is outstanding.
		// Every state may go to ERR (ib_modify_qp_is_ok, verbs.c); a
		// failure is reported but does not stop the destroy.
		errs = append(errs, qp.modify(&QPAttr{Mask: AttrState, State: QPSErr}), qp.destroy())
	}
	errs = append(errs, qp.unmapRings())
	qp.scq.detachQP()
	qp.rcq.detachQP()
	return errors.Join(errs...)
}

// destroy issues DESTROY_QP: struct ib_uverbs_destroy_qp {response,
// qp_handle@8}, answer {events_reported}.
func (qp *QP) destroy() error {
	core := make([]byte, 16)
	binary.LittleEndian.PutUint32(core[8:], qp.handle)
	_, _, err := qp.pd.c.invokeWrite(opDestroyQP, rdma.IB_USER_VERBS_CMD_DESTROY_QP, core, 4, nil, 0)
	return err
}

// unmapRings unmaps the queues, waiting for posts in progress.
func (qp *QP) unmapRings() error {
	qp.sendMu.Lock()
	s := qp.send
	qp.send = nil
	qp.sendMu.Unlock()
	qp.recvMu.Lock()
	r := qp.recv
	qp.recv = nil
	qp.recvMu.Unlock()
	var errs []error
	if s != nil {
		errs = append(errs, s.unmap())
	}
	if r != nil {
		errs = append(errs, r.unmap())
	}
	return errors.Join(errs...)
}

// abandon marks the QP closed and unmaps its queues without telling the
// kernel: the Context's file is being closed, which destroys the QP.
func (qp *QP) abandon() error {
	qp.mu.Lock()
	qp.closed = true
	qp.mu.Unlock()
	return qp.unmapRings()
}
