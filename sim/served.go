package sim

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Serving a device to other processes.
//
// A server (tools/hlsim) hands the simulated device to programs as a file
// they open and ioctl through the kernel (a FUSE node). The ioctl's
// argument struct reaches the server, but the memory it points to (INFO's
// return buffer, CS chunk arrays, DEBUG's input and output) and the host
// memory MEMORY MAP pins (HL_MEM_USERPTR) stay in the client. A File
// opened with OpenFor therefore works on another process's address space:
// what the in-process simulator reads and writes directly (copyIn, copyOut,
// the engines' host extents) it reads and writes through that process's
// /proc/PID/mem, opened at the open (remoteMem), and host mappings are
// checked against its /proc/PID/maps. Once that address space goes away
// (exec or exit), the file's work is aborted (orphan.go).
//
// Its mmap buffers (command buffers, timestamp buffers) live in one sparse
// memory file at their mmap offsets (MmapFile), which the server gives the
// client to map, so what the client writes into a mapped command buffer is
// what the engines read, with no copy and no system call.

// remoteMem is the address space of a served process, held by an open
// /proc/PID/mem taken when the file was opened, never by its pid: the
// kernel binds that open file to the mm the process had then
// (fs/proc/base.c, mem_open -> proc_mem_open -> mm_access, which keeps a
// reference to the mm_struct), and mem_rw reaches it only while it still
// has users (mmget_not_zero): once the process execs another image or
// exits, every read and write answers 0 bytes, so no access can land in
// the new image (a setuid program, say) or in a process that took the
// pid. An unmapped address answers EIO (access_remote_vm moved nothing).
// The first 0-byte answer marks the address space gone for good.
type remoteMem struct {
	pid  int      // thread group id, for /proc/PID/maps and messages only
	mem  *os.File // /proc/PID/mem of the opener, opened at open time
	gone atomic.Bool
	// onGone runs, once, when an access first finds the address space
	// gone (the file's abort, orphan.go); not on close.
	onGone func()
	maps   string // /proc/PID/maps
	smaps  string // /proc/PID/smaps
}

func newRemoteMem(pid int) (*remoteMem, error) {
	p := "/proc/" + strconv.Itoa(pid)
	mem, err := os.OpenFile(p+"/mem", os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("address space of process %d: %w", pid, err)
	}
	return &remoteMem{pid: pid, mem: mem, maps: p + "/maps", smaps: p + "/smaps"}, nil
}

// Gone reports whether the address space went away (exec or exit).
func (r *remoteMem) Gone() bool {
	if r.gone.Load() {
		return true
	}
	// A 1-byte read at address 0, which nothing maps (mmap_min_addr):
	// EIO while the address space lives, 0 bytes once it is gone.
	var b [1]byte
	if n, err := r.rw(b[:], 0, false); n == 0 && err == nil {
		r.markGone()
	}
	return r.gone.Load()
}

// markGone records that the address space went away, and tells onGone
// the first time.
func (r *remoteMem) markGone() {
	if r.gone.CompareAndSwap(false, true) && r.onGone != nil {
		r.onGone()
	}
}

// close drops the reference to the address space; later accesses fail.
func (r *remoteMem) close() {
	r.gone.Store(true)
	r.mem.Close()
}

// rw reads (or writes, when write is set) the process's memory at addr
// with pread or pwrite on the held /proc/PID/mem. The raw connection's
// Control keeps the descriptor open for the duration of the call, so a
// concurrent close cannot hand its number to another file meanwhile.
func (r *remoteMem) rw(b []byte, addr uint64, write bool) (n int, err error) {
	if addr > math.MaxInt64 || addr+uint64(len(b)) < addr {
		return 0, unix.EFAULT
	}
	rc, err := r.mem.SyscallConn()
	if err != nil {
		return 0, err
	}
	cerr := rc.Control(func(fd uintptr) {
		if write {
			n, err = unix.Pwrite(int(fd), b, int64(addr))
		} else {
			n, err = unix.Pread(int(fd), b, int64(addr))
		}
	})
	if cerr != nil {
		return 0, cerr
	}
	return n, err
}

