package rdma

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/ib"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
)

// TestFakeZeroCopy runs Send and Recv on a fake NIC that accepts dma-buf
// registrations: both sides take the zero-copy path and say so, the NIC
// moves the bytes from device memory to device memory, a second transfer
// of the same ranges registers nothing (the cache), and pipelined
// receivers and senders still meet zero-copy peers.
func TestFakeZeroCopy(t *testing.T) {
	a, z := newNodes(t, sim.Gaudi2)
	for _, tc := range []struct {
		name       string
		send, recv Path // forced paths (PathAuto: the NIC's choice)
	}{
		{"zero-copy", PathAuto, PathAuto},
		{"to-pipelined", PathAuto, PathPipelined},
		{"from-pipelined", PathPipelined, PathAuto},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, client, server := fakePair(t, a, z, Options{Path: tc.send, ChunkSize: 64 << 10}, Options{Path: tc.recv, ChunkSize: 64 << 10})
			const n = 1<<20 + 3*4096 // whole pages: the receiver's range may be written by the peer
			src, dst := a.alloc(t, n+8192, 7), z.alloc(t, n+8192, 0)
			want := pattern(n+8192, 7)[4096 : 4096+n]
			wantSend, wantRecv := PathZeroCopy, PathZeroCopy
			if tc.send == PathPipelined {
				wantSend = PathPipelined
			}
			if tc.recv == PathPipelined {
				wantRecv = PathPipelined
			}
			for round := range 3 {
				z.write(t, dst.All(), make([]byte, n+8192))
				sent, recvd := transfer(timeout(t), client, server, src.Range(4096, n), dst.Range(4096, n))
				if sent.err != nil || recvd.err != nil {
					t.Fatalf("round %d: send: %v; recv: %v", round, sent.err, recvd.err)
				}
				if sent.res.Path != wantSend || sent.res.PeerPath != wantRecv || recvd.res.Path != wantRecv || recvd.res.PeerPath != wantSend {
					t.Fatalf("round %d: sender %v (peer %v), receiver %v (peer %v); want %v and %v",
						round, sent.res.Path, sent.res.PeerPath, recvd.res.Path, recvd.res.PeerPath, wantSend, wantRecv)
				}
				got := z.read(t, dst.All())
				if !bytes.Equal(got[4096:4096+n], want) {
					t.Fatalf("round %d: the received bytes differ from the sent ones", round)
				}
				if !bytes.Equal(got[:4096], make([]byte, 4096)) || !bytes.Equal(got[4096+n:], make([]byte, 4096)) {
					t.Fatalf("round %d: bytes around the range were written", round)
				}
				regs, _ := f.counts()
				zc := 0
				for _, p := range []Path{wantSend, wantRecv} {
					if p == PathZeroCopy {
						zc++
					}
				}
				if regs != zc {
					t.Fatalf("round %d: %d device registrations, want %d (cached after the first transfer)", round, regs, zc)
				}
			}
		})
	}
}

// TestFakeZeroCopyHold: while the NIC is writing a zero-copy transfer's
// device memory, the buffers are not freed under it: a Close of either
// answers ErrInUse (their dma-buf exports are open) and the NIC's keys
// still work; after the transfer, the Close of each succeeds and takes
// the cached registration with it.
func TestFakeZeroCopyHold(t *testing.T) {
	a, z := newNodes(t, sim.Gaudi2)
	f, client, server := fakePair(t, a, z, Options{ChunkSize: 64 << 10}, Options{ChunkSize: 64 << 10})
	const n = 256 << 10
	src, dst := a.alloc(t, n, 5), z.alloc(t, n, 0)
	writing, resume := make(chan struct{}), make(chan struct{})
	first := true
	f.beforeWrite = func(*ib.SendWR) { // on the sending NIC's goroutine
		if first {
			first = false
			close(writing)
			<-resume
		}
	}
	ctx := timeout(t)
	type outcome2 struct {
		sent, recvd outcome
	}
	done := make(chan outcome2, 1)
	go func() {
		s, r := transfer(ctx, client, server, src.All(), dst.All())
		done <- outcome2{s, r}
	}()
	<-writing
	for name, b := range map[string]*memory.Buffer{"source": src, "destination": dst} {
		if err := b.Close(); !errors.Is(err, memory.ErrInUse) {
			t.Errorf("closing the %s while the NIC writes: %v, want ErrInUse", name, err)
		}
	}
	if _, live := f.counts(); live != 2 {
		t.Errorf("%d device registrations live while the NIC writes, want 2", live)
	}
	close(resume)
	o := <-done
	if o.sent.err != nil || o.recvd.err != nil {
		t.Fatalf("send: %v; recv: %v", o.sent.err, o.recvd.err)
	}
	if o.sent.res.Path != PathZeroCopy || o.recvd.res.Path != PathZeroCopy {
		t.Fatalf("paths %v, %v", o.sent.res.Path, o.recvd.res.Path)
	}
	if !bytes.Equal(z.read(t, dst.All()), pattern(n, 5)) {
		t.Fatal("the received bytes differ from the sent ones")
	}
	for name, b := range map[string]*memory.Buffer{"source": src, "destination": dst} {
		if err := b.Close(); err != nil {
			t.Errorf("closing the %s after the transfer: %v", name, err)
		}
	}
	if _, live := f.counts(); live != 0 {
		t.Errorf("%d device registrations live after their buffers closed", live)
	}
}

