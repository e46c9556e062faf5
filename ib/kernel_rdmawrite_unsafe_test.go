package ib

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"
)

// kernelPair is two RC queue pairs of rxe0 connected to each other by
// hand (no RDMA CM) over the device's IPv4 RoCE v2 GID, which rxe loops
// back, each with its own CQ on one completion channel.
type kernelPair struct {
	ctx    *Context
	pd     *PD
	ch     *CompChannel
	cq     [2]*CQ
	qp     [2]*QP
	gidIdx uint8
}

func newKernelPair(t testing.TB) *kernelPair {
	t.Helper()
	dev := kernelDevice(t)
	ctx, err := Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctx.Close() })
	gids, err := ctx.GIDTable()
	if err != nil {
		t.Fatal(err)
	}
	p := &kernelPair{ctx: ctx}
	var gid [16]byte
	found := false
	for _, g := range gids {
		if g.Type == GIDTypeRoCEv2 && g.GID.Is4In6() {
			p.gidIdx, gid, found = uint8(g.Index), g.GID.As16(), true
		}
	}
	if !found {
		t.Fatalf("no IPv4 RoCE v2 GID in %+v", gids)
	}
	if p.pd, err = ctx.AllocPD(); err != nil {
		t.Fatal(err)
	}
	if p.ch, err = ctx.CreateCompChannel(); err != nil {
		t.Fatal(err)
	}
	for i := range p.qp {
		if p.cq[i], err = ctx.CreateCQ(CQOptions{Entries: 64, Channel: p.ch}); err != nil {
			t.Fatal(err)
		}
		if p.qp[i], err = p.pd.CreateQP(QPOptions{SendCQ: p.cq[i], RecvCQ: p.cq[i], Caps: QPCaps{MaxSendWR: 16, MaxRecvWR: 16}}); err != nil {
			t.Fatal(err)
		}
	}
	access := AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead
	for i, q := range p.qp {
		peer := p.qp[1-i]
		steps := []QPAttr{
			{Mask: AttrState | AttrPKeyIndex | AttrPort | AttrAccessFlags, State: QPSInit, Port: 1, Access: access},
			{Mask: AttrState | AttrAV | AttrPathMTU | AttrDestQPN | AttrRQPSN | AttrMaxDestRdAtomic | AttrMinRNRTimer,
				State: QPSRTR, PathMTU: 3, DestQPN: peer.Num(), MaxDestRdAtomic: 1, MinRNRTimer: 12,
				AH: AH{DGID: gid, SGIDIndex: p.gidIdx, HopLimit: 1, IsGlobal: true, Port: 1}},
			{Mask: AttrState | AttrTimeout | AttrRetryCnt | AttrRNRRetry | AttrSQPSN | AttrMaxQPRdAtomic,
				State: QPSRTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 1},
		}
		for j := range steps {
			if err := q.Modify(&steps[j]); err != nil {
				t.Fatalf("QP %d to %v: %v", q.Num(), steps[j].State, err)
			}
		}
	}
	return p
}

// wait returns the next completion of cq, within a generous bound.
func (p *kernelPair) wait(t *testing.T, cq *CQ) WC {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wc := make([]WC, 1)
	if _, err := cq.Wait(ctx, wc); err != nil {
		t.Fatalf("wait for a completion: %v", err)
	}
	return wc[0]
}

