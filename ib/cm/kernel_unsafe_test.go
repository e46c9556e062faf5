package cm

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/ib"
	"github.com/gaudi-go/gaudi/internal/rxetest"
	"golang.org/x/sys/unix"
)

// Kernel tests run against the kernel's RDMA CM and Soft-RoCE: a rxe
// device with an IPv4 address and /dev/infiniband/rdma_cm (module
// rdma_ucm). Where either is missing they skip, except under the VM
// harness (GAUDI_VMTEST=1), where they fail.

// hostBuffer maps n bytes of anonymous memory for registration.
func hostBuffer(t testing.TB, n int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	return b
}

// end is one side of a connection: its verbs objects on the device the
// CM chose, and a registered buffer.
type end struct {
	id  *ID
	ctx *ib.Context
	pd  *ib.PD
	ch  *ib.CompChannel
	cq  *ib.CQ // sends
	rcq *ib.CQ // receives
	qp  *ib.QP
	buf []byte
	mr  *ib.MR
}

func newEnd(t *testing.T, id *ID, n int) *end {
	t.Helper()
	e, err := makeEnd(id, hostBuffer(t, n))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// makeEnd opens the ID's device and makes the end's objects; it may run
// on any goroutine.
func makeEnd(id *ID, buf []byte) (*end, error) {
	dev, err := id.Device()
	if err != nil {
		return nil, err
	}
	e := &end{id: id, buf: buf}
	if e.ctx, err = ib.Open(dev); err != nil {
		return nil, err
	}
	if e.pd, err = e.ctx.AllocPD(); err != nil {
		return nil, err
	}
	if e.ch, err = e.ctx.CreateCompChannel(); err != nil {
		return nil, err
	}
	if e.cq, err = e.ctx.CreateCQ(ib.CQOptions{Entries: 128, Channel: e.ch}); err != nil {
		return nil, err
	}
	if e.rcq, err = e.ctx.CreateCQ(ib.CQOptions{Entries: 64, Channel: e.ch}); err != nil {
		return nil, err
	}
	if e.qp, err = e.pd.CreateQP(ib.QPOptions{SendCQ: e.cq, RecvCQ: e.rcq, Caps: ib.QPCaps{MaxSendWR: 64, MaxRecvWR: 16}}); err != nil {
		return nil, err
	}
	if e.mr, err = e.pd.RegBytes(e.buf, ib.AccessLocalWrite|ib.AccessRemoteWrite|ib.AccessRemoteRead); err != nil {
		return nil, err
	}
	if err := id.ModifyQP(e.qp, ib.QPSInit); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *end) sge(off, n int) []ib.SGE {
	return []ib.SGE{{Addr: e.mr.IOVA() + uint64(off), Length: uint32(n), LKey: e.mr.LKey()}}
}

// wait returns the next send completion, waitRecv the next receive
// completion; both fail the test on an error completion.
func (e *end) wait(t *testing.T) ib.WC     { t.Helper(); return waitCQ(t, e.cq) }
func (e *end) waitRecv(t *testing.T) ib.WC { t.Helper(); return waitCQ(t, e.rcq) }

func waitCQ(t *testing.T, cq *ib.CQ) ib.WC {
	t.Helper()
	wc, err := nextWC(cq)
	if err != nil {
		t.Fatal(err)
	}
	return wc
}

// nextWC waits for one successful completion of cq; any goroutine.
func nextWC(cq *ib.CQ) (ib.WC, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wc := make([]ib.WC, 1)
	if _, err := cq.Wait(ctx, wc); err != nil {
		return ib.WC{}, fmt.Errorf("wait for a completion: %w", err)
	}
	if err := wc[0].Err(); err != nil {
		return wc[0], fmt.Errorf("completion %+v: %w", wc[0], err)
	}
	return wc[0], nil
}

func (e *end) close(t *testing.T) {
	t.Helper()
	for _, c := range []interface{ Close() error }{e.qp, e.cq, e.rcq, e.ch, e.mr, e.pd, e.ctx, e.id, e.id} {
		if err := c.Close(); err != nil {
			t.Errorf("%T.Close: %v", c, err)
		}
	}
}

// TestKernelConnectLoopback connects two of our own ends through the
// kernel's RDMA CM over rxe, to the device's own address: listen, resolve
// address and route, connect with private data, accept, then an RDMA
// WRITE to the address and key the server sent in its private data and a
// SEND into a posted receive, both verified byte for byte; then a
// disconnect that the server sees, and Close of everything with no
// descriptor left.
func TestKernelConnectLoopback(t *testing.T) {
	addr := rxetest.Addr(t, DevicePath)
	fds := openFDs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ch, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	listener, err := ch.CreateID()
	if err != nil {
		t.Fatal(err)
	}
	const port = 18600
	if err := listener.Bind(netip.AddrPortFrom(addr, port)); err != nil {
		t.Fatal(err)
	}
	if err := listener.Listen(8); err != nil {
		t.Fatal(err)
	}

	const n = 16384
	type result struct {
		srv *end
		err error
	}
	done := make(chan result, 1)
	srvBuf := hostBuffer(t, n)
	go func() {
		req, ev, err := listener.GetRequest(ctx)
		if err != nil {
			done <- result{err: err}
			return
		}
		if !bytes.HasPrefix(ev.PrivateData, []byte("hello server")) {
			done <- result{err: errors.New("request private data " + string(ev.PrivateData))}
			return
		}
		srv, err := makeEnd(req, srvBuf)
		if err != nil {
			done <- result{err: err}
			return
		}
		// The client's SEND lands here.
		if _, err := srv.qp.PostRecv(ib.RecvWR{ID: 100, SG: srv.sge(n/2, n/2)}); err != nil {
			done <- result{err: err}
			return
		}
		// Tell the client where to write: address, rkey.
		pd := binary.BigEndian.AppendUint64(nil, srv.mr.IOVA())
		pd = binary.BigEndian.AppendUint32(pd, srv.mr.RKey())
		done <- result{srv: srv, err: req.Accept(ctx, srv.qp, ConnParam{PrivateData: pd})}
	}()

	cli := resolved(ctx, t, ch, netip.AddrPortFrom(addr, port))
	r, err := cli.Route()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("route %+v", r)
	c := newEnd(t, cli, n)
	resp, err := cli.Connect(ctx, c.qp, ConnParam{PrivateData: []byte("hello server")})
	if err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil {
		t.Fatalf("server: %v", res.err)
	}
	srv := res.srv
	if len(resp.PrivateData) < 12 || resp.QPNum != srv.qp.Num() {
		t.Fatalf("reply: QP %d, %d bytes of private data; want QP %d and 12 bytes", resp.QPNum, len(resp.PrivateData), srv.qp.Num())
	}
	raddr, rkey := binary.BigEndian.Uint64(resp.PrivateData), binary.BigEndian.Uint32(resp.PrivateData[8:])

	for i := range c.buf {
		c.buf[i] = byte(i*13 + 1)
	}
	if _, err := c.qp.PostSend(ib.SendWR{ID: 1, Op: ib.OpRDMAWrite, Flags: ib.SendSignaled, RemoteAddr: raddr, RKey: rkey, SG: c.sge(0, n/2)}); err != nil {
		t.Fatal(err)
	}
	if wc := c.wait(t); wc.ID != 1 || wc.Opcode != ib.WCRDMAWrite {
		t.Fatalf("write completion %+v", wc)
	}
	if !bytes.Equal(srv.buf[:n/2], c.buf[:n/2]) {
		t.Fatal("RDMA WRITE: the server's buffer differs from the client's")
	}
	if _, err := c.qp.PostSend(ib.SendWR{ID: 2, Op: ib.OpSend, Flags: ib.SendSignaled, SG: c.sge(n/2, n/2)}); err != nil {
		t.Fatal(err)
	}
	if wc := c.wait(t); wc.ID != 2 || wc.Opcode != ib.WCSend {
		t.Fatalf("send completion %+v", wc)
	}
	if wc := srv.waitRecv(t); wc.ID != 100 || wc.Opcode != ib.WCRecv || wc.ByteLen != n/2 {
		t.Fatalf("receive completion %+v", wc)
	}
	if !bytes.Equal(srv.buf[n/2:], c.buf[n/2:]) {
		t.Fatal("SEND: the server's buffer differs from the client's")
	}

	// The client disconnects; the server sees DISCONNECTED.
	if err := cli.Disconnect(c.qp); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.id.await(ctx, "DISCONNECT", EventDisconnected); err != nil {
		t.Fatalf("server: %v", err)
	}
	c.close(t)
	srv.close(t)
	for _, c := range []interface{ Close() error }{listener, ch, ch} {
		if err := c.Close(); err != nil {
			t.Errorf("%T.Close: %v", c, err)
		}
	}
	if _, err := cli.Route(); !errors.Is(err, ErrClosed) {
		t.Errorf("Route after Close: %v, want ErrClosed", err)
	}
	if got := openFDs(t); got != fds {
		t.Errorf("%d descriptors open after Close, %d before", got, fds)
	}
}

// TestKernelConnectNoListener connects to a port nobody listens on: the
// peer's CM rejects with reason 8 (invalid service id), a typed error.
func TestKernelConnectNoListener(t *testing.T) {
	addr := rxetest.Addr(t, DevicePath)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cli := resolved(ctx, t, openChannel(t), netip.AddrPortFrom(addr, 18601))
	c := newEnd(t, cli, 4096)
	_, err := cli.Connect(ctx, c.qp, ConnParam{})
	var ee *EventError
	if !errors.Is(err, ErrRejected) || !errors.As(err, &ee) || ee.Status != RejectInvalidServiceID {
		t.Fatalf("Connect to no listener: %v; want ErrRejected with reason %d", err, RejectInvalidServiceID)
	}
	t.Logf("no listener: %v", err)
	c.close(t)
}

// TestKernelNextEventCancel waits for an event that never comes.
func TestKernelNextEventCancel(t *testing.T) {
	rxetest.Addr(t, DevicePath)
	ch, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	id, err := ch.CreateID()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := id.NextEvent(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("NextEvent: %v, want DeadlineExceeded", err)
	}
	if err := ch.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := id.NextEvent(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("NextEvent after the Channel's Close: %v, want ErrClosed", err)
	}
}

// openFDs counts the process's open descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	e, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(e)
}

// openChannel opens the CM device and closes it at the end of the test.
func openChannel(t *testing.T) *Channel {
	t.Helper()
	ch, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	return ch
}

// listenAt makes a listener on ch at addr:port.
func listenAt(t *testing.T, ch *Channel, addr netip.Addr, port uint16) *ID {
	t.Helper()
	l, err := ch.CreateID()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Bind(netip.AddrPortFrom(addr, port)); err != nil {
		t.Fatal(err)
	}
	if err := l.Listen(0); err != nil {
		t.Fatal(err)
	}
	return l
}

// resolved makes an ID on ch with dst's address and route resolved.
func resolved(ctx context.Context, t *testing.T, ch *Channel, dst netip.AddrPort) *ID {
	t.Helper()
	id, err := ch.CreateID()
	if err != nil {
		t.Fatal(err)
	}
	if err := id.ResolveAddr(ctx, netip.AddrPort{}, dst); err != nil {
		t.Fatal(err)
	}
	if err := id.ResolveRoute(ctx); err != nil {
		t.Fatal(err)
	}
	return id
}
