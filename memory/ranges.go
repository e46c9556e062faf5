package memory

import "sort"

// span is a half-open address range [start, end) with a value.
type span[T any] struct {
	start, end uint64
	val        T
}

// spans is a set of non-overlapping ranges kept sorted by start, so the
// range covering an address is found by binary search in O(log n). The
// starts are kept in their own array: the search touches only that dense
// array, which keeps it in cache. Not safe for concurrent use; its owner
// locks.
type spans[T any] struct {
	starts []uint64
	s      []span[T]
	// top holds every blockth start: a search walks top (small enough to
	// stay in the first-level cache), then scans one block of starts.
	top []uint64
}

// block is the number of starts one entry of top stands for.
const block = 16

// find returns the range that covers addr.
func (r *spans[T]) find(addr uint64) (span[T], bool) {
	starts, top := r.starts, r.top
	if len(starts) == 0 || starts[0] > addr {
		return span[T]{}, false
	}
	// The last block whose first start is at or before addr.
	lo, hi := 0, len(top)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if top[m] <= addr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	i := (lo - 1) * block
	end := min(i+block, len(starts))
	for i+1 < end && starts[i+1] <= addr {
		i++
	}
	if sp := r.s[i]; addr < sp.end {
		return sp, true
	}
	return span[T]{}, false
}

// reindex rebuilds top after starts changed.
func (r *spans[T]) reindex() {
	r.top = r.top[:0]
	for i := 0; i < len(r.starts); i += block {
		r.top = append(r.top, r.starts[i])
	}
}

// overlaps reports whether [start, end) intersects a range of the set.
func (r *spans[T]) overlaps(start, end uint64) bool {
	i := sort.Search(len(r.s), func(i int) bool { return r.s[i].end > start })
	return i < len(r.s) && r.s[i].start < end
}

// insert adds [start, end); it reports false, and adds nothing, when the
// range is empty or overlaps one already present.
func (r *spans[T]) insert(start, end uint64, v T) bool {
	if end <= start || r.overlaps(start, end) {
		return false
	}
	i := sort.Search(len(r.starts), func(i int) bool { return r.starts[i] >= start })
	r.s = append(r.s, span[T]{})
	copy(r.s[i+1:], r.s[i:])
	r.s[i] = span[T]{start, end, v}
	r.starts = append(r.starts, 0)
	copy(r.starts[i+1:], r.starts[i:])
	r.starts[i] = start
	r.reindex()
	return true
}

// remove deletes the range that starts at start; it reports whether there
// was one.
func (r *spans[T]) remove(start uint64) bool {
	i := sort.Search(len(r.starts), func(i int) bool { return r.starts[i] >= start })
	if i == len(r.starts) || r.starts[i] != start {
		return false
	}
	copy(r.s[i:], r.s[i+1:])
	r.s[len(r.s)-1] = span[T]{}
	r.s = r.s[:len(r.s)-1]
	copy(r.starts[i:], r.starts[i+1:])
	r.starts = r.starts[:len(r.starts)-1]
	r.reindex()
	return true
}

// len returns the number of ranges.
func (r *spans[T]) len() int { return len(r.s) }
