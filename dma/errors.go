package dma

import (
	"errors"
	"os"
)

// Sentinel errors callers branch on.
var (
	// ErrUnmapped reports an address range no buffer or mapping of the
	// Manager covers entirely.
	ErrUnmapped = errors.New("address range not mapped for the device")
	// ErrAborted reports a CS the driver aborted, typically by a device
	// reset (WAIT_CS status ABORTED, errno EIO).
	ErrAborted = errors.New("command submission aborted")
	// ErrClosed reports a call on a closed Engine or Prepared. It is
	// os.ErrClosed, the sentinel every package of the module uses for
	// closed objects, so a memory buffer closed under a batch matches it
	// too.
	ErrClosed = os.ErrClosed
	// ErrLength reports a copy between ranges of different lengths.
	ErrLength = errors.New("copy ranges differ in length")
	// ErrTooLarge reports a batch that does not fit the driver's limits
	// even when split (it never happens for Copy and Memset).
	ErrTooLarge = errors.New("batch too large")
	// ErrBadOptions reports Options out of range.
	ErrBadOptions = errors.New("invalid dma options")
	// ErrInFlight reports CSs the device never reported done: it kept
	// answering WAIT_CS with errors that say nothing about them. Their
	// memory and command buffers were left allocated rather than released
	// under a DMA engine that may still use them.
	ErrInFlight = errors.New("command submission still in flight")
)
