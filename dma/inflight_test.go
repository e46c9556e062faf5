package dma

import (
	"bytes"
	"context"
	"errors"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/control"
	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/leak"
	"github.com/gaudi-go/gaudi/internal/pqm"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// The in-flight tests stall every Gaudi2 EDMA engine, so a device-to-device
// CS stays queued on the simulator, and check that nothing the CS uses (its
// command buffers, the memory it reads and writes) is released before the
// device reports it done, whatever the caller does meanwhile: cancel the
// wait, close the Prepared, close the buffers, close the Engine.

// gaudi2EDMAs are the engine ids of every Gaudi2 EDMA engine.
var gaudi2EDMAs = []device.Engine{
	device.Gaudi2Engine(hl.GAUDI2_DCORE0_ENGINE_ID_EDMA_0), device.Gaudi2Engine(hl.GAUDI2_DCORE0_ENGINE_ID_EDMA_1),
	device.Gaudi2Engine(hl.GAUDI2_DCORE1_ENGINE_ID_EDMA_0), device.Gaudi2Engine(hl.GAUDI2_DCORE1_ENGINE_ID_EDMA_1),
	device.Gaudi2Engine(hl.GAUDI2_DCORE2_ENGINE_ID_EDMA_0), device.Gaudi2Engine(hl.GAUDI2_DCORE2_ENGINE_ID_EDMA_1),
	device.Gaudi2Engine(hl.GAUDI2_DCORE3_ENGINE_ID_EDMA_0), device.Gaudi2Engine(hl.GAUDI2_DCORE3_ENGINE_ID_EDMA_1),
}

// inflightSize is the size of the stalled device-to-device copy.
const inflightSize = 1 << 20

// inflight is a Gaudi2 rig with a source buffer holding a known pattern
// and a zeroed destination buffer, both in device memory.
type inflight struct {
	rig
	host     *memory.HostBuffer // the pattern
	src, dst *memory.Buffer
	stalled  bool
	chans    []*pqm.Channel // the stalled channels (Gaudi3)
}

func newInflight(t *testing.T, asic sim.ASIC) *inflight {
	t.Helper()
	x := &inflight{rig: newRig(t, asic, Options{})}
	var err error
	if x.host, err = x.m.AllocHost(inflightSize, memory.HostOptions{}); err != nil {
		t.Fatal(err)
	}
	fill(x.host.Bytes(), 42)
	if x.src, err = x.m.Alloc(inflightSize, memory.AllocOptions{}); err != nil {
		t.Fatal(err)
	}
	if x.dst, err = x.m.Alloc(inflightSize, memory.AllocOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := copyVA(ctx, x.e, x.src.VA(), x.host.VA(), inflightSize); err != nil {
		t.Fatal(err)
	}
	if err := memsetVA(ctx, x.e, x.dst.VA(), 0, inflightSize); err != nil {
		t.Fatal(err)
	}
	return x
}

// forInflight runs an in-flight test on each ASIC whose engines it can
// stall: Gaudi2 (its EDMA engines) and Gaudi3 (its PDMA channels).
func forInflight(t *testing.T, f func(*testing.T, sim.ASIC)) {
	for _, asic := range []sim.ASIC{sim.Gaudi2, sim.Gaudi3} {
		t.Run(asic.String(), func(t *testing.T) { f(t, asic) })
	}
}

// stall stalls the EDMA engines (Gaudi2), or queues a FENCE that waits
// for the test on each of the Engine's PDMA channels (Gaudi3):
// device-to-device copies stay queued.
func (x *inflight) stall(t *testing.T) {
	t.Helper()
	if x.e.pq != nil {
		x.chans = x.e.pq.Channels()
		for _, c := range x.chans {
			if err := c.Stall(0); err != nil {
				t.Fatal(err)
			}
		}
	} else if err := control.StallEngines(x.d, gaudi2EDMAs...); err != nil {
		t.Fatal(err)
	}
	x.stalled = true
	t.Cleanup(func() { x.resume(t) })
}

func (x *inflight) resume(t *testing.T) {
	t.Helper()
	if !x.stalled {
		return
	}
	x.stalled = false
	if x.chans != nil {
		for _, c := range x.chans {
			c.Resume(0)
		}
		return
	}
	if err := control.ResumeEngines(x.d, gaudi2EDMAs...); err != nil {
		t.Fatal(err)
	}
}

// within runs f and fails the test when it does not return within d; it
// returns f's error, or nil after the failure.
func within(t *testing.T, d time.Duration, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Errorf("%s did not return within %v", what, d)
		return nil
	}
}

// closeSrc closes the source buffer, whose release must wait for the
// queued CS that reads it.
func (x *inflight) closeSrc(t *testing.T) {
	t.Helper()
	if err := x.src.Close(); err != nil {
		t.Errorf("close the source buffer: %v", err)
	}
	if x.m.Lookup(x.src.VA()).Kind != memory.DeviceMemory {
		t.Error("the source buffer was freed while a queued CS still reads it")
	}
}

// reuseCBs runs a host-to-device copy on the PCI DMA engines, which are
// not stalled: it takes command buffers from the pool, and would overwrite
// any that the queued CS still uses. On a Gaudi3, whose Engine has no
// engine that is not stalled, the copy goes through another Engine's
// channels.
func (x *inflight) reuseCBs(t *testing.T, e *Engine) {
	t.Helper()
	if e.pq != nil {
		other, err := New(x.m, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		e = other
	}
	spare, err := x.m.Alloc(4096, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer spare.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := copyVA(ctx, e, spare.VA(), x.host.VA(), 4096); err != nil {
		t.Errorf("a host-to-device copy while the EDMA engines are stalled: %v", err)
	}
}

// heldUntilReaped checks, on the events alone, that the closed source
// stays held until the device is done with the work that reads it. Once
// a reaper waits on the device for the stalled work, only the device's
// answer may release the source: it must still be mapped then. The engines
// then resume and the test waits for the reaper's end, the event that
// frees the source; x.check afterwards finds any release made before the
// device was done, whenever it happened, because the strict simulator
// compares each DMA access with the unmaps that preceded it
// (ViolationFreedInFlight) and an access to memory no longer mapped
// page-faults.
func (x *inflight) heldUntilReaped(t *testing.T, what string) {
	t.Helper()
	waitUntil(t, "a reaper waiting on the device for the stalled work", reaperWaiting)
	if x.m.Lookup(x.src.VA()).Kind != memory.DeviceMemory {
		t.Error(what)
	}
	x.resume(t)
	waitUntil(t, "the reaper's end", func() bool { return reapers() == 0 })
}

// waitUntil waits for an event cond reports; the bound only turns an
// event that never comes into a failure instead of a hang.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within 30s", what)
		}
	}
}

