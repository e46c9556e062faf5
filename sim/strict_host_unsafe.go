package sim

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Strict mode's check of host memory identity (strict.go).
//
// The driver pins the pages of a host mapping at MAP; the device reads and
// writes those pages until UNMAP, whatever the process does with its
// address space meanwhile. Memory unmapped, mapped again or replaced at
// the same address is therefore not what the device sees: its data goes
// to pages nobody sees. The simulator reaches host memory through the
// caller's addresses, so without a check it would quietly use the new
// memory instead.
//
// In strict mode MAP records what the pinned range was: the mappings
// (VMAs) that covered it, from /proc/self/maps (device and inode of a
// file mapping and the file offset of each address; anonymous memory has
// no such identity), and, where /proc/self/pagemap shows page frame
// numbers (with CAP_SYS_ADMIN), the frame of each page of anonymous memory
// that was present, for mappings of up to 1 GiB. The pages a CS's DMA
// reaches are compared, once per CS: a range no longer mapped, a file
// mapping replaced by another file, another part of the file or anonymous
// memory (or the reverse), and an anonymous page now backed by another
// frame or discarded (MADV_DONTNEED) are recorded as
// ViolationHostReplaced. A page absent at MAP (the simulator does not
// fault pages in as the pin does) is recorded when a check first finds it
// present. Mappings are looked up with PROCMAP_QUERY (Linux 6.11), or in
// /proc/self/maps before it.
//
// Limits. Without page frame numbers, anonymous memory unmapped and
// mapped again at the same address (or replaced with MAP_FIXED, or
// discarded) is not told from the original: only hugetlb and shared
// anonymous memory, which the kernel backs with a file of their own, and
// file mappings keep an identity. A page the kernel migrates (compaction,
// khugepaged) or swaps would be reported too, since the simulator cannot
// pin pages as the driver does; the test suite has not met it.

// maxIdentPages bounds the page frames a mapping's identity records.
const maxIdentPages = 1 << 18

// hostIdent is what the pages of a host mapping were at MAP.
type hostIdent struct {
	start, end uint64       // the pinned pages
	pieces     []identPiece // the mappings that covered them, in order

	mu   sync.Mutex
	pfns []uint64 // per page of anonymous memory: its own frame (ownFrame), 0 when not known; nil without frames
	now  []uint64 // the entries a check reads, kept for the next
}

// identPiece is the part of a VMA inside the pinned range.
type identPiece struct {
	start, end uint64
	dev, inode uint64 // 0 for anonymous memory
	fileOff    uint64 // file offset of start
}

// newHostIdent records the identity of [start, end), page aligned, from
// the mappings pinCheck read.
func newHostIdent(pf *procFiles, vmas []vma, start, end uint64) *hostIdent {
	if vmas == nil {
		return nil
	}
	h := &hostIdent{start: start, end: end}
	anon := false
	for _, v := range vmas {
		lo, hi := max(v.start, start), min(v.end, end)
		if lo >= hi {
			continue
		}
		h.pieces = append(h.pieces, identPiece{start: lo, end: hi, dev: v.dev, inode: v.inode, fileOff: v.offset + lo - v.start})
		anon = anon || v.inode == 0
	}
	if anon && pagemapFrames() && (end-start)/hostPageSize <= maxIdentPages {
		h.pfns = make([]uint64, (end-start)/hostPageSize)
		if err := pf.pagemap(start, h.pfns); err != nil {
			h.pfns = nil
		}
		for i, e := range h.pfns {
			h.pfns[i] = 0
			if h.anonAt(start + uint64(i)*hostPageSize) {
				h.pfns[i] = ownFrame(e)
			}
		}
	}
	return h
}

// anonAt reports whether the page at addr was anonymous memory at MAP.
func (h *hostIdent) anonAt(addr uint64) bool {
	i := sort.Search(len(h.pieces), func(i int) bool { return h.pieces[i].end > addr })
	return i < len(h.pieces) && h.pieces[i].start <= addr && h.pieces[i].inode == 0
}

