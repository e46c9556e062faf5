package sim

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// The engines: every queue of the ASIC is a stream of a queue manager
// (QMAN) that fetches the command buffers of its jobs and executes their
// packets in order. The simulator runs one goroutine per queue that has
// had work, started with its first job; it waits for the next job when the
// queue drains and ends when the engines halt (a reset, or the release of
// the compute context) or an error stops the stream. Jobs on the same
// queue run in submission order and jobs on different queues, of one CS or
// of several, run concurrently.
//
// Packets, as the hardware executes them:
//
//   - LIN_DMA copies Size bytes from Src to Dst, or with Memset fills Dst
//     with the 64-bit pattern in Src (byte k of the destination is byte
//     k%8 of the little-endian pattern). Addresses reach host memory and
//     DRAM through the context's device MMU (context.resolve), SRAM (a
//     buffer of the ASIC's SRAM size), Gaudi2 physical DRAM, and Gaudi2
//     command buffers mapped into the CB VA pool. Transfers move in chunks
//     with memmove (DRAM through its sparse memory: unwritten DRAM stays
//     unallocated when copied). On Gaudi2 Endian 1, 2 and 3 swap the bytes
//     within every 16-, 32- and 64-bit word on the way (a tail shorter than
//     the word is copied as is); the kernel headers name the field but not
//     its values, so this reading is the simulator's. WriteCompletion is
//     accepted; the DMA core's completion write is not simulated.
//   - MSG_LONG (and MSG_PROT, on queues the driver does not parse) writes
//     32 bits to an absolute address; MSG_SHORT to the address in the
//     stream's MSG_BASE register Base plus Offset. Op 1 writes the low 32
//     bits of a nanosecond timestamp instead of the value. Writes to the
//     CFG space reach the sync managers (syncmgr.go) and the QMAN fence
//     registers (CP_FENCEn_RDATA_s adds the value to fence counter n of
//     stream s); other CFG addresses, and unprogrammed bases, are recorded
//     as a RAZWI and dropped. Other addresses are memory.
//   - FENCE waits until the stream's fence counter ID reaches Target, then
//     subtracts Dec (inside a CP_DMA command buffer, the counter of the
//     QMAN's lower CP, which CP_FENCEn_RDATA_4 writes reach: cmdq.go). WAIT adds Inc to fence counter ID (its cycle count is
//     not waited).
//   - LOAD_AND_EXE loads the stream's predicates or scalar registers and
//     runs the packet the scalars hold; CB_LIST (Gaudi2) runs an entry of
//     a table of CP_DMAs; a packet whose predicate is false is skipped
//     (cpstate.go).
//   - NOP, ARB_POINT, REPEAT, WREG_32, WREG_BULK, and Gaudi2's WREG_64_*
//     and WRITE_ARC_STREAM are accepted without effect: the simulator has
//     no engine registers, DMA-core descriptors or ARCs (doc.go lists what
//     is modelled). STOP ends the job. CP_DMA runs the command buffer it
//     points at, nested up to four levels.
//   - An opcode the ASIC does not define, Gaudi2's LAST_READ_FROM_ARC
//     (whose layout the kernel does not give) and a packet cut by the end
//     of its command buffer are undefined opcodes: the error is recorded
//     (RecordUndefinedOpcode) and the stream stops. On Gaudi2 the QMAN
//     error event asks for a reset (EVENT_RESET_TYPE_COMPUTE, which both
//     ASICs escalate to a hard reset), so the device resets and the CSs in
//     flight are aborted; on Gaudi the QMAN error event does not reset, the
//     stream stays stopped and its CS times out.
//   - An address that nothing maps is an MMU page fault: it is recorded
//     with the context's user mappings (RecordPageFault) and the stream
//     stops, as a QMAN stops on error (stop_on_err); the page fault event
//     does not reset the device (EVENT_RESET_TYPE_NONE), so the CS never
//     completes and the TDR times it out and resets the device.
//
// A hard reset halts every stream (a transfer stops at its next chunk, a
// FENCE wakes up), drops the jobs not yet run, clears the fence counters,
// the sync managers and stopped streams (Device.Reset).

// errHalted ends a job whose stream was halted by a reset.
var errHalted = errors.New("stream halted by a reset")

// pageFault is an access that no mapping covers.
type pageFault struct{ addr uint64 }

func (e *pageFault) Error() string { return "device page fault" }

// undefinedOpcode is a packet the QMAN cannot execute.
type undefinedOpcode struct {
	addr uint64 // device address of the packet (0 for a patched CB)
	left uint32 // bytes of the CB from there
}

func (e *undefinedOpcode) Error() string { return "undefined opcode" }

// dmaChunk is the most a transfer moves between two checks for a halt.
const dmaChunk = 4 << 20