// access moves len(b) bytes, a pread or pwrite at a time, until done, a
// fault (EIO: unmapped) or the address space is gone (0 bytes).
func (r *remoteMem) access(b []byte, addr uint64, write bool) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	done := 0
	for done < len(b) {
		if r.gone.Load() {
			return done, unix.EFAULT
		}
		n, err := r.rw(b[done:], addr+uint64(done), write)
		if err != nil || n < 0 {
			return done, unix.EFAULT
		}
		if n == 0 {
			r.markGone()
			return done, unix.EFAULT
		}
		done += n
	}
	return done, nil
}

// read copies the process's memory at addr into b. It returns how many
// bytes were read before a fault; err is EFAULT when that is short.
func (r *remoteMem) read(b []byte, addr uint64) (int, error) {
	return r.access(b, addr, false)
}

// write copies b into the process's memory at addr, as read.
func (r *remoteMem) write(b []byte, addr uint64) (int, error) {
	return r.access(b, addr, true)
}

// copyIn reads len(b) bytes of the caller's memory at addr, as
// copy_from_user: the process's own, or the served process's.
func (f *File) copyIn(addr uint64, b []byte) error {
	if f.rem == nil {
		return copyIn(addr, b)
	}
	if len(b) == 0 {
		return nil
	}
	if addr == 0 || addr+uint64(len(b)) < addr {
		return unix.EFAULT
	}
	_, err := f.rem.read(b, addr)
	return err
}

// copyOut writes b to the caller's memory at addr, as copy_to_user.
func (f *File) copyOut(addr uint64, b []byte) error {
	if f.rem == nil {
		return copyOut(addr, b)
	}
	if len(b) == 0 {
		return nil
	}
	if addr == 0 {
		return unix.EFAULT
	}
	_, err := f.rem.write(b, addr)
	return err
}

// pinCheck answers what pinning [addr, addr+size) of the context's
// process would (hostpin.go), and the mappings of this process it read
// (strict mode checks host memory identity in this process only: nil for
// a served process).
func (c *context) pinCheck(addr, size uint64) ([]vma, error) {
	if c.rem == nil {
		return pinCheck(procMaps, procSmaps, addr, size)
	}
	if ok, err := queryPinCheck(c.rem.maps, addr, size); ok {
		return nil, err // hostpin_query_unsafe.go: no read of every mapping
	}
	_, err := pinCheck(c.rem.maps, c.rem.smaps, addr, size)
	return nil, err
}

// OpenFor opens the device's compute node on behalf of process pid (a
// thread group id), for a server that hands the node to that process:
// user pointers in ioctl arguments and host memory given to MEMORY MAP
// are addresses in the address space pid has now, read and written
// through its /proc/PID/mem opened here (remoteMem), which needs the
// server to be allowed to ptrace it (root, or CAP_SYS_PTRACE); an address
// they cannot reach is EFAULT as for the calling process, and so is every
// address once pid execs or exits (AddressSpaceGone). Command buffers and timestamp buffers live in the
// file's memory file (MmapFile). Otherwise it is Open.
func (d *Device) OpenFor(pid int) (*File, error) {
	if pid <= 0 {
		return nil, unix.ESRCH
	}
	rem, err := newRemoteMem(pid)
	if err != nil {
		return nil, err
	}
	fd, err := newMmapFile()
	if err != nil {
		rem.close()
		return nil, err
	}
	f, err := d.Open()
	if err != nil {
		rem.close()
		unix.Close(fd)
		return nil, err
	}
	f.rem = rem
	rem.onGone = f.addressSpaceLost
	f.ctx.rem = f.rem
	f.mm.setFile(fd)
	return f, nil
}

// OpenControlFor opens the device's control node on behalf of process
// pid, as OpenFor does for the compute node: INFO's return buffer is an
// address in pid.
func (d *Device) OpenControlFor(pid int) (*File, error) {
	if pid <= 0 {
		return nil, unix.ESRCH
	}
	rem, err := newRemoteMem(pid)
	if err != nil {
		return nil, err
	}
	f, err := d.OpenControl()
	if err != nil {
		rem.close()
		return nil, err
	}
	f.rem = rem
	return f, nil
}

// Pid returns the process a file opened with OpenFor or OpenControlFor
// serves, or 0 for a file of the calling process.
func (f *File) Pid() int {
	if f.rem == nil {
		return 0
	}
	return f.rem.pid
}

