package memory

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gaudi-go/gaudi/internal/errclosed"
	"github.com/gaudi-go/gaudi/internal/leak"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// AllocOptions adjust Alloc.
type AllocOptions struct {
	// Contiguous asks for physically contiguous device memory
	// (HL_MEM_CONTIGUOUS).
	Contiguous bool
	// Shared allocates memory other contexts may map (HL_MEM_SHARED).
	Shared bool
	// Hint is a device address to map the buffer at, page aligned; the
	// driver may choose another address unless ForceHint is set, in which
	// case an unusable hint fails the allocation (HL_MEM_FORCE_HINT).
	Hint      uint64
	ForceHint bool
}

// Buffer is device memory (HBM) allocated and mapped into the context's
// device address space. Its address stays valid until Close.
//
// Close unmaps, then frees, in that order. It refuses with ErrInUse while a
// dma-buf exported from the buffer is open, and defers the release while a
// transfer holds the buffer: the transfer's end finishes it, and the
// dma.Engine's Close returns its error.
//
// A Buffer is safe for concurrent use; Close is idempotent. The Manager
// keeps every open Buffer, so only a Manager dropped without Close leaves
// one for the garbage collector, which then reports both (see
// device.SetLeakReporter).
type Buffer struct {
	m      *Manager
	handle uint64 // the driver's handle (Gaudi2); 0 on Gaudi
	va     uint64 // device address: a VA on Gaudi2, a physical address on Gaudi
	size   uint64 // the length the caller asked for: All, Size, I/O and copies end here
	alloc  uint64 // size rounded up to the DRAM page: what the driver allocated and frees

	mu      sync.Mutex
	exports int  // open dma-buf exports
	holds   int  // transfers in flight
	closing bool // Close was called while holds > 0
	closed  bool
	// down is closing || closed, set with them under mu, for isClosed,
	// which a copy calls for each range: a load instead of a critical
	// section (about 20 ns on the test machine; issue 29).
	down atomic.Bool
	// closers run at Close, before its export check (memlink.OnClose).
	closers  map[uint64]func()
	closerID uint64

	leak runtime.Cleanup // reports a Buffer dropped without Close
}

// Alloc allocates size bytes of device memory and maps it. The driver
// allocates whole DRAM pages (on Gaudi2 a page is 768 MiB in the default
// configuration), so the allocation is rounded up internally
// (AllocatedSize), but the buffer is the size bytes asked for: Size, All,
// ranges, ReadAt/WriteAt, copies and Lookup end there. A size of 0, or one
// the rounding would carry past 2^64, is ErrRange.
func (m *Manager) Alloc(size uint64, opts AllocOptions) (*Buffer, error) {
	if size == 0 {
		return nil, fmt.Errorf("allocate device memory: size 0: %w", ErrRange)
	}
	page := m.pageSize()
	if size > math.MaxUint64-(page-1) {
		return nil, fmt.Errorf("allocate device memory: size %#x does not round up to the %#x-byte page: %w", size, page, ErrRange)
	}
	alloc := (size + page - 1) / page * page
	m.mu.RLock()
	closed := m.closed
	m.mu.RUnlock()
	if closed {
		return nil, m.errClosed("allocate device memory")
	}
	b := &Buffer{m: m, size: size, alloc: alloc}
	if m.virtualDRAM {
		if err := b.allocMapped(opts); err != nil {
			return nil, err
		}
	} else if err := b.allocPhysical(); err != nil {
		return nil, err
	}
	b.leak = leak.Track(b, leak.Info{Type: "*memory.Buffer", Device: m.dev.Path(), VA: b.va, Size: b.alloc, FD: -1}, 0)
	m.mu.Lock()
	ok := !m.closed && m.devVA.insert(b.va, b.va+b.alloc, b)
	m.mu.Unlock()
	if !ok {
		b.leak.Stop()
		err := fmt.Errorf("allocate device memory: address %#x overlaps a live buffer or the manager closed", b.va)
		return nil, errors.Join(err, b.release())
	}
	return b, nil
}

// allocMapped does ALLOC then MAP (Gaudi2).
func (b *Buffer) allocMapped(opts AllocOptions) error {
	var a hl.MemArgs
	in := a.In()
	in.Op = hl.HL_MEM_OP_ALLOC
	if opts.Contiguous {
		in.Flags |= hl.HL_MEM_CONTIGUOUS
	}
	if opts.Shared {
		in.Flags |= hl.HL_MEM_SHARED
	}
	in.Alloc().MemSize = b.alloc
	if err := b.m.memory(&a); err != nil {
		return fmt.Errorf("allocate device memory: %w", err)
	}
	b.handle = a.Out().Handle()

	a = hl.MemArgs{}
	in = a.In()
	in.Op = hl.HL_MEM_OP_MAP
	if opts.ForceHint {
		in.Flags |= hl.HL_MEM_FORCE_HINT
	}
	in.MapDevice().Handle = b.handle
	in.MapDevice().HintAddr = opts.Hint
	if err := b.m.memory(&a); err != nil {
		return errors.Join(fmt.Errorf("map device memory: %w", err), b.free())
	}
	b.va = a.Out().DeviceVirtAddr()
	return nil
}