// hwState is a device's command submission hardware: queues, sync
// managers, SRAM, and the list of CSs in flight (the driver's
// cs_mirror_list, device-wide).
type hwState struct {
	d       *Device
	prof    *profile
	props   []queueProps
	queues  []*hwQueue
	sm      *syncMgr
	qms     map[uint64][4]int // QMAN CFG offset -> queue of each stream, -1 for none
	cfgBase uint64
	cfgSize uint64

	sramOnce   sync.Once
	sram       []byte
	sramMapped bool // sram is a mapping, unmapped by System.Close

	link [2]pcieLink // host-to-device, device-to-host

	// mu is the driver's hw_queues_lock and cs_mirror_lock: scheduling,
	// the mirror list, TDR bookkeeping and the worker count.
	mu      sync.Mutex
	idle    *sync.Cond // workers reached 0
	workers int
	mirror  []*cs

	// The TDR timer (armTDRLocked), guarded by mu; times are nanotime.
	tdr         *time.Timer
	tdrCS       *cs   // the CS the timer watches, nil when none
	tdrDeadline int64 // when tdrCS times out
	tdrFire     int64 // when the timer fires (or later), 0 when it rests

	resetMu sync.Mutex // one reset sequence at a time

	pqmState *pqmState // Gaudi3's PDMA channels (pqm.go), nil on other ASICs
}

// hardware returns the device's hardware state, built on first use.
func (d *Device) hardware() *hwState {
	d.hw.once.Do(func() { d.hw.p = newHW(d) })
	return d.hw.p
}

// hwHolder keeps a device's hardware state (engine.go).
type hwHolder struct {
	once sync.Once
	p    *hwState
}

func newHW(d *Device) *hwState {
	hw := &hwState{d: d, prof: &d.prof, props: queueTable(&d.prof), qms: map[uint64][4]int{}}
	hw.idle = sync.NewCond(&hw.mu)
	hw.cfgBase, hw.cfgSize = d.prof.cfgSpace()
	hw.sm = newSyncMgr(&d.prof)
	for i := range hw.props {
		q := &hwQueue{id: i, hw: hw, props: &hw.props[i], engine: -1}
		if d.prof.asic == Gaudi2 {
			q.engine = gaudi2EDMAEngine(i)
		}
		q.cond = sync.NewCond(&q.mu)
		q.x = execEnv{hw: hw, q: q}
		hw.queues = append(hw.queues, q)
		if qm := hw.props[i].qmBase; qm != 0 {
			s, ok := hw.qms[qm]
			if !ok {
				s = [4]int{-1, -1, -1, -1}
			}
			s[hw.props[i].stream] = i
			hw.qms[qm] = s
		}
	}
	for i := range hw.link {
		hw.link[i].bw = d.cfg.PCIeBandwidth
	}
	hw.linkCmdqs()
	if d.prof.asic == Gaudi3 {
		hw.pqmState = newPQM(hw)
	}
	return hw
}

