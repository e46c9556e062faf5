package sim

import (
	"encoding/binary"
	"fmt"
	"os"
	"sort"
	"sync"
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
// that was present (at most the first 1 GiB of a mapping). The first
// access of each CS to the mapping compares: a range no longer mapped, a
// file mapping replaced by another file, another part of the file or
// anonymous memory (or the reverse), and an anonymous page now backed by
// another frame or discarded (MADV_DONTNEED) are recorded as
// ViolationHostReplaced. A page absent at MAP (the simulator does not
// fault pages in as the pin does) is recorded when a check first finds it
// present.
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
}

// identPiece is the part of a VMA inside the pinned range.
type identPiece struct {
	start, end uint64
	dev, inode uint64 // 0 for anonymous memory
	fileOff    uint64 // file offset of start
}

// newHostIdent records the identity of [start, end), page aligned, from
// the mappings pinCheck read.
func newHostIdent(vmas []vma, start, end uint64) *hostIdent {
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
		if err := readPagemap(start, h.pfns); err != nil {
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

// check compares the range with its identity at MAP; it returns what
// changed, or "".
func (h *hostIdent) check() string {
	vmas, err := readMaps()
	if err != nil {
		return ""
	}
	i := 0
	for _, p := range h.pieces {
		for pos := p.start; pos < p.end; {
			for i < len(vmas) && vmas[i].end <= pos {
				i++
			}
			if i == len(vmas) || vmas[i].start > pos {
				return fmt.Sprintf("the memory at %#x was unmapped", pos)
			}
			v := vmas[i]
			switch {
			case v.inode != p.inode || v.dev != p.dev:
				return fmt.Sprintf("the memory at %#x, %s at MAP, is now %s", pos, p.describe(), describeVMA(v))
			case p.inode != 0 && v.offset+(pos-v.start) != p.fileOff+(pos-p.start):
				return fmt.Sprintf("the memory at %#x now maps offset %#x of its file, %#x at MAP", pos, v.offset+(pos-v.start), p.fileOff+(pos-p.start))
			}
			pos = min(v.end, p.end)
		}
	}
	return h.checkFrames()
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
func (h *hostIdent) checkFrames() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pfns == nil {
		return ""
	}
	now := make([]uint64, len(h.pfns))
	if err := readPagemap(h.start, now); err != nil {
		return ""
	}
	for i, was := range h.pfns {
		addr := h.start + uint64(i)*hostPageSize
		e := now[i]
		switch {
		case was == 0:
			if h.anonAt(addr) {
				h.pfns[i] = ownFrame(e)
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

// strictHost checks, once per CS, that a host mapping the job reaches is
// still the memory MAP pinned.
func (x *execEnv) strictHost(m *mapping) {
	h := m.ident
	if h == nil {
		return
	}
	s := x.cs
	s.hostMu.Lock()
	for _, c := range s.hostChecked {
		if c == m {
			s.hostMu.Unlock()
			return
		}
	}
	s.hostChecked = append(s.hostChecked, m)
	s.hostMu.Unlock()
	why := h.check()
	if why == "" {
		return
	}
	x.goneSeen = true // one report per job
	x.violate(ViolationHostReplaced, m.va, fmt.Sprintf("CS %d on queue %d reached the host mapping at %#x of [%#x, +%#x): %s since MAP; on hardware the device goes on using the pages pinned at MAP, which the process no longer sees there",
		s.seq, x.q.id, m.va, m.hostAddr, m.hostSize, why))
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
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 8*len(entries))
	if _, err := f.ReadAt(buf, int64(addr/hostPageSize*8)); err != nil {
		return err
	}
	for i := range entries {
		entries[i] = binary.NativeEndian.Uint64(buf[8*i:])
	}
	return nil
}
