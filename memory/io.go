package memory

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// Mover moves bytes between device memory and host memory mapped for the
// device. A dma.Engine is one, and attaches itself to the Manager it is
// made with (the first Engine that is still open); a Buffer's ReadAt and
// WriteAt move their bytes through it.
type Mover interface {
	CopyToDevice(ctx context.Context, dst DeviceRange, src HostRange) error
	CopyToHost(ctx context.Context, dst HostRange, src DeviceRange) error
}

// ErrNoMover reports a ReadAt or WriteAt on a Manager that has no DMA
// engine: make one with dma.New.
var ErrNoMover = errors.New("no DMA engine on this memory manager (create one with dma.New)")

// stageSize is the size of the pinned host buffers ReadAt and WriteAt
// stage through, and maxStages how many a Manager keeps.
const (
	stageSize = 4 << 20
	maxStages = 4
)

// ReadAt reads len(p) bytes of the buffer from offset off into p, as
// io.ReaderAt does: it returns io.EOF when the buffer ends first. The bytes
// travel through pooled pinned host memory (the DMA engines cannot reach p,
// which is on the Go heap) with the Manager's DMA engine. It waits without
// a deadline; ReadAtContext takes a context.
func (b *Buffer) ReadAt(p []byte, off int64) (int, error) {
	return b.ReadAtContext(context.Background(), p, off)
}

// WriteAt writes p to the buffer at offset off, as io.WriterAt does; bytes
// that would fall past the buffer's end are not written, and the error
// then matches ErrRange. See ReadAt for how the bytes travel.
func (b *Buffer) WriteAt(p []byte, off int64) (int, error) {
	return b.WriteAtContext(context.Background(), p, off)
}

// ReadAtContext is ReadAt within ctx. When ctx ends, the bytes read so far
// are counted and the transfer in flight finishes in the background.
func (b *Buffer) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read device buffer: offset %d: %w", off, ErrRange)
	}
	if uint64(off) >= b.size {
		if len(p) == 0 && uint64(off) == b.size {
			return 0, nil
		}
		return 0, io.EOF
	}
	want := min(uint64(len(p)), b.size-uint64(off))
	n, err := b.m.stageLoop(want, func(done, k uint64, st *HostBuffer, mv Mover) error {
		if err := mv.CopyToHost(ctx, st.Range(0, k), b.Range(uint64(off)+done, k)); err != nil {
			return err
		}
		copy(p[done:done+k], st.mem[:k])
		return nil
	})
	if err != nil {
		return int(n), fmt.Errorf("read device buffer at %#x: %w", b.va+uint64(off)+n, err)
	}
	if n < uint64(len(p)) {
		return int(n), io.EOF
	}
	return int(n), nil
}

// WriteAtContext is WriteAt within ctx.
func (b *Buffer) WriteAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if off < 0 || uint64(off) > b.size {
		return 0, fmt.Errorf("write device buffer: offset %d of %d bytes: %w", off, b.size, ErrRange)
	}
	want := min(uint64(len(p)), b.size-uint64(off))
	n, err := b.m.stageLoop(want, func(done, k uint64, st *HostBuffer, mv Mover) error {
		copy(st.mem[:k], p[done:done+k])
		return mv.CopyToDevice(ctx, b.Range(uint64(off)+done, k), st.Range(0, k))
	})
	if err != nil {
		return int(n), fmt.Errorf("write device buffer at %#x: %w", b.va+uint64(off)+n, err)
	}
	if n < uint64(len(p)) {
		return int(n), fmt.Errorf("write device buffer: %d bytes at offset %d of %d: %w", len(p), off, b.size, ErrRange)
	}
	return int(n), nil
}

// stageLoop moves want bytes in pieces of at most stageSize through a
// staging buffer with the attached mover, and returns how many moved.
func (m *Manager) stageLoop(want uint64, step func(done, k uint64, st *HostBuffer, mv Mover) error) (uint64, error) {
	if want == 0 {
		return 0, nil
	}
	m.moverMu.Lock()
	mv := m.mover
	m.moverMu.Unlock()
	if mv == nil {
		return 0, ErrNoMover
	}
	st, err := m.getStage()
	if err != nil {
		return 0, err
	}
	var done uint64
	for done < want {
		k := min(want-done, stageSize)
		if err = step(done, k, st, mv); err != nil {
			break
		}
		done += k
	}
	m.putStage(st, err)
	return done, err
}

// getStage returns a pooled staging buffer, or maps a new one.
func (m *Manager) getStage() (*HostBuffer, error) {
	m.moverMu.Lock()
	if n := len(m.stages); n > 0 {
		st := m.stages[n-1]
		m.stages = m.stages[:n-1]
		m.moverMu.Unlock()
		return st, nil
	}
	m.moverMu.Unlock()
	st, err := m.AllocHost(stageSize, HostOptions{})
	if err != nil {
		return nil, fmt.Errorf("staging buffer: %w", err)
	}
	return st, nil
}

// putStage returns a staging buffer to the pool, unless the transfer
// through it failed (it may still be in flight: its hold defers the unmap
// until the device is done) or the pool is full.
func (m *Manager) putStage(st *HostBuffer, failed error) {
	if failed == nil {
		m.moverMu.Lock()
		if len(m.stages) < maxStages {
			m.stages = append(m.stages, st)
			m.moverMu.Unlock()
			return
		}
		m.moverMu.Unlock()
	}
	if err := st.Close(); err != nil {
		m.report(err)
	}
}