// TestKernelRDMAWrite moves bytes between two RC queue pairs of rxe0 with
// every operation of the data path: RDMA WRITE, WRITE_WITH_IMM (consuming
// a receive), SEND_WITH_IMM, SEND and RDMA READ, each verified byte for
// byte and by its completions (waited for on the completion channel),
// then a remote access error and the flush of receives that Close
// produces, and checks that nothing is left open.
func TestKernelRDMAWrite(t *testing.T) {
	fds := openFDs(t)
	p := newKernelPair(t)
	a, b := p.qp[0], p.qp[1]
	const n = 8192
	src, dst := hostBuffer(t, n), hostBuffer(t, n)
	fill := func(seed byte) {
		for i := range src {
			src[i] = byte(i*7) + seed
		}
		clear(dst)
	}
	access := AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead
	smr, err := p.pd.RegBytes(src, access)
	if err != nil {
		t.Fatal(err)
	}
	dmr, err := p.pd.RegBytes(dst, access)
	if err != nil {
		t.Fatal(err)
	}
	same := func(what string) {
		t.Helper()
		if !bytes.Equal(src, dst) {
			i := 0
			for i < n && src[i] == dst[i] {
				i++
			}
			t.Fatalf("%s: destination differs from the source from byte %d", what, i)
		}
	}
	check := func(wc WC, id uint64, op WCOpcode, qp *QP, byteLen uint32) {
		t.Helper()
		if wc.Status != WCSuccess || wc.ID != id || wc.Opcode != op || wc.QPNum != qp.Num() || byteLen != 0 && wc.ByteLen != byteLen {
			t.Fatalf("completion %+v; want id %#x, success, opcode %d, QP %d, %d bytes", wc, id, op, qp.Num(), byteLen)
		}
	}
	sge := func(mr *MR, buf []byte) []SGE {
		return []SGE{{Addr: mr.IOVA(), Length: uint32(len(buf)), LKey: mr.LKey()}}
	}

	// RDMA WRITE.
	fill(1)
	if _, err := a.PostSend(SendWR{ID: 1, Op: OpRDMAWrite, Flags: SendSignaled, RemoteAddr: dmr.IOVA(), RKey: dmr.RKey(), SG: sge(smr, src)}); err != nil {
		t.Fatal(err)
	}
	check(p.wait(t, p.cq[0]), 1, WCRDMAWrite, a, 0)
	same("RDMA WRITE")

	// WRITE_WITH_IMM consumes a receive on b, whose completion has the
	// immediate and the length.
	fill(2)
	if _, err := b.PostRecv(RecvWR{ID: 20}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.PostSend(SendWR{ID: 2, Op: OpRDMAWriteImm, Flags: SendSignaled, Imm: 0xdeadbeef, RemoteAddr: dmr.IOVA(), RKey: dmr.RKey(), SG: sge(smr, src)}); err != nil {
		t.Fatal(err)
	}
	check(p.wait(t, p.cq[0]), 2, WCRDMAWrite, a, 0)
	wc := p.wait(t, p.cq[1])
	check(wc, 20, WCRecvRDMAImm, b, n)
	if wc.Imm != 0xdeadbeef || wc.Flags&WCWithImm == 0 {
		t.Fatalf("WRITE_WITH_IMM receive: imm %#x flags %#x, want 0xdeadbeef with WITH_IMM", wc.Imm, wc.Flags)
	}
	same("RDMA WRITE_WITH_IMM")

	// SEND_WITH_IMM and SEND into posted receives.
	for i, op := range []SendOp{OpSendImm, OpSend} {
		fill(byte(3 + i))
		if _, err := b.PostRecv(RecvWR{ID: 30, SG: sge(dmr, dst)}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.PostSend(SendWR{ID: 3, Op: op, Flags: SendSignaled, Imm: 77, SG: sge(smr, src)}); err != nil {
			t.Fatal(err)
		}
		check(p.wait(t, p.cq[0]), 3, WCSend, a, 0)
		wc := p.wait(t, p.cq[1])
		check(wc, 30, WCRecv, b, n)
		if imm := wc.Flags&WCWithImm != 0; imm != (op == OpSendImm) || imm && wc.Imm != 77 {
			t.Fatalf("%v receive: imm %d flags %#x", op, wc.Imm, wc.Flags)
		}
		same(op.String())
	}

	// RDMA READ of src into dst, by b.
	fill(5)
	if _, err := b.PostSend(SendWR{ID: 4, Op: OpRDMARead, Flags: SendSignaled, RemoteAddr: smr.IOVA(), RKey: smr.RKey(), SG: sge(dmr, dst)}); err != nil {
		t.Fatal(err)
	}
	check(p.wait(t, p.cq[1]), 4, WCRDMARead, b, n)
	same("RDMA READ")

	// A write past the end of the remote region: remote access error,
	// which moves a to ERR.
	if _, err := a.PostSend(SendWR{ID: 5, Op: OpRDMAWrite, Flags: SendSignaled, RemoteAddr: dmr.IOVA() + n - 8, RKey: dmr.RKey(), SG: sge(smr, src[:64])}); err != nil {
		t.Fatal(err)
	}
	wc = p.wait(t, p.cq[0])
	if err := wc.Err(); !errors.Is(err, ErrRemoteAccess) {
		t.Fatalf("write outside the remote region: completion %+v (%v), want a remote access error", wc, err)
	}

	// Receives outstanding at Close come back flushed.
	if _, err := b.PostRecv(RecvWR{ID: 60, SG: sge(dmr, dst)}, RecvWR{ID: 61, SG: sge(dmr, dst)}); err != nil {
		t.Fatal(err)
	}
	if err := b.Modify(&QPAttr{Mask: AttrState, State: QPSErr}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []uint64{60, 61} {
		wc := p.wait(t, p.cq[1])
		if wc.ID != id || !errors.Is(wc.Err(), ErrFlushed) {
			t.Fatalf("after ERR: completion %+v (%v), want %d flushed", wc, wc.Err(), id)
		}
	}

	for _, c := range []interface{ Close() error }{a, b, a, p.cq[0], p.cq[1], p.ch, smr, dmr, p.pd, p.ctx, p.ctx} {
		if err := c.Close(); err != nil {
			t.Errorf("%T.Close: %v", c, err)
		}
	}
	if _, err := a.PostSend(SendWR{ID: 9}); !errors.Is(err, ErrClosed) {
		t.Errorf("PostSend after Close: %v, want ErrClosed", err)
	}
	if got := openFDs(t); got != fds {
		t.Errorf("%d descriptors open after Close, %d before", got, fds)
	}
}

// TestKernelCQWaitCancel checks that a wait for a completion that never
// comes returns the context's error.
func TestKernelCQWaitCancel(t *testing.T) {
	p := newKernelPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	wc := make([]WC, 1)
	n, err := p.cq[0].Wait(ctx, wc)
	if n != 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with nothing posted: %d, %v; want 0, DeadlineExceeded", n, err)
	}
}

// TestKernelContextCloseUnmaps closes the Context with queue pairs, CQs
// and a channel still open: every descriptor goes.
func TestKernelContextCloseUnmaps(t *testing.T) {
	fds := openFDs(t)
	p := newKernelPair(t)
	if err := p.ctx.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []interface{ Close() error }{p.qp[0], p.cq[0], p.ch, p.pd} {
		if err := c.Close(); err != nil {
			t.Errorf("%T.Close after the Context's: %v", c, err)
		}
	}
	if got := openFDs(t); got != fds {
		t.Errorf("%d descriptors open after Close, %d before", got, fds)
	}
}

// BenchmarkKernelPostPoll posts one signaled 64-byte RDMA WRITE and
// busy-polls its completion, per iteration, on rxe0 in loopback; it
// reports allocations per work request (the steady state allocates none:
// the request slice is reused, as PostSend's doc asks).
func BenchmarkKernelPostPoll(b *testing.B) {
	p := newKernelPair(b)
	src, dst := hostBuffer(b, 4096), hostBuffer(b, 4096)
	smr, err := p.pd.RegBytes(src, AccessLocalWrite)
	if err != nil {
		b.Fatal(err)
	}
	dmr, err := p.pd.RegBytes(dst, AccessLocalWrite|AccessRemoteWrite)
	if err != nil {
		b.Fatal(err)
	}
	sg := []SGE{{Addr: smr.IOVA(), Length: 64, LKey: smr.LKey()}}
	wrs := []SendWR{{ID: 1, Op: OpRDMAWrite, Flags: SendSignaled, RemoteAddr: dmr.IOVA(), RKey: dmr.RKey(), SG: sg}}
	wc := make([]WC, 4)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := p.qp[0].PostSend(wrs...); err != nil {
			b.Fatal(err)
		}
		for {
			n, err := p.cq[0].Poll(wc)
			if err != nil {
				b.Fatal(err)
			}
			if n > 0 {
				if wc[0].Status != WCSuccess {
					b.Fatalf("completion %+v", wc[0])
				}
				break
			}
		}
	}
}

// TestKernelSendTooLarge sends more than the posted receive holds: both
// sides get a typed error completion (rxe in 6.12: the receive fails with
// a local QP operation error, the send with a remote operation error).
func TestKernelSendTooLarge(t *testing.T) {
	p := newKernelPair(t)
	buf := hostBuffer(t, 8192)
	mr, err := p.pd.RegBytes(buf, AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.qp[1].PostRecv(RecvWR{ID: 7, SG: []SGE{{Addr: mr.IOVA() + 4096, Length: 64, LKey: mr.LKey()}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.qp[0].PostSend(SendWR{ID: 8, Op: OpSend, Flags: SendSignaled, SG: []SGE{{Addr: mr.IOVA(), Length: 1024, LKey: mr.LKey()}}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wc := make([]WC, 1)
	if _, err := p.cq[1].Wait(ctx, wc); err != nil {
		t.Fatal(err)
	}
	if wc[0].ID != 7 || wc[0].Status != WCLocQPOpErr {
		t.Fatalf("receive of 1024 bytes into 64: %+v (%v), want a local QP operation error", wc[0], wc[0].Err())
	}
	if _, err := p.cq[0].Wait(ctx, wc); err != nil {
		t.Fatal(err)
	}
	if err := wc[0].Err(); wc[0].ID != 8 || !errors.Is(err, ErrRemoteOperation) {
		t.Fatalf("send of 1024 bytes into 64: %+v (%v), want ErrRemoteOperation", wc[0], err)
	}
	t.Logf("sender: %v", wc[0].Err())
}

// TestKernelCQCloseWakesWait closes a CQ while a Wait sleeps on its
// channel: the Wait returns ErrClosed at once, not when its ctx ends.
func TestKernelCQCloseWakesWait(t *testing.T) {
	p := newKernelPair(t)
	cq, err := p.ctx.CreateCQ(CQOptions{Entries: 8, Channel: p.ch})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res := make(chan error, 1)
	go func() {
		_, err := cq.Wait(ctx, make([]WC, 1))
		res <- err
	}()
	// Wait until the waiter holds the channel, that is, sleeps in it.
	for len(p.ch.sem) == 0 {
		select {
		case err := <-res:
			t.Fatalf("Wait returned before Close: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	if err := cq.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-res; !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait on a CQ closed under it: %v, want ErrClosed", err)
	}
}
