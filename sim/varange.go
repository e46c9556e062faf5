package sim

import "sort"

// The VA ranges of a context (struct hl_va_range): each keeps the free
// blocks of its part of the device's virtual address space, sorted and
// merged, and hands out blocks exactly as get_va_block in common/memory.c
// does, including its quirks (the inclusive end in the hint test, the
// 32-bit size in the reserved-range test).

// Range types, in the driver's enum hl_va_range_type order.
const (
	vaHost     = iota // HL_VA_RANGE_TYPE_HOST
	vaHostHuge        // HL_VA_RANGE_TYPE_HOST_HUGE
	vaDRAM            // HL_VA_RANGE_TYPE_DRAM
	vaTypes
)

// vaRange is one range: its inclusive bounds, page size and free blocks.
type vaRange struct {
	span     vaSpan
	pageSize uint64
	free     []vaSpan // sorted by start, never adjacent (merged)
}

func newVARange(s vaSpan, page uint64) *vaRange {
	return &vaRange{span: s, pageSize: page, free: []vaSpan{s}}
}

// vaRequest is what get_va_block is asked for.
type vaRequest struct {
	size      uint64
	hint      uint64
	align     uint64 // va_block_align
	rangeType int
	force     bool // HL_MEM_FORCE_HINT
}

// get reserves a block and returns its start, or 0 when none fits or a
// forced hint cannot be honoured (the driver's "return 0").
func (r *vaRange) get(v *vmProps, q vaRequest) uint64 {
	size, hint := q.size, q.hint
	pow2 := isPow2(r.pageSize)
	var alignMask uint64
	if pow2 {
		alignMask = ^(q.align - 1)
	} else {
		// Non-power-of-two ranges work in whole pages.
		size = ceilDiv(size, r.pageSize) * r.pageSize
	}
	tmpHint := hint &^ v.dramHintsMask
	if (pow2 && hint&(q.align-1) != 0) ||
		(!pow2 && v.isDRAMVA(hint) && tmpHint%r.pageSize != 0) {
		if q.force {
			return 0
		}
		hint = 0
	}

	best := -1
	var start, bestSize uint64
	for i, b := range r.free {
		valid := b.start
		if pow2 && valid&(q.align-1) != 0 {
			valid = valid&alignMask + q.align
			if valid > b.end {
				continue
			}
		}
		validSize := b.end - valid + 1
		if validSize < size {
			continue
		}
		if v.hintsReserved && hint == 0 && v.crossesHints(q.rangeType, valid, size) {
			continue
		}
		if best < 0 || validSize < bestSize {
			best, start, bestSize = i, valid, validSize
		}
		if hint != 0 && hint >= valid && hint+size <= b.end {
			best, start = i, hint
			break
		}
	}
	if best < 0 {
		return 0
	}
	if q.force && start != hint {
		return 0
	}
	b := r.free[best]
	// What precedes the block goes back to the list; the block shrinks
	// from its start, or goes away when it is used up.
	var prev *vaSpan
	if start > b.start {
		prev = &vaSpan{b.start, start - 1}
	}
	if rest := b.end - start + 1; rest > size {
		r.free[best].start = start + size
	} else {
		r.free = append(r.free[:best], r.free[best+1:]...)
	}
	if prev != nil {
		r.add(prev.start, prev.end)
	}
	return start
}

// add returns [start, end] to the free list and merges it with its
// neighbours (add_va_block_locked). It reports false, changing nothing,
// when the block overlaps a free one.
func (r *vaRange) add(start, end uint64) bool {
	i := sort.Search(len(r.free), func(i int) bool { return r.free[i].start > start })
	if i > 0 && r.free[i-1].end >= start {
		return false
	}
	if i < len(r.free) && r.free[i].start <= end {
		return false
	}
	r.free = append(r.free, vaSpan{})
	copy(r.free[i+1:], r.free[i:])
	r.free[i] = vaSpan{start, end}
	if i+1 < len(r.free) && r.free[i].end+1 == r.free[i+1].start {
		r.free[i].end = r.free[i+1].end
		r.free = append(r.free[:i+1], r.free[i+2:]...)
	}
	if i > 0 && r.free[i-1].end+1 == r.free[i].start {
		r.free[i-1].end = r.free[i].end
		r.free = append(r.free[:i], r.free[i+1:]...)
	}
	return true
}

// isDRAMVA is hl_is_dram_va: a dmmu page at va lies inside the DMMU range.
func (v *vmProps) isDRAMVA(va uint64) bool {
	return areaInside(va, v.dmmuPage, v.dmmuStart, v.dmmuEnd)
}

// crossesHints is is_hint_crossing_range. The driver passes the size as a
// u32, so sizes of 4 GB and more are taken modulo 4 GB.
func (v *vmProps) crossesHints(rangeType int, start, size uint64) bool {
	r := v.hintsHostHuge
	switch rangeType {
	case vaDRAM:
		r = v.hintsDRAM
	case vaHost:
		r = v.hintsHost
	}
	end := start + uint64(uint32(size)) - 1
	return start <= r.end && r.start <= end
}

// areaInside is hl_mem_area_inside_range.
func areaInside(addr, size, start, end uint64) bool {
	e := addr + size
	return addr >= start && e <= end && e > addr
}

func ceilDiv(n, d uint64) uint64 { return (n + d - 1) / d }
