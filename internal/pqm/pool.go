package pqm

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
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
	// Interrupt is the user interrupt the channels raise on completion,
	// and Doorbell the address of the MSI-X doorbell they write it to
	// (MSIXDoorbell on a Gaudi3).
	Interrupt uint32
	Doorbell  uint64
}

// slotBytes is the room each channel's counter and completion word take
// in the host memory after the rings: a cache line each.
const slotBytes = 64

// HostBytes returns how much pinned, device-mapped host memory a Pool of n
// channels with rings of ring bytes needs: the rings, then one slot per
// channel for its completion counter and word.
func HostBytes(n, ring int) int { return n*ring + n*slotBytes }

// Pool is the channels one owner claimed, with their rings and completion
// counters. Submit and Wait are safe for concurrent use; Close is not
// concurrent with them.
type Pool struct {
	dev   Device
	key   any
	irq   uint32
	chans []*Channel
}

// Channel is one claimed PDMA channel.
type Channel struct {
	p      *Pool
	id     int    // 0..23, the bit of pdma_user_owned_ch_mask
	block  []byte // its CH_A registers, mapped
	ring   []byte
	ringVA uint64
	ctr    *uint64 // the completion-queue counter the channel advances
	ctrVA  uint64
	word   *uint64 // the write-completion word
	wordVA uint64

	mu      sync.Mutex
	pi      uint64 // bytes written to the ring, free-running
	ci      uint64 // bytes the channel is known to have consumed
	base    uint64 // MSQ_PI and MSQ_CI count from here (see reserve)
	issued  uint64 // completions asked for: the last job's sequence number
	pending []mark // jobs not known done, oldest first
}

// mark is a submitted job: its sequence number and the ring position after it.
type mark struct{ target, end uint64 }

// Ticket names one submitted job: done when the channel's counter
// reaches Target.
type Ticket struct {
	C      *Channel
	Target uint64
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
// done and the Pool closed) and the completion counters after the rings.
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
	ids := claim(cfg.Key, cfg.Mask, cfg.Channels)
	if len(ids) == 0 {
		return nil, fmt.Errorf("pqm: channel mask %#x, held %#x: %w", cfg.Mask, Claimed(cfg.Key), ErrNoChannel)
	}
	p := &Pool{dev: cfg.Dev, key: cfg.Key, irq: cfg.Interrupt}
	for i, id := range ids {
		block, err := cfg.Dev.MapBlock(g3.PDMAChannelBlock(id))
		if err == nil && len(block) < regCQLBWData+4 {
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
			ctr: word64(host, slot), ctrVA: va + uint64(slot),
			word: word64(host, slot+8), wordVA: va + uint64(slot+8),
		}
		p.chans = append(p.chans, c)
		c.configure(cfg.Doorbell)
	}
	return p, nil
}

// Channels returns the claimed channels.
func (p *Pool) Channels() []*Channel { return p.chans }

// ID returns the channel's number, its bit in pdma_user_owned_ch_mask.
func (c *Channel) ID() int { return c.id }

// Registers returns the channel's mapped CH_A block, for tests and tools.
func (c *Channel) Registers() []byte { return c.block }

func (c *Channel) set(off int, v uint32) { atomic.StoreUint32(reg32(c.block, off), v) }
func (c *Channel) get(off int) uint32    { return atomic.LoadUint32(reg32(c.block, off)) }

// configure programs a channel for its first use: the completion queue
// off while the ring is reset and pointed at ours, then the counter, the
// interrupt's LBW write and the completion queue on. The order of the
// MSQ writes is hlthunk-enhanced's gaudi3_pdma_reset_pqm_ch: the mode
// write resets MSQ PI, CI, base and size. Another owner's channel may
// have a completion-queue producer index of its own: it is zeroed, so
// that the counter counts this Pool's completions from 0.
func (c *Channel) configure(doorbell uint64) {
	c.set(regCQConfig, 0)
	c.resetRing()
	atomic.StoreUint64(c.ctr, 0)
	atomic.StoreUint64(c.word, 0)
	c.set(regCQBaseLo, uint32(c.ctrVA))
	c.set(regCQBaseHi, uint32(c.ctrVA>>32))
	c.set(regCQSize, cqBytes)
	c.set(regCQPI, 0)
	c.set(regCQLBWLo, uint32(doorbell))
	c.set(regCQLBWHi, uint32(doorbell>>32))
	c.set(regCQLBWData, c.p.irq)
	c.set(regCQConfig, cqEnable|cqUserMode|cqLBWWrite)
}

