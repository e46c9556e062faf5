package sim

import (
	"encoding/binary"
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
// recorded (RecordCSTimeout), and the device resets as hl_device_cond_reset
// does (watchdog.go): at once, killing the compute file and aborting
// every CS in flight (waits on the timed-out CS answer ETIMEDOUT
// (TIMEDOUT), the others EIO (ABORTED)); or, with an eventfd registered,
// after the release watchdog, unless the file is closed first. With
// SKIP_RESET_ON_TIMEOUT the timeout is recorded and nothing else happens.

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
// p is read without the once by a reset (File.abort) and the release
// (Device.closeSubmissions) while a first call may be building it, so it
// is atomic.
type csHolder struct {
	once sync.Once
	p    atomic.Pointer[csCtx]
}

// subm returns the file's submission state, built on first use.
func (f *File) subm() *csCtx {
	if c := f.cs.p.Load(); c != nil {
		return c
	}
	f.cs.once.Do(func() { f.cs.p.Store(newCSCtx(f)) })
	return f.cs.p.Load()
}

// csCtx is the submission side of a compute context (struct hl_ctx's CS
// fields) and its command buffers.
type csCtx struct {
	f   *File
	dev *Device
	hw  *hwState

	// mu is the context's cs_lock: sequence numbers, the fence ring and
	// the CSs kept for reuse.
	mu       sync.Mutex
	seq      uint64 // cs_sequence: the next sequence number
	mask     uint64 // max_pending_cs - 1
	pending  []*fence
	free     []*cs // released CSs, reused by allocate
	outcomes outcomeStore

	restoreMu sync.Mutex // restore_phase_mutex

	sig     encapsMgr  // reservations of encapsulated signals (encaps.go)
	tsRegMu sync.Mutex // ts_reg_lock: one timestamp registration at a time

	// completions is closed whenever a CS of the context completes, for
	// multi-CS waits; it is made only when a wait asks for it (nil
	// otherwise), so completions cost nothing without such waits.
	complMu     sync.Mutex
	completions chan struct{}

	// waitMu guards waiters: the wait objects (wake channel and timer) of
	// finished waits, reused by the next ones.
	waitMu  sync.Mutex
	waiters []*waiter

	// chunks is a chunk array buffer for copyChunks, taken by one CS
	// ioctl at a time (a concurrent one makes its own).
	chunks atomic.Pointer[chunkBuf]

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
		cbs: map[uint32]*cbObj{},
	}
	if f.ctx != nil {
		c.cbPool = newVAPool(f.ctx.cbPool, cbVAPoolSize)
	}
	return c
}

// fence is a CS's struct hl_fence: done is set when the CS completed,
// after err and ts, and the waits registered in waiters are woken.
//
// A fence stays in its slot of the context's ring after the CS completed,
// and allocate reuses it for the CS that takes the slot next, unless a
// wait still holds it (holds, taken under csCtx.mu by holdFence): then the
// slot gets a new fence and the held one is left to its waits.
type fence struct {
	seq   uint64
	done  atomic.Bool
	err   unix.Errno // 0, ETIMEDOUT, EIO, or EBUSY for a CS never submitted (under mu)
	ts    int64      // completion timestamp (TIMESTAMP flag only; under mu)
	holds atomic.Int32
	// forced is set when a postponed reset completed the fence while its
	// CS still runs (abortWaiting): the fence stays the CS's.
	forced atomic.Bool

	// The struct hl_cs_compl fields of sync streams (signal.go), set
	// before the CS is scheduled: the CS type, the SOB a signal CS
	// signals (or a wait CS waits on) and its value, and for the first
	// CS of a staged submission with encapsulated signals the handle.
	typ    uint32
	sob    *hwSOB
	sobVal uint32
	encaps *encapsHandle

	mu      sync.Mutex // guards waiters and orders done against them
	waiters []*waiter
}

func (fc *fence) completed() bool { return fc.done.Load() }

