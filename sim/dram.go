package sim

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// chunkSize was the granularity of the first, map-based device memory;
// it remains the unit DRAM tests reason in.
const chunkSize = 1 << 20

// probeSpan is the longest range nextData probes page by page rather
// than with one SEEK_HOLE.
const probeSpan = 256 * pageSize

// errDRAMClosed is returned by device memory accesses after System.Close.
var errDRAMClosed = errors.New("simulated device memory was released (System.Close)")

// sparseMem is a device's DRAM: a memfd of the device's DRAM size, mapped
// once (MAP_SHARED|MAP_NORESERVE) at first use. tmpfs files are sparse, so
// only pages that were written take memory; reads of other bytes return
// zeros and do not allocate (ReadAt looks for data with SEEK_DATA and
// SEEK_HOLE instead of touching the mapping). Accesses are plain memory
// copies into and out of the mapping.
//
// Exported ranges (dma-buf exports, see export.go) live in memfds of their
// own: their pages are mapped over the matching part of the DRAM mapping
// with MAP_FIXED, so the device and the holder of the export's file see
// the same bytes. The list of those pieces is the layout; layout changes
// take mu for writing, accesses take it for reading.
//
// Offsets are from the start of the device's DRAM (physical address minus
// dram_base_address). sparseMem is safe for concurrent use.
type sparseMem struct {
	size uint64

	mu     sync.RWMutex
	fd     int            // the DRAM memfd, -1 until first use
	base   unsafe.Pointer // the mapping of all size bytes
	closed bool
	pieces []piece // ranges served by an export's memfd, sorted by dram
	views  []*view // exports that share memory with another (export_view.go)
	full   fullChunks

	// scrubbing, when a test sets it, is called as each scrub begins.
	scrubbing func(runs []dramRun)
}

// piece is a range of DRAM whose pages are those of a segment.
type piece struct {
	dram, n uint64
	seg     *segment
	segOff  uint64
}

// segment is the memfd behind one exported range: its file holds the
// exported bytes in order, and its runs say where each part sits in DRAM.
type segment struct {
	fd    int // the simulator's own descriptor
	probe int // another file of the memfd, for the write lease test (export.go), or -1
	// witness is the memfd read-only exports are files of, its probe
	// wprobe; -1 until the first read-only export (export_witness.go).
	witness, wprobe int
	witnessID       fileID
	size            uint64
	file            fileID
	runs            []dramRun
	userFD          atomic.Int64 // the last descriptor seen referring to it, checked first for liveness
	// pinned is set once udmabuf made a dma-buf of the memfd: the kernel
	// holds its pages, so holes must not be punched (a punched page
	// would leave the dma-buf with the old page). bufs are the dma-bufs
	// made of it. Both change with the memory's mu held for writing.
	pinned bool
	bufs   []fileID
}

// fileID is a file's identity: device and inode.
type fileID struct{ dev, ino uint64 }

// dramRun is a range of DRAM.
type dramRun struct{ off, n uint64 }

func newSparseMem(size uint64) *sparseMem {
	return &sparseMem{size: size, fd: -1, full: newFullChunks(size)}
}

func (m *sparseMem) check(off, n uint64) error {
	if off > m.size || n > m.size-off {
		return fmt.Errorf("device memory access [%#x, +%#x) outside %#x bytes", off, n, m.size)
	}
	return nil
}

// ensure creates and maps the memfd on first use.
func (m *sparseMem) ensure() error {
	m.mu.RLock()
	ready, closed := m.base != nil, m.closed
	m.mu.RUnlock()
	if closed {
		return errDRAMClosed
	}
	if ready {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errDRAMClosed
	}
	if m.base != nil {
		return nil
	}
	fd, err := unix.MemfdCreate("gaudi-sim-dram", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return fmt.Errorf("create device memory: %w", err)
	}
	if err := unix.Ftruncate(fd, int64(m.size)); err != nil {
		unix.Close(fd)
		return fmt.Errorf("size device memory: %w", err)
	}
	// The size never changes; sealing it also keeps the file usable by
	// udmabuf, which insists on F_SEAL_SHRINK.
	unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW)
	p, err := unix.MmapPtr(fd, 0, nil, uintptr(m.size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_NORESERVE)
	if err != nil {
		unix.Close(fd)
		return fmt.Errorf("map device memory: %w", err)
	}
	adviseDRAM(p, m.size) // dram_huge_unsafe.go
	m.fd, m.base = fd, p
	return nil
}

// bytes returns the mapping of [off, off+n). m.mu must be held and the
// memory set up.
func (m *sparseMem) bytes(off, n uint64) []byte {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Add(m.base, off)), n)
}

// span is a part of an access served by one file.
type span struct {
	fd      int
	fileOff uint64
	off, n  uint64 // DRAM range
	pinned  bool   // the file's pages are held by a dma-buf: no hole punching
}

