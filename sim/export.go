package sim

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"

	"golang.org/x/sys/unix"
)

// dma-buf export (HL_MEM_OP_EXPORT_DMABUF_FD).
//
// The driver hands out a dma-buf whose pages are the exported device
// memory. The simulator moves the exported bytes into a memfd of their
// own and makes that memfd the device memory of the range: its pages are
// mapped over the range of the DRAM mapping (MAP_FIXED), after the
// range's current bytes were copied into it. What it hands out depends on
// the host:
//
//   - With /dev/udmabuf (CONFIG_UDMABUF), a real dma-buf that the kernel
//     made of the memfd's pages (UDMABUF_CREATE): DMA_BUF_IOCTL_SYNC works,
//     it can be mmapped, and a kernel importer (an RDMA NIC's
//     REG_DMABUF_MR) sees the device memory. Its pages stay pinned while
//     it lives, so the simulator never punches holes into such a memfd
//     (zeroing writes zeros instead).
//   - Otherwise, or when udmabuf refuses the range (it takes at most 64
//     MiB by default), a new file of the memfd itself, opened write-only
//     so that, as a Gaudi dma-buf, it can be neither mapped nor read (see
//     reopen); a read-only export is a write-only file of an empty,
//     write-sealed witness memfd that stands for the segment
//     (export_witness.go). dma-buf ioctls answer ENOTTY.
//
// ExportKindOf tells the two apart. Either way device accesses and the
// file see the same memory. When the range
// is no longer exported and its memory is freed (FREE, the end of the
// context, or a new export that overlaps it), the bytes go back into the
// DRAM memfd and the DRAM mapping is restored.
//
// The file has no release callback. The simulator counts an export as
// released once no file of its memfd or its witness is open for writing
// in any process (a write lease is granted only then: openProbe), no
// descriptor of this process refers to it (found through /proc/self/fd)
// and no mapping outside the device memory maps it (found through
// /proc/self/maps); it checks when it needs to know: at
// UNMAP of an exported mapping, when the compute file is closed, and when
// a new export overlaps the range.

// export returns a new descriptor of the DRAM runs, in order: a dma-buf
// made by udmabuf when the host has it, else a file of the memfd that
// holds them. The descriptor is opened with O_CLOEXEC and O_NONBLOCK from
// flags, and with flags' access mode (a udmabuf dma-buf is read-write).
// Runs that overlap a live export without being its range are exported
// as a view (export_view.go), returned instead of a segment.
func (m *sparseMem) export(runs []dramRun, flags int) (int, *segment, *view, error) {
	if err := m.ensure(); err != nil {
		return -1, nil, nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return -1, nil, nil, errDRAMClosed
	}
	seg := m.sameRuns(runs)
	if seg == nil {
		shared := m.liveViewOver(runs)
		over := m.overlapping(runs)
		for _, s := range over {
			shared = shared || m.live(s)
		}
		if shared {
			fd, v, err := m.newView(runs, flags)
			return fd, nil, v, err
		}
		for _, s := range over {
			if err := m.unsplice(s); err != nil {
				return -1, nil, nil, err
			}
		}
		var err error
		if seg, err = m.splice(runs); err != nil {
			return -1, nil, nil, err
		}
	}
	fd, err := udmabufExport(seg, flags)
	if err == nil {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, nil, nil, err
		}
		seg.pinned = true
		if len(seg.bufs) >= maxBufs {
			seg.bufs = openFiles(seg.bufs)
		}
		seg.bufs = append(seg.bufs, fileID{st.Dev, st.Ino})
	} else if fd, err = reopen(seg, flags); err != nil {
		return -1, nil, nil, err
	}
	seg.userFD.Store(int64(fd))
	return fd, seg, nil, nil
}

// sameRuns returns the segment of exactly these runs, if any. m.mu must be
// held.
func (m *sparseMem) sameRuns(runs []dramRun) *segment {
	i := sort.Search(len(m.pieces), func(i int) bool { return m.pieces[i].dram >= runs[0].off })
	if i == len(m.pieces) || m.pieces[i].dram != runs[0].off {
		return nil
	}
	s := m.pieces[i].seg
	if len(s.runs) != len(runs) {
		return nil
	}
	for k := range runs {
		if s.runs[k] != runs[k] {
			return nil
		}
	}
	return s
}