// complete sets the CS's result and wakes its waits. The completing side
// does not touch the fence afterwards: allocate may reuse it at once.
//
// A fence can complete twice: a postponed reset force-completes the
// fences of the CSs in flight (abortWaiting), and each completes its own
// again when it ends, as cs_do_release sets fence->error and completes
// the fence after force_complete_cs did. Waits woken by the first
// completion may then be reading the result, so it is written and read
// under fc.mu (result).
func (fc *fence) complete(err unix.Errno, ts int64) {
	fc.mu.Lock()
	fc.err, fc.ts = err, ts
	fc.done.Store(true)
	for i, w := range fc.waiters {
		w.wake()
		fc.waiters[i] = nil
	}
	fc.waiters = fc.waiters[:0]
	fc.mu.Unlock()
}

// reuse readies a completed fence that no wait holds for sequence seq.
func (fc *fence) reuse(seq uint64) {
	fc.mu.Lock() // complete may still be waking waits
	fc.seq, fc.err, fc.ts = seq, 0, 0
	fc.typ, fc.sob, fc.sobVal, fc.encaps = 0, nil, 0, nil
	fc.done.Store(false)
	fc.mu.Unlock()
}

// result is the CS's error and completion timestamp, once completed.
func (fc *fence) result() (unix.Errno, int64) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.err, fc.ts
}

// release drops a hold taken by holdFence.
func (fc *fence) release() { fc.holds.Add(-1) }

// cs is a struct hl_cs.
//
// A released CS goes back to its context (csCtx.free) with its job
// objects, and allocate reuses it, unless it ran jobs on Gaudi's internal
// queues, which may still run after the CS completed: such a CS is left
// to the garbage collector.
type cs struct {
	c         *csCtx
	seq       uint64
	fence     *fence
	jobs      []*job       // the slice's spare capacity keeps job objects for reuse
	refs      atomic.Int32 // kref: the ioctl's and one per tracked job
	timeout   time.Duration
	stamp     bool // HL_CS_FLAGS_TIMESTAMP
	skip      bool // HL_CS_FLAGS_SKIP_RESET_ON_TIMEOUT
	untracked bool // has a job on an internal queue
	doneTS    atomic.Int64

	typ     uint32 // csType of the flags: 0, SIGNAL, WAIT, COLLECTIVE_WAIT
	encaps  bool   // HL_CS_FLAGS_ENCAP_SIGNALS
	staging staged // staged submission membership (staged.go)
	// A wait CS: the signal CS's fence, held until the wait is scheduled
	// (or released), and for encapsulated signals the handle and the
	// chunk's signal offset (signal.go).
	sigFence    *fence
	encapsHdl   *encapsHandle
	encapsOff   uint32
	sobAddr     uint32 // signal CS: sob_addr_offset
	initialSOBs uint16 // signal CS: initial_sob_count

	// Guarded by hw.mu.
	submitted, completed, timedout, aborted bool
	tdrActive                               bool // a TDR was armed for the CS

	// Strict mode (strict_dma.go, strict_host_unsafe.go): when the CS was
	// submitted (strictState.clock), and the host mappings its jobs
	// checked.
	submitAt    uint64
	hostMu      sync.Mutex
	hostChecked []hostSpan
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
	if s.stamp {
		s.doneTS.Store(monotonicNow())
	}
	s.put()
}

// put drops a reference; the last one releases the CS.
func (s *cs) put() {
	if s.refs.Add(-1) == 0 {
		s.release()
	}
}