// closeEngineAcrossResume closes the Engine while the CS is queued: Close
// must not return before the engines resume and the CS completes.
func (x *inflight) closeEngineAcrossResume(t *testing.T) {
	t.Helper()
	closed := make(chan error, 1)
	go func() { closed <- x.e.Close() }()
	select {
	case err := <-closed:
		t.Errorf("Engine.Close returned (%v) while a CS was queued on stalled engines", err)
		x.resume(t)
		return
	case <-time.After(300 * time.Millisecond):
	}
	x.resume(t)
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Engine.Close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Engine.Close did not return after the engines resumed")
	}
	noReapers(t)
}

// reapers counts the goroutines waiting for abandoned transfers.
func reapers() int {
	var b strings.Builder
	pprof.Lookup("goroutine").WriteTo(&b, 1)
	return strings.Count(b.String(), "dma.(*Transfer).reap")
}

// reaperWaiting reports whether a reaper is inside the device's wait for
// its work: WAIT_CS (Gaudi, Gaudi2) or the PQM pool's Wait (Gaudi3).
func reaperWaiting() bool {
	return goroutinesIn("dma.(*Transfer).reap", "ioctl.(*Device).WaitCS") ||
		goroutinesIn("dma.(*Transfer).reap", "pqm.(*Pool).Wait")
}

