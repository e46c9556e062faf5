package main

import (
	"path/filepath"
	"strconv"
	"syscall"
	"unsafe"

	"github.com/gaudi-go/gaudi/internal/hlsimproto"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Served dma-bufs.
//
// The driver's dma-buf (export_dmabuf, drivers/accel/habanalabs/common/
// memory.c) holds the compute file until its last reference goes
// (hl_release_dmabuf), in any process; it has no mmap (dma_buf_mmap_internal
// in drivers/dma-buf/dma-buf.c answers EINVAL without the exporter's mmap
// op) and, like every dma-buf, no read or write (vfs_read and vfs_write
// answer EINVAL for a file without them). The simulator's export is a
// file of a memfd in the server: handed out as is, it would take writes
// (and a read-only one, an O_PATH file, would not be seen by the
// simulator once in another process). So the server keeps the export and
// hands out a file of a node of its own instead (hlsim/dmabuf/N), opened
// by the server itself for that export: reads and writes answer EINVAL, and its
// RELEASE, which the kernel sends once the last descriptor of it is
// closed wherever it went, closes the export, which then stops holding
// the compute file. A shared mapping answers ENODEV (a direct I/O file
// on a mount without FUSE_DIRECT_IO_ALLOW_MMAP, fuse_file_mmap in
// fs/fuse/file.c), a private one succeeds and faults on access (SIGBUS):
// FUSE has no mmap request through which the server could answer EINVAL.

// dmabufDir is the directory of the served dma-bufs, relative to the
// mount point: hlsim/dmabuf/N is the N-th export's node, an inode of its
// own (its size is the export's, as fstat and SEEK_END tell of a dma-buf)
// that exists from the export until its RELEASE, opened once, by the
// server, and never listed.
const dmabufDir = "hlsim/dmabuf"

// dmabufIno is the first inode number of the served dma-bufs, far above
// the tree's.
const dmabufIno = 1 << 40

// maxServedDMABufs bounds the served dma-bufs one process's exports may
// have open at once: each holds a descriptor of the server's, until its
// last reference goes, wherever that is. Beyond it an export answers
// EMFILE, as the driver's dma_buf_fd does for a process whose descriptor
// table is full (get_unused_fd_flags).
var maxServedDMABufs = 4096

// servedDMABuf is a served dma-buf: the export it stands for.
type servedDMABuf struct {
	ino     uint64
	size    uint64
	fd      int  // the server's descriptor of the simulator's export
	pid     int  // the exporting process
	dev     int  // the exporting device
	opened  bool // the server opened its node (wrapExport)
	flushed bool // a descriptor of it was closed (its RELEASE may follow)
	closing bool // its RELEASE came: releaseDMABuf closes fd
}

// wrapExport makes the node of export fd (the server's descriptor the
// simulator returned, which the node takes over) for of's process, opens
// it with the export's access mode and O_NONBLOCK from flags, and returns
// the server's descriptor of that open.
func (s *server) wrapExport(of *openFile, fd, flags int) (int, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	size := uint64(st.Size)
	if size == 0 {
		// A dma-buf (udmabuf) tells its size through SEEK_END.
		if n, err := unix.Seek(fd, 0, unix.SEEK_END); err == nil && n > 0 {
			size = uint64(n)
		}
	}
	s.mu.Lock()
	held := 0
	for _, d := range s.dmabufs {
		if d.pid == of.pid {
			held++
		}
	}
	if held >= maxServedDMABufs {
		s.mu.Unlock()
		unix.Close(fd)
		s.log.Printf("process %d holds %d dma-bufs of this server: its export is refused with EMFILE", of.pid, held)
		return -1, unix.EMFILE
	}
	s.nextDMABuf++
	d := &servedDMABuf{ino: dmabufIno + s.nextDMABuf, size: size, fd: fd, pid: of.pid, dev: of.dev}
	s.dmabufs[d.ino] = d
	s.mu.Unlock()
	name := filepath.Join(s.dir, dmabufDir, strconv.FormatUint(d.ino-dmabufIno, 10))
	y, err := unix.Open(name, flags&(unix.O_ACCMODE|unix.O_NONBLOCK)|unix.O_CLOEXEC, 0)
	if err != nil {
		s.mu.Lock()
		opened := d.opened
		if !opened {
			delete(s.dmabufs, d.ino)
		}
		s.mu.Unlock()
		if !opened {
			unix.Close(fd)
		}
		s.log.Printf("open %s for an export: %v", name, err)
		return -1, unix.ENOMEM
	}
	return y, nil
}

// lookupDMABuf is LOOKUP in the directory of the served dma-bufs.
func (s *server) lookupDMABuf(name string, out *fuse.EntryOut) fuse.Status {
	n, err := strconv.ParseUint(name, 10, 40)
	if err != nil {
		return fuse.ENOENT
	}
	s.mu.Lock()
	d := s.dmabufs[dmabufIno+n]
	s.mu.Unlock()
	if d == nil {
		return fuse.ENOENT
	}
	out.NodeId = d.ino
	out.Generation = 1
	s.fillDMABufAttr(d, &out.Attr)
	return fuse.OK
}

// getattrDMABuf is GETATTR of a served dma-buf, false for another inode.
func (s *server) getattrDMABuf(ino uint64, out *fuse.AttrOut) (fuse.Status, bool) {
	if ino < dmabufIno {
		return 0, false
	}
	s.mu.Lock()
	d := s.dmabufs[ino]
	s.mu.Unlock()
	if d == nil {
		return fuse.ENOENT, true
	}
	out.SetTimeout(entryTimeout)
	s.fillDMABufAttr(d, &out.Attr)
	return fuse.OK, true
}

func (s *server) fillDMABufAttr(d *servedDMABuf, a *fuse.Attr) {
	a.Ino = d.ino
	a.Nlink = 1
	a.Blksize = 4096
	a.Mode = syscall.S_IFREG | 0o600
	a.Size = d.size
	t := uint64(s.start.Unix())
	a.Atime, a.Mtime, a.Ctime = t, t, t
}

// openDMABuf is OPEN of a served dma-buf, false for another inode: only
// the server opens it, once, in wrapExport.
func (s *server) openDMABuf(in *fuse.OpenIn, out *fuse.OpenOut) (fuse.Status, bool) {
	if in.NodeId < dmabufIno {
		return 0, false
	}
	if pid, err := processOf(int(in.Pid)); err != nil || pid != unix.Getpid() {
		return fuse.EACCES, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dmabufs[in.NodeId]
	if d == nil || d.opened {
		return fuse.EACCES, true
	}
	d.opened = true
	out.Fh = d.ino
	out.OpenFlags = fuse.FOPEN_DIRECT_IO
	return fuse.OK, true
}

// dmabuf returns the served dma-buf of open fh, or nil.
func (s *server) dmabuf(fh uint64) *servedDMABuf {
	if fh < dmabufIno {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dmabufs[fh]
}

// flushDMABuf notes a close of a descriptor of open fh, if it is a served
// dma-buf: the export may be released soon (see closing).
func (s *server) flushDMABuf(fh uint64) bool {
	if fh < dmabufIno {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.dmabufs[fh]; d != nil {
		d.flushed = true
	}
	return true
}

// releaseDMABuf is RELEASE of a served dma-buf: its last reference is
// gone, and so is the export. The entry stays, marked closing, until the
// simulator's export is closed, and goes in the same critical section as
// the count of releases moves: an UNMAP or FREE the export refused
// meanwhile then sees a release on the way (exportClosing) and runs
// again once the count moved (afterRelease). Removing the entry before
// the close let such an UNMAP see neither, and fail with EINVAL, about
// once in 250 runs of the examples' served export under load.
func (s *server) releaseDMABuf(fh uint64) bool {
	if fh < dmabufIno {
		return false
	}
	s.mu.Lock()
	d := s.dmabufs[fh]
	if d != nil {
		d.flushed, d.closing = true, true
	}
	s.mu.Unlock()
	if d == nil {
		return true
	}
	if testHookReleasingDMABuf != nil {
		testHookReleasingDMABuf(d)
	}
	unix.Close(d.fd)
	s.mu.Lock()
	delete(s.dmabufs, fh)
	s.releases++
	s.mu.Unlock()
	return true
}

// testHookReleasingDMABuf, when set, runs in releaseDMABuf before the
// simulator's export of d is closed.
var testHookReleasingDMABuf func(d *servedDMABuf)

// dmabufIoctl answers DMABufReadRequest (the simulator's test hook) on a
// served dma-buf; anything else is ENOTTY, as a dma-buf answers a request
// it does not know.
func (s *server) dmabufIoctl(d *servedDMABuf, in *fuse.IoctlIn, inbuf, outbuf []byte) int32 {
	if in.Cmd != hlsimproto.DMABufReadRequest {
		return -int32(unix.ENOTTY)
	}
	if len(inbuf) < int(unsafe.Sizeof(hlsimproto.DMABufRead{})) || len(outbuf) < len(inbuf) {
		return -int32(unix.EINVAL)
	}
	copy(outbuf, inbuf)
	r := (*hlsimproto.DMABufRead)(unsafe.Pointer(&outbuf[0]))
	if r.Len > hlsimproto.DMABufReadMax || r.Offset > 1<<62 {
		return -int32(unix.EINVAL)
	}
	n, err := sim.TestHookReadDMABuf(d.fd, int64(r.Offset), r.Data[:r.Len])
	if err != nil {
		return -int32(errnoOf(err))
	}
	r.Len = uint32(n)
	return 0
}

// servedExport returns a new descriptor of the export behind fd, a
// descriptor the server took from a client, when fd is a served dma-buf
// of this server; else -1.
func (s *server) servedExport(fd int) int {
	var st, root unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Ino < dmabufIno || unix.Stat(s.dir, &root) != nil || st.Dev != root.Dev {
		return -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dmabufs[st.Ino]
	if d == nil || d.closing {
		return -1
	}
	own, err := unix.FcntlInt(uintptr(d.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return own
}

// closeDMABufs closes every export, at shutdown.
func (s *server) closeDMABufs() {
	var fds []int
	s.mu.Lock()
	for _, d := range s.dmabufs {
		if !d.closing { // else releaseDMABuf closes it
			fds = append(fds, d.fd)
		}
	}
	s.dmabufs = map[uint64]*servedDMABuf{}
	s.mu.Unlock()
	for _, fd := range fds {
		unix.Close(fd)
	}
}
