package dma

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// submit issues one CS whose execute chunks are jobs, retrying EAGAIN (the
// driver leaves the arguments untouched then) with exponential backoff
// within the Engine's retry bound, and returns its sequence number.
func (e *Engine) submit(ctx context.Context, jobs []*job, timeout time.Duration) (uint64, error) {
	chunks := e.chunksFor(jobs)
	a := new(hl.CSChunksArgs)
	e.fillCS(a, chunks, timeout)
	return e.issueCS(ctx, a)
}

// chunksFor returns the execute chunks of jobs: one per command buffer.
func (e *Engine) chunksFor(jobs []*job) []hl.CSChunk {
	chunks := make([]hl.CSChunk, len(jobs))
	for i, j := range jobs {
		c := &chunks[i]
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

// issueCS submits prepared arguments, which hold the chunk array they
// name through a Pointer.
func (e *Engine) issueCS(ctx context.Context, a *hl.CSChunksArgs) (uint64, error) {
	saved := *a
	backoff := 10 * time.Microsecond
	for try := 0; ; try++ {
		err := e.io.CSChunks(a)
		if err == nil {
			out := a.Out()
			if out.Status != hl.HL_CS_STATUS_SUCCESS {
				return 0, fmt.Errorf("submit: status %d", out.Status)
			}
			return out.Seq(), nil
		}
		if !errors.Is(err, unix.EAGAIN) || try >= e.opts.MaxRetries {
			return 0, fmt.Errorf("submit: %w", err)
		}
		*a = saved
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		case <-t.C:
		}
		backoff = min(backoff*2, 10*time.Millisecond)
	}
}
