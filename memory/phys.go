package memory

import "sort"

// physAlloc hands out ranges of device DRAM where the driver does not:
// first-generation Gaudi addresses DRAM physically and its ALLOC only
// accounts, so the library keeps the free list. First fit, with adjacent
// free ranges merged. Not safe for concurrent use; the Manager locks.
type physAlloc struct {
	free []physRange // sorted by start, never adjacent
}

type physRange struct{ start, size uint64 }

func newPhysAlloc(base, size uint64) *physAlloc {
	return &physAlloc{free: []physRange{{base, size}}}
}

// alloc takes size bytes aligned to align (a power of two).
func (p *physAlloc) alloc(size, align uint64) (uint64, bool) {
	for i, r := range p.free {
		start := (r.start + align - 1) &^ (align - 1)
		if start < r.start || start-r.start > r.size || r.size-(start-r.start) < size {
			continue
		}
		// Split r into the part before start, the allocation, and the rest.
		before := physRange{r.start, start - r.start}
		after := physRange{start + size, r.start + r.size - (start + size)}
		var repl []physRange
		if before.size > 0 {
			repl = append(repl, before)
		}
		if after.size > 0 {
			repl = append(repl, after)
		}
		p.free = append(p.free[:i], append(repl, p.free[i+1:]...)...)
		return start, true
	}
	return 0, false
}

// release returns [start, start+size) to the free list.
func (p *physAlloc) release(start, size uint64) {
	i := sort.Search(len(p.free), func(i int) bool { return p.free[i].start > start })
	p.free = append(p.free, physRange{})
	copy(p.free[i+1:], p.free[i:])
	p.free[i] = physRange{start, size}
	// Merge with the neighbours.
	if i+1 < len(p.free) && p.free[i].start+p.free[i].size == p.free[i+1].start {
		p.free[i].size += p.free[i+1].size
		p.free = append(p.free[:i+1], p.free[i+2:]...)
	}
	if i > 0 && p.free[i-1].start+p.free[i-1].size == p.free[i].start {
		p.free[i-1].size += p.free[i].size
		p.free = append(p.free[:i], p.free[i+1:]...)
	}
}

// available returns the total free bytes.
func (p *physAlloc) available() uint64 {
	var n uint64
	for _, r := range p.free {
		n += r.size
	}
	return n
}