// check compares the pages of [lo, hi), inside the pinned range, with
// their identity at MAP; it returns what changed, or "" (also when it
// cannot tell).
func (h *hostIdent) check(pf *procFiles, lo, hi uint64) string {
	pf.mu.Lock()
	defer pf.mu.Unlock()
	find, err := pf.finder()
	if err != nil {
		return ""
	}
	for _, p := range h.pieces {
		for pos := max(p.start, lo); pos < min(p.end, hi); {
			v, ok, err := find(pos)
			switch {
			case err != nil:
				return ""
			case !ok:
				return fmt.Sprintf("the memory at %#x was unmapped", pos)
			case v.inode != p.inode || v.dev != p.dev:
				return fmt.Sprintf("the memory at %#x, %s at MAP, is now %s", pos, p.describe(), describeVMA(v))
			case p.inode != 0 && v.offset+(pos-v.start) != p.fileOff+(pos-p.start):
				return fmt.Sprintf("the memory at %#x now maps offset %#x of its file, %#x at MAP", pos, v.offset+(pos-v.start), p.fileOff+(pos-p.start))
			}
			pos = min(v.end, p.end)
		}
	}
	return h.checkFrames(pf, lo, hi)
}

// procFiles are the /proc files the identity checks read, kept open
// while a compute context of the device lives (opening them costs more
// than the reads): /proc/self/maps for PROCMAP_QUERY and
// /proc/self/pagemap. -1 is a file not open.
type procFiles struct {
	mu     sync.Mutex
	maps   int
	frames int // /proc/self/pagemap
}

func newProcFiles() procFiles { return procFiles{maps: -1, frames: -1} }

