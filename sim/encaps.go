package sim

import (
	"math"
	"sync"

	"golang.org/x/sys/unix"
)

// Encapsulated signals (cs_ioctl_reserve_signals and
// cs_ioctl_unreserve_signals in common/command_submission.c,
// encaps_sig_first_staged_cs_handler in common/hw_queue.c): a context
// reserves count signals of a queue's sync stream, and its own command
// buffers signal them (MSG_SHORT to the SOB whose address the reservation
// answers). The reservation advances the stream's next_sob_val by count
// (switching SOBs as a signal CS does, EINVAL when the other SOB is
// still in use) and answers a handle id (the smallest free, from 1), the
// SOB's address and the stream's next_sob_val. A staged submission whose
// first part carries HL_CS_FLAGS_ENCAP_SIGNALS and the handle id claims
// the reservation: its sequence number is then what waits name, with an
// offset (1 waits for the first reserved signal, k for the k-th, 0 for
// the signal after the reservation). Unreserving is EINVAL for an unknown
// handle, or when other signals moved the stream since the reservation
// (next_sob_val or the SOB changed); it gives the signals back.
//
// Checks, in order: count >= HL_MAX_SOB_VAL, a queue index out of range
// or a queue without sync streams are EINVAL. Reservations a context
// leaves behind give their SOB references back when its file is released
// (hl_encaps_sig_mgr_fini); a hard reset drops the reservations no
// submission claimed (release_reserved_encaps_signals), and restarts the
// streams.

// encapsHandle is struct hl_cs_encaps_sig_handle. Guarded by
// encapsMgr.mu.
type encapsHandle struct {
	id     uint32
	q      uint32
	count  uint32
	sob    *hwSOB
	preVal uint32 // pre_sob_val
	csSeq  uint64 // the claiming staged submission, ULLONG_MAX until then
	refs   int
}

// encapsMgr is a context's struct hl_encaps_signals_mgr.
type encapsMgr struct {
	mu      sync.Mutex
	handles map[uint32]*encapsHandle
}

// reserveSignals is cs_ioctl_reserve_signals.
func (c *csCtx) reserveSignals(q, count uint32) (id, sobAddr, next uint32, err error) {
	p := &c.dev.prof
	if count >= hlMaxSOBVal || int(q) >= len(c.hw.props) || !p.syncStreamQueue(q) {
		return 0, 0, 0, unix.EINVAL
	}
	m := &c.sig
	h := &encapsHandle{q: q, count: count, csSeq: math.MaxUint64, refs: 1}
	c.hw.sm.track(c)
	m.mu.Lock()
	if m.handles == nil {
		m.handles = map[uint32]*encapsHandle{}
	}
	h.id = 1
	for m.handles[h.id] != nil {
		h.id++
	}
	m.handles[h.id] = h
	m.mu.Unlock()

	sm := c.hw.sm
	sm.mu.Lock()
	st := sm.streamLocked(q)
	sob, werr := sm.wraparoundLocked(st, count, true)
	if werr != nil {
		sm.mu.Unlock()
		m.mu.Lock()
		delete(m.handles, h.id)
		m.mu.Unlock()
		return 0, 0, 0, unix.EINVAL
	}
	h.sob = sob
	h.preVal = st.next - count
	next = st.next
	sm.mu.Unlock()
	return h.id, sob.addr, next, nil
}

// unreserveSignals is cs_ioctl_unreserve_signals.
func (c *csCtx) unreserveSignals(id uint32) error {
	m := &c.sig
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.handles[id]
	if h == nil {
		return unix.EINVAL
	}
	sm := c.hw.sm
	sm.mu.Lock()
	st := sm.streamLocked(h.q)
	cur := &st.sob[st.curr]
	if h.preVal+h.count != st.next || cur.addr != h.sob.addr {
		sm.mu.Unlock()
		return unix.EINVAL
	}
	st.next -= h.count
	sm.putSOBLocked(cur)
	sm.mu.Unlock()
	delete(m.handles, id)
	return nil
}

// findEncaps returns, with a reference, the handle claimed by the staged
// submission seq (the lowest id first, as idr_for_each_entry), or nil.
func (c *csCtx) findEncaps(seq uint64) *encapsHandle {
	m := &c.sig
	m.mu.Lock()
	defer m.mu.Unlock()
	var found *encapsHandle
	for _, h := range m.handles {
		if h.csSeq == seq && (found == nil || h.id < found.id) {
			found = h
		}
	}
	if found == nil || found.refs == 0 {
		return nil
	}
	found.refs++
	return found
}

// claimEncaps is encaps_sig_first_staged_cs_handler: the first part of a
// staged submission with encapsulated signals takes the reservation id.
func (c *csCtx) claimEncaps(id uint32, s *cs) error {
	m := &c.sig
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.handles[id]
	if h == nil {
		return unix.EINVAL
	}
	h.csSeq = s.seq
	fc := s.fence
	fc.encaps, fc.sob, fc.sobVal = h, h.sob, h.preVal+h.count
	return nil
}

// putEncaps drops a reference to a handle; the last one removes it (and
// with putSOB also drops its SOB reference).
func (c *csCtx) putEncaps(h *encapsHandle, putSOB bool) {
	m := &c.sig
	m.mu.Lock()
	h.refs--
	last := h.refs == 0
	if last && m.handles[h.id] == h {
		delete(m.handles, h.id)
	}
	m.mu.Unlock()
	if last && putSOB {
		sm := c.hw.sm
		sm.mu.Lock()
		sm.putSOBLocked(h.sob)
		sm.mu.Unlock()
	}
}

// putEncapsIf is putEncaps(h, false) for a handle that may be nil.
func (c *csCtx) putEncapsIf(h *encapsHandle) {
	if h != nil {
		c.putEncaps(h, false)
	}
}

// track records a context that holds reservations, for a reset.
func (sm *syncMgr) track(c *csCtx) {
	sm.mu.Lock()
	if sm.sigCtxs == nil {
		sm.sigCtxs = map[*csCtx]struct{}{}
	}
	sm.sigCtxs[c] = struct{}{}
	sm.mu.Unlock()
}

// dropUnclaimed is release_reserved_encaps_signals, after a reset
// restarted the streams: every reservation no submission claimed goes.
func (sm *syncMgr) dropUnclaimed() {
	sm.mu.Lock()
	ctxs := make([]*csCtx, 0, len(sm.sigCtxs))
	for c := range sm.sigCtxs {
		ctxs = append(ctxs, c)
	}
	sm.mu.Unlock()
	for _, c := range ctxs {
		m := &c.sig
		m.mu.Lock()
		for id, h := range m.handles {
			if h.csSeq == math.MaxUint64 {
				delete(m.handles, id)
			}
		}
		m.mu.Unlock()
	}
}

// releaseEncaps is hl_encaps_sig_mgr_fini, when the context's file is
// released: the reservations left give their SOB references back.
func (c *csCtx) releaseEncaps() {
	m := &c.sig
	m.mu.Lock()
	left := make([]*encapsHandle, 0, len(m.handles))
	for id, h := range m.handles {
		left = append(left, h)
		delete(m.handles, id)
	}
	m.mu.Unlock()
	sm := c.hw.sm
	sm.mu.Lock()
	for _, h := range left {
		if h.sob != nil {
			sm.putSOBLocked(h.sob)
		}
	}
	delete(sm.sigCtxs, c)
	sm.mu.Unlock()
}
