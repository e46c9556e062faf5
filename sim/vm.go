package sim

import (
	"container/heap"
	"sync"
	"sync/atomic"
)

// This file holds the device-wide half of the driver's virtual memory
// module (struct hl_vm in common/habanalabs.h, hl_vm_init in
// common/memory.c): the pool of DRAM pages that ALLOC takes from and the
// handles of the allocations. The per-context half (VA ranges, mappings)
// is in context.go.

// physPack is one ALLOC: struct hl_vm_phys_pg_pack for device memory.
type physPack struct {
	handle     uint32
	asid       uint32
	pageSize   uint64
	pages      []uint64 // physical address of every page
	units      []uint64 // the allocator's pages behind them, when larger (Gaudi3)
	total      uint64   // npages × pageSize
	flags      uint32   // the ALLOC flags (HL_MEM_CONTIGUOUS, HL_MEM_SHARED)
	contiguous bool
	mappings   atomic.Int32 // mapping_cnt: live MAPs of the handle
}

// allocated returns the allocator's pages the pack holds.
func (pk *physPack) allocated() []uint64 {
	if pk.units != nil {
		return pk.units
	}
	return pk.pages
}

// devVM is the device's struct hl_vm. Its lock plays the driver's idr_lock;
// the pool is a gen_pool over [dram_user_base_address, dram_end_address).
type devVM struct {
	mu       sync.Mutex
	base     uint64 // dram_user_base_address
	pageSize uint64 // dram_page_size
	free     []bool // per pool page: true while free
	nfree    int
	handles  idAllocator
	packs    map[uint32]*physPack
}

func newDevVM(p *profile) *devVM {
	n := int((p.dramSize - (p.dramUserBase - p.dramBase)) / p.dramPageSize)
	vm := &devVM{
		base:     p.dramUserBase,
		pageSize: p.dramPageSize,
		free:     make([]bool, n),
		nfree:    n,
		handles:  idAllocator{next: 1},
		packs:    map[uint32]*physPack{},
	}
	for i := range vm.free {
		vm.free[i] = true
	}
	return vm
}

// allocPages takes n pages, as consecutive pages when contiguous, first
// fit from the lowest address like gen_pool_alloc. The pool's granule is
// 8 MB (DRAM_POOL_PAGE_SIZE) on Gaudi2, but every allocation is a whole
// number of DRAM pages from a page-aligned base, so a first fit over pages
// takes the same addresses. It returns nil when the pool cannot satisfy
// the request. vm.mu must be held.
func (vm *devVM) allocPages(n uint64, contiguous bool) []uint64 {
	if n == 0 || n > uint64(vm.nfree) {
		return nil
	}
	pages := make([]uint64, 0, n)
	if contiguous {
		run := uint64(0)
		for i := range vm.free {
			if !vm.free[i] {
				run = 0
				continue
			}
			run++
			if run == n {
				first := i + 1 - int(n)
				for j := first; j <= i; j++ {
					vm.free[j] = false
					pages = append(pages, vm.base+uint64(j)*vm.pageSize)
				}
				vm.nfree -= int(n)
				return pages
			}
		}
		return nil
	}
	for i := range vm.free {
		if vm.free[i] {
			vm.free[i] = false
			pages = append(pages, vm.base+uint64(i)*vm.pageSize)
			if uint64(len(pages)) == n {
				break
			}
		}
	}
	vm.nfree -= len(pages)
	return pages
}

// freePages returns pages to the pool. vm.mu must be held.
func (vm *devVM) freePages(pages []uint64) {
	for _, pa := range pages {
		vm.free[(pa-vm.base)/vm.pageSize] = true
	}
	vm.nfree += len(pages)
}

// idAllocator hands out the lowest free id from next's initial value up,
// as idr_alloc(idr, ptr, start, 0) does.
type idAllocator struct {
	next  uint32  // every id from next up is free
	freed idsHeap // free ids below next
}

func (a *idAllocator) alloc() uint32 {
	if a.freed.Len() > 0 {
		return heap.Pop(&a.freed).(uint32)
	}
	id := a.next
	a.next++
	return id
}

func (a *idAllocator) remove(id uint32) { heap.Push(&a.freed, id) }

// idsHeap is a min-heap of ids.
type idsHeap []uint32

func (h idsHeap) Len() int           { return len(h) }
func (h idsHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h idsHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *idsHeap) Push(x any)        { *h = append(*h, x.(uint32)) }
func (h *idsHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
