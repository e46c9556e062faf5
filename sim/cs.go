package sim

import (
	"errors"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// The CS ioctl (hl_cs_ioctl, common/command_submission.c) and the life of
// a command submission: sequence numbers and fences per context, the
// pending-CS limit, chunk validation per ASIC, the Gaudi parser, the
// schedule onto the queues (common/hw_queue.c), completion, rollback and
// the TDR.
//
// Completion: a CS completes when every job on an external (Gaudi) or H/W
// (Gaudi2) queue has run; jobs on Gaudi's internal queues run but are not
// waited for (the driver gets no completion from them). The driver learns
// this from the completion queue entry its MSG_PROT packets write (Gaudi)
// or from the CS's reserved SOB and monitor (Gaudi2); the simulator's
// engines report it directly, and those packets and SOBs are not
// simulated. The completion timestamp is CLOCK_MONOTONIC when the last
// job completed.
//
// The TDR: the oldest CS in flight gets a timer of its timeout (the
// timeout_locked default: 30 s on Gaudi2, 600 s on Gaudi; CUSTOM_TIMEOUT:
// the CS's timeout in seconds, and 0 times out at once, as the driver's
// msecs_to_jiffies(0) delay does); when it completes, the next CS's timer
// starts. A CS still running when its timer fires is marked timed out,
// recorded (RecordCSTimeout), and the device resets (Device.Reset), which
// aborts every CS in flight: waits on the timed-out CS answer ETIMEDOUT
// (TIMEDOUT), the others EIO (ABORTED). With SKIP_RESET_ON_TIMEOUT the
// timeout is recorded and nothing else happens. The driver's reset
// watchdog (a 30 s delay when an eventfd is registered) is not simulated:
// the reset is immediate.

// csCounter indexes csCounters (struct hl_info_cs_counters order).
const (
	dropOutOfMem = iota
	dropParsing
	dropQueueFull
	dropDeviceInReset
	dropMaxCSInFlight
	dropValidation
)

// csHolder keeps a compute file's submission state (cs.go).
type csHolder struct {
	once sync.Once
	p    *csCtx
}

// subm returns the file's submission state, built on first use.
func (f *File) subm() *csCtx {
	f.cs.once.Do(func() { f.cs.p = newCSCtx(f) })
	return f.cs.p
}

// csCtx is the submission side of a compute context (struct hl_ctx's CS
// fields) and its command buffers.
type csCtx struct {
	f   *File
	dev *Device
	hw  *hwState

	// mu is the context's cs_lock: sequence numbers and the fence ring.
	mu       sync.Mutex
	seq      uint64 // cs_sequence: the next sequence number
	mask     uint64 // max_pending_cs - 1
	pending  []*fence
	outcomes outcomeStore

	restoreMu sync.Mutex // restore_phase_mutex

	// completions is closed and replaced whenever a CS of the context
	// completes, for multi-CS waits.
	complMu     sync.Mutex
	completions chan struct{}

	// Command buffers (cb.go): cbs and cbPool are guarded by f.mm.mu;
	// cbVA guards cbIndex and the lifetime of mapped CBs' memory.
	cbs     map[uint32]*cbObj
	cbPool  vaPool
	cbVA    sync.RWMutex
	cbIndex []*cbObj
}

func newCSCtx(f *File) *csCtx {
	d := f.dev
	max := d.prof.maxPendingCS()
	c := &csCtx{
		f: f, dev: d, hw: d.hardware(),
		seq: 1, mask: max - 1, pending: make([]*fence, max),
		completions: make(chan struct{}),
		cbs:         map[uint32]*cbObj{},
	}
	if f.ctx != nil {
		c.cbPool = newVAPool(f.ctx.cbPool, cbVAPoolSize)
	}
	return c
}

// fence is a CS's struct hl_fence: done is closed when the CS completed,
// after err and ts are set.
type fence struct {
	seq  uint64
	done chan struct{}
	err  unix.Errno // 0, ETIMEDOUT, EIO, or EBUSY for a CS never submitted
	ts   int64      // completion timestamp (TIMESTAMP flag only)
}

func (fc *fence) completed() bool {
	select {
	case <-fc.done:
		return true
	default:
		return false
	}
}

// cs is a struct hl_cs.
type cs struct {
	c       *csCtx
	seq     uint64
	fence   *fence
	jobs    []*job
	refs    atomic.Int32 // kref: the ioctl's and one per tracked job
	timeout time.Duration
	stamp   bool // HL_CS_FLAGS_TIMESTAMP
	skip    bool // HL_CS_FLAGS_SKIP_RESET_ON_TIMEOUT
	doneTS  atomic.Int64

	// Guarded by hw.mu.
	submitted, completed, timedout, aborted bool
	tdrActive                               bool
	tdr                                     *time.Timer
}

// jobDone is a tracked job's completion (hl_complete_job).
func (s *cs) jobDone(j *job) {
	if !j.tracked {
		return
	}
	if !j.done.CompareAndSwap(false, true) {
		return
	}
	j.releaseSlot()
	s.doneTS.Store(monotonicNow())
	s.put()
}

// put drops a reference; the last one releases the CS.
func (s *cs) put() {
	if s.refs.Add(-1) == 0 {
		s.release()
	}
}

// release is cs_do_release.
func (s *cs) release() {
	hw := s.c.hw
	for _, j := range s.jobs {
		j.releaseSlot() // internal queues get their entries back now
	}
	hw.mu.Lock()
	s.completed = true
	if s.submitted {
		hw.removeMirrorLocked(s)
		hw.handleTDRLocked(s)
	}
	err := unix.Errno(0)
	switch {
	case s.timedout:
		err = unix.ETIMEDOUT
	case s.aborted:
		err = unix.EIO
	case !s.submitted:
		err = unix.EBUSY
	}
	hw.mu.Unlock()
	fc := s.fence
	fc.err = err
	if s.stamp {
		fc.ts = s.doneTS.Load()
		s.c.outcomes.push(s.seq, fc.ts, err)
	}
	close(fc.done)
	s.c.signalCompletion()
}

// signalCompletion wakes multi-CS waits.
func (c *csCtx) signalCompletion() {
	c.complMu.Lock()
	close(c.completions)
	c.completions = make(chan struct{})
	c.complMu.Unlock()
}

// completionChan returns the channel the next completion closes.
func (c *csCtx) completionChan() <-chan struct{} {
	c.complMu.Lock()
	defer c.complMu.Unlock()
	return c.completions
}

// drop counts a dropped CS in the context's and the device's counters.
func (c *csCtx) drop(i int) {
	c.f.mu.Lock()
	c.f.csDrops[i]++
	c.f.mu.Unlock()
	c.dev.mu.Lock()
	c.dev.csDrops[i]++
	c.dev.mu.Unlock()
}

// The CS type flags (HL_CS_FLAGS_TYPE_MASK).
const csTypeMask = hl.HL_CS_FLAGS_SIGNAL | hl.HL_CS_FLAGS_WAIT | hl.HL_CS_FLAGS_COLLECTIVE_WAIT |
	hl.HL_CS_FLAGS_RESERVE_SIGNALS_ONLY | hl.HL_CS_FLAGS_UNRESERVE_SIGNALS_ONLY |
	hl.HL_CS_FLAGS_ENGINE_CORE_COMMAND | hl.HL_CS_FLAGS_ENGINES_COMMAND | hl.HL_CS_FLAGS_FLUSH_PCI_HBW_WRITES

// csType is hl_cs_get_cs_type: the first type flag set, in the driver's
// order, or 0 for a default CS.
func csType(flags uint32) uint32 {
	for _, t := range []uint32{hl.HL_CS_FLAGS_SIGNAL, hl.HL_CS_FLAGS_WAIT, hl.HL_CS_FLAGS_COLLECTIVE_WAIT,
		hl.HL_CS_FLAGS_RESERVE_SIGNALS_ONLY, hl.HL_CS_FLAGS_UNRESERVE_SIGNALS_ONLY,
		hl.HL_CS_FLAGS_ENGINE_CORE_COMMAND, hl.HL_CS_FLAGS_ENGINES_COMMAND, hl.HL_CS_FLAGS_FLUSH_PCI_HBW_WRITES} {
		if flags&t != 0 {
			return t
		}
	}
	return 0
}

// defaultTimeout is the driver's timeout_jiffies: timeout_locked (30 s),
// or GAUDI_DEFAULT_TIMEOUT_LOCKED (600 s) on Gaudi when the module
// parameter keeps its default.
func (p *profile) defaultTimeout() time.Duration {
	if p.dramVirtual {
		return 30 * time.Second
	}
	return 600 * time.Second
}

// csIoctl is hl_cs_ioctl.
func (f *File) csIoctl(a *hl.CSArgs) error {
	c := f.subm()
	in := *a.In()
	seq := uint64(math.MaxUint64)
	var sobCount uint16
	typ := uint32(0)
	err := c.sanity(&in)
	if err == nil {
		err = c.restore(&in, &seq)
	}
	if err == nil {
		typ = csType(in.CSFlags &^ hl.HL_CS_FLAGS_FORCE_RESTORE)
		timeout := f.dev.prof.defaultTimeout()
		if in.CSFlags&hl.HL_CS_FLAGS_CUSTOM_TIMEOUT != 0 {
			timeout = time.Duration(in.Timeout*1000) * time.Millisecond // u32 arithmetic, as the driver's
		}
		switch typ {
		case hl.HL_CS_FLAGS_ENGINE_CORE_COMMAND:
			err = c.engineCores(in.EngineCores(), in.NumEngineCores(), in.CoreCommand())
		case hl.HL_CS_FLAGS_ENGINES_COMMAND:
			err = c.engines(in.Engines(), in.NumEngines(), in.EngineCommand())
		case hl.HL_CS_FLAGS_FLUSH_PCI_HBW_WRITES:
			err = nil // both ASICs have hbw_flush_reg: a register read
		case 0:
			err = c.submit(in.ChunksExecute(), in.NumChunksExecute, &seq, in.CSFlags, timeout)
		default:
			// SIGNAL, WAIT, COLLECTIVE_WAIT (sync stream) and RESERVE /
			// UNRESERVE_SIGNALS_ONLY (encapsulated signals) are not
			// simulated yet: refused as invalid.
			err = unix.EINVAL
		}
	}
	if err == unix.EAGAIN {
		return err // the arguments stay as they were, for a retry
	}
	*a = hl.CSArgs{}
	out := a.Out()
	switch typ {
	case hl.HL_CS_FLAGS_RESERVE_SIGNALS_ONLY:
		// handle_id, sob_base_addr_offset and count: 0 here.
	case 0:
		out.SOBCountBeforeSubmission = sobCount
		out.SetSeq(seq)
	default:
		out.SetSeq(seq)
	}
	out.Status = errnoStatus(err)
	return err
}

// errnoStatus is the driver's "status = rc": the negative errno as a u32.
func errnoStatus(err error) uint32 {
	var e unix.Errno
	if errors.As(err, &e) && e != 0 {
		return uint32(-int32(e))
	}
	return hl.HL_CS_STATUS_SUCCESS
}

// sanity is hl_cs_sanity_checks.
func (c *csCtx) sanity(in *hl.CSIn) error {
	for _, b := range in.Pad {
		if b != 0 {
			return unix.EINVAL
		}
	}
	if !c.dev.State().operational() {
		return unix.EBUSY
	}
	flags := in.CSFlags
	if flags&hl.HL_CS_FLAGS_STAGED_SUBMISSION != 0 && c.dev.prof.dramVirtual {
		return unix.EPERM // supports_staged_submission is Gaudi's only
	}
	types := flags & csTypeMask
	if types&(types-1) != 0 {
		return unix.EINVAL
	}
	typ := csType(types)
	syncStream := typ == hl.HL_CS_FLAGS_SIGNAL || typ == hl.HL_CS_FLAGS_WAIT || typ == hl.HL_CS_FLAGS_COLLECTIVE_WAIT
	if typ == 0 && in.NumChunksExecute == 0 {
		return unix.EINVAL
	}
	if syncStream && in.NumChunksExecute != 1 {
		return unix.EINVAL
	}
	return nil
}

// restore is hl_cs_ctx_switch: neither ASIC switches contexts, so only
// FORCE_RESTORE runs the restore chunks, as a CS of their own that is
// waited for (ENOEXEC when it fails to complete).
func (c *csCtx) restore(in *hl.CSIn, seq *uint64) error {
	if in.CSFlags&hl.HL_CS_FLAGS_FORCE_RESTORE == 0 {
		return nil
	}
	c.restoreMu.Lock()
	n := in.NumChunksRestore
	var err error
	if n != 0 {
		err = c.submit(in.ChunksRestore(), n, seq, 0, c.dev.prof.defaultTimeout())
	}
	c.restoreMu.Unlock()
	if err != nil || n == 0 {
		return err
	}
	if _, _, err := c.waitSeq(*seq, uint64(c.dev.prof.defaultTimeout()/time.Microsecond)); err != nil {
		return unix.ENOEXEC
	}
	return nil
}

// copyChunks is hl_cs_copy_chunk_array.
func (c *csCtx) copyChunks(ptr uint64, n uint32) ([]hl.CSChunk, error) {
	if n > hl.HL_MAX_JOBS_PER_CS {
		c.drop(dropValidation)
		return nil, unix.EINVAL
	}
	chunks := make([]hl.CSChunk, n)
	if err := copyIn(ptr, sliceBytes(chunks)); err != nil {
		c.drop(dropValidation)
		return nil, unix.EFAULT
	}
	return chunks, nil
}

// allocate is allocate_cs: the next sequence number, unless the fence slot
// it would take still holds a CS in flight (EAGAIN).
func (c *csCtx) allocate(flags uint32, timeout time.Duration) (*cs, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	slot := c.seq & c.mask
	if other := c.pending[slot]; other != nil && !other.completed() {
		c.drop(dropMaxCSInFlight)
		return nil, unix.EAGAIN
	}
	s := &cs{c: c, seq: c.seq, timeout: timeout,
		stamp: flags&hl.HL_CS_FLAGS_TIMESTAMP != 0,
		skip:  flags&hl.HL_CS_FLAGS_SKIP_RESET_ON_TIMEOUT != 0}
	s.fence = &fence{seq: c.seq, done: make(chan struct{})}
	s.refs.Store(1)
	c.pending[slot] = s.fence
	c.seq++
	return s, nil
}

// submit is cs_ioctl_default.
func (c *csCtx) submit(chunksPtr uint64, n uint32, seq *uint64, flags uint32, timeout time.Duration) error {
	*seq = math.MaxUint64
	chunks, err := c.copyChunks(chunksPtr, n)
	if err != nil {
		return err
	}
	if flags&hl.HL_CS_FLAGS_STAGED_SUBMISSION != 0 {
		// Gaudi's staged submissions are not simulated yet.
		return unix.EINVAL
	}
	s, err := c.allocate(flags, timeout)
	if err != nil {
		return err
	}
	*seq = s.seq
	if err := c.buildJobs(s, chunks); err != nil {
		s.rollback()
		s.put()
		*seq = math.MaxUint64
		return err
	}
	if err := c.hw.schedule(s); err != nil {
		s.rollback()
		s.put()
		*seq = math.MaxUint64
		return err
	}
	s.put()
	return nil
}

// buildJobs validates every chunk and makes its job, in the driver's order:
// queue, CB, parser; then the CS must have a job that completes.
func (c *csCtx) buildJobs(s *cs, chunks []hl.CSChunk) error {
	intOnly := true
	for i := range chunks {
		ch := &chunks[i]
		qt, kernelCB, err := c.validateQueue(ch)
		if err != nil {
			c.drop(dropValidation)
			return err
		}
		j := &job{cs: s, q: c.hw.queues[ch.QueueIndex], id: i + 1, qtype: qt}
		j.tracked = qt == queueExt || qt == queueHW
		if j.tracked {
			intOnly = false
			s.refs.Add(1)
		}
		s.jobs = append(s.jobs, j)
		if kernelCB {
			err = c.parseKernelCB(j, ch)
		} else {
			j.addr, j.size = ch.CBHandle(), uint64(ch.CBSize())
			err = c.parseUserCB(j)
		}
		if err != nil {
			return err
		}
	}
	if intOnly {
		c.drop(dropValidation)
		return unix.EINVAL
	}
	return nil
}

// validateQueue is validate_queue_index.
func (c *csCtx) validateQueue(ch *hl.CSChunk) (queueType, bool, error) {
	props := c.hw.props
	if int(ch.QueueIndex) >= len(props) {
		return 0, false, unix.EINVAL
	}
	p := &props[ch.QueueIndex]
	if p.typ == queueNA || p.binned || p.driverOnly {
		return 0, false, unix.EINVAL
	}
	if p.typ != queueHW {
		return p.typ, p.cbAlloc&cbAllocKernel != 0, nil
	}
	if ch.CSChunkFlags&hl.HL_CS_CHUNK_FLAGS_USER_ALLOC_CB != 0 {
		if p.cbAlloc&cbAllocUser == 0 {
			return 0, false, unix.EINVAL
		}
		return p.typ, false, nil
	}
	if p.cbAlloc&cbAllocKernel == 0 {
		return 0, false, unix.EINVAL
	}
	return p.typ, true, nil
}

// parseKernelCB is get_cb_from_cs_chunk followed by the parser for a
// kernel CB. The queues that take kernel CBs from users are Gaudi's
// external queues: gaudi_parse_cb_mmu copies the CB into a patched CB,
// which the queue runs, and validates the copy (gaudi_validate_cb).
func (c *csCtx) parseKernelCB(j *job, ch *hl.CSChunk) error {
	mm := c.f.mm
	mm.mu.Lock()
	cb := c.cbGetLocked(ch.CBHandle())
	size := uint64(ch.CBSize())
	if cb == nil || size < 8 || size > cb.size {
		mm.mu.Unlock()
		c.drop(dropValidation)
		return unix.EINVAL
	}
	cb.csCnt++
	j.patched = append([]byte(nil), cb.mem[:size]...)
	cb.csCnt--
	c.releaseIfDoneLocked(cb)
	mm.mu.Unlock()
	if err := packet.Gaudi.ValidateUser(j.patched); err != nil {
		c.drop(dropParsing)
		if errors.Is(err, packet.ErrPrivileged) {
			return unix.EPERM
		}
		return unix.EINVAL
	}
	return nil
}

// parseUserCB is the parser for a user CB, a device address: Gaudi's
// internal queues (gaudi_parse_cb_no_ext_queue) and Gaudi2's queues
// (gaudi2_validate_cb_address) only check that the engine is enabled
// (EINVAL) and that the CB lies in a range the device reaches (EFAULT).
func (c *csCtx) parseUserCB(j *job) error {
	p := &c.dev.prof
	if !j.q.props.enabled {
		c.drop(dropParsing)
		return unix.EINVAL
	}
	addr, size := j.addr, j.size
	in := func(start, end uint64) bool { return areaInside(addr, size, start, end) }
	ok := in(p.sramUserBase, p.sramBase+p.sramSize) || in(p.dramUserBase, p.dramBase+p.dramSize)
	if p.dramVirtual {
		ok = ok || in(p.vm.dmmuStart, p.vm.dmmuEnd) ||
			in(gaudi2HostVAStart, gaudi2HostVAEnd) || in(gaudi2HugeVAStart, gaudi2HugeVAEnd)
	} else {
		half := uint64(gaudiVAEnd-gaudiVAStart) / 2
		ok = ok || in(gaudiVAStart, gaudiVAStart+half-1)
	}
	if !ok {
		c.drop(dropParsing)
		return unix.EFAULT
	}
	return nil
}

// schedule is hl_hw_queue_schedule_cs: the device must be operational
// (EPERM), every queue must have room (EAGAIN; ENOMEM for more jobs than
// an internal queue holds); the CS joins the mirror list, the TDR starts
// when it is the oldest, and its jobs go to their queues.
func (hw *hwState) schedule(s *cs) error {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	if !hw.d.State().operational() {
		s.c.drop(dropDeviceInReset)
		return unix.EPERM
	}
	perQueue := map[*hwQueue]int{}
	for _, j := range s.jobs {
		perQueue[j.q]++
	}
	for q, n := range perQueue {
		q.mu.Lock()
		limit := hlQueueLength
		if q.props.typ == queueInt {
			limit = q.props.intLen
		}
		free := limit - q.inflight
		q.mu.Unlock()
		err := error(nil)
		switch {
		case q.props.typ == queueInt && n > limit:
			err = unix.ENOMEM
		case free < n:
			err = unix.EAGAIN
		}
		if err != nil {
			s.c.drop(dropQueueFull)
			return err
		}
	}
	hw.mirror = append(hw.mirror, s)
	if len(hw.mirror) == 1 {
		hw.armTDRLocked(s)
	}
	for _, j := range s.jobs {
		j.q.mu.Lock()
		j.q.inflight++
		j.q.mu.Unlock()
		j.slot.Store(true)
		hw.start(j)
	}
	s.submitted = true
	return nil
}

// armTDRLocked starts a CS's TDR timer. hw.mu must be held.
func (hw *hwState) armTDRLocked(s *cs) {
	s.tdrActive = true
	s.tdr = time.AfterFunc(s.timeout, func() { hw.timedOut(s) })
}

// removeMirrorLocked takes a CS off the mirror list. hw.mu must be held.
func (hw *hwState) removeMirrorLocked(s *cs) {
	for i, m := range hw.mirror {
		if m == s {
			hw.mirror = append(hw.mirror[:i], hw.mirror[i+1:]...)
			return
		}
	}
}

// handleTDRLocked is cs_handle_tdr: a completed CS's timer stops and the
// oldest CS left gets one. hw.mu must be held.
func (hw *hwState) handleTDRLocked(s *cs) {
	if s.timedout {
		return
	}
	if s.tdrActive {
		s.tdr.Stop()
	}
	if len(hw.mirror) > 0 && !hw.mirror[0].tdrActive && hw.d.State().operational() {
		hw.armTDRLocked(hw.mirror[0])
	}
}

// timedOut is cs_timedout.
func (hw *hwState) timedOut(s *cs) {
	hw.mu.Lock()
	if !s.submitted || s.completed {
		hw.mu.Unlock()
		return
	}
	reset := !s.skip
	if reset {
		s.timedout = true
	}
	hw.mu.Unlock()
	hw.d.RecordCSTimeout(s.seq)
	if reset {
		hw.d.Reset()
	}
}

// rollback is cs_rollback: every job not completed is completed now.
func (s *cs) rollback() {
	for _, j := range s.jobs {
		if j.tracked && j.done.CompareAndSwap(false, true) {
			j.releaseSlot()
			s.put()
		}
	}
}

// abortCS rolls back the CSs in flight of file f (every CS when f is nil),
// marking them aborted, as hl_cs_rollback_all does. The engines must be
// halted.
func (hw *hwState) abortCS(f *File) {
	hw.mu.Lock()
	var victims []*cs
	for _, s := range hw.mirror {
		if f == nil || s.c.f == f {
			s.aborted = true
			victims = append(victims, s)
		}
	}
	hw.mu.Unlock()
	for _, s := range victims {
		s.refs.Add(1) // cs_get
		s.rollback()
		s.put()
	}
}

// userMappings lists the context's mappings as the driver captures them
// for a page fault (hl_capture_user_mappings): host mappings for a fault
// of the host MMU, device memory mappings otherwise.
func (c *csCtx) userMappings(pmmu bool) []hl.UserMapping {
	ctx := c.f.ctx
	ctx.mu.RLock()
	defer ctx.mu.RUnlock()
	var out []hl.UserMapping
	for _, m := range ctx.maps {
		switch {
		case m.host && pmmu:
			out = append(out, hl.UserMapping{DevVA: m.va, Size: m.hostSize})
		case !m.host && !pmmu && m.pack != nil:
			out = append(out, hl.UserMapping{DevVA: m.va, Size: m.pack.total})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].DevVA < out[j].DevVA })
	return out
}

