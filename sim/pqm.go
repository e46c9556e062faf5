package sim

import (
	"encoding/binary"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gaudi-go/gaudi/packet"
	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
	"golang.org/x/sys/unix"
)

// Gaudi3 user DMA: the PDMA channels' queue managers (PQM). Command
// submission has no user queue on Gaudi3; the user maps a channel's CH_A
// register block (MEMORY MAP_BLOCK, then mmap of the handle), points the
// channel's message queue (MSQ) at host memory mapped to the device,
// writes PQM packets into that ring and advances MSQ_PI; the channel
// fetches and executes the packets and advances MSQ_CI. The register map
// and the user flow are in package uapi/gaudi3 (pqm_regs.go), from
// Habana's Gaudi3 tests and register specifications.
//
// The simulator keeps the registers of the 24 channels in one memfd, one
// 4 KiB page per channel: a user mapping of a block is a MAP_SHARED view
// of that channel's page, and the device has its own view. Writes to a
// mapping cannot trap, so each channel whose block was mapped runs a
// goroutine that watches its registers: it spins briefly after activity,
// then sleeps ever longer (up to pqmMaxSleep, or pqmIdleSleep after a long
// idle spell), and WAIT_CS interrupt waits wake it at once. What it sees:
//
//   - DESC_SUBMIT_FIFO_CFG written (the simulator marks the value it has
//     seen with the reserved bit 31, so that a write of the same value is
//     seen again; the fields read back as written): the channel resets, as
//     the tests' comment says the write does: MSQ_CI and the channel's
//     consumed count go to 0, MSQ_PI too unless the user has already
//     written a new one, and a halted channel runs again. MODE 1 ("PI/CI in
//     memory") enables the ring; any other mode leaves the channel idle.
//   - MSQ_PI ahead of MSQ_CI: the channel fetches the bytes between them
//     from the ring at MSQ_BASE_H:MSQ_BASE_L (a device virtual address,
//     through the context's device MMU like every engine access; the ring
//     is MSQ_SIZE+1 bytes, a power of two, the position the counter modulo
//     that size; a packet may wrap), executes them and advances MSQ_CI,
//     packet by packet. MSQ_PI and MSQ_CI are free-running 32-bit byte
//     counters. A pending count that is not a multiple of 8 or larger than
//     the ring, a ring size that is not a power of two or over 1 GiB and a
//     misaligned base are errors. A packet only partly covered by MSQ_PI
//     waits for the rest.
//   - Packets (gaudi3_pqm_packets.h): LIN_PDMA copies Size bytes from Src
//     to Dst, or with Memset fills Dst with the 64-bit pattern in Src
//     (byte k gets byte k%8; the direction bit is not needed to reach the
//     addresses); with Fence it first waits on the fence counter like
//     FENCE; with WriteCompletion it then writes CompletionData (32 bits)
//     to CompletionAddr; with AdvanceCompletionQueue (advcnt_hbw_complq)
//     it then advances the channel's completion queue (below). A LIN_PDMA
//     of 0 bytes moves nothing and completes all the same (Habana's
//     runtime tests use one as a barrier). Without en_desc_commit it
//     moves nothing and writes no completion. MSG_LONG writes its value (or a timestamp) to
//     its address, MSG_SHORT to the CP_MSG_BASE_ADDR register Base of the
//     channel's group plus Offset: PQM messages reach the LBW
//     (configuration) space only (the tests' comment: "PQM msgs can't do
//     HBW writes"), so a message to memory is a RAZWI and is dropped.
//     FENCE waits for fence counter ID (FENCE_CNT_n) to reach Target and
//     takes Dec; WAIT adds Inc to counter ID; FENCE_INC_n writes add to
//     counter n (the user's stores too: the channel takes them and the
//     register reads 0 again). CH_WREG_32 and CH_WREG_BULK write the channel's own CH_A
//     registers (CH_B is not simulated: accepted, no effect). NOP, WREG_32,
//     WREG_BULK and the WREG_64 and CH_WREG_64 packets have no effect.
//     STOP halts the channel with the cp_stop_op error.
//   - The completion queue (ECMPLTN_Q_* at 0x400 of the block, as Habana's
//     runtime programs it in direct mode): while ECMPLTN_Q_CH_CFG has
//     ENABLE, each advance adds 1 to ECMPLTN_Q_BASE_PI and writes that
//     count, as a 64-bit little-endian value, to ECMPLTN_Q_BASE_HI:LO (a
//     device virtual address, through the device MMU: unmapped, it is a
//     page fault), then, with LBW_WR_EN, sends ECMPLTN_Q_LBW_PAYLD to
//     ECMPLTN_Q_LBW_ADDR_H:L as an LBW write (the MSI-X doorbell raises
//     the interrupt): the counter is written before the interrupt. The
//     queue is the one 64-bit counter SCAL programs (ECMPLTN_Q_BASE_SIZE
//     8); another size, or a misaligned base, is an error. Whether the
//     hardware writes its count or increments the memory in place is not
//     documented: the two agree when software seeds the counter with
//     ECMPLTN_Q_BASE_PI, as package pqm does. COMPLTN_MODE and
//     ECMPLTN_Q_BASE_FREQ (which SCAL leaves) are not modelled; without
//     ENABLE an advance does nothing. Neither DESC_SUBMIT_FIFO_CFG nor
//     anything but a reset clears these registers.
//   - LBW writes (completion writes and messages): the PCIe MSI-X doorbell
//     (D0_PCIE_MSIX_BASE, the address the tests' completion queues write
//     the interrupt id to) raises that user interrupt (interrupt.go), which
//     WAIT_CS's interrupt mode waits for; a channel's CH_A registers
//     (FENCE_INC_n adds, others store); a group's CP_MSG_BASE_ADDR_0..15
//     (in its PQM_CMN_B block); the sync managers' registers (sm3.go:
//     sync objects, monitors, completion queues); CH_B registers are
//     accepted without effect; any other LBW address is a RAZWI. Other addresses are
//     memory.
//   - Errors halt the channel until DESC_SUBMIT_FIFO_CFG is written again,
//     as the PQM's error causes (gaudi3_pdma_pqm_sei_err_cause:
//     cp_undef_cmd_err, cp_stop_op, ...) stop it: an undefined or
//     undecodable packet is recorded as an undefined opcode
//     (INFO UNDEFINED_OPCODE_EVENT, engine id GAUDI3_DIE0_ENGINE_ID_PDMA_0_CH_0
//     + channel); an address no mapping covers as a page fault
//     (INFO PAGE_FAULT_INFO, and a strict-mode violation). Channel errors
//     are counted (Device.PQMErrors); the simulator never panics.
//   - A PQM error (an undefined packet, STOP, a bad ring or completion
//     queue) raises the PDMA SEI event, which the driver answers as
//     hl_device_cond_reset does (seiError): the engine error is captured
//     (INFO USER_ENGINE_ERR_EVENT), DEVICE_RESET and USER_ENGINE_ERR are
//     notified, and the device is reset: at once without a registered
//     eventfd (a hard reset, which kills the compute file's holder:
//     watchdog.go), else once the compute file is released or the
//     release watchdog fires, WAIT_CS answering EBUSY meanwhile and the
//     pending interrupt waits ending with EIO. A page fault is the
//     PMMU's event, which resets nothing: the channel stays halted.
//
// A hard reset (Device.Reset) stops the channels and clears their
// registers; so does the release of the compute context that mapped them.
// A channel a reset stopped runs again once the reset is over, for the
// file that ran it (it finds its registers cleared, and takes the owner's
// new setup as the hardware does); one its file's release stopped starts
// again when its block is mapped again.
//
// The hardware takes a register write when it is made; a channel's
// goroutine takes it at its next look. So that the order still holds: a
// write of DESC_SUBMIT_FIFO_CFG is taken before an MSQ_PI read after it
// (step reads the mode again after MSQ_PI) and ends a drain or a FENCE
// under way, and a mapping of the block (MAP_BLOCK served, or the mmap)
// returns once the goroutine took every write made before it (sync): a
// new owner's writes never mix with the previous owner's last ones.

