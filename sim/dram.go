package sim

import (
	"fmt"
	"sync"
)

// chunkSize is the granularity of simulated device memory: a chunk exists
// only once something was written into it.
const chunkSize = 1 << 20

// sparseMem is byte-addressed device memory of a fixed size that holds only
// the chunks that were written. Reads of unwritten bytes return zeros. It is
// safe for concurrent use.
type sparseMem struct {
	size uint64

	mu     sync.RWMutex
	chunks map[uint64]*[chunkSize]byte
}

func newSparseMem(size uint64) *sparseMem {
	return &sparseMem{size: size, chunks: map[uint64]*[chunkSize]byte{}}
}

func (m *sparseMem) check(off uint64, n int) error {
	if n < 0 || off > m.size || uint64(n) > m.size-off {
		return fmt.Errorf("device memory access [%#x, +%#x) outside %#x bytes", off, n, m.size)
	}
	return nil
}

// ReadAt copies len(p) bytes at off into p.
func (m *sparseMem) ReadAt(p []byte, off uint64) error {
	if err := m.check(off, len(p)); err != nil {
		return err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	for len(p) > 0 {
		idx, in := off/chunkSize, off%chunkSize
		n := min(uint64(len(p)), chunkSize-in)
		if c := m.chunks[idx]; c != nil {
			copy(p[:n], c[in:in+n])
		} else {
			clear(p[:n])
		}
		p, off = p[n:], off+n
	}
	return nil
}

// WriteAt copies p into memory at off.
func (m *sparseMem) WriteAt(p []byte, off uint64) error {
	if err := m.check(off, len(p)); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for len(p) > 0 {
		idx, in := off/chunkSize, off%chunkSize
		n := min(uint64(len(p)), chunkSize-in)
		c := m.chunks[idx]
		if c == nil {
			c = new([chunkSize]byte)
			m.chunks[idx] = c
		}
		copy(c[in:in+n], p[:n])
		p, off = p[n:], off+n
	}
	return nil
}

// Resident returns how many bytes of backing memory the chunks use.
func (m *sparseMem) Resident() uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return uint64(len(m.chunks)) * chunkSize
}

// Reset forgets every chunk, as a hard reset that scrubs memory does.
func (m *sparseMem) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.chunks)
}
