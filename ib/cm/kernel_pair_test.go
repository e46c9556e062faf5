package cm

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/ib"
	"github.com/gaudi-go/gaudi/internal/rxetest"
)

// The two-guest harness (GAUDI_VMTEST_PAIR=1 scripts/vmtest/run.sh, make
// vmtest-pair) boots two guests on one virtual network, each with rxe0 on
// its NIC, and runs TestTwoGuests in both: rxe carries traffic only in the
// initial network namespace, so two rxe devices that talk over a wire need
// two kernels. It tells each its part and the other's address.
const (
	pairRoleEnv = "GAUDI_VMTEST_PAIR_ROLE" // server or client
	pairPeerEnv = "GAUDI_VMTEST_PAIR_PEER" // the other guest's IPv4 address
	pairPort    = 18700
	pairSize    = 1 << 20
)

// TestTwoGuests is our client in one guest against our server in the
// other, rxe to rxe over the harness's virtual network. The server
// accepts with its buffer's address and key in the private data; the
// client RDMA WRITEs a pattern into the first half, SENDs a second
// pattern into the server's receive (the second half), and RDMA READs the
// first half back; the server checks both halves and SENDs the client a
// verdict; then the client disconnects and the server sees it.
func TestTwoGuests(t *testing.T) {
	role := os.Getenv(pairRoleEnv)
	if role == "" {
		t.Skip("runs in the two-guest VM harness only (GAUDI_VMTEST_PAIR=1 scripts/vmtest/run.sh ./ib/cm)")
	}
	self := rxetest.Addr(t, DevicePath)
	peer, err := netip.ParseAddr(os.Getenv(pairPeerEnv))
	if err != nil {
		t.Fatalf("%s: %v", pairPeerEnv, err)
	}
	t.Logf("%s at %v, peer %v", role, self, peer)
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()
	switch role {
	case "server":
		pairServer(ctx, t, self)
	case "client":
		pairClient(ctx, t, netip.AddrPortFrom(peer, pairPort))
	default:
		t.Fatalf("%s=%q, want server or client", pairRoleEnv, role)
	}
}

// pairPattern fills b with the pattern seed names.
func pairPattern(b []byte, seed byte) {
	for i := range b {
		b[i] = byte(i*7) ^ seed
	}
}

func pairServer(ctx context.Context, t *testing.T, self netip.Addr) {
	l := listenAt(t, openChannel(t), self, pairPort)
	defer l.Close()
	id, _, err := l.GetRequest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := newEnd(t, id, pairSize+64)
	defer s.close(t)
	if _, err := s.qp.PostRecv(ib.RecvWR{ID: 1, SG: s.sge(pairSize/2, pairSize/2)}); err != nil {
		t.Fatal(err)
	}
	pd := binary.BigEndian.AppendUint64(nil, s.mr.IOVA())
	pd = binary.BigEndian.AppendUint32(pd, s.mr.RKey())
	if err := id.Accept(ctx, s.qp, ConnParam{PrivateData: pd}); err != nil {
		t.Fatal(err)
	}
	// The SEND comes after the WRITE on one RC connection: once it is
	// received, the WRITE's bytes are in place.
	if wc := s.waitRecv(t); wc.ByteLen != pairSize/2 {
		t.Fatalf("the client's SEND: %d bytes, want %d", wc.ByteLen, pairSize/2)
	}
	want := make([]byte, pairSize)
	pairPattern(want[:pairSize/2], 0x5a)
	pairPattern(want[pairSize/2:], 0xa5)
	verdict := []byte("ok")
	if !bytes.Equal(s.buf[:pairSize/2], want[:pairSize/2]) {
		t.Error("the client's RDMA WRITE did not land in our buffer as written")
		verdict = []byte("write")
	}
	if !bytes.Equal(s.buf[pairSize/2:pairSize], want[pairSize/2:]) {
		t.Error("the client's SEND did not land in our receive as sent")
		verdict = []byte("send")
	}
	copy(s.buf[pairSize:], verdict)
	if _, err := s.qp.PostSend(ib.SendWR{ID: 2, Op: ib.OpSend, Flags: ib.SendSignaled, SG: s.sge(pairSize, len(verdict))}); err != nil {
		t.Fatal(err)
	}
	s.wait(t)
	if _, err := id.await(ctx, "DISCONNECT", EventDisconnected); err != nil {
		t.Fatalf("wait for the client's disconnect: %v", err)
	}
	if err := id.Disconnect(s.qp); err != nil {
		t.Error(err)
	}
}

