package pqm

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/packet"
	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// fakeDev is a Device whose channels run their rings on a goroutine: it
// decodes the packets between MSQ_CI and MSQ_PI, records each LIN_PDMA,
// advances the channel's completion queue for one with
// advcnt_hbw_complq (ECMPLTN_Q_BASE_PI, then the 64-bit counter in host
// memory) and counts the interrupts the queue's LBW message raises (it
// moves no data). host is the Pool's host memory at device address va.
type fakeDev struct {
	t      *testing.T
	host   []byte
	va     uint64
	mu     sync.Mutex
	blocks map[uint64][]byte
	seen   map[uint64][]packet.LinPDMA // by block address
	lastPI map[uint64]uint32
	ci     map[uint64]uint32 // the channel's own consumed count, by block address
	stall  atomic.Bool
	irqs   atomic.Int64
	waits  atomic.Int64
	// resets is the device's reset count (Config.Resets of openPoolResets),
	// failResets makes reading it fail, and abortWaits is how many waits
	// the fake answers ABORTED, as the driver answers the waits a reset
	// ends.
	resets     atomic.Uint64
	failResets atomic.Bool
	abortWaits atomic.Int64
	stop       chan struct{}
	wg         sync.WaitGroup
}

func newFakeDev(t *testing.T, host []byte, va uint64) *fakeDev {
	d := &fakeDev{t: t, host: host, va: va, blocks: map[uint64][]byte{}, seen: map[uint64][]packet.LinPDMA{}, lastPI: map[uint64]uint32{}, ci: map[uint64]uint32{}, stop: make(chan struct{})}
	d.wg.Add(1)
	go d.run()
	t.Cleanup(func() { close(d.stop); d.wg.Wait() })
	return d
}

func (d *fakeDev) MapBlock(addr uint64) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b := make([]byte, g3.PDMA_CH_A_BLOCK_SIZE)
	d.blocks[addr] = b
	return b, nil
}

func (d *fakeDev) UnmapBlock(mem []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for a, b := range d.blocks {
		if &b[0] == &mem[0] {
			delete(d.blocks, a)
			return nil
		}
	}
	return errors.New("unmap of a block never mapped")
}

func (d *fakeDev) WaitInterrupt(ctx context.Context, a *hl.WaitCSInterruptArgs) error {
	d.waits.Add(1)
	// The driver reads the counter at the CPU address the wait names, then
	// clears the whole union before it writes its answer
	// (hl_interrupt_wait_ioctl: memset(args, 0, sizeof(*args))): the
	// pointer word holds the status after, never part of the address.
	off := a.Addr.Addr() - uint64(uintptr(unsafe.Pointer(&d.host[0])))
	ctr := (*uint64)(unsafe.Pointer(&d.host[off]))
	target, timeout := a.Target, time.Duration(a.InterruptTimeoutUs)*time.Microsecond
	answer := func(status uint32) {
		*a = hl.WaitCSInterruptArgs{}
		a.Out().Status = status
	}
	if d.abortWaits.Add(-1) >= 0 {
		answer(hl.HL_WAIT_CS_STATUS_ABORTED)
		return nil
	}
	end := time.Now().Add(timeout)
	for time.Now().Before(end) {
		if atomic.LoadUint64(ctr) >= target {
			answer(hl.HL_WAIT_CS_STATUS_COMPLETED)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Microsecond):
		}
	}
	answer(hl.HL_WAIT_CS_STATUS_BUSY)
	return nil
}

// reset does to channel c what a device reset does: its registers
// cleared, the reset count one more, and the next wait answered ABORTED.
func (d *fakeDev) reset(c *Channel) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for off := 0; off < len(c.block); off += 4 {
		atomic.StoreUint32(reg(c.block, off), 0)
	}
	for addr, b := range d.blocks {
		if &b[0] == &c.block[0] {
			d.ci[addr], d.lastPI[addr] = 0, 0
		}
	}
	d.resets.Add(1)
	d.abortWaits.Store(1)
}

