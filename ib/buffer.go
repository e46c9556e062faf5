package ib

import (
	"errors"
	"fmt"
	"sync"

	"github.com/gaudi-go/gaudi/memory"
)

// RegisteredBuffer is a range of a Gaudi device buffer exported as a
// dma-buf and registered with a NIC: it owns both the dma-buf and the
// memory region. It is safe for concurrent use.
type RegisteredBuffer struct {
	mr  *MR
	buf *memory.DMABuf

	mu     sync.Mutex
	closed bool
}

// RegisterBuffer exports length bytes of b starting at off as a dma-buf
// (memory.Buffer.Export: off and length in whole host pages) and registers
// the dma-buf in pd with the NIC's view of the range at its device virtual
// address, so work requests name device memory by its device address. On
// a NIC that cannot register dma-bufs the error matches
// ErrDMABufNotSupported and nothing stays exported.
func RegisterBuffer(pd *PD, b *memory.Buffer, off, length uint64, access Access) (*RegisteredBuffer, error) {
	if b == nil {
		return nil, errors.New("register device buffer: nil buffer")
	}
	d, err := b.Export(off, length, memory.ExportOptions{})
	if err != nil {
		return nil, fmt.Errorf("register device buffer: %w", err)
	}
	mr, err := pd.RegDMABufMR(d.Fd(), 0, length, d.DeviceVA(), access)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("register device buffer: %w", err), d.Close())
	}
	return &RegisteredBuffer{mr: mr, buf: d}, nil
}

// MR returns the memory region.
func (r *RegisteredBuffer) MR() *MR { return r.mr }

// DMABuf returns the exported range.
func (r *RegisteredBuffer) DMABuf() *memory.DMABuf { return r.buf }

// Close deregisters the memory region, then closes the dma-buf. It returns
// the errors of both, joined; closing twice does nothing.
func (r *RegisteredBuffer) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	return errors.Join(r.mr.Close(), r.buf.Close())
}
