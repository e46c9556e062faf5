package sim

import (
	"errors"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// The MEMORY ioctl (hl_mem_ioctl, common/memory.c). Every op needs an
// operational device (EBUSY otherwise). What the driver writes back is
// written back here too, also on failure (drm_ioctl copies the argument
// out whatever the result): ALLOC, MAP and EXPORT_DMABUF_FD clear the
// whole argument first, MAP_BLOCK writes its two outputs, TS_ALLOC its
// handle on success only, FREE and UNMAP nothing.

// memory runs one MEMORY request of a compute file.
func (f *File) memory(a *hl.MemArgs) error {
	if !f.dev.State().operational() {
		return unix.EBUSY
	}
	in := a.In()
	switch in.Op {
	case hl.HL_MEM_OP_ALLOC:
		return f.memAlloc(a)
	case hl.HL_MEM_OP_FREE:
		return f.memFree(a)
	case hl.HL_MEM_OP_MAP:
		return f.memMap(a)
	case hl.HL_MEM_OP_UNMAP:
		return f.ctx.unmap(in.Unmap().DeviceVirtAddr)
	case hl.HL_MEM_OP_MAP_BLOCK:
		h, size, err := f.dev.prof.mapBlock(in.MapBlock().BlockAddr)
		if err == nil && f.rem != nil && f.dev.prof.asic == Gaudi3 {
			// A served client maps the block without the simulator
			// seeing it (served.go): the channel runs from now on.
			if id := h >> 12 & mmapValueMask; id >= sm3IDBase {
				err = f.dev.hardware().sm.serveBlock3(f)
			} else {
				err = f.dev.hardware().pqm().serveChannel(f, int(id))
			}
			if err != nil {
				h, size = 0, 0
			}
		}
		a.Out().SetBlockHandle(h)
		a.Out().SetBlockSize(size)
		return err
	case hl.HL_MEM_OP_EXPORT_DMABUF_FD:
		e := *in.ExportDmabufFD()
		fd, err := f.ctx.exportDMABuf(e.Addr, e.MemSize, e.Offset, int(in.Flags))
		*a = hl.MemArgs{}
		a.Out().SetFD(int32(fd))
		return err
	case hl.HL_MEM_OP_REG_DMABUF_FD:
		if !f.dev.oot() {
			break // not an upstream op: EINVAL below
		}
		return f.memRegDMABuf(a)
	case hl.HL_MEM_OP_TS_ALLOC:
		// The out-of-tree driver refuses 0 elements up front
		// (HabanaAI/drivers.accel.habanalabs.kernel,
		// common/memory.c, allocate_timestamps_buffers: EINVAL); upstream
		// 6.12 lets vmalloc_user(0) fail (ENOMEM, in allocTS).
		if in.NumOfElements == 0 && f.dev.oot() {
			return unix.EINVAL
		}
		h, err := f.mm.allocTS(in.NumOfElements)
		if err != nil {
			return err
		}
		a.Out().SetHandle(h)
		return nil
	}
	return unix.EINVAL
}

// memAlloc is HL_MEM_OP_ALLOC. Without DRAM virtual memory (Gaudi) the
// driver only counts the bytes the user says it took and returns handle 0.
func (f *File) memAlloc(a *hl.MemArgs) error {
	in := a.In()
	size, flags := in.Alloc().MemSize, in.Flags
	if size == 0 {
		return unix.EINVAL
	}
	c := f.ctx
	var handle uint32
	var err error
	if f.dev.prof.dramVirtual {
		handle, err = c.allocDevice(size, in.Alloc().PageSize, flags)
	} else {
		c.dramPhysMem.Add(int64(size))
		f.dev.dramUsed.Add(int64(size))
	}
	*a = hl.MemArgs{}
	a.Out().SetHandle(uint64(handle))
	return err
}

// memFree is HL_MEM_OP_FREE. Without DRAM virtual memory the driver takes
// the size from alloc.mem_size, which shares its place with free.handle.
func (f *File) memFree(a *hl.MemArgs) error {
	in := a.In()
	if !f.dev.prof.dramVirtual {
		size := int64(in.Alloc().MemSize)
		f.ctx.dramPhysMem.Add(-size)
		f.dev.dramUsed.Add(-size)
		return nil
	}
	return f.ctx.freeDevice(uint32(in.Free().Handle))
}

// memMap is HL_MEM_OP_MAP of host memory (HL_MEM_USERPTR) or of an
// allocation.
func (f *File) memMap(a *hl.MemArgs) error {
	in := a.In()
	flags := in.Flags
	var va uint64
	var err error
	if flags&hl.HL_MEM_ODP != 0 && f.dev.oot() && f.dev.prof.asic != Gaudi3 {
		// The out-of-tree map_device_va: ODP asked of a device that
		// does not support it (of the simulated ASICs only Gaudi3 sets
		// supports_odp; its ODP mappings are made at once here, as
		// pinned ones).
		*a = hl.MemArgs{}
		return unix.EOPNOTSUPP
	}
	if flags&hl.HL_MEM_USERPTR != 0 {
		h := *in.MapHost()
		va, err = f.ctx.mapHost(h.HostVirtAddr, h.HintAddr, h.MemSize, flags)
	} else {
		d := *in.MapDevice()
		va, err = f.ctx.mapDevice(d.Handle, d.HintAddr, flags)
	}
	*a = hl.MemArgs{}
	a.Out().SetDeviceVirtAddr(va)
	return err
}

// allocDevice is alloc_device_memory: whole DRAM pages, from the lowest
// free pages, under a handle from 1 up. Only Gaudi3 sets
// supports_user_set_page_size: there a non-zero ALLOC page_size is the
// allocation's page (set_alloc_page_size: EINVAL unless a power of two);
// elsewhere it is ignored.
func (c *context) allocDevice(size, userPage uint64, flags uint32) (uint32, error) {
	d := c.dev
	page := d.prof.dramPageSize
	if d.prof.asic == Gaudi3 && userPage != 0 {
		if !isPow2(userPage) {
			return 0, unix.EINVAL
		}
		// The device MMU maps the page sizes of its supported mask only
		// (hl_mmu_map_page fails on others); the simulator refuses them
		// at ALLOC rather than at MAP.
		if userPage&d.prof.pageOrderBitmask == 0 {
			return 0, unix.EINVAL
		}
		page = userPage
	}
	npages := (size + page - 1) / page // DIV_ROUND_UP_ULL, wrapping as in C
	total := npages * page
	if total == 0 {
		return 0, unix.EINVAL
	}
	contiguous := flags&hl.HL_MEM_CONTIGUOUS != 0
	if c.rem != nil && d.servedLimit != 0 && (total > d.servedLimit || uint64(c.dramPhysMem.Load()) > d.servedLimit-total) {
		return 0, unix.ENOMEM // Config.ServedMemoryLimit
	}
	vm := d.vm
	vm.mu.Lock()
	var units, pages []uint64
	if ratio := page / vm.pageSize; ratio <= 1 {
		pages = vm.allocPages(npages, contiguous)
	} else if npages <= ^uint64(0)/ratio {
		// Pages larger than the allocator's: each one a run of them.
		units = vm.allocPages(npages*ratio, true)
		if units != nil {
			for i := uint64(0); i < npages; i++ {
				pages = append(pages, units[i*ratio])
			}
		}
	}
	if pages == nil {
		vm.mu.Unlock()
		return 0, unix.ENOMEM
	}
	pk := &physPack{
		handle:     vm.handles.alloc(),
		asid:       c.asid,
		pageSize:   page,
		pages:      pages,
		units:      units,
		total:      total,
		flags:      flags,
		contiguous: contiguous,
	}
	vm.packs[pk.handle] = pk
	vm.mu.Unlock()
	c.dramPhysMem.Add(int64(total))
	d.dramUsed.Add(int64(total))
	return pk.handle, nil
}

// freeDevice is free_device_memory.
func (c *context) freeDevice(handle uint32) error {
	d := c.dev
	vm := d.vm
	vm.mu.Lock()
	pk := vm.packs[handle]
	if pk == nil || pk.mappings.Load() > 0 {
		vm.mu.Unlock()
		return unix.EINVAL
	}
	delete(vm.packs, handle)
	vm.handles.remove(handle)
	vm.mu.Unlock()
	c.dramPhysMem.Add(-int64(pk.total))
	d.dramUsed.Add(-int64(pk.total))
	// The pages go back to the allocator last: once they are free another
	// allocation may take them, and neither the restored export bytes nor
	// the scrub may land on its data.
	runs := d.packRuns(pk, 0, pk.total)
	d.dram.release(runs)
	err := d.dram.scrub(runs) // dram_scrub.go
	vm.mu.Lock()
	vm.freePages(pk.allocated())
	vm.mu.Unlock()
	return err
}

// packRuns returns the DRAM ranges behind [off, off+n) of an allocation,
// merging physically consecutive pages.
func (d *Device) packRuns(pk *physPack, off, n uint64) []dramRun {
	var runs []dramRun
	for n > 0 {
		i := off / pk.pageSize
		in := off % pk.pageSize
		k := min(n, pk.pageSize-in)
		ro := pk.pages[i] + in - d.prof.dramBase
		if l := len(runs); l > 0 && runs[l-1].off+runs[l-1].n == ro {
			runs[l-1].n += k
		} else {
			runs = append(runs, dramRun{ro, k})
		}
		off += k
		n -= k
	}
	return runs
}

// mapDevice is map_device_va for an allocation handle: the whole
// allocation at a DRAM VA aligned to the DMMU page.
func (c *context) mapDevice(handle, hint uint64, flags uint32) (uint64, error) {
	d := c.dev
	vm := d.vm
	vm.mu.Lock()
	pk := vm.packs[uint32(handle)]
	if pk == nil {
		vm.mu.Unlock()
		return 0, unix.EINVAL
	}
	pk.mappings.Add(1)
	vm.mu.Unlock()
	if pk.flags&hl.HL_MEM_SHARED == 0 && pk.asid != c.asid {
		pk.mappings.Add(-1)
		return 0, unix.EPERM
	}
	v := &d.prof.vm
	align := v.dmmuPage
	if d.prof.asic == Gaudi3 {
		align = max(align, pk.pageSize) // a large page maps at its own alignment
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	va := c.ranges[vaDRAM].get(v, vaRequest{
		size:      pk.total,
		hint:      hint,
		align:     align,
		rangeType: vaDRAM,
		force:     flags&hl.HL_MEM_FORCE_HINT != 0,
	})
	if va == 0 {
		pk.mappings.Add(-1)
		return 0, unix.ENOMEM
	}
	c.insert(&mapping{va: va, vaStart: va, size: pk.total, pageSize: pk.pageSize, rangeType: vaDRAM, pack: pk})
	return va, nil
}

// mapHost is map_device_va for host memory (HL_MEM_USERPTR).
//
// The driver maps with 2 MB pages from the huge-page range when every
// DMA-mapped chunk of the pinned memory starts on a 2 MB boundary and is a
// whole number of 2 MB: the memory is backed by physically contiguous 2 MB
// pages (hugetlbfs, or transparent huge pages). The simulator cannot see
// physical pages; it takes the 2 MB path when host_virt_addr is 2 MB
// aligned and the pages spanned are a whole number of 2 MB, which is what
// huge-page-backed memory looks like. Otherwise the mapping takes 4 KB
// pages from the host range, 2 MB aligned when host_virt_addr is. The
// returned address keeps the offset of host_virt_addr in its page.
func (c *context) mapHost(addr, hint, size uint64, flags uint32) (uint64, error) {
	// hl_pin_host_memory.
	if size == 0 {
		return 0, unix.EINVAL
	}
	end := addr + size
	if end < addr || (end+hostPageSize-1)&^(hostPageSize-1) < end {
		return 0, unix.EINVAL
	}
	vmas, err := c.pinCheck(addr, size)
	if err != nil {
		return 0, err
	}
	// init_phys_pg_pack_from_userptr.
	v := &c.dev.prof.vm
	first := addr &^ (hostPageSize - 1)
	total := (end+hostPageSize-1)&^(hostPageSize-1) - first
	offset := addr & (hostPageSize - 1)
	page, rt, align := uint64(hostPageSize), vaHost, uint64(hostPageSize)
	if addr%v.hugePage == 0 && total%v.hugePage == 0 {
		page, rt, align = v.hugePage, vaHostHuge, v.hugePage
	} else if addr%v.hugePage == 0 {
		align = v.hugePage
	}
	force := flags&hl.HL_MEM_FORCE_HINT != 0
	if hint != 0 && offset != 0 && force {
		return 0, unix.EINVAL
	}
	var ident *hostIdent
	if c.dev.strict.on {
		ident = newHostIdent(&c.dev.strict.proc, vmas, first, first+total) // strict_host_unsafe.go
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.ranges[rt]
	start := r.get(v, vaRequest{size: total, hint: hint, align: align, rangeType: rt, force: force})
	if start == 0 {
		return 0, unix.ENOMEM
	}
	// map_phys_pg_pack: the MMU refuses a page that is mapped already,
	// which in a user context is only the virtual MSI-X doorbell page.
	if db := v.msixDoorbellVA; db != 0 && db+v.hostPage > start && db < start+total {
		r.add(start, start+total-1)
		return 0, unix.EINVAL
	}
	m := &mapping{
		va:        start + offset,
		vaStart:   start,
		size:      total,
		pageSize:  page,
		rangeType: rt,
		host:      true,
		hostAddr:  addr,
		hostSize:  size,
	}
	m.ident = ident
	c.insert(m)
	return m.va, nil
}

// unmap is unmap_device_va: the exact address MAP returned, not exported.
func (c *context) unmap(va uint64) error {
	var oldest uint64
	if c.dev.strict.on {
		oldest = c.file.oldestInFlight() // before c.mu: it takes the hardware's lock
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.maps[va]
	if m == nil {
		return unix.EINVAL
	}
	if m.exportCnt > 0 {
		c.reapExports()
		if m.exportCnt > 0 {
			return unix.EINVAL
		}
	}
	c.remove(m)
	if c.dev.strict.on {
		c.strictUnmap(oldest, m)
	}
	c.ranges[m.rangeType].add(m.vaStart, m.vaStart+m.size-1)
	if m.pack != nil {
		m.pack.mappings.Add(-1)
	}
	if m.imported != nil {
		m.imported.release()
	}
	return nil
}

// export is a dma-buf the context exported: it holds the context (and so
// the compute file) and, on Gaudi2, the mapping it was exported from.
type export struct {
	seg *segment
	v   *view // instead of seg: an export that shares memory with another (export_view.go)
	m   *mapping
}

// exportDMABuf is export_dmabuf_from_addr. Gaudi2 exports part of a DRAM
// mapping: addr is the address MAP returned for an allocation, offset and
// size page-aligned (PAGE_SIZE, 4 KB) inside it. Gaudi exports physical
// DRAM: addr inside the user part of DRAM, offset 0.
func (c *context) exportDMABuf(addr, size, offset uint64, flags int) (int, error) {
	d := c.dev
	p := &d.prof
	if !p.dramVirtual && offset != 0 {
		return -int(unix.EBADF), unix.EINVAL
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var runs []dramRun
	var m *mapping
	if p.dramVirtual {
		// memhash_node_export_get, then validate_export_params.
		m = c.maps[addr]
		if m == nil || m.host {
			return -int(unix.EBADF), unix.EINVAL
		}
		if err := exportAligned(addr, size, offset); err != nil {
			return -int(unix.EBADF), err
		}
		// Chosen divergence: validate_export_params (common/memory.c,
		// 6.12 and the out-of-tree driver alike) checks offset + size
		// against the allocation without checking the sum for
		// overflow, so a range that wraps past 2^64 passes there and
		// describes memory outside the allocation. The simulator refuses
		// it (EINVAL) rather than export such a range; tested by
		// TestMemoryExportGaudi2 ("offset + size wraps").
		if offset+size > m.pack.total || offset+size < offset {
			return -int(unix.EBADF), unix.EINVAL
		}
		runs = d.packRuns(m.pack, offset, size)
	} else {
		// validate_export_params_no_mmu. The DRAM BAR covers all of DRAM,
		// so its check adds nothing to the DRAM bounds.
		if err := exportAligned(addr, size, 0); err != nil {
			return -int(unix.EBADF), err
		}
		dramEnd := p.dramBase + p.dramSize
		if addr < p.dramUserBase || addr+size > dramEnd || addr+size < addr {
			return -int(unix.EBADF), unix.EINVAL
		}
		runs = []dramRun{{addr - p.dramBase, size}}
	}
	fd, seg, v, err := d.dram.export(runs, flags)
	if err != nil {
		return -int(unix.EBADF), exportErrno(err)
	}
	if m != nil {
		m.exportCnt++
	}
	c.exports = append(c.exports, &export{seg: seg, v: v, m: m})
	return fd, nil
}

// exportAligned is validate_export_params_common.
func exportAligned(addr, size, offset uint64) error {
	if addr%pageSize != 0 || size == 0 || size%pageSize != 0 || offset%pageSize != 0 {
		return unix.EINVAL
	}
	return nil
}

// exportErrno maps the simulator's export failures to errno values: no
// descriptor left is EMFILE as from get_unused_fd_flags, the rest ENOMEM.
func exportErrno(err error) error {
	var errno unix.Errno
	switch {
	case errors.Is(err, errDRAMClosed):
		return unix.ENODEV
	case errors.As(err, &errno) && (errno == unix.EMFILE || errno == unix.ENFILE):
		return errno
	}
	return unix.ENOMEM
}

// reapExports forgets the exports whose files were all closed, as
// hl_release_dmabuf does when the dma-buf goes away. c.mu must be held for
// writing.
func (c *context) reapExports() {
	if len(c.exports) == 0 {
		return
	}
	live := map[*segment]bool{}
	kept := c.exports[:0]
	for _, e := range c.exports {
		var alive bool
		if e.v != nil {
			alive = c.dev.dram.viewAlive(e.v)
		} else if a, ok := live[e.seg]; ok {
			alive = a
		} else {
			alive = c.dev.dram.segmentLive(e.seg)
			live[e.seg] = alive
		}
		if alive {
			kept = append(kept, e)
		} else if e.m != nil {
			e.m.exportCnt--
		}
	}
	clear(c.exports[len(kept):])
	c.exports = kept
}

// exported reports whether a dma-buf the context exported is still open.
func (c *context) exported() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reapExports()
	return len(c.exports) > 0
}

// fini is hl_vm_ctx_fini: every mapping goes, the context's allocations
// are freed and subtracted from the device's DRAM usage (Gaudi: the usage
// restarts from 0), and exported ranges return to the DRAM memfd.
func (c *context) fini() {
	d := c.dev
	c.mu.Lock()
	for _, m := range c.index {
		if m.pack != nil {
			m.pack.mappings.Add(-1)
		}
		if m.imported != nil {
			m.imported.release()
		}
	}
	c.maps, c.index, c.exports = map[uint64]*mapping{}, nil, nil
	c.mu.Unlock()
	vm := d.vm
	var freed []dramRun
	var pages []uint64
	vm.mu.Lock()
	for id, pk := range vm.packs {
		if pk.asid == c.asid {
			freed = append(freed, d.packRuns(pk, 0, pk.total)...)
			pages = append(pages, pk.allocated()...)
			d.dramUsed.Add(-int64(pk.total))
			delete(vm.packs, id)
			vm.handles.remove(id)
		}
	}
	vm.mu.Unlock()
	if !d.prof.dramVirtual {
		d.dramUsed.Store(0)
		// Gaudi addresses DRAM physically: the context had all of it.
		freed = []dramRun{{0, d.prof.dramSize}}
	}
	d.dram.releaseAll()
	d.dram.scrub(freed) // dram_scrub.go
	// Only scrubbed pages go back to the allocator (see freeDevice).
	vm.mu.Lock()
	vm.freePages(pages)
	vm.mu.Unlock()
}
