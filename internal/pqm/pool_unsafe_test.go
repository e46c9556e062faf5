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
	stall  atomic.Bool
	irqs   atomic.Int64
	waits  atomic.Int64
	stop   chan struct{}
	wg     sync.WaitGroup
}

func newFakeDev(t *testing.T, host []byte, va uint64) *fakeDev {
	d := &fakeDev{t: t, host: host, va: va, blocks: map[uint64][]byte{}, seen: map[uint64][]packet.LinPDMA{}, lastPI: map[uint64]uint32{}, stop: make(chan struct{})}
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
	// The driver reads the counter at the CPU address the wait names.
	off := a.Addr.Addr() - uint64(uintptr(unsafe.Pointer(&d.host[0])))
	ctr := (*uint64)(unsafe.Pointer(&d.host[off]))
	end := time.Now().Add(time.Duration(a.InterruptTimeoutUs) * time.Microsecond)
	for time.Now().Before(end) {
		if atomic.LoadUint64(ctr) >= a.Target {
			a.Out().Status = hl.HL_WAIT_CS_STATUS_COMPLETED
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Microsecond):
		}
	}
	a.Out().Status = hl.HL_WAIT_CS_STATUS_BUSY
	return nil
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
		for addr, b := range d.blocks {
			d.step(addr, b)
		}
		d.mu.Unlock()
	}
}

func reg(b []byte, off int) *uint32 { return (*uint32)(unsafe.Pointer(&b[off])) }

// step consumes what the channel's ring holds.
func (d *fakeDev) step(addr uint64, b []byte) {
	ld := func(off int) uint32 { return atomic.LoadUint32(reg(b, off)) }
	// The mode written resets the ring's counters; the fake marks a value
	// it took with bit 31, as the simulator does, to see the next write.
	const seen = 1 << 31
	cfg := ld(g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG)
	if cfg&seen == 0 {
		// PI goes to 0 too, unless the owner wrote a new one already.
		sw := atomic.CompareAndSwapUint32(reg(b, g3.PDMA_CH_A_PQM_CH_MSQ_PI), d.lastPI[addr], 0)
		if false {
			d.t.Logf("reset: last PI %d, PI %d, CI %d, swapped %v", d.lastPI[addr], ld(g3.PDMA_CH_A_PQM_CH_MSQ_PI), ld(g3.PDMA_CH_A_PQM_CH_MSQ_CI), sw)
		}
		atomic.StoreUint32(reg(b, g3.PDMA_CH_A_PQM_CH_MSQ_CI), 0)
		atomic.StoreUint32(reg(b, g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG), cfg|seen)
	}
	if cfg&^seen != g3.PQM_DESC_SUBMIT_MODE_PI_CI_IN_MEM {
		return
	}
	size := uint64(ld(g3.PDMA_CH_A_PQM_CH_MSQ_SIZE)) + 1
	base := uint64(ld(g3.PDMA_CH_A_PQM_CH_MSQ_BASE_H))<<32 | uint64(ld(g3.PDMA_CH_A_PQM_CH_MSQ_BASE_L))
	pi, ci := ld(g3.PDMA_CH_A_PQM_CH_MSQ_PI), ld(g3.PDMA_CH_A_PQM_CH_MSQ_CI)
	d.lastPI[addr] = pi
	ring := d.at(base, int(size))
	for ci != pi {
		p, n, err := packet.Gaudi3PQM.Decode(ring[uint64(ci)%size:])
		if err != nil {
			d.t.Errorf("channel %#x: packet at CI %d (PI %d): %v: % x", addr, ci, pi, err, ring[uint64(ci)%size:min(size, uint64(ci)%size+48)])
			return
		}
		ci += uint32(n)
		switch l := p.(type) {
		case packet.LinPDMA:
			d.seen[addr] = append(d.seen[addr], l)
			if l.WriteCompletion {
				d.t.Errorf("LIN_PDMA %v with a write completion", l)
			}
			if l.AdvanceCompletionQueue {
				d.advanceCQ(b)
			}
		case packet.MsgLong:
			d.t.Errorf("MSG_LONG %v: the completion needs no message", l)
		}
		atomic.StoreUint32(reg(b, g3.PDMA_CH_A_PQM_CH_MSQ_CI), ci)
	}
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
