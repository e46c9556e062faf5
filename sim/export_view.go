package sim

import (
	"os"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// Overlapping exports.
//
// export_dmabuf_from_addr (drivers/accel/habanalabs/common/memory.c)
// accepts any number of exports of a mapping (memhash_node_export_get
// counts them in hnode->export_cnt), overlapping or not; each dma-buf
// maps the same device pages. The simulator's first export of a range
// moves its bytes into a memfd of their own (a segment, export.go), and
// a memfd cannot share pages with another. An export that overlaps a
// live export (or live view) without being exactly its range is
// therefore a view: no bytes move, and the file handed out is a
// write-only file of a witness memfd (export_witness.go) that stands for
// the view's runs of device memory. Its write lease tells whether it is
// open in any process; the exporting process (an in-process simulator,
// or the hlsim server for a served node, where every import runs) reads
// it through the DRAM mapping and imports it by mapping, in order, the
// files that hold its runs. While a view is live no export splices its
// runs (they would move under its importers), and an import keeps the
// segments it maps live (they are mapped outside the DRAM mapping).
// Another process's in-process simulator cannot import a view
// (EOPNOTSUPP), nor can the test hook read it there.

// view is an export that shares device memory with another live export.
type view struct {
	runs     []dramRun
	size     uint64
	readOnly bool // exported O_RDONLY: imports map it privately
	witness  int
	wprobe   int
	id       fileID
}

// newView makes a view of runs and returns a write-only descriptor of
// its witness with O_CLOEXEC and O_NONBLOCK from flags. m.mu must be
// held for writing.
func (m *sparseMem) newView(runs []dramRun, flags int) (int, *view, error) {
	var size uint64
	for _, r := range runs {
		size += r.n
	}
	w, probe, id, err := newWitness(size)
	if err != nil {
		return -1, nil, err
	}
	v := &view{runs: slices.Clone(runs), size: size, readOnly: flags&unix.O_ACCMODE == unix.O_RDONLY, witness: w, wprobe: probe, id: id}
	fd, err := openAgain(w, flags&(unix.O_CLOEXEC|unix.O_NONBLOCK)|unix.O_WRONLY)
	if err != nil {
		v.close()
		return -1, nil, err
	}
	register(id, witnessed{m: m, v: v})
	m.views = append(m.views, v)
	return fd, v, nil
}

// close closes the view's witness and probe and forgets it.
func (v *view) close() {
	if v.witness < 0 {
		return
	}
	unregister(v.id)
	unix.Close(v.witness)
	if v.wprobe >= 0 {
		unix.Close(v.wprobe)
	}
	v.witness, v.wprobe = -1, -1
}

// viewLive reports whether a file of the view's witness is open outside
// the simulator's own: a descriptor handed out or an import's. m.mu must
// be held.
func (m *sparseMem) viewLive(v *view) bool {
	if v.witness < 0 || m.closed {
		return false
	}
	if v.wprobe >= 0 {
		return leaseRefused(v.wprobe)
	}
	// No lease probe: this process's descriptors are all that can be
	// seen.
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return true
	}
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n == v.witness {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(n, &st) == nil && (fileID{st.Dev, st.Ino}) == v.id {
			return true
		}
	}
	return false
}

// liveViewOver reports whether a live view shares bytes with runs, and
// closes the views that are no longer live. m.mu must be held for
// writing.
func (m *sparseMem) liveViewOver(runs []dramRun) bool {
	found := false
	kept := m.views[:0]
	for _, v := range m.views {
		if !m.viewLive(v) {
			v.close()
			continue
		}
		kept = append(kept, v)
		if runsOverlap(v.runs, runs) {
			found = true
		}
	}
	clear(m.views[len(kept):])
	m.views = kept
	return found
}

// runsOverlap reports whether two lists of DRAM runs share a byte.
func runsOverlap(a, b []dramRun) bool {
	for _, x := range a {
		for _, y := range b {
			if x.off < y.off+y.n && y.off < x.off+x.n {
				return true
			}
		}
	}
	return false
}

// readView reads len(b) bytes at off of view v from the device memory.
func (m *sparseMem) readView(v *view, off int64, b []byte) (int, error) {
	if off < 0 {
		return 0, unix.EINVAL
	}
	n := 0
	pos := uint64(off)
	for _, r := range v.runs {
		if n == len(b) {
			break
		}
		if pos >= r.n {
			pos -= r.n
			continue
		}
		k := min(uint64(len(b)-n), r.n-pos)
		if err := m.ReadAt(b[n:n+int(k)], r.off+pos); err != nil {
			return n, err
		}
		n += int(k)
		pos = 0
	}
	return n, nil
}

// viewAlive reports whether view v is still one of m's (for segmentLive's
// callers: the context's exports).
func (m *sparseMem) viewAlive(v *view) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.viewLive(v) {
		return true
	}
	v.close()
	return false
}