// BenchmarkFakeZeroCopy measures a zero-copy transfer of device memory
// to device memory on the fake NIC (which moves the bytes with the
// simulated device's reads and writes) with the registration cache, and,
// in the same run, the same without the cache (an export, a registration
// and their closes on each side per transfer) and the pipelined path on
// the same fake NIC.
func BenchmarkFakeZeroCopy(b *testing.B) {
	a, z := newNodes(b, sim.Gaudi2)
	for _, size := range []uint64{64 << 10, 1 << 20} {
		for _, mode := range []string{"zero-copy-cached", "zero-copy-uncached", "pipelined"} {
			b.Run(fmt.Sprintf("%s/%dKiB", mode, size>>10), func(b *testing.B) {
				o := Options{}
				if mode == "pipelined" {
					o.Path = PathPipelined
				}
				_, client, server := fakePair(b, a, z, o, o)
				client.regs.off = mode == "zero-copy-uncached"
				server.regs.off = client.regs.off
				src, dst := a.alloc(b, size, 3), z.alloc(b, size, 0)
				ctx := context.Background()
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					sent, recvd := transfer(ctx, client, server, src.All(), dst.All())
					if sent.err != nil || recvd.err != nil {
						b.Fatalf("send: %v; recv: %v", sent.err, recvd.err)
					}
				}
			})
		}
	}
}

// TestNICRefusalRemembered: a NIC that cannot register dma-bufs at all
// (ib.ErrDMABufNotSupported, as rxe answers) is asked once per Conn; the
// transfers after take the pipeline without exporting the range and
// asking again. Any other registration failure (this buffer, this span)
// is asked again on the next transfer. Before, every transfer exported
// its range and asked the NIC, on both sides.
func TestNICRefusalRemembered(t *testing.T) {
	a, z := newNodes(t, sim.Gaudi2)
	for _, tc := range []struct {
		name  string
		err   error
		calls int // registrations asked for in three transfers, both sides
	}{
		{"unsupported", fmt.Errorf("register: %w", ib.ErrDMABufNotSupported), 2},
		{"other", fmt.Errorf("register: %w", ib.ErrBadWorkRequest), 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, client, server := fakePair(t, a, z, Options{ChunkSize: 64 << 10}, Options{ChunkSize: 64 << 10})
			calls := 0
			var mu sync.Mutex
			refuse := func(*memory.Buffer, uint64, uint64, ib.Access) (region, error) {
				mu.Lock()
				calls++
				mu.Unlock()
				return nil, tc.err
			}
			client.regs.register, server.regs.register = refuse, refuse
			const n = 256 << 10
			src, dst := a.alloc(t, n, 5), z.alloc(t, n, 0)
			for round := range 3 {
				sent, recvd := transfer(timeout(t), client, server, src.All(), dst.All())
				if sent.err != nil || recvd.err != nil {
					t.Fatalf("round %d: send: %v; recv: %v", round, sent.err, recvd.err)
				}
				if sent.res.Path != PathPipelined || recvd.res.Path != PathPipelined {
					t.Fatalf("round %d: paths %v and %v, want pipelined", round, sent.res.Path, recvd.res.Path)
				}
			}
			if !bytes.Equal(z.read(t, dst.All()), pattern(n, 5)) {
				t.Fatal("the received bytes differ from the sent ones")
			}
			mu.Lock()
			defer mu.Unlock()
			if calls != tc.calls {
				t.Errorf("%d registrations asked for in three transfers, want %d", calls, tc.calls)
			}
		})
	}
}

// TestStagedBeforeDescriptor: a pipelined Send starts the DMA of its first
// chunks into its staging ring before the receiver's descriptor comes
// (staging needs nothing from the receiver), so the descriptor's round
// trip overlaps the first copies. Before, nothing was staged until the
// descriptor arrived. The receiver here never calls Recv, so no
// descriptor is sent at all; the Send is cancelled after.
func TestStagedBeforeDescriptor(t *testing.T) {
	a, z := newNodes(t, sim.Gaudi2)
	_, client, _ := fakePair(t, a, z, Options{Path: PathPipelined, ChunkSize: 64 << 10}, Options{ChunkSize: 64 << 10})
	staged := make(chan int, 8)
	testHookStaged = func(k int) { staged <- k }
	t.Cleanup(func() { testHookStaged = nil })
	src := a.alloc(t, 256<<10, 1)
	ctx, cancel := context.WithCancel(context.Background())
	sent := make(chan error, 1)
	go func() {
		_, err := client.Send(ctx, src.All())
		sent <- err
	}()
	for want := range 3 { // Depth chunks
		select {
		case k := <-staged:
			if k != want {
				t.Errorf("staged chunk %d, want %d", k, want)
			}
		case err := <-sent:
			t.Fatalf("Send returned %v before staging chunk %d", err, want)
		case <-time.After(30 * time.Second):
			t.Fatalf("chunk %d not staged in 30 s without a descriptor", want)
		}
	}
	cancel()
	if err := <-sent; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Send: %v, want context.Canceled", err)
	}
}