// at returns host memory at device address va.
func (d *fakeDev) at(va uint64, n int) []byte {
	off := va - d.va
	if va < d.va || off+uint64(n) > uint64(len(d.host)) {
		d.t.Errorf("device access [%#x, +%d) outside the host memory", va, n)
		return make([]byte, n)
	}
	return d.host[off : off+uint64(n)]
}

func (d *fakeDev) run() {
	defer d.wg.Done()
	for {
		select {
		case <-d.stop:
			return
		case <-time.After(20 * time.Microsecond):
		}
		if d.stall.Load() {
			continue
		}
		d.mu.Lock()
		addrs := make([]uint64, 0, len(d.blocks))
		for addr := range d.blocks {
			addrs = append(addrs, addr)
		}
		d.mu.Unlock()
		for _, addr := range addrs {
			d.step(addr)
		}
	}
}

func reg(b []byte, off int) *uint32 { return (*uint32)(unsafe.Pointer(&b[off])) }

// step consumes what the channel's ring holds, with no lock held while it
// walks the ring. The channel's consumed count is its own (d.ci), as on
// the hardware; the registers are read once, and the step is dropped when
// FIFO_CFG changed meanwhile (the owner reset the ring under it), so the
// counts it walks between always belong to one ring.
func (d *fakeDev) step(addr uint64) {
	d.mu.Lock()
	b, ok := d.blocks[addr]
	ci, lastPI := d.ci[addr], d.lastPI[addr]
	d.mu.Unlock()
	if !ok {
		return
	}
	ld := func(off int) uint32 { return atomic.LoadUint32(reg(b, off)) }
	// The mode written resets the ring's counters; the fake marks a value
	// it took with bit 31, as the simulator does, to see the next write,
	// and marks it with a compare-and-swap so that a new mode written
	// meanwhile is not lost.
	const seen = 1 << 31
	cfgReg := reg(b, g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG)
	cfg := atomic.LoadUint32(cfgReg)
	if cfg != 0 && cfg&seen == 0 {
		// PI goes to 0 too, unless the owner wrote a new one already.
		atomic.CompareAndSwapUint32(reg(b, g3.PDMA_CH_A_PQM_CH_MSQ_PI), lastPI, 0)
		ci, lastPI = 0, 0
		atomic.StoreUint32(reg(b, g3.PDMA_CH_A_PQM_CH_MSQ_CI), 0)
		d.setCounts(addr, 0, 0)
		if !atomic.CompareAndSwapUint32(cfgReg, cfg, cfg|seen) {
			return // written again: the next step takes it
		}
		cfg |= seen
	}
	if cfg&^seen != g3.PQM_DESC_SUBMIT_MODE_PI_CI_IN_MEM {
		return
	}
	// MSQ_PI first: the owner writes the ring's base and size before a PI
	// that points into it, so these loads see them.
	pi := ld(g3.PDMA_CH_A_PQM_CH_MSQ_PI)
	size := uint64(ld(g3.PDMA_CH_A_PQM_CH_MSQ_SIZE)) + 1
	base := uint64(ld(g3.PDMA_CH_A_PQM_CH_MSQ_BASE_H))<<32 | uint64(ld(g3.PDMA_CH_A_PQM_CH_MSQ_BASE_L))
	if atomic.LoadUint32(cfgReg) != cfg {
		return // reset under the step
	}
	d.setCounts(addr, ci, pi)
	// Stalled after this PI was read, so after a stall set before the
	// submission that wrote it: the test's stall holds that job.
	if pi == ci || d.stall.Load() {
		return
	}
	if uint64(pi-ci) > size {
		return // a PI of the ring before a reset the step has not taken yet
	}
	ring := d.at(base, int(size))
	for ci != pi {
		if atomic.LoadUint32(cfgReg) != cfg {
			return
		}
		p, n, err := packet.Gaudi3PQM.Decode(ring[uint64(ci)%size:])
		if err != nil {
			d.t.Errorf("channel %#x: packet at CI %d (PI %d): %v: % x", addr, ci, pi, err, ring[uint64(ci)%size:min(size, uint64(ci)%size+48)])
			return
		}
		ci += uint32(n)
		switch l := p.(type) {
		case packet.LinPDMA:
			d.mu.Lock()
			d.seen[addr] = append(d.seen[addr], l)
			d.mu.Unlock()
			if l.WriteCompletion {
				d.t.Errorf("LIN_PDMA %v with a write completion", l)
			}
			if l.AdvanceCompletionQueue {
				d.advanceCQ(b)
			}
		case packet.MsgLong:
			d.t.Errorf("MSG_LONG %v: the completion needs no message", l)
		}
		d.setCounts(addr, ci, pi)
		atomic.StoreUint32(reg(b, g3.PDMA_CH_A_PQM_CH_MSQ_CI), ci)
	}
}

