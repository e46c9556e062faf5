package sim

import (
	"encoding/binary"
	"math"
	"sync"
	"time"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// User interrupts (Gaudi2): waits on them (hl_interrupt_wait_ioctl and its
// helpers in common/command_submission.c), timestamp registrations
// (_hl_interrupt_ts_reg_ioctl) and the interrupt handler
// (hl_irq_user_interrupt_handler in common/irq.c).
//
// An interrupt is raised by a 32-bit write of its MSI-X vector number to
// the PCIe MSI-X doorbell (CFG offset 0x4C17000, mmPCIE_MSIX_BASE): a
// MSG_LONG of a queue, or the LBW write a sync manager completion queue
// sends after a monitor wrote to it (syncmgr.go). Vectors of the user
// range (first_available_user_interrupt .. + user_interrupt_count - 1)
// are completion-queue interrupts: the handler stamps the time
// (CLOCK_MONOTONIC), wakes the waits on the common CQ interrupt (0xFFF)
// and on the vector, then serves the timestamp registrations of both.
// Other vectors are ignored (the simulator has no decoders).
//
// A wait names the interrupt (the id in bits 31:20 of the flags, checked
// in wait.go) and a 64-bit counter: in user memory (addr), or with
// HL_WAIT_CS_FLAGS_INTERRUPT_KERNEL_CQ at index cq_counters_offset of a
// kernel CB (a CQ counters buffer; EINVAL for an unknown handle or an
// index past the CB). It completes when an interrupt finds the counter at
// or above target. A counter already there completes at once with the
// call's time; timeout 0 polls; a wait that times out answers BUSY
// without an error and without a timestamp (the user-address wait keeps
// waiting after an interrupt whose counter is short). A reset ends the
// waits: the kernel CQ wait with EIO and ABORTED, the user-address wait
// with ABORTED and no error, as the driver does.
//
// A registration (HL_WAIT_CS_FLAGS_REGISTER_INTERRUPT, with KERNEL_CQ)
// does not wait: it asks for the interrupt time to be written to element
// timestamp_offset of a timestamp buffer (TS_ALLOC; EINVAL for an unknown
// handle or an element past its end) once an interrupt finds the counter
// at target; the same element registered again moves. When the counter is
// there already the current time is written at once.

// msixDoorbell is the CFG offset of Gaudi2's MSI-X doorbell register.
const msixDoorbell = 0x4C17000

// hlCommonUserCQInterrupt is HL_COMMON_USER_CQ_INTERRUPT_ID.
const hlCommonUserCQInterrupt = 0xFFF

// irqState is the device's user interrupts (hdev->user_interrupt and the
// common ones), made on first use. Its mu also orders the sync managers'
// completion-queue writes against the CQ counter reads.
type irqState struct {
	mu    sync.Mutex
	waits map[uint32]map[*irqWait]struct{}
	regs  map[uint32][]*tsReg
	stamp map[uint32]int64
}

// irqWait is a pending wait (struct hl_user_pending_interrupt).
type irqWait struct {
	cq     func() uint64 // reads the kernel CQ counter; nil for a user address
	target uint64
	ch     chan struct{} // buffered: a wake never blocks
	ts     int64
	err    unix.Errno
}

// tsReg is a timestamp registration.
type tsReg struct {
	c      *csCtx
	cb     *cbObj
	off    uint64 // byte offset of the counter in cb
	target uint64
	buf    *mmapBuf
	elem   uint64
	irq    uint32
}

func (s *irqState) init() {
	if s.waits == nil {
		s.waits = map[uint32]map[*irqWait]struct{}{}
		s.regs = map[uint32][]*tsReg{}
		s.stamp = map[uint32]int64{}
	}
}

// raise is the interrupt handler for MSI-X vector v.
func (sm *syncMgr) raise(v uint32) {
	p := sm.prof
	if p.userInterrupts == 0 || v < uint32(p.firstUserInterrupt) || v >= uint32(p.firstUserInterrupt)+uint32(p.userInterrupts) {
		return
	}
	s := &sm.irq
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	now := monotonicNow()
	for _, id := range []uint32{hlCommonUserCQInterrupt, v} {
		for w := range s.waits[id] {
			if w.cq == nil || w.cq() >= w.target {
				w.ts = now
				w.wake()
			}
		}
	}
	for _, id := range []uint32{hlCommonUserCQInterrupt, v} {
		kept := s.regs[id][:0]
		for _, r := range s.regs[id] {
			if r.counter() >= r.target {
				r.write(now)
				r.release()
				continue
			}
			kept = append(kept, r)
		}
		s.regs[id] = kept
	}
}

func (w *irqWait) wake() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// abortIRQ is hl_release_pending_user_interrupts, on a reset: every wait
// ends with EIO and every timestamp registration is dropped.
func (sm *syncMgr) abortIRQ() {
	s := &sm.irq
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ws := range s.waits {
		for w := range ws {
			w.err = unix.EIO
			w.wake()
		}
	}
	for id, list := range s.regs {
		for _, r := range list {
			r.release()
		}
		delete(s.regs, id)
	}
}

// releaseSyncState drops the context's timestamp registrations (before
// its command buffers go) and its reservations of encapsulated signals
// when its file is released.
func (c *csCtx) releaseSyncState() {
	c.dropTSRegs()
	c.releaseEncaps()
}

// dropTSRegs drops the context's timestamp registrations.
func (c *csCtx) dropTSRegs() {
	s := &c.hw.sm.irq
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, list := range s.regs {
		kept := list[:0]
		for _, r := range list {
			if r.c == c {
				r.release()
				continue
			}
			kept = append(kept, r)
		}
		s.regs[id] = kept
	}
}

// usecs64Duration converts a 64-bit microsecond timeout as
// hl_usecs64_to_jiffies does (interrupt_timeout_us, a multi-CS wait's
// timeout_us): values too large for a time.Duration (about 292 years)
// wait for ever.
func usecs64Duration(us uint64) (time.Duration, bool) {
	if us >= math.MaxInt64/uint64(time.Microsecond) {
		return 0, true
	}
	return time.Duration(us) * time.Microsecond, false
}

// sleep waits for a wake, d (for ever when forever), or nothing when d is
// 0, or until intr is closed; it reports whether a wake came.
func (w *irqWait) sleep(d time.Duration, forever bool, intr <-chan struct{}) bool {
	if forever {
		select {
		case <-w.ch:
			return true
		case <-intr:
			return false
		}
	}
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.ch:
		return true
	case <-t.C:
		return false
	case <-intr:
		return false
	}
}

