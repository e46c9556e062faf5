package memory

import (
	"errors"
	"os"
)

// Sentinel errors callers branch on; errors from the driver keep their
// errno as well (errors.Is(err, unix.ENOMEM)).
var (
	// ErrInUse reports that a buffer cannot be released yet: a dma-buf
	// exported from it is still open.
	ErrInUse = errors.New("memory in use")
	// ErrClosed reports a call on a closed Manager, buffer or mapping. It
	// is os.ErrClosed, the sentinel every package of the module uses for
	// closed objects.
	ErrClosed = os.ErrClosed
	// ErrGoHeap reports host memory that belongs to the Go heap: the
	// garbage collector may move or free it, so it must not be given to
	// DMA. Allocate with Manager.AllocHost or mmap instead.
	ErrGoHeap = errors.New("host memory is on the Go heap")
	// ErrRange reports an offset or size outside a buffer, or a size of 0.
	ErrRange = errors.New("range outside the buffer")
	// ErrNotControl reports a control node where a compute node is needed.
	ErrNotControl = errors.New("memory needs a compute node, not a control node")
	// ErrNoSpace reports that the library's own DRAM allocator (Gaudi, where
	// the driver does not allocate DRAM) has no free range large enough.
	ErrNoSpace = errors.New("no free device memory range large enough")
)
