package rdma

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/ib"
	"github.com/gaudi-go/gaudi/sim"
	"golang.org/x/sys/unix"
)

// BenchmarkKernelRDMA measures, in one run over the same rxe loopback
// connection, device memory to device memory through the pipelined path
// (Send and Recv; rxe refuses dma-buf registrations) against the
// reference: one RDMA WRITE of host memory to host memory of the same
// size on the same queue pair, which is what the pipeline adds its DMA
// copies to. The two alternate, a pipelined transfer then a WRITE, so
// that whatever else the machine does falls on both alike; each
// iteration is 16 MiB of pairs (16 at 1 MiB, one at 16 MiB and above).
// pipe-MB/s and write-MB/s are each one's bandwidth over all its
// transfers, pipe/write the ratio: the pipeline's cost.
func BenchmarkKernelRDMA(b *testing.B) {
	a, z := newNodes(b, sim.Gaudi2)
	client, server := connect(b, a, z, Options{}, Options{})
	for _, mib := range []uint64{1, 4, 16, 64} {
		n := mib << 20
		b.Run(fmt.Sprintf("%dMiB", mib), func(b *testing.B) {
			// Both ranges are written before the clock starts: device
			// memory has no first touch, the simulator's memfd pages do
			// (about 90 MB/s under TCG against 580 MB/s for a rewrite),
			// and the reference's host buffers are populated too.
			src, dst := a.alloc(b, n, 9), z.alloc(b, n, 3)
			from, to := mapHost(b, n), mapHost(b, n)
			smr, err := client.pd.RegBytes(from, ib.AccessLocalWrite)
			if err != nil {
				b.Fatal(err)
			}
			defer smr.Close()
			dmr, err := server.pd.RegBytes(to, ib.AccessLocalWrite|ib.AccessRemoteWrite)
			if err != nil {
				b.Fatal(err)
			}
			defer dmr.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			sg := []ib.SGE{{Addr: smr.IOVA(), Length: uint32(n), LKey: smr.LKey()}}
			pipelined := func() {
				sent, recvd := transfer(ctx, client, server, src.All(), dst.All())
				if sent.err != nil || recvd.err != nil {
					b.Fatalf("send: %v; recv: %v", sent.err, recvd.err)
				}
				if sent.res.Path != PathPipelined {
					b.Fatalf("path %v", sent.res.Path)
				}
			}
			write := func(i int) {
				wr := ib.SendWR{ID: wrData | uint64(i), Op: ib.OpRDMAWrite, RemoteAddr: dmr.IOVA(), RKey: dmr.RKey(), SG: sg}
				if _, err := client.qp.PostSend(wr); err != nil {
					b.Fatal(err)
				}
				for ev := range client.snd.ev {
					if ev.kind == evSent {
						if ev.err != nil {
							b.Fatal(ev.err)
						}
						break
					}
				}
			}
			pairs := max(1, int(16<<20/n))
			var pipe, wrote time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				for j := range pairs {
					t0 := time.Now()
					pipelined()
					t1 := time.Now()
					write(i*pairs + j)
					pipe, wrote = pipe+t1.Sub(t0), wrote+time.Since(t1)
				}
			}
			moved := float64(n) * float64(b.N*pairs) / 1e6
			b.ReportMetric(moved/pipe.Seconds(), "pipe-MB/s")
			b.ReportMetric(moved/wrote.Seconds(), "write-MB/s")
			b.ReportMetric(wrote.Seconds()/pipe.Seconds(), "pipe/write")
		})
	}
}

// mapHost maps n bytes of anonymous memory for registration.
func mapHost(b *testing.B, n uint64) []byte {
	m, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { unix.Munmap(m) })
	return m
}

// BenchmarkKernelRDMAChunk measures the pipelined path at 1 and 16 MiB
// with several chunk sizes (Options.ChunkSize, both ends), each over its
// own connection: the figures DefaultChunkSize was chosen from.
func BenchmarkKernelRDMAChunk(b *testing.B) {
	a, z := newNodes(b, sim.Gaudi2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, mib := range []uint64{1, 16} {
		n := mib << 20
		src, dst := a.alloc(b, n, 9), z.alloc(b, n, 3) // see BenchmarkKernelRDMA
		for _, kib := range []uint32{256, 1024, 4096, 16384} {
			if uint64(kib)<<10 > n {
				continue
			}
			b.Run(fmt.Sprintf("%dMiB/chunk=%dKiB", mib, kib), func(b *testing.B) {
				opts := Options{ChunkSize: kib << 10}
				client, server := connect(b, a, z, opts, opts)
				b.SetBytes(int64(n))
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if sent, recvd := transfer(ctx, client, server, src.All(), dst.All()); sent.err != nil || recvd.err != nil {
						b.Fatalf("send: %v; recv: %v", sent.err, recvd.err)
					}
				}
			})
		}
	}
}
