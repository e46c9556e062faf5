package rdma

import "fmt"

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
	// the smaller of theirs.
	ChunkSize uint32
	// Depth is how many staging buffers each direction has (default 3:
	// triple-buffered; 2 to 64): how many chunks may be between the DMA
	// engines and the wire at once.
	Depth int
}

// DefaultChunkSize is Options.ChunkSize's default. 1 MiB amortises the
// cost of a DMA submission (one CS and its completion) and of a work
// request over enough bytes while three of them keep the working set in
// a few MiB of pinned memory; UCX's rendezvous pipeline uses chunks of
// the same order (its RNDV_FRAG_SIZE for host staging is 512 KiB).
const DefaultChunkSize = 1 << 20

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
