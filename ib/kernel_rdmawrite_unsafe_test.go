package ib

import (
	"bytes"
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/rdma"
	"golang.org/x/sys/unix"
)

// TestKernelRDMAWrite moves bytes with a real RDMA WRITE between two RC
// queue pairs of rxe0 (looped back through the kernel's Soft-RoCE stack),
// using nothing but the memory regions of this package and the uverbs
// commands for CQs and QPs, with rxe's shared work queues mapped from the
// uverbs file. The package has no public CQ/QP API yet: the layouts below
// are this test's, from include/uapi/rdma/ib_user_verbs.h and
// rdma_user_rxe.h (offsets printed by gcc against the 6.12 headers), and
// the QP attribute masks and states are those of the kernel's enum
// ib_qp_attr_mask and enum ib_qp_state (include/rdma/ib_verbs.h).
func TestKernelRDMAWrite(t *testing.T) {
	dev := kernelDevice(t)
	fds := openFDs(t)
	ctx, err := Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	kv, ok := ctx.f.(*kernelVerbs)
	if !ok {
		t.Fatal("not a kernel file")
	}
	gids, err := ctx.GIDTable()
	if err != nil {
		t.Fatal(err)
	}
	// The RoCE v2 GID of an IPv4 address routes through the netdev (and
	// back, as the address is ours).
	gidIndex := -1
	var gid [16]byte
	for _, g := range gids {
		if g.Type == GIDTypeRoCEv2 && g.GID.Is4In6() {
			gidIndex, gid = int(g.Index), g.GID.As16()
		}
	}
	if gidIndex < 0 {
		t.Fatalf("no IPv4 RoCE v2 GID in %+v", gids)
	}
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()

	const n = 8192
	src, dst := hostBuffer(t, n), hostBuffer(t, n)
	for i := range src {
		src[i] = byte(i*7 + 3)
		dst[i] = 0
	}
	smr, err := pd.RegBytes(src, AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	dmr, err := pd.RegBytes(dst, AccessLocalWrite|AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}

	le := binary.LittleEndian
	// CREATE_CQ: ib_uverbs_create_cq {response, user_handle@8, cqe@16,
	// comp_vector@20, comp_channel@24 (-1: none), reserved}; answer
	// {cq_handle, cqe} then rxe's struct rxe_create_cq_resp {mminfo}.
	createCQ := func() (handle uint32, q *rxeQueue) {
		core := make([]byte, 32)
		le.PutUint32(core[16:], 16)
		le.PutUint32(core[24:], 0xffffffff)
		resp, drv, err := ctx.invokeWrite("CREATE_CQ", rdma.IB_USER_VERBS_CMD_CREATE_CQ, core, 8, nil, 16)
		if err != nil {
			t.Fatalf("CREATE_CQ: %v", err)
		}
		return le.Uint32(resp), mapQueue(t, kv.fd, drv)
	}
	scq, scqQ := createCQ()
	rcq, rcqQ := createCQ()
	defer scqQ.unmap()
	defer rcqQ.unmap()

	// CREATE_QP (RC): ib_uverbs_create_qp {response, user_handle@8,
	// pd_handle@16, send_cq@20, recv_cq@24, srq@28, max_send_wr@32,
	// max_recv_wr@36, max_send_sge@40, max_recv_sge@44, max_inline@48,
	// sq_sig_all@52, qp_type@53 (IB_QPT_RC = 2), is_srq@54}; answer
	// {qp_handle, qpn@4, ...} (32 bytes), then struct rxe_create_qp_resp
	// {rq_mi, sq_mi}.
	type qp struct {
		handle, qpn uint32
		sq, rq      *rxeQueue
	}
	createQP := func(cq uint32) qp {
		core := make([]byte, 56)
		le.PutUint32(core[16:], pd.Handle())
		le.PutUint32(core[20:], cq)
		le.PutUint32(core[24:], cq)
		le.PutUint32(core[32:], 16)
		le.PutUint32(core[36:], 16)
		le.PutUint32(core[40:], 1)
		le.PutUint32(core[44:], 1)
		core[53] = 2
		resp, drv, err := ctx.invokeWrite("CREATE_QP", rdma.IB_USER_VERBS_CMD_CREATE_QP, core, 32, nil, 32)
		if err != nil {
			t.Fatalf("CREATE_QP: %v", err)
		}
		return qp{handle: le.Uint32(resp), qpn: le.Uint32(resp[4:]), rq: mapQueue(t, kv.fd, drv[0:16]), sq: mapQueue(t, kv.fd, drv[16:32])}
	}
	a, b := createQP(scq), createQP(rcq)
	defer a.sq.unmap()
	defer a.rq.unmap()
	defer b.sq.unmap()
	defer b.rq.unmap()
	t.Logf("QPs %d -> %d over GID %d", a.qpn, b.qpn, gidIndex)

	// MODIFY_QP: ib_uverbs_modify_qp {dest (ib_uverbs_qp_dest: dgid@0,
	// sgid_index@24, hop_limit@25, is_global@30, port_num@31), alt_dest@32,
	// qp_handle@64, attr_mask@68, qkey@72, rq_psn@76, sq_psn@80,
	// dest_qp_num@84, access@88, pkey_index@92, qp_state@96, path_mtu@98,
	// max_rd_atomic@101, max_dest_rd_atomic@102, min_rnr_timer@103,
	// port_num@104, timeout@105, retry_cnt@106, rnr_retry@107}.
	modify := func(q qp, fill func(m []byte) uint32) {
		m := make([]byte, 112)
		le.PutUint32(m[64:], q.handle)
		le.PutUint32(m[68:], fill(m))
		if _, _, err := ctx.invokeWrite("MODIFY_QP", rdma.IB_USER_VERBS_CMD_MODIFY_QP, m, 0, nil, 0); err != nil {
			t.Fatalf("MODIFY_QP to state %d: %v", m[96], err)
		}
	}
	for _, pair := range [][2]qp{{a, b}, {b, a}} {
		q, peer := pair[0], pair[1]
		modify(q, modifyToInit)
		modify(q, func(m []byte) uint32 { return modifyToRTR(m, gid, uint8(gidIndex), peer.qpn) })
		modify(q, modifyToRTS)
	}

	// One signaled RDMA WRITE of src into dst, as a struct rxe_send_wqe in
	// a's send queue: wr {wr_id@0, opcode@12 (IB_WR_RDMA_WRITE = 0),
	// send_flags@16 (IB_SEND_SIGNALED = 2), rdma.remote_addr@24,
	// rdma.rkey@32}, iova@152, dma {length@184, resid@188, num_sge@196,
	// sge[0]@208 {addr, length, lkey}}.
	fillWriteWQE(a.sq.producerSlot(), 0xabc, dmr.IOVA(), dmr.RKey(), smr.IOVA(), n, smr.LKey())
	a.sq.produce()
	// POST_SEND with no work requests only kicks rxe's send task:
	// ib_uverbs_post_send {response, qp_handle@8, wr_count@12,
	// sge_count@16, wqe_size@20 (sizeof(struct ib_uverbs_send_wr) = 56)}.
	ps := make([]byte, 24)
	le.PutUint32(ps[8:], a.handle)
	le.PutUint32(ps[20:], 56)
	if _, _, err := ctx.invokeWrite("POST_SEND", rdma.IB_USER_VERBS_CMD_POST_SEND, ps, 4, nil, 0); err != nil {
		t.Fatalf("POST_SEND: %v", err)
	}

	// Poll the send CQ: struct ib_uverbs_wc {wr_id@0, status@8,
	// opcode@12, byte_len@20, qp_num@28}.
	deadline := time.Now().Add(10 * time.Second)
	var wc []byte
	for wc == nil {
		if wc = scqQ.consume(); wc == nil {
			if time.Now().After(deadline) {
				t.Fatal("no completion within 10 s")
			}
			time.Sleep(time.Millisecond)
		}
	}
	if id, st, op, qpn := le.Uint64(wc[0:]), le.Uint32(wc[8:]), le.Uint32(wc[12:]), le.Uint32(wc[28:]); id != 0xabc || st != 0 || op != 1 || qpn != a.qpn {
		t.Errorf("completion: wr_id %#x status %d opcode %d qp %d; want 0xabc, 0 (success), 1 (RDMA_WRITE), %d", id, st, op, qpn, a.qpn)
	}
	if !bytes.Equal(src, dst) {
		i := 0
		for i < n && src[i] == dst[i] {
			i++
		}
		t.Errorf("destination differs from the source from byte %d", i)
	} else {
		t.Logf("RDMA WRITE of %d bytes: qp %d -> qp %d, rkey %#x, completion ok", n, a.qpn, b.qpn, dmr.RKey())
	}

	// Teardown: DESTROY_QP {response, qp_handle@8} -> {events_reported},
	// DESTROY_CQ {response, cq_handle@8} -> {comp, async events}.
	for _, q := range []qp{a, b} {
		core := make([]byte, 16)
		le.PutUint32(core[8:], q.handle)
		if _, _, err := ctx.invokeWrite("DESTROY_QP", rdma.IB_USER_VERBS_CMD_DESTROY_QP, core, 4, nil, 0); err != nil {
			t.Errorf("DESTROY_QP: %v", err)
		}
	}
	for _, h := range []uint32{scq, rcq} {
		core := make([]byte, 16)
		le.PutUint32(core[8:], h)
		if _, _, err := ctx.invokeWrite("DESTROY_CQ", rdma.IB_USER_VERBS_CMD_DESTROY_CQ, core, 8, nil, 0); err != nil {
			t.Errorf("DESTROY_CQ: %v", err)
		}
	}
	for _, q := range []*rxeQueue{a.sq, a.rq, b.sq, b.rq, scqQ, rcqQ} {
		q.unmap()
	}
	if err := smr.Close(); err != nil {
		t.Error(err)
	}
	if err := dmr.Close(); err != nil {
		t.Error(err)
	}
	if err := pd.Close(); err != nil {
		t.Error(err)
	}
	if err := ctx.Close(); err != nil {
		t.Error(err)
	}
	if got := openFDs(t); got != fds {
		t.Errorf("%d descriptors open after Close, %d before", got, fds)
	}
}

// rxeQueue is one of rxe's queues mapped from the uverbs file: struct
// rxe_queue_buf {log2_elem_size@0, index_mask@4, producer_index@128,
// consumer_index@256, data@384}.
type rxeQueue struct {
	mem []byte
}

// mapQueue maps the queue an mminfo {offset u64, size u32} describes.
func mapQueue(t *testing.T, fd int, mi []byte) *rxeQueue {
	t.Helper()
	off, size := binary.LittleEndian.Uint64(mi), binary.LittleEndian.Uint32(mi[8:])
	mem, err := unix.Mmap(fd, int64(off), int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("mmap queue at %#x+%d: %v", off, size, err)
	}
	return &rxeQueue{mem: mem}
}

func (q *rxeQueue) unmap() {
	if q.mem != nil {
		unix.Munmap(q.mem)
		q.mem = nil
	}
}

func (q *rxeQueue) word(off int) *uint32 { return (*uint32)(unsafe.Pointer(&q.mem[off])) }

func (q *rxeQueue) slot(index uint32) []byte {
	shift := binary.LittleEndian.Uint32(q.mem[0:])
	mask := binary.LittleEndian.Uint32(q.mem[4:])
	off := 384 + int((index&mask)<<shift)
	return q.mem[off : off+1<<shift]
}

// producerSlot returns the slot the next produced element goes to.
func (q *rxeQueue) producerSlot() []byte { return q.slot(atomic.LoadUint32(q.word(128))) }

// produce publishes the element in producerSlot.
func (q *rxeQueue) produce() {
	mask := binary.LittleEndian.Uint32(q.mem[4:])
	atomic.StoreUint32(q.word(128), (atomic.LoadUint32(q.word(128))+1)&mask)
}

// consume returns the next element the kernel produced, or nil.
func (q *rxeQueue) consume() []byte {
	cons, prod := atomic.LoadUint32(q.word(256)), atomic.LoadUint32(q.word(128))
	if cons == prod {
		return nil
	}
	e := append([]byte(nil), q.slot(cons)...)
	mask := binary.LittleEndian.Uint32(q.mem[4:])
	atomic.StoreUint32(q.word(256), (cons+1)&mask)
	return e
}

// Masks (enum ib_qp_attr_mask) and states (enum ib_qp_state) of
// include/rdma/ib_verbs.h, the values libibverbs' IBV_QP_* share.
const (
	maskState, maskAccess, maskPKey, maskPort = 1 << 0, 1 << 3, 1 << 4, 1 << 5
	maskAV, maskMTU, maskTimeout, maskRetry   = 1 << 7, 1 << 8, 1 << 9, 1 << 10
	maskRNRRetry, maskRQPSN, maskMaxRdAtomic  = 1 << 11, 1 << 12, 1 << 13
	maskMinRNR, maskSQPSN, maskMaxDestRd      = 1 << 15, 1 << 16, 1 << 17
	maskDestQPN                               = 1 << 20
	stateInit, stateRTR, stateRTS             = 1, 2, 3
)

// modifyToInit fills a struct ib_uverbs_modify_qp for RESET -> INIT.
func modifyToInit(m []byte) uint32 {
	m[96] = stateInit
	m[104] = 1
	binary.LittleEndian.PutUint32(m[88:], uint32(AccessLocalWrite|AccessRemoteWrite))
	return maskState | maskPKey | maskPort | maskAccess
}

// modifyToRTR fills INIT -> RTR towards the peer QP qpn at gid.
func modifyToRTR(m []byte, gid [16]byte, gidIndex uint8, qpn uint32) uint32 {
	m[96] = stateRTR
	copy(m[0:16], gid[:])
	m[24] = gidIndex
	m[25] = 1 // hop_limit
	m[30] = 1 // is_global
	m[31] = 1 // port_num
	m[98] = 3 // path_mtu IB_MTU_1024
	binary.LittleEndian.PutUint32(m[84:], qpn)
	m[102] = 1  // max_dest_rd_atomic
	m[103] = 12 // min_rnr_timer
	return maskState | maskAV | maskMTU | maskDestQPN | maskRQPSN | maskMaxDestRd | maskMinRNR
}

// modifyToRTS fills RTR -> RTS.
func modifyToRTS(m []byte) uint32 {
	m[96] = stateRTS
	m[105] = 14 // timeout
	m[106] = 7  // retry_cnt
	m[107] = 7  // rnr_retry
	m[101] = 1  // max_rd_atomic
	return maskState | maskTimeout | maskRetry | maskRNRRetry | maskSQPSN | maskMaxRdAtomic
}

// fillWriteWQE fills a struct rxe_send_wqe with one sge for a signaled
// RDMA WRITE of n bytes from (addr, lkey) to (remote, rkey): wr {wr_id@0,
// opcode@12 (IB_WR_RDMA_WRITE = 0), send_flags@16 (IB_SEND_SIGNALED = 2),
// rdma.remote_addr@24, rdma.rkey@32}, iova@152, dma {length@184,
// resid@188, num_sge@196, sge[0]@208 {addr, length, lkey}}.
func fillWriteWQE(w []byte, id, remote uint64, rkey uint32, addr uint64, n, lkey uint32) {
	le := binary.LittleEndian
	clear(w)
	le.PutUint64(w[0:], id)
	le.PutUint32(w[16:], 2)
	le.PutUint64(w[24:], remote)
	le.PutUint32(w[32:], rkey)
	le.PutUint64(w[152:], remote)
	le.PutUint32(w[184:], n)
	le.PutUint32(w[188:], n)
	le.PutUint32(w[196:], 1)
	le.PutUint64(w[208:], addr)
	le.PutUint32(w[216:], n)
	le.PutUint32(w[220:], lkey)
}