// allocPhysical takes a DRAM range from the library's allocator and has the
// driver account for it (Gaudi).
func (b *Buffer) allocPhysical() error {
	m := b.m
	m.mu.Lock()
	addr, ok := m.phys.alloc(b.alloc, m.pageSize())
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("allocate device memory: %d bytes: %w", b.alloc, ErrNoSpace)
	}
	var a hl.MemArgs
	in := a.In()
	in.Op = hl.HL_MEM_OP_ALLOC
	in.Alloc().MemSize = b.alloc
	if err := m.memory(&a); err != nil {
		m.mu.Lock()
		m.phys.release(addr, b.alloc)
		m.mu.Unlock()
		return fmt.Errorf("allocate device memory: %w", err)
	}
	b.va = addr
	return nil
}

// VA returns the buffer's device address.
func (b *Buffer) VA() uint64 { return b.va }

// Size returns the buffer's length: the size given to Alloc.
func (b *Buffer) Size() uint64 { return b.size }

// AllocatedSize returns how much device memory the buffer takes: Size
// rounded up to the device's DRAM page, as the driver allocates it. The
// bytes past Size are not the buffer's: no range, copy or I/O reaches
// them.
func (b *Buffer) AllocatedSize() uint64 { return b.alloc }

// Handle returns the driver's handle of the allocation (0 on Gaudi, whose
// driver does not allocate DRAM).
func (b *Buffer) Handle() uint64 { return b.handle }

// addHold marks the buffer as used by a transfer, so Close defers its
// release until the matching dropHold. It fails with an error matching
// ErrClosed once Close was called. Package dma reaches it through
// internal/memlink.
func (b *Buffer) addHold() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.closing {
		return errclosed.New("device buffer")
	}
	b.holds++
	return nil
}

// dropHold ends an addHold. The last one finishes a deferred Close and
// returns its error: the Close that deferred the release returned nil.
func (b *Buffer) dropHold() error {
	b.mu.Lock()
	if b.holds == 0 {
		b.mu.Unlock()
		return errNotHeld
	}
	b.holds--
	finish := b.holds == 0 && b.closing
	b.mu.Unlock()
	if finish {
		return b.finishClose()
	}
	return nil
}

// isClosed reports whether Close was called.
func (b *Buffer) isClosed() bool { return b.down.Load() }

// onClose registers f to run when Close is called (memlink.OnClose).
func (b *Buffer) onClose(f func()) (func(), error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.closing {
		return nil, errclosed.New("device buffer")
	}
	if b.closers == nil {
		b.closers = map[uint64]func(){}
	}
	b.closerID++
	id := b.closerID
	b.closers[id] = f
	return func() {
		b.mu.Lock()
		delete(b.closers, id)
		b.mu.Unlock()
	}, nil
}

// Close unmaps and frees the buffer. See Buffer for when it refuses
// (ErrInUse) or defers.
func (b *Buffer) Close() error {
	b.mu.Lock()
	closers := b.closers
	b.closers = nil
	b.mu.Unlock()
	// Outside mu: a closer closes dma-buf exports, which take it.
	for _, f := range closers {
		f()
	}
	b.mu.Lock()
	switch {
	case b.closed || b.closing:
		b.mu.Unlock()
		return nil
	case b.exports > 0:
		n := b.exports
		b.mu.Unlock()
		return fmt.Errorf("close device buffer at %#x: %d dma-buf export(s) open: %w", b.va, n, ErrInUse)
	}
	b.closing = true
	b.down.Store(true)
	b.leak.Stop()
	held := b.holds > 0
	b.mu.Unlock()
	if held {
		return nil
	}
	return b.finishClose()
}

func (b *Buffer) finishClose() error {
	b.m.mu.Lock()
	b.m.devVA.remove(b.va)
	b.m.mu.Unlock()
	err := b.release()
	b.mu.Lock()
	b.closed = true
	b.down.Store(true)
	b.mu.Unlock()
	return err
}

// release gives the memory back to the driver: UNMAP, then FREE.
func (b *Buffer) release() error {
	m := b.m
	if !m.virtualDRAM {
		var a hl.MemArgs
		in := a.In()
		in.Op = hl.HL_MEM_OP_FREE
		// Gaudi's FREE takes the size to un-account in the alloc arm.
		in.Alloc().MemSize = b.alloc
		err := m.releaseCall(&a)
		m.mu.Lock()
		m.phys.release(b.va, b.alloc)
		m.mu.Unlock()
		if err != nil {
			return fmt.Errorf("free device memory: %w", err)
		}
		return nil
	}
	var a hl.MemArgs
	in := a.In()
	in.Op = hl.HL_MEM_OP_UNMAP
	in.Unmap().DeviceVirtAddr = b.va
	uerr := m.releaseCall(&a)
	if uerr != nil {
		uerr = fmt.Errorf("unmap device memory: %w", uerr)
	}
	return errors.Join(uerr, b.free())
}

// free issues FREE for the handle.
func (b *Buffer) free() error {
	var a hl.MemArgs
	in := a.In()
	in.Op = hl.HL_MEM_OP_FREE
	in.Free().Handle = b.handle
	if err := b.m.releaseCall(&a); err != nil {
		return fmt.Errorf("free device memory: %w", err)
	}
	return nil
}