// add puts w on interrupt id's wait list.
func (s *irqState) add(id uint32, w *irqWait) {
	s.init()
	if s.waits[id] == nil {
		s.waits[id] = map[*irqWait]struct{}{}
	}
	s.waits[id][w] = struct{}{}
}

// holdCQ is hl_cb_get of a CQ counters buffer and the offset check: the
// CB, held against release until dropCQ.
func (c *csCtx) holdCQ(handle, index uint64) (*cbObj, error) {
	mm := c.f.mm
	mm.mu.Lock()
	defer mm.mu.Unlock()
	cb := c.cbGetLocked(handle)
	if cb == nil || index >= cb.size/8 {
		return nil, unix.EINVAL
	}
	cb.csCnt++
	return cb, nil
}

func (c *csCtx) dropCQ(cb *cbObj) {
	mm := c.f.mm
	mm.mu.Lock()
	cb.csCnt--
	c.releaseIfDoneLocked(cb)
	mm.mu.Unlock()
}

// cqReader reads the 64-bit counter at byte off of cb; irq.mu must be held.
func cqReader(cb *cbObj, off uint64) func() uint64 {
	return func() uint64 { return binary.LittleEndian.Uint64(cb.mem[off:]) }
}

// interruptWait is hl_interrupt_wait_ioctl after the interrupt lookup.
func (c *csCtx) interruptWait(a *hl.WaitCSArgs, id uint32, intr <-chan struct{}) error {
	in := *a.In()
	c.dev.pqmKick() // a Gaudi3 user waits: its PDMA channels look now
	var (
		status = uint32(hl.HL_WAIT_CS_STATUS_BUSY)
		ts     int64
		err    error
	)
	switch {
	case in.Flags&hl.HL_WAIT_CS_FLAGS_INTERRUPT_KERNEL_CQ == 0:
		status, ts, err = c.waitUserAddr(&in, id, intr)
	case in.Flags&hl.HL_WAIT_CS_FLAGS_REGISTER_INTERRUPT != 0:
		status, err = c.registerTS(&in, id)
	default:
		status, ts, err = c.waitKernelCQ(&in, id, intr)
	}
	if err != nil {
		return err
	}
	*a = hl.WaitCSArgs{}
	out := a.Out()
	out.Status = status
	if ts != 0 {
		out.TimestampNsec = ts
		out.Flags |= hl.HL_WAIT_CS_STATUS_FLAG_TIMESTAMP_VLD
	}
	return nil
}