// tryGet takes a reference unless the last one is gone (kref_get_unless_zero).
func (s *cs) tryGet() bool {
	for {
		n := s.refs.Load()
		if n <= 0 {
			return false
		}
		if s.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release is cs_do_release.
func (s *cs) release() {
	c := s.c
	hw := c.hw
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
	submitted := s.submitted
	reuse := (!s.submitted || !s.untracked) && !s.staging.on && s.typ == 0
	hw.mu.Unlock()
	if submitted {
		s.releaseStaged()
	}
	c.releaseSync(s, submitted)
	ts := int64(0)
	if s.stamp {
		ts = s.doneTS.Load()
		c.outcomes.push(s.seq, ts, err)
	}
	fc := s.fence
	typ, sob, encaps := fc.typ, fc.sob, fc.encaps != nil
	fc.complete(err, ts)
	c.signalCompletion()
	if submitted {
		hw.sobReleased(typ, sob, encaps) // cs_release_sob_reset_handler
	}
	if reuse {
		s.fence = nil
		c.mu.Lock()
		c.free = append(c.free, s)
		c.mu.Unlock()
	}
}

// signalCompletion wakes multi-CS waits.
func (c *csCtx) signalCompletion() {
	c.complMu.Lock()
	if c.completions != nil {
		close(c.completions)
		c.completions = nil
	}
	c.complMu.Unlock()
}

// completionChan returns the channel the next completion closes.
func (c *csCtx) completionChan() <-chan struct{} {
	c.complMu.Lock()
	defer c.complMu.Unlock()
	if c.completions == nil {
		c.completions = make(chan struct{})
	}
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
	var (
		sobCount               uint16
		sobAddr, handle, count uint32
	)
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
			err = c.flushHBW()
		case hl.HL_CS_FLAGS_SIGNAL, hl.HL_CS_FLAGS_WAIT, hl.HL_CS_FLAGS_COLLECTIVE_WAIT:
			err = c.signalWait(typ, in.ChunksExecute(), in.NumChunksExecute, &seq, in.CSFlags, timeout, &sobAddr, &sobCount)
		case hl.HL_CS_FLAGS_RESERVE_SIGNALS_ONLY:
			handle, sobAddr, count, err = c.reserveSignals(in.EncapsSignalsQIdx(), in.EncapsSignalsCount())
		case hl.HL_CS_FLAGS_UNRESERVE_SIGNALS_ONLY:
			err = c.unreserveSignals(in.EncapsSigHandleID())
		default:
			// A staged CS other than the first names its staged
			// submission by the first CS's sequence number; the first
			// names its encapsulated signals handle in the same field.
			user := uint64(math.MaxUint64)
			if in.CSFlags&hl.HL_CS_FLAGS_STAGED_SUBMISSION != 0 && in.CSFlags&hl.HL_CS_FLAGS_STAGED_SUBMISSION_FIRST == 0 {
				user = in.Seq()
			}
			seq = user
			err = c.submit(in.ChunksExecute(), in.NumChunksExecute, &seq, in.CSFlags, timeout, in.EncapsSigHandleID())
		}
	}
	if err == unix.EAGAIN {
		return err // the arguments stay as they were, for a retry
	}
	*a = hl.CSArgs{}
	out := a.Out()
	switch typ {
	case hl.HL_CS_FLAGS_RESERVE_SIGNALS_ONLY:
		out.SetHandleID(handle)
		out.SOBBaseAddrOffset = sobAddr
		out.SetCount(count)
	case hl.HL_CS_FLAGS_SIGNAL:
		out.SOBBaseAddrOffset = sobAddr
		out.SOBCountBeforeSubmission = sobCount
		out.SetSeq(seq)
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
	if err == nil {
		return hl.HL_CS_STATUS_SUCCESS
	}
	e, ok := err.(unix.Errno)
	if !ok && !errors.As(err, &e) {
		return hl.HL_CS_STATUS_SUCCESS
	}
	if e != 0 {
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
	if syncStream && c.dev.prof.asic == Gaudi3 {
		// hl_cs_sanity_checks: "Sync stream CS is not supported"; Gaudi3
		// has no queue a signal or wait could run on (gaudi3.c).
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
		*seq = math.MaxUint64
		err = c.submit(in.ChunksRestore(), n, seq, 0, c.dev.prof.defaultTimeout(), 0)
	}
	c.restoreMu.Unlock()
	if err != nil || n == 0 {
		return err
	}
	if _, _, err := c.waitSeq(*seq, uint64(c.dev.prof.defaultTimeout()/time.Microsecond), nil); err != nil {
		return unix.ENOEXEC
	}
	return nil
}

// chunkBuf holds a chunk array copied in by copyChunks.
type chunkBuf struct{ b []hl.CSChunk }

// copyChunks is hl_cs_copy_chunk_array. The chunks go into the context's
// buffer when it is free; putChunks gives it back.
func (c *csCtx) copyChunks(ptr uint64, n uint32) (*chunkBuf, error) {
	if n > hl.HL_MAX_JOBS_PER_CS {
		c.drop(dropValidation)
		return nil, unix.EINVAL
	}
	buf := c.chunks.Swap(nil)
	if buf == nil {
		buf = &chunkBuf{}
	}
	if uint32(cap(buf.b)) < n {
		buf.b = make([]hl.CSChunk, n)
	}
	buf.b = buf.b[:n]
	if err := c.f.copyIn(ptr, sliceBytes(buf.b)); err != nil {
		c.putChunks(buf)
		c.drop(dropValidation)
		return nil, unix.EFAULT
	}
	return buf, nil
}

// putChunks returns a chunk buffer for the next CS.
func (c *csCtx) putChunks(buf *chunkBuf) { c.chunks.Store(buf) }

// allocate is allocate_cs: the next sequence number, unless the fence slot
// it would take still holds a CS in flight (EAGAIN).
func (c *csCtx) allocate(flags uint32, timeout time.Duration) (*cs, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	slot := c.seq & c.mask
	fc := c.pending[slot]
	if fc != nil && !fc.completed() {
		c.drop(dropMaxCSInFlight)
		return nil, unix.EAGAIN
	}
	if fc == nil || fc.holds.Load() != 0 || fc.forced.Load() {
		fc = &fence{seq: c.seq}
		c.pending[slot] = fc
	} else {
		fc.reuse(c.seq)
	}
	var s *cs
	if k := len(c.free); k > 0 {
		s = c.free[k-1]
		c.free[k-1] = nil
		c.free = c.free[:k-1]
	} else {
		s = &cs{c: c}
	}
	s.seq, s.fence, s.jobs, s.timeout = c.seq, fc, s.jobs[:0], timeout
	s.stamp = flags&hl.HL_CS_FLAGS_TIMESTAMP != 0
	s.skip = flags&hl.HL_CS_FLAGS_SKIP_RESET_ON_TIMEOUT != 0
	s.untracked = false
	s.typ = csType(flags &^ hl.HL_CS_FLAGS_FORCE_RESTORE)
	s.encaps = flags&hl.HL_CS_FLAGS_ENCAP_SIGNALS != 0
	s.staging = staged{seq: c.seq}
	s.sigFence, s.encapsHdl, s.encapsOff, s.sobAddr, s.initialSOBs = nil, nil, 0, 0, 0
	fc.typ = s.typ
	s.doneTS.Store(0)
	s.submitted, s.completed, s.timedout, s.aborted, s.tdrActive = false, false, false, false, false
	s.submitAt = 0
	clear(s.hostChecked)
	s.hostChecked = s.hostChecked[:0]
	s.refs.Store(1)
	c.seq++
	return s, nil
}

// submit is cs_ioctl_default. *seq holds the staged submission's sequence
// number for a staged CS other than the first, and receives the CS's
// (the staged submission's for a staged CS).
func (c *csCtx) submit(chunksPtr uint64, n uint32, seq *uint64, flags uint32, timeout time.Duration, encapsID uint32) error {
	user := *seq
	*seq = math.MaxUint64
	buf, err := c.copyChunks(chunksPtr, n)
	if err != nil {
		return err
	}
	s, err := c.allocate(flags, timeout)
	if err != nil {
		c.putChunks(buf)
		return err
	}
	s.stage(flags, user, encapsID)
	*seq = s.staging.seq
	err = c.buildJobs(s, buf.b)
	c.putChunks(buf)
	if err != nil {
		s.rollback()
		s.put()
		*seq = math.MaxUint64
		return err
	}
	if c.dev.strict.on {
		c.strictHashCBs(s)
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
	bad := c.dev.badPacket("CS") // Fault.BadPacket: the first CB's first packet
	for i := range chunks {
		ch := &chunks[i]
		qt, kernelCB, err := c.validateQueue(ch)
		if err != nil {
			c.drop(dropValidation)
			return err
		}
		j := s.newJob()
		j.cs, j.q, j.id, j.qtype = s, c.hw.queues[ch.QueueIndex], i+1, qt
		ext := qt == queueExt || qt == queueHW
		j.tracked = ext && s.needsCompletion()
		if ext {
			intOnly = false
		}
		if j.tracked {
			s.refs.Add(1)
		} else {
			s.untracked = true
		}
		s.jobs = append(s.jobs, j)
		if kernelCB {
			err = c.parseKernelCB(j, ch, bad && i == 0)
		} else {
			j.addr, j.size = ch.CBHandle(), uint64(ch.CBSize())
			j.badPacket = bad && i == 0
			err = c.parseUserCB(j)
		}
		if err != nil {
			return err
		}
	}
	if intOnly && s.needsCompletion() {
		c.drop(dropValidation)
		return unix.EINVAL
	}
	return nil
}

// maxKeptCB is the largest kernel CB copy a reused job keeps.
const maxKeptCB = 64 << 10

// newJob returns a clean job object: one the CS had before it was reused,
// or a new one.
func (s *cs) newJob() *job {
	var j *job
	if n := len(s.jobs); n < cap(s.jobs) {
		j = s.jobs[:n+1][n]
	}
	if j == nil {
		return new(job)
	}
	j.cs, j.q, j.id, j.qtype = nil, nil, 0, 0
	j.kernelCB, j.patched = false, j.patched[:0]
	if cap(j.patched) > maxKeptCB {
		j.patched = nil // a large kernel CB copy is not kept for reuse
	}
	j.addr, j.size, j.tracked, j.badPacket = 0, 0, false, false
	j.cbHash, j.cbHashed = 0, false
	j.done.Store(false)
	j.slot.Store(false)
	return j
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
// which the queue runs, and validates the copy (gaudi_validate_cb). With
// bad (Fault.BadPacket) the copy's first packet has opcode 31.
func (c *csCtx) parseKernelCB(j *job, ch *hl.CSChunk, bad bool) error {
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
	j.kernelCB = true
	j.patched = append(j.patched[:0], cb.mem[:size]...)
	cb.csCnt--
	c.releaseIfDoneLocked(cb)
	mm.mu.Unlock()
	if bad {
		setBadOpcode(j.patched)
	}
	if err := packet.Gaudi.ValidateUser(j.patched); err != nil {
		c.drop(dropParsing)
		if errors.Is(err, packet.ErrPrivileged) {
			return unix.EPERM
		}
		return unix.EINVAL
	}
	return nil
}

// badOpcode is the opcode a Fault.BadPacket writes: no ASIC defines it
// (MAX_PACKET_ID is 32; the highest defined is 0x17).
const badOpcode = 31

// setBadOpcode gives the packet at the start of b opcode badOpcode (bits
// 24-28 of its second word, the ctl word on every ASIC).
func setBadOpcode(b []byte) {
	ctl := binary.LittleEndian.Uint32(b[4:8])
	binary.LittleEndian.PutUint32(b[4:8], ctl&^(0x1f<<24)|badOpcode<<24)
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
	if err := s.scheduleOrphan(); err != nil {
		return err
	}
	// Count the jobs per queue in the queues' schedN (guarded by hw.mu),
	// then check each queue once, at its first job, clearing the counts.
	for _, j := range s.jobs {
		j.q.schedN++
	}
	var err error
	for _, j := range s.jobs {
		q := j.q
		n := q.schedN
		if n == 0 {
			continue
		}
		q.schedN = 0
		if err != nil {
			continue
		}
		q.mu.Lock()
		limit := hlQueueLength
		if q.props.typ == queueInt {
			limit = q.props.intLen
		}
		free := limit - q.inflight
		q.mu.Unlock()
		switch {
		case q.props.typ == queueInt && n > limit:
			err = unix.ENOMEM
		case free < n:
			err = unix.EAGAIN
		}
	}
	if err != nil {
		s.c.drop(dropQueueFull)
		return err
	}
	if err := hw.initSyncLocked(s); err != nil {
		return err
	}
	if err := hw.joinStagedLocked(s); err != nil {
		return err
	}
	if hw.d.strict.on {
		s.submitAt = hw.d.strict.clock.Add(1)
	}
	hw.mirror = append(hw.mirror, s)
	if len(hw.mirror) == 1 && s.needsTimeout() {
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
//
// At most one TDR runs at a time (the oldest CS's), so the device has a
// single timer: tdrCS is the CS it watches, nil for none, and tdrDeadline
// when that CS times out. The timer is not stopped when the CS completes,
// and is reset only when it would fire after the new deadline: it fires
// at tdrFire or later, and timedOut, finding no CS or a deadline not
// reached yet, sets it for the deadline or lets it rest. So a CS costs no
// timer operation while earlier timers stay pending.
func (hw *hwState) armTDRLocked(s *cs) {
	s.tdrActive = true
	hw.tdrCS = s
	now := nanotime()
	hw.tdrDeadline = now + int64(s.timeout)
	if hw.tdrDeadline < now {
		hw.tdrDeadline = math.MaxInt64
	}
	switch {
	case hw.tdr == nil:
		hw.tdr = time.AfterFunc(s.timeout, hw.timedOut)
	case hw.tdrFire == 0 || hw.tdrFire > hw.tdrDeadline:
		hw.tdr.Reset(s.timeout)
	default:
		return // it fires earlier, and timedOut sets it again
	}
	hw.tdrFire = hw.tdrDeadline
}

// stopTDR stops the TDR timer when it watches no CS.
func (hw *hwState) stopTDR() {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	if hw.tdr != nil && hw.tdrCS == nil {
		hw.tdr.Stop()
		hw.tdrFire = 0
	}
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
	if !s.needsTimeout() {
		return // a staged part after the first: the first part's TDR
	}
	if hw.tdrCS == s {
		hw.tdrCS = nil // the timer, left running, will find no CS
	}
	if s.timedout {
		return
	}
	for _, m := range hw.mirror {
		if m.needsTimeout() {
			if !m.tdrActive && hw.d.State().operational() {
				hw.armTDRLocked(m)
			}
			break
		}
	}
}

// timedOut is cs_timedout, for the CS the TDR timer watches.
func (hw *hwState) timedOut() {
	hw.mu.Lock()
	hw.tdrFire = 0
	s := hw.tdrCS
	if s == nil {
		hw.mu.Unlock()
		return // the CS completed: the timer rests
	}
	if now := nanotime(); now < hw.tdrDeadline {
		// Set for an earlier CS: now for this one.
		hw.tdr.Reset(time.Duration(hw.tdrDeadline - now))
		hw.tdrFire = hw.tdrDeadline
		hw.mu.Unlock()
		return
	}
	hw.tdrCS = nil
	if !s.submitted || s.completed {
		hw.mu.Unlock()
		return
	}
	reset := !s.skip
	if reset {
		s.timedout = true
	}
	seq := s.seq
	hw.mu.Unlock()
	// cs_timedout captures the timeout and sends CS_TIMEOUT with the
	// reset's DEVICE_RESET, or alone when the reset is skipped.
	var bits uint64
	if hw.d.captureCSTimeout(seq) {
		bits = hl.HL_NOTIFIER_EVENT_CS_TIMEOUT
	}
	switch {
	case reset:
		hw.d.condReset(bits) // watchdog.go
	case bits != 0:
		hw.d.Notify(bits)
	}
}

// rollback is cs_rollback: a staged CS drops its staged reference, and
// every job not completed is completed now.
func (s *cs) rollback() {
	if !s.needsCompletion() {
		s.put()
	}
	for _, j := range s.jobs {
		if j.tracked && j.done.CompareAndSwap(false, true) {
			j.releaseSlot()
			s.put()
		}
	}
}

// abortCS rolls back the CSs in flight of file f (every CS when f is nil),
// marking them aborted, as hl_cs_rollback_all does, and returns how many.
// The engines must be halted.
func (hw *hwState) abortCS(f *File) int {
	hw.mu.Lock()
	var victims []*cs
	for _, s := range hw.mirror {
		// cs_get, while the mirror list holds the CS. The driver
		// flushes the completion work first (hl_cs_rollback_all), so no
		// release runs beside it; here the ioctl that submitted the CS
		// may drop the last reference at any time, and a CS whose
		// release is under way (waiting for hw.mu to leave the list) is
		// left to it: taking a reference would release it twice.
		if (f == nil || s.c.f == f) && s.tryGet() {
			s.aborted = true
			victims = append(victims, s)
		}
	}
	hw.mu.Unlock()
	for _, s := range victims {
		s.rollback()
		s.put()
	}
	return len(victims)
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