// sramBytes returns the SRAM, mapped on first use (untouched pages take no
// memory); nil after System.Close.
func (hw *hwState) sramBytes() []byte {
	hw.sramOnce.Do(func() {
		b, err := unix.Mmap(-1, 0, int(hw.prof.sramSize), unix.PROT_READ|unix.PROT_WRITE,
			unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
		if err != nil {
			b = make([]byte, hw.prof.sramSize)
		} else {
			hw.sramMapped = true
		}
		hw.sram = b
	})
	return hw.sram
}

// closeSRAM releases the SRAM for System.Close, with the engines halted so
// that no copy holds a slice of it; later accesses fault.
func (d *Device) closeSRAM() {
	hw := d.hardware()
	d.haltEngines()
	hw.sramOnce.Do(func() {}) // never mapped: it will not be
	if hw.sramMapped {
		unix.Munmap(hw.sram)
		hw.sramMapped = false
	}
	hw.sram = nil
	d.restartEngines()
}

// hwQueue is one queue: a QMAN stream with its fence counters.
type hwQueue struct {
	id    int
	hw    *hwState
	props *queueProps

	mu       sync.Mutex
	cond     *sync.Cond // fence counter changes, new jobs, halts
	fence    [4]uint32
	jobs     []*job // jobs[head:] wait to run
	head     int
	worker   bool // the stream's goroutine runs
	stopped  bool // an error stopped the stream until the next reset
	inflight int  // queue entries in use (PQ slots)
	halted   atomic.Bool
	engine   int // the Gaudi2 EDMA engine id that executes this queue, -1 for none (cs_control.go)

	schedN int // jobs of the CS being scheduled (hwState.schedule, hw.mu)

	cmdq *cmdqState // the QMAN's lower CP, shared by its streams (cmdq.go)

	// Used by the stream's goroutine only: its execution environment, the
	// fetch windows of its command buffers (one per CP_DMA nesting level)
	// and the endian swap buffer.
	x    execEnv
	cp   cpState // predicates and scalars (cpstate.go)
	win  [maxCPDMADepth + 1][]byte
	swap []byte
}

// maxCPDMADepth is how deep CP_DMA packets nest.
const maxCPDMADepth = 4

// job is one chunk of a CS on one queue (struct hl_cs_job).
type job struct {
	cs       *cs
	q        *hwQueue
	id       int
	qtype    queueType
	kernelCB bool   // runs patched, the driver's copy of a kernel CB (Gaudi external queues)
	patched  []byte // (its capacity stays with the job object for reuse)
	addr     uint64 // a user CB's device address
	size     uint64
	tracked  bool        // the CS completes when every tracked job has
	done     atomic.Bool // a tracked job completed or was rolled back
	slot     atomic.Bool // holds one of the queue's entries

	// Strict mode: the hash of a user CB at submission (strict_dma.go).
	cbHash   uint64
	cbHashed bool
	// badPacket: the user CB's first packet reads as opcode 31
	// (Fault.BadPacket).
	badPacket bool
}

// releaseSlot gives the job's queue entry back, once.
func (j *job) releaseSlot() {
	if j.slot.CompareAndSwap(true, false) {
		j.q.mu.Lock()
		j.q.inflight--
		j.q.mu.Unlock()
	}
}

// start appends a job to its queue and wakes the queue's goroutine, or
// starts it when it has none. hw.mu must be held.
func (hw *hwState) start(j *job) {
	q := j.q
	q.mu.Lock()
	q.jobs = append(q.jobs, j)
	spawn := !q.worker && !q.stopped
	if spawn {
		q.worker = true
		hw.workers++
	} else {
		q.cond.Signal() // the goroutine is the only one that waits on cond
	}
	q.mu.Unlock()
	if spawn {
		go q.run()
	}
}

// clearJobsLocked empties the job list, keeping its array. q.mu must be
// held.
func (q *hwQueue) clearJobsLocked() {
	clear(q.jobs)
	q.jobs, q.head = q.jobs[:0], 0
}

// run executes the queue's jobs in order, waiting for more when it
// drains, until the stream stops or halts.
func (q *hwQueue) run() {
	q.mu.Lock()
	for !q.stopped && !q.halted.Load() {
		if q.head == len(q.jobs) {
			q.clearJobsLocked()
			q.cond.Wait()
			continue
		}
		j := q.jobs[q.head]
		q.jobs[q.head] = nil
		q.head++
		q.mu.Unlock()

		err := errHalted
		switch {
		case j.cs.c.f.isOrphan():
			err = errAddressSpaceGone
		case q.waitEngine():
			err = q.exec(j)
		}
		switch {
		case err == nil:
			j.cs.jobDone(j)
		case err == errHalted:
			// The loop sees the halt; the reset rolls the CS back.
		case err == errAddressSpaceGone:
			// Its process's address space went away: the job is not
			// done, the file's abort rolls the CS back (orphan.go).
			j.cs.c.f.addressSpaceLost()
		default:
			q.mu.Lock()
			q.stopped = true
			q.mu.Unlock()
			q.fail(j, err)
		}
		q.mu.Lock()
	}
	q.worker = false
	q.mu.Unlock()
	hw := q.hw
	hw.mu.Lock()
	hw.workers--
	if hw.workers == 0 {
		hw.idle.Broadcast()
	}
	hw.mu.Unlock()
}

// fail records the error that stopped the stream.
func (q *hwQueue) fail(j *job, err error) {
	d := q.hw.d
	var pf *pageFault
	var uo *undefinedOpcode
	switch {
	case errors.As(err, &pf):
		d.RecordPageFault(pf.addr, j.cs.c.userMappings(q.hw.isHostVA(pf.addr))...)
	case errors.As(err, &uo):
		d.RecordUndefinedOpcode(q.props.engine, uo.addr, uo.left)
		if q.hw.prof.dramVirtual {
			go d.Reset()
		}
	}
}

// isHostVA reports whether addr lies in the host VA ranges (the PMMU's).
func (hw *hwState) isHostVA(addr uint64) bool {
	v := &hw.prof.vm
	return (addr >= v.host.start && addr <= v.host.end) || (addr >= v.hostHuge.start && addr <= v.hostHuge.end)
}

// halt stops every stream and waits until none runs: pending jobs are
// dropped, a running job ends at its next packet, chunk or fence check,
// and the streams' goroutines end (the next job starts a new one). The
// caller rolls the CSs back, then calls restart.
func (hw *hwState) halt() {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	for _, q := range hw.queues {
		q.mu.Lock()
		q.halted.Store(true)
		for _, j := range q.jobs[q.head:] {
			j.releaseSlotLocked()
		}
		q.clearJobsLocked()
		q.cond.Broadcast()
		q.mu.Unlock()
		if q.cmdq != nil {
			q.cmdq.wake()
		}
	}
	for hw.workers > 0 {
		hw.idle.Wait()
	}
}

// releaseSlotLocked is releaseSlot with q.mu held.
func (j *job) releaseSlotLocked() {
	if j.slot.CompareAndSwap(true, false) {
		j.q.inflight--
	}
}

// restart brings the streams back after a reset: fence counters, stopped
// streams and the sync managers start clean.
func (hw *hwState) restart() {
	hw.sm.reset()
	hw.mu.Lock()
	defer hw.mu.Unlock()
	for _, q := range hw.queues {
		q.mu.Lock()
		q.fence = [4]uint32{}
		q.cp = cpState{}
		if q.cmdq != nil {
			q.cmdq.clear()
		}
		q.stopped = false
		q.halted.Store(false)
		q.mu.Unlock()
	}
}

// fenceWait is FENCE: wait for counter id to reach target, then take dec.
func (q *hwQueue) fenceWait(id, target, dec uint8) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.fence[id] < uint32(target) {
		if q.halted.Load() {
			return errHalted
		}
		q.cond.Wait()
	}
	q.fence[id] -= uint32(dec)
	return nil
}

