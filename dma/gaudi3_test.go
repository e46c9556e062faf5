package dma

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/internal/leak"
	"github.com/gaudi-go/gaudi/internal/pqm"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/sim"
	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
)

// TestGaudi3Channels: Engines on one Gaudi3 claim distinct user channels
// (never the driver's KDMA channel), as many as Options.Streams, and give
// them back on Close; a process that asks for more than there are gets
// an error.
func TestGaudi3Channels(t *testing.T) {
	r := newRig(t, sim.Gaudi3, Options{Streams: 4})
	mask := r.d.HWIPInfo().PDMAUserChannelMask
	if mask == 0 || mask&(1<<g3.KDMA_CH_ID) != 0 {
		t.Fatalf("the simulated Gaudi3 gives users channels %#x", mask)
	}
	key := any(r.e.io)
	held := map[int]bool{}
	for _, ch := range r.e.Channels() {
		held[ch] = true
	}
	if len(held) != 4 {
		t.Fatalf("an Engine with Streams 4 claimed %v", r.e.Channels())
	}
	var more []*Engine
	for {
		e, err := New(r.m, Options{Streams: 4})
		if err != nil {
			if !errors.Is(err, pqm.ErrNoChannel) {
				t.Fatalf("New once the channels ran out: %v, want pqm.ErrNoChannel", err)
			}
			break
		}
		more = append(more, e)
		for _, ch := range e.Channels() {
			if held[ch] || mask&(1<<ch) == 0 {
				t.Fatalf("channel %d given twice or not the user's (mask %#x)", ch, mask)
			}
			held[ch] = true
		}
		if len(more) > 8 {
			t.Fatal("more Engines than channels")
		}
	}
	if got := pqm.Claimed(key); got != mask {
		t.Errorf("claimed %#x, want every user channel %#x", got, mask)
	}
	for _, e := range more {
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	e, err := New(r.m, Options{})
	if err != nil {
		t.Fatalf("New after the others closed: %v", err)
	}
	defer e.Close()
	if len(e.Channels()) != 2 {
		t.Errorf("a default Engine claimed %v, want 2 channels", e.Channels())
	}
}

// TestGaudi3Striping: a copy from the stripe size up is spread over the
// Engine's channels, and each channel completes its share.
func TestGaudi3Striping(t *testing.T) {
	r := newRig(t, sim.Gaudi3, Options{Streams: 3, StripeSize: 1 << 20})
	const n = 6 << 20
	h, _ := r.m.AllocHost(n, memory.HostOptions{})
	out, _ := r.m.AllocHost(n, memory.HostOptions{})
	buf, _ := r.m.Alloc(n, memory.AllocOptions{})
	fill(h.Bytes(), 3)
	dev := buf.Range(0, n)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before := make([]uint64, 3)
	for i, c := range r.e.pq.Channels() {
		before[i] = c.Completed()
	}
	if err := r.e.CopyToDevice(ctx, dev, h.All()); err != nil {
		t.Fatal(err)
	}
	for i, c := range r.e.pq.Channels() {
		if c.Completed() == before[i] {
			t.Errorf("channel %d completed no share of a striped copy", c.ID())
		}
	}
	if err := r.e.CopyToHost(ctx, out.All(), dev); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), h.Bytes()) {
		t.Error("a striped round trip corrupted the data")
	}
	if v := r.s.Device(0).PQMErrors(); v != 0 {
		t.Errorf("the simulator counted %d channel errors", v)
	}
}

