package main

import (
	"errors"
	"fmt"
	"io"
	"log"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gaudi-go/gaudi/sim"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// server serves the devices of a simulated system as a FUSE filesystem
// (tree.go). It speaks go-fuse's raw protocol API (fuse.RawFileSystem):
// the node's OPEN needs the reply's passthrough backing id and EBUSY, its
// IOCTL a reply with the argument also on failure, and neither fits the
// path-based fs API.
type server struct {
	sys  *sim.System
	dir  string
	tree *tree
	// dmabufDir is the directory of the served dma-bufs (dmabuf_unsafe.go).
	dmabufDir *node
	control   []*sim.File // the server's own control file of each device
	log       *log.Logger
	start     time.Time

	fuse.RawFileSystem
	fs *fuse.Server

	mu          sync.Mutex
	files       map[uint64]*openFile
	nextFh      uint64
	releases    uint64            // releases of files so far
	noPassthru  error             // why the kernel refused a passthrough backing file, once it did
	passthrough bool              // a backing file was accepted
	replies     map[uint64]string // the last reply of each open of the control file (ctl.go), by handle
	// dmabufs are the served dma-bufs by inode, which is also the
	// handle of their one open (dmabuf_unsafe.go).
	dmabufs    map[uint64]*servedDMABuf
	nextDMABuf uint64

	// removed is set when the server begins to stop (removal.go): the
	// devices are gone, as after the driver's removal of a device.
	removed atomic.Bool
}

// openFile is a client's open of a device node.
type openFile struct {
	f        *sim.File
	dev      int
	ctl      bool
	pid      int          // the process the file serves (the opener's thread group), for messages and kcmp
	pidfd    int          // pidfd of the opener, taken at open: signals and descriptor fetches
	backing  int32        // passthrough backing id, 0 for none
	flushed  bool         // a FLUSH came: the client closed a descriptor of it
	hello    bool         // the client said Hello (internal/hlsimproto)
	killed   bool         // its process was sent SIGKILL
	orphaned bool         // its opener's address space went away and its work was aborted (orphan.go)
	exports  map[int]bool // the server's descriptors of dma-bufs the client has yet to take
}

// releaseGrace is how long an open waits for the release of the device's
// previous compute file when that file's descriptor was closed already:
// the kernel sends RELEASE after close(2) returned, so a client that
// closes and opens again at once would otherwise meet EBUSY. It bounds the
// wait for a release that never comes (the opener closed one descriptor of
// the file and keeps another).
const releaseGrace = time.Second

// entryTimeout is how long the kernel may cache names and attributes:
// the tree never changes.
const entryTimeout = time.Hour

func newServer(sys *sim.System, dir string, logw io.Writer) (*server, error) {
	s := &server{
		sys:           sys,
		dir:           dir,
		log:           log.New(logw, "hlsim: ", 0),
		start:         time.Now(),
		RawFileSystem: fuse.NewDefaultRawFileSystem(),
		files:         map[uint64]*openFile{},
		nextFh:        1,
		replies:       map[uint64]string{},
		dmabufs:       map[uint64]*servedDMABuf{},
	}
	for _, d := range sys.Devices() {
		f, err := d.OpenControl()
		if err != nil {
			s.closeControl()
			return nil, fmt.Errorf("open control node of %s: %w", d.Name(), err)
		}
		s.control = append(s.control, f)
	}
	s.tree = buildTree(s)
	return s, nil
}

func (s *server) closeControl() {
	for _, f := range s.control {
		f.Close()
	}
	s.control = nil
}

// String implements fuse.RawFileSystem.
func (s *server) String() string { return "hlsim" }

// Init implements fuse.RawFileSystem.
func (s *server) Init(fs *fuse.Server) { s.fs = fs }

func (s *server) fillAttr(n *node, a *fuse.Attr) {
	a.Ino = n.ino
	a.Nlink = 1
	a.Blksize = 4096
	t := uint64(s.start.Unix())
	a.Atime, a.Mtime, a.Ctime = t, t, t
	switch n.kind {
	case kindDir:
		a.Mode = syscall.S_IFDIR | n.perm
		a.Nlink = 2
	case kindLink:
		a.Mode = syscall.S_IFLNK | n.perm
		a.Size = uint64(len(n.target))
	case kindAttr:
		a.Mode = syscall.S_IFREG | n.perm
		a.Size = 4096 // as sysfs reports its attributes
	case kindDev:
		a.Mode = syscall.S_IFREG | n.perm
	}
}

func (s *server) fillEntry(n *node, out *fuse.EntryOut) {
	out.NodeId = n.ino
	out.Generation = 1
	out.SetEntryTimeout(entryTimeout)
	out.SetAttrTimeout(entryTimeout)
	s.fillAttr(n, &out.Attr)
}

// Lookup implements fuse.RawFileSystem.
func (s *server) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	p := s.tree.get(h.NodeId)
	if p == nil || p.kind != kindDir {
		return fuse.ENOTDIR
	}
	if p.kind == kindDir && p == s.dmabufDir {
		return s.lookupDMABuf(name, out)
	}
	n := p.byName[name]
	if n == nil {
		return fuse.ENOENT
	}
	s.fillEntry(n, out)
	return fuse.OK
}

