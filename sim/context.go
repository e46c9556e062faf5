package sim

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
)

// context is the memory side of a compute context (struct hl_ctx): its VA
// ranges, the mappings MAP made (the driver's mem_hash), the DRAM it
// allocated, and the dma-bufs it exported. Device.Open creates it with the
// compute file; it goes away when the file and every export are closed.
//
// # Address resolution for DMA
//
// The engines reach memory through the context's device MMU. access and
// resolve turn a device address into what it reaches, without copying:
//
//   - a host mapping (MAP with HL_MEM_USERPTR) gives a []byte over the
//     caller's own memory at the matching offset;
//   - a DRAM mapping (MAP of an ALLOC handle, Gaudi2) gives an offset into
//     Device.dram, page by page (the pages of an allocation need not be
//     contiguous);
//   - on Gaudi, whose DRAM has no MMU, a physical DRAM address gives the
//     offset directly.
//
// Lookups are O(log n) in the number of mappings: the mappings are kept
// sorted by device address. An address that no mapping covers fails with
// a *vaFault, as the MMU would raise a page fault.
type context struct {
	dev  *Device
	asid uint32

	// mu is the driver's mem_hash_lock and va_range locks in one: writers
	// change mappings, readers (resolve, access) hold it for reading so a
	// mapping cannot disappear under a transfer.
	mu      sync.RWMutex
	ranges  [vaTypes]*vaRange
	maps    map[uint64]*mapping // by the VA MAP returned
	index   []*mapping          // sorted by vaStart
	exports []*export           // exports not yet known to be closed

	// cbPool is the 4 GB host VA block hl_cb_va_pool_init reserves for
	// command buffers mapped with HL_CB_FLAGS_MAP (0 on Gaudi).
	cbPool uint64
	// internalCB is the 2 MB host VA block the ASIC's internal CB pool
	// takes in every user context.
	internalCB uint64

	dramPhysMem atomic.Int64 // ctx->dram_phys_mem

	rem *remoteMem // the served process whose memory host mappings reach, or nil (served.go)
	// Strict mode (strict_dma.go): the compute file, and the ranges
	// unmapped while CSs were in flight.
	file *File
	gone tombstones
}

// mapping is a hash node (struct hl_vm_hash_node) with what it maps.
type mapping struct {
	va        uint64 // the address MAP returned: vaStart + the in-page offset
	vaStart   uint64 // start of the reserved VA block
	size      uint64 // bytes of the block (whole pages)
	pageSize  uint64
	rangeType int

	// Host memory (HL_MEM_USERPTR).
	host     bool
	hostAddr uint64 // host_virt_addr as given
	hostSize uint64 // mem_size as given

	// Device memory.
	pack *physPack

	// An imported dma-buf (REG_DMABUF_FD): a host mapping over the
	// simulator's mapping of the buffer, released with the mapping.
	imported *importMap

	exportCnt int // live dma-buf exports of this mapping

	// Strict mode: when the mapping was made (strictState.clock), and
	// what host memory was mapped (strict_host_unsafe.go).
	mappedAt uint64
	ident    *hostIdent
}

// hostBase is the first host byte the mapping reaches: the page of
// host_virt_addr.
func (m *mapping) hostBase() uint64 { return m.hostAddr &^ (hostPageSize - 1) }

// newContext builds a user context as hl_ctx_init does: the VA ranges
// (hl_vm_ctx_init), the command buffer VA pool (hl_cb_va_pool_init) and
// the ASIC's ctx_init reservations.
func newContext(d *Device) *context {
	v := &d.prof.vm
	c := &context{dev: d, asid: 1, maps: map[uint64]*mapping{}}
	c.ranges[vaHost] = newVARange(v.host, v.hostPage)
	if v.hugeRange {
		c.ranges[vaHostHuge] = newVARange(v.hostHuge, v.hugePage)
	} else {
		c.ranges[vaHostHuge] = c.ranges[vaHost]
	}
	c.ranges[vaDRAM] = newVARange(v.dram, d.prof.dramPageSize)
	if v.cbPoolSize != 0 {
		c.cbPool = c.reserve(vaHost, v.cbPoolSize)
	}
	c.internalCB = c.reserve(vaHost, v.internalCBSize)
	return c
}

// reserve is hl_reserve_va_block with no alignment requirement.
func (c *context) reserve(rangeType int, size uint64) uint64 {
	r := c.ranges[rangeType]
	return r.get(&c.dev.prof.vm, vaRequest{size: size, align: r.pageSize, rangeType: rangeType})
}