// pqmMaxSleep and pqmIdleSleep bound a channel goroutine's sleep between
// two looks at MSQ_PI: the former while the channel was busy in the last
// pqmIdleAfter, the latter after.
const (
	pqmSpins     = 200
	pqmMinSleep  = time.Microsecond
	pqmMaxSleep  = time.Millisecond
	pqmIdleSleep = 5 * time.Millisecond
	pqmIdleAfter = time.Second
)

// pqmCfgSeen marks a DESC_SUBMIT_FIFO_CFG value the channel has taken
// (a reserved bit: the register's fields are MODE 1:0 and WRITE_MODE 2).
const pqmCfgSeen = 1 << 31

// pqmPage is the bytes of one channel's register page.
const pqmPage = g3.PDMA_CH_A_BLOCK_SIZE

// gaudi3MSIXDoorbell is D0_PCIE_MSIX_BASE, where a write of a user
// interrupt's vector raises it (die 1's doorbell does the same).
const gaudi3MSIXDoorbell = g3.D0_PCIE_MSIX_BASE

// pqmState is a Gaudi3 device's PDMA channels.
type pqmState struct {
	hw *hwState

	mu    sync.Mutex
	fd    int    // the register file, -1 until first use
	off   int64  // where channel 0's page is in it
	regs  []byte // the device's view: NUM_OF_PDMA_CH pages
	chans [g3.NUM_OF_PDMA_CH]*pqmChan
	// bound is the served file (OpenFor) whose memory file holds the
	// registers, at the block handles' offsets, or nil when fd is the
	// simulator's own memfd.
	bound *File

	// cpMsgBase are the groups' CP_MSG_BASE_ADDR_0..15 registers (in
	// PQM_CMN_B, which users reach only through packets).
	cpMsgBase [g3.NUM_OF_PDMA_GRP][16]atomic.Uint32

	errors atomic.Uint64 // channel errors since the device was made
}

// pqmChan is one PDMA channel's queue manager.
type pqmChan struct {
	id  int
	st  *pqmState
	win []byte   // the channel's register page (device view)
	q   *hwQueue // its halt flag, fence counters and execution environment

	kick chan struct{} // wakes the goroutine early; buffered

	// Owned by the goroutine while it runs, kept from one goroutine to
	// the next (a mapping made again) until the registers are cleared.
	f       *File
	running bool          // a goroutine serves the channel (st.mu)
	done    chan struct{} // closed when the goroutine ends
	ci      uint32        // bytes consumed since the last reset
	lastPI  uint32        // the MSQ_PI the channel last read
	halted  bool          // an error stopped the channel
	// stopping asks the goroutine to end (stopFile). It is the channel's
	// own: the queue's halt flag belongs to device resets, and clearing it
	// beside a reset let a channel start that the reset then waited for
	// forever.
	stopping atomic.Bool
	// resume is the file whose goroutine a device reset ended (st.mu):
	// the channel runs again for it once the reset is over, as a
	// channel of the hardware runs again once its owner programs it.
	resume *File
	// abandoned is the served file whose address space went away while
	// the channel ran for it (st.mu): the channel stays halted, its
	// registers as they were, until that file's release clears them
	// (orphan.go).
	abandoned *File
	ring      []byte // fetch buffer
	lastBusy  time.Time

	// A new mapping of the channel's block waits (sync) until the
	// goroutine took every register write made before it: syncReq counts
	// the requests, syncAck the last one a step answered, and exited
	// tells a waiter no goroutine runs (syncMu; set with st.mu held too).
	syncMu   sync.Mutex
	syncCond *sync.Cond
	syncReq  atomic.Uint64
	syncAck  uint64
	exited   bool
}