// GetAttr implements fuse.RawFileSystem.
func (s *server) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	if st, ok := s.getattrDMABuf(in.NodeId, out); ok {
		return st
	}
	n := s.tree.get(in.NodeId)
	if n == nil {
		return fuse.ENOENT
	}
	out.SetTimeout(entryTimeout)
	s.fillAttr(n, &out.Attr)
	return fuse.OK
}

// Readlink implements fuse.RawFileSystem.
func (s *server) Readlink(cancel <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	n := s.tree.get(h.NodeId)
	if n == nil || n.kind != kindLink {
		return nil, fuse.EINVAL
	}
	if n.resolve != nil {
		target, err := n.resolve(h.Caller.Pid)
		if err != nil {
			return nil, fuse.Status(errnoOf(err))
		}
		return []byte(target), fuse.OK
	}
	return []byte(n.target), fuse.OK
}

// OpenDir implements fuse.RawFileSystem.
func (s *server) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	n := s.tree.get(in.NodeId)
	if n == nil || n.kind != kindDir {
		return fuse.ENOTDIR
	}
	return fuse.OK
}

// ReadDir implements fuse.RawFileSystem.
func (s *server) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	n := s.tree.get(in.NodeId)
	if n == nil || n.kind != kindDir {
		return fuse.ENOTDIR
	}
	// Offsets: 0 and 1 are "." and "..", 2+i the i-th child.
	for off := in.Offset; off < uint64(len(n.kids))+2; off++ {
		e := fuse.DirEntry{Name: ".", Mode: syscall.S_IFDIR, Ino: n.ino, Off: off + 1}
		switch {
		case off == 1:
			e.Name = ".."
		case off >= 2:
			k := n.kids[off-2]
			var a fuse.Attr
			s.fillAttr(k, &a)
			e = fuse.DirEntry{Name: k.name, Mode: a.Mode, Ino: k.ino, Off: off + 1}
		}
		if !out.AddDirEntry(e) {
			break
		}
	}
	return fuse.OK
}

// ReleaseDir implements fuse.RawFileSystem.
func (s *server) ReleaseDir(in *fuse.ReleaseIn) {}

// StatFs implements fuse.RawFileSystem.
func (s *server) StatFs(cancel <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	out.Bsize = 4096
	out.NameLen = 255
	return fuse.OK
}

