package memory

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gaudi-go/gaudi/internal/errclosed"
	"github.com/gaudi-go/gaudi/internal/leak"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// HostOptions adjust AllocHost.
type HostOptions struct {
	// HugePages asks for 2 MiB pages: hugetlb pages when the system has
	// some reserved, else transparent huge pages (madvise), else normal
	// pages. HostBuffer.HugePages says which was obtained.
	HugePages bool
}

// HostBuffer is host memory mapped into the device's address space, so DMA
// engines can read and write it. Memory from AllocHost lives outside the Go
// heap and is unmapped by Close; memory given to MapHost stays the
// caller's. A dma-buf mapped by Import is a HostBuffer too: the device
// reaches it through the same host address range, over PCIe, but it is
// not this process's memory (Imported is true, Bytes nil).
//
// Close unmaps the memory from the device; it defers that while a transfer
// holds the mapping, so memory is never unmapped under a running DMA. A
// HostBuffer is safe for concurrent use; Close is idempotent. The Manager
// keeps every open HostBuffer, so only a Manager dropped without Close
// leaves one for the garbage collector, which then reports both (see
// device.SetLeakReporter) and unmaps nothing.
type HostBuffer struct {
	m    *Manager
	mem  []byte
	own  bool   // allocated by AllocHost: munmap it after the unmap
	huge string // "hugetlb", "thp" or ""
	va   uint64 // device address of mem[0]
	size uint64
	// imported: a dma-buf mapped by Import, with no host memory (mem nil).
	imported bool

	mu      sync.Mutex
	holds   int
	closing bool
	closed  bool
	cached  bool // owned by the registration cache
	// down is closing || closed, set with them under mu, for isClosed
	// (see Buffer.down).
	down atomic.Bool

	leak runtime.Cleanup // reports a HostBuffer dropped without Close
}

const hugePageSize = 2 << 20

// AllocHost allocates size bytes of page-aligned host memory outside the Go
// heap (mmap), and maps it for the device.
func (m *Manager) AllocHost(size uint64, opts HostOptions) (*HostBuffer, error) {
	if size == 0 || size > 1<<46 {
		return nil, fmt.Errorf("allocate host memory: size %d: %w", size, ErrRange)
	}
	mem, huge, err := mmapHost(size, opts.HugePages)
	if err != nil {
		return nil, fmt.Errorf("allocate host memory: %w", err)
	}
	h, err := m.mapHost(mem, true, true)
	if err != nil {
		if uerr := munmapRange(mem); uerr != nil {
			err = errors.Join(err, fmt.Errorf("free host memory: %w", uerr))
		}
		return nil, err
	}
	h.huge = huge
	return h, nil
}

// mmapHost maps anonymous memory, with huge pages when asked and possible.
// The result's capacity is the whole mapping, for munmapRange.
func mmapHost(size uint64, huge bool) ([]byte, string, error) {
	const prot = unix.PROT_READ | unix.PROT_WRITE
	const flags = unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
	if !huge {
		mem, err := mmapAnon(size, prot, flags)
		return mem, "", err
	}
	n := (size + hugePageSize - 1) / hugePageSize * hugePageSize
	if mem, err := mmapAnon(n, prot, flags|unix.MAP_HUGETLB); err == nil {
		return mem[:size], "hugetlb", nil
	}
	// Transparent huge pages need 2 MiB alignment: map one huge page more
	// and unmap what lies outside an aligned window.
	mem, err := mmapAnon(n+hugePageSize, prot, flags)
	if err != nil {
		return nil, "", err
	}
	off := alignOffset(mem, hugePageSize)
	var errs []error
	if off > 0 {
		errs = append(errs, munmapRange(mem[:off:off]))
	}
	if tail := mem[off+n:]; len(tail) > 0 {
		errs = append(errs, munmapRange(tail))
	}
	mem = mem[off : off+n : off+n]
	if err := errors.Join(errs...); err != nil {
		return nil, "", errors.Join(fmt.Errorf("trim host memory to huge pages: %w", err), munmapRange(mem))
	}
	kind := ""
	if unix.Madvise(mem, unix.MADV_HUGEPAGE) == nil {
		kind = "thp"
	}
	return mem[:size], kind, nil
}

// MapHost maps caller-provided host memory for the device. The memory must
// stay valid and must not move until the HostBuffer is closed, so it must
// not be Go-heap memory (a []byte from make, a string, a stack variable):
// MapHost rejects what it can detect as such with ErrGoHeap. Memory from
// mmap, from AllocHost, or from a C allocator is fine.
func (m *Manager) MapHost(mem []byte) (*HostBuffer, error) {
	if len(mem) == 0 {
		return nil, fmt.Errorf("map host memory: empty: %w", ErrRange)
	}
	if onGoHeap(mem) {
		return nil, fmt.Errorf("map host memory at %#x: %w", addrOf(mem), ErrGoHeap)
	}
	return m.mapHost(mem, false, true)
}