// pqm returns the device's PDMA channels, nil unless it is a Gaudi3.
func (hw *hwState) pqm() *pqmState { return hw.pqmState }

// newPQM makes a Gaudi3's PDMA channels, while newHW builds the hardware:
// each channel has a queue of hw.queues (past the command submission
// queues) so that a reset halts it with the streams.
func newPQM(hw *hwState) *pqmState {
	st := &pqmState{hw: hw, fd: -1}
	for i := range st.chans {
		q := &hwQueue{id: len(hw.queues), hw: hw, engine: -1,
			props: &queueProps{engine: uint32(g3.PDMAChannelEngine(i))}}
		q.cond = sync.NewCond(&q.mu)
		q.x = execEnv{hw: hw, q: q}
		hw.queues = append(hw.queues, q)
		c := &pqmChan{id: i, st: st, q: q, kick: make(chan struct{}, 1)}
		c.syncCond = sync.NewCond(&c.syncMu)
		c.exited = true // no goroutine yet
		st.chans[i] = c
	}
	return st
}

// close releases the register memfd (System.Close).
func (st *pqmState) close() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.dropRegsLocked()
}

// dropRegsLocked unmaps the device's view of the registers and closes the
// register memfd if it is the simulator's own.
func (st *pqmState) dropRegsLocked() {
	if st.regs == nil {
		return
	}
	unix.Munmap(st.regs)
	if st.bound == nil {
		unix.Close(st.fd)
	}
	st.regs, st.fd, st.off, st.bound = nil, -1, 0, nil
	for _, c := range st.chans {
		c.win = nil
	}
}

// pqmFileBase is where a served file's memory file holds the registers of
// channel 0: the mmap offset of block handle 0, channel ch's page following
// at ch pages (mapBlock's handles are (ch | HL_MMAP_TYPE_BLOCK) << PAGE_SHIFT).
const pqmFileBase = mmapTypeBlock << 12

// bindLocked makes the registers live in served file f's memory file at
// the block handles' offsets, where its client maps them through the
// served node (the node's mmap maps the memory file itself, and the server
// never sees it). The registers' values move along. No channel of another
// file may be running.
func (st *pqmState) bindLocked(f *File) error {
	if st.bound == f && st.regs != nil {
		return nil
	}
	for _, c := range st.chans {
		if c.running {
			return unix.EBUSY
		}
	}
	fd := f.MmapFile()
	if fd < 0 {
		return unix.EINVAL
	}
	size := pqmPage * len(st.chans)
	regs, err := unix.Mmap(fd, pqmFileBase, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	if st.regs != nil {
		copy(regs, st.regs)
	}
	st.dropRegsLocked()
	st.fd, st.off, st.regs, st.bound = fd, pqmFileBase, regs, f
	for i, c := range st.chans {
		c.win = regs[i*pqmPage : (i+1)*pqmPage : (i+1)*pqmPage]
	}
	return nil
}

// serveChannel is MAP_BLOCK of channel ch by served file f: the channel's
// registers are the bytes its client maps at the block handle, and the
// channel's goroutine starts now, since the client's mmap does not reach
// the simulator.
func (st *pqmState) serveChannel(f *File, ch int) error {
	st.mu.Lock()
	if err := st.bindLocked(f); err != nil {
		st.mu.Unlock()
		return err
	}
	st.startLocked(f, ch)
	st.mu.Unlock()
	st.chans[ch].sync()
	return nil
}

// ensure creates the register memfd and the device's view of it.
func (st *pqmState) ensureLocked() error {
	if st.regs != nil {
		return nil
	}
	fd, err := unix.MemfdCreate("gaudi-sim-pdma-regs", unix.MFD_CLOEXEC)
	if err != nil {
		return err
	}
	size := int(pqmPage * len(st.chans))
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return err
	}
	regs, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return err
	}
	st.fd, st.regs = fd, regs
	for i, c := range st.chans {
		c.win = regs[i*pqmPage : (i+1)*pqmPage : (i+1)*pqmPage]
	}
	return nil
}

// mapChannel maps channel ch's register page for file f (the mmap of its
// block) and starts the channel's goroutine if none runs.
func (st *pqmState) mapChannel(f *File, ch int, length, prot, flags int) ([]byte, error) {
	mem, err := st.mapChannelLocked(f, ch, length, prot, flags)
	if err != nil {
		return nil, err
	}
	st.chans[ch].sync()
	return mem, nil
}

func (st *pqmState) mapChannelLocked(f *File, ch int, length, prot, flags int) ([]byte, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := st.ensureLocked(); err != nil {
		return nil, err
	}
	if f.rem != nil {
		if err := st.bindLocked(f); err != nil {
			return nil, err
		}
	}
	mem, err := mmapBlock(st.fd, st.off+int64(ch*pqmPage), length, prot, flags)
	if err != nil {
		return nil, err
	}
	st.startLocked(f, ch)
	return mem, nil
}

// sync waits until the channel's goroutine, if one runs, took every write
// to its registers made before the call: the hardware takes a register
// write when it is made, the simulator when its goroutine next looks. A
// new owner maps the block before it writes, so at the mapping only the
// previous owner's writes can be pending, and taking them now keeps them
// apart from the new owner's. Without this, a mode write of Pool.Close
// taken after the next owner's setup and first doorbell found MSQ_PI at
// the value the channel last read (the same job size) and took it for the
// old one, losing the job (resetChannel). A channel that waits on a FENCE
// takes a mode write at once (fenceWait), so the wait is short.
func (c *pqmChan) sync() {
	n := c.syncReq.Add(1)
	c.wake()
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	for c.syncAck < n && !c.exited {
		c.syncCond.Wait()
	}
}