// resetRing puts the channel's MSQ in "PI/CI in memory" mode over the
// ring, with both counters at 0.
func (c *Channel) resetRing() {
	c.set(g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG, g3.PQM_DESC_SUBMIT_MODE_PI_CI_IN_MEM)
	c.set(g3.PDMA_CH_A_PQM_CH_MSQ_SIZE, uint32(len(c.ring)-1))
	c.set(g3.PDMA_CH_A_PQM_CH_MSQ_BASE_L, uint32(c.ringVA))
	c.set(g3.PDMA_CH_A_PQM_CH_MSQ_BASE_H, uint32(c.ringVA>>32))
}

// Done reports whether the job of a ticket completed.
func (t Ticket) Done() bool { return atomic.LoadUint64(t.C.ctr) >= t.Target }

// Completed returns the channel's completion counter: how many jobs it
// completed since the Pool opened.
func (c *Channel) Completed() uint64 { return atomic.LoadUint64(c.ctr) }

// counterLimit is where the 32-bit MSQ_PI and MSQ_CI must not reach: the
// channel does not handle their wrap (hlthunk-enhanced's gaudi3_dma.c,
// test_cs_pqm_q_wrap_around, SW-172941), so before a job would take PI
// past it the channel is drained and its ring reset. A variable for tests.
var counterLimit uint64 = 1 << 32

// ErrTimeout reports a wait or a submission whose deadline passed first;
// it matches ioctl.ErrTimeout.
var ErrTimeout = fmt.Errorf("pqm: deadline passed: %w", ioctl.ErrTimeout)

