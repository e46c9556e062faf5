package sim

import (
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// A read-only export's file (memfd exports, export.go).
//
// export_dmabuf (drivers/accel/habanalabs/common/memory.c) takes a
// reference to the compute file for every dma-buf, read-only or not, and
// hl_release_dmabuf puts it when the dma-buf's last reference goes, in
// whatever process that is; until then hl_device_open answers EBUSY. The
// simulator learns that a memfd export is still open from a write lease
// (openProbe): the kernel refuses one while any other file of the inode
// is open for writing, in any process. A read-only export cannot be a
// writable file of the segment's memfd (it would write device memory)
// nor a readable one (the lease does not see readers, and a Gaudi
// dma-buf cannot be read), so it is a write-only file of the segment's
// witness: a memfd of the export's size that holds no bytes and is
// sealed against writing (write answers EPERM, read EBADF, mmap EACCES).
// The witness's probe tells whether such a file is open anywhere, so a
// read-only export passed to another process keeps the compute file, as
// on the driver, without looking into other processes.
//
// The witness holds no device memory: the simulator finds the segment
// from the witness's identity (witnesses), which only the process that
// exported can do. An export that overlaps a live export without being
// its range is a witness too, of a view (export_view.go). REG_DMABUF_FD of a read-only export in that
// process (an in-process simulator, or the hlsim server, which takes the
// client's descriptor) imports the segment's memory read-only; another
// process's in-process simulator answers EOPNOTSUPP, as for any dma-buf
// it cannot map, and TestHookReadDMABuf cannot read it there.

// witnessName is the name of a witness memfd.
const witnessName = exportName + "-ro"

// witnessed is what a witness stands for: a segment's memory (a
// read-only export) or a view (export_view.go).
type witnessed struct {
	seg *segment
	m   *sparseMem
	v   *view
}

// witnesses maps witnesses to what they stand for, for imports and the
// test hook in the exporting process.
var witnesses = struct {
	sync.Mutex
	m map[fileID]witnessed
}{m: map[fileID]witnessed{}}

// newWitness makes a witness memfd of size bytes, sealed against
// writing, and its lease probe (openProbe).
func newWitness(size uint64) (fd, probe int, id fileID, err error) {
	fd, err = unix.MemfdCreate(witnessName, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return -1, -1, id, err
	}
	var st unix.Stat_t
	if err = unix.Ftruncate(fd, int64(size)); err == nil {
		_, err = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL)
	}
	if err == nil {
		err = unix.Fstat(fd, &st)
	}
	if err != nil {
		unix.Close(fd)
		return -1, -1, id, err
	}
	return fd, openProbe(fd), fileID{st.Dev, st.Ino}, nil
}

// register records what witness id stands for.
func register(id fileID, w witnessed) {
	witnesses.Lock()
	witnesses.m[id] = w
	witnesses.Unlock()
}

// unregister forgets witness id.
func unregister(id fileID) {
	witnesses.Lock()
	delete(witnesses.m, id)
	witnesses.Unlock()
}

// witnessFile returns a new write-only descriptor of the segment's
// witness, made on first use, with O_CLOEXEC and O_NONBLOCK from flags.
// The memory's mu must be held for writing.
func witnessFile(s *segment, flags int) (int, error) {
	if s.witness < 0 {
		fd, probe, id, err := newWitness(s.size)
		if err != nil {
			return -1, err
		}
		s.witness, s.wprobe, s.witnessID = fd, probe, id
		register(id, witnessed{seg: s})
	}
	return openAgain(s.witness, flags&(unix.O_CLOEXEC|unix.O_NONBLOCK)|unix.O_WRONLY)
}

// witnessOf returns what fd stands for when it is a witness of this
// process.
func witnessOf(fd int) (witnessed, bool) {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return witnessed{}, false
	}
	witnesses.Lock()
	defer witnesses.Unlock()
	w, ok := witnesses.m[fileID{st.Dev, st.Ino}]
	return w, ok
}

// isWitness reports whether fd is a witness memfd (of any process).
func isWitness(fd int) bool {
	link, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	return err == nil && isMemfd(link, witnessName)
}

// openSegmentData opens the memory of segment s, whose witness is id,
// read-only; -1 when the witness was forgotten since.
func openSegmentData(id fileID, s *segment) (int, error) {
	witnesses.Lock()
	defer witnesses.Unlock()
	if _, ok := witnesses.m[id]; !ok {
		return -1, unix.EOPNOTSUPP
	}
	// closeFiles forgets the witness before it closes s.fd.
	return unix.Open("/proc/self/fd/"+strconv.Itoa(s.fd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
}

// closeFiles closes the segment's memfd, its witness and their probes.
// The memory's mu must be held for writing.
func (s *segment) closeFiles() {
	if s.witness >= 0 {
		unregister(s.witnessID)
		unix.Close(s.witness)
		s.witness = -1
		if s.wprobe >= 0 {
			unix.Close(s.wprobe)
			s.wprobe = -1
		}
	}
	unix.Close(s.fd)
	s.fd = -1
	closeProbe(s)
}

// readExportData reads len(b) bytes at off of fd, a memfd export: through
// a new file of the memfd, or from what a witness of this process stands
// for. A witness of another process (or one forgotten since) answers
// EOPNOTSUPP.
func readExportData(fd int, off int64, b []byte) (int, error) {
	if !isWitness(fd) {
		r, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return 0, err
		}
		defer unix.Close(r)
		return unix.Pread(r, b, off)
	}
	w, ok := witnessOf(fd)
	switch {
	case !ok:
		return 0, unix.EOPNOTSUPP
	case w.v != nil:
		return w.m.readView(w.v, off, b)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, err
	}
	r, err := openSegmentData(fileID{st.Dev, st.Ino}, w.seg)
	if err != nil {
		return 0, err
	}
	defer unix.Close(r)
	return unix.Pread(r, b, off)
}
