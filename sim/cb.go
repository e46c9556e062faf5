package sim

import (
	"sort"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// The CB ioctl (hl_cb_ioctl, common/command_buffer.c) and the command
// buffers it manages.
//
// A command buffer is a memfd of its size (at least a page: the driver
// allocates PAGE_SIZE for smaller requests) registered in the file's
// memory manager (memmgr.go), so CBs and timestamp buffers share one
// handle space and ids, and the handle is (id | HL_MMAP_TYPE_CB) <<
// PAGE_SHIFT. The user maps it with File.Mmap at that offset (the length
// must be PAGE_ALIGN(size), one mapping at a time) and writes packets into
// it; the simulator maps the same memfd to read them.
//
// References follow the driver's: the handle holds one until DESTROY, a
// user mapping one until Munmap, a CS one while it parses the CB. The
// simulator keeps one more of its own on the memory manager's buffer so
// that the buffer (and its descriptor) stays until it has released the CB
// itself: a destroyed CB goes away when neither a mapping nor a CS uses
// it, checked whenever the CB is looked up, created, destroyed or mapped.
//
// With HL_CB_FLAGS_MAP (Gaudi2 only: supports_cb_mapping; Gaudi answers
// ENOMEM, as hl_cb_create turns the callback's EINVAL into) the CB is also
// mapped into the device MMU at an address of the context's 4 GB CB VA
// pool (first fit, page granular, as the driver's gen_pool), which CB INFO
// with HL_CB_FLAGS_GET_DEVICE_VA returns and Gaudi2 CSs may use as a user
// CB address; engines reach the CB's memory there.
//
// A handle of a timestamp buffer passed to a CB op reaches, in the driver,
// the buffer's private data as if it were a CB (hl_cb_get does not check
// the handle's type); the simulator answers EINVAL instead.

// cbObj is a struct hl_cb.
type cbObj struct {
	buf       *mmapBuf
	size      uint64 // cb->size
	mem       []byte // the simulator's mapping, PAGE_ALIGN(size) bytes
	destroyed bool   // is_handle_destroyed
	csCnt     int32  // cs_cnt: CSs parsing the CB now
	va        uint64 // device VA in the CB pool, 0 when not mapped
	vaSize    uint64 // roundup_size
}

// hlMaxCBSize is HL_MAX_CB_SIZE.
const hlMaxCBSize = hl.HL_MAX_CB_SIZE

// cbIoctl runs a CB request.
func (f *File) cbIoctl(a *hl.CBArgs) error {
	if !f.dev.State().operational() {
		return unix.EBUSY
	}
	in := *a.In()
	c := f.subm()
	switch in.Op {
	case hl.HL_CB_OP_CREATE:
		var handle uint64
		err := error(unix.EINVAL)
		if in.CBSize <= hlMaxCBSize {
			handle, err = c.cbCreate(in.CBSize, in.Flags&hl.HL_CB_FLAGS_MAP != 0)
		}
		*a = hl.CBArgs{}
		a.Out().SetCBHandle(handle)
		return err
	case hl.HL_CB_OP_DESTROY:
		return c.cbDestroy(in.CBHandle)
	case hl.HL_CB_OP_INFO:
		usage, va, err := c.cbInfo(in.CBHandle, in.Flags)
		if err != nil {
			return err
		}
		*a.Out() = hl.CBOut{}
		if in.Flags&hl.HL_CB_FLAGS_GET_DEVICE_VA != 0 {
			a.Out().SetDeviceVA(va)
		} else {
			a.Out().SetUsageCnt(usage)
		}
		return nil
	}
	return unix.EINVAL
}

// cbCreate is hl_cb_create for a user context.
func (c *csCtx) cbCreate(size uint32, mapCB bool) (uint64, error) {
	mm := c.f.mm
	mm.mu.Lock()
	defer mm.mu.Unlock()
	if mm.done {
		return 0, unix.ENOMEM
	}
	c.sweepLocked()
	id := mm.ids.alloc()
	sz := max(uint64(size), pageSize)
	round := (sz + pageSize - 1) &^ (pageSize - 1)
	cb := &cbObj{size: sz}
	handle := (uint64(id) | mmapTypeCB) << 12
	fd, off, err := mm.bufMem("gaudi-sim-cb", handle, sz)
	if err == nil {
		cb.mem, err = unix.Mmap(fd, off, int(round), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			mm.freeBufMem(fd, off, sz)
		}
	}
	if err != nil {
		mm.ids.remove(id)
		return 0, unix.ENOMEM
	}
	fail := func(err error) (uint64, error) {
		unix.Munmap(cb.mem)
		mm.freeBufMem(fd, off, sz)
		mm.ids.remove(id)
		return 0, err
	}
	if mapCB {
		// Every failure of the buffer's alloc callback ends as ENOMEM:
		// hl_cb_mmap_mem_alloc returns cb_map_mem's error (EINVAL on
		// Gaudi, which never sets supports_cb_mapping; ENOMEM when the
		// CB VA pool is full), hl_mmap_mem_buf_alloc drops it and
		// returns NULL, and hl_cb_create answers -ENOMEM.
		if !c.dev.prof.dramVirtual {
			return fail(unix.ENOMEM)
		}
		va := c.cbPool.alloc(round)
		if va == 0 {
			return fail(unix.ENOMEM)
		}
		cb.va, cb.vaSize = va, round
		c.cbVA.Lock()
		i := sort.Search(len(c.cbIndex), func(i int) bool { return c.cbIndex[i].va > va })
		c.cbIndex = append(c.cbIndex, nil)
		copy(c.cbIndex[i+1:], c.cbIndex[i:])
		c.cbIndex[i] = cb
		c.cbVA.Unlock()
	}
	// refs: the handle's and the simulator's own.
	b := &mmapBuf{id: id, memType: mmapTypeCB, size: sz, fd: fd, off: off, refs: 2}
	b.handle = handle
	cb.buf = b
	mm.bufs[id] = b
	c.cbs[id] = cb
	return b.handle, nil
}

// cbGetLocked is hl_cb_get: the live CB of a handle, or nil. mm.mu must
// be held.
func (c *csCtx) cbGetLocked(handle uint64) *cbObj {
	id := uint32(handle >> 12)
	cb := c.cbs[id]
	if cb == nil || c.releaseIfDoneLocked(cb) {
		return nil
	}
	return cb
}

// releaseIfDoneLocked frees a destroyed CB that nothing uses any more and
// reports whether it did. mm.mu must be held.
func (c *csCtx) releaseIfDoneLocked(cb *cbObj) bool {
	if !cb.destroyed || cb.buf.mapped || cb.csCnt > 0 {
		return false
	}
	mm := c.f.mm
	id := cb.buf.id
	delete(c.cbs, id)
	delete(mm.bufs, id)
	mm.ids.remove(id)
	c.unmapVALocked(cb)
	unix.Munmap(cb.mem)
	mm.put(cb.buf) // the simulator's reference: the last one
	return true
}

// unmapVALocked takes a CB out of the CB VA pool (cb_unmap_mem).
func (c *csCtx) unmapVALocked(cb *cbObj) {
	if cb.va == 0 {
		return
	}
	c.cbVA.Lock()
	i := sort.Search(len(c.cbIndex), func(i int) bool { return c.cbIndex[i].va >= cb.va })
	if i < len(c.cbIndex) && c.cbIndex[i] == cb {
		c.cbIndex = append(c.cbIndex[:i], c.cbIndex[i+1:]...)
	}
	c.cbVA.Unlock()
	c.cbPool.release(cb.va, cb.vaSize)
	cb.va = 0
}

// sweepLocked frees every destroyed CB nothing uses. mm.mu must be held.
func (c *csCtx) sweepLocked() {
	for _, cb := range c.cbs {
		c.releaseIfDoneLocked(cb)
	}
}

// cbSweep frees destroyed CBs whose last mapping went away, so that a new
// mmap of such a handle fails as on the driver.
func (f *File) cbSweep() {
	if f.control {
		return
	}
	c := f.subm()
	c.f.mm.mu.Lock()
	c.sweepLocked()
	c.f.mm.mu.Unlock()
}

// cbDestroy is hl_cb_destroy.
func (c *csCtx) cbDestroy(handle uint64) error {
	mm := c.f.mm
	mm.mu.Lock()
	defer mm.mu.Unlock()
	cb := c.cbGetLocked(handle)
	if cb == nil || cb.destroyed {
		return unix.EINVAL
	}
	cb.destroyed = true
	cb.buf.refs-- // the handle's reference
	c.releaseIfDoneLocked(cb)
	return nil
}

// cbInfo is hl_cb_info.
func (c *csCtx) cbInfo(handle uint64, flags uint32) (usage uint32, va uint64, err error) {
	mm := c.f.mm
	mm.mu.Lock()
	defer mm.mu.Unlock()
	cb := c.cbGetLocked(handle)
	if cb == nil {
		return 0, 0, unix.EINVAL
	}
	if flags&hl.HL_CB_FLAGS_GET_DEVICE_VA != 0 {
		if cb.va == 0 {
			return 0, 0, unix.EINVAL
		}
		return 0, cb.va, nil
	}
	return uint32(cb.csCnt), 0, nil
}

// cbAtLocked returns the mapped CB whose VA range holds addr, or nil.
// c.cbVA must be held.
func (c *csCtx) cbAtLocked(addr uint64) *cbObj {
	if c.cbPool.base == 0 || addr < c.cbPool.base || addr-c.cbPool.base >= cbVAPoolSize {
		return nil
	}
	i := sort.Search(len(c.cbIndex), func(i int) bool { return c.cbIndex[i].va > addr })
	if i == 0 {
		return nil
	}
	cb := c.cbIndex[i-1]
	if addr-cb.va >= cb.vaSize {
		return nil
	}
	return cb
}

// cbFini drops the simulator's references when the context goes away:
// the memory manager's fini drops the handles' (hl_mem_mgr_fini), user
// mappings keep their buffers until they are unmapped.
func (c *csCtx) cbFini() {
	mm := c.f.mm
	mm.mu.Lock()
	defer mm.mu.Unlock()
	for id, cb := range c.cbs {
		if cb.destroyed {
			delete(mm.bufs, id) // its handle reference is gone already
		}
		c.unmapVALocked(cb)
		unix.Munmap(cb.mem)
		mm.put(cb.buf)
		delete(c.cbs, id)
	}
}

// vaPool is a first-fit allocator over [base, base+size), the driver's
// gen_pool for the CB VA pool.
type vaPool struct {
	base uint64
	free []vaSpan // free blocks, sorted, inclusive bounds
}

func newVAPool(base, size uint64) vaPool {
	if base == 0 {
		return vaPool{}
	}
	return vaPool{base: base, free: []vaSpan{{base, base + size - 1}}}
}

// alloc returns the first free block of n bytes, or 0.
func (p *vaPool) alloc(n uint64) uint64 {
	for i, s := range p.free {
		if s.end-s.start+1 < n {
			continue
		}
		va := s.start
		if s.end-s.start+1 == n {
			p.free = append(p.free[:i], p.free[i+1:]...)
		} else {
			p.free[i].start += n
		}
		return va
	}
	return 0
}

// release gives [va, va+n) back, merging neighbours.
func (p *vaPool) release(va, n uint64) {
	s := vaSpan{va, va + n - 1}
	i := sort.Search(len(p.free), func(i int) bool { return p.free[i].start > va })
	p.free = append(p.free, vaSpan{})
	copy(p.free[i+1:], p.free[i:])
	p.free[i] = s
	if i+1 < len(p.free) && p.free[i].end+1 == p.free[i+1].start {
		p.free[i].end = p.free[i+1].end
		p.free = append(p.free[:i+1], p.free[i+2:]...)
	}
	if i > 0 && p.free[i-1].end+1 == p.free[i].start {
		p.free[i-1].end = p.free[i].end
		p.free = append(p.free[:i], p.free[i+1:]...)
	}
}
