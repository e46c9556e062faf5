package ib

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/rdma"
	"golang.org/x/sys/unix"
)

// rxe (Soft-RoCE) shares its queues with user space: the kernel allocates
// each one (drivers/infiniband/sw/rxe/rxe_queue.c, rxe_queue_init), user
// space maps it from the uverbs file at the offset and size that the
// create response's struct mminfo gives (rxe_mmap.c; each mapping once),
// and both sides move indices in the struct rxe_queue_buf at its start
// (include/uapi/rdma/rdma_user_rxe.h): log2_elem_size@0, index_mask@4,
// producer_index@128, consumer_index@256, slots from data@384, slot i at
// data + (i << log2_elem_size). Indices are stored masked; a queue is
// empty when producer == consumer and full when producer+1 == consumer
// (masked), so it holds index_mask elements.
//
// Who owns which index (rxe_queue.h, queue_get_producer and friends): on
// the send and receive queues user space produces and the kernel consumes;
// on a CQ the kernel produces and user space consumes. The kernel keeps its
// own copy of the index it owns (q->index) and only reads ours, so a wrong
// index from us cannot make it touch memory outside the ring; we mask every
// index we read before using it, for the same reason.
//
// Memory ordering. The kernel reads the index we own with
// smp_load_acquire and publishes its own with smp_store_release
// (rxe_queue.h). We pair with them through sync/atomic, whose operations
// are sequentially consistent in the Go memory model and compile to
// at least release stores and acquire loads on every port (amd64: XCHG for
// the store, a plain MOV under TSO for the load; arm64: STLRW and LDARW):
//   - posting: the WQE's plain stores come before atomic.StoreUint32 of
//     the producer index in program order, and a release store keeps them
//     before it, so the kernel's acquire load that sees the new index sees
//     the whole WQE (the rdma-core provider's store_release has the same
//     role);
//   - the full check loads the consumer index with atomic.LoadUint32
//     (acquire), so the slot we then overwrite was completely read by the
//     kernel, which released it with smp_store_release after reading;
//   - polling: atomic.LoadUint32 of the CQ's producer index (acquire)
//     comes before the plain loads of the CQE, so they see what the kernel
//     wrote before its release; atomic.StoreUint32 of our consumer index
//     (release) comes after those loads, so the kernel cannot reuse the
//     slot while we still read it.
//
// The doorbell (a write(2) of POST_SEND) is a system call, a full barrier
// beyond all of this.
const (
	rxeLog2Off = 0   // log2_elem_size
	rxeMaskOff = 4   // index_mask
	rxeProdOff = 128 // producer_index
	rxeConsOff = 256 // consumer_index
	rxeDataOff = 384 // data[]

	// struct rxe_send_wqe (rdma_user_rxe.h): the rxe_send_wr, then status,
	// state, iova, the kernel's bookkeeping and struct rxe_dma_info, whose
	// sge[] or inline bytes start at 208.
	rxeWQEID       = 0   // wr.wr_id
	rxeWQEOpcode   = 12  // wr.opcode
	rxeWQEFlags    = 16  // wr.send_flags
	rxeWQEImm      = 20  // wr.ex.imm_data, big-endian
	rxeWQERemote   = 24  // wr.wr.rdma.remote_addr
	rxeWQERKey     = 32  // wr.wr.rdma.rkey
	rxeWQEIOVA     = 152 // iova: the RETH address (rxe_req.c reads it; a retry recomputes it from remote_addr)
	rxeWQELength   = 184 // dma.length
	rxeWQEResid    = 188 // dma.resid
	rxeWQENumSGE   = 196 // dma.num_sge
	rxeSendWQESize = 208 // sizeof(struct rxe_send_wqe): sge[] or inline data follows

	// struct rxe_recv_wqe: wr_id@0, then struct rxe_dma_info at 16.
	rxeRecvLength  = 16 // dma.length
	rxeRecvResid   = 20 // dma.resid
	rxeRecvNumSGE  = 28 // dma.num_sge
	rxeRecvWQESize = 40 // sizeof(struct rxe_recv_wqe): sge[] follows

	rxeSGESize = 16 // struct rxe_sge {addr, length, lkey}

	// struct mminfo {offset u64, size u32, pad}.
	mminfoSize = 16
)

// rxeQueue is one mapped rxe ring.
type rxeQueue struct {
	f    verbsFile
	mem  []byte // the whole mapping; nil once unmapped
	log2 uint32
	mask uint32
	prod *uint32
	cons *uint32
}