// fenceAdd adds v to fence counter id.
func (q *hwQueue) fenceAdd(id uint8, v uint32) {
	q.mu.Lock()
	q.fence[id] += v
	q.cond.Broadcast()
	q.mu.Unlock()
}

// execEnv is what a job's packets reach: the context's memory, its CB VA
// pool, the queue.
type execEnv struct {
	hw  *hwState
	q   *hwQueue
	c   *csCtx
	ctx *context

	flight inflight   // LIN_DMAs since the last engine barrier (barrier.go)
	scope  faultScope // the caller's memory the access under way touches (hostfault.go)

	// Strict mode (strict_dma.go): the job's CS, nil when strict mode is
	// off or the access is the simulator's own; whether the job reported
	// host memory that is gone.
	cs       *cs
	goneSeen bool
}

// exec runs one job.
func (q *hwQueue) exec(j *job) error {
	x := &q.x
	x.c, x.ctx = j.cs.c, j.cs.c.f.ctx
	x.flight.reset()
	strict := q.hw.d.strict.on
	if strict {
		x.cs, x.goneSeen = j.cs, false
		x.strictCheckCB(j, "execution")
	}
	var err error
	switch {
	case j.badPacket:
		err = &undefinedOpcode{addr: j.addr, left: uint32(j.size)}
	case j.kernelCB:
		err = x.run(cbSource{mem: j.patched, size: uint64(len(j.patched))}, 0)
	default:
		err = x.run(cbSource{x: x, addr: j.addr, size: j.size}, 0)
	}
	if strict {
		if err == nil {
			x.strictCheckCB(j, "completion")
		}
		x.cs = nil
	}
	x.c, x.ctx = nil, nil
	return err
}

// format is the ASIC's packet format.
func (hw *hwState) format() packet.Format {
	if hw.prof.dramVirtual {
		return packet.Gaudi2
	}
	return packet.Gaudi
}

// cbSource is a command buffer being fetched: the driver's copy in memory,
// or a user CB read through device addresses a window at a time.
type cbSource struct {
	mem  []byte // the whole CB, or nil
	x    *execEnv
	addr uint64
	size uint64

	win    *[]byte // the queue's fetch buffer for this nesting level
	n      uint64  // fetched bytes in *win, starting at winOff
	winOff uint64
}

// bytes returns n bytes at offset off, fetching as needed. The result is
// valid until the next call.
func (s *cbSource) bytes(off, n uint64) ([]byte, error) {
	if s.mem != nil {
		return s.mem[off : off+n], nil
	}
	win := *s.win
	if off >= s.winOff && off+n <= s.winOff+s.n {
		return win[off-s.winOff : off-s.winOff+n], nil
	}
	k := max(n, min(64<<10, s.size-off))
	if uint64(cap(win)) < k {
		win = make([]byte, k)
		*s.win = win
	}
	s.n = 0
	if err := s.x.load(s.addr+off, win[:k]); err != nil {
		return nil, err
	}
	s.winOff, s.n = off, k
	return win[:n], nil
}

// packetLen returns the length of the packet whose first 8 bytes are hdr,
// or 0 for an opcode the QMAN does not execute.
func packetLen(f packet.Format, hdr []byte) uint64 {
	op := packetOpcode(hdr)
	if !f.Has(op) {
		return 0
	}
	switch op {
	case packet.OpWRegBulk, packet.OpWriteArcStream:
		return 8 + 8*uint64(binary.LittleEndian.Uint32(hdr)&0xffff)
	case packet.OpMsgLong, packet.OpCPDMA, packet.OpMsgProt, packet.OpLoadAndExe, packet.OpWReg64Long:
		return 16
	case packet.OpLinDMA, packet.OpCBList:
		return 24
	case packet.OpLastReadFromArc:
		return 0
	}
	return 8
}

// undefinedAt is the undefined opcode error for the packet at offset off
// of src.
func (s *cbSource) undefinedAt(off uint64) error {
	addr := uint64(0)
	if s.mem == nil {
		addr = s.addr + off
	}
	return &undefinedOpcode{addr: addr, left: uint32(s.size - off)}
}

