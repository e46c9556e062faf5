package rdma

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/ib"
	"github.com/gaudi-go/gaudi/sim"
)

// waitUntil polls cond every millisecond for up to d.
func waitUntil(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s in %v", what, d)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestKeepAliveVanishedPeer: a receiver whose sender vanished without a
// disconnect (its machine went down: the NIC's messages go unacknowledged)
// fails with ErrPeerGone, the NIC's retry error inside, within its
// keep-alive interval and the NIC's retries. Before, nothing was sent
// while a Recv waited for chunks, so it waited until its context ended:
// "recv: context deadline exceeded, want ErrPeerGone".
func TestKeepAliveVanishedPeer(t *testing.T) {
	a, z := newNodes(t, sim.Gaudi2)
	opts := Options{ChunkSize: 64 << 10, KeepAlive: 20 * time.Millisecond}
	_, client, server := fakePair(t, a, z, opts, opts)
	dst := z.alloc(t, 256<<10, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	recvd := make(chan error, 1)
	go func() {
		_, err := server.Recv(ctx, dst.All())
		recvd <- err
	}()
	// The descriptor reached the sender, which never sends: then the
	// sender's machine goes.
	waitUntil(t, "descriptor at the sender", 30*time.Second, func() bool { return len(client.snd.ev) > 0 })
	server.nic.(*fakeEnd).vanished.Store(true)
	err := <-recvd
	if !errors.Is(err, ErrPeerGone) || !errors.Is(err, ib.ErrRetryExceeded) {
		t.Fatalf("recv: %v, want ErrPeerGone (ib.ErrRetryExceeded)", err)
	}
	if ctx.Err() != nil {
		t.Errorf("recv returned only when its context ended")
	}
}

// TestKeepAliveQuietPeer: probes flow both ways while transfers wait and
// run, the peer takes and drops them, and the transfer's bytes arrive:
// a quiet but living peer is never taken for a vanished one.
func TestKeepAliveQuietPeer(t *testing.T) {
	a, z := newNodes(t, sim.Gaudi2)
	opts := Options{ChunkSize: 64 << 10, Depth: 2, KeepAlive: time.Millisecond}
	_, client, server := fakePair(t, a, z, opts, opts)
	const n = 1 << 20
	src, dst := a.alloc(t, n, 4), z.alloc(t, n, 0)
	recvd := make(chan error, 1)
	go func() {
		_, err := server.Recv(timeout(t), dst.All())
		recvd <- err
	}()
	// The receiver waits for a sender that has not begun: it probes.
	waitUntil(t, "probes from the waiting receiver", 30*time.Second, func() bool { return server.nic.(*fakeEnd).probes.Load() >= 5 })
	before := client.nic.(*fakeEnd).probes.Load()
	for round := range 3 {
		if round > 0 {
			go func() {
				_, err := server.Recv(timeout(t), dst.All())
				recvd <- err
			}()
		}
		if _, err := client.Send(timeout(t), src.All()); err != nil {
			t.Fatalf("round %d: send: %v", round, err)
		}
		if err := <-recvd; err != nil {
			t.Fatalf("round %d: recv: %v", round, err)
		}
	}
	if !bytes.Equal(z.read(t, dst.All()), pattern(n, 4)) {
		t.Fatal("the received bytes differ from the sent ones")
	}
	t.Logf("probes: receiver %d, sender %d (%d before it sent)", server.nic.(*fakeEnd).probes.Load(), client.nic.(*fakeEnd).probes.Load(), before)
}

// TestFakeCloseAfterRecv: a receiver that closes its Conn as soon as Recv
// returns leaves every Send successful: Recv returns only once the
// sender's NIC has its last credit. Both ends take the pipeline (the fake
// NIC would take the ranges' dma-bufs), and the receiver's fake NIC takes
// 2 ms to carry a credit, so a Recv that returned with its last credit
// still on the way closed the queue pair under it; before, the first
// round failed with "send to a receiver that closes at once: rdma send:
// rdma peer gone: fake peer disconnected". (TestKernelCloseAfterRecv is
// the same over rxe.)
func TestFakeCloseAfterRecv(t *testing.T) {
	a, z := newNodes(t, sim.Gaudi2)
	src, dst := a.alloc(t, 256<<10, 6), z.alloc(t, 256<<10, 0)
	for round := range 20 {
		opts := Options{Path: PathPipelined, ChunkSize: 64 << 10, KeepAlive: -1}
		_, client, server := fakePair(t, a, z, opts, opts)
		server.nic.(*fakeEnd).creditDelay = 2 * time.Millisecond
		ctx := timeout(t)
		sent := make(chan error, 1)
		go func() {
			_, err := client.Send(ctx, src.All())
			sent <- err
		}()
		_, err := server.Recv(ctx, dst.All())
		if cerr := server.Close(); err != nil || cerr != nil {
			t.Fatalf("round %d: recv: %v; close at once: %v", round, err, cerr)
		}
		if err := <-sent; err != nil {
			t.Fatalf("round %d: send to a receiver that closes at once: %v", round, err)
		}
	}
	if !bytes.Equal(z.read(t, dst.All()), pattern(256<<10, 6)) {
		t.Fatal("the received bytes differ from the sent ones")
	}
}
