package pqm

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/packet"
	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Errors callers branch on.
var (
	// ErrNoChannel reports that no user-owned PDMA channel is free: the
	// driver gave users none, or other Pools of the process hold them all.
	ErrNoChannel = errors.New("no free user PDMA channel")
	// ErrJobFull reports a Job whose packets fill its buffer: submit it and
	// start another.
	ErrJobFull = errors.New("pqm job full")
)

// Device is what a Pool needs of the open compute device: the hardware
// block mapping (MEMORY MAP_BLOCK, then mmap of the handle), its unmapping,
// and WAIT_CS in interrupt mode on a value in user memory. *ioctl.Device
// serves it through IoctlDevice.
type Device interface {
	MapBlock(addr uint64) ([]byte, error)
	UnmapBlock(mem []byte) error
	WaitInterrupt(ctx context.Context, args *hl.WaitCSInterruptArgs) error
}

// IoctlDevice adapts an *ioctl.Device to Device.
type IoctlDevice struct{ IO *ioctl.Device }

// MapBlock issues MEMORY MAP_BLOCK for the block at addr and maps the
// handle it answers, read and write, as hlthunk_get_hw_block and mmap do.
func (d IoctlDevice) MapBlock(addr uint64) ([]byte, error) {
	var a hl.MemArgs
	a.In().Op = hl.HL_MEM_OP_MAP_BLOCK
	a.In().MapBlock().BlockAddr = addr
	if err := d.IO.Memory(&a); err != nil {
		return nil, fmt.Errorf("hw block %#x: %w", addr, err)
	}
	mem, err := d.IO.Mmap(int64(a.Out().BlockHandle()), int(a.Out().BlockSize()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map hw block %#x: %w", addr, err)
	}
	return mem, nil
}

// UnmapBlock unmaps a block MapBlock mapped.
func (d IoctlDevice) UnmapBlock(mem []byte) error { return d.IO.Munmap(mem) }

// WaitInterrupt is ioctl.Device.WaitInterrupt.
func (d IoctlDevice) WaitInterrupt(ctx context.Context, args *hl.WaitCSInterruptArgs) error {
	return d.IO.WaitInterrupt(ctx, args)
}

// Config describes the Pool to open.
type Config struct {
	// Dev reaches the device.
	Dev Device
	// Key identifies the open device for the process-wide record of
	// claimed channels (the *ioctl.Device of the compute file: the driver
	// lets one process at a time open a device's compute node, so within
	// that process the record is the whole arbitration).
	Key any
	// Mask is hw_ip_info's pdma_user_owned_ch_mask.
	Mask uint64
	// Channels is how many channels to claim, at least 1.
	Channels int
	// Ring is each channel's ring size in bytes: a power of two from 4 KiB
	// to 1 GiB (the MSQ_SIZE field's limit).
	Ring int
	// Interrupt is the user interrupt the channels' completion queues
	// raise, and Doorbell the address of the MSI-X doorbell their LBW
	// message writes it to (g3.D0_PCIE_MSIX_BASE on a Gaudi3, as SCAL
	// programs it).
	Interrupt uint32
	Doorbell  uint64
	// Resets, when not nil, returns how many times the device was reset
	// (INFO RESET_COUNT, hard and soft). A reset stops the channels and
	// clears their registers, and nothing else tells a waiter: a wait that
	// finds the count changed since its job was submitted reports the job
	// aborted, and the next Submit sets the channels up again.
	Resets func() (uint64, error)
}

// slotBytes is the room each channel's completion counter takes in the
// host memory after the rings: a cache line.
const slotBytes = 64

// HostBytes returns how much pinned, device-mapped host memory a Pool of n
// channels with rings of ring bytes needs: the rings, then one slot per
// channel for its completion queue's counter.
func HostBytes(n, ring int) int { return n*ring + n*slotBytes }

// Pool is the channels one owner claimed, with their rings and completion
// counters. Submit and Wait are safe for concurrent use; Close is not
// concurrent with them.
type Pool struct {
	dev      Device
	key      any
	irq      uint32
	doorbell uint64
	chans    []*Channel
	resets   func() (uint64, error)
	gen      atomic.Uint64 // the reset count the channels were set up in
	seen     atomic.Uint64 // the last reset count a wait read, plus unseen
	unseen   atomic.Uint64 // resets the driver or the registers showed and the count did not

	// life is read-held by every look at a channel's counter (Ticket.Done,
	// each wait slice) and write-held by Close, which takes the counters'
	// last values (Channel.final) before it returns and the caller frees
	// the memory: no load of a counter can reach memory Close let go.
	life   sync.RWMutex
	closed bool
}

// Channel is one claimed PDMA channel.
type Channel struct {
	p      *Pool
	id     int    // 0..23, the bit of pdma_user_owned_ch_mask
	block  []byte // its CH_A registers, mapped
	ring   []byte
	ringVA uint64
	word   *uint64 // the completion queue's counter: the jobs completed, from seed
	wordVA uint64
	epoch  atomic.Uint64 // counts resets of the counter before the count wraps (see Submit)
	gen    uint64        // the reset count the channel was set up in
	// restarts counts the channel's restarts after device resets, and
	// history holds, for each restart, how far the jobs before it got:
	// history[r] is where restart r+1 found the counter. A job of restart
	// r is done when its target is at most that, else the reset killed it.
	restarts atomic.Uint64
	history  atomic.Pointer[[]finalCount]
	final    uint64 // the counter's value when the Pool closed (life held)

	mu      sync.Mutex
	pi      uint64 // bytes written to the ring, free-running
	ci      uint64 // bytes the channel is known to have consumed: up to the last job known done
	base    uint64 // MSQ_PI and MSQ_CI count from here (see reserve)
	seed    uint64 // the counter's value when the queue was set up, in this epoch
	issued  uint64 // the counter's value once the last job is done
	pending []mark // jobs not known done, oldest first
}

// finalCount is a counter's last value in an epoch.
type finalCount struct{ epoch, count uint64 }

// mark is a submitted job: its sequence number and the ring position after it.
type mark struct{ target, end uint64 }

// Ticket names one submitted job: done when the channel's completion
// counter reaches Target, or the counter was set up again since for its
// count's wrap (which happens only once every job before is done). A job
// a device reset killed is never done, whatever the channel does after.
type Ticket struct {
	C        *Channel
	Target   uint64
	epoch    uint64
	gen      uint64 // the reset count it was submitted in
	restarts uint64 // the channel's restarts before it
}

// claims records, per open device, the channels the process's Pools hold.
var claims = struct {
	sync.Mutex
	held map[any]uint64
}{held: map[any]uint64{}}

// claimOrder returns the user channels in the order a Pool prefers them:
// die 0 first, its two groups alternating (each group has a queue manager
// of its own), so that a few channels spread over both groups.
func claimOrder(mask uint64) []int {
	var out []int
	for die := 0; die < g3.MAX_NUM_OF_DIES; die++ {
		for j := 0; j < g3.NUM_OF_PDMA_CH_PER_GRP; j++ {
			for g := 0; g < g3.NUM_OF_PDMA_GRP_PER_DIE; g++ {
				ch := (die*g3.NUM_OF_PDMA_GRP_PER_DIE+g)*g3.NUM_OF_PDMA_CH_PER_GRP + j
				if mask&(1<<ch) != 0 && ch != g3.KDMA_CH_ID {
					out = append(out, ch)
				}
			}
		}
	}
	return out
}

// claim takes up to n free channels of mask for key.
func claim(key any, mask uint64, n int) []int {
	claims.Lock()
	defer claims.Unlock()
	held := claims.held[key]
	var got []int
	for _, ch := range claimOrder(mask &^ held) {
		if len(got) == n {
			break
		}
		got = append(got, ch)
		held |= 1 << ch
	}
	if len(got) > 0 {
		claims.held[key] = held
	}
	return got
}

// unclaim gives channels back.
func unclaim(key any, ids []int) {
	claims.Lock()
	defer claims.Unlock()
	held := claims.held[key]
	for _, ch := range ids {
		held &^= 1 << ch
	}
	if held == 0 {
		delete(claims.held, key)
	} else {
		claims.held[key] = held
	}
}

// Claimed returns the channels the process's Pools hold on the device key.
func Claimed(key any) uint64 {
	claims.Lock()
	defer claims.Unlock()
	return claims.held[key]
}

// Open claims channels, maps their register blocks and configures them:
// the ring in host (HostBytes(cfg.Channels, cfg.Ring) bytes of pinned host
// memory at device address va, which must stay mapped until every job is
// done and the Pool closed) and the completion queue's counter after the
// rings.
// It claims fewer channels than asked when fewer are free, none being
// ErrNoChannel.
func Open(cfg Config, host []byte, va uint64) (*Pool, error) {
	switch {
	case cfg.Channels < 1:
		return nil, fmt.Errorf("pqm: %d channels", cfg.Channels)
	case cfg.Ring < 4096 || cfg.Ring > g3.PQM_MSQ_MAX_SIZE || bits.OnesCount(uint(cfg.Ring)) != 1:
		return nil, fmt.Errorf("pqm: ring of %d bytes is not a power of two from 4 KiB to 1 GiB", cfg.Ring)
	case len(host) < HostBytes(cfg.Channels, cfg.Ring) || va%g3.PQM_MSQ_ALIGN != 0:
		return nil, fmt.Errorf("pqm: %d bytes of host memory at %#x for %d rings of %d bytes", len(host), va, cfg.Channels, cfg.Ring)
	}
	if !doorbellOrdered {
		return nil, fmt.Errorf("pqm: no reasoned doorbell order on %s: %w", runtime.GOARCH, errors.ErrUnsupported)
	}
	ids := claim(cfg.Key, cfg.Mask, cfg.Channels)
	if len(ids) == 0 {
		return nil, fmt.Errorf("pqm: channel mask %#x, held %#x: %w", cfg.Mask, Claimed(cfg.Key), ErrNoChannel)
	}
	p := &Pool{dev: cfg.Dev, key: cfg.Key, irq: cfg.Interrupt, doorbell: cfg.Doorbell, resets: cfg.Resets}
	if p.resets != nil {
		n, err := p.resets()
		if err != nil {
			unclaim(cfg.Key, ids)
			return nil, fmt.Errorf("pqm: reset count: %w", err)
		}
		p.gen.Store(n)
		p.seen.Store(n)
	}
	for i, id := range ids {
		block, err := cfg.Dev.MapBlock(g3.PDMAChannelBlock(id))
		if err == nil && len(block) < g3.PDMA_CH_A_PQM_CH_REGS_END {
			err = errors.Join(fmt.Errorf("pqm: channel %d block of %d bytes", id, len(block)), cfg.Dev.UnmapBlock(block))
		}
		if err != nil {
			p.unmapAll()
			unclaim(cfg.Key, ids)
			return nil, fmt.Errorf("pqm: map channel %d: %w", id, err)
		}
		slot := cfg.Channels*cfg.Ring + i*slotBytes
		c := &Channel{
			p: p, id: id, block: block,
			ring: host[i*cfg.Ring : (i+1)*cfg.Ring : (i+1)*cfg.Ring], ringVA: va + uint64(i*cfg.Ring),
			word: word64(host, slot), wordVA: va + uint64(slot),
		}
		c.gen = p.gen.Load()
		p.chans = append(p.chans, c)
		c.resetRing()
		c.resetCQ()
	}
	return p, nil
}

// Channels returns the claimed channels.
func (p *Pool) Channels() []*Channel { return p.chans }

// ID returns the channel's number, its bit in pdma_user_owned_ch_mask.
func (c *Channel) ID() int { return c.id }

// Registers returns the channel's mapped CH_A block, for tests and tools.
func (c *Channel) Registers() []byte { return c.block }

// RingBytes returns the channel's ring, for tests and tools (hltrace-like
// decoding); the device reads it.
func (c *Channel) RingBytes() []byte { return c.ring }

func (c *Channel) set(off int, v uint32) { atomic.StoreUint32(reg32(c.block, off), v) }
func (c *Channel) get(off int) uint32    { return atomic.LoadUint32(reg32(c.block, off)) }

// resetRing puts the channel's MSQ in "PI/CI in memory" mode over the
// ring, with both counters at 0: the mode write resets them (and the
// ring's base and size), MSQ_PI is written 0 as well for a channel that
// takes the reset late (the simulator's, which polls its registers).
func (c *Channel) resetRing() {
	c.set(g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG, g3.PQM_DESC_SUBMIT_MODE_PI_CI_IN_MEM)
	c.set(g3.PDMA_CH_A_PQM_CH_MSQ_SIZE, uint32(len(c.ring)-1))
	c.set(g3.PDMA_CH_A_PQM_CH_MSQ_BASE_L, uint32(c.ringVA))
	c.set(g3.PDMA_CH_A_PQM_CH_MSQ_BASE_H, uint32(c.ringVA>>32))
	c.set(g3.PDMA_CH_A_PQM_CH_MSQ_PI, 0)
}

// resetCQ sets up the channel's completion queue as SCAL's direct mode
// does (DirectModePDMAStream::initChannelCQ): a queue of one 64-bit
// counter, the counter's device address, the interrupt and the MSI-X
// doorbell for its LBW message, then ENABLE, COMPLTN_MODE (the user's
// mode) and LBW_WR_EN. SCAL sets a queue up once; this also does it again
// after a reset or before the count wraps, so it first disables the queue
// and writes ECMPLTN_Q_BASE_PI 0, then seeds the counter in memory with
// what ECMPLTN_Q_BASE_PI reads: whether the channel writes its count or
// adds to the memory, the counter then reads seed plus the jobs completed.
// Nothing may be in flight on the channel. c.mu is held, or the channel is
// not shared yet.
func (c *Channel) resetCQ() {
	c.set(g3.PDMA_CH_A_ECMPLTN_Q_CH_CFG, 0)
	c.set(g3.PDMA_CH_A_ECMPLTN_Q_BASE_LO, uint32(c.wordVA))
	c.set(g3.PDMA_CH_A_ECMPLTN_Q_BASE_HI, uint32(c.wordVA>>32))
	c.set(g3.PDMA_CH_A_ECMPLTN_Q_BASE_SIZE, g3.PQM_ECMPLTN_Q_COUNTER_SIZE)
	c.set(g3.PDMA_CH_A_ECMPLTN_Q_BASE_PI, 0)
	c.set(g3.PDMA_CH_A_ECMPLTN_Q_LBW_ADDR_L, uint32(c.p.doorbell))
	c.set(g3.PDMA_CH_A_ECMPLTN_Q_LBW_ADDR_H, uint32(c.p.doorbell>>32))
	c.set(g3.PDMA_CH_A_ECMPLTN_Q_LBW_PAYLD, c.p.irq)
	c.seed = uint64(c.get(g3.PDMA_CH_A_ECMPLTN_Q_BASE_PI))
	c.issued = c.seed
	atomic.StoreUint64(c.word, c.seed)
	c.set(g3.PDMA_CH_A_ECMPLTN_Q_CH_CFG, g3.PDMA_CH_A_ECMPLTN_Q_CH_CFG_ENABLE|
		g3.PDMA_CH_A_ECMPLTN_Q_CH_CFG_COMPLTN_MODE|g3.PDMA_CH_A_ECMPLTN_Q_CH_CFG_LBW_WR_EN)
}

// Done reports whether the job of a ticket completed. A job a device
// reset killed never did.
func (t Ticket) Done() bool {
	p := t.C.p
	p.life.RLock()
	defer p.life.RUnlock()
	done, _ := t.state()
	return done
}

// state reports whether the job completed, or is known killed by a reset
// (the channel restarted since it was submitted). p.life is read-held.
func (t Ticket) state() (done, killed bool) {
	c := t.C
	for {
		r := c.restarts.Load()
		if r != t.restarts {
			f := (*c.history.Load())[t.restarts]
			if f.epoch != t.epoch || f.count >= t.Target {
				return true, false
			}
			return false, true
		}
		epoch := c.epoch.Load()
		var n uint64
		if c.p.closed {
			n = c.final
		} else {
			n = atomic.LoadUint64(c.word)
		}
		if c.restarts.Load() != r {
			continue // restarted meanwhile: the counter counts the new jobs
		}
		return epoch != t.epoch || n >= t.Target, false
	}
}

// ticket returns the ticket of the channel's job with target. c.mu is held.
func (c *Channel) ticket(target uint64) Ticket {
	return Ticket{C: c, Target: target, epoch: c.epoch.Load(), gen: c.gen, restarts: c.restarts.Load()}
}

// Completed returns the channel's completion counter: the number of jobs
// it completed in the current epoch, from the value the queue was set up
// with.
func (c *Channel) Completed() uint64 { return atomic.LoadUint64(c.word) }

// counterLimit is where the 32-bit MSQ_PI and MSQ_CI must not reach: the
// channel does not handle their wrap (hlthunk-enhanced's gaudi3_dma.c,
// test_cs_pqm_q_wrap_around, SW-172941), so before a job would take PI
// past it the channel is drained and its ring reset. A variable for tests.
var counterLimit uint64 = 1 << 32

// targetLimit bounds the counter: the completion queue counts in the
// 32-bit ECMPLTN_Q_BASE_PI, so before a job would take the count past it
// the channel is drained and its queue set up again, in a new epoch. A
// variable for tests.
var targetLimit uint64 = 1<<32 - 1

// ErrTimeout reports a wait or a submission whose deadline passed first;
// it matches ioctl.ErrTimeout.
var ErrTimeout = fmt.Errorf("pqm: deadline passed: %w", ioctl.ErrTimeout)

// Submit copies a job into the channel's ring, followed by its
// completion, advances MSQ_PI and returns the job's ticket. It waits,
// within ctx and until deadline (none when zero), for room in the ring.
// On error nothing of the job was queued.
//
// The completion, as Habana's runtime completes its direct-mode PDMA
// streams: the job's last LIN_PDMA has advcnt_hbw_complq, so once its
// transfer is done the channel's completion queue counts it, writes the
// count to the counter in host memory and sends its LBW message, the
// Pool's interrupt number to the MSI-X doorbell, which raises that user
// interrupt for WAIT_CS. The ticket's target is the count with the job.
func (c *Channel) Submit(ctx context.Context, j *Job, deadline time.Time) (Ticket, error) {
	if j.n == 0 {
		return Ticket{}, errors.New("pqm: empty job")
	}
	need := uint64(len(j.body) + j.last.Len())
	if need > uint64(len(c.ring))/4 {
		return Ticket{}, fmt.Errorf("pqm: job of %d bytes for a ring of %d (at most a quarter): %w", need, len(c.ring), ErrJobFull)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var pos uint64
	for {
		// c.mu is let go while the channel is waited for (reserve, drain):
		// each turn looks at the channel afresh.
		if err := c.ready(); err != nil {
			return Ticket{}, err
		}
		if c.issued >= targetLimit {
			again, err := c.drain(ctx, deadline)
			if err != nil {
				return Ticket{}, err
			}
			if again {
				continue
			}
			c.epoch.Add(1)
			c.resetCQ()
		}
		p, again, err := c.reserve(ctx, need, deadline)
		if err != nil {
			return Ticket{}, err
		}
		if !again {
			pos = p
			break
		}
	}
	target := c.issued + 1
	n := uint64(copy(c.ring[pos:], j.body))
	last := j.last
	last.AdvanceCompletionQueue = true
	out, err := last.Append(packet.Gaudi3PQM, c.ring[pos+n:pos+n])
	if err != nil {
		return Ticket{}, fmt.Errorf("pqm: encode completion: %w", err)
	}
	n += uint64(len(out))
	c.pi += n
	c.issued = target
	// The completing packet is the job's last: once the counter counts
	// it, the channel fetched every byte of the job (see retire).
	c.pending = append(c.pending, mark{target: target, end: c.pi})
	c.doorbell()
	return c.ticket(target), nil
}

// ErrClosed reports a Pool closed (or its registers unmapped) before the
// call; it matches ioctl.ErrClosed.
var ErrClosed = fmt.Errorf("pqm: pool closed: %w", ioctl.ErrClosed)

// ready sets the channel up again if the device was reset since it last
// was (the reset count a wait read moved, or the channel's registers read
// back cleared: one register read per Submit), and fails once its
// registers are unmapped. c.mu is held.
func (c *Channel) ready() error {
	if c.block == nil {
		return ErrClosed
	}
	if c.get(g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG)&g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG_MODE_MASK != g3.PQM_DESC_SUBMIT_MODE_PI_CI_IN_MEM {
		// The mode the channel was set up in is gone: a device reset
		// cleared the registers, perhaps before any wait saw it.
		c.p.noteReset()
	}
	c.p.renew()
	if g := c.p.gen.Load(); c.gen != g {
		c.restart(g)
	}
	return nil
}

// doorbell writes MSQ_PI, after the ring bytes before it (see
// doorbell_amd64.go for the order). c.mu is held.
func (c *Channel) doorbell() {
	storeDoorbell(reg32(c.block, g3.PDMA_CH_A_PQM_CH_MSQ_PI), uint32(c.pi-c.base))
}

// waitUnlocked is Pool.wait for t with c.mu let go meanwhile, so that
// the channel's other callers (a Submit with a shorter context, Resume,
// Idle) are not held up by it. c.mu is held.
func (c *Channel) waitUnlocked(ctx context.Context, t Ticket, deadline time.Time) error {
	c.mu.Unlock()
	defer c.mu.Lock()
	return c.p.wait(ctx, t, deadline)
}

// renew moves the Pool to the reset count a wait saw, if a reset
// happened: the channels are set up again by their next Submit.
func (p *Pool) renew() {
	if seen := p.seen.Load(); seen != p.gen.Load() {
		p.gen.Store(seen)
	}
}

// restart sets a channel up again after a device reset cleared its
// registers: an empty ring at its start, its completion queue in a new
// epoch. Every job submitted before was reported aborted. c.mu is held.
func (c *Channel) restart(gen uint64) {
	// What the jobs before got to: the reset stopped the channel, so the
	// counter holds its last count.
	var h []finalCount
	if old := c.history.Load(); old != nil {
		h = append(h, *old...)
	}
	h = append(h, finalCount{epoch: c.epoch.Load(), count: atomic.LoadUint64(c.word)})
	c.history.Store(&h)
	c.restarts.Add(1)
	c.gen = gen
	c.pending = c.pending[:0]
	c.pi = (c.pi + uint64(len(c.ring)) - 1) &^ (uint64(len(c.ring)) - 1)
	c.ci, c.base = c.pi, c.pi
	c.resetRing()
	c.resetCQ()
}

// reserve makes room for need contiguous bytes in the ring and returns
// their offset: a job never wraps around the ring's end (the tests assert
// it of their command buffers); the rest of the ring before the end is
// filled with NOPs. c.mu is held; again reports that it was let go while
// reserve waited for the channel, and nothing was reserved: the caller
// looks at the channel again (a reset may have come) and calls again.
//
// Room comes back as jobs complete: a job's completing packet is its
// last, so a completed job's bytes were all fetched. A job takes at most a
// quarter of the ring, and its padding less than itself, so once every job
// is done the room always suffices.
func (c *Channel) reserve(ctx context.Context, need uint64, deadline time.Time) (pos uint64, again bool, err error) {
	size := uint64(len(c.ring))
	pos = c.pi % size
	pad := uint64(0)
	if pos+need > size {
		pad = size - pos
	}
	if c.pi-c.base+pad+need >= counterLimit {
		_, err := c.drain(ctx, deadline)
		return 0, true, err
	}
	// Room comes back as jobs complete: a completed job's packets were
	// consumed. MSQ_CI would tell earlier, but a channel that takes a
	// reset late (the simulator's) still shows the old ring's CI.
	c.retire()
	if size-(c.pi-c.ci) >= pad+need {
		if pad > 0 {
			nop, _ := packet.Nop{}.Append(packet.Gaudi3PQM, nil)
			for off := pos; off < size; off += uint64(len(nop)) {
				copy(c.ring[off:], nop)
			}
			c.pi += pad
		}
		return c.pi % size, false, nil
	}
	if len(c.pending) == 0 {
		// Cannot happen (see above).
		return 0, false, fmt.Errorf("pqm: channel %d ring full with no job in flight (PI %d, CI %d)", c.id, c.pi, c.ci)
	}
	if err := c.waitUnlocked(ctx, c.ticket(c.pending[0].target), deadline); err != nil && !errors.Is(err, errKilled) {
		return 0, false, fmt.Errorf("pqm: wait for room in channel %d's ring: %w", c.id, err)
	}
	// Done, or killed by a reset: either way the room is back once the
	// caller looked again (and restarted the channel).
	return 0, true, nil
}

// retire drops the jobs known done, whose ring bytes are consumed.
func (c *Channel) retire() {
	done := atomic.LoadUint64(c.word)
	k := 0
	for k < len(c.pending) && c.pending[k].target <= done {
		c.ci = max(c.ci, c.pending[k].end)
		k++
	}
	if k > 0 {
		c.pending = append(c.pending[:0], c.pending[k:]...)
	}
}

// drain waits until every job of the channel is done, then resets the
// ring so that MSQ_PI and MSQ_CI start again from 0. The completion queue
// is left alone. c.mu is held; again reports that drain let it go to
// wait and did not reset the ring: the caller looks again.
func (c *Channel) drain(ctx context.Context, deadline time.Time) (again bool, err error) {
	c.retire()
	if len(c.pending) > 0 {
		err := c.waitUnlocked(ctx, c.ticket(c.issued), deadline)
		if err != nil && !errors.Is(err, errKilled) {
			return false, fmt.Errorf("pqm: drain channel %d: %w", c.id, err)
		}
		return true, nil
	}
	// The ring is reset only once the channel shows everything fetched
	// (MSQ_CI at MSQ_PI): a Stall's FENCE takes no completion.
	if c.get(g3.PDMA_CH_A_PQM_CH_MSQ_CI) != uint32(c.pi-c.base) {
		if !deadline.IsZero() && time.Now().After(deadline) {
			return false, fmt.Errorf("pqm: drain channel %d: the channel never fetched its last packets: %w", c.id, ErrTimeout)
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
		c.mu.Unlock()
		time.Sleep(time.Millisecond)
		c.mu.Lock()
		return true, nil
	}
	c.pending = c.pending[:0]
	c.resetRing()
	c.pi = (c.pi + uint64(len(c.ring)) - 1) &^ (uint64(len(c.ring)) - 1) // the ring's start
	c.ci, c.base = c.pi, c.pi
	return false, nil
}

// waitSlice bounds one WAIT_CS: an interrupt that came before the wait
// began, or was missed, delays a completion by at most this much.
const waitSlice = 100 * time.Millisecond

var waitArgs = sync.Pool{New: func() any { return new(hl.WaitCSInterruptArgs) }}

// Wait blocks until the ticket's job is done, ctx ends (its error), the
// deadline passes (ErrTimeout; zero is none) or the device fails the wait
// (an error matching unix.EIO after a reset, or another of the driver's).
// Only a nil error says the device is done with the job.
func (p *Pool) Wait(ctx context.Context, t Ticket, deadline time.Time) error {
	return p.wait(ctx, t, deadline)
}

func (p *Pool) wait(ctx context.Context, t Ticket, deadline time.Time) error {
	a := waitArgs.Get().(*hl.WaitCSInterruptArgs)
	defer waitArgs.Put(a)
	for {
		err, end := p.waitSlice(ctx, t, deadline, a)
		if end {
			return err
		}
	}
}

// errKilled is the error of a job a device reset killed; it matches
// unix.EIO, as the driver's answer to a wait a reset ends.
var errKilled = fmt.Errorf("aborted by a device reset: %w", unix.EIO)

// waitSlice is one turn of wait: at most one WAIT_CS of at most
// waitSlice, with p.life read-held so that Close cannot take the counter
// away under it. It reports whether the wait ends, with what. a is left
// cleared: the driver's answer lies over the pointer word of the union
// (see hl.WaitCSInterruptArgs), and a pooled argument must keep no
// address either.
func (p *Pool) waitSlice(ctx context.Context, t Ticket, deadline time.Time, a *hl.WaitCSInterruptArgs) (error, bool) {
	p.life.RLock()
	defer p.life.RUnlock()
	done, killed := t.state()
	switch {
	case done:
		return nil, true
	case killed, p.seen.Load() != t.gen:
		return fmt.Errorf("job %d of channel %d: %w", t.Target, t.C.id, errKilled), true
	case p.closed:
		return fmt.Errorf("job %d of channel %d: %w", t.Target, t.C.id, ErrClosed), true
	}
	slice := waitSlice
	if !deadline.IsZero() {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("job %d of channel %d: %w", t.Target, t.C.id, ErrTimeout), true
		}
		slice = min(slice, left)
	}
	*a = hl.WaitCSInterruptArgs{
		Addr:               hl.NewPointer(pointerOf(t.C.word)),
		Target:             t.Target,
		Flags:              p.irq << 20,
		InterruptTimeoutUs: uint64((slice + time.Microsecond - 1) / time.Microsecond),
	}
	err := p.dev.WaitInterrupt(ctx, a)
	status := a.Out().Status
	*a = hl.WaitCSInterruptArgs{}
	if done, _ := t.state(); done {
		return nil, true
	}
	if err != nil {
		if errors.Is(err, unix.EIO) {
			// The driver ends waits with EIO when it resets the device,
			// and when it postpones a reset (see aborted).
			if !p.aborted() {
				return fmt.Errorf("job %d of channel %d: %w (%w)", t.Target, t.C.id, ErrResetPending, err), true
			}
			return fmt.Errorf("job %d of channel %d: %w", t.Target, t.C.id, errors.Join(errKilled, err)), true
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr, true
		}
		return fmt.Errorf("job %d of channel %d: %w", t.Target, t.C.id, err), true
	}
	if status == hl.HL_WAIT_CS_STATUS_ABORTED {
		if !p.aborted() {
			return fmt.Errorf("job %d of channel %d: %w", t.Target, t.C.id, ErrResetPending), true
		}
		return fmt.Errorf("job %d of channel %d: %w", t.Target, t.C.id, errKilled), true
	}
	if p.wasReset(t) {
		return fmt.Errorf("job %d of channel %d: %w", t.Target, t.C.id, errKilled), true
	}
	return nil, false
}

// ErrResetPending reports a wait the driver aborted (EIO, or the ABORTED
// status) while the device's reset count did not move: it aborts the
// waits in progress both when it resets the device and when it postpones
// a reset until the device is released or its release watchdog fires
// (common/device.c, hl_device_cond_reset with an eventfd registered, as
// after a Gaudi3 channel error: out-of-tree gaudi3.c,
// gaudi3_handle_eqe), and then the channels run on. The job is not known
// done or killed, and what it uses stays the device's: wait again (the
// driver answers EBUSY while the watchdog runs), and once the device is
// reset the wait reports the job killed. It matches
// ioctl.ErrNotOperational.
var ErrResetPending = fmt.Errorf("pqm: wait aborted for a device reset not done yet: %w", ioctl.ErrNotOperational)

// aborted records a wait the driver aborted (EIO or ABORTED) and reports
// whether the device was reset since the Pool's channels were last set
// up: the reset count moved, or cannot be read (then the abort is taken
// for a reset, as the driver's answer says). A count that did not move is
// no reset (ErrResetPending): the channels may still run their jobs.
func (p *Pool) aborted() bool {
	g := p.gen.Load()
	if p.resets == nil {
		p.noteReset()
		return true
	}
	n, err := p.resets()
	if err != nil {
		p.noteReset()
		return true
	}
	if n+p.unseen.Load() == g {
		return false
	}
	p.seen.Store(n + p.unseen.Load())
	return true
}

// noteReset records a reset the driver reported (a wait answered ABORTED
// or EIO) or the registers show, so that the next Submit sets the
// channels up again rather than ring a doorbell the reset cleared: the
// reset count as INFO gives it; one more when it cannot be read (the next
// reading corrects it); and when it did not move, one more reset counted
// by the Pool alone (p.unseen), which every later reading adds.
func (p *Pool) noteReset() {
	g := p.gen.Load()
	if p.resets != nil {
		n, err := p.resets()
		if err != nil {
			p.seen.CompareAndSwap(g, g+1)
			return
		}
		if n+p.unseen.Load() != g {
			p.seen.Store(n + p.unseen.Load())
			return
		}
	}
	if p.seen.CompareAndSwap(g, g+1) {
		p.unseen.Add(1)
	}
}

// Stall queues a FENCE on the channel's fence counter id (0 to 3), which
// waits for the counter to reach 1: the channel runs nothing queued after
// it until Resume. It is how tests keep work in flight on a healthy
// channel; the FENCE takes no completion.
func (c *Channel) Stall(id uint8) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	fence := packet.Gaudi3Fence{ID: id, Target: 1, Dec: 1}
	var pos uint64
	for again := true; again; {
		if err := c.ready(); err != nil {
			return err
		}
		var err error
		pos, again, err = c.reserve(context.Background(), uint64(fence.Len()), time.Time{})
		if err != nil {
			return err
		}
	}
	out, err := fence.Append(packet.Gaudi3PQM, c.ring[pos:pos])
	if err != nil {
		return fmt.Errorf("pqm: stall: %w", err)
	}
	c.pi += uint64(len(out))
	c.doorbell()
	return nil
}

// Resume adds 1 to the channel's fence counter id through its FENCE_INC
// register, which lets a FENCE of Stall through.
func (c *Channel) Resume(id uint8) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.block == nil {
		return // unmapped: its Pool was closed or given up
	}
	c.set(g3.PDMA_CH_A_PQM_CH_FENCE_INC_0+4*int(id), 1)
}