// run executes the packets of a command buffer.
func (x *execEnv) run(src cbSource, depth int) error {
	f := x.hw.format()
	if src.mem == nil {
		src.win = &x.q.win[depth]
	}
	for off := uint64(0); off < src.size; {
		if x.q.halted.Load() {
			return errHalted
		}
		if src.size-off < 8 {
			return src.undefinedAt(off)
		}
		hdr, err := src.bytes(off, 8)
		if err != nil {
			return err
		}
		n := packetLen(f, hdr)
		if n == 0 || n > src.size-off {
			return src.undefinedAt(off)
		}
		b, err := src.bytes(off, n)
		if err != nil {
			return err
		}
		var stop bool
		op := packetOpcode(b)
		if x.q.cp.skipped(op, b) {
			off += n
			continue
		}
		switch op {
		case packet.OpLinDMA:
			// The hot path, decoded without allocating.
			p, _, ok := f.DecodeLinDMA(b)
			if !ok {
				return src.undefinedAt(off)
			}
			err = x.linDMA(p)
		case packet.OpMsgLong, packet.OpMsgProt, packet.OpMsgShort, packet.OpFence,
			packet.OpWait, packet.OpCPDMA, packet.OpLoadAndExe, packet.OpCBList:
			p, _, derr := f.Decode(b)
			if derr != nil && !errors.Is(derr, packet.ErrReservedBits) {
				return src.undefinedAt(off)
			}
			if l, ok := p.(packet.CBList); ok && depth > 0 && src.mem == nil && off+n == src.size {
				next, tail, err := x.cbListTail(l)
				if err != nil {
					return err
				}
				if tail { // the CB_LIST's buffer replaces this one (cpstate.go)
					next.win = src.win
					src, off = next, 0
					continue
				}
			}
			stop, err = x.exec(p, depth)
		case packet.OpStop:
			stop = true
		default:
			// NOP, ARB_POINT, REPEAT, WREG_32, WREG_BULK: Decode accepts any packet of these opcodes that
			// packetLen accepted (at most with ErrReservedBits), and they
			// have no effect here. WREG_64_* and WRITE_ARC_STREAM, which
			// Decode does not support: no engine registers here.
		}
		if err != nil || stop {
			return err
		}
		off += n
	}
	return nil
}

// packetOpcode returns the opcode of the packet at the start of b (8
// bytes at least).
func packetOpcode(b []byte) packet.Opcode {
	return packet.Opcode(binary.LittleEndian.Uint32(b[4:]) >> 24 & 0x1f)
}

// linDMA executes a LIN_DMA packet.
func (x *execEnv) linDMA(p packet.LinDMA) error {
	if x.flight.admit(p) {
		x.hw.d.hazards.Add(1)
		x.strictHazard(p.Dst)
		return x.fill(p.Dst, hazardFill*0x0101010101010101, uint64(p.Size), 0)
	}
	if p.Memset {
		return x.fill(p.Dst, p.Src, uint64(p.Size), p.Endian)
	}
	return x.copy(p.Dst, p.Src, uint64(p.Size), p.Endian)
}

// exec executes one packet; stop ends the command buffer.
func (x *execEnv) exec(p packet.Packet, depth int) (stop bool, err error) {
	switch p := p.(type) {
	case packet.LinDMA:
		return false, x.linDMA(p)
	case packet.MsgLong:
		return false, x.msgLong(p)
	case packet.MsgProt:
		return false, x.msgLong(packet.MsgLong(p))
	case packet.MsgShort:
		base := x.q.props.msgBase[p.Base]
		val := p.Value
		if p.Op == packet.MsgWriteTimestamp {
			val = uint32(monotonicNow())
		}
		if base == 0 {
			x.razwi(uint64(p.Offset))
			return false, nil
		}
		return false, x.write32(base+uint64(p.Offset), val)
	case packet.Fence:
		var err error
		if depth > 0 && x.q.cmdq != nil {
			err = x.q.cmdq.wait(x.q, p.ID, p.Target, p.Dec) // inside CP_DMA: the lower CP
		} else {
			err = x.q.fenceWait(p.ID, p.Target, p.Dec)
		}
		if err == nil && x.c.f.gone() {
			// Released after the served process's address space went
			// away: what follows is not run (orphan.go).
			err = errAddressSpaceGone
		}
		return false, err
	case packet.Wait:
		x.q.fenceAdd(p.ID, uint32(p.Inc))
	case packet.Stop:
		return true, nil
	case packet.CPDMA:
		if depth >= maxCPDMADepth {
			return false, &undefinedOpcode{addr: p.Src, left: p.Size}
		}
		return false, x.run(cbSource{x: x, addr: p.Src, size: uint64(p.Size)}, depth+1)
	case packet.LoadAndExe:
		return false, x.loadAndExe(p, depth)
	case packet.CBList:
		return false, x.cbList(p, depth)
	}
	// NOP, ARB_POINT, REPEAT, WREG_32, WREG_BULK.
	return false, nil
}

func (x *execEnv) msgLong(p packet.MsgLong) error {
	val := p.Value
	if p.Op == packet.MsgWriteTimestamp {
		val = uint32(monotonicNow())
	}
	return x.write32(p.Addr, val)
}

// razwi records an illegal write by the queue's engine.
func (x *execEnv) razwi(addr uint64) {
	x.hw.d.RecordRazwi(addr, []uint16{uint16(x.q.props.engine)}, hl.HL_RAZWI_WRITE|hl.HL_RAZWI_LBW)
}

// smWrite writes val to the sync manager register at addr and delivers
// the writes its monitors and completion queues make in turn. A delivery
// that faults is recorded as a page fault; the engine or channel that set
// the sync object goes on.
func (x *execEnv) smWrite(addr uint64, val uint32) {
	hw := x.hw
	for _, p := range hw.sm.write(addr, val) {
		if err := x.deliver(p); err != nil {
			var pf *pageFault
			if errors.As(err, &pf) {
				hw.d.RecordPageFault(pf.addr, x.c.userMappings(hw.isHostVA(pf.addr))...)
			}
		}
	}
}

