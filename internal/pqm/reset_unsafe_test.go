package pqm

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/packet"
	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// statusOnly answers a wait as a driver writing only out.status would,
// and keeps the arguments it was given.
type statusOnly struct {
	*fakeDev
	args atomic.Pointer[hl.WaitCSInterruptArgs]
}

func (d *statusOnly) WaitInterrupt(ctx context.Context, a *hl.WaitCSInterruptArgs) error {
	d.args.Store(a)
	a.Out().Status = hl.HL_WAIT_CS_STATUS_COMPLETED
	return nil
}

// TestWaitArgsHoldNoPointer: once a wait returns, the arguments it used
// (which Pool.wait keeps for the next wait) hold nothing in their pointer
// word: not the counter's address, not half of it under a status.
func TestWaitArgsHoldNoPointer(t *testing.T) {
	host, va := hostMem(HostBytes(1, 4096))
	d := &statusOnly{fakeDev: newFakeDev(t, host, va)}
	d.stall.Store(true)
	p, err := Open(Config{Dev: d, Key: new(int), Mask: 1, Channels: 1, Ring: 4096, Interrupt: 71, Doorbell: g3.D0_PCIE_MSIX_BASE}, host, va)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	j := NewJob()
	j.Add(packet.LinPDMA{Src: 1, Dst: 2, Size: 3})
	tk, err := p.Channels()[0].Submit(context.Background(), j, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	p.Wait(context.Background(), tk, time.Now().Add(time.Millisecond))
	a := d.args.Load()
	if a == nil {
		t.Fatal("no wait reached the device")
	}
	if w := *(*uint64)(unsafe.Pointer(a)); w != 0 {
		t.Errorf("after the wait its arguments' pointer word holds %#x (the counter is at %p)", w, p.Channels()[0].word)
	}
}

// TestFakeAnswersLikeDriver: the fake clears the whole union before it
// answers, as the driver's hl_interrupt_wait_ioctl does.
func TestFakeAnswersLikeDriver(t *testing.T) {
	host, va := hostMem(64)
	d := newFakeDev(t, host, va)
	a := new(hl.WaitCSInterruptArgs)
	*a = hl.WaitCSInterruptArgs{Addr: hl.NewPointer(unsafe.Pointer(&host[0])), Target: 1, InterruptTimeoutUs: 100}
	if err := d.WaitInterrupt(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if w := *(*uint64)(unsafe.Pointer(a)); w != uint64(hl.HL_WAIT_CS_STATUS_BUSY) {
		t.Errorf("the fake's answer leaves %#x in the pointer word, want the status %d alone", w, hl.HL_WAIT_CS_STATUS_BUSY)
	}
}

// TestResetBeforeOpen: a device reset before the Pool opened is no reset
// of its jobs: a submission that waits more than a wait slice for room
// completes.
func TestResetBeforeOpen(t *testing.T) {
	p, d := openPoolResets(t, 1, 4096, 1)
	c := p.Channels()[0]
	j := NewJob()
	for j.Len() < 40 { // 960 bytes: four fill the ring but 256 bytes
		j.Add(packet.LinPDMA{Src: 1, Dst: 2, Size: 3})
	}
	d.stall.Store(true)
	for k := 0; k < 4; k++ {
		if _, err := c.Submit(context.Background(), j, time.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	time.AfterFunc(2*waitSlice, func() { d.stall.Store(false) })
	tk, err := c.Submit(context.Background(), j, time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatalf("a submission waiting for room after an old reset: %v", err)
	}
	if err := p.Wait(context.Background(), tk, time.Now().Add(10*time.Second)); err != nil {
		t.Errorf("its job: %v", err)
	}
}

// TestSubmitHonoursCtx: while one submission waits for ring room, another
// on the channel returns when its own context ends.
func TestSubmitHonoursCtx(t *testing.T) {
	p, d := openPool(t, new(int), 1, 1, 4096)
	c := p.Channels()[0]
	d.stall.Store(true)
	j := NewJob()
	for j.Len() < 40 { // 960 bytes: four fill the ring but 256 bytes
		j.Add(packet.LinPDMA{Src: 1, Dst: 2, Size: 3})
	}
	var last Ticket
	for k := 0; k < 4; k++ {
		tk, err := c.Submit(context.Background(), j, time.Now().Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		last = tk
	}
	// The jobs are done before the Pool closes (its Close disables the
	// completion queue the fake would count them in).
	defer func() {
		d.stall.Store(false)
		if err := p.Wait(context.Background(), last, time.Now().Add(10*time.Second)); err != nil {
			t.Error(err)
		}
	}()
	first := make(chan error, 1)
	go func() {
		_, err := c.Submit(context.Background(), j, time.Now().Add(time.Second))
		first <- err
	}()
	// Wait for the first submission to be waiting on the device.
	for n := d.waits.Load(); d.waits.Load() == n; {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Submit(ctx, j, time.Time{})
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the second submission: %v, want its context's end", err)
	}
	select {
	case <-first:
		t.Errorf("the second submission returned after the first (in %v): it waited for the channel's lock", took)
	default:
		<-first
	}
}

// TestAbortedStaysAborted: a job a reset killed reports it, even after a
// later Submit restarted the channel, and the driver's own ABORTED answer
// makes the next Submit set the channel up again.
func TestAbortedStaysAborted(t *testing.T) {
	p, d := openPoolResets(t, 1, 4096, 0)
	c := p.Channels()[0]
	d.stall.Store(true)
	j := NewJob()
	j.Add(packet.LinPDMA{Src: 1, Dst: 2, Size: 3})
	a, _ := c.Submit(context.Background(), j, time.Time{})
	b, _ := c.Submit(context.Background(), j, time.Time{})
	d.reset(c)
	d.stall.Store(false)
	// The driver answers the wait ABORTED (its reset count read fails).
	d.failResets.Store(true)
	if err := p.Wait(context.Background(), a, time.Time{}); !errors.Is(err, unix.EIO) {
		t.Fatalf("a job a reset killed: %v, want EIO", err)
	}
	d.failResets.Store(false)
	later, err := c.Submit(context.Background(), j, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(context.Background(), b, time.Now().Add(time.Second)); !errors.Is(err, unix.EIO) {
		t.Errorf("a killed job after the channel restarted: %v, want EIO", err)
	}
	if b.Done() {
		t.Error("a killed job reports done")
	}
	if err := p.Wait(context.Background(), later, time.Now().Add(5*time.Second)); err != nil {
		t.Errorf("the first job after the reset: %v", err)
	}
}

// TestAbortWithoutReset: the driver also ends the waits in progress
// (hl_abort_waiting_for_completions, EIO or ABORTED) when it postpones a
// reset behind the release watchdog (hl_device_cond_reset with an eventfd
// registered: a channel error on Gaudi3), and then resets nothing until
// the device is released: the channels run on. A job whose wait was
// aborted while the reset count did not move is not known killed: its
// wait says the device is not operational, the ticket is neither done nor
// killed, and once the job completes its wait reports it done.
func TestAbortWithoutReset(t *testing.T) {
	p, d := openPoolResets(t, 1, 4096, 3)
	c := p.Channels()[0]
	d.stall.Store(true)
	j := NewJob()
	j.Add(packet.LinPDMA{Src: 1, Dst: 2, Size: 3})
	tk, err := c.Submit(context.Background(), j, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	d.abortWaits.Store(1) // the postponed reset's abort; the count stays
	err = p.Wait(context.Background(), tk, time.Time{})
	if errors.Is(err, unix.EIO) || !errors.Is(err, ioctl.ErrNotOperational) {
		t.Errorf("a wait the driver aborted without a reset: %v, want ErrNotOperational, not EIO", err)
	}
	if done, killed := tk.state(); done || killed {
		t.Errorf("after an abort without a reset the job reads done %v, killed %v; want neither", done, killed)
	}
	d.stall.Store(false)
	if err := p.Wait(context.Background(), tk, time.Now().Add(10*time.Second)); err != nil {
		t.Errorf("the job the abort left running: %v, want done", err)
	}
}
