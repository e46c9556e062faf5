package ib

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// ProbeDMABuf reports whether the NIC can register dma-bufs, the way UCX
// and NCCL find out: it allocates a protection domain and registers a
// dma-buf with descriptor -1. A kernel and driver that support dma-buf
// registration get as far as looking the descriptor up and answer EBADF
// (supported); a driver without it answers EOPNOTSUPP, and a kernel
// without the method EPROTONOSUPPORT or ENOTTY (not supported). Any other
// answer is returned as an error, and so are errors of releasing the
// protection domain (and region) the probe made.
func (c *Context) ProbeDMABuf() (ok bool, err error) {
	pd, err := c.AllocPD()
	if err != nil {
		return false, fmt.Errorf("probe dma-buf registration: %w", err)
	}
	defer func() {
		if cerr := pd.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("probe dma-buf registration: %w", cerr))
		}
	}()
	mr, err := pd.RegDMABufMR(-1, 0, 4096, 0, AccessLocalWrite)
	if err == nil {
		// Not expected, but it means registration works.
		if err := mr.Close(); err != nil {
			return true, fmt.Errorf("probe dma-buf registration: %w", err)
		}
		return true, nil
	}
	var e *Error
	if !errors.As(err, &e) {
		return false, fmt.Errorf("probe dma-buf registration: %w", err)
	}
	switch e.Errno {
	case unix.EBADF:
		return true, nil
	case unix.EOPNOTSUPP, unix.EPROTONOSUPPORT, unix.ENOTTY:
		return false, nil
	}
	return false, fmt.Errorf("probe dma-buf registration: %w", err)
}