func pairClient(ctx context.Context, t *testing.T, dst netip.AddrPort) {
	ch := openChannel(t)
	c, resp := pairConnect(ctx, t, ch, dst)
	defer c.close(t)
	if len(resp.PrivateData) < 12 {
		t.Fatalf("the server's reply has %d bytes of private data, want 12", len(resp.PrivateData))
	}
	raddr, rkey := binary.BigEndian.Uint64(resp.PrivateData), binary.BigEndian.Uint32(resp.PrivateData[8:])
	if _, err := c.qp.PostRecv(ib.RecvWR{ID: 9, SG: c.sge(2*pairSize, 64)}); err != nil {
		t.Fatal(err)
	}
	pairPattern(c.buf[:pairSize/2], 0x5a)
	pairPattern(c.buf[pairSize/2:pairSize], 0xa5)
	if _, err := c.qp.PostSend(
		ib.SendWR{ID: 1, Op: ib.OpRDMAWrite, RemoteAddr: raddr, RKey: rkey, SG: c.sge(0, pairSize/2)},
		ib.SendWR{ID: 2, Op: ib.OpSend, Flags: ib.SendSignaled, SG: c.sge(pairSize/2, pairSize/2)},
	); err != nil {
		t.Fatal(err)
	}
	if wc := c.wait(t); wc.ID != 2 {
		t.Fatalf("completion %+v, want the SEND's", wc)
	}
	// Read the written half back into a zeroed area.
	back := c.buf[pairSize : pairSize+pairSize/2]
	clear(back)
	if _, err := c.qp.PostSend(ib.SendWR{ID: 3, Op: ib.OpRDMARead, Flags: ib.SendSignaled, RemoteAddr: raddr, RKey: rkey, SG: c.sge(pairSize, pairSize/2)}); err != nil {
		t.Fatal(err)
	}
	if wc := c.wait(t); wc.ID != 3 || wc.Opcode != ib.WCRDMARead {
		t.Fatalf("completion %+v, want the READ's", wc)
	}
	if !bytes.Equal(back, c.buf[:pairSize/2]) {
		t.Error("the RDMA READ brought back other bytes than we wrote")
	}
	wc := c.waitRecv(t)
	if v := c.buf[2*pairSize : 2*pairSize+int(wc.ByteLen)]; string(v) != "ok" {
		t.Errorf("the server's verdict: %q, want ok", v)
	}
	if err := c.id.Disconnect(c.qp); err != nil {
		t.Error(err)
	}
}

// pairConnect connects to the server in the other guest, which may not
// listen yet, or not answer ARP yet (the guests boot together): address
// resolution and REJECTED (nobody listens) are retried until ctx ends.
func pairConnect(ctx context.Context, t *testing.T, ch *Channel, dst netip.AddrPort) (*end, Event) {
	t.Helper()
	for {
		id, err := ch.CreateID()
		if err != nil {
			t.Fatal(err)
		}
		err = id.ResolveAddr(ctx, netip.AddrPort{}, dst)
		if err == nil {
			err = id.ResolveRoute(ctx)
		}
		if err == nil {
			c := newEnd(t, id, 2*pairSize+64)
			resp, err := id.Connect(ctx, c.qp, ConnParam{})
			if err == nil {
				return c, resp
			}
			c.close(t)
			if !errors.Is(err, ErrRejected) {
				t.Fatalf("connect to %v: %v", dst, err)
			}
		} else {
			id.Close()
		}
		t.Logf("the server at %v is not there yet (%v); again", dst, err)
		select {
		case <-ctx.Done():
			t.Fatalf("no connection to %v: %v", dst, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}