// spans splits [off, off+n) by the file that holds each part. m.mu must
// be held.
func (m *sparseMem) spans(off, n uint64, fn func(s span) error) error {
	end := off + n
	i := sort.Search(len(m.pieces), func(i int) bool { return m.pieces[i].dram+m.pieces[i].n > off })
	for off < end {
		if i < len(m.pieces) && m.pieces[i].dram <= off {
			p := m.pieces[i]
			k := min(end, p.dram+p.n) - off
			if err := fn(span{p.seg.fd, p.segOff + off - p.dram, off, k, p.seg.pinned}); err != nil {
				return err
			}
			off += k
			i++
			continue
		}
		k := end - off
		if i < len(m.pieces) {
			k = min(k, m.pieces[i].dram-off)
		}
		if err := fn(span{fd: m.fd, fileOff: off, off: off, n: k}); err != nil {
			return err
		}
		off += k
	}
	return nil
}

// ReadAt copies len(p) bytes at off into p. Bytes never written read as
// zeros without becoming resident.
func (m *sparseMem) ReadAt(p []byte, off uint64) error {
	if err := m.check(off, uint64(len(p))); err != nil {
		return err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return errDRAMClosed
	}
	if m.base == nil {
		clear(p)
		return nil
	}
	return m.spans(off, uint64(len(p)), func(s span) error {
		dst := p[s.off-off : s.off-off+s.n]
		if m.full.all(s.off, s.n) {
			copy(dst, m.bytes(s.off, s.n))
			return nil
		}
		return readData(dst, s.fd, s.fileOff, m.bytes(s.off, s.n))
	})
}

// readData fills dst from src, the mapping of fd's [fileOff, +len(dst)):
// data extents are copied, holes cleared, so holes stay unallocated.
func readData(dst []byte, fd int, fileOff uint64, src []byte) error {
	n := uint64(len(dst))
	for pos := uint64(0); pos < n; {
		data, hole, err := nextData(fd, fileOff+pos, fileOff+n)
		if err != nil {
			return err
		}
		d, e := data-fileOff, hole-fileOff
		clear(dst[pos:d])
		copy(dst[d:e], src[d:e])
		pos = e
	}
	return nil
}

// WriteAt copies p into memory at off.
func (m *sparseMem) WriteAt(p []byte, off uint64) error {
	if err := m.check(off, uint64(len(p))); err != nil {
		return err
	}
	if len(p) == 0 {
		return nil
	}
	return m.view(off, uint64(len(p)), func(b []byte) error {
		copy(b, p)
		m.full.mark(off, uint64(len(p)))
		return nil
	})
}

// view calls fn with device memory [off, off+n) itself, for DMA: reads and
// writes through b are device memory accesses, b must not be kept after fn
// returns. The layout (exports) cannot change while fn runs, so fn must
// not issue MEMORY operations nor call other methods of m (use Copy for
// DRAM to DRAM). Reading bytes that were never written through b makes
// them resident; use ReadAt to copy out of memory that may be sparse.
func (m *sparseMem) view(off, n uint64, fn func(b []byte) error) error {
	if err := m.check(off, n); err != nil {
		return err
	}
	if err := m.ensure(); err != nil {
		return err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return errDRAMClosed
	}
	return fn(m.bytes(off, n))
}

// Zero clears [off, off+n): whole pages are given back (hole punching),
// the partial pages at the edges are cleared.
func (m *sparseMem) Zero(off, n uint64) error {
	if err := m.check(off, n); err != nil {
		return err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return errDRAMClosed
	}
	if m.base == nil || n == 0 {
		return nil
	}
	return m.zero(off, n)
}

// zero is Zero with m.mu held and the memory set up.
func (m *sparseMem) zero(off, n uint64) error {
	m.full.clear(off, n)
	return m.spans(off, n, func(s span) error {
		lo := (s.fileOff + pageSize - 1) &^ (pageSize - 1)
		hi := (s.fileOff + s.n) &^ (pageSize - 1)
		if lo >= hi || s.pinned {
			clear(m.bytes(s.off, s.n))
			return nil
		}
		clear(m.bytes(s.off, lo-s.fileOff))
		clear(m.bytes(s.off+hi-s.fileOff, s.fileOff+s.n-hi))
		return punch(s.fd, lo, hi-lo)
	})
}

// Copy copies n bytes of device memory from src to dst, front to back as
// a DMA engine streams them (overlapping ranges with dst after src see
// bytes already copied). What was never written in the source stays
// unallocated in the destination.
func (m *sparseMem) Copy(dst, src, n uint64) error {
	if err := m.check(src, n); err != nil {
		return err
	}
	if err := m.check(dst, n); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if err := m.ensure(); err != nil {
		return err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return errDRAMClosed
	}
	return m.spans(src, n, func(s span) error {
		d := dst + (s.off - src)
		pos := uint64(0)
		for pos < s.n {
			data, hole, err := nextData(s.fd, s.fileOff+pos, s.fileOff+s.n)
			if err != nil {
				return err
			}
			if gap := data - s.fileOff - pos; gap > 0 {
				if err := m.zero(d+pos, gap); err != nil {
					return err
				}
				pos += gap
			}
			if k := hole - s.fileOff - pos; k > 0 {
				copy(m.bytes(d+pos, k), m.bytes(s.off+pos, k))
				pos += k
			}
		}
		return nil
	})
}