// Open implements fuse.RawFileSystem: attributes are read each time
// (direct I/O, no page cache); device nodes open the device.
func (s *server) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if s.removed.Load() {
		return fuse.Status(unix.ENODEV) // removal.go
	}
	if st, ok := s.openDMABuf(in, out); ok {
		return st
	}
	n := s.tree.get(in.NodeId)
	switch {
	case n == nil:
		return fuse.ENOENT
	case n.kind == kindAttr && n.exchange != nil:
		// Each open of the control file has its own reply.
		s.mu.Lock()
		out.Fh = s.nextFh
		s.nextFh++
		s.replies[out.Fh] = ""
		s.mu.Unlock()
		out.OpenFlags = fuse.FOPEN_DIRECT_IO
		return fuse.OK
	case n.kind == kindAttr:
		if in.Flags&syscall.O_ACCMODE != syscall.O_RDONLY && n.write == nil ||
			in.Flags&syscall.O_ACCMODE != syscall.O_WRONLY && n.read == nil {
			return fuse.EACCES
		}
		out.OpenFlags = fuse.FOPEN_DIRECT_IO
		return fuse.OK
	case n.kind != kindDev:
		return fuse.EISDIR
	}
	pid, err := processOf(int(in.Pid))
	if err != nil {
		s.log.Printf("open %s: %v", s.name(n), err)
		return fuse.Status(unix.ESRCH)
	}
	// The file is bound to the opener, not its number: a pidfd for
	// signals and descriptor fetches, and its address space as it is now
	// (sim.OpenFor holds /proc/PID/mem). The opener must be the caller's
	// own (credentials) and still the caller's process once both are
	// held (inAddressSpace: a pid is not reused while the pidfd's process
	// lives unreaped).
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		s.log.Printf("open %s: pidfd of process %d: %v", s.name(n), pid, err)
		return fuse.Status(unix.ESRCH)
	}
	if !ownedBy(pid, in.Uid) {
		unix.Close(pidfd)
		s.log.Printf("open %s: process %d is not uid %d's: refused with EPERM", s.name(n), pid, in.Uid)
		return fuse.EPERM
	}
	of := &openFile{dev: n.dev, ctl: n.ctl, pid: pid, pidfd: pidfd}
	if n.ctl {
		of.f, err = s.sys.Device(n.dev).OpenControlFor(pid)
	} else {
		of.f, err = s.openCompute(n.dev, pid)
	}
	if err != nil {
		unix.Close(pidfd)
		return fuse.Status(errnoOf(err))
	}
	if !inAddressSpace(of, int(in.Pid)) {
		of.f.Close()
		unix.Close(pidfd)
		s.log.Printf("open %s: process %d changed while it was opened: refused with ESRCH", s.name(n), pid)
		return fuse.Status(unix.ESRCH)
	}
	if n.ctl {
		// No mmap on the control node: the kernel answers ENODEV for a
		// direct I/O file.
		out.OpenFlags = fuse.FOPEN_DIRECT_IO
	} else if id, err := s.backing(of.f); err == nil {
		// Mappings of the node are mappings of the file's memory file.
		of.backing = id
		out.OpenFlags = fuse.FOPEN_PASSTHROUGH
		out.BackingID = id
	} else {
		out.OpenFlags = fuse.FOPEN_DIRECT_IO
	}
	s.mu.Lock()
	fh := s.nextFh
	s.nextFh++
	s.files[fh] = of
	s.mu.Unlock()
	out.Fh = fh
	return fuse.OK
}

// openCompute opens device dev's compute node for process pid. EBUSY while
// a file this server handed out holds it and a descriptor of that file was
// closed is retried until the file's RELEASE arrives (releaseGrace).
func (s *server) openCompute(dev, pid int) (*sim.File, error) {
	deadline := time.Now().Add(releaseGrace)
	for {
		s.mu.Lock()
		gen := s.releases
		s.mu.Unlock()
		f, err := s.sys.Device(dev).OpenFor(pid)
		if !errors.Is(err, unix.EBUSY) {
			return f, err
		}
		s.mu.Lock()
		// A release that ended since the attempt may have freed it.
		again := s.releases != gen
		s.mu.Unlock()
		if !again && !s.closing(dev) {
			return f, err
		}
		if time.Now().After(deadline) {
			s.log.Printf("open of %s: EBUSY: the file that holds it was closed but not released within %v", s.sys.Device(dev).Name(), releaseGrace)
			return f, err
		}
		if !again {
			time.Sleep(time.Millisecond)
		}
	}
}

// closing reports whether the open compute file of device dev, or a
// dma-buf exported from it, is one whose descriptor was closed (its
// RELEASE may be on the way).
func (s *server) closing(dev int) bool {
	s.mu.Lock()
	for _, of := range s.files {
		if of.dev == dev && !of.ctl && of.flushed {
			s.mu.Unlock()
			return true
		}
	}
	s.mu.Unlock()
	return s.exportClosing(dev) // release_wait_unsafe.go
}

// backing registers f's memory file as the passthrough backing file of an
// open, so that the client's mmap of the node maps it (Linux 6.9 and
// later, CONFIG_FUSE_PASSTHROUGH, CAP_SYS_ADMIN). Without it the node
// cannot be mapped.
func (s *server) backing(f *sim.File) (int32, error) {
	s.mu.Lock()
	if err := s.noPassthru; err != nil {
		s.mu.Unlock()
		return 0, err
	}
	s.mu.Unlock()
	id, errno := s.fs.RegisterBackingFd(&fuse.BackingMap{Fd: int32(f.MmapFile())})
	if errno != 0 {
		err := fmt.Errorf("the kernel refused a passthrough backing file (%w): mmap of the nodes is not available (it needs Linux 6.9 or later with CONFIG_FUSE_PASSTHROUGH, and CAP_SYS_ADMIN)", errno)
		s.mu.Lock()
		if s.noPassthru == nil {
			s.noPassthru = err
			s.log.Print(err)
		}
		s.mu.Unlock()
		return 0, err
	}
	s.mu.Lock()
	s.passthrough = true
	s.mu.Unlock()
	return id, nil
}

