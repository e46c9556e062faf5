package rdma

import (
	"errors"
	"testing"

	"github.com/gaudi-go/gaudi/ib"
	"github.com/gaudi-go/gaudi/sim"
)

// sendRaw posts a control message from c as a peer that does not follow
// the protocol would: a SEND of b (a descriptor's bytes), or with
// immediate v when b is nil.
func sendRaw(t *testing.T, c *Conn, b []byte, v uint32) {
	t.Helper()
	wr := ib.SendWR{ID: wrCtl | 0x77, Op: ib.OpSendImm, Imm: v}
	if b != nil {
		wr = ib.SendWR{ID: wrCtl | 0x77, Op: ib.OpSend, Flags: ib.SendInline, Inline: b}
	}
	if _, err := c.qp.PostSend(wr); err != nil {
		t.Fatal(err)
	}
}

// TestKernelHostilePeer: a receiver that hands out a remote key it
// revoked, or a descriptor of an older version, and a sender that
// writes a chunk out of sequence: each transfer fails with a typed error
// (ib.ErrRemoteAccess as the NIC said, or ErrPeerGone for the peer's
// disconnect that follows it; ErrOlderDescriptor; ErrProtocol), and
// nothing leaks (TestMain's check, the Engines' Close).
func TestKernelHostilePeer(t *testing.T) {
	t.Run("revoked key", func(t *testing.T) {
		a, b := newNodes(t, sim.Gaudi2)
		client, server := connect(t, a, b, Options{ChunkSize: 64 << 10}, Options{ChunkSize: 64 << 10})
		src := a.alloc(t, 256<<10, 1)
		// A region the server registers, describes, then deregisters.
		mem := make([]byte, 256<<10)
		mr, err := server.pd.RegBytes(mem, ib.AccessLocalWrite|ib.AccessRemoteWrite)
		if err != nil {
			t.Fatal(err)
		}
		d := Descriptor{Path: PathZeroCopy, RKey: mr.RKey(), Addr: mr.IOVA(), Len: 256 << 10}
		if err := mr.Close(); err != nil {
			t.Fatal(err)
		}
		msg, _ := d.MarshalBinary()
		sendRaw(t, server, msg, 0)
		// The NIC refuses the WRITE (remote access error), and the
		// peer's queue pair goes to the error state with it: the peer
		// shuts its side and disconnects, and that disconnect may reach
		// the sender before the refusal's completion (rxe's completer and
		// the CM are separate threads), so ErrPeerGone is as true.
		_, err = client.Send(timeout(t), src.All())
		if !errors.Is(err, ib.ErrRemoteAccess) && !errors.Is(err, ErrPeerGone) {
			t.Errorf("send to a revoked key: %v, want ib.ErrRemoteAccess (or ErrPeerGone)", err)
		}
	})
	t.Run("older descriptor", func(t *testing.T) {
		a, b := newNodes(t, sim.Gaudi2)
		client, server := connect(t, a, b, Options{}, Options{})
		src := a.alloc(t, 4096, 1)
		msg, _ := Descriptor{Path: PathPipelined, RKey: 1, Addr: 4096, Len: 4096, ChunkSize: 4096, Slots: 2}.MarshalBinary()
		msg[offVersion] = 0
		sendRaw(t, server, msg, 0)
		_, err := client.Send(timeout(t), src.All())
		if !errors.Is(err, ErrOlderDescriptor) || !errors.Is(err, ErrProtocol) {
			t.Errorf("send on an older descriptor: %v, want ErrOlderDescriptor and ErrProtocol", err)
		}
	})
	t.Run("chunk out of sequence", func(t *testing.T) {
		a, b := newNodes(t, sim.Gaudi2)
		client, server := connect(t, a, b, Options{ChunkSize: 64 << 10}, Options{ChunkSize: 64 << 10})
		dst := b.alloc(t, 256<<10, 0)
		recvd := make(chan error, 1)
		go func() {
			_, err := server.Recv(timeout(t), dst.All())
			recvd <- err
		}()
		// Take the receiver's descriptor as a sender would, then write
		// chunk 3 first.
		ev := <-client.snd.ev
		if ev.kind != evDesc || ev.err != nil {
			t.Fatalf("event %+v, want the receiver's descriptor", ev)
		}
		host := make([]byte, 64<<10)
		mr, err := client.pd.RegBytes(host, ib.AccessLocalWrite)
		if err != nil {
			t.Fatal(err)
		}
		defer mr.Close()
		sg := []ib.SGE{{Addr: mr.IOVA(), Length: 64 << 10, LKey: mr.LKey()}}
		if _, err := client.qp.PostSend(ib.SendWR{ID: wrData | 3, Op: ib.OpRDMAWriteImm, Imm: imm(kindData, 3),
			RemoteAddr: ev.desc.Addr, RKey: ev.desc.RKey, SG: sg}); err != nil {
			t.Fatal(err)
		}
		if err := <-recvd; !errors.Is(err, ErrProtocol) {
			t.Errorf("recv of chunk 3 first: %v, want ErrProtocol", err)
		}
		// The write's completion (success or flushed) before mr goes.
		for ev := range client.snd.ev {
			if ev.kind == evSent {
				break
			}
		}
	})
}