// wasReset reports whether the device was reset since t's job was
// submitted: a wait slice that ends without the job asks.
func (p *Pool) wasReset(t Ticket) bool {
	if p.resets == nil {
		return false
	}
	if n, err := p.resets(); err == nil {
		p.seen.Store(n + p.unseen.Load())
	}
	return p.seen.Load() != t.gen
}

// Idle reports whether every job submitted to the Pool is done, or was
// aborted by a device reset.
func (p *Pool) Idle() bool {
	for _, c := range p.chans {
		c.mu.Lock()
		issued, gen := c.issued, c.gen
		c.mu.Unlock()
		if atomic.LoadUint64(c.word) < issued && p.seen.Load() == gen {
			return false
		}
	}
	return true
}

// Close stops the channels (their rings reset, their completion queues
// disabled), unmaps their register blocks and gives them back. Call it only once every
// ticket is done (Idle): the host memory is the caller's to free after
// Close returns. Close is idempotent.
func (p *Pool) Close() error {
	if p.chans == nil {
		return nil
	}
	// No wait looks at a counter from here on: they answer from the
	// counters' last values.
	p.life.Lock()
	for _, c := range p.chans {
		c.final = atomic.LoadUint64(c.word)
	}
	p.closed = true
	p.life.Unlock()
	for _, c := range p.chans {
		c.mu.Lock()
		if c.block == nil {
			c.mu.Unlock()
			continue
		}
		c.set(g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG, g3.PQM_DESC_SUBMIT_MODE_PI_CI_IN_MEM)
		c.set(g3.PDMA_CH_A_ECMPLTN_Q_CH_CFG, 0)
		c.mu.Unlock()
	}
	err := p.unmapAll()
	ids := make([]int, len(p.chans))
	for i, c := range p.chans {
		ids[i] = c.id
	}
	unclaim(p.key, ids)
	p.chans = nil
	return err
}

// Unmap unmaps the channels' register blocks and nothing else: for a Pool
// whose jobs never completed, which keeps its channels claimed (another
// Pool of the process must not reuse a channel that may still run them)
// and leaves them running; its host memory must stay too. The CPU's view
// of the registers is not something the device uses.
func (p *Pool) Unmap() error { return p.unmapAll() }

func (p *Pool) unmapAll() error {
	var errs []error
	for _, c := range p.chans {
		c.mu.Lock()
		if c.block != nil {
			if err := p.dev.UnmapBlock(c.block); err != nil {
				errs = append(errs, fmt.Errorf("pqm: unmap channel %d: %w", c.id, err))
			}
			c.block = nil
		}
		c.mu.Unlock()
	}
	return errors.Join(errs...)
}
