package rdma

import (
	"bytes"
	"testing"

	"github.com/gaudi-go/gaudi/sim"
)

// TestShortTransferSplit: with the default chunk, a transfer shorter than
// splitPieces chunks goes in chunks of its own, of at least 1 MiB, on
// both ends (transferChunk), so that its copies overlap the wire, and its
// bytes arrive. Before, a 4 MiB transfer on 4 MiB chunks went in one
// chunk: staged, sent and copied in one after the other.
func TestShortTransferSplit(t *testing.T) {
	a, z := newNodes(t, sim.Gaudi2)
	opts := Options{Path: PathPipelined}
	_, client, server := fakePair(t, a, z, opts, opts)
	const m = 1 << 20
	src, dst := a.alloc(t, 16*m, 21), z.alloc(t, 16*m, 0)
	for _, tc := range []struct {
		n      uint64
		chunks int
	}{
		{1 * m, 1},
		{1*m + 4096, 2},
		{3 * m, 3},
		{4 * m, 4},
		{6*m + 4096, 4}, // 1600 KiB chunks, the last 1.3 MiB
		{64 << 10, 1},
		{16 * m, 4},
		{16*m - 4096, 4}, // 4 MiB less 1 KiB a piece, rounded up to 4 MiB
	} {
		sent, recvd := transfer(timeout(t), client, server, src.All().Slice(0, tc.n), dst.All().Slice(0, tc.n))
		if sent.err != nil || recvd.err != nil {
			t.Fatalf("%d bytes: send: %v; recv: %v", tc.n, sent.err, recvd.err)
		}
		if sent.res.Chunks != tc.chunks || recvd.res.Chunks != tc.chunks {
			t.Errorf("%d bytes went in %d chunks (the receiver counted %d), want %d", tc.n, sent.res.Chunks, recvd.res.Chunks, tc.chunks)
		}
		if !bytes.Equal(z.read(t, dst.All().Slice(0, tc.n)), pattern(16*m, 21)[:tc.n]) {
			t.Errorf("%d bytes: the received bytes differ from the sent ones", tc.n)
		}
	}
}