// close closes the files; the next check opens them again.
func (pf *procFiles) close() {
	pf.mu.Lock()
	defer pf.mu.Unlock()
	for _, fd := range []*int{&pf.maps, &pf.frames} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

// finder returns a lookup of the mapping that holds an address: by
// PROCMAP_QUERY where the kernel has it, else over one reading of
// /proc/self/maps (for addresses in rising order). pf.mu must be held.
func (pf *procFiles) finder() (find func(addr uint64) (vma, bool, error), err error) {
	if pf.maps < 0 && procMaps == "/proc/self/maps" { // not a test's fake
		if q, err := openVMAQuery(); err == nil {
			pf.maps = q.fd
		}
	}
	if pf.maps >= 0 && !noProcmapQuery.Load() {
		return vmaQuery{pf.maps}.query, nil
	}
	vmas, err := readMaps(procMaps)
	if err != nil {
		return nil, err
	}
	i := 0
	return func(addr uint64) (vma, bool, error) {
		for i < len(vmas) && vmas[i].end <= addr {
			i++
		}
		if i < len(vmas) && vmas[i].start <= addr {
			return vmas[i], true, nil
		}
		return vma{}, false, nil
	}, nil
}

// pagemapLocked reads the pagemap entry of each page from addr. pf.mu
// must be held.
func (pf *procFiles) pagemapLocked(addr uint64, entries []uint64) error {
	if pf.frames < 0 {
		fd, err := unix.Open("/proc/self/pagemap", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		pf.frames = fd
	}
	return readPagemapFD(pf.frames, addr, entries)
}

// pagemap is pagemapLocked taking pf.mu.
func (pf *procFiles) pagemap(addr uint64, entries []uint64) error {
	pf.mu.Lock()
	defer pf.mu.Unlock()
	return pf.pagemapLocked(addr, entries)
}

func (p identPiece) describe() string {
	if p.inode == 0 {
		return "anonymous memory"
	}
	return fmt.Sprintf("file %d:%d inode %d", unix.Major(p.dev), unix.Minor(p.dev), p.inode)
}

func describeVMA(v vma) string {
	return identPiece{dev: v.dev, inode: v.inode}.describe()
}

// checkFrames compares the frames of the anonymous pages with those at
// MAP, recording frames of pages that were absent then.
func (h *hostIdent) checkFrames(pf *procFiles, lo, hi uint64) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pfns == nil {
		return ""
	}
	first := (lo - h.start) / hostPageSize
	pfns := h.pfns[first : (hi-h.start)/hostPageSize]
	if cap(h.now) < len(pfns) {
		h.now = make([]uint64, len(pfns))
	}
	now := h.now[:len(pfns)]
	if err := pf.pagemapLocked(lo, now); err != nil {
		return ""
	}
	for i, was := range pfns {
		addr := lo + uint64(i)*hostPageSize
		e := now[i]
		switch {
		case was == 0:
			if h.anonAt(addr) {
				pfns[i] = ownFrame(e)
			}
		case e&pmPresent != 0 && e&pmFrame == was:
		case e&pmSwapped != 0:
			// Swapped out: the simulator cannot pin pages as the driver
			// does, so it cannot tell.
		case e&pmPresent == 0:
			return fmt.Sprintf("the page at %#x, frame %#x at MAP, was discarded (munmap and mmap, MADV_DONTNEED)", addr, was)
		default:
			return fmt.Sprintf("the page at %#x is now frame %#x, frame %#x at MAP (unmapped and mapped again?)", addr, e&pmFrame, was)
		}
	}
	return ""
}

// hostSpan is host memory of a mapping a CS checked.
type hostSpan struct {
	m      *mapping
	lo, hi uint64
}

// strictHost checks that the pages of host mapping m that an access of n
// bytes at device address va reaches are still the memory MAP pinned,
// once per CS: the parts of the mapping its jobs checked before are not
// read again.
func (x *execEnv) strictHost(m *mapping, va, n uint64) {
	h := m.ident
	if h == nil {
		return
	}
	host := m.hostBase() + (va - m.vaStart)
	lo := max(host&^(hostPageSize-1), h.start)
	hi := min((host+n+hostPageSize-1)&^(hostPageSize-1), h.end)
	if lo >= hi {
		return
	}
	s := x.cs
	s.hostMu.Lock()
	merged := false
	for i := range s.hostChecked {
		c := &s.hostChecked[i]
		if c.m != m {
			continue
		}
		if c.lo <= lo && hi <= c.hi {
			s.hostMu.Unlock()
			return // checked for this CS
		}
		if c.lo <= hi && lo <= c.hi { // overlapping or adjacent: grow it
			c.lo, c.hi = min(c.lo, lo), max(c.hi, hi)
			merged = true
			break
		}
	}
	if !merged {
		s.hostChecked = append(s.hostChecked, hostSpan{m, lo, hi})
	}
	s.hostMu.Unlock()
	why := h.check(&x.hw.d.strict.proc, lo, hi)
	if why == "" {
		return
	}
	x.goneSeen = true // one report per job
	x.violate(ViolationHostReplaced, va, fmt.Sprintf("CS %d on queue %d reached the host mapping at %#x of [%#x, +%#x): %s since MAP; on hardware the device goes on using the pages pinned at MAP, which the process no longer sees there",
		s.seq, x.q.id, va, h.start, h.end-h.start, why))
}

// vmaQuery looks mappings up one address at a time with the PROCMAP_QUERY
// ioctl on /proc/self/maps (Linux 6.11), much cheaper than reading the
// whole file; fd is -1 without it.
type vmaQuery struct{ fd int }

// procmapQuery is struct procmap_query (include/uapi/linux/fs.h, Linux
// 6.11).
type procmapQuery struct {
	Size        uint64
	QueryFlags  uint64
	QueryAddr   uint64
	VMAStart    uint64
	VMAEnd      uint64
	VMAFlags    uint64
	VMAPageSize uint64
	VMAOffset   uint64
	Inode       uint64
	DevMajor    uint32
	DevMinor    uint32
	VMANameSize uint32
	BuildIDSize uint32
	VMANameAddr uint64
	BuildIDAddr uint64
}

// procmapQueryReq is PROCMAP_QUERY: _IOWR(PROCFS_IOCTL_MAGIC ('f'), 17,
// struct procmap_query).
const procmapQueryReq = 3<<30 | uint(unsafe.Sizeof(procmapQuery{}))<<16 | 'f'<<8 | 17

// noProcmapQuery is set once the kernel refused PROCMAP_QUERY.
var noProcmapQuery atomic.Bool

// openVMAQuery opens /proc/self/maps for queries; an error means the
// caller reads the file instead.
func openVMAQuery() (vmaQuery, error) { return openVMAQueryAt("/proc/self/maps") }

// openVMAQueryAt opens the maps file at path (/proc/PID/maps) for
// queries, as openVMAQuery.
func openVMAQueryAt(path string) (vmaQuery, error) {
	if noProcmapQuery.Load() {
		return vmaQuery{-1}, unix.ENOTTY
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return vmaQuery{-1}, err
	}
	q := vmaQuery{fd}
	if _, _, err := q.query(uint64(uintptr(unsafe.Pointer(&noProcmapQuery)))); err != nil {
		q.close()
		noProcmapQuery.Store(true) // ENOTTY before Linux 6.11
		return vmaQuery{-1}, err
	}
	return q, nil
}

func (q vmaQuery) close() {
	if q.fd >= 0 {
		unix.Close(q.fd)
	}
}

// query returns the mapping that holds addr; found is false when none
// does.
func (q vmaQuery) query(addr uint64) (v vma, found bool, err error) {
	a := procmapQuery{Size: uint64(unsafe.Sizeof(procmapQuery{})), QueryAddr: addr}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(q.fd), uintptr(procmapQueryReq), uintptr(unsafe.Pointer(&a)))
	switch errno {
	case 0:
	case unix.ENOENT:
		return vma{}, false, nil
	default:
		return vma{}, false, errno
	}
	return vma{
		start:  a.VMAStart,
		end:    a.VMAEnd,
		write:  a.VMAFlags&2 != 0, // PROCMAP_QUERY_VMA_WRITABLE
		shared: a.VMAFlags&8 != 0, // PROCMAP_QUERY_VMA_SHARED
		offset: a.VMAOffset,
		dev:    unix.Mkdev(a.DevMajor, a.DevMinor),
		inode:  a.Inode,
	}, true, nil
}