// AddressSpaceGone reports whether the address space a file opened with
// OpenFor or OpenControlFor serves went away: its process ran another
// program (exec) or exited. From then on every access to it fails
// (EFAULT), whatever process now has the pid, and the file's device work
// is aborted, not run (orphan.go): AddressSpaceGone returns once the abort
// is done (AbortedWork says what it aborted). False for a file of the
// calling process.
func (f *File) AddressSpaceGone() bool {
	if !f.gone() {
		return false
	}
	f.abortOrphan()
	return true
}

// MmapFile returns the memory file of a compute file opened with OpenFor,
// or -1. Its bytes at an mmap offset are the buffer mapped there: a
// command buffer's at its handle, a timestamp buffer's at MmapFileOffset
// of its handle; on Gaudi3 a PDMA channel's CH_A registers at its block
// handle from MAP_BLOCK on (pqm.go: the channel runs from then, since the
// client's mapping of the node does not reach the simulator), and the
// sync managers' registers at theirs (sm3.go); other
// offsets read as zeros (the other HW blocks, which the simulator does not
// model). A server lets
// its client map this file where the client maps the node. The descriptor
// belongs to the file and stays open until the file is released; callers
// that keep it longer duplicate it.
func (f *File) MmapFile() int {
	if f.mm == nil {
		return -1
	}
	f.mm.mu.Lock()
	defer f.mm.mu.Unlock()
	return f.mm.file
}

// MmapFileOffset returns where the buffer the driver maps at mmap offset
// off lives in a served file's memory file: off itself, except for
// timestamp buffers, whose type bit (HL_MMAP_TYPE_TS_BUFF, bit 63 of the
// offset) is moved to bit 62, which no buffer type uses. The kernel
// refuses file offsets from 2^63 on in mmap of a regular file (EOVERFLOW,
// file_mmap_ok), which a served node is.
func MmapFileOffset(off uint64) uint64 {
	if off&mmapTSBit != 0 {
		return off&^mmapTSBit | mmapTSAlias
	}
	return off
}

const (
	mmapTSBit   = uint64(mmapTypeTS) << 12 // bit 63
	mmapTSAlias = mmapTSBit >> 1           // bit 62: type 0x8, unused
)

// mmapFileSize is the size of a served file's memory file: the largest a
// file can be (MAX_LFS_FILESIZE), less a page, so that every offset a
// buffer can have is inside it. The file is sparse.
const mmapFileSize = 1<<63 - pageSize

// newMmapFile makes an empty memory file for a served file's buffers.
func newMmapFile() (int, error) {
	fd, err := unix.MemfdCreate("gaudi-sim-mmap", unix.MFD_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("memory file: %w", err)
	}
	if err := unix.Ftruncate(fd, mmapFileSize); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("memory file: %w", err)
	}
	return fd, nil
}

// setFile makes the manager keep its buffers in fd, which it owns from
// now on.
func (mm *memMgr) setFile(fd int) {
	mm.mu.Lock()
	defer mm.mu.Unlock()
	mm.file, mm.fileRefs = fd, 1
}

// bufMem makes the memory of a new buffer of size bytes with mmap offset
// handle: a memfd of its own named name, or the range of the manager's
// memory file. mm.mu must be held.
func (mm *memMgr) bufMem(name string, handle, size uint64) (fd int, off int64, err error) {
	if mm.file < 0 {
		fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
		if err != nil {
			return -1, 0, err
		}
		if err := unix.Ftruncate(fd, int64(size)); err != nil {
			unix.Close(fd)
			return -1, 0, err
		}
		return fd, 0, nil
	}
	mm.fileRefs++
	return mm.file, int64(MmapFileOffset(handle)), nil
}

// freeBufMem gives back what bufMem made: the memfd is closed, the range
// of the memory file cleared. mm.mu must be held.
func (mm *memMgr) freeBufMem(fd int, off int64, size uint64) {
	if fd != mm.file || fd < 0 {
		unix.Close(fd)
		return
	}
	punch(fd, uint64(off), (size+pageSize-1)&^(pageSize-1))
	mm.dropFileLocked()
}

// dropFileLocked drops a reference to the memory file, closing it with
// the last. mm.mu must be held.
func (mm *memMgr) dropFileLocked() {
	if mm.file < 0 {
		return
	}
	mm.fileRefs--
	if mm.fileRefs == 0 {
		unix.Close(mm.file)
		mm.file = -1
	}
}