// setCounts records the channel's consumed count and the MSQ_PI it read.
func (d *fakeDev) setCounts(addr uint64, ci, pi uint32) {
	d.mu.Lock()
	d.ci[addr], d.lastPI[addr] = ci, pi
	d.mu.Unlock()
}

// advanceCQ counts a completion in the channel's completion queue as the
// simulator does: ECMPLTN_Q_BASE_PI plus one, written to the counter,
// then the LBW message.
func (d *fakeDev) advanceCQ(b []byte) {
	ld := func(off int) uint32 { return atomic.LoadUint32(reg(b, off)) }
	cfg := ld(g3.PDMA_CH_A_ECMPLTN_Q_CH_CFG)
	if cfg != g3.PDMA_CH_A_ECMPLTN_Q_CH_CFG_ENABLE|g3.PDMA_CH_A_ECMPLTN_Q_CH_CFG_COMPLTN_MODE|g3.PDMA_CH_A_ECMPLTN_Q_CH_CFG_LBW_WR_EN {
		d.t.Errorf("completion queue configured %#x, want ENABLE | COMPLTN_MODE | LBW_WR_EN", cfg)
		return
	}
	if size := ld(g3.PDMA_CH_A_ECMPLTN_Q_BASE_SIZE); size != 8 {
		d.t.Errorf("completion queue of %d bytes, want one 64-bit counter", size)
	}
	n := atomic.AddUint32(reg(b, g3.PDMA_CH_A_ECMPLTN_Q_BASE_PI), 1)
	w := d.at(uint64(ld(g3.PDMA_CH_A_ECMPLTN_Q_BASE_HI))<<32|uint64(ld(g3.PDMA_CH_A_ECMPLTN_Q_BASE_LO)), 8)
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&w[0])), uint64(n))
	lbw := uint64(ld(g3.PDMA_CH_A_ECMPLTN_Q_LBW_ADDR_H))<<32 | uint64(ld(g3.PDMA_CH_A_ECMPLTN_Q_LBW_ADDR_L))
	if lbw != g3.D0_PCIE_MSIX_BASE || ld(g3.PDMA_CH_A_ECMPLTN_Q_LBW_PAYLD) != 71 {
		d.t.Errorf("completion queue's message %#x to %#x, want interrupt 71 to the doorbell", ld(g3.PDMA_CH_A_ECMPLTN_Q_LBW_PAYLD), lbw)
	}
	d.irqs.Add(1)
}

// hostMem returns 8-byte aligned memory for a Pool, outside the Go heap's
// concerns (the fake reads it at its "device address").
func hostMem(n int) ([]byte, uint64) {
	b := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&b[0])), n), 0xFF70000000100000
}