// waitKernelCQ is _hl_interrupt_wait_ioctl.
func (c *csCtx) waitKernelCQ(in *hl.WaitCSIn, id uint32, intr <-chan struct{}) (uint32, int64, error) {
	cb, err := c.holdCQ(in.CQCountersHandle(), in.CQCountersOffset)
	if err != nil {
		return 0, 0, err
	}
	defer c.dropCQ(cb)
	s := &c.hw.sm.irq
	w := &irqWait{cq: cqReader(cb, in.CQCountersOffset*8), target: in.Target(), ch: make(chan struct{}, 1)}
	s.mu.Lock()
	if v := w.cq(); v >= w.target || in.InterruptTimeoutUs() == 0 {
		s.mu.Unlock()
		if v >= w.target {
			return hl.HL_WAIT_CS_STATUS_COMPLETED, monotonicNow(), nil
		}
		return hl.HL_WAIT_CS_STATUS_BUSY, monotonicNow(), nil
	}
	s.add(id, w)
	s.mu.Unlock()
	d, forever := usecs64Duration(in.InterruptTimeoutUs())
	woke := w.sleep(d, forever, intr)
	s.mu.Lock()
	delete(s.waits[id], w)
	ts, werr := w.ts, w.err
	s.mu.Unlock()
	switch {
	case woke && werr == unix.EIO:
		return hl.HL_WAIT_CS_STATUS_ABORTED, ts, unix.EIO
	case woke:
		return hl.HL_WAIT_CS_STATUS_COMPLETED, ts, nil
	case interrupted(intr):
		return 0, 0, unix.EINTR
	}
	return hl.HL_WAIT_CS_STATUS_BUSY, 0, nil
}

// waitUserAddr is _hl_interrupt_wait_ioctl_user_addr.
func (c *csCtx) waitUserAddr(in *hl.WaitCSIn, id uint32, intr <-chan struct{}) (uint32, int64, error) {
	s := &c.hw.sm.irq
	w := &irqWait{target: in.Target(), ch: make(chan struct{}, 1)}
	s.mu.Lock()
	s.add(id, w)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.waits[id], w)
		s.mu.Unlock()
	}()
	read := func() (uint64, error) {
		var b [8]byte
		if err := c.f.copyIn(in.Addr(), b[:]); err != nil {
			return 0, unix.EFAULT
		}
		return binary.LittleEndian.Uint64(b[:]), nil
	}
	v, err := read()
	if err != nil {
		return 0, 0, err
	}
	if v >= w.target {
		return hl.HL_WAIT_CS_STATUS_COMPLETED, monotonicNow(), nil
	}
	us := in.InterruptTimeoutUs()
	if us == 0 {
		return hl.HL_WAIT_CS_STATUS_BUSY, 0, nil
	}
	d, forever := usecs64Duration(us)
	deadline := time.Now().Add(d)
	for {
		if !w.sleep(time.Until(deadline), forever, intr) {
			if interrupted(intr) {
				return 0, 0, unix.EINTR
			}
			return hl.HL_WAIT_CS_STATUS_BUSY, 0, nil
		}
		v, err := read()
		if err != nil {
			return 0, 0, err
		}
		s.mu.Lock()
		ts, werr := w.ts, w.err
		s.mu.Unlock()
		switch {
		case v >= w.target:
			return hl.HL_WAIT_CS_STATUS_COMPLETED, ts, nil
		case werr != 0:
			return hl.HL_WAIT_CS_STATUS_ABORTED, ts, nil
		}
	}
}