// Submit copies a job into the channel's ring, with its last packet
// completing it, advances MSQ_PI and returns the job's ticket. It waits,
// within ctx and until deadline (none when zero), for room in the ring.
// On error nothing of the job was queued.
func (c *Channel) Submit(ctx context.Context, j *Job, deadline time.Time) (Ticket, error) {
	if j.n == 0 {
		return Ticket{}, errors.New("pqm: empty job")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	need := uint64(len(j.body) + j.last.Len() + finalExtra)
	if need > uint64(len(c.ring))/2 {
		return Ticket{}, fmt.Errorf("pqm: job of %d bytes for a ring of %d: %w", need, len(c.ring), ErrJobFull)
	}
	pos, err := c.reserve(ctx, need, deadline)
	if err != nil {
		return Ticket{}, err
	}
	target := c.issued + 1
	n := copy(c.ring[pos:], j.body)
	last := j.last
	last.WriteCompletion = true
	last.CompletionAddr = c.wordVA
	last.CompletionData = uint32(target)
	last.AdvanceCompletionQueue = true
	out, err := last.Append(packet.Gaudi3PQM, c.ring[pos+uint64(n):pos+uint64(n)])
	if err != nil {
		return Ticket{}, fmt.Errorf("pqm: encode completion: %w", err)
	}
	c.pi += uint64(n + len(out))
	c.issued = target
	c.pending = append(c.pending, mark{target: target, end: c.pi})
	c.set(g3.PDMA_CH_A_PQM_CH_MSQ_PI, uint32(c.pi-c.base))
	return Ticket{C: c, Target: target}, nil
}

// finalExtra is what the completion adds to a job's last packet: the two
// completion words of a LIN_PDMA (40 bytes instead of 24).
const finalExtra = 16

// reserve makes room for need contiguous bytes in the ring and returns
// their offset: a job never wraps around the ring's end (the tests assert
// it of their command buffers); the rest of the ring before the end is
// filled with NOPs. c.mu is held.
func (c *Channel) reserve(ctx context.Context, need uint64, deadline time.Time) (uint64, error) {
	size := uint64(len(c.ring))
	for {
		pos := c.pi % size
		pad := uint64(0)
		if pos+need > size {
			pad = size - pos
		}
		if c.pi-c.base+pad+need >= counterLimit {
			if err := c.drain(ctx, deadline); err != nil {
				return 0, err
			}
			continue
		}
		if size-(c.pi-c.ci) >= pad+need {
			if pad > 0 {
				nop, _ := packet.Nop{}.Append(packet.Gaudi3PQM, nil)
				for off := pos; off < size; off += uint64(len(nop)) {
					copy(c.ring[off:], nop)
				}
				c.pi += pad
			}
			return c.pi % size, nil
		}
		// What the channel consumed: MSQ_CI counts from base like MSQ_PI,
		// and lies within a ring of PI.
		ci := c.pi - uint64(uint32(c.pi-c.base)-c.get(g3.PDMA_CH_A_PQM_CH_MSQ_CI))
		if ci > c.ci && ci <= c.pi {
			c.ci = ci
		}
		c.retire()
		if size-(c.pi-c.ci) >= pad+need {
			continue
		}
		if len(c.pending) == 0 {
			return 0, fmt.Errorf("pqm: channel %d ring full with no job in flight (PI %d, CI %d)", c.id, c.pi, c.ci)
		}
		if err := c.p.wait(ctx, Ticket{C: c, Target: c.pending[0].target}, deadline); err != nil {
			return 0, fmt.Errorf("pqm: wait for room in channel %d's ring: %w", c.id, err)
		}
	}
}

// retire drops the jobs known done, whose ring bytes are consumed.
func (c *Channel) retire() {
	done := atomic.LoadUint64(c.ctr)
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
// is left alone: its counter goes on counting.
func (c *Channel) drain(ctx context.Context, deadline time.Time) error {
	if c.issued > 0 {
		if err := c.p.wait(ctx, Ticket{C: c, Target: c.issued}, deadline); err != nil {
			return fmt.Errorf("pqm: drain channel %d: %w", c.id, err)
		}
	}
	c.pending = c.pending[:0]
	c.resetRing()
	c.pi = (c.pi + uint64(len(c.ring)) - 1) &^ (uint64(len(c.ring)) - 1) // the ring's start
	c.ci, c.base = c.pi, c.pi
	return nil
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
	if t.Done() {
		return nil
	}
	a := waitArgs.Get().(*hl.WaitCSInterruptArgs)
	defer waitArgs.Put(a)
	for {
		slice := waitSlice
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return fmt.Errorf("job %d of channel %d: %w", t.Target, t.C.id, ErrTimeout)
			}
			slice = min(slice, left)
		}
		*a = hl.WaitCSInterruptArgs{
			Addr:               hl.NewPointer(pointerOf(t.C.ctr)),
			Target:             t.Target,
			Flags:              p.irq << 20,
			InterruptTimeoutUs: uint64((slice + time.Microsecond - 1) / time.Microsecond),
		}
		err := p.dev.WaitInterrupt(ctx, a)
		if t.Done() {
			return nil
		}
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			return fmt.Errorf("job %d of channel %d: %w", t.Target, t.C.id, err)
		}
		if a.Out().Status == hl.HL_WAIT_CS_STATUS_ABORTED {
			return fmt.Errorf("job %d of channel %d: aborted: %w", t.Target, t.C.id, unix.EIO)
		}
	}
}

// Idle reports whether every job submitted to the Pool is done.
func (p *Pool) Idle() bool {
	for _, c := range p.chans {
		c.mu.Lock()
		issued := c.issued
		c.mu.Unlock()
		if atomic.LoadUint64(c.ctr) < issued {
			return false
		}
	}
	return true
}

// Close stops the channels (completion queue off, ring reset), unmaps
// their register blocks and gives them back. Call it only once every
// ticket is done (Idle): the host memory is the caller's to free after
// Close returns. Close is idempotent.
func (p *Pool) Close() error {
	if p.chans == nil {
		return nil
	}
	for _, c := range p.chans {
		c.set(regCQConfig, 0)
		c.set(g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG, g3.PQM_DESC_SUBMIT_MODE_PI_CI_IN_MEM)
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

func (p *Pool) unmapAll() error {
	var errs []error
	for _, c := range p.chans {
		if c.block != nil {
			if err := p.dev.UnmapBlock(c.block); err != nil {
				errs = append(errs, fmt.Errorf("pqm: unmap channel %d: %w", c.id, err))
			}
			c.block = nil
		}
	}
	return errors.Join(errs...)
}