// mapRxeQueue maps the queue that mi (a struct mminfo) describes and
// checks that its header describes a ring inside the mapping, with slots
// of at least minElem bytes.
func mapRxeQueue(f verbsFile, mi []byte, minElem int) (*rxeQueue, error) {
	if len(mi) < mminfoSize {
		return nil, ErrMalformed
	}
	off := binary.LittleEndian.Uint64(mi)
	size := binary.LittleEndian.Uint32(mi[8:])
	if size < rxeDataOff || off > 1<<62 {
		return nil, ErrMalformed
	}
	mem, err := f.mmap(int64(off), int(size))
	if err != nil {
		return nil, err
	}
	q := &rxeQueue{
		f:    f,
		mem:  mem,
		log2: binary.LittleEndian.Uint32(mem[rxeLog2Off:]),
		mask: binary.LittleEndian.Uint32(mem[rxeMaskOff:]),
		prod: (*uint32)(unsafe.Pointer(&mem[rxeProdOff])),
		cons: (*uint32)(unsafe.Pointer(&mem[rxeConsOff])),
	}
	slots := uint64(q.mask) + 1
	if q.log2 > 20 || 1<<q.log2 < minElem || slots&(slots-1) != 0 || q.mask == 0 ||
		rxeDataOff+slots<<q.log2 > uint64(len(mem)) {
		f.munmap(mem)
		return nil, ErrMalformed
	}
	return q, nil
}

// slot returns element i (masked) of the ring.
func (q *rxeQueue) slot(i uint32) []byte {
	off := rxeDataOff + int(i&q.mask)<<q.log2
	return q.mem[off : off+1<<q.log2 : off+1<<q.log2]
}

func (q *rxeQueue) unmap() error {
	if q.mem == nil {
		return nil
	}
	mem := q.mem
	q.mem, q.prod, q.cons = nil, nil, nil
	return q.f.munmap(mem)
}

// produceSlot returns the next free slot, or nil when the ring is full.
func (q *rxeQueue) produceSlot() ([]byte, uint32) {
	prod := atomic.LoadUint32(q.prod) & q.mask // ours: no one else writes it
	cons := atomic.LoadUint32(q.cons) & q.mask // acquire: the kernel is done with the slots before it
	if (prod+1)&q.mask == cons {
		return nil, 0
	}
	return q.slot(prod), prod
}

// publish makes slot prod visible to the kernel (release).
func (q *rxeQueue) publish(prod uint32) {
	atomic.StoreUint32(q.prod, (prod+1)&q.mask)
}

// rxeProvider is the Soft-RoCE data path.
type rxeProvider struct{}

// cqUdata: rxe takes no private input and answers struct
// rxe_create_cq_resp {struct mminfo mi} (rxe_verbs.c, rxe_create_cq).
func (rxeProvider) cqUdata(uint32) ([]byte, int) {
	return nil, int(unsafe.Sizeof(rdma.RxeCreateCQResp{}))
}

// qpUdata: rxe refuses private input on a user QP (rxe_verbs.c,
// rxe_create_qp: EINVAL) and answers struct rxe_create_qp_resp {rq_mi,
// sq_mi}.
func (rxeProvider) qpUdata(QPCaps) ([]byte, int) {
	return nil, int(unsafe.Sizeof(rdma.RxeCreateQPResp{}))
}

func (rxeProvider) newCQRing(f verbsFile, out []byte) (cqRing, error) {
	q, err := mapRxeQueue(f, out, ibWCSize)
	if err != nil {
		return nil, err
	}
	return &rxeCQ{q: q}, nil
}

func (rxeProvider) newQPRings(f verbsFile, out []byte, handle uint32, caps QPCaps) (sendRing, recvRing, error) {
	if len(out) < 2*mminfoSize {
		return nil, nil, ErrMalformed
	}
	// Map the receive queue first, as rdma-core's provider does: rq_mi
	// comes first in the response.
	rq, err := mapRxeQueue(f, out[0:mminfoSize], rxeRecvWQESize+int(caps.MaxRecvSGE)*rxeSGESize)
	if err != nil {
		return nil, nil, err
	}
	sq, err := mapRxeQueue(f, out[mminfoSize:2*mminfoSize], rxeSendWQESize+max(int(caps.MaxSendSGE)*rxeSGESize, int(caps.MaxInline)))
	if err != nil {
		rq.unmap()
		return nil, nil, err
	}
	s := &rxeSQ{q: sq, f: f, caps: caps}
	s.bell = newDoorbell(handle)
	return s, &rxeRQ{q: rq, caps: caps}, nil
}

// rxeSQ is rxe's send queue.
type rxeSQ struct {
	q    *rxeQueue
	f    verbsFile
	caps QPCaps
	bell []byte
}