// mapHost issues MAP with HL_MEM_USERPTR and indexes the mapping; track
// attaches the safety net to a mapping the caller owns (not to the
// registration cache's). For memory AllocHost just got from mmap (own),
// cached mappings of the same addresses are stale: their memory was
// unmapped (without InvalidateHost) and the device would use its pinned
// pages, not this memory; they leave the cache first.
func (m *Manager) mapHost(mem []byte, own, track bool) (*HostBuffer, error) {
	m.mu.RLock()
	closed := m.closed
	m.mu.RUnlock()
	if closed {
		return nil, m.errClosed("map host memory")
	}
	if own {
		start := addrOf(mem)
		m.report(m.cache.invalidate(start, start+uint64(cap(mem)), true))
	}
	var a hl.MemMapHostArgs
	a.Op = hl.HL_MEM_OP_MAP
	a.Flags = hl.HL_MEM_USERPTR
	a.HostVirtAddr, a.MemSize = hl.SlicePointer(mem), uint64(len(mem))
	if err := m.io.MapHost(&a); err != nil {
		return nil, fmt.Errorf("map host memory: %w", err)
	}
	h := &HostBuffer{m: m, mem: mem, own: own, va: a.Out().DeviceVirtAddr(), size: uint64(len(mem))}
	host := addrOf(mem)
	if track {
		h.leak = leak.Track(h, leak.Info{Type: "*memory.HostBuffer", Device: m.dev.Path(), VA: h.va, Host: uintptr(host), Size: h.size, FD: -1}, 1)
	}
	m.mu.Lock()
	ok := !m.closed && m.hostVA.insert(h.va, h.va+h.size, h)
	if ok && !m.hostPtr.insert(host, host+h.size, h) {
		m.hostVA.remove(h.va)
		ok = false
	}
	m.mu.Unlock()
	if !ok {
		h.leak.Stop()
		err := fmt.Errorf("map host memory at %#x: the range is already mapped, or the manager closed", host)
		return nil, errors.Join(err, h.unmap())
	}
	return h, nil
}

// Bytes returns the host memory; nil for an imported dma-buf, which the
// CPU does not reach through the mapping.
func (h *HostBuffer) Bytes() []byte { return h.mem }

// VA returns the device address of the first byte.
func (h *HostBuffer) VA() uint64 { return h.va }

// Size returns the mapped length in bytes.
func (h *HostBuffer) Size() uint64 { return h.size }

// HugePages says how the memory of AllocHost is backed: "hugetlb", "thp"
// (transparent huge pages requested) or "" (normal pages).
func (h *HostBuffer) HugePages() string { return h.huge }

// addHold marks the mapping as used by a transfer, so Close defers the
// unmap until the matching dropHold. It fails with an error matching
// ErrClosed once Close was called.
func (h *HostBuffer) addHold() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.closing {
		return errclosed.New("host mapping")
	}
	h.holds++
	return nil
}

// dropHold ends an addHold. The last one finishes a deferred Close and
// returns its error: the Close that deferred the unmap returned nil.
func (h *HostBuffer) dropHold() error {
	h.mu.Lock()
	if h.holds == 0 {
		h.mu.Unlock()
		return errNotHeld
	}
	h.holds--
	finish := h.holds == 0 && h.closing && !h.closed
	h.mu.Unlock()
	if finish {
		return h.release()
	}
	return nil
}

// isClosed reports whether Close was called.
func (h *HostBuffer) isClosed() bool { return h.down.Load() }

// Close unmaps the memory from the device (after running transfers end)
// and, for AllocHost memory, frees it; while a transfer holds the mapping
// it returns nil, and the last Release does the work and returns its
// error. A mapping owned by the registration cache is released by the
// cache instead.
func (h *HostBuffer) Close() error {
	h.mu.Lock()
	if h.closed || h.closing || h.cached {
		h.mu.Unlock()
		return nil
	}
	h.closing = true
	h.down.Store(true)
	h.leak.Stop()
	busy := h.holds > 0
	h.mu.Unlock()
	if busy {
		return nil
	}
	return h.release()
}

// shut is Close for the Manager and the registration cache, which end
// mappings their owners did not close, cached ones included: the unmap
// is deferred while a transfer holds the mapping, like Close's.
func (h *HostBuffer) shut() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closing = true
	h.down.Store(true)
	h.cached = false
	h.leak.Stop()
	busy := h.holds > 0
	h.mu.Unlock()
	if busy {
		return nil
	}
	return h.release()
}

// release removes the mapping from the indexes, unmaps it and frees owned
// memory. It runs once.
func (h *HostBuffer) release() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.down.Store(true)
	h.mu.Unlock()
	m := h.m
	m.mu.Lock()
	m.hostVA.remove(h.va)
	if !h.imported {
		m.hostPtr.remove(addrOf(h.mem))
	}
	m.mu.Unlock()
	err := h.unmap()
	if h.own {
		err = errors.Join(err, munmapRange(h.mem))
	}
	return err
}

func (h *HostBuffer) unmap() error {
	var a hl.MemArgs
	in := a.In()
	in.Op = hl.HL_MEM_OP_UNMAP
	in.Unmap().DeviceVirtAddr = h.va
	if err := h.m.releaseCall(&a); err != nil {
		if h.imported {
			return fmt.Errorf("unmap imported dma-buf: %w", err)
		}
		return fmt.Errorf("unmap host memory: %w", err)
	}
	return nil
}
