package cm

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/ib"
	"github.com/gaudi-go/gaudi/internal/rxetest"
)

// TestKernelPeerGoneMidTransfer kills the peer while our RDMA WRITEs are
// in flight: the server's process state goes at once (its verbs context
// and its RDMA CM file close, as when a process dies, so its CM sends a
// disconnect request). Our side must see DISCONNECTED as a typed error on
// its next step, and after Disconnect every write it posted must come
// back, done or failed with a typed error (flushed, retries exceeded, or
// the peer's region gone), within a bound; then
// everything closes with no descriptor left.
func TestKernelPeerGoneMidTransfer(t *testing.T) {
	addr := rxetest.Addr(t, DevicePath)
	fds := openFDs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	chS, chC := openChannel(t), openChannel(t)
	const port, n = 18630, 1 << 16
	l := listenAt(t, chS, addr, port)
	cid := resolved(ctx, t, chC, netip.AddrPortFrom(addr, port))
	c := newEnd(t, cid, n)
	connected := make(chan error, 1)
	go func() {
		_, err := cid.Connect(ctx, c.qp, ConnParam{})
		connected <- err
	}()
	sid, _, err := l.GetRequest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := newEnd(t, sid, n)
	if err := sid.Accept(ctx, s.qp, ConnParam{}); err != nil {
		t.Fatal(err)
	}
	if err := <-connected; err != nil {
		t.Fatal(err)
	}

	// Writes in flight, all signaled.
	const total = 48
	wr := []ib.SendWR{{Op: ib.OpRDMAWrite, Flags: ib.SendSignaled, RemoteAddr: s.mr.IOVA(), RKey: s.mr.RKey(), SG: c.sge(0, n)}}
	for i := range total {
		wr[0].ID = uint64(i)
		if _, err := c.qp.PostSend(wr...); err != nil {
			t.Fatal(err)
		}
	}
	// The peer dies.
	if err := s.ctx.Close(); err != nil {
		t.Fatal(err)
	}
	if err := chS.Close(); err != nil {
		t.Fatal(err)
	}

	// Our next step learns it, typed.
	if _, err := cid.await(ctx, "WAIT", EventEstablished); !errors.Is(err, ErrDisconnected) {
		t.Fatalf("after the peer died: %v, want ErrDisconnected", err)
	}
	if err := cid.Disconnect(c.qp); err != nil {
		t.Fatal(err)
	}
	got := map[uint64]bool{}
	var done, failed int
	wcs := make([]ib.WC, 16)
	for len(got) < total {
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		k, err := c.cq.Wait(wctx, wcs)
		wcancel()
		if err != nil {
			t.Fatalf("%d of %d writes came back (%d done, %d failed), then: %v", len(got), total, done, failed, err)
		}
		for _, wc := range wcs[:k] {
			if got[wc.ID] {
				t.Fatalf("write %d completed twice", wc.ID)
			}
			got[wc.ID] = true
			switch err := wc.Err(); {
			case err == nil:
				done++
			case errors.Is(err, ib.ErrFlushed) || errors.Is(err, ib.ErrRetryExceeded) || errors.Is(err, ib.ErrRemoteAccess):
				// Flushed after our Disconnect, retried out against a
				// QP that is gone, or refused by a peer whose memory
				// region went first (its context closes its MRs before
				// its QPs).
				failed++
			default:
				t.Fatalf("write %d: %v", wc.ID, err)
			}
		}
	}
	t.Logf("%d writes done before the peer went, %d failed after", done, failed)
	c.close(t)
	s.close(t)
	if err := chC.Close(); err != nil {
		t.Fatal(err)
	}
	if got := openFDs(t); got != fds {
		t.Errorf("%d descriptors open after Close, %d before", got, fds)
	}
}

// TestKernelQPCloseOutstanding closes a QP with receives and writes
// outstanding: Close flushes and destroys it, the CQ then holds their
// completions (or nothing, once the QP is gone), and the memory can be
// deregistered and unmapped right after, with no fault.
func TestKernelQPCloseOutstanding(t *testing.T) {
	rxetest.Addr(t, DevicePath)
	l, err := openChannel(t).CreateID()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Bind(netip.AddrPortFrom(rxetest.Addr(t, DevicePath), 18631)); err != nil {
		t.Fatal(err)
	}
	e := newEnd(t, l, 1<<16)
	// A QP in INIT takes receives; post them all, then close.
	for i := range 16 {
		if _, err := e.qp.PostRecv(ib.RecvWR{ID: uint64(i), SG: e.sge(0, 1<<16)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.qp.Close(); err != nil {
		t.Fatal(err)
	}
	wcs := make([]ib.WC, 32)
	k, err := e.rcq.Poll(wcs)
	if err != nil {
		t.Fatal(err)
	}
	for _, wc := range wcs[:k] {
		if !errors.Is(wc.Err(), ib.ErrFlushed) {
			t.Errorf("receive %d after Close: %+v, want flushed", wc.ID, wc)
		}
	}
	t.Logf("%d of 16 receives reported flushed after Close", k)
	if _, err := e.qp.PostRecv(ib.RecvWR{ID: 99}); !errors.Is(err, ib.ErrClosed) {
		t.Errorf("PostRecv after Close: %v, want ErrClosed", err)
	}
	e.close(t)
}