// Write implements fuse.RawFileSystem: a write to a control attribute is
// a command (ctl.go).
func (s *server) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	n := s.tree.get(in.NodeId)
	if n != nil && n.exchange != nil {
		reply, err := n.exchange(strings.TrimSpace(string(data)))
		if err != nil {
			reply = "error: " + err.Error()
		} else if reply != "" {
			reply = "ok\n" + reply
		} else {
			reply = "ok"
		}
		s.mu.Lock()
		if _, open := s.replies[in.Fh]; open {
			s.replies[in.Fh] = reply + "\n"
		}
		s.mu.Unlock()
		if err != nil {
			return 0, fuse.EINVAL
		}
		return uint32(len(data)), fuse.OK
	}
	if s.dmabuf(in.Fh) != nil {
		// A dma-buf has no write (vfs_write: EINVAL).
		return 0, fuse.EINVAL
	}
	if n == nil || n.kind != kindAttr || n.write == nil {
		return 0, fuse.EACCES
	}
	if err := n.write(strings.TrimSpace(string(data))); err != nil {
		s.log.Printf("%v", err)
		return 0, fuse.EINVAL
	}
	return uint32(len(data)), fuse.OK
}

// SetAttr implements fuse.RawFileSystem: truncation of an attribute, as a
// shell's ">" asks, does nothing.
func (s *server) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	n := s.tree.get(in.NodeId)
	if n == nil {
		return fuse.ENOENT
	}
	if n.kind != kindAttr || n.write == nil {
		return fuse.EPERM
	}
	out.SetTimeout(entryTimeout)
	s.fillAttr(n, &out.Attr)
	return fuse.OK
}

// Read implements fuse.RawFileSystem: attributes give their text; the
// device nodes, like the driver's, and the dma-bufs cannot be read
// (EINVAL).
func (s *server) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	n := s.tree.get(in.NodeId)
	var v []byte
	switch {
	case n != nil && n.exchange != nil:
		s.mu.Lock()
		v = []byte(s.replies[in.Fh])
		s.mu.Unlock()
	case n == nil || n.kind != kindAttr || n.read == nil:
		return nil, fuse.EINVAL
	default:
		v = []byte(n.read() + "\n")
	}
	if in.Offset >= uint64(len(v)) {
		return fuse.ReadResultData(nil), fuse.OK
	}
	// At most the size asked for, as sysfs answers any read size: a reply
	// longer than the request is an error the kernel turns into EIO.
	end := min(uint64(len(v)), in.Offset+uint64(in.Size))
	return fuse.ReadResultData(v[in.Offset:end]), fuse.OK
}

// Flush implements fuse.RawFileSystem: a descriptor of the open file was
// closed, by the process that opened it or another that shares it.
func (s *server) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	if s.flushDMABuf(in.Fh) {
		return fuse.OK
	}
	s.mu.Lock()
	of := s.files[in.Fh]
	s.mu.Unlock()
	if of == nil {
		return fuse.OK
	}
	// A child that inherited the descriptor and runs another program
	// closes its copy too; only the opener's close says the file may go.
	// Not kcmp (inAddressSpace): a FLUSH comes from close-on-exec in
	// the middle of an exec, which holds the exec_update_lock kcmp takes
	// (fs/exec.c begin_new_exec, kernel/kcmp.c kcmp_lock) until the
	// FLUSH is answered. Flush reaches no memory; the thread group
	// and the bound address space still living is enough to tell the
	// opener's close.
	if pid, err := processOf(int(in.Pid)); err != nil || pid != of.pid || of.f.AddressSpaceGone() {
		return fuse.OK
	}
	s.mu.Lock()
	of.flushed = true
	s.mu.Unlock()
	return fuse.OK
}

// Fsync implements fuse.RawFileSystem: msync of a mapping of the node.
func (s *server) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status { return fuse.OK }