// Page frame numbers from /proc/self/pagemap: bit 63 present, bit 62
// swapped, bit 56 mapped by this process only, bits 0-54 the frame (zero
// without CAP_SYS_ADMIN, since Linux 4.2;
// Documentation/admin-guide/mm/pagemap.rst).
const (
	pmPresent   = 1 << 63
	pmSwapped   = 1 << 62
	pmExclusive = 1 << 56
	pmFrame     = 1<<55 - 1
)

// ownFrame returns the frame of a page the process has of its own, as a
// pin with FOLL_WRITE leaves it: present and mapped only here. A page
// read but never written maps the shared zero page, which the pin would
// have replaced; that and an absent page give 0, not known yet.
func ownFrame(e uint64) uint64 {
	if e&pmPresent == 0 || e&pmExclusive == 0 {
		return 0
	}
	return e & pmFrame
}

var (
	framesOnce sync.Once
	framesOK   bool
)

// pagemapFrames reports whether /proc/self/pagemap shows page frames to
// this process.
func pagemapFrames() bool {
	framesOnce.Do(func() {
		probe := new([hostPageSize]byte)
		probe[0] = 1
		var e [1]uint64
		addr := uint64(uintptr(unsafe.Pointer(&probe[0])))
		framesOK = readPagemap(addr&^(hostPageSize-1), e[:]) == nil && e[0]&pmFrame != 0
		probe[0] = 2 // keep the page present while it was read
	})
	return framesOK
}

// readPagemap reads the pagemap entry of each page from addr.
func readPagemap(addr uint64, entries []uint64) error {
	fd, err := unix.Open("/proc/self/pagemap", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return readPagemapFD(fd, addr, entries)
}

// readPagemapFD reads entries from the pagemap file fd, into entries' own
// memory.
func readPagemapFD(fd int, addr uint64, entries []uint64) error {
	if len(entries) == 0 {
		return nil
	}
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&entries[0])), 8*len(entries))
	for off := 0; off < len(buf); {
		n, err := unix.Pread(fd, buf[off:], int64(addr/hostPageSize*8)+int64(off))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return unix.EIO
		}
		off += n
	}
	return nil // entries are native-endian u64s already
}