// acked answers the sync requests made before req was read, once a step
// after that read is over. The goroutine calls it.
func (c *pqmChan) acked(req uint64, exited bool) {
	c.syncMu.Lock()
	if req > c.syncAck {
		c.syncAck = req
	}
	c.exited = exited
	c.syncMu.Unlock()
	c.syncCond.Broadcast()
}

// startLocked starts channel ch's goroutine for file f if none runs.
// st.mu must be held.
func (st *pqmState) startLocked(f *File, ch int) {
	c := st.chans[ch]
	if c.running || f.isOrphan() {
		return // an orphan's channels never start again (orphan.go)
	}
	hw := st.hw
	hw.mu.Lock()
	if c.q.halted.Load() {
		// A reset is under way: the channel stays stopped.
		hw.mu.Unlock()
		return
	}
	hw.workers++
	hw.mu.Unlock()
	c.running, c.f, c.done = true, f, make(chan struct{})
	c.syncMu.Lock()
	c.exited = false
	c.syncMu.Unlock()
	go c.run(f, c.done)
}

// stopFile stops the channels file f runs (every running channel when f
// is nil) and clears their registers, as the release of its context does.
func (st *pqmState) stopFile(f *File) {
	st.mu.Lock()
	var (
		stop []*pqmChan
		done []chan struct{}
	)
	for _, c := range st.chans {
		if c.running && (c.f == f || f == nil) {
			stop, done = append(stop, c), append(done, c.done)
			// Under st.mu: a goroutine a reset ends from here on leaves
			// no resume, and pqmResume starts none on the channel.
			c.stopping.Store(true)
		}
		if c.resume == f || f == nil {
			c.resume = nil // a reset under way does not start it again
		}
		if !c.running && c.abandoned != nil && (c.abandoned == f || f == nil) {
			// Stopped by its file's orphan: no goroutine, the
			// registers to clear.
			stop, done = append(stop, c), append(done, c.done)
			c.stopping.Store(true)
			c.abandoned = nil
		}
	}
	st.mu.Unlock()
	for _, c := range stop {
		c.wake()
	}
	for i, c := range stop {
		<-done[i]
		c.q.mu.Lock()
		c.q.fence = [4]uint32{}
		c.q.mu.Unlock()
	}
	// Cleared before the channels may start again: a goroutine started
	// by a new mapping owns the state clearRegs resets.
	st.clearRegs(stop)
	for _, c := range stop {
		c.stopping.Store(false)
	}
	if f != nil {
		st.mu.Lock()
		if st.bound == f {
			// The served file's memory file goes with it: the next
			// user gets registers of the simulator's own, all zero.
			st.dropRegsLocked()
		}
		st.mu.Unlock()
	}
}

// clearRegs zeroes the registers of chans (all channels when nil).
func (st *pqmState) clearRegs(chans []*pqmChan) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.regs == nil {
		return
	}
	if chans == nil {
		chans = st.chans[:]
		for g := range st.cpMsgBase {
			for i := range st.cpMsgBase[g] {
				st.cpMsgBase[g][i].Store(0)
			}
		}
	}
	for _, c := range chans {
		for off := uint64(0); off < pqmPage; off += 4 {
			reg32(c.win, off).Store(0)
		}
		// The channel's goroutine has ended: its state goes with the
		// registers.
		c.ci, c.lastPI, c.halted = 0, 0, false
	}
}

// busyChannels returns the channels (bit ch for channel ch) whose ring
// holds packets the channel has not consumed: MSQ_PI != MSQ_CI, so it is
// executing them or waiting (a FENCE), or halted on an error before them.
// INFO ENGINE_STATUS and HW_IDLE show these channels busy.
func (st *pqmState) busyChannels() uint32 {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.regs == nil {
		return 0
	}
	var m uint32
	for i, c := range st.chans {
		if c.reg(g3.PDMA_CH_A_PQM_CH_MSQ_PI).Load() != c.reg(g3.PDMA_CH_A_PQM_CH_MSQ_CI).Load() {
			m |= 1 << i
		}
	}
	return m
}

// kickAll wakes every running channel goroutine: something (an interrupt
// wait) suggests the user just rang a doorbell.
func (st *pqmState) kickAll() {
	for _, c := range st.chans {
		c.wake()
	}
}

// stopped reports whether the channel's goroutine must end: a reset
// halts the engines, or stopFile stops the channel.
func (c *pqmChan) stopped() bool { return c.q.halted.Load() || c.stopping.Load() }

func (c *pqmChan) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// reg returns the channel's register at offset off.
func (c *pqmChan) reg(off uint64) *atomic.Uint32 { return reg32(c.win, off) }