// overlapping lists the segments that share bytes with runs. m.mu must be
// held.
func (m *sparseMem) overlapping(runs []dramRun) []*segment {
	var out []*segment
	seen := map[*segment]bool{}
	for _, r := range runs {
		i := sort.Search(len(m.pieces), func(i int) bool { return m.pieces[i].dram+m.pieces[i].n > r.off })
		for ; i < len(m.pieces) && m.pieces[i].dram < r.off+r.n; i++ {
			if s := m.pieces[i].seg; !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// splice moves runs into a new memfd and maps it over them. m.mu must be
// held for writing.
func (m *sparseMem) splice(runs []dramRun) (*segment, error) {
	total := uint64(0)
	for _, r := range runs {
		total += r.n
	}
	// udmabuf wants the memfd sealed against shrinking (and not against
	// writing).
	fd, err := unix.MemfdCreate(exportName, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Ftruncate(fd, int64(total)); err != nil {
		unix.Close(fd)
		return nil, err
	}
	unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW)
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	seg := &segment{fd: fd, probe: openProbe(fd), witness: -1, wprobe: -1, size: total, file: fileID{st.Dev, st.Ino}}
	seg.userFD.Store(-1)
	fileOff := uint64(0)
	for _, r := range runs {
		err := copyData(fd, fileOff, m.fd, r.off, m.bytes(r.off, r.n))
		if err == nil {
			err = m.mapFile(fd, fileOff, r.off, r.n)
		}
		if err != nil {
			// Put back what moved already.
			m.unspliceRuns(seg)
			unix.Close(fd)
			closeProbe(seg)
			return nil, fmt.Errorf("export device memory: %w", err)
		}
		seg.runs = append(seg.runs, r)
		// copyData moved every data page and left holes as holes, so a
		// chunk known full stays full: the marks are by DRAM offset,
		// whichever file holds the bytes.
		punch(m.fd, r.off, r.n)
		fileOff += r.n
	}
	fileOff = 0
	for _, r := range seg.runs {
		m.pieces = append(m.pieces, piece{dram: r.off, n: r.n, seg: seg, segOff: fileOff})
		fileOff += r.n
	}
	sort.Slice(m.pieces, func(i, j int) bool { return m.pieces[i].dram < m.pieces[j].dram })
	return seg, nil
}

// unsplice moves a segment's bytes back into the DRAM memfd, restores the
// DRAM mapping over its runs and closes the segment. m.mu must be held for
// writing.
func (m *sparseMem) unsplice(s *segment) error {
	if err := m.unspliceRuns(s); err != nil {
		return err
	}
	kept := m.pieces[:0]
	for _, p := range m.pieces {
		if p.seg != s {
			kept = append(kept, p)
		}
	}
	m.pieces = kept
	s.closeFiles()
	return nil
}

func (m *sparseMem) unspliceRuns(s *segment) error {
	fileOff := uint64(0)
	for _, r := range s.runs {
		if err := copyData(m.fd, r.off, s.fd, fileOff, m.bytes(r.off, r.n)); err != nil {
			return fmt.Errorf("restore device memory: %w", err)
		}
		if err := m.mapFile(m.fd, r.off, r.off, r.n); err != nil {
			return fmt.Errorf("restore device memory: %w", err)
		}
		fileOff += r.n
	}
	return nil
}

// release moves segments that overlap runs and are no longer exported back
// into the DRAM memfd, after the memory of runs was freed.
func (m *sparseMem) release(runs []dramRun) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.base == nil {
		return
	}
	for _, s := range m.overlapping(runs) {
		if !m.live(s) {
			m.unsplice(s)
		}
	}
}

// releaseAll does release for every segment.
func (m *sparseMem) releaseAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.base == nil {
		return
	}
	for _, s := range m.segments() {
		if !m.live(s) {
			m.unsplice(s)
		}
	}
}

// segmentLive reports whether an export's file is still open.
func (m *sparseMem) segmentLive(s *segment) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.live(s)
}

// live reports whether something in this process still refers to the
// segment's file: a descriptor other than the simulator's, or a mapping
// outside the DRAM mapping. m.mu must be held.
func (m *sparseMem) live(s *segment) bool {
	if s.fd < 0 || m.closed {
		return false
	}
	if s.probe >= 0 && leaseRefused(s.probe) || s.wprobe >= 0 && leaseRefused(s.wprobe) {
		// A file of the memfd, or of its witness, is open for writing
		// somewhere: a descriptor handed out, in this process or
		// another one.
		return true
	}
	if u := int(s.userFD.Load()); u >= 0 && !s.own(u) && isFile(u, s) {
		return true
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		// Without /proc only the descriptor handed out can be checked.
		return false
	}
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil || s.own(n) {
			continue
		}
		if isFile(n, s) {
			s.userFD.Store(int64(n))
			return true
		}
	}
	lo := uint64(uintptr(m.base))
	hi := lo + m.size
	vmas, err := readMaps(procMaps)
	if err != nil {
		return false
	}
	for _, v := range vmas {
		if s.owns(fileID{v.dev, v.inode}) && (v.start < lo || v.end > hi) {
			return true
		}
	}
	return false
}