// write32 is a 32-bit write by the QMAN or a monitor: a register in the
// CFG space or memory.
func (x *execEnv) write32(addr uint64, val uint32) error {
	hw := x.hw
	if st := hw.pqm(); st != nil {
		return st.write32(x, addr, val) // Gaudi3: a PDMA channel's map (pqm.go)
	}
	if addr < hw.cfgBase || addr-hw.cfgBase >= hw.cfgSize {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], val)
		return x.store(addr, b[:])
	}
	if blk, _ := hw.sm.block(addr); blk != nil {
		x.smWrite(addr, val)
		return nil
	}
	off := addr - hw.cfgBase
	if hw.prof.dramVirtual && off == msixDoorbell {
		hw.sm.raise(val) // interrupt.go
		return nil
	}
	fence0 := uint64(gaudiQMFence0)
	if hw.prof.dramVirtual {
		fence0 = gaudi2QMFence0
	}
	qmOff := off &^ 0xFFF // every QMAN block is 4 KB aligned
	if s, ok := hw.qms[qmOff]; ok {
		if rel := off - qmOff - fence0; off-qmOff >= fence0 && rel < 4*qmFenceStride && rel%4 == 0 {
			id, cp := rel/qmFenceStride, rel%qmFenceStride/4
			if cp < 4 && s[cp] >= 0 {
				hw.queues[s[cp]].fenceAdd(uint8(id), val)
			} else if cp == 4 && s[0] >= 0 && hw.queues[s[0]].cmdq != nil {
				hw.queues[s[0]].cmdq.add(uint8(id), val) // CP_FENCEn_RDATA_4: the lower CP
			}
			return nil
		}
	}
	x.razwi(addr)
	return nil
}

// seg is a contiguous part of what a device address range reaches: direct
// memory (host memory, SRAM, a CB) or DRAM.
type seg struct {
	b      []byte
	dram   uint64
	isDRAM bool
	host   bool // crosses PCIe
	user   bool // the caller's memory (a host mapping), which it may unmap
	n      uint64

	rem  *remoteMem // a host mapping of a served process: its memory at addr (engine_remote.go)
	addr uint64
}

// locked runs fn with the mappings held: the context's (so UNMAP waits)
// and the CB VA pool's (so a mapped CB is not released).
func (x *execEnv) locked(fn func() error) error {
	x.ctx.mu.RLock()
	defer x.ctx.mu.RUnlock()
	x.c.cbVA.RLock()
	defer x.c.cbVA.RUnlock()
	return fn()
}

// resolveLocked returns the first segment of [addr, addr+n), n > 0. The
// locks of locked must be held.
func (x *execEnv) resolveLocked(addr, n uint64) (seg, error) {
	p := x.hw.prof
	if addr >= p.sramBase && addr-p.sramBase < p.sramSize {
		off := addr - p.sramBase
		k := min(n, p.sramSize-off)
		sram := x.hw.sramBytes()
		if sram == nil {
			return seg{}, &pageFault{addr} // System.Close released it
		}
		return seg{b: sram[off : off+k], n: k}, nil
	}
	if addr >= x.hw.cfgBase && addr-x.hw.cfgBase < x.hw.cfgSize {
		return seg{}, &pageFault{addr}
	}
	if p.dramVirtual && addr >= p.dramBase && addr-p.dramBase < p.dramSize {
		off := addr - p.dramBase
		return seg{dram: off, isDRAM: true, n: min(n, p.dramSize-off)}, nil
	}
	if cb := x.c.cbAtLocked(addr); cb != nil {
		off := addr - cb.va
		k := min(n, uint64(len(cb.mem))-off)
		return seg{b: cb.mem[off : off+k], host: true, n: k}, nil
	}
	e, m, err := x.ctx.resolveMapLocked(addr, n)
	if err != nil {
		if x.cs != nil {
			x.strictFault(addr)
		}
		return seg{}, &pageFault{addr}
	}
	if x.cs != nil && m != nil {
		if m.mappedAt > x.cs.submitAt {
			x.strictNewer(addr)
		}
		if m.host {
			x.strictHost(m, addr, e.n)
		}
	}
	if e.kind == extentHost && e.rem != nil {
		return seg{rem: e.rem, addr: e.addr, host: true, n: e.n}, nil
	}
	if e.kind == extentHost {
		return seg{b: e.host, host: true, user: true, n: e.n}, nil
	}
	return seg{dram: e.dram, isDRAM: true, n: e.n}, nil
}

// copy is LIN_DMA without memset.
func (x *execEnv) copy(dst, src, n uint64, endian uint8) error {
	width := uint64(0)
	if endian != 0 {
		width = 1 << endian // bytes per swapped word: 2, 4, 8
	}
	for done := uint64(0); done < n; {
		if x.q.halted.Load() {
			return errHalted
		}
		k := min(n-done, dmaChunk)
		var host [2]bool
		err := x.guard(func() error { return x.copyOnce(dst+done, src+done, k, width, &k, &host) })
		if _, ok := err.(*hostGone); ok {
			// Host memory the caller unmapped: again page by page,
			// without the pages that are gone (hostfault.go).
			err = x.copyAround(dst+done, src+done, k, width)
		}
		if err != nil {
			return err
		}
		if err := x.pcie(host[0], host[1], k); err != nil {
			return err
		}
		done += k
	}
	return nil
}