// TestGaudi3Packets: the ring holds LIN_PDMA packets with the direction
// the copy needs, the last of a job advancing the channel's completion
// queue, which is set up to count in host memory and raise the Engine's
// interrupt through the MSI-X doorbell.
func TestGaudi3Packets(t *testing.T) {
	r := newRig(t, sim.Gaudi3, Options{Streams: 1})
	h, _ := r.m.AllocHost(8192, memory.HostOptions{})
	buf, _ := r.m.Alloc(3*4096, memory.AllocOptions{})
	ctx := context.Background()
	if err := r.e.CopyToDevice(ctx, buf.Range(0, 4096), h.Range(0, 4096)); err != nil {
		t.Fatal(err)
	}
	if err := r.e.CopyToHost(ctx, h.Range(4096, 4096), buf.Range(0, 4096)); err != nil {
		t.Fatal(err)
	}
	if err := r.e.Memset(ctx, buf.Range(4096, 4096), 0x0102030405060708); err != nil {
		t.Fatal(err)
	}
	if err := r.e.CopyOnDevice(ctx, buf.Range(8192, 4096), buf.Range(0, 4096)); err != nil {
		t.Fatal(err)
	}
	var got []packet.Packet
	if err := packet.Gaudi3PQM.Walk(r.e.pq.Channels()[0].RingBytes(), func(_ int, p packet.Packet) error {
		if _, nop := p.(packet.Nop); !nop {
			got = append(got, p)
		}
		return nil
	}); err != nil && len(got) < 3 {
		t.Fatalf("walking the ring: %v", err)
	}
	if len(got) < 4 {
		t.Fatalf("%d packets in the ring, want 4", len(got))
	}
	// The direction bit is set for host-to-device transfers only, as
	// Habana's Gaudi3 tests set it (hl-thunk's gaudi3_is_pdma_direction_down:
	// host to DRAM or SRAM); a fill and a device-to-device copy leave it clear.
	want := []struct {
		dst, src  uint64
		h2d, fill bool
	}{
		{buf.VA(), h.VA(), true, false},
		{h.VA() + 4096, buf.VA(), false, false},
		{buf.VA() + 4096, 0x0102030405060708, false, true},
		{buf.VA() + 8192, buf.VA(), false, false},
	}
	for i, w := range want {
		l, ok := got[i].(packet.LinPDMA)
		if !ok || l.Dst != w.dst || l.Src != w.src || l.Size != 4096 || l.HostToDevice != w.h2d || l.Memset != w.fill ||
			!l.AdvanceCompletionQueue || l.WriteCompletion {
			t.Errorf("packet %d is %v, want dst %#x src %#x h2d %v memset %v advancing the completion queue", i, got[i], w.dst, w.src, w.h2d, w.fill)
		}
	}
	c := r.e.pq.Channels()[0]
	regs := c.Registers()
	ld := func(off int) uint32 { return binary.LittleEndian.Uint32(regs[off:]) }
	if cfg, irq, db := ld(g3.PDMA_CH_A_ECMPLTN_Q_CH_CFG), ld(g3.PDMA_CH_A_ECMPLTN_Q_LBW_PAYLD),
		uint64(ld(g3.PDMA_CH_A_ECMPLTN_Q_LBW_ADDR_H))<<32|uint64(ld(g3.PDMA_CH_A_ECMPLTN_Q_LBW_ADDR_L)); cfg != 0x7 ||
		irq != uint32(r.d.HWIPInfo().FirstUserInterrupt) || db != g3.D0_PCIE_MSIX_BASE {
		t.Errorf("completion queue: CH_CFG %#x, interrupt %d to %#x; want 0x7, %d to the MSI-X doorbell", cfg, irq, db, r.d.HWIPInfo().FirstUserInterrupt)
	}
	if n, pi := c.Completed(), ld(g3.PDMA_CH_A_ECMPLTN_Q_BASE_PI); n != 4 || pi != 4 {
		t.Errorf("counter %d, ECMPLTN_Q_BASE_PI %d; want 4 jobs", n, pi)
	}
}

// TestGaudi3Timeout: a transfer the channel does not finish by its
// deadline fails with an error matching ioctl.ErrTimeout, like a CS the
// driver timed out; but no driver halts the channel, so its memory stays
// held until the channel finishes it.
func TestGaudi3Timeout(t *testing.T) {
	x := newInflight(t, sim.Gaudi3)
	x.stall(t)
	b := x.e.NewBatch(BatchOptions{Timeout: 200 * time.Millisecond})
	if err := b.CopyAddr(x.dst.VA(), x.src.VA(), inflightSize); err != nil {
		t.Fatal(err)
	}
	tr, err := b.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	err = within(t, 10*time.Second, "Transfer.Wait", func() error { return tr.Wait(context.Background()) })
	if !errors.Is(err, ioctl.ErrTimeout) {
		t.Fatalf("Wait past the batch's timeout: %v, want ioctl.ErrTimeout", err)
	}
	if err := tr.Wait(context.Background()); !errors.Is(err, ioctl.ErrTimeout) {
		t.Errorf("the second Wait: %v, want the same timeout", err)
	}
	x.closeSrc(t)
	x.heldUntilReaped(t, "the source of a timed-out transfer was freed while its channel may still read it")
	x.check(t)
}

// TestGaudi3CloseBound: Engine.Close waits for work in flight as long as
// the Engine's timeout, then gives up: ErrInFlight, with the memory, the
// rings and the channels left allocated rather than freed under a DMA.
func TestGaudi3CloseBound(t *testing.T) {
	r := newRig(t, sim.Gaudi3, Options{Timeout: 300 * time.Millisecond})
	h, _ := r.m.AllocHost(inflightSize, memory.HostOptions{})
	src, _ := r.m.Alloc(inflightSize, memory.AllocOptions{})
	// The rings of a given-up Engine and the host memory its transfer
	// reads stay mapped for good, on purpose; this takes them off the
	// record of mappings for the leak check.
	rings := r.e.pqHost
	t.Cleanup(func() { leak.Unmapped(rings.Bytes()); leak.Unmapped(h.Bytes()) })
	for _, c := range r.e.pq.Channels() {
		if err := c.Stall(0); err != nil {
			t.Fatal(err)
		}
	}
	chans := r.e.pq.Channels()
	t.Cleanup(func() {
		for _, c := range chans {
			c.Resume(0)
		}
	})
	tr, err := startCopyVA(r.e, src.VA(), h.VA(), inflightSize)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = within(t, 10*time.Second, "Engine.Close", r.e.Close)
	if !errors.Is(err, ErrInFlight) {
		t.Errorf("Engine.Close with a job that never completes: %v, want ErrInFlight", err)
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 5*time.Second {
		t.Errorf("Close gave up after %v; its bound is 300 ms", d)
	}
	if err := tr.Err(); !errors.Is(err, ErrInFlight) {
		t.Errorf("the given-up transfer: %v, want ErrInFlight", err)
	}
	if r.m.Lookup(src.VA()).Kind != memory.DeviceMemory || r.m.Lookup(rings.VA()).Kind != memory.HostMemory {
		t.Error("the memory or the rings of a job still in flight were freed")
	}
	if pqm.Claimed(any(r.e.io)) == 0 {
		t.Error("the channels of a job still in flight were given back")
	}
}
