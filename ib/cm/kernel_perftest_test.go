package cm

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/ib"
	"github.com/gaudi-go/gaudi/internal/rxetest"
)

// Interoperability with perftest's -R mode (Debian's perftest 4.5, version
// string "6.06"; ib_write_bw and ib_read_bw, whose sequences match): both the control channel and the data QPs are RDMA CM
// RC connections to the same port. Facts from perftest's
// perftest_communication.c and write_bw.c, as gathered in the team's
// rdma-datapath notes: every control message is a SEND of exactly its
// size into the peer's 64-byte receive, the client sending first in each
// exchange; the sequence for ib_write_bw is the version (16 bytes), the
// cycle buffer and cache line size (be32 each), the MTU (the ibv_mtu
// enum's digit and a NUL), a pingpong_dest (56 bytes, big-endian: lid@0,
// out_reads@4, qpn@8, psn@12, rkey@16, vaddr@24, gid@32, srqn@48,
// gid_index@52), then the data connection, four more dests (the server's
// rkey and vaddr in them), the test, a dest, the client's report (size
// and iterations be64, peak, average and message rate as big-endian
// doubles) and a last dest.

// ctrl is one end of a perftest control connection.
type ctrl struct {
	*end
	t    *testing.T
	peer *rxetest.Peer
	// busy makes answer spin on the CQ for the peer's message, as
	// perftest's own side of the channel does (ctx_xchg_data_rdma polls):
	// while the peer measures, it then competes for the CPUs just as a
	// perftest peer would, so the two directions' figures compare.
	busy bool
}

// next returns cq's next completion, which must be a success. A wait
// that fails (the peer's exit tears its QPs down, or it never sends) ends
// the test through failed.
func (c *ctrl) next(cq *ib.CQ) ib.WC {
	c.t.Helper()
	wcs := make([]ib.WC, 1)
	if c.busy {
		for k := 0; k == 0; {
			var err error
			if k, err = cq.Poll(wcs); err != nil {
				c.failed(err)
			}
			if k == 0 {
				select {
				case <-c.peer.Exited():
					// What it sent before it exited is in the CQ already.
					if k, err = cq.Poll(wcs); err != nil || k == 0 {
						c.failed(fmt.Errorf("the peer exited while we waited for its message: %v", c.peer.Err()))
					}
				default:
				}
			}
		}
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		go func() {
			select {
			case <-c.peer.Exited():
				cancel()
			case <-ctx.Done():
			}
		}()
		if _, err := cq.Wait(ctx, wcs); err != nil {
			// What it sent before it exited is in the CQ already.
			if k, perr := cq.Poll(wcs); perr != nil || k == 0 {
				c.failed(fmt.Errorf("wait for a completion: %w", err))
			}
		}
	}
	if err := wcs[0].Err(); err != nil {
		c.failed(fmt.Errorf("completion %+v: %w", wcs[0], err))
	}
	return wcs[0]
}

// failed ends the test on err, once the peer had the time to exit: a
// peer that gave up on its clock makes the attempt a retry (Peer.Fail),
// anything else is a failure.
func (c *ctrl) failed(err error) {
	c.t.Helper()
	select {
	case <-c.peer.Exited():
		c.peer.Fail(c.t, fmt.Sprintf("exited during the exchange (we saw: %v)", err))
	case <-time.After(10 * time.Second):
	}
	c.t.Fatal(err)
}

const (
	ctrlSend = 0    // send area in the end's buffer
	ctrlRecv = 1024 // receive area
)

func (c *ctrl) postRecv() {
	c.t.Helper()
	if _, err := c.qp.PostRecv(ib.RecvWR{ID: 5, SG: c.sge(ctrlRecv, 64)}); err != nil {
		c.t.Fatal(err)
	}
}

// xchg sends msg and returns the peer's message of the same size.
func (c *ctrl) xchg(msg []byte) []byte {
	c.t.Helper()
	copy(c.buf[ctrlSend:], msg)
	if _, err := c.qp.PostSend(ib.SendWR{ID: 5, Op: ib.OpSend, Flags: ib.SendSignaled, SG: c.sge(ctrlSend, len(msg))}); err != nil {
		c.t.Fatal(err)
	}
	c.next(c.cq)
	wc := c.next(c.rcq)
	if int(wc.ByteLen) != len(msg) {
		c.t.Fatalf("perftest answered %d bytes to a %d-byte message", wc.ByteLen, len(msg))
	}
	got := append([]byte(nil), c.buf[ctrlRecv:ctrlRecv+len(msg)]...)
	c.postRecv()
	return got
}