// registerTS is _hl_interrupt_ts_reg_ioctl (under the context's
// ts_reg_lock).
func (c *csCtx) registerTS(in *hl.WaitCSIn, id uint32) (uint32, error) {
	c.tsRegMu.Lock()
	defer c.tsRegMu.Unlock()
	cb, err := c.holdCQ(in.CQCountersHandle(), in.CQCountersOffset)
	if err != nil {
		return 0, err
	}
	mm := c.f.mm
	mm.mu.Lock()
	b := mm.bufs[uint32(in.TimestampHandle>>12)]
	if b == nil || b.memType != mmapTypeTS || b.released {
		mm.mu.Unlock()
		c.dropCQ(cb)
		return 0, unix.EINVAL
	}
	if in.TimestampOffset >= b.size/8 {
		mm.mu.Unlock()
		c.dropCQ(cb)
		return 0, unix.EINVAL
	}
	b.refs++
	mm.mu.Unlock()
	r := &tsReg{c: c, cb: cb, off: in.CQCountersOffset * 8, target: in.Target(), buf: b, elem: in.TimestampOffset, irq: id}
	s := &c.hw.sm.irq
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	// An element registered before moves to this registration.
	for k, list := range s.regs {
		kept := list[:0]
		for _, o := range list {
			if o.buf == b && o.elem == r.elem {
				o.release()
				continue
			}
			kept = append(kept, o)
		}
		s.regs[k] = kept
	}
	if r.counter() >= r.target {
		r.write(monotonicNow())
		r.release()
		return hl.HL_WAIT_CS_STATUS_COMPLETED, nil
	}
	s.regs[id] = append(s.regs[id], r)
	return hl.HL_WAIT_CS_STATUS_COMPLETED, nil
}

func (r *tsReg) counter() uint64 { return binary.LittleEndian.Uint64(r.cb.mem[r.off:]) }

// write stores t into the registration's element, through a mapping of
// the buffer's memory.
func (r *tsReg) write(t int64) {
	m, err := unix.Mmap(r.buf.fd, r.buf.off, int(r.buf.size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return
	}
	binary.LittleEndian.PutUint64(m[r.elem*8:], uint64(t))
	unix.Munmap(m)
}

// release drops the references the registration holds.
func (r *tsReg) release() {
	mm := r.c.f.mm
	mm.mu.Lock()
	mm.put(r.buf)
	r.cb.csCnt--
	r.c.releaseIfDoneLocked(r.cb)
	mm.mu.Unlock()
}

// deliver performs a sync manager payload write: a completion queue write
// under the interrupt lock (increment mode adds to the 64-bit counter),
// anything else as a QMAN write.
func (x *execEnv) deliver(p payload) error {
	if !p.cq {
		return x.write32(p.addr, p.val)
	}
	s := &x.hw.sm.irq
	s.mu.Lock()
	defer s.mu.Unlock()
	if !p.inc {
		return x.write32(p.addr, p.val)
	}
	var b [8]byte
	if err := x.load(p.addr, b[:]); err != nil {
		return err
	}
	binary.LittleEndian.PutUint64(b[:], binary.LittleEndian.Uint64(b[:])+uint64(p.val))
	return x.store(p.addr, b[:])
}