// run is the channel's goroutine.
func (c *pqmChan) run(f *File, done chan struct{}) {
	hw := c.st.hw
	defer func() {
		c.st.mu.Lock()
		c.running, c.f = false, nil
		switch {
		case f.isOrphan() && !c.stopping.Load():
			// Its address space is gone: halted where it is (orphan.go).
			c.halted, c.abandoned = true, f
		case c.q.halted.Load() && !c.stopping.Load():
			c.resume = f
		}
		c.acked(0, true) // before a new goroutine may start (st.mu)
		c.st.mu.Unlock()
		hw.mu.Lock()
		hw.workers--
		if hw.workers == 0 {
			hw.idle.Broadcast()
		}
		hw.mu.Unlock()
		close(done)
	}()
	x := &c.q.x
	x.c, x.ctx = f.subm(), f.ctx
	defer func() { x.c, x.ctx = nil, nil }()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	c.lastBusy = time.Now()
	idle := 0
	var sleep time.Duration
	for !c.stopped() && !f.isOrphan() {
		req := c.syncReq.Load()
		busy := c.step()
		if req != 0 {
			c.acked(req, false)
		}
		if busy {
			idle, sleep = 0, 0
			c.lastBusy = time.Now()
			continue
		}
		idle++
		if idle < pqmSpins {
			runtime.Gosched()
			continue
		}
		limit := pqmMaxSleep
		if time.Since(c.lastBusy) > pqmIdleAfter {
			limit = pqmIdleSleep
		}
		sleep = min(max(2*sleep, pqmMinSleep), limit)
		timer.Reset(sleep)
		select {
		case <-c.kick:
			idle, sleep = 0, 0
		case <-timer.C:
		}
	}
}

// step looks at the registers once and does what they ask; it reports
// whether it did anything.
func (c *pqmChan) step() bool {
	cfg := c.reg(g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG)
	v := cfg.Load()
	if v != 0 && v&pqmCfgSeen == 0 {
		c.resetChannel(v)
		cfg.CompareAndSwap(v, v|pqmCfgSeen)
		return true
	}
	c.userFenceInc()
	if c.halted || v&g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG_MODE_MASK != g3.PQM_DESC_SUBMIT_MODE_PI_CI_IN_MEM {
		return false
	}
	pi := c.reg(g3.PDMA_CH_A_PQM_CH_MSQ_PI).Load()
	if cfg.Load() != v {
		// A mode write came between the two loads: pi may be the new
		// owner's, for the ring the write resets. Take the write first.
		return true
	}
	c.lastPI = pi
	if pi == c.ci {
		return false
	}
	return c.drain(pi)
}

// modeWritten reports a write of DESC_SUBMIT_FIFO_CFG the channel has not
// taken yet.
func (c *pqmChan) modeWritten() bool {
	v := c.reg(g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG).Load()
	return v != 0 && v&pqmCfgSeen == 0
}

// resetChannel is the write of DESC_SUBMIT_FIFO_CFG (value v): the ring
// counters restart.
func (c *pqmChan) resetChannel(v uint32) {
	// An MSQ_PI still at the value the channel last read is the old one:
	// it goes to 0 as on the hardware. One that moved since was written
	// after the reset and stays. A new owner's doorbell equal to the old
	// value cannot be met here: a mapping of the block waits until the
	// previous owner's writes were taken (sync), and the mode is read
	// again after MSQ_PI (step).
	c.reg(g3.PDMA_CH_A_PQM_CH_MSQ_PI).CompareAndSwap(c.lastPI, 0)
	c.ci, c.lastPI = 0, 0
	c.reg(g3.PDMA_CH_A_PQM_CH_MSQ_CI).Store(0)
	c.halted = false
}

// pqm channel errors.
var (
	errPQMStop    = errors.New("cp_stop_op: STOP packet")
	errPQMRing    = errors.New("bad MSQ configuration or producer index")
	errPQMPartial = errors.New("packet not yet covered by MSQ_PI")
	errPQMCQ      = errors.New("completion queue not a 64-bit counter at an aligned address")
)

// drain executes the packets between the consumed count and pi.
func (c *pqmChan) drain(pi uint32) bool {
	size := uint64(c.reg(g3.PDMA_CH_A_PQM_CH_MSQ_SIZE).Load()&g3.PDMA_CH_A_PQM_CH_MSQ_SIZE_VAL_MASK) + 1
	base := uint64(c.reg(g3.PDMA_CH_A_PQM_CH_MSQ_BASE_H).Load())<<32 | uint64(c.reg(g3.PDMA_CH_A_PQM_CH_MSQ_BASE_L).Load())
	pending := pi - c.ci
	if !isPow2(size) || base%g3.PQM_MSQ_ALIGN != 0 || pending%g3.PQM_MSQ_ALIGN != 0 || uint64(pending) > size {
		c.fail(errPQMRing, 0)
		return true
	}
	if c.f.gone() {
		// A doorbell after the address space went away: the packets
		// are not run (orphan.go).
		c.fail(errAddressSpaceGone, 0)
		return true
	}
	progress := false
	for c.ci != pi {
		if c.stopped() || c.modeWritten() {
			return true // a mode write resets the ring: step takes it next
		}
		n, err := c.execAt(base, size, pi-c.ci)
		if err == errPQMPartial {
			return progress
		}
		if err != nil {
			if err != errHalted {
				c.fail(err, base+uint64(c.ci)%size)
			}
			return true
		}
		c.ci += uint32(n)
		c.reg(g3.PDMA_CH_A_PQM_CH_MSQ_CI).Store(c.ci)
		progress = true
	}
	return true
}