// perftestDest is a pingpong_dest.
func perftestDest(qpn, rkey uint32, vaddr uint64, gid netip.Addr, gidIndex uint32) []byte {
	b := make([]byte, 56)
	be := binary.BigEndian
	be.PutUint32(b[4:], 1) // out_reads
	be.PutUint32(b[8:], qpn)
	be.PutUint32(b[12:], 0x123456)
	be.PutUint32(b[16:], rkey)
	be.PutUint64(b[24:], vaddr)
	g := gid.As16()
	copy(b[32:48], g[:])
	be.PutUint32(b[52:], gidIndex)
	return b
}

func doubleBE(f float64) []byte { return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)) }

// connectRetry connects a new ID to dst with an end made by mk, retrying
// while nobody listens yet (REJECTED with reason 8, as perftest's own
// client retries), until ctx ends or the peer exits.
func connectRetry(ctx context.Context, t *testing.T, ch *Channel, dst netip.AddrPort, n int, p *rxetest.Peer) *end {
	t.Helper()
	for {
		id := resolved(ctx, t, ch, dst)
		e := newEnd(t, id, n)
		if _, err := e.qp.PostRecv(ib.RecvWR{ID: 5, SG: e.sge(ctrlRecv, 64)}); err != nil {
			t.Fatal(err)
		}
		_, err := id.Connect(ctx, e.qp, ConnParam{})
		if err == nil {
			return e
		}
		e.close(t)
		var ee *EventError
		if !errors.As(err, &ee) || ee.Status != RejectInvalidServiceID {
			t.Fatalf("connect to %v: %v", dst, err)
		}
		select {
		case <-p.Exited():
			p.Fail(t, "exited before we connected")
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// bwTools are the perftest bandwidth tools whose -R protocol the tests
// speak, with the operation the client issues (read_bw follows write_bw's
// sequence: perftest's read_bw.c).
var bwTools = []struct {
	name string
	op   ib.SendOp
	port uint16
}{
	{"ib_write_bw", ib.OpRDMAWrite, 18620},
	{"ib_read_bw", ib.OpRDMARead, 18622},
}

// destsBefore is how many pingpong_dest exchanges follow the data
// connection before the test runs: send_bw has one more, after which its
// server posts its receives (perftest's send_bw.c).
func destsBefore(op ib.SendOp) int {
	if op == ib.OpSend {
		return 5
	}
	return 4
}

// TestKernelBWServer is our client against the -R server of ib_write_bw,
// ib_read_bw and ib_send_bw: the control protocol, a data connection,
// RDMA WRITEs (READs) of 64 KiB to (from) the buffer the server
// advertised, or SENDs into its receives, and its report: ours, which a
// write or read server prints as its result, or its own count of our
// SENDs.
func TestKernelBWServer(t *testing.T) {
	tools := append(bwTools[:len(bwTools):len(bwTools)], struct {
		name string
		op   ib.SendOp
		port uint16
	}{"ib_send_bw", ib.OpSend, 18624})
	for _, tool := range tools {
		t.Run(tool.name, func(t *testing.T) {
			rxetest.RetryPeer(t, func(t *testing.T) { bwServer(t, tool.name, tool.op, tool.port) })
		})
	}
}

func bwServer(t *testing.T, tool string, op ib.SendOp, port uint16) {
	addr := rxetest.Addr(t, DevicePath)
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	const size, iters = 65536, 200
	p := rxetest.StartPeer(ctx, t, tool, "-R", "-d", "rxe0", "-p", strconv.Itoa(int(port)), "-s", strconv.Itoa(size), "-n", strconv.Itoa(iters))
	ch := openChannel(t)
	dst := netip.AddrPortFrom(addr, port)
	c := &ctrl{end: connectRetry(ctx, t, ch, dst, 4096, p), t: t, peer: p}
	gid := netip.AddrFrom16(addr.As16()) // ::ffff:a.b.c.d, the RoCE v2 GID

	ver := c.xchg(append([]byte("6.06"), make([]byte, 12)...))
	if v, _ := strconv.ParseFloat(string(bytes.TrimRight(ver, "\x00")), 64); v < 5.70 {
		t.Fatalf("server version %q", ver)
	}
	c.xchg(binary.BigEndian.AppendUint32(nil, 4096)) // cycle buffer
	c.xchg(binary.BigEndian.AppendUint32(nil, 64))   // cache line
	c.xchg([]byte{'3', 0})                           // MTU 1024
	c.xchg(perftestDest(0, 0, 0, gid, 1))            // placeholder before the data connection

	d := connectRetry(ctx, t, ch, dst, 2*size, p)
	const depth = 64 // outstanding writes; every 16th is signaled
	var srv []byte
	for range destsBefore(op) {
		srv = c.xchg(perftestDest(d.qp.Num(), d.mr.RKey(), d.mr.IOVA(), gid, 1))
	}
	rkey, vaddr := binary.BigEndian.Uint32(srv[16:]), binary.BigEndian.Uint64(srv[24:])
	t.Logf("server buffer %#x rkey %#x", vaddr, rkey)

	// The test: iters writes, at most depth outstanding, every 16th and
	// the last signaled (a completion stands for the 16 before it).
	for i := range d.buf[:size] {
		d.buf[i] = byte(i)
	}
	wrs := []ib.SendWR{{Op: op, RemoteAddr: vaddr, RKey: rkey, SG: d.sge(0, size)}}
	wcs := make([]ib.WC, 16)
	start := time.Now()
	posted, completed := 0, 0
	for completed < iters {
		for posted < iters && posted-completed < depth {
			wrs[0].ID = uint64(posted)
			wrs[0].Flags = 0
			if posted%16 == 15 || posted == iters-1 {
				wrs[0].Flags = ib.SendSignaled
			}
			if _, err := d.qp.PostSend(wrs...); err != nil {
				t.Fatal(err)
			}
			posted++
		}
		n, err := d.cq.Poll(wcs)
		if err != nil {
			t.Fatal(err)
		}
		for _, wc := range wcs[:n] {
			if err := wc.Err(); err != nil {
				t.Fatalf("write %d: %v", wc.ID, err)
			}
			completed = int(wc.ID) + 1
		}
	}
	el := time.Since(start).Seconds()
	avg := float64(size) * iters / el / (1 << 20)
	t.Logf("our %v: %d x %d bytes in %.3f s: %.2f MB/s", op, iters, size, el, avg)

	if op != ib.OpSend { // send_bw exchanges reports only with -b
		c.xchg(perftestDest(d.qp.Num(), d.mr.RKey(), d.mr.IOVA(), gid, 1))
		c.xchg(binary.BigEndian.AppendUint64(nil, size))
		c.xchg(binary.BigEndian.AppendUint64(nil, iters))
		c.xchg(doubleBE(avg))
		c.xchg(doubleBE(avg))
		c.xchg(doubleBE(iters / el / 1e6))
	}
	c.xchg(perftestDest(d.qp.Num(), d.mr.RKey(), d.mr.IOVA(), gid, 1))
	for _, e := range []*end{d, c.end} {
		if err := e.id.Disconnect(e.qp); err != nil {
			t.Error(err)
		}
	}
	p.Wait(t)
	want := fmt.Sprintf(" %d       %d ", size, iters)
	if !strings.Contains(strings.Join(strings.Fields(p.Output()), " "), strings.Join(strings.Fields(want), " ")+" ") {
		t.Errorf("the server's report has no line for %d bytes, %d iterations", size, iters)
	}
	d.close(t)
	c.close(t)
}

// recvFrom waits for the peer's message of n bytes on a server-side
// control connection (the client speaks first) and answers with reply.
func (c *ctrl) answer(n int, reply []byte) []byte {
	c.t.Helper()
	wc := c.next(c.rcq)
	if int(wc.ByteLen) != n {
		c.t.Fatalf("perftest sent %d bytes, want %d", wc.ByteLen, n)
	}
	got := append([]byte(nil), c.buf[ctrlRecv:ctrlRecv+n]...)
	c.postRecv()
	copy(c.buf[ctrlSend:], reply)
	if _, err := c.qp.PostSend(ib.SendWR{ID: 6, Op: ib.OpSend, Flags: ib.SendSignaled, SG: c.sge(ctrlSend, len(reply))}); err != nil {
		c.t.Fatal(err)
	}
	c.next(c.cq)
	return got
}

// acceptEnd takes the next connection request on l and accepts it with a
// new end of n bytes, with a control message's receive posted when ctl.
func acceptEnd(ctx context.Context, t *testing.T, l *ID, n int, ctl bool) *end {
	t.Helper()
	id, _, err := l.GetRequest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnd(t, id, n)
	if ctl {
		if _, err := e.qp.PostRecv(ib.RecvWR{ID: 5, SG: e.sge(ctrlRecv, 64)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := id.Accept(ctx, e.qp, ConnParam{}); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestKernelBWClient is the -R client of ib_write_bw, ib_read_bw and
// ib_send_bw against our server: we answer its control protocol and
// expose a buffer it RDMA WRITEs (READs), or post the receives its SENDs
// land in; it measures and prints its bandwidth; a writer's data must land
// in our buffer, and every SEND in a receive.
func TestKernelBWClient(t *testing.T) {
	tools := append(bwTools[:len(bwTools):len(bwTools)], struct {
		name string
		op   ib.SendOp
		port uint16
	}{"ib_send_bw", ib.OpSend, 18624})
	for _, tool := range tools {
		t.Run(tool.name, func(t *testing.T) {
			rxetest.RetryPeer(t, func(t *testing.T) { bwClient(t, tool.name, tool.op, tool.port+1) })
		})
	}
}

func bwClient(t *testing.T, tool string, op ib.SendOp, port uint16) {
	addr := rxetest.Addr(t, DevicePath)
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	const size, iters = 65536, 200
	l := listenAt(t, openChannel(t), addr, port)
	defer l.Close()
	p := rxetest.StartPeer(ctx, t, tool, "-R", "-d", "rxe0", "-p", strconv.Itoa(int(port)), "-s", strconv.Itoa(size), "-n", strconv.Itoa(iters), addr.String())
	c := &ctrl{end: acceptEnd(ctx, t, l, 4096, true), t: t, peer: p}
	gid := netip.AddrFrom16(addr.As16())
	if v := c.answer(16, append([]byte("6.06"), make([]byte, 12)...)); !bytes.HasPrefix(v, []byte("6.")) && !bytes.HasPrefix(v, []byte("5.")) {
		t.Fatalf("client version %q", v)
	}
	c.answer(4, binary.BigEndian.AppendUint32(nil, 4096))
	c.answer(4, binary.BigEndian.AppendUint32(nil, 64))
	c.answer(2, []byte{'3', 0})
	c.answer(56, perftestDest(0, 0, 0, gid, 1))

	d := acceptEnd(ctx, t, l, size, false)
	clear(d.buf)
	var recvd chan error
	if op == ib.OpSend {
		recvd = receiveAll(d, size, iters)
	}
	for range destsBefore(op) {
		c.answer(56, perftestDest(d.qp.Num(), d.mr.RKey(), d.mr.IOVA(), gid, 1))
	}
	// The client runs its test now; its next message says it is done.
	c.busy = true
	c.answer(56, perftestDest(d.qp.Num(), d.mr.RKey(), d.mr.IOVA(), gid, 1))
	c.busy = false
	if op == ib.OpSend {
		if err := <-recvd; err != nil {
			t.Fatal(err)
		}
	} else {
		rep := make([][]byte, 5)
		for i := range rep {
			rep[i] = c.answer(8, make([]byte, 8))
		}
		if s, n := binary.BigEndian.Uint64(rep[0]), binary.BigEndian.Uint64(rep[1]); s != size || n != iters {
			t.Errorf("client report: %d bytes x %d, want %d x %d", s, n, size, iters)
		}
		t.Logf("%s client average %.2f MB/s (its report to us)", tool, math.Float64frombits(binary.BigEndian.Uint64(rep[3])))
		c.answer(56, perftestDest(d.qp.Num(), d.mr.RKey(), d.mr.IOVA(), gid, 1))
	}
	// The client disconnects both connections and waits for our replies
	// (DREP, which DISCONNECT sends once a DREQ came: ucma.c).
	errs := make(chan error, 2)
	for _, e := range []*end{d, c.end} {
		go func() {
			if _, err := e.id.await(ctx, "DISCONNECT", EventDisconnected); err != nil {
				errs <- err
				return
			}
			errs <- e.id.Disconnect(e.qp)
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("after the client's disconnect: %v", err)
		}
	}
	p.Wait(t)
	// perftest writes whatever its buffer holds; at least the last write
	// reached ours, which was zeroed: look for its bytes.
	if op == ib.OpRDMAWrite && bytes.Count(d.buf, []byte{0}) == len(d.buf) {
		t.Error("no byte of the client's writes reached our buffer")
	}
	if !strings.Contains(p.Output(), "BW average") {
		t.Error("the client printed no report")
	}
	d.close(t)
	c.close(t)
}

// receiveAll keeps receives of size bytes posted on e's QP (all its
// queue holds, reposted as they complete) until iters SENDs have landed,
// then reports on the channel: an error completion, or a SEND of another
// size, is an error. The QP's RNR timer is set to perftest's 12 (0.64 ms)
// so a sender that finds no receive retries soon.
func receiveAll(e *end, size, iters int) chan error {
	res := make(chan error, 1)
	if err := e.qp.Modify(&ib.QPAttr{Mask: ib.AttrState | ib.AttrMinRNRTimer, State: ib.QPSRTS, MinRNRTimer: 12}); err != nil {
		res <- err
		return res
	}
	depth := int(e.qp.Caps().MaxRecvWR)
	rw := []ib.RecvWR{{SG: e.sge(0, size)}}
	for range min(depth, iters) {
		if _, err := e.qp.PostRecv(rw...); err != nil {
			res <- err
			return res
		}
	}
	go func() {
		for i := range iters {
			wc, err := nextWC(e.rcq)
			if err != nil {
				res <- fmt.Errorf("receive %d of %d: %w", i, iters, err)
				return
			}
			if wc.ByteLen != uint32(size) {
				res <- fmt.Errorf("receive %d: %d bytes, want %d", i, wc.ByteLen, size)
				return
			}
			if i+depth < iters {
				if _, err := e.qp.PostRecv(rw...); err != nil {
					res <- err
					return
				}
			}
		}
		res <- nil
	}()
	return res
}
