package sim

import (
	"math"
	"time"

	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Sync streams: the SIGNAL, WAIT and COLLECTIVE_WAIT CS types
// (cs_ioctl_signal_wait in common/command_submission.c; init_signal_cs and
// init_wait_cs in common/hw_queue.c; the ASICs' gen_signal_cb and
// gen_wait_cb).
//
// Every queue that supports sync streams (Gaudi: the 8 external queues;
// Gaudi2: every queue but the NIC queues and CPU_PQ) owns two reserved SOBs
// (HL_RSVD_SOBS) and one monitor (HL_RSVD_MONS), numbered from the ASIC's
// sync_stream_first_sob/_mon in queue order: Gaudi from SOB 128 and monitor
// 64 of the W_S sync manager, Gaudi2 from SOB 85 and monitor 125 of
// DCORE0's. A queue's stream keeps next_sob_val (the value the next signal
// brings its current SOB to, from 1) and which of its two SOBs is current.
//
// A signal CS is one driver-made job on the queue: a MSG_SHORT adding 1 to
// the current SOB (engine barrier set). It answers the SOB's address
// (Gaudi: the CFG offset of the W_S SOB; Gaudi2: 0, as gaudi2_get_sob_addr
// answers) and the count before it (next_sob_val - 1 after the signal).
// When next_sob_val + count would reach HL_MAX_SOB_VAL (32768) the stream
// switches to its other SOB, which must have no user but the stream
// (refcount 1; EINVAL otherwise); the SOB left behind is zeroed when the
// last CS using it completes (the SOB refcounts, hw_sob_get/put).
//
// A wait CS names one signal CS (num_signal_seq_arr must be 1, EINVAL) of
// the same context: a sequence not yet given out is EINVAL, one already
// gone, or completed, answers success without a CS (seq ULLONG_MAX), one of
// another type is EINVAL. Its job arms the wait queue's monitor to write 1
// to the queue's fence counter 2 once the signal's SOB reaches the signal's
// value, then FENCEs on it: the queue stops until the signal ran. When the
// signal completes between the ioctl's check and the scheduling, the wait
// is dropped and the ioctl still answers success with seq ULLONG_MAX.
//
// A collective wait (Gaudi only; Gaudi2's collective_wait_create_jobs is
// EINVAL) must be on a collective master queue (an external queue, EINVAL
// otherwise) and needs NIC ports: the simulated Gaudi has none, so it is
// always EINVAL, after the master queue check, as the driver answers with
// nic_ports_mask 0.
//
// Packets the driver adds for completion (Gaudi's two MSG_PROTs) are not
// generated: the engines report completion directly (cs.go).

// hlMaxSOBVal is HL_MAX_SOB_VAL.
const hlMaxSOBVal = 1 << 15

// Sync stream numbering (gaudi_set_fixed_properties,
// gaudi2_set_fixed_properties, sync_stream_queue_init).
const (
	gaudiSyncStreamFirstSOB  = 128 // ALIGN(11, 8) * 4 streams * 2 SOBs
	gaudiSyncStreamFirstMon  = 64  // 12 collective queues * 4 + 8 external * 2
	gaudi2SyncStreamFirstSOB = 85  // GAUDI2_RESERVED_SOB_NUMBER
	gaudi2SyncStreamFirstMon = 125 // GAUDI2_RESERVED_MON_NUMBER
	gaudiSMWestSouthBlock    = 3   // index of W_S in syncMgr.blocks
)

// hwSOB is a stream's reserved SOB (struct hl_hw_sob). Guarded by
// syncMgr.mu.
type hwSOB struct {
	id        uint32
	addr      uint32 // sob_addr: the answer's sob_base_addr_offset
	refs      int    // kref
	needReset bool
}

// syncStream is a queue's struct hl_sync_stream_properties. Guarded by
// syncMgr.mu.
type syncStream struct {
	sob     [2]hwSOB
	baseMon uint32
	next    uint32 // next_sob_val
	curr    int    // curr_sob_offset
}

// syncStreamQueue reports whether queue q supports sync streams.
func (p *profile) syncStreamQueue(q uint32) bool {
	if p.dramVirtual {
		return q < 260 && (q < 156 || q > 251) // all but NIC_0_0..NIC_23_3 and CPU_PQ
	}
	return q < 8 // the external queues
}

// syncStreamIndex is the queue's place among the sync stream queues
// (hdev->sync_stream_queue_idx at init).
func (p *profile) syncStreamIndex(q uint32) uint32 {
	if p.dramVirtual && q > 251 {
		return q - 96
	}
	return q
}

// streamLocked returns queue q's sync stream, made on first use. sm.mu
// must be held.
func (sm *syncMgr) streamLocked(q uint32) *syncStream {
	if st := sm.streams[q]; st != nil {
		return st
	}
	p := sm.prof
	idx := p.syncStreamIndex(q)
	firstSOB, firstMon := uint32(gaudiSyncStreamFirstSOB), uint32(gaudiSyncStreamFirstMon)
	if p.dramVirtual {
		firstSOB, firstMon = gaudi2SyncStreamFirstSOB, gaudi2SyncStreamFirstMon
	}
	st := &syncStream{baseMon: firstMon + idx, next: 1}
	for i := range st.sob {
		id := firstSOB + idx*2 + uint32(i)
		st.sob[i] = hwSOB{id: id, refs: 1}
		if !p.dramVirtual {
			st.sob[i].addr = uint32(gaudiSMWestSouth + id*4) // gaudi_get_sob_addr
		}
	}
	sm.streams[q] = st
	return st
}

// streamBlock is the sync manager of the sync stream SOBs and monitors.
func (sm *syncMgr) streamBlock() *smBlock {
	if sm.prof.dramVirtual {
		return sm.blocks[0]
	}
	return sm.blocks[gaudiSMWestSouthBlock]
}

// putSOBLocked is hw_sob_put: the last reference zeroes the SOB
// (reset_sob) and starts the refcount again. sm.mu must be held.
func (sm *syncMgr) putSOBLocked(s *hwSOB) {
	s.refs--
	if s.refs == 0 {
		sm.streamBlock().sobs[s.id] = 0
		s.refs = 1
		s.needReset = false
	}
}

// wraparoundLocked is hl_cs_signal_sob_wraparound_handler for count
// signals (a signal CS: 1, not encapsulated). It returns the SOB the
// stream uses afterwards. sm.mu must be held.
func (sm *syncMgr) wraparoundLocked(st *syncStream, count uint32, encaps bool) (*hwSOB, error) {
	sob := &st.sob[st.curr]
	sob.refs++
	if st.next+count < hlMaxSOBVal {
		st.next += count
		return sob, nil
	}
	if sob.refs > 0 {
		sob.refs-- // hw_sob_put_err: never the last reference
	}
	other := (st.curr + 1) % 2
	o := &st.sob[other]
	if o.refs != 1 {
		return sob, unix.EINVAL
	}
	st.next = count
	if encaps {
		st.next = count + 1
	}
	st.curr = other
	if o.needReset {
		sm.putSOBLocked(o)
	}
	if encaps {
		sob.needReset = true
		o.refs++
	}
	return o, nil
}

// resetStreamsLocked is sync_stream_queue_reset for every stream, on a
// reset. sm.mu must be held.
func (sm *syncMgr) resetStreamsLocked() {
	clear(sm.streams)
}

// signalWait is cs_ioctl_signal_wait.
func (c *csCtx) signalWait(typ uint32, chunksPtr uint64, n uint32, seq *uint64, flags uint32,
	timeout time.Duration, sobAddr *uint32, sobCount *uint16) error {
	*seq = math.MaxUint64
	buf, err := c.copyChunks(chunksPtr, n)
	if err != nil {
		return err
	}
	ch := buf.b[0]
	c.putChunks(buf)
	hw := c.hw
	p := &c.dev.prof
	q := ch.QueueIndex
	if int(q) >= len(hw.props) || !p.syncStreamQueue(q) {
		c.drop(dropValidation)
		return unix.EINVAL
	}
	if typ == hl.HL_CS_FLAGS_COLLECTIVE_WAIT {
		// Only Gaudi's external queues are collective masters, and the
		// simulated Gaudi has no NIC ports (nic_ports_mask 0).
		c.drop(dropValidation)
		return unix.EINVAL
	}
	isWait := typ == hl.HL_CS_FLAGS_WAIT
	encaps := flags&hl.HL_CS_FLAGS_ENCAP_SIGNALS != 0
	var (
		hdl      *encapsHandle
		sigFence *fence
	)
	if isWait {
		var sigSeq uint64
		if encaps {
			sigSeq = ch.EncapsSignalSeq()
		} else {
			if ch.NumSignalSeqArr() != 1 {
				c.drop(dropValidation)
				return unix.EINVAL
			}
			var arr [1]uint64
			if err := c.f.copyIn(ch.SignalSeqArr(), sliceBytes(arr[:])); err != nil {
				c.drop(dropValidation)
				return unix.EFAULT
			}
			sigSeq = arr[0]
		}
		if encaps {
			if hdl = c.findEncaps(sigSeq); hdl == nil {
				return nil // the signals' CS is treated as finished
			}
			if ch.EncapsSignalOffset() > hdl.count {
				c.putEncaps(hdl, false)
				return unix.EINVAL
			}
		}
		fc, err := c.holdFence(sigSeq)
		if err != nil {
			c.drop(dropValidation)
			c.putEncapsIf(hdl)
			return err
		}
		if fc == nil {
			c.putEncapsIf(hdl)
			return nil // gone: finished
		}
		if fc.typ != hl.HL_CS_FLAGS_SIGNAL && (fc.typ != 0 || !encaps) {
			fc.release()
			c.drop(dropValidation)
			c.putEncapsIf(hdl)
			return unix.EINVAL
		}
		if fc.completed() {
			fc.release()
			c.putEncapsIf(hdl)
			return nil
		}
		sigFence = fc
	}
	s, err := c.allocate(flags, timeout)
	if err != nil {
		if sigFence != nil {
			sigFence.release()
		}
		c.putEncapsIf(hdl)
		return err
	}
	s.sigFence, s.encapsHdl, s.encapsOff = sigFence, hdl, ch.EncapsSignalOffset()
	*seq = s.seq
	j := s.newJob()
	j.cs, j.q, j.id, j.qtype = s, hw.queues[q], 0, hw.props[q].typ
	j.kernelCB, j.tracked = true, true
	s.refs.Add(1)
	s.jobs = append(s.jobs, j)
	if err := hw.schedule(s); err != nil {
		if isWait {
			err = nil // the signal CS completed meanwhile
		}
		s.rollback()
		s.put()
		*seq = math.MaxUint64
		return err
	}
	*sobAddr, *sobCount = s.sobAddr, s.initialSOBs
	s.put()
	return nil
}

// initSyncLocked is init_signal_wait_cs, at scheduling: the signal or wait
// job's packets, from the stream's state. hw.mu must be held.
func (hw *hwState) initSyncLocked(s *cs) error {
	if s.typ != hl.HL_CS_FLAGS_SIGNAL && s.typ != hl.HL_CS_FLAGS_WAIT {
		return nil
	}
	sm := hw.sm
	j := s.jobs[0]
	f := hw.format()
	sm.mu.Lock()
	defer sm.mu.Unlock()
	st := sm.streamLocked(uint32(j.q.id))
	fc := s.fence
	if s.typ == hl.HL_CS_FLAGS_SIGNAL {
		sob := &st.sob[st.curr]
		fc.sob, fc.sobVal = sob, st.next
		pk, err := f.Signal(uint16(sob.id), true)
		if err != nil {
			return unix.EINVAL
		}
		j.patched, _ = pk.Append(f, j.patched[:0])
		now, err := sm.wraparoundLocked(st, 1, false)
		s.sobAddr = now.addr
		s.initialSOBs = uint16(st.next - 1)
		return err
	}
	sig := s.sigFence
	if s.encaps {
		h := s.encapsHdl
		off := uint32(0)
		if s.encapsOff != 0 {
			off = s.encapsOff - 1
		}
		fc.sob, fc.sobVal = h.sob, h.preVal+off
	} else {
		fc.sob, fc.sobVal = sig.sob, sig.sobVal
	}
	if sig.completed() {
		return unix.EINVAL
	}
	fc.sob.refs++
	b, err := hw.waitCB(f, j, fc.sob.id, fc.sobVal, st.baseMon)
	if err != nil {
		fc.sob.refs--
		return unix.EINVAL
	}
	j.patched = b
	sig.release()
	s.sigFence = nil
	return nil
}

// waitCB is gen_wait_cb: program monitor mon to write 1 to the job's queue
// fence counter 2 once SOB sob reaches val, then fence on it.
func (hw *hwState) waitCB(f packet.Format, j *job, sob, val, mon uint32) ([]byte, error) {
	l := &hw.sm.lay
	props := j.q.props
	fence0 := uint64(gaudiQMFence0)
	if hw.prof.dramVirtual {
		fence0 = gaudi2QMFence0
	}
	fenceAddr := hw.cfgBase + props.qmBase + fence0 + 2*qmFenceStride + uint64(props.stream)*4
	off := func(reg uint64) uint16 { return uint16(reg - l.payL + uint64(mon)*4) }
	b := j.patched[:0]
	var err error
	for _, p := range []packet.MsgShort{
		f.MonitorWrite(off(l.payL), uint32(fenceAddr)),
		f.MonitorWrite(off(l.payH), uint32(fenceAddr>>32)),
		f.MonitorWrite(off(l.payData), 1),
	} {
		if b, err = p.Append(f, b); err != nil {
			return nil, err
		}
	}
	arm, err := f.ArmMonitor(off(l.arm), uint16(sob), 1, uint16(val))
	if err != nil {
		return nil, err
	}
	if b, err = arm.Append(f, b); err != nil {
		return nil, err
	}
	return f.FenceWait().Append(f, b)
}

// sobReleased is cs_release_sob_reset_handler for a submitted CS that
// completed: a signal, wait or encapsulated-signals CS drops its SOB
// reference.
func (hw *hwState) sobReleased(typ uint32, sob *hwSOB, encaps bool) {
	if sob == nil {
		return
	}
	switch {
	case typ == hl.HL_CS_FLAGS_SIGNAL, typ == hl.HL_CS_FLAGS_WAIT, typ == hl.HL_CS_FLAGS_COLLECTIVE_WAIT, encaps:
		hw.sm.mu.Lock()
		hw.sm.putSOBLocked(sob)
		hw.sm.mu.Unlock()
	}
}

// releaseSync is the sync stream part of cs_do_release: a wait CS gives
// back the signal's fence when it was never scheduled, and the reference
// it took on an encapsulated signals handle.
func (c *csCtx) releaseSync(s *cs, submitted bool) {
	if !submitted && s.sigFence != nil {
		s.sigFence.release()
	}
	s.sigFence = nil
	if s.typ == hl.HL_CS_FLAGS_WAIT && s.encapsHdl != nil {
		c.putEncaps(s.encapsHdl, false)
	}
	s.encapsHdl = nil
}