// fetch reads n bytes of the ring at ring offset off (wrapping) into the
// channel's buffer.
func (c *pqmChan) fetch(base, size, off, n uint64) ([]byte, error) {
	if uint64(cap(c.ring)) < n {
		c.ring = make([]byte, max(n, 64))
	}
	b := c.ring[:n]
	x := &c.q.x
	off %= size
	first := min(n, size-off)
	if err := x.load(base+off, b[:first]); err != nil {
		return nil, err
	}
	if first < n {
		if err := x.load(base, b[first:]); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// execAt executes the packet at the consumed count, with avail bytes
// covered by MSQ_PI, and returns its length.
func (c *pqmChan) execAt(base, size uint64, avail uint32) (uint64, error) {
	hdr, err := c.fetch(base, size, uint64(c.ci), 8)
	if err != nil {
		return 0, err
	}
	n, ok := pqmPacketLen(hdr)
	if !ok || c.st.hw.d.badPacket("PQM") { // Fault.BadPacket: opcode 31
		return 0, &undefinedOpcode{addr: base + uint64(c.ci)%size, left: avail}
	}
	if n > uint64(avail) {
		return 0, errPQMPartial
	}
	b, err := c.fetch(base, size, uint64(c.ci), n)
	if err != nil {
		return 0, err
	}
	if err := c.exec(b); err != nil {
		if errors.Is(err, errUndecodable) {
			return 0, &undefinedOpcode{addr: base + uint64(c.ci)%size, left: avail}
		}
		return 0, err
	}
	return n, nil
}

// pqmPacketLen returns the length of the PQM packet whose first 8 bytes
// are hdr, or false for an opcode the PQM does not execute or a LIN_PDMA
// whose length the specifications do not settle.
func pqmPacketLen(hdr []byte) (uint64, bool) {
	w0 := binary.LittleEndian.Uint32(hdr)
	ctl := binary.LittleEndian.Uint32(hdr[4:])
	op := packet.Opcode(ctl >> 24 & 0x1f)
	if !packet.Gaudi3PQM.Has(op) {
		return 0, false
	}
	switch op {
	case packet.OpLinPDMA:
		n := packet.LinPDMALen(ctl)
		return uint64(n), n != 0
	case packet.OpWRegBulk, packet.OpChWRegBulk:
		return 8 + 8*uint64(w0&0xffff), true
	case packet.OpMsgLong, packet.OpWReg64Long, packet.OpChWReg64Long:
		return 16, true
	}
	return 8, true
}

// errUndecodable is a packet of a known opcode the decoder refuses.
var errUndecodable = errors.New("undecodable packet")

// exec executes one packet.
func (c *pqmChan) exec(b []byte) error {
	x := &c.q.x
	if packetOpcode(b) == packet.OpLinPDMA {
		p, _, err := packet.Gaudi3PQM.DecodeLinPDMA(b)
		switch {
		case err == nil:
		case !errors.Is(err, packet.ErrReservedBits):
			return errUndecodable
		case !packet.LinPDMACommitted(binary.LittleEndian.Uint32(b[4:])):
			return nil // never started: no transfer, no completion
		}
		return c.linPDMA(p)
	}
	p, _, err := packet.Gaudi3PQM.Decode(b)
	if err != nil && !errors.Is(err, packet.ErrReservedBits) {
		return errUndecodable
	}
	switch p := p.(type) {
	case packet.MsgLong:
		val := p.Value
		if p.Op == packet.MsgWriteTimestamp {
			val = uint32(monotonicNow())
		}
		return c.msg(p.Addr, val)
	case packet.MsgShort:
		val := p.Value
		if p.Op == packet.MsgWriteTimestamp {
			val = uint32(monotonicNow())
		}
		g := c.id / g3.NUM_OF_PDMA_CH_PER_GRP
		lo := c.st.cpMsgBase[g][2*int(p.Base)].Load()
		hi := c.st.cpMsgBase[g][2*int(p.Base)+1].Load()
		base := uint64(hi)<<32 | uint64(lo)
		if base == 0 {
			x.razwi(uint64(p.Offset))
			return nil
		}
		return c.msg(base+uint64(p.Offset), val)
	case packet.Gaudi3Fence:
		return c.fenceWait(p.ID, uint32(p.Target), uint32(p.Dec))
	case packet.Wait:
		c.fenceAdd(p.ID, uint32(p.Inc))
	case packet.Stop:
		return errPQMStop
	case packet.ChWReg32:
		// reg_offset is a byte offset in the 4 KiB block (12 bits).
		if !p.BlockB {
			return c.st.write32(x, g3.PDMAChannelBlock(c.id)+uint64(p.Offset), p.Value)
		}
	case packet.ChWRegBulk:
		if !p.BlockB {
			for i, v := range p.Values {
				for k, w := range [2]uint32{uint32(v), uint32(v >> 32)} {
					off := uint64(p.Offset) + uint64(2*i+k)*4
					if off >= pqmPage {
						break
					}
					if err := c.st.write32(x, g3.PDMAChannelBlock(c.id)+off, w); err != nil {
						return err
					}
				}
			}
		}
	}
	// NOP, WREG_32, WREG_BULK, WREG_64_*, CH_WREG_64_*, CH_ variants
	// aimed at CH_B: no effect here.
	return nil
}

// msg is a MSG_LONG or MSG_SHORT write: LBW only.
func (c *pqmChan) msg(addr uint64, val uint32) error {
	x := &c.q.x
	if addr < x.hw.cfgBase || addr-x.hw.cfgBase >= x.hw.cfgSize {
		x.razwi(addr)
		return nil
	}
	return c.st.write32(x, addr, val)
}

// linPDMA executes a LIN_PDMA.
func (c *pqmChan) linPDMA(p packet.LinPDMA) error {
	x := &c.q.x
	if p.Fence {
		if err := c.fenceWait(p.FenceID, uint32(p.FenceTarget), uint32(p.FenceDec)); err != nil {
			return err
		}
	}
	var err error
	if p.Memset {
		err = x.fill(p.Dst, p.Src, uint64(p.Size), p.Endian)
	} else {
		err = x.copy(p.Dst, p.Src, uint64(p.Size), p.Endian)
	}
	if err != nil {
		return err
	}
	if p.WriteCompletion {
		if err := c.st.write32(x, p.CompletionAddr, p.CompletionData); err != nil {
			return err
		}
	}
	if p.AdvanceCompletionQueue {
		return c.advanceCQ()
	}
	return nil
}

// advanceCQ is the completion of a LIN_PDMA with advcnt_hbw_complq: the
// channel's completion queue counts it, writes the count to its counter
// in memory, then sends its LBW message (the interrupt).
func (c *pqmChan) advanceCQ() error {
	cfg := c.reg(g3.PDMA_CH_A_ECMPLTN_Q_CH_CFG).Load()
	if cfg&g3.PDMA_CH_A_ECMPLTN_Q_CH_CFG_ENABLE == 0 {
		return nil
	}
	base := uint64(c.reg(g3.PDMA_CH_A_ECMPLTN_Q_BASE_HI).Load())<<32 | uint64(c.reg(g3.PDMA_CH_A_ECMPLTN_Q_BASE_LO).Load())
	if c.reg(g3.PDMA_CH_A_ECMPLTN_Q_BASE_SIZE).Load() != g3.PQM_ECMPLTN_Q_COUNTER_SIZE || base%8 != 0 {
		return errPQMCQ
	}
	n := c.reg(g3.PDMA_CH_A_ECMPLTN_Q_BASE_PI).Add(1)
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(n))
	x := &c.q.x
	if err := x.store(base, b[:]); err != nil {
		return err
	}
	if cfg&g3.PDMA_CH_A_ECMPLTN_Q_CH_CFG_LBW_WR_EN == 0 {
		return nil
	}
	addr := uint64(c.reg(g3.PDMA_CH_A_ECMPLTN_Q_LBW_ADDR_H).Load())<<32 | uint64(c.reg(g3.PDMA_CH_A_ECMPLTN_Q_LBW_ADDR_L).Load())
	return c.msg(addr, c.reg(g3.PDMA_CH_A_ECMPLTN_Q_LBW_PAYLD).Load())
}

// fenceWait waits for fence counter id to reach target, then takes dec.
// The counters live in FENCE_CNT_n, which other channels' writes to
// FENCE_INC_n add to.
func (c *pqmChan) fenceWait(id uint8, target, dec uint32) error {
	r := c.reg(g3.PDMA_CH_A_PQM_CH_FENCE_CNT_0 + 4*uint64(id))
	sleep := time.Duration(0)
	for spins := 0; ; spins++ {
		c.userFenceInc()
		v := r.Load()
		if v&g3.PDMA_CH_A_PQM_CH_FENCE_CNT_VAL_MASK >= target {
			if spins > 0 && c.f.gone() {
				// Released after a stall that outlived the address
				// space: what follows is not run (orphan.go).
				return errAddressSpaceGone
			}
			if r.CompareAndSwap(v, (v-dec)&g3.PDMA_CH_A_PQM_CH_FENCE_CNT_VAL_MASK) {
				return nil
			}
			continue
		}
		if c.stopped() || c.modeWritten() || c.f.isOrphan() {
			// A mode write resets the ring: the queued packets, this
			// FENCE with them, are gone (step takes the write next).
			return errHalted
		}
		if spins < pqmSpins {
			runtime.Gosched()
			continue
		}
		sleep = min(max(2*sleep, pqmMinSleep), pqmMaxSleep)
		time.Sleep(sleep)
	}
}

// userFenceInc takes the user's stores to FENCE_INC_n through a mapping
// (which cannot trap): a non-zero value is added to counter n and the
// register reads 0 again, a write-only increment.
func (c *pqmChan) userFenceInc() {
	for id := range g3.PDMA_CH_A_PQM_CH_FENCES {
		if v := c.reg(g3.PDMA_CH_A_PQM_CH_FENCE_INC_0 + 4*uint64(id)).Swap(0); v != 0 {
			c.fenceAdd(uint8(id), v&g3.PDMA_CH_A_PQM_CH_FENCE_INC_VAL_MASK)
		}
	}
}

// fenceAdd adds v to fence counter id.
func (c *pqmChan) fenceAdd(id uint8, v uint32) {
	r := c.reg(g3.PDMA_CH_A_PQM_CH_FENCE_CNT_0 + 4*uint64(id))
	for {
		old := r.Load()
		if r.CompareAndSwap(old, (old+v)&g3.PDMA_CH_A_PQM_CH_FENCE_CNT_VAL_MASK) {
			return
		}
	}
}

// write32 is a 32-bit write by a PDMA channel: an LBW register or memory.
func (st *pqmState) write32(x *execEnv, addr uint64, val uint32) error {
	hw := st.hw
	if addr < hw.cfgBase || addr-hw.cfgBase >= hw.cfgSize {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], val)
		return x.store(addr, b[:])
	}
	switch {
	case addr == g3.D0_PCIE_MSIX_BASE || addr == g3.D1_PCIE_MSIX_BASE:
		hw.sm.raise(val)
		return nil
	}
	if blk, _ := hw.sm.block(addr); blk != nil {
		if addr%4 != 0 {
			x.razwi(addr)
			return nil
		}
		x.smWrite(addr, val)
		return nil
	}
	if ch, ok := g3.PDMAChannelOfBlock(addr); ok {
		off := addr - g3.PDMAChannelBlock(ch)
		if off%4 != 0 {
			x.razwi(addr)
			return nil
		}
		t := st.chans[ch]
		st.mu.Lock()
		ready := st.regs != nil
		st.mu.Unlock()
		if !ready {
			return nil // never mapped: the registers are all zero
		}
		if rel := off - g3.PDMA_CH_A_PQM_CH_FENCE_INC_0; off >= g3.PDMA_CH_A_PQM_CH_FENCE_INC_0 && rel < 4*g3.PDMA_CH_A_PQM_CH_FENCES {
			t.fenceAdd(uint8(rel/4), val&g3.PDMA_CH_A_PQM_CH_FENCE_INC_VAL_MASK)
			return nil
		}
		t.reg(off).Store(val)
		t.wake()
		return nil
	}
	for g, base := range g3.PDMAGroupBases {
		cmn := base + g3.PDMA_CMN_B_OFFSET
		if rel := addr - (cmn + pqmCmnBCPMsgBase0); addr >= cmn+pqmCmnBCPMsgBase0 && rel < 16*4 && rel%4 == 0 {
			st.cpMsgBase[g][rel/4].Store(val)
			return nil
		}
		if addr >= base+g3.PDMA_CH_B_OFFSET && addr < base+g3.PDMA_CMN_B_OFFSET+pqmPage {
			return nil // CH_B and the rest of CMN_B: not simulated
		}
	}
	x.razwi(addr)
	return nil
}