// newDoorbell lays out the POST_SEND write rxe takes as its send doorbell:
// struct ib_uverbs_cmd_hdr {command 28, in_words 8, out_words 1}, then
// struct ib_uverbs_post_send {response, qp_handle, wr_count 0, sge_count 0,
// wqe_size 56}, then the 4-byte response (bad_wr). For a user QP,
// rxe_post_send (rxe_verbs.c) ignores the list and schedules the QP's send
// task, which walks the shared queue; before RTS it answers EINVAL. The
// core's length rule (uverbs_cmd.c, ib_uverbs_post_send) wants exactly
// 24 + wr_count*wqe_size + sge_count*16 bytes after the header, and
// wqe_size at least sizeof(struct ib_uverbs_send_wr).
func newDoorbell(handle uint32) []byte {
	const n = 8 + 24
	b := make([]byte, n+8)
	le := binary.LittleEndian
	le.PutUint32(b[0:], uint32(rdma.IB_USER_VERBS_CMD_POST_SEND))
	le.PutUint16(b[4:], n/4)
	le.PutUint16(b[6:], 1)
	le.PutUint64(b[8:], addrOf(b, n))
	le.PutUint32(b[16:], handle)
	le.PutUint32(b[28:], uint32(unsafe.Sizeof(rdma.UverbsSendWr{})))
	return b
}

func (s *rxeSQ) doorbell() error {
	for {
		err := s.f.write(s.bell, 32)
		if err != unix.EINTR {
			return err
		}
	}
}

func (s *rxeSQ) unmap() error { return s.q.unmap() }

func (s *rxeSQ) post(wr *SendWR) error {
	var n uint64
	for i := range wr.SG {
		n += uint64(wr.SG[i].Length)
	}
	inline := wr.Flags&SendInline != 0
	if inline {
		n = uint64(len(wr.Inline))
	}
	switch {
	case wr.Op != OpRDMAWrite && wr.Op != OpRDMAWriteImm && wr.Op != OpSend && wr.Op != OpSendImm && wr.Op != OpRDMARead:
		return &wrError{op: opPostSend, id: wr.ID, reason: "operation " + wr.Op.String() + " not supported", err: ErrBadWorkRequest}
	case wr.Flags&^(SendFence|SendSignaled|SendSolicited|SendInline) != 0:
		return &wrError{op: opPostSend, id: wr.ID, reason: "unknown send flags", err: ErrBadWorkRequest}
	case inline && (wr.Op == OpRDMARead || len(wr.SG) != 0):
		// rxe copies inline bytes only into WRITE and SEND packets
		// (rxe_req.c, finish_packet: RXE_WRITE_OR_SEND_MASK); its kernel
		// post path refuses inline on other opcodes (rxe_verbs.c,
		// validate_send_wr).
		return &wrError{op: opPostSend, id: wr.ID, reason: "inline data with RDMA READ or with SGEs", err: ErrBadWorkRequest}
	case inline && n > uint64(s.caps.MaxInline):
		return &wrError{op: opPostSend, id: wr.ID, reason: "more inline data than the send queue holds", err: ErrBadWorkRequest}
	case len(wr.SG) > int(s.caps.MaxSendSGE):
		return &wrError{op: opPostSend, id: wr.ID, reason: "more SGEs than the send queue holds", err: ErrBadWorkRequest}
	case n > 1<<31: // RXE_MAX_MSG_SIZE (rxe_param.h)
		return &wrError{op: opPostSend, id: wr.ID, reason: "message over 2 GiB", err: ErrBadWorkRequest}
	}
	w, prod := s.q.produceSlot()
	if w == nil {
		return &wrError{op: opPostSend, id: wr.ID, reason: "send queue full", err: ErrQueueFull}
	}
	encodeSendWQE(w, wr, uint32(n))
	s.q.publish(prod)
	return nil
}

// encodeSendWQE fills slot w (which the caller checked holds the request)
// with wr as a struct rxe_send_wqe; the kernel fills its own bookkeeping
// (mask, PSNs, ssn: rxe_req.c).
func encodeSendWQE(w []byte, wr *SendWR, n uint32) {
	le := binary.LittleEndian
	clear(w[:rxeSendWQESize])
	le.PutUint64(w[rxeWQEID:], wr.ID)
	le.PutUint32(w[rxeWQEOpcode:], uint32(wr.Op))
	le.PutUint32(w[rxeWQEFlags:], uint32(wr.Flags))
	if wr.Op == OpSendImm || wr.Op == OpRDMAWriteImm {
		binary.BigEndian.PutUint32(w[rxeWQEImm:], wr.Imm)
	}
	if wr.Op.remote() {
		le.PutUint64(w[rxeWQERemote:], wr.RemoteAddr)
		le.PutUint32(w[rxeWQERKey:], wr.RKey)
		le.PutUint64(w[rxeWQEIOVA:], wr.RemoteAddr)
	}
	le.PutUint32(w[rxeWQELength:], n)
	le.PutUint32(w[rxeWQEResid:], n)
	if wr.Flags&SendInline != 0 {
		// The bytes go where the SGEs would, struct rxe_dma_info's
		// inline_data, and num_sge stays 0; the requester reads them from
		// dma.inline_data[sge_offset] (rxe_req.c, finish_packet). The
		// caller checked they fit (MaxInline, which rxe_init_sq makes the
		// size of that area).
		copy(w[rxeSendWQESize:], wr.Inline)
		return
	}
	le.PutUint32(w[rxeWQENumSGE:], uint32(len(wr.SG)))
	putSGEs(w[rxeSendWQESize:], wr.SG)
}