// copyOnce copies the first contiguous part of at most n bytes from src
// to dst, setting *k to its length and *host to which sides are host
// memory before any byte moves, so that they tell the part also when a
// fault ends the copy.
func (x *execEnv) copyOnce(dst, src, n, width uint64, k *uint64, host *[2]bool) error {
	dram := x.hw.d.dram
	return x.locked(func() error {
		s, err := x.resolveLocked(src, n)
		if err != nil {
			return err
		}
		d, err := x.resolveLocked(dst, s.n)
		if err != nil {
			return err
		}
		n := d.n
		if width != 0 && n >= width {
			n = n / width * width // no word straddles two pieces
		}
		*k, *host = n, [2]bool{s.host, d.host}
		x.scope.set(s, d, n)
		if s.rem != nil || d.rem != nil {
			return x.remoteCopy(d, s, n, width)
		}
		if width != 0 {
			return x.swapCopy(d, s, n, width)
		}
		switch {
		case !s.isDRAM && !d.isDRAM:
			copy(d.b[:n], s.b[:n])
		case !s.isDRAM:
			return dram.WriteAt(s.b[:n], d.dram)
		case !d.isDRAM:
			return dram.ReadAt(d.b[:n], s.dram)
		default:
			return dram.Copy(d.dram, s.dram, n)
		}
		return nil
	})
}

// swapCopy copies k bytes from s to d through the swap buffer, swapping
// the bytes of each width-byte word.
func (x *execEnv) swapCopy(d, s seg, k, width uint64) error {
	if uint64(cap(x.q.swap)) < k {
		x.q.swap = make([]byte, k)
	}
	buf := x.q.swap[:k]
	dram := x.hw.d.dram
	if s.isDRAM {
		if err := dram.ReadAt(buf, s.dram); err != nil {
			return err
		}
	} else {
		copy(buf, s.b[:k])
	}
	swapBytes(buf, width)
	if d.isDRAM {
		return dram.WriteAt(buf, d.dram)
	}
	copy(d.b[:k], buf)
	return nil
}

// swapBytes reverses the bytes of every whole width-byte word of b.
func swapBytes(b []byte, width uint64) {
	n := uint64(len(b)) / width * width
	switch width {
	case 2:
		for i := uint64(0); i < n; i += 2 {
			binary.LittleEndian.PutUint16(b[i:], bits.ReverseBytes16(binary.LittleEndian.Uint16(b[i:])))
		}
	case 4:
		for i := uint64(0); i < n; i += 4 {
			binary.LittleEndian.PutUint32(b[i:], bits.ReverseBytes32(binary.LittleEndian.Uint32(b[i:])))
		}
	case 8:
		for i := uint64(0); i < n; i += 8 {
			binary.LittleEndian.PutUint64(b[i:], bits.ReverseBytes64(binary.LittleEndian.Uint64(b[i:])))
		}
	}
}

// fill is LIN_DMA with memset: byte k of [dst, dst+n) becomes byte k%8 of
// the little-endian pattern (after the endian swap on Gaudi2).
func (x *execEnv) fill(dst, pattern, n uint64, endian uint8) error {
	var pat [8]byte
	binary.LittleEndian.PutUint64(pat[:], pattern)
	if endian != 0 {
		swapBytes(pat[:], 1<<endian)
	}
	for done := uint64(0); done < n; {
		if x.q.halted.Load() {
			return errHalted
		}
		k := min(n-done, dmaChunk)
		host := false
		err := x.guard(func() error { return x.fillOnce(dst+done, k, pat, done%8, &k, &host) })
		if _, ok := err.(*hostGone); ok {
			err = x.fillAround(dst+done, k, pat, done%8)
		}
		if err != nil {
			return err
		}
		if err := x.pcie(false, host, k); err != nil {
			return err
		}
		done += k
	}
	return nil
}

// fillOnce fills the first contiguous part of at most n bytes at dst with
// pat starting at pat[phase], setting *k to its length and *host to
// whether it is host memory before any byte moves.
func (x *execEnv) fillOnce(dst, n uint64, pat [8]byte, phase uint64, k *uint64, host *bool) error {
	dram := x.hw.d.dram
	return x.locked(func() error {
		d, err := x.resolveLocked(dst, n)
		if err != nil {
			return err
		}
		n := d.n
		*k, *host = n, d.host
		x.scope.set(seg{}, d, n)
		if d.rem != nil {
			return x.remoteFill(d, n, pat, phase)
		}
		switch {
		case !d.isDRAM:
			fillPattern(d.b[:n], pat, phase)
		case pat == [8]byte{}:
			return dram.Zero(d.dram, n)
		default:
			return dram.view(d.dram, n, func(b []byte) error {
				fillPattern(b, pat, phase)
				return nil
			})
		}
		return nil
	})
}

// fillPattern fills b with pat, b[0] taking pat[phase], doubling the
// filled prefix with memmove.
func fillPattern(b []byte, pat [8]byte, phase uint64) {
	if len(b) == 0 {
		return
	}
	for i := 0; i < len(b) && i < 8; i++ {
		b[i] = pat[(phase+uint64(i))%8]
	}
	for filled := 8; filled < len(b); filled *= 2 {
		copy(b[filled:], b[:filled])
	}
}

