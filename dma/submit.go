package dma

import (
	"context"
	"time"

	"github.com/gaudi-go/gaudi/uapi/hl"
)

// submit issues one CS whose execute chunks are jobs through issueCS, the
// package's one submission path, and returns its sequence number.
// The chunks go into chunks when it has room for them, and the arguments
// into a, which must stay alive and in place until the device is done:
// both are a Transfer's, or allocated.
func (e *Engine) submit(ctx context.Context, jobs []*job, timeout time.Duration, chunks []hl.CSChunk, a *hl.CSChunksArgs) (seq uint64, queued bool, err error) {
	chunks = e.chunksFor(jobs, chunks)
	*a = hl.CSChunksArgs{}
	e.fillCS(a, chunks, timeout)
	return e.issueCS(ctx, a)
}

// chunksFor returns the execute chunks of jobs: one per command buffer, in
// into when it is long enough.
func (e *Engine) chunksFor(jobs []*job, into []hl.CSChunk) []hl.CSChunk {
	chunks := into
	if len(chunks) != len(jobs) {
		chunks = make([]hl.CSChunk, len(jobs))
	}
	for i, j := range jobs {
		c := &chunks[i]
		*c = hl.CSChunk{}
		c.QueueIndex = j.queue
		c.SetCBHandle(j.cb.handle)
		c.SetCBSize(uint32(len(j.buf)))
		if e.q.userCB {
			c.CSChunkFlags = hl.HL_CS_CHUNK_FLAGS_USER_ALLOC_CB
		}
	}
	return chunks
}

// fillCS sets the CS arguments for an execute-chunk array; timeout, when
// not 0, overrides the Engine's.
func (e *Engine) fillCS(in *hl.CSChunksArgs, chunks []hl.CSChunk, timeout time.Duration) {
	in.ChunksExecute = hl.SlicePointer(chunks)
	in.NumChunksExecute = uint32(len(chunks))
	if e.opts.Timestamps {
		in.CSFlags |= hl.HL_CS_FLAGS_TIMESTAMP
	}
	if timeout == 0 {
		timeout = e.opts.Timeout
	}
	if timeout > 0 {
		in.CSFlags |= hl.HL_CS_FLAGS_CUSTOM_TIMEOUT
		in.Timeout = uint32((timeout + time.Second - 1) / time.Second)
	}
}