// insert adds a mapping to the hash and the index. c.mu must be held.
func (c *context) insert(m *mapping) {
	if c.dev.strict.on {
		m.mappedAt = c.dev.strict.clock.Add(1)
	}
	c.maps[m.va] = m
	i := sort.Search(len(c.index), func(i int) bool { return c.index[i].vaStart >= m.vaStart })
	c.index = append(c.index, nil)
	copy(c.index[i+1:], c.index[i:])
	c.index[i] = m
}

// remove deletes a mapping from the hash and the index. c.mu must be held.
func (c *context) remove(m *mapping) {
	delete(c.maps, m.va)
	i := sort.Search(len(c.index), func(i int) bool { return c.index[i].vaStart >= m.vaStart })
	if i < len(c.index) && c.index[i] == m {
		c.index = append(c.index[:i], c.index[i+1:]...)
	}
}

// lookup returns the mapping whose block holds va. c.mu must be held.
func (c *context) lookup(va uint64) *mapping {
	i := sort.Search(len(c.index), func(i int) bool { return c.index[i].vaStart > va })
	if i == 0 {
		return nil
	}
	m := c.index[i-1]
	if va-m.vaStart >= m.size {
		return nil
	}
	return m
}

// extentKind tells what an extent reaches.
type extentKind int

const (
	extentHost extentKind = iota + 1 // the caller's memory
	extentDRAM                       // device memory
)

// extent is a contiguous run of what a device address range reaches.
type extent struct {
	kind extentKind
	host []byte     // extentHost: the memory itself
	rem  *remoteMem // extentHost of a served process: its memory at addr, instead of host
	addr uint64
	dram uint64 // extentDRAM: offset into Device.dram
	n    uint64 // bytes
}

// vaFault is the error for an address no mapping covers: on the device,
// an MMU page fault.
type vaFault struct {
	va uint64
}

func (e *vaFault) Error() string { return fmt.Sprintf("device address %#x is not mapped", e.va) }

// resolve returns the first extent of [va, va+n): what va reaches and how
// many bytes from there (at most n) are contiguous. Callers loop until the
// range is covered. The extent stays valid while the mapping exists; use
// access to keep it from being unmapped meanwhile.
func (c *context) resolve(va, n uint64) (extent, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.resolveLocked(va, n)
}

func (c *context) resolveLocked(va, n uint64) (extent, error) {
	e, _, err := c.resolveMapLocked(va, n)
	return e, err
}

// resolveMapLocked is resolveLocked that also returns the mapping that
// holds va (nil for Gaudi's physical DRAM).
func (c *context) resolveMapLocked(va, n uint64) (extent, *mapping, error) {
	if n == 0 {
		return extent{}, nil, nil
	}
	p := &c.dev.prof
	m := c.lookup(va)
	if m == nil {
		if !p.dramVirtual && va >= p.dramBase && va-p.dramBase < p.dramSize {
			// Gaudi: DRAM is addressed physically.
			left := p.dramSize - (va - p.dramBase)
			return extent{kind: extentDRAM, dram: va - p.dramBase, n: min(n, left)}, nil, nil
		}
		return extent{}, nil, &vaFault{va}
	}
	off := va - m.vaStart
	n = min(n, m.size-off)
	if m.host && c.rem != nil && m.imported == nil {
		// A served process's memory; an imported dma-buf is the
		// simulator's own mapping of it (import_unsafe.go).
		return extent{kind: extentHost, rem: c.rem, addr: m.hostBase() + off, n: n}, m, nil
	}
	if m.host {
		return extent{kind: extentHost, host: hostBytes(m.hostBase()+off, n), n: n}, m, nil
	}
	// Device memory: stay inside one run of physically consecutive pages.
	pk := m.pack
	i := off / pk.pageSize
	pa := pk.pages[i] + off%pk.pageSize
	run := pk.pageSize - off%pk.pageSize
	for run < n && i+1 < uint64(len(pk.pages)) && pk.pages[i+1] == pk.pages[i]+pk.pageSize {
		i++
		run += pk.pageSize
	}
	return extent{kind: extentDRAM, dram: pa - p.dramBase, n: min(n, run)}, m, nil
}

// access calls fn for each extent of [va, va+n) in order, with the
// mappings held so UNMAP waits until it returns; fn must not issue MEMORY
// operations. This is the entry point for DMA: copy between the extents
// of the source and the destination. Host extents are plain memory. DRAM
// extents go through Device.dram: ReadAt to copy device memory into host
// memory (it leaves unwritten memory unallocated), WriteAt from host
// memory, Copy between two DRAM ranges, Zero for a memset to 0, view for
// direct access.
func (c *context) access(va, n uint64, fn func(e extent) error) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for n > 0 {
		e, err := c.resolveLocked(va, n)
		if err != nil {
			return err
		}
		if err := fn(e); err != nil {
			return err
		}
		va += e.n
		n -= e.n
	}
	return nil
}