// nextData finds the first data extent of fd in [from, end): its start
// and end, both end when there is none.
func nextData(fd int, from, end uint64) (data, hole uint64, err error) {
	d, err := unix.Seek(fd, int64(from), unix.SEEK_DATA)
	if errors.Is(err, unix.ENXIO) || (err == nil && uint64(d) >= end) {
		return end, end, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("device memory: %w", err)
	}
	if end-uint64(d) <= probeSpan {
		// SEEK_HOLE walks the page cache from d to the end of the data
		// around it, whatever end is: hundreds of microseconds past a
		// 64 MiB buffer for a copy of 4 KiB. A short range is probed
		// page by page instead (SEEK_DATA at a page that holds data
		// answers at once).
		h := (uint64(d) + pageSize) &^ (pageSize - 1)
		for h < end {
			x, err := unix.Seek(fd, int64(h), unix.SEEK_DATA)
			if err != nil || uint64(x) != h {
				break
			}
			h += pageSize
		}
		return uint64(d), min(h, end), nil
	}
	h, err := unix.Seek(fd, d, unix.SEEK_HOLE)
	if err != nil {
		return 0, 0, fmt.Errorf("device memory: %w", err)
	}
	return uint64(d), min(uint64(h), end), nil
}

func punch(fd int, off, n uint64) error {
	if n == 0 {
		return nil
	}
	if err := unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(off), int64(n)); err != nil {
		return fmt.Errorf("free device memory: %w", err)
	}
	return nil
}

// Resident returns how many bytes of host memory the device memory holds:
// the allocated blocks of the DRAM memfd and of the exports' memfds.
func (m *sparseMem) Resident() uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.base == nil || m.closed {
		return 0
	}
	total := fileBlocks(m.fd)
	for _, s := range m.segments() {
		total += fileBlocks(s.fd)
	}
	return total
}

func fileBlocks(fd int) uint64 {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return 0
	}
	return uint64(st.Blocks) * 512
}

// segments lists the segments of the layout once each. m.mu must be held.
func (m *sparseMem) segments() []*segment {
	var segs []*segment
	seen := map[*segment]bool{}
	for _, p := range m.pieces {
		if !seen[p.seg] {
			seen[p.seg] = true
			segs = append(segs, p.seg)
		}
	}
	return segs
}

// Reset frees every page, as a hard reset that scrubs memory does. Exports
// keep their files, now all zeros.
func (m *sparseMem) Reset() {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.base == nil || m.closed {
		return
	}
	m.full.clear(0, m.size)
	punch(m.fd, 0, m.size)
	for _, s := range m.segments() {
		if !s.pinned {
			punch(s.fd, 0, s.size)
			continue
		}
		for _, r := range s.runs {
			clear(m.bytes(r.off, r.n))
		}
	}
}

// close unmaps the memory and closes every descriptor the simulator holds.
// Files handed out by exports stay valid: they keep their own pages.
// Accesses afterwards fail with errDRAMClosed.
func (m *sparseMem) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.closed = true
	if m.base == nil {
		return
	}
	unix.MunmapPtr(m.base, uintptr(m.size))
	for _, s := range m.segments() {
		s.closeFiles()
	}
	for _, v := range m.views {
		v.close()
	}
	m.views = nil
	unix.Close(m.fd)
	m.base, m.fd, m.pieces = nil, -1, nil
}

// copyData copies the data extents of src (fd's [fileOff, +n), mapped at
// src) into dst at dstOff with pwrite, leaving holes as holes.
func copyData(dst int, dstOff uint64, fd int, fileOff uint64, src []byte) error {
	n := uint64(len(src))
	for pos := uint64(0); pos < n; {
		data, hole, err := nextData(fd, fileOff+pos, fileOff+n)
		if err != nil {
			return err
		}
		d, e := data-fileOff, hole-fileOff
		if err := pwriteAll(dst, src[d:e], dstOff+d); err != nil {
			return err
		}
		pos = e
	}
	return nil
}

func pwriteAll(fd int, b []byte, off uint64) error {
	for len(b) > 0 {
		k, err := unix.Pwrite(fd, b, int64(off))
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return err
		}
		if k == 0 {
			return io.ErrShortWrite
		}
		b, off = b[k:], off+uint64(k)
	}
	return nil
}

// mapFile maps fd's [fileOff, +n) over DRAM [off, +n). m.mu must be held
// for writing.
func (m *sparseMem) mapFile(fd int, fileOff, off, n uint64) error {
	_, err := unix.MmapPtr(fd, int64(fileOff), unsafe.Add(m.base, off), uintptr(n),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_FIXED|unix.MAP_NORESERVE)
	return err
}