// pqmCmnBCPMsgBase0 is CP_MSG_BASE_ADDR_0 in a PQM_CMN_B block
// (pdma_cmn_b_pqm_cmn_b_regs.h: 0x100, 16 registers).
const pqmCmnBCPMsgBase0 = 0x100

// fail halts the channel on err, recording it as the device's error
// capture would. The error count moves last, so that whoever sees it
// (PQMErrors) also sees the records and the strict mode violation.
func (c *pqmChan) fail(err error, at uint64) {
	c.halted = true
	if err == errAddressSpaceGone {
		return // not the channel's error: its file's work is aborted (orphan.go)
	}
	st := c.st
	defer st.errors.Add(1)
	d := st.hw.d
	x := &c.q.x
	var pf *pageFault
	var uo *undefinedOpcode
	switch {
	case errors.As(err, &pf):
		d.RecordPageFault(pf.addr, x.c.userMappings(st.hw.isHostVA(pf.addr))...)
		if d.strict.on {
			d.violate(x.c.f.serial, Violation{Kind: ViolationPageFault, Op: "PQM", Addr: pf.addr,
				Detail: "PDMA channel " + strconv.Itoa(c.id) + " reached an address no mapping covers"})
		}
	case errors.As(err, &uo):
		d.RecordUndefinedOpcode(c.q.props.engine, uo.addr, uo.left)
		st.seiError(c)
	case err == errPQMStop, err == errPQMRing, err == errPQMCQ:
		d.RecordUndefinedOpcode(c.q.props.engine, at, 0)
		st.seiError(c)
	}
}

