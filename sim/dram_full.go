package sim

import "sync/atomic"

// Reading device memory must not make never-written pages resident, so a
// read normally asks the file where its data is (SEEK_DATA/SEEK_HOLE). On
// tmpfs SEEK_HOLE walks every page up to the next hole, which for a large,
// fully written buffer costs more than the copy. fullChunks remembers the
// 64 KiB chunks a write covered entirely: a read that lies in such chunks
// only copies. A mark is by DRAM offset and holds whichever file holds
// the chunk's bytes (an export moves them into a memfd of its own and
// back, data pages as data pages). Marks are cleared whenever pages may
// be given back (hole punching, reset); a missing mark only means the
// slower path. The chunks
// were 2 MiB, which no buffer under 2 MiB ever filled: each read of one
// probed it page by page. At 64 KiB the bitmap takes 2 KiB per GiB of
// device memory (192 KiB for a Gaudi2's 96 GiB).
type fullChunks struct {
	bits []atomic.Uint64
}

const fullChunkShift = 16

func newFullChunks(size uint64) fullChunks {
	n := (size>>fullChunkShift + 63) / 64
	return fullChunks{bits: make([]atomic.Uint64, n)}
}

// mark records the chunks [off, off+n) covers entirely.
func (f *fullChunks) mark(off, n uint64) {
	lo := (off + 1<<fullChunkShift - 1) >> fullChunkShift
	hi := (off + n) >> fullChunkShift
	if lo >= hi {
		return
	}
	f.words(lo, hi-1, func(w *atomic.Uint64, mask uint64) bool {
		if w.Load()&mask != mask {
			w.Or(mask)
		}
		return true
	})
}

// clear forgets the chunks [off, off+n) touches.
func (f *fullChunks) clear(off, n uint64) {
	if n == 0 {
		return
	}
	f.words(off>>fullChunkShift, (off+n-1)>>fullChunkShift, func(w *atomic.Uint64, mask uint64) bool {
		w.And(^mask)
		return true
	})
}

// all reports whether every chunk [off, off+n) touches is marked.
func (f *fullChunks) all(off, n uint64) bool {
	if n == 0 {
		return true
	}
	ok := true
	f.words(off>>fullChunkShift, (off+n-1)>>fullChunkShift, func(w *atomic.Uint64, mask uint64) bool {
		ok = w.Load()&mask == mask
		return ok
	})
	return ok
}

// words calls fn with each bitmap word that chunks [lo, hi] touch and the
// mask of those chunks in it, a word at a time (a reset clears a whole
// device's), until fn returns false.
func (f *fullChunks) words(lo, hi uint64, fn func(w *atomic.Uint64, mask uint64) bool) {
	for c := lo; c <= hi; c = c&^63 + 64 {
		i, last := c/64, uint64(63)
		if i == hi/64 {
			last = hi % 64
		}
		mask := ^uint64(0) >> (63 - last) &^ (1<<(c%64) - 1)
		if !fn(&f.bits[i], mask) {
			return
		}
	}
}
