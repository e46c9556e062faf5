package sim

import (
	"sync"
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// memMgr is a compute file's struct hl_mem_mgr (common/memory_mgr.c): the
// buffers user space maps by handle. Timestamp buffers (TS_ALLOC) live
// here; command buffers share the same handle space in the driver and
// will join them. Each buffer's memory is a memfd, so the user's mapping
// and the simulator see the same bytes.
type memMgr struct {
	mu   sync.Mutex
	ids  idAllocator
	bufs map[uint32]*mmapBuf
	done bool // hl_mem_mgr_fini ran: no new buffers

	// A served file's buffers live in one memory file at their mmap
	// offsets (served.go): its descriptor, or -1, and references to it
	// (the manager's until fini, and each buffer's).
	file     int
	fileRefs int
}

// mmapBuf is a struct hl_mmap_mem_buf.
type mmapBuf struct {
	id       uint32
	handle   uint64 // (id | type) << PAGE_SHIFT
	memType  uint64 // HL_MMAP_TYPE_*
	size     uint64 // mappable_size
	fd       int
	off      int64 // of the buffer's memory in fd
	mapped   bool  // the driver's buf->mmap: one mapping at a time
	refs     int   // the handle's reference and the mapping's
	released bool  // fd closed
}

func newMemMgr() *memMgr {
	return &memMgr{ids: idAllocator{next: 1}, bufs: map[uint32]*mmapBuf{}, file: -1}
}

// allocTS is allocate_timestamps_buffers: a buffer of n u64 timestamps.
func (mm *memMgr) allocTS(n uint32) (uint64, error) {
	if n > hl.TS_MAX_ELEMENTS_NUM {
		return 0, unix.EINVAL
	}
	mm.mu.Lock()
	defer mm.mu.Unlock()
	if mm.done {
		return 0, unix.ENOMEM
	}
	id := mm.ids.alloc()
	if n == 0 {
		// vmalloc_user(0) fails: the id goes back, the buffer is not made.
		mm.ids.remove(id)
		return 0, unix.ENOMEM
	}
	size := uint64(n) * 8
	handle := (uint64(id) | mmapTypeTS) << 12
	fd, off, err := mm.bufMem("gaudi-sim-ts", handle, size)
	if err != nil {
		mm.ids.remove(id)
		return 0, unix.ENOMEM
	}
	b := &mmapBuf{id: id, memType: mmapTypeTS, size: size, fd: fd, off: off, refs: 1}
	b.handle = handle
	mm.bufs[id] = b
	return b.handle, nil
}

// put drops a reference; the last one closes the memory. mm.mu must be
// held.
func (mm *memMgr) put(b *mmapBuf) {
	b.refs--
	if b.refs == 0 && !b.released {
		b.released = true
		mm.freeBufMem(b.fd, b.off, b.size)
	}
}

// mmap is hl_mem_mgr_mmap: the whole buffer, once at a time.
func (mm *memMgr) mmap(handle uint64, length int, prot, flags int) ([]byte, *mmapBuf, error) {
	mm.mu.Lock()
	defer mm.mu.Unlock()
	b := mm.bufs[uint32(handle>>12)]
	if b == nil {
		return nil, nil, unix.EINVAL
	}
	if uint64(length+pageSize-1)&^(pageSize-1) != (b.size+pageSize-1)&^(pageSize-1) {
		return nil, nil, unix.EINVAL
	}
	if b.mapped {
		return nil, nil, unix.EINVAL
	}
	mem, err := unix.Mmap(b.fd, b.off, length, prot, flags)
	if err != nil {
		return nil, nil, err
	}
	b.mapped = true
	b.refs++
	return mem, b, nil
}

// unmapped is hl_mmap_mem_buf_vm_close.
func (mm *memMgr) unmapped(b *mmapBuf) {
	mm.mu.Lock()
	defer mm.mu.Unlock()
	b.mapped = false
	mm.put(b)
}

// fini is hl_mem_mgr_fini: every handle goes; mapped buffers live until
// they are unmapped.
func (mm *memMgr) fini() {
	mm.mu.Lock()
	defer mm.mu.Unlock()
	if mm.done {
		return
	}
	mm.done = true
	for id, b := range mm.bufs {
		delete(mm.bufs, id)
		mm.put(b)
	}
	mm.dropFileLocked()
}

// userMapping is a mapping File.Mmap made, for Munmap.
type userMapping struct {
	buf *mmapBuf // nil for HW blocks
}

// maxMmapLength is the most a mapping can hold: x86-64's and arm64's
// 47/48-bit user address space (TASK_SIZE) less a page.
const maxMmapLength = 1<<47 - pageSize

// mmapModifiers are the mmap flags the simulator passes through: they
// change how the kernel populates or accounts the mapping, not what it
// maps or where.
const mmapModifiers = unix.MAP_POPULATE | unix.MAP_NONBLOCK | unix.MAP_NORESERVE | unix.MAP_LOCKED | unix.MAP_STACK

// checkMmapFlags refuses the mmap flags the simulator cannot honour. The
// driver's handlers (__hl_mmap, hl_mem_mgr_mmap, hl_hw_block_mmap) check
// the handle, the length and access_ok, not the flags: the mmap system
// call has dealt with them before. The simulator does what it would:
//
//   - a mapping type other than MAP_SHARED, MAP_PRIVATE or
//     MAP_SHARED_VALIDATE is EINVAL (do_mmap); MAP_PRIVATE is allowed, as
//     the driver does not ask for VM_SHARED: the user's writes go to
//     private copies the device does not see, as with a memfd;
//   - MAP_FIXED and MAP_FIXED_NOREPLACE: the File seam has no address
//     argument, so a fixed mapping would be at address 0; the kernel
//     refuses that below mmap_min_addr (EPERM for a process without
//     CAP_SYS_RAWIO), and even for root, where it succeeds, no Go slice
//     can start at address 0, so the simulator answers EPERM always;
//   - MAP_ANONYMOUS would map anonymous memory instead of the device
//     buffer, and MAP_HUGETLB is refused for a file that is not on
//     hugetlbfs (ksys_mmap_pgoff): both EINVAL;
//   - MAP_SYNC (with MAP_SHARED_VALIDATE) needs a DAX file: EOPNOTSUPP;
//   - any other flag is EINVAL: the simulator does not guess what it
//     would do to a device mapping.
func checkMmapFlags(flags int) error {
	switch flags & unix.MAP_TYPE {
	case unix.MAP_SHARED, unix.MAP_PRIVATE, unix.MAP_SHARED_VALIDATE:
	default:
		return unix.EINVAL
	}
	rest := flags &^ unix.MAP_TYPE
	switch {
	case rest&(unix.MAP_FIXED|unix.MAP_FIXED_NOREPLACE) != 0:
		return unix.EPERM
	case rest&unix.MAP_SYNC != 0 && flags&unix.MAP_TYPE == unix.MAP_SHARED_VALIDATE:
		return unix.EOPNOTSUPP
	case rest&^mmapModifiers != 0:
		return unix.EINVAL
	}
	return nil
}

// mmap maps device memory of the open file: a timestamp buffer or a HW
// block, by the type bits of the offset (hl_mmap). HW blocks are plain
// zeroed memory: the simulator has no registers behind them.
func (f *File) mmap(offset int64, length int, prot, flags int) ([]byte, error) {
	if f.control {
		return nil, unix.ENODEV
	}
	if !f.enter() {
		return nil, unix.EBADF
	}
	defer f.exit()
	if f.killed.Load() {
		return nil, ErrKilled
	}
	off := uint64(offset)
	if length <= 0 || off&(pageSize-1) != 0 {
		return nil, unix.EINVAL
	}
	if uint64(length) > maxMmapLength {
		return nil, unix.ENOMEM // do_mmap: len > TASK_SIZE
	}
	if err := checkMmapFlags(flags); err != nil {
		return nil, err
	}
	var (
		mem []byte
		rec userMapping
		err error
	)
	switch (off >> 12) & mmapTypeMask {
	case mmapTypeBlock:
		mem, err = f.mmapBlock(off, length, prot, flags)
	case mmapTypeCB, mmapTypeTS:
		mem, rec.buf, err = f.mm.mmap(off, length, prot, flags)
	default:
		return nil, unix.EINVAL
	}
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	if f.mmaps == nil {
		f.mmaps = map[*byte]userMapping{}
	}
	f.mmaps[unsafe.SliceData(mem)] = rec
	f.mu.Unlock()
	return mem, nil
}

// Munmap removes a mapping Mmap returned, through any handle of the file,
// also after Close. Memory Mmap did not return gives EINVAL. A mapping
// holds the file as the kernel's does: a file whose handles are all
// closed is released with its last Munmap.
func (f *File) Munmap(b []byte) error {
	if len(b) == 0 {
		return unix.EINVAL
	}
	f.mu.Lock()
	rec, ok := f.mmaps[unsafe.SliceData(b)]
	if ok {
		delete(f.mmaps, unsafe.SliceData(b))
	}
	f.mu.Unlock()
	if !ok {
		return unix.EINVAL
	}
	if err := unix.Munmap(b); err != nil {
		f.mu.Lock()
		f.mmaps[unsafe.SliceData(b)] = rec
		f.mu.Unlock()
		return err
	}
	if rec.buf != nil {
		f.mm.unmapped(rec.buf)
	}
	f.releaseIfUnheld() // the last mapping of a closed file: its release
	return nil
}
