package sim

import "sync/atomic"

// Reading device memory must not make never-written pages resident, so a
// read normally asks the file where its data is (SEEK_DATA/SEEK_HOLE). On
// tmpfs SEEK_HOLE walks every page up to the next hole, which for a large,
// fully written buffer costs more than the copy. fullChunks remembers the
// 2 MiB chunks a write covered entirely: a read that lies in such chunks
// only copies. Marks are cleared whenever pages may be given back (hole
// punching, reset); a missing mark only means the slower path.
type fullChunks struct {
	bits []atomic.Uint64
}

const fullChunkShift = 21

func newFullChunks(size uint64) fullChunks {
	n := (size>>fullChunkShift + 63) / 64
	return fullChunks{bits: make([]atomic.Uint64, n)}
}

// mark records the chunks [off, off+n) covers entirely.
func (f *fullChunks) mark(off, n uint64) {
	lo := (off + 1<<fullChunkShift - 1) >> fullChunkShift
	hi := (off + n) >> fullChunkShift
	for c := lo; c < hi; c++ {
		if w := &f.bits[c/64]; w.Load()&(1<<(c%64)) == 0 {
			w.Or(1 << (c % 64))
		}
	}
}

// clear forgets the chunks [off, off+n) touches.
func (f *fullChunks) clear(off, n uint64) {
	if n == 0 {
		return
	}
	lo := off >> fullChunkShift
	hi := (off + n - 1) >> fullChunkShift
	for c := lo; c <= hi; c++ {
		f.bits[c/64].And(^uint64(1 << (c % 64)))
	}
}

// all reports whether every chunk [off, off+n) touches is marked.
func (f *fullChunks) all(off, n uint64) bool {
	if n == 0 {
		return true
	}
	lo := off >> fullChunkShift
	hi := (off + n - 1) >> fullChunkShift
	for c := lo; c <= hi; c++ {
		if f.bits[c/64].Load()&(1<<(c%64)) == 0 {
			return false
		}
	}
	return true
}
