package rdma

import (
	"fmt"
	"time"
)

// Options configure a Conn. The zero value is the defaults.
type Options struct {
	// Path forces a path for this side of every transfer: PathZeroCopy
	// fails a transfer the NIC cannot register device memory for
	// (ErrPathRefused), PathPipelined never tries. PathAuto (zero) tries
	// zero copy and falls back to the pipeline.
	Path Path
	// ChunkSize is the size of one staging buffer, the unit the DMA
	// engines copy and the NIC sends on the pipelined path (default
	// DefaultChunkSize; 4 KiB to 64 MiB). The two ends of a connection use
	// the smaller of theirs. A transfer shorter than four chunks goes in
	// smaller ones, of at least 1 MiB, so that its copies still overlap
	// the wire.
	ChunkSize uint32
	// Depth is how many staging buffers each direction has (default 3:
	// triple-buffered; 2 to 64): how many chunks may be between the DMA
	// engines and the wire at once.
	Depth int
	// KeepAlive is how often a Conn with a transfer in progress probes
	// its peer: a zero-length message the peer's NIC must acknowledge. A
	// peer that vanished without a word (its machine or its link went
	// down) then fails the transfer with ErrPeerGone once the NIC gives
	// up retrying, instead of leaving a Recv waiting for chunks until its
	// context ends. Zero means DefaultKeepAlive; negative turns probes
	// off (as net.Dialer.KeepAlive).
	KeepAlive time.Duration
}

// DefaultKeepAlive is Options.KeepAlive's default: a vanished peer is
// noticed this long plus the NIC's retries (the queue pair's timeout and
// retry count from the RDMA CM) after it went.
const DefaultKeepAlive = 2 * time.Second

// DefaultChunkSize is Options.ChunkSize's default. Every chunk costs a
// DMA submission and its completion on both sides, a work request and a
// credit message; 4 MiB amortises them best of the sizes measured
// (BenchmarkKernelRDMAChunk: in the VM, 16 MiB moved at 29.4 MB/s with
// 4 MiB chunks against 25.1 with 1 MiB, 21.9 with 256 KiB, and 24.9 with
// one 16 MiB chunk, which leaves nothing to overlap), and on a NIC of
// 25 GB/s a chunk still takes under 200 µs on the wire. It costs
// Depth x 4 MiB of pinned host memory per direction and connection (24
// MiB at the default Depth). A shorter transfer is cut into smaller
// chunks (transferChunk).
const DefaultChunkSize = 4 << 20

// A transfer shorter than splitPieces chunks is cut into up to
// splitPieces chunks of its own (whole 64 KiB, at least minSplitChunk) so
// that its copies overlap the wire as a longer transfer's do: a 4 MiB
// transfer on 4 MiB chunks was one chunk, copied out, sent and copied in
// one after the other. Measured in the VM with two CPUs running at once
// (make vmtest's third boot, pipelined against WRITE, three boots each):
// 4 MiB in four 1 MiB chunks 0.92 to 0.94 where one chunk gave 0.81 to
// 0.86; but 1 MiB in four 256 KiB chunks 0.74 to 0.79 where one gave
// 0.84 to 0.85, each chunk's fixed cost (a DMA submission and its
// completion on both sides, a credit) outweighing the overlap; hence the
// 1 MiB floor.
const (
	splitPieces   = 4
	minSplitChunk = 1 << 20
)

// transferChunk is the chunk of a transfer of n bytes on a connection
// whose chunk is chunk (see splitPieces). Both ends compute it from the
// length, which they must agree on: a receiver of another length sees
// chunks of another size, and fails the transfer with ErrLength.
func transferChunk(n uint64, chunk uint32) uint64 {
	c := uint64(chunk)
	if c <= minSplitChunk || n >= splitPieces*c {
		return c
	}
	piece := (n + splitPieces - 1) / splitPieces
	piece = (piece + 64<<10 - 1) &^ (64<<10 - 1)
	return min(c, max(piece, minSplitChunk))
}

// maxChunk bounds ChunkSize: an RDMA message carries at most 2^31 bytes
// (rxe_param.h), and a chunk this large defeats the pipeline anyway.
const maxChunk = 64 << 20

func (o *Options) normalize() error {
	if o.ChunkSize == 0 {
		o.ChunkSize = DefaultChunkSize
	}
	if o.Depth == 0 {
		o.Depth = 3
	}
	if o.KeepAlive == 0 {
		o.KeepAlive = DefaultKeepAlive
	}
	switch {
	case o.Path > PathPipelined:
		return fmt.Errorf("path %v: %w", o.Path, ErrBadOptions)
	case o.ChunkSize < 4096 || o.ChunkSize > maxChunk:
		return fmt.Errorf("chunk size %d outside [4096, %d]: %w", o.ChunkSize, maxChunk, ErrBadOptions)
	case o.Depth < 2 || o.Depth > 64:
		return fmt.Errorf("depth %d outside [2, 64]: %w", o.Depth, ErrBadOptions)
	}
	return nil
}