// Release implements fuse.RawFileSystem: the last descriptor and mapping
// of an open are gone, so is the file.
func (s *server) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	if s.releaseDMABuf(in.Fh) {
		return
	}
	s.mu.Lock()
	delete(s.replies, in.Fh)
	of := s.files[in.Fh]
	s.mu.Unlock()
	if of == nil {
		return
	}
	// Exports the client never took go first: they would keep the
	// context. The entry stays until the file is closed, so that an open
	// meanwhile waits for it (closing).
	s.mu.Lock()
	for fd := range of.exports {
		unix.Close(fd)
	}
	of.exports = nil
	s.mu.Unlock()
	of.f.Close()
	unix.Close(of.pidfd)
	if of.backing != 0 {
		s.fs.UnregisterBackingFd(of.backing)
	}
	s.mu.Lock()
	delete(s.files, in.Fh)
	s.releases++
	s.mu.Unlock()
}

// Ioctl implements fuse.RawFileSystem.
func (s *server) Ioctl(cancel <-chan struct{}, in *fuse.IoctlIn, inbuf []byte, out *fuse.IoctlOut, outbuf []byte) fuse.Status {
	if d := s.dmabuf(in.Fh); d != nil {
		out.Result = s.dmabufIoctl(d, in, inbuf, outbuf)
		return fuse.OK
	}
	if s.removed.Load() {
		out.Result = -int32(unix.ENODEV) // removal.go
		return fuse.OK
	}
	s.mu.Lock()
	of := s.files[in.Fh]
	s.mu.Unlock()
	if of == nil {
		return fuse.Status(unix.ENOTTY)
	}
	if !inAddressSpace(of, int(in.Pid)) {
		// The file reaches the address space of the process that opened
		// it (see inAddressSpace); a descriptor inherited or passed to
		// another process, or kept across exec, would read and write
		// memory that is not the caller's.
		s.log.Printf("ioctl %#x on %s from thread %d, which did not open it (it is not in the address space process %d opened it from; that address space gone: %v): refused with EPERM", in.Cmd, of.f.Name(), in.Pid, of.pid, of.f.AddressSpaceGone())
		return fuse.EPERM
	}
	out.Result = s.serveIoctl(of, in.Cmd, inbuf, outbuf, cancel)
	if of.f.Killed() {
		s.kill(of)
	}
	return fuse.OK
}

// kill ends the process that holds a compute file a hard reset killed, as
// the driver does (device_kill_open_processes sends SIGKILL); the
// simulator only marks the file dead.
func (s *server) kill(of *openFile) {
	s.mu.Lock()
	done := of.killed
	of.killed = true
	s.mu.Unlock()
	if done {
		return
	}
	if of.f.AddressSpaceGone() {
		// The pidfd's process, if it lives, runs another program that
		// never opened the device (orphan.go).
		s.log.Printf("a hard reset of %s would kill process %d, which opened its compute node, but that process's address space went away (exec or exit): no signal", s.sys.Device(of.dev).Name(), of.pid)
		return
	}
	s.log.Printf("a hard reset of %s kills process %d, which holds its compute node", s.sys.Device(of.dev).Name(), of.pid)
	// Through the pidfd: the opener, never a process that took its pid.
	if err := unix.PidfdSendSignal(of.pidfd, unix.SIGKILL, nil, 0); err != nil {
		s.log.Printf("kill process %d: %v", of.pid, err)
	}
}

// reap kills the holders of files hard resets killed since it last
// looked; it runs every interval until stop is closed.
func (s *server) reap(interval time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		s.abortOrphans()
		s.mu.Lock()
		var dead []*openFile
		for _, of := range s.files {
			if !of.ctl && !of.killed && of.f.Killed() {
				dead = append(dead, of)
			}
		}
		s.mu.Unlock()
		for _, of := range dead {
			s.kill(of)
		}
	}
}

// name returns the path of n below the mount point, for messages.
func (s *server) name(n *node) string {
	if n.kind == kindDev {
		if n.ctl {
			return fmt.Sprintf("dev/accel/accel_controlD%d", n.dev)
		}
		return fmt.Sprintf("dev/accel/accel%d", n.dev)
	}
	return n.name
}

// processOf returns the thread group of thread tid (FUSE names the caller
// by thread; see tgid).
func processOf(tid int) (int, error) {
	if tid <= 0 {
		return 0, fmt.Errorf("request from a process outside the server's pid namespace")
	}
	return tgid(tid)
}

// closeFiles releases what clients still hold, at shutdown.
func (s *server) closeFiles() {
	s.mu.Lock()
	files := s.files
	s.files = map[uint64]*openFile{}
	s.mu.Unlock()
	for _, of := range files {
		for fd := range of.exports {
			unix.Close(fd)
		}
		of.f.Close()
		unix.Close(of.pidfd)
	}
	s.closeDMABufs()
	s.closeControl()
}

var _ fuse.RawFileSystem = (*server)(nil)