// openPoolResets opens a Pool of n channels whose Config.Resets reads the
// fake's reset count, resetsBefore when it opens.
func openPoolResets(t *testing.T, n, ring int, resetsBefore uint64) (*Pool, *fakeDev) {
	t.Helper()
	host, va := hostMem(HostBytes(n, ring))
	d := newFakeDev(t, host, va)
	d.resets.Store(resetsBefore)
	resets := func() (uint64, error) {
		if d.failResets.Load() {
			return 0, errors.New("reset count unavailable")
		}
		return d.resets.Load(), nil
	}
	p, err := Open(Config{Dev: d, Key: new(int), Mask: 1<<n - 1, Channels: n, Ring: ring, Interrupt: 71, Doorbell: g3.D0_PCIE_MSIX_BASE, Resets: resets}, host, va)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, d
}

func openPool(t *testing.T, key any, mask uint64, n, ring int) (*Pool, *fakeDev) {
	t.Helper()
	host, va := hostMem(HostBytes(n, ring))
	d := newFakeDev(t, host, va)
	p, err := Open(Config{Dev: d, Key: key, Mask: mask, Channels: n, Ring: ring, Interrupt: 71, Doorbell: g3.D0_PCIE_MSIX_BASE}, host, va)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, d
}

func TestConfigure(t *testing.T) {
	p, d := openPool(t, new(int), 0x7FFFFF, 2, 8192)
	if got := len(p.Channels()); got != 2 {
		t.Fatalf("%d channels, want 2", got)
	}
	// Die 0's groups alternate: channel 0 (SPDMA0) then 6 (SPDMA1).
	for i, want := range []int{0, 6} {
		c := p.Channels()[i]
		if c.ID() != want {
			t.Errorf("channel %d is %d, want %d", i, c.ID(), want)
		}
		if _, ok := d.blocks[g3.PDMAChannelBlock(want)]; !ok {
			t.Errorf("channel %d's block %#x not mapped", want, g3.PDMAChannelBlock(want))
		}
		b := c.Registers()
		ld := func(off int) uint32 { return atomic.LoadUint32(reg(b, off)) }
		checks := []struct {
			name string
			off  int
			want uint32
		}{
			{"MSQ_SIZE", g3.PDMA_CH_A_PQM_CH_MSQ_SIZE, 8191},
			{"MSQ_BASE_L", g3.PDMA_CH_A_PQM_CH_MSQ_BASE_L, uint32(c.ringVA)},
			{"MSQ_BASE_H", g3.PDMA_CH_A_PQM_CH_MSQ_BASE_H, uint32(c.ringVA >> 32)},
			{"ECMPLTN_Q_BASE_LO", g3.PDMA_CH_A_ECMPLTN_Q_BASE_LO, uint32(c.wordVA)},
			{"ECMPLTN_Q_BASE_HI", g3.PDMA_CH_A_ECMPLTN_Q_BASE_HI, uint32(c.wordVA >> 32)},
			{"ECMPLTN_Q_BASE_SIZE", g3.PDMA_CH_A_ECMPLTN_Q_BASE_SIZE, 8},
			{"ECMPLTN_Q_BASE_PI", g3.PDMA_CH_A_ECMPLTN_Q_BASE_PI, 0},
			{"ECMPLTN_Q_LBW_ADDR_L", g3.PDMA_CH_A_ECMPLTN_Q_LBW_ADDR_L, uint32(g3.D0_PCIE_MSIX_BASE & 0xFFFFFFFF)},
			{"ECMPLTN_Q_LBW_ADDR_H", g3.PDMA_CH_A_ECMPLTN_Q_LBW_ADDR_H, uint32(g3.D0_PCIE_MSIX_BASE >> 32)},
			{"ECMPLTN_Q_LBW_PAYLD", g3.PDMA_CH_A_ECMPLTN_Q_LBW_PAYLD, 71},
			{"ECMPLTN_Q_CH_CFG", g3.PDMA_CH_A_ECMPLTN_Q_CH_CFG, 0x7},
		}
		if got := ld(g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG) & g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG_MODE_MASK; got != g3.PQM_DESC_SUBMIT_MODE_PI_CI_IN_MEM {
			t.Errorf("channel %d mode %d, want PI/CI in memory", want, got)
		}
		for _, k := range checks {
			if got := ld(k.off); got != k.want {
				t.Errorf("channel %d %s = %#x, want %#x", want, k.name, got, k.want)
			}
		}
	}
	if c0, c1 := p.Channels()[0], p.Channels()[1]; c1.ringVA != c0.ringVA+8192 || c0.wordVA != c0.ringVA+2*8192 || c1.wordVA != c0.wordVA+slotBytes {
		t.Errorf("rings at %#x, %#x and words at %#x, %#x: not laid out as HostBytes says", c0.ringVA, c1.ringVA, c0.wordVA, c1.wordVA)
	}
}

