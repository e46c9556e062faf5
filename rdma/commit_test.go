package rdma

import (
	"bytes"
	"cmp"
	"errors"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/sim"
)

// TestCommittedRing: once a receiver's fin said it takes its ring for
// good (here its Options force the pipeline), the next Send writes at
// once: its chunk lands in the receiver's ring before the receiver even
// calls Recv, which then sends no descriptor, copies it out and gets the
// bytes. Before the receiver committed, the Send waited for the
// descriptor, and the first chunk could not land before a Recv.
func TestCommittedRing(t *testing.T) {
	a, z := newNodes(t, sim.Gaudi2)
	src, dst := a.alloc(t, 128<<10, 12), z.alloc(t, 128<<10, 0)
	opts := Options{Path: PathPipelined, ChunkSize: 64 << 10, KeepAlive: -1}
	_, client, server := fakePair(t, a, z, opts, opts)
	ctx := timeout(t)
	if sent, recvd := transfer(ctx, client, server, src.All(), dst.All()); sent.err != nil || recvd.err != nil {
		t.Fatalf("first transfer: send: %v; recv: %v", sent.err, recvd.err)
	}
	if !server.committed || !client.peerCommitted {
		t.Fatalf("after the first transfer: receiver committed %v, sender knows %v; want both", server.committed, client.peerCommitted)
	}
	z.write(t, dst.All(), make([]byte, 128<<10))
	sent := make(chan error, 1)
	go func() {
		_, err := client.Send(ctx, src.All())
		sent <- err
	}()
	waitUntil(t, "a chunk in the ring before Recv", 30*time.Second, func() bool { return len(server.rcv.ev) > 0 })
	before := server.nic.(*fakeEnd).carried.Load()
	res, err := server.Recv(ctx, dst.All())
	if err != nil {
		t.Fatalf("recv of chunks that came first: %v", err)
	}
	if err := <-sent; err != nil {
		t.Fatalf("send without a descriptor: %v", err)
	}
	if res.Path != PathPipelined || res.Chunks != 2 {
		t.Errorf("recv result %+v, want the pipeline in 2 chunks", res)
	}
	// A credit and the fin (with the last credit): no descriptor.
	if got := server.nic.(*fakeEnd).carried.Load() - before; got != 2 {
		t.Errorf("the committed receiver's NIC carried %d messages, want 2", got)
	}
	if !bytes.Equal(z.read(t, dst.All()), pattern(128<<10, 12)) {
		t.Error("the received bytes differ from the sent ones")
	}
}

// TestCommittedLength: a receiver committed to its ring checks the
// length from the chunks, since no descriptor lets the sender check it:
// a longer or a shorter Send fails both sides with ErrLength, as a
// mismatch does with a descriptor. Also where each end cuts its length
// into chunks of its own (transferChunk): the first chunk's length
// differs.
func TestCommittedLength(t *testing.T) {
	a, z := newNodes(t, sim.Gaudi2)
	for _, tc := range []struct {
		name      string
		send, dst uint64
		chunk     uint32 // 0: 64 KiB
	}{
		{"longer", 192 << 10, 128 << 10, 0},
		{"shorter", 64 << 10, 128 << 10, 0},
		{"longer last chunk", 100 << 10, 96 << 10, 0},
		{"empty into some", 0, 64 << 10, 0},
		{"some into empty", 64 << 10, 0, 0},
		{"split longer", 4 << 20, 2 << 20, DefaultChunkSize},
		{"split shorter", 2 << 20, 4 << 20, DefaultChunkSize},
		{"split one page longer", 4<<20 + 4096, 4 << 20, DefaultChunkSize},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst := a.alloc(t, 5<<20, 13), z.alloc(t, 5<<20, 0)
			opts := Options{Path: PathPipelined, ChunkSize: cmp.Or(tc.chunk, 64<<10), KeepAlive: -1}
			_, client, server := fakePair(t, a, z, opts, opts)
			ctx := timeout(t)
			if sent, recvd := transfer(ctx, client, server, src.All(), dst.All()); sent.err != nil || recvd.err != nil {
				t.Fatalf("first transfer: send: %v; recv: %v", sent.err, recvd.err)
			}
			sent, recvd := transfer(ctx, client, server, src.All().Slice(0, tc.send), dst.All().Slice(0, tc.dst))
			if !errors.Is(sent.err, ErrLength) || !errors.Is(recvd.err, ErrLength) {
				t.Errorf("%d bytes into %d: send: %v; recv: %v; want ErrLength on both", tc.send, tc.dst, sent.err, recvd.err)
			}
		})
	}
}