// maxBufs is how many dma-bufs of one segment are remembered before
// those no longer open are forgotten.
const maxBufs = 32

// openFiles returns the files of ids that a descriptor or a mapping of
// this process still refers to (all of them when /proc cannot be read).
func openFiles(ids []fileID) []fileID {
	seen := map[fileID]bool{}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return ids
	}
	for _, e := range ents {
		var st unix.Stat_t
		if n, err := strconv.Atoi(e.Name()); err == nil && unix.Fstat(n, &st) == nil {
			seen[fileID{st.Dev, st.Ino}] = true
		}
	}
	vmas, err := readMaps(procMaps)
	if err != nil {
		return ids
	}
	for _, v := range vmas {
		seen[fileID{v.dev, v.inode}] = true
	}
	kept := ids[:0]
	for _, id := range ids {
		if seen[id] {
			kept = append(kept, id)
		}
	}
	return kept
}

// isFile reports whether descriptor fd refers to the segment's memfd or
// to one of the dma-bufs made of it.
func isFile(fd int, s *segment) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && s.owns(fileID{st.Dev, st.Ino})
}

// own reports whether fd is one of the simulator's own descriptors of
// the segment: its memfd, its witness or their probes.
func (s *segment) own(fd int) bool {
	return fd == s.fd || fd == s.probe || s.witness >= 0 && (fd == s.witness || fd == s.wprobe)
}

// owns reports whether id is the segment's memfd, its witness or one of
// its dma-bufs. The caller holds the memory's mu.
func (s *segment) owns(id fileID) bool {
	if id == s.file || s.witness >= 0 && id == s.witnessID {
		return true
	}
	for _, b := range s.bufs {
		if id == b {
			return true
		}
	}
	return false
}

// reopen opens a new file of the segment's memfd for a writable export,
// as dma_buf_fd gives a new descriptor, with O_CLOEXEC and O_NONBLOCK
// from flags; a read-only export is a file of the segment's witness
// (witnessFile). The CPU cannot map or read a Gaudi dma-buf
// (habanalabs_dmabuf_ops has no mmap, and dma-buf files no read), so the
// file is opened write-only: its mmap fails (EACCES; the kernel's
// dma_buf_mmap_internal answers EINVAL) as does read (EBADF). A
// write-only file counts as a writer of the memfd, so the write lease
// test (live) sees it wherever it goes. m.mu must be held for writing.
func reopen(s *segment, flags int) (int, error) {
	if flags&unix.O_ACCMODE == unix.O_RDONLY {
		return witnessFile(s, flags)
	}
	return openAgain(s.fd, flags&(unix.O_CLOEXEC|unix.O_NONBLOCK)|unix.O_WRONLY)
}

// openAgain opens a new file of what descriptor fd refers to, through
// /proc/self/fd; without /proc it duplicates fd (the same file, and its
// access mode).
func openAgain(fd, oflags int) (int, error) {
	nfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), oflags, 0)
	if err == nil {
		return nfd, nil
	}
	if errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE) {
		return -1, err
	}
	cmd := unix.F_DUPFD
	if oflags&unix.O_CLOEXEC != 0 {
		cmd = unix.F_DUPFD_CLOEXEC
	}
	return unix.FcntlInt(uintptr(fd), cmd, 0)
}

// openProbe opens the memfd once more for writing, for leaseRefused to
// tell whether any other file of it is open for writing, in any process:
// the kernel grants a write lease only to the one writer of an inode
// (check_conflicting_open in fs/locks.c). Whether the memfd's own file
// counts as a writer depends on the kernel, so the probe is kept only if
// the lease is granted now, with no descriptor handed out yet; else -1,
// and only this process's descriptors and mappings are looked at.
func openProbe(fd int) int {
	p, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	if tryLease(p) != nil {
		unix.Close(p)
		return -1
	}
	return p
}

// leaseRefused takes and drops a write lease on the probe and reports
// whether the kernel refused it: another file of the memfd is open for
// writing. (A lease break while the lease is held would send this process
// SIGIO, which the Go runtime ignores; the lease is dropped at once.)
func leaseRefused(probe int) bool {
	return errors.Is(tryLease(probe), unix.EAGAIN)
}

// tryLease takes and drops a write lease on fd.
func tryLease(fd int) error {
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_WRLCK); err != nil {
		return err
	}
	_, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK)
	return err
}

// closeProbe closes the segment's probe.
func closeProbe(s *segment) {
	if s.probe >= 0 {
		unix.Close(s.probe)
		s.probe = -1
	}
}