// rxeRQ is rxe's receive queue. It has no doorbell: the responder reads it
// when a packet arrives (rxe_resp.c).
type rxeRQ struct {
	q    *rxeQueue
	caps QPCaps
}

func (r *rxeRQ) unmap() error { return r.q.unmap() }

func (r *rxeRQ) post(wr *RecvWR) error {
	if len(wr.SG) > int(r.caps.MaxRecvSGE) {
		return &wrError{op: opPostRecv, id: wr.ID, reason: "more SGEs than the receive queue holds", err: ErrBadWorkRequest}
	}
	var n uint64
	for i := range wr.SG {
		n += uint64(wr.SG[i].Length)
	}
	if n > 1<<31 {
		return &wrError{op: opPostRecv, id: wr.ID, reason: "receive over 2 GiB", err: ErrBadWorkRequest}
	}
	w, prod := r.q.produceSlot()
	if w == nil {
		return &wrError{op: opPostRecv, id: wr.ID, reason: "receive queue full", err: ErrQueueFull}
	}
	encodeRecvWQE(w, wr, uint32(n))
	r.q.publish(prod)
	return nil
}

// encodeRecvWQE fills w with wr as a struct rxe_recv_wqe.
func encodeRecvWQE(w []byte, wr *RecvWR, n uint32) {
	le := binary.LittleEndian
	clear(w[:rxeRecvWQESize])
	le.PutUint64(w[0:], wr.ID)
	le.PutUint32(w[rxeRecvLength:], n)
	le.PutUint32(w[rxeRecvResid:], n)
	le.PutUint32(w[rxeRecvNumSGE:], uint32(len(wr.SG)))
	putSGEs(w[rxeRecvWQESize:], wr.SG)
}

// putSGEs writes sg as struct rxe_sge {addr, length, lkey} elements.
func putSGEs(b []byte, sg []SGE) {
	le := binary.LittleEndian
	for i := range sg {
		e := b[i*rxeSGESize : (i+1)*rxeSGESize]
		le.PutUint64(e[0:], sg[i].Addr)
		le.PutUint32(e[8:], sg[i].Length)
		le.PutUint32(e[12:], sg[i].LKey)
	}
}

// rxeCQ is rxe's completion queue: each slot starts with a struct
// ib_uverbs_wc (rxe_cq.c, rxe_cq_post, copies the user form for a user CQ).
type rxeCQ struct{ q *rxeQueue }

// ibWCSize is sizeof(struct ib_uverbs_wc).
const ibWCSize = 48

func (c *rxeCQ) unmap() error { return c.q.unmap() }

func (c *rxeCQ) poll(wcs []WC) int {
	q := c.q
	cons := atomic.LoadUint32(q.cons) & q.mask // ours
	n := 0
	for n < len(wcs) {
		prod := atomic.LoadUint32(q.prod) & q.mask // acquire
		if cons == prod {
			break
		}
		decodeWC(&wcs[n], q.slot(cons))
		n++
		cons = (cons + 1) & q.mask
		atomic.StoreUint32(q.cons, cons) // release: the slot is read
	}
	return n
}

// decodeWC reads a struct ib_uverbs_wc: wr_id@0, status@8, opcode@12,
// vendor_err@16, byte_len@20, ex.imm_data@24 (big-endian), qp_num@28,
// src_qp@32, wc_flags@36.
func decodeWC(wc *WC, b []byte) {
	le := binary.LittleEndian
	_ = b[ibWCSize-1]
	*wc = WC{
		ID:        le.Uint64(b[0:]),
		Status:    WCStatus(le.Uint32(b[8:])),
		Opcode:    WCOpcode(le.Uint32(b[12:])),
		VendorErr: le.Uint32(b[16:]),
		ByteLen:   le.Uint32(b[20:]),
		Imm:       binary.BigEndian.Uint32(b[24:]),
		QPNum:     le.Uint32(b[28:]),
		SrcQP:     le.Uint32(b[32:]),
		Flags:     WCFlags(le.Uint32(b[36:])),
	}
}
