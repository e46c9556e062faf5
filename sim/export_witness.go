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
// from the witness's identity (witnessSegments), which only the process
// that exported can do. REG_DMABUF_FD of a read-only export in that
// process (an in-process simulator, or the hlsim server, which takes the
// client's descriptor) imports the segment's memory read-only; another
// process's in-process simulator answers EOPNOTSUPP, as for any dma-buf
// it cannot map, and TestHookReadDMABuf cannot read it there.

// witnessName is the name of a witness memfd.
const witnessName = exportName + "-ro"

// witnessSegments maps witnesses to their segments, for imports and the
// test hook in the exporting process.
var witnessSegments = struct {
	sync.Mutex
	m map[fileID]*segment
}{m: map[fileID]*segment{}}

// witnessFile returns a new write-only descriptor of the segment's
// witness, made on first use, with O_CLOEXEC and O_NONBLOCK from flags.
// The memory's mu must be held for writing.
func witnessFile(s *segment, flags int) (int, error) {
	if s.witness < 0 {
		fd, err := unix.MemfdCreate(witnessName, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
		if err != nil {
			return -1, err
		}
		var st unix.Stat_t
		if err = unix.Ftruncate(fd, int64(s.size)); err == nil {
			_, err = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL)
		}
		if err == nil {
			err = unix.Fstat(fd, &st)
		}
		if err != nil {
			unix.Close(fd)
			return -1, err
		}
		s.witness, s.witnessID = fd, fileID{st.Dev, st.Ino}
		s.wprobe = openProbe(fd)
		witnessSegments.Lock()
		witnessSegments.m[s.witnessID] = s
		witnessSegments.Unlock()
	}
	return openAgain(s.witness, flags&(unix.O_CLOEXEC|unix.O_NONBLOCK)|unix.O_WRONLY)
}

// openWitnessed opens the memory of the segment whose witness is id
// read-only, or returns -1 when id is no witness of this process.
func openWitnessed(id fileID) (int, error) {
	witnessSegments.Lock()
	defer witnessSegments.Unlock()
	s := witnessSegments.m[id]
	if s == nil {
		return -1, nil
	}
	// closeFiles forgets the witness before it closes s.fd.
	return unix.Open("/proc/self/fd/"+strconv.Itoa(s.fd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
}

// closeFiles closes the segment's memfd, its witness and their probes.
// The memory's mu must be held for writing.
func (s *segment) closeFiles() {
	if s.witness >= 0 {
		witnessSegments.Lock()
		delete(witnessSegments.m, s.witnessID)
		witnessSegments.Unlock()
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

// openExportData opens the device memory of fd, a memfd export, read-only:
// a new file of the memfd itself, or of the segment a read-only export's
// witness stands for. A witness of another process (or of a segment gone
// back into DRAM) answers EOPNOTSUPP.
func openExportData(fd int) (int, error) {
	link, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return -1, err
	}
	if !isMemfd(link, witnessName) {
		return unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return -1, err
	}
	r, err := openWitnessed(fileID{st.Dev, st.Ino})
	if err == nil && r < 0 {
		err = unix.EOPNOTSUPP
	}
	return r, err
}