func TestClaims(t *testing.T) {
	key := new(int)
	mask := uint64(1<<0 | 1<<1 | 1<<6 | 1<<23) // 23 is the driver's KDMA channel
	p1, _ := openPool(t, key, mask, 2, 4096)
	p2, _ := openPool(t, key, mask, 2, 4096)
	ids := func(p *Pool) (out []int) {
		for _, c := range p.Channels() {
			out = append(out, c.ID())
		}
		return out
	}
	if a, b := ids(p1), ids(p2); len(a) != 2 || len(b) != 1 || b[0] == a[0] || b[0] == a[1] {
		t.Fatalf("pools hold %v and %v: want two and the third channel, never 23", a, b)
	}
	host, va := hostMem(HostBytes(1, 4096))
	if _, err := Open(Config{Dev: newFakeDev(t, host, va), Key: key, Mask: mask, Channels: 1, Ring: 4096}, host, va); !errors.Is(err, ErrNoChannel) {
		t.Fatalf("a third pool: %v, want ErrNoChannel", err)
	}
	// Another device has its own channels.
	if p, _ := openPool(t, new(int), mask, 1, 4096); p.Channels()[0].ID() != 0 {
		t.Errorf("another device's first channel is %d", p.Channels()[0].ID())
	}
	p1.Close()
	if got := Claimed(key); got != 1<<ids(p2)[0] {
		t.Errorf("after a Close the device holds %#x", got)
	}
	p3, _ := openPool(t, key, mask, 4, 4096)
	if len(p3.Channels()) != 2 {
		t.Errorf("after a Close a pool gets %v", ids(p3))
	}
}