// store writes b at device address dst. Bytes for host memory the caller
// unmapped are dropped (hostfault.go).
func (x *execEnv) store(dst uint64, b []byte) error {
	for done := uint64(0); done < uint64(len(b)); {
		var k uint64
		err := x.guard(func() error { return x.storeOnce(dst+done, b[done:], &k) })
		if _, ok := err.(*hostGone); ok {
			err = x.storeAround(dst+done, b[done:done+k])
		}
		if err != nil {
			return err
		}
		done += k
	}
	return nil
}

// storeOnce writes the first contiguous part of b at dst, setting *k to
// its length before any byte moves.
func (x *execEnv) storeOnce(dst uint64, b []byte, k *uint64) error {
	return x.locked(func() error {
		d, err := x.resolveLocked(dst, uint64(len(b)))
		if err != nil {
			return err
		}
		n := d.n
		*k = n
		x.scope.set(seg{}, d, n)
		if d.rem != nil {
			return remoteStore(d, b[:n])
		}
		if d.isDRAM {
			return x.hw.d.dram.WriteAt(b[:n], d.dram)
		}
		copy(d.b[:n], b[:n])
		return nil
	})
}

// load reads len(b) bytes at device address src. Host memory the caller
// unmapped reads as zeros (hostfault.go).
func (x *execEnv) load(src uint64, b []byte) error {
	for done := uint64(0); done < uint64(len(b)); {
		var k uint64
		err := x.guard(func() error { return x.loadOnce(src+done, b[done:], &k) })
		if _, ok := err.(*hostGone); ok {
			err = x.loadAround(src+done, b[done:done+k])
		}
		if err != nil {
			return err
		}
		done += k
	}
	return nil
}

// loadOnce reads the first contiguous part of b from src, setting *k to
// its length before any byte moves.
func (x *execEnv) loadOnce(src uint64, b []byte, k *uint64) error {
	return x.locked(func() error {
		s, err := x.resolveLocked(src, uint64(len(b)))
		if err != nil {
			return err
		}
		n := s.n
		*k = n
		x.scope.set(s, seg{}, n)
		if s.rem != nil {
			return remoteLoad(s, b[:n])
		}
		if s.isDRAM {
			return x.hw.d.dram.ReadAt(b[:n], s.dram)
		}
		copy(b[:n], s.b[:n])
		return nil
	})
}

// pcieLink is one direction of the PCIe link for the bandwidth model:
// transfers reserve it one after the other.
type pcieLink struct {
	bw   uint64 // bytes per second, 0 for unlimited
	mu   sync.Mutex
	busy time.Time // the link is reserved until then
}

// reserve books n bytes on the link and returns when they are through.
func (l *pcieLink) reserve(n uint64) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	start := l.busy
	if start.Before(now) {
		start = now
	}
	l.busy = start.Add(time.Duration(float64(n) / float64(l.bw) * float64(time.Second)))
	return l.busy
}

// pcie delays a transfer of n bytes that reads host memory (fromHost,
// host-to-device traffic) or writes it (toHost) as the configured PCIe
// bandwidth would, waking up early when the stream is halted.
func (x *execEnv) pcie(fromHost, toHost bool, n uint64) error {
	var until time.Time
	for i, on := range [2]bool{fromHost, toHost} {
		if l := &x.hw.link[i]; on && l.bw != 0 {
			if t := l.reserve(n); t.After(until) {
				until = t
			}
		}
	}
	if until.IsZero() {
		return nil
	}
	for {
		wait := time.Until(until)
		if wait <= 0 {
			return nil
		}
		if x.q.halted.Load() {
			return errHalted
		}
		time.Sleep(min(wait, 5*time.Millisecond))
	}
}

// haltEngines starts a reset of the engines (Device.Reset): every stream
// stops. The reset ends with restartEngines; one runs at a time.
func (d *Device) haltEngines() {
	hw := d.hardware()
	hw.resetMu.Lock()
	hw.halt()
}

// restartEngines ends a reset: CSs still in flight (of a context that has
// no open file any more) are aborted, and the streams start clean.
func (d *Device) restartEngines() {
	hw := d.hardware()
	hw.abortCS(nil)
	hw.restart()
	hw.resetMu.Unlock()
}

// closeSubmissions ends a compute context's submissions when its file is
// released: if it ever submitted, the engines halt and restart (as the
// compute reset on release does), aborting its CSs in flight and any job
// still running (Gaudi's internal jobs outlive their CS), so nothing
// touches its memory afterwards; then its command buffers go.
func (d *Device) closeSubmissions(f *File) {
	c := f.cs.p.Load()
	if c == nil {
		return
	}
	c.mu.Lock()
	submitted := c.seq > 1
	c.mu.Unlock()
	if submitted {
		hw := d.hardware()
		hw.resetMu.Lock()
		hw.halt()
		hw.abortCS(f)
		hw.restart()
		hw.resetMu.Unlock()
		hw.stopTDR()
	}
	c.releaseSyncState() // interrupt.go: before the CQ buffers go
	c.cbFini()
}