// engineCores is cs_ioctl_engine_cores. Halting and running the ARC cores
// has no effect on the simulated engines.
func (c *csCtx) engineCores(ptr uint64, n, cmd uint32) error {
	if !c.dev.prof.dramVirtual {
		return unix.EPERM // supports_engine_modes
	}
	if n == 0 || n > gaudi2CPUIDMax {
		return unix.EINVAL
	}
	if cmd != uint32(hl.HL_ENGINE_CORE_RUN) && cmd != uint32(hl.HL_ENGINE_CORE_HALT) {
		return unix.EINVAL
	}
	ids := make([]uint32, n)
	if err := copyIn(ptr, sliceBytes(ids)); err != nil {
		return unix.EFAULT
	}
	return nil // gaudi2_set_engine_cores skips cores that are not enabled
}

// gaudi2CPUIDMax is CPU_ID_MAX (gaudi2_arc_common_packets.h): num_engine_cores.
const gaudi2CPUIDMax = 69

// engines is cs_ioctl_engines with gaudi2_set_engines' engine checks.
// Stalling and resuming engines has no effect on the simulated engines.
func (c *csCtx) engines(ptr uint64, n, cmd uint32) error {
	if !c.dev.prof.dramVirtual {
		return unix.EPERM
	}
	if cmd >= uint32(hl.HL_ENGINE_COMMAND_MAX) {
		return unix.EINVAL
	}
	limit := uint32(hl.GAUDI2_ENGINE_ID_SIZE)
	if cmd == uint32(hl.HL_ENGINE_CORE_RUN) || cmd == uint32(hl.HL_ENGINE_CORE_HALT) {
		limit = gaudi2CPUIDMax
	}
	if n == 0 || n > limit {
		return unix.EINVAL
	}
	ids := make([]uint32, n)
	if err := copyIn(ptr, sliceBytes(ids)); err != nil {
		return unix.EFAULT
	}
	switch cmd {
	case uint32(hl.HL_ENGINE_CORE_HALT), uint32(hl.HL_ENGINE_CORE_RUN):
		return nil
	case uint32(hl.HL_ENGINE_STALL), uint32(hl.HL_ENGINE_RESUME):
		for _, id := range ids {
			// TPC, MME and EDMA engines of the four dcores (11 ids each:
			// EDMA 0-1, MME, TPC 0-5, DEC 0-1); others are invalid.
			if id >= 44 || id%11 > 8 {
				return unix.EINVAL
			}
		}
		return nil
	}
	return unix.EINVAL
}