// TestRing submits more jobs than the ring holds, of changing sizes, so
// that the ring wraps (with NOP padding), submissions wait for room, and,
// with a low counter limit, the channel is drained and reset; every
// packet must arrive once, in order, the last of each job completing it.
func TestRing(t *testing.T) {
	for _, lim := range []struct{ counters, targets uint64 }{{1 << 32, 1<<32 - 1}, {3 * 4096, 1<<32 - 1}, {1 << 32, 7}} {
		limit, tlimit := lim.counters, lim.targets
		old, oldT := counterLimit, targetLimit
		counterLimit, targetLimit = limit, tlimit
		p, d := openPool(t, new(int), 1, 1, 4096)
		c := p.Channels()[0]
		j := NewJob()
		var want []uint64
		ctx := context.Background()
		var last Ticket
		for k := 0; k < 200; k++ {
			j.Reset()
			for i := 0; i <= k%37; i++ {
				src := uint64(k)<<20 | uint64(i)
				if err := j.Add(packet.LinPDMA{Src: src, Dst: src + 1, Size: 8, HostToDevice: true}); err != nil {
					t.Fatal(err)
				}
				want = append(want, src)
			}
			tk, err := c.Submit(ctx, j, time.Now().Add(10*time.Second))
			if err != nil {
				t.Fatalf("job %d: %v", k, err)
			}
			if tk.Target != uint64(k)%tlimit+1 {
				t.Fatalf("job %d has target %d", k, tk.Target)
			}
			last = tk
		}
		if err := p.Wait(ctx, last, time.Now().Add(10*time.Second)); err != nil {
			t.Fatal(err)
		}
		counterLimit, targetLimit = old, oldT
		d.mu.Lock()
		seen := d.seen[g3.PDMAChannelBlock(0)]
		d.mu.Unlock()
		if len(seen) != len(want) {
			t.Fatalf("limit %d: the channel ran %d packets, want %d", limit, len(seen), len(want))
		}
		jobs := 0
		for i, s := range seen {
			if s.Src != want[i] || s.Dst != want[i]+1 || s.Size != 8 || !s.HostToDevice {
				t.Fatalf("packet %d is %v, want src %#x", i, s, want[i])
			}
			if s.AdvanceCompletionQueue {
				jobs++
				if next := i + 1; next < len(seen) && next < len(want) && want[next]>>20 == want[i]>>20 {
					t.Fatalf("completing packet %d is not its job's last", i)
				}
			}
		}
		// The fake writes the counter, which ends the Wait, before it
		// counts the interrupt message that follows, as the channel
		// does: wait for that message before counting.
		for end := time.Now().Add(10 * time.Second); d.irqs.Load() < 200 && time.Now().Before(end); {
			time.Sleep(100 * time.Microsecond)
		}
		if jobs != 200 || d.irqs.Load() != 200 || c.Completed() != (200-1)%tlimit+1 {
			t.Errorf("limit %d: %d completing packets, %d interrupts, counter %d; want 200", limit, jobs, d.irqs.Load(), c.Completed())
		}
		if !p.Idle() {
			t.Error("not idle after the last job")
		}
	}
}

func TestWaitEnds(t *testing.T) {
	p, d := openPool(t, new(int), 1, 1, 4096)
	c := p.Channels()[0]
	d.stall.Store(true)
	j := NewJob()
	j.Add(packet.LinPDMA{Src: 1, Dst: 2, Size: 3})
	tk, err := c.Submit(context.Background(), j, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := p.Wait(context.Background(), tk, time.Now().Add(30*time.Millisecond)); !errors.Is(err, ErrTimeout) || !errors.Is(err, ioctl.ErrTimeout) {
		t.Errorf("past the deadline: %v, want ErrTimeout", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	if err := p.Wait(ctx, tk, time.Time{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("the waits took %v", time.Since(start))
	}
	if p.Idle() || tk.Done() {
		t.Error("a stalled job reported done")
	}
	d.stall.Store(false)
	if err := p.Wait(context.Background(), tk, time.Time{}); err != nil || !p.Idle() {
		t.Errorf("after the stall: %v, idle %v", err, p.Idle())
	}
}

func TestJobFull(t *testing.T) {
	j := NewJob()
	var n int
	for {
		if err := j.Add(packet.LinPDMA{Src: 1, Dst: 2, Size: 3}); err != nil {
			if !errors.Is(err, ErrJobFull) {
				t.Fatal(err)
			}
			break
		}
		n++
	}
	if bytes := len(j.body) + j.last.Len(); bytes > MaxJobBytes || n != j.Len() || n != 2730 {
		t.Errorf("%d packets, %d bytes with the completion: more than MaxJobBytes", n, bytes)
	}
	if err := j.Add(packet.LinPDMA{WriteCompletion: true}); err == nil {
		t.Error("a packet with its own completion was taken")
	}
	if err := j.Add(packet.LinPDMA{AdvanceCompletionQueue: true}); err == nil {
		t.Error("a packet advancing the completion queue was taken")
	}
	p, _ := openPool(t, new(int), 1, 1, 4096)
	if _, err := p.Channels()[0].Submit(context.Background(), j, time.Time{}); !errors.Is(err, ErrJobFull) {
		t.Errorf("a job larger than a quarter of the ring: %v", err)
	}
}