// seiError is what the driver does with the PDMA SEI event a channel
// error raises (out-of-tree gaudi3.c: gaudi3_handle_pdma_sei_err decodes
// the channel's PQM error cause; gaudi3_set_initial_reset_flags_and_event_mask
// gives a PDMA component USER_ENGINE_ERR, DEVICE_RESET and a compute reset
// with HL_DRV_RESET_DELAY; gaudi3_capture_engine_err records the engine
// error; gaudi3_notifier_events_and_device_reset, with
// hard_reset_on_fw_events set as habanalabs_drv.c sets it, calls
// hl_device_cond_reset). So the engine error is captured, and the device
// is reset as hl_device_cond_reset does (condReset: postponed behind the
// release watchdog when the compute file registered an eventfd, else a
// hard reset at once, hl_device_reset escalating the compute reset as
// allow_inference_soft_reset is false, which kills the holder). It runs
// on its own goroutine: the reset waits for the channel's goroutine,
// which calls this.
func (st *pqmState) seiError(c *pqmChan) {
	d := st.hw.d
	d.RecordEngineError(uint16(c.q.props.engine), 1)
	go d.condReset(0)
}

// PQMErrors returns how many times a Gaudi3 PDMA channel stopped on an
// error (a bad packet or ring, a page fault, a STOP packet) since the
// device was made; 0 for other ASICs.
func (d *Device) PQMErrors() uint64 {
	if st := d.hardware().pqm(); st != nil {
		return st.errors.Load()
	}
	return 0
}

// pqmKick wakes the device's PDMA channels (a WAIT_CS interrupt wait).
func (d *Device) pqmKick() {
	if st := d.hardware().pqm(); st != nil {
		st.kickAll()
	}
}

// pqmStopFile stops the channels f runs, on the release of its context.
func (d *Device) pqmStopFile(f *File) {
	if st := d.hardware().pqm(); st != nil {
		st.stopFile(f)
		d.hardware().sm.unbind3(f)
	}
}

// pqmClose stops every channel and releases the registers (System.Close).
func (d *Device) pqmClose() {
	if d.prof.asic != Gaudi3 {
		return
	}
	st := d.hardware().pqm()
	st.stopFile(nil)
	st.close()
	d.hardware().sm.close3()
}

// pqmReset clears every channel's registers during a hard reset, while the
// engines are halted and no channel goroutine runs.
func (d *Device) pqmReset() {
	if st := d.hardware().pqm(); st != nil {
		st.clearRegs(nil)
	}
}

// pqmResume starts again, once a reset is over, the channels the reset
// stopped: the hardware's channel runs again once its owner has
// programmed it again (its goroutine finds the registers the reset
// cleared, and does nothing until they are written).
func (d *Device) pqmResume() {
	st := d.hardware().pqm()
	if st == nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for ch, c := range st.chans {
		if f := c.resume; f != nil {
			c.resume = nil
			if !c.stopping.Load() { // stopFile stops it and clears its state
				st.startLocked(f, ch)
			}
		}
	}
}

// pqmBlock returns the PDMA channel whose CH_A block holds addr, for
// MAP_BLOCK: only the channels pdma_user_owned_ch_mask gives the user.
func pqmBlock(addr uint64) (int, bool) {
	ch, ok := g3.PDMAChannelOfBlock(addr)
	if !ok || g3.DefaultHWIPInfo.PDMAUserOwnedChMask&(1<<ch) == 0 {
		return 0, false
	}
	return ch, true
}