// goroutinesIn reports whether a goroutine's stack holds every one of
// the functions.
func goroutinesIn(funcs ...string) bool {
	var b strings.Builder
	pprof.Lookup("goroutine").WriteTo(&b, 2)
next:
	for _, g := range strings.Split(b.String(), "\n\n") {
		for _, f := range funcs {
			if !strings.Contains(g, f) {
				continue next
			}
		}
		return true
	}
	return false
}

// noReapers fails the test when a reaper is still waiting after Close
// returned. (A reaper's goroutine drops the Engine's in-flight count only
// after reap returned, so none may be inside reap once Close returned.)
func noReapers(t *testing.T) {
	t.Helper()
	if n := reapers(); n > 0 {
		t.Errorf("%d reaper goroutine(s) outlived Engine.Close", n)
	}
}

// check verifies the end state once the CS completed: no page fault, the
// source buffer released, the destination holding the pattern, and no
// strict mode violation (memory unmapped under the queued CS, its command
// buffers rewritten before the engine fetched them).
func (x *inflight) check(t *testing.T) {
	t.Helper()
	// A CS wrongly left behind runs as soon as the engines resume: give it
	// a moment to fault.
	deadline := time.Now().Add(200 * time.Millisecond)
	for {
		pf, ok, err := x.d.PageFaultEvent()
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			t.Errorf("the device recorded an MMU page fault at %#x", pf.Addr)
			break
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for deadline := time.Now().Add(5 * time.Second); x.m.Lookup(x.src.VA()).Kind != memory.Unknown; {
		if time.Now().After(deadline) {
			t.Error("the closed source buffer was not released after the CS completed")
			break
		}
		time.Sleep(time.Millisecond)
	}
	e, err := New(x.m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	out, err := x.m.AllocHost(inflightSize, memory.HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := copyVA(ctx, e, out.VA(), x.dst.VA(), inflightSize); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), x.host.Bytes()) {
		i := 0
		for i < inflightSize && out.Bytes()[i] == x.host.Bytes()[i] {
			i++
		}
		t.Errorf("the destination differs from the source from byte %d", i)
	}
	if v := x.s.Device(0).Violations(); len(v) != 0 {
		t.Errorf("the strict simulator recorded %v", v)
	}
}

// TestInFlightPreparedCancel: Prepared.Run with a deadline on stalled
// engines returns the context's error promptly; Prepared.Close, the
// buffer's Close and Engine.Close then must not release the command
// buffers or the memory while the CS is queued.
func TestInFlightPreparedCancel(t *testing.T) { forInflight(t, testInFlightPreparedCancel) }

func testInFlightPreparedCancel(t *testing.T, asic sim.ASIC) {
	x := newInflight(t, asic)
	b := x.e.NewBatch(BatchOptions{})
	if err := b.CopyAddr(x.dst.VA(), x.src.VA(), inflightSize); err != nil {
		t.Fatal(err)
	}
	p, err := b.Prepare(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	x.stall(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = within(t, 10*time.Second, "Prepared.Run", func() error { return p.Run(ctx) })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run on stalled engines with a 50 ms deadline: %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Run returned %v after its 50 ms deadline", d)
	}
	if err := within(t, 2*time.Second, "Prepared.Close", p.Close); err != nil {
		t.Errorf("Prepared.Close: %v", err)
	}
	x.closeSrc(t)
	x.reuseCBs(t, x.e)
	x.closeEngineAcrossResume(t)
	x.check(t)
}

// TestInFlightPreparedRunAgain: after a cancelled Run, the Prepared is
// still usable: closing it releases its resources once the CS completed,
// without Engine.Close, and a Run after the resume succeeds.
func TestInFlightPreparedRunAgain(t *testing.T) { forInflight(t, testInFlightPreparedRunAgain) }

func testInFlightPreparedRunAgain(t *testing.T, asic sim.ASIC) {
	x := newInflight(t, asic)
	b := x.e.NewBatch(BatchOptions{})
	if err := b.CopyAddr(x.dst.VA(), x.src.VA(), inflightSize); err != nil {
		t.Fatal(err)
	}
	p, err := b.Prepare(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	x.stall(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := within(t, 10*time.Second, "Prepared.Run", func() error { return p.Run(ctx) }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run on stalled engines with a 50 ms deadline: %v, want context.DeadlineExceeded", err)
	}
	if err := x.src.Close(); err != nil {
		t.Fatal(err)
	}
	x.resume(t)
	if err := within(t, 30*time.Second, "Prepared.Run", func() error { return p.Run(context.Background()) }); err != nil {
		t.Errorf("Run after the resume: %v", err)
	}
	if x.m.Lookup(x.src.VA()).Kind != memory.DeviceMemory {
		t.Error("the source buffer was freed while a Prepared holds it")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	x.check(t)
}

// TestInFlightPreparedCloseWithoutEngineClose: a Prepared closed while its
// CS is queued releases its resources once the CS completes, with the
// Engine left open.
func TestInFlightPreparedCloseWithoutEngineClose(t *testing.T) {
	forInflight(t, testInFlightPreparedCloseWithoutEngineClose)
}

func testInFlightPreparedCloseWithoutEngineClose(t *testing.T, asic sim.ASIC) {
	x := newInflight(t, asic)
	b := x.e.NewBatch(BatchOptions{})
	if err := b.CopyAddr(x.dst.VA(), x.src.VA(), inflightSize); err != nil {
		t.Fatal(err)
	}
	p, err := b.Prepare(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	x.stall(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := within(t, 10*time.Second, "Prepared.Run", func() error { return p.Run(ctx) }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run on stalled engines with a 50 ms deadline: %v, want context.DeadlineExceeded", err)
	}
	if err := within(t, 2*time.Second, "Prepared.Close", p.Close); err != nil {
		t.Errorf("Prepared.Close: %v", err)
	}
	x.closeSrc(t)
	x.reuseCBs(t, x.e)
	x.heldUntilReaped(t, "the source buffer was freed while the CS was still queued")
	x.check(t)
}

// TestInFlightTransferCancel: a StartCopy Transfer whose Wait ends with
// its context keeps its resources until the CS completes, across the
// buffer's Close and Engine.Close.
func TestInFlightTransferCancel(t *testing.T) { forInflight(t, testInFlightTransferCancel) }

func testInFlightTransferCancel(t *testing.T, asic sim.ASIC) {
	x := newInflight(t, asic)
	x.stall(t)
	tr, err := startCopyVA(x.e, x.dst.VA(), x.src.VA(), inflightSize)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := within(t, 10*time.Second, "Transfer.Wait", func() error { return tr.Wait(ctx) }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on stalled engines with a 50 ms deadline: %v, want context.DeadlineExceeded", err)
	}
	x.closeSrc(t)
	x.reuseCBs(t, x.e)
	select {
	case <-tr.Done():
		t.Errorf("the transfer finished (%v) while its CS was queued", tr.Err())
	default:
	}
	x.closeEngineAcrossResume(t)
	select {
	case <-tr.Done():
	default:
		t.Error("the transfer is not done after Engine.Close")
	}
	if err := tr.Err(); err != nil {
		t.Errorf("the transfer: %v", err)
	}
	x.check(t)
}

// TestInFlightCopyCancel: Engine.Copy whose context ends returns at once;
// the transfer it leaves behind (which the caller cannot see) keeps its
// resources until the CS completes and then releases them, with the Engine
// left open.
func TestInFlightCopyCancel(t *testing.T) { forInflight(t, testInFlightCopyCancel) }

func testInFlightCopyCancel(t *testing.T, asic sim.ASIC) {
	x := newInflight(t, asic)
	x.stall(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := within(t, 10*time.Second, "Engine.Copy", func() error {
		return copyVA(ctx, x.e, x.dst.VA(), x.src.VA(), inflightSize)
	}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Copy on stalled engines with a 50 ms deadline: %v, want context.DeadlineExceeded", err)
	}
	x.closeSrc(t)
	x.reuseCBs(t, x.e)
	x.resume(t)
	x.check(t)
}

// TestInFlightBatchClose: a batch of several operations started on stalled
// engines, nobody waiting for it, and the Engine closed.
func TestInFlightBatchClose(t *testing.T) { forInflight(t, testInFlightBatchClose) }

func testInFlightBatchClose(t *testing.T, asic sim.ASIC) {
	x := newInflight(t, asic)
	x.stall(t)
	b := x.e.NewBatch(BatchOptions{})
	const half = inflightSize / 2
	if err := b.CopyAddr(x.dst.VA(), x.src.VA(), half); err != nil {
		t.Fatal(err)
	}
	if err := b.CopyAddr(x.dst.VA()+half, x.src.VA()+half, half); err != nil {
		t.Fatal(err)
	}
	tr, err := b.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	x.closeSrc(t)
	x.reuseCBs(t, x.e)
	x.closeEngineAcrossResume(t)
	if err := tr.Err(); err != nil {
		t.Errorf("the batch: %v", err)
	}
	x.check(t)
}

// TestInFlightReset: a device reset aborts the queued CS; the transfer
// fails with ErrAborted and only then releases its memory.
func TestInFlightReset(t *testing.T) { forInflight(t, testInFlightReset) }

func testInFlightReset(t *testing.T, asic sim.ASIC) {
	x := newInflight(t, asic)
	x.stall(t)
	tr, err := startCopyVA(x.e, x.dst.VA(), x.src.VA(), inflightSize)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := tr.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on stalled engines with a 50 ms deadline: %v", err)
	}
	x.closeSrc(t)
	x.s.Device(0).Reset() // the reset also ends the stall
	x.stalled = false
	err = within(t, 30*time.Second, "Transfer.Wait", func() error { return tr.Wait(context.Background()) })
	if !errors.Is(err, ErrAborted) {
		t.Errorf("Wait for a CS a reset aborted: %v, want ErrAborted", err)
	}
	if x.m.Lookup(x.src.VA()).Kind != memory.Unknown {
		t.Error("the closed source buffer was not released after the reset aborted the CS")
	}
	if pf, ok, _ := x.d.PageFaultEvent(); ok {
		t.Errorf("the device recorded an MMU page fault at %#x", pf.Addr)
	}
	if err := within(t, 30*time.Second, "Engine.Close", x.e.Close); err != nil {
		t.Errorf("Engine.Close: %v", err)
	}
}

// TestInFlightAbandon: a device that stops answering WAIT_CS with the CS's
// outcome (here: not operational, EBUSY) is given up on after
// abandonAfter: Engine.Close returns ErrInFlight instead of hanging, and
// leaves the memory allocated rather than release it under the CS.
func TestInFlightAbandon(t *testing.T) { forInflight(t, testInFlightAbandon) }

func testInFlightAbandon(t *testing.T, asic sim.ASIC) {
	abandonSooner(t, 200*time.Millisecond)
	// The command buffers of an abandoned CS stay mapped for good, on
	// purpose. Once everything is closed, this cleanup takes them off the
	// record of mappings, so the leak check (TestMain) does not report
	// them; the test process keeps the memory.
	var slabs []*memory.HostBuffer
	t.Cleanup(func() {
		for _, h := range slabs {
			leak.Unmapped(h.Bytes())
		}
	})
	x := newInflight(t, asic)
	x.stall(t)
	tr, err := startCopyVA(x.e, x.dst.VA(), x.src.VA(), inflightSize)
	if err != nil {
		t.Fatal(err)
	}
	x.e.cbs.mu.Lock()
	slabs = slices.Clone(x.e.cbs.slabs)
	x.e.cbs.mu.Unlock()
	if x.e.pqHost != nil {
		slabs = append(slabs, x.e.pqHost) // the rings
	}
	x.closeSrc(t)
	sd := x.s.Device(0)
	sd.SetState(sim.Malfunction)
	t.Cleanup(func() { sd.SetState(sim.Operational) })
	err = within(t, 30*time.Second, "Engine.Close", x.e.Close)
	if !errors.Is(err, ErrInFlight) {
		t.Errorf("Engine.Close with a CS the device never reports done: %v, want ErrInFlight", err)
	}
	if err := tr.Err(); !errors.Is(err, ErrInFlight) {
		t.Errorf("the abandoned transfer: %v, want ErrInFlight", err)
	}
	if x.m.Lookup(x.src.VA()).Kind != memory.DeviceMemory {
		t.Error("the memory of an abandoned CS was released")
	}
	if err := x.e.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// abandonSooner makes reapers give a transfer up after d of failed
// waits, instead of abandonAfter's 10 s, until the test ends.
func abandonSooner(t *testing.T, d time.Duration) {
	saved := abandonAfter
	abandonAfter = d
	t.Cleanup(func() { abandonAfter = saved })
}

// TestEngineCloseConcurrent: a second Close while the first waits for the
// device waits too.
func TestEngineCloseConcurrent(t *testing.T) { forInflight(t, testEngineCloseConcurrent) }

func testEngineCloseConcurrent(t *testing.T, asic sim.ASIC) {
	x := newInflight(t, asic)
	x.stall(t)
	if _, err := startCopyVA(x.e, x.dst.VA(), x.src.VA(), inflightSize); err != nil {
		t.Fatal(err)
	}
	x.closeSrc(t)
	first := make(chan error, 1)
	go func() { first <- x.e.Close() }()
	second := make(chan error, 1)
	go func() { second <- x.e.Close() }()
	select {
	case err := <-first:
		t.Errorf("the first Close returned (%v) while a CS was queued", err)
	case err := <-second:
		t.Errorf("the second Close returned (%v) while a CS was queued", err)
	case <-time.After(200 * time.Millisecond):
	}
	x.resume(t)
	for _, c := range []chan error{first, second} {
		select {
		case err := <-c:
			if err != nil {
				t.Errorf("Close: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Close did not return after the resume")
		}
	}
	x.check(t)
}

// TestInFlightManagerClose: closing the memory Manager under a queued CS
// releases neither the buffers the CS uses nor the host memory its
// command buffers live in (Gaudi2 user CBs); Engine.Close after it still
// waits for the device.
func TestInFlightManagerClose(t *testing.T) { forInflight(t, testInFlightManagerClose) }

func testInFlightManagerClose(t *testing.T, asic sim.ASIC) {
	x := newInflight(t, asic)
	// The destination is checked through a second Manager's view of the
	// device memory, which the closed one cannot give: keep the pattern
	// check to the page fault and the completion.
	x.stall(t)
	tr, err := startCopyVA(x.e, x.dst.VA(), x.src.VA(), inflightSize)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.m.Close(); err != nil {
		t.Errorf("Manager.Close: %v", err)
	}
	if x.m.Lookup(x.src.VA()).Kind != memory.DeviceMemory {
		t.Error("Manager.Close freed a buffer a queued CS reads")
	}
	x.closeEngineAcrossResume(t)
	if err := tr.Err(); err != nil {
		t.Errorf("the transfer: %v", err)
	}
	if pf, ok, _ := x.d.PageFaultEvent(); ok {
		t.Errorf("the device recorded an MMU page fault at %#x", pf.Addr)
	}
	if x.m.Lookup(x.src.VA()).Kind != memory.Unknown {
		t.Error("the buffers of the closed Manager were not released after the CS completed")
	}
}

// TestInFlightCopyEngineClose: an Engine closed while a Copy that nothing
// cancels waits on stalled engines. The Copy's own Transfer is in no set
// Close walks (Engine.started), yet Close must not return before the
// device is done, and the Copy then succeeds.
func TestInFlightCopyEngineClose(t *testing.T) { forInflight(t, testInFlightCopyEngineClose) }

func testInFlightCopyEngineClose(t *testing.T, asic sim.ASIC) {
	x := newInflight(t, asic)
	x.stall(t)
	copied := make(chan error, 1)
	go func() {
		copied <- x.e.CopyOnDevice(context.Background(), x.dst.Range(0, inflightSize), x.src.Range(0, inflightSize))
	}()
	waitUntil(t, "the Copy waiting on the device", func() bool {
		return goroutinesIn("dma.(*Engine).runOwned", "ioctl.(*Device).WaitCS") ||
			goroutinesIn("dma.(*Engine).runOwned", "pqm.(*Pool).Wait")
	})
	x.closeSrc(t)
	x.closeEngineAcrossResume(t)
	select {
	case err := <-copied:
		if err != nil {
			t.Errorf("the Copy: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the Copy did not return after the engines resumed")
	}
	x.check(t)
}
