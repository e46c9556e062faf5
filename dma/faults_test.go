package dma

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
	"golang.org/x/sys/unix"
)

// The fault table: every fault the simulator injects, on each ASIC, under
// each kind of call that blocks. Whatever the fault, a call returns
// within its context plus faultBound, work the device never did is never
// reported done (a nil error means the destination holds the source), and
// nothing the device may still touch is released before it says it is
// done: the strict simulator compares each DMA access with the unmaps that
// preceded it, so a release under a CS or job in flight shows as a
// violation, which the rig's cleanup reports. Once the Engine is closed,
// everything is released.

// faultCtx is the context each call gets.
const faultCtx = 2 * time.Second

// faultBound is what a call may take past its context: the longest pause
// of the retry policy and a reaper's handover, well below the abandon
// bound (abandonAfter).
const faultBound = 3 * time.Second

// A faultCase arms a fault on a rig before the call; during, when set,
// runs once the call is under way (a reset mid-wait).
type faultCase struct {
	name   string
	asics  []sim.ASIC
	arm    func(t *testing.T, x *inflight)
	during func(t *testing.T, x *inflight)
	// want reports whether err is a truthful outcome of the fault: nil
	// (checked against the data) or the fault's error.
	want func(err error) bool
	// again: once the call returned and the device is operational, a
	// copy on the same Engine moves the bytes (always so after a reset).
	again bool
}

// inject arms n faults of the same kind, each firing on the next matching
// call: a storm of n failures.
func inject(x *inflight, n int, f sim.Fault) {
	for range n {
		x.s.Device(0).InjectFault(f)
	}
}

func isErrno(errno unix.Errno) func(error) bool {
	return func(err error) bool { return err == nil || errors.Is(err, errno) }
}

var allASICs = []sim.ASIC{sim.Gaudi, sim.Gaudi2, sim.Gaudi3}

// faultCases are the faults of the table; resets on a Gaudi3 are
// TestFaultsGaudi3Reset's, and its bad packet (a descriptor a PDMA
// channel cannot execute) TestFaultsGaudi3BadDescriptor's.
func faultCases() []faultCase {
	aborted := func(err error) bool { return err == nil || errors.Is(err, ErrAborted) }
	return []faultCase{
		{"submit EAGAIN storm", allASICs, func(t *testing.T, x *inflight) {
			inject(x, 20, sim.Fault{Ioctl: "CS", Errno: unix.EAGAIN})
		}, nil, func(err error) bool { return err == nil || errors.Is(err, unix.EAGAIN) }, false},
		{"submit ENOMEM", allASICs, func(t *testing.T, x *inflight) {
			inject(x, 1, sim.Fault{Ioctl: "CS", Errno: unix.ENOMEM})
		}, nil, isErrno(unix.ENOMEM), false},
		{"submit EIO", allASICs, func(t *testing.T, x *inflight) {
			inject(x, 1, sim.Fault{Ioctl: "CS", Errno: unix.EIO})
		}, nil, isErrno(unix.EIO), false},
		// EIO from WAIT_CS is the driver's word that a reset aborted the
		// CS (command_submission.c, hl_wait_for_fence: fence error -EIO),
		// after which the device no longer runs it; injected alone it
		// would model a driver that lies, so the reset rows cover it.
		{"wait EBUSY storm", allASICs, func(t *testing.T, x *inflight) {
			// hl_cs_wait_ioctl on a device not operational.
			// The wait asks again until the device answers.
			inject(x, 5, sim.Fault{Ioctl: "WAIT_CS", Errno: unix.EBUSY})
		}, nil, func(err error) bool { return err == nil }, false},
		{"wait EAGAIN storm", allASICs, func(t *testing.T, x *inflight) {
			inject(x, 20, sim.Fault{Ioctl: "WAIT_CS", Errno: unix.EAGAIN})
		}, nil, func(err error) bool { return err == nil || errors.Is(err, unix.EAGAIN) }, false},
		{"wait ENOMEM", allASICs, func(t *testing.T, x *inflight) {
			inject(x, 1, sim.Fault{Ioctl: "WAIT_CS", Errno: unix.ENOMEM})
		}, nil, isErrno(unix.ENOMEM), false},
		{"wait EINTR storm", allASICs, func(t *testing.T, x *inflight) {
			inject(x, 20, sim.Fault{Ioctl: "WAIT_CS", Errno: unix.EINTR})
		}, nil, func(err error) bool { return err == nil }, false},
		{"reset mid-wait", []sim.ASIC{sim.Gaudi2}, func(t *testing.T, x *inflight) {
			x.stall(t)
		}, func(t *testing.T, x *inflight) {
			x.s.Device(0).Reset() // also ends the stall
			x.stalled = false
		}, aborted, false},
		{"reset during a call", []sim.ASIC{sim.Gaudi}, nil, func(t *testing.T, x *inflight) {
			x.s.Device(0).Reset()
		}, func(err error) bool {
			// A reset before the submission or the command buffer's
			// creation: the driver refuses while not operational
			// (EBUSY from the CS ioctl's sanity checks; EPERM when the
			// reset starts between them and the scheduling: hw_queue.c,
			// hl_hw_queue_schedule_cs, "device is in reset, CS rejected").
			return aborted(err) || errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EPERM)
		}, false},
		// A bad packet (opcode 31, which no ASIC defines) where the copy's
		// first packet is: never a success.
		//   - Gaudi: the driver parses external queues' command buffers
		//     and refuses an unknown packet id (gaudi_validate_cb: EINVAL).
		//   - Gaudi2: the queue meets it; the QMAN error event asks for a
		//     reset (EVENT_RESET_TYPE_COMPUTE, escalated to a hard one), which
		//     aborts the CS: EIO, ErrAborted.
		{"bad packet", []sim.ASIC{sim.Gaudi}, func(t *testing.T, x *inflight) {
			x.s.Device(0).InjectFault(sim.Fault{Ioctl: "CS", BadPacket: true})
		}, nil, func(err error) bool { return errors.Is(err, unix.EINVAL) }, true},
		{"bad packet", []sim.ASIC{sim.Gaudi2}, func(t *testing.T, x *inflight) {
			x.s.Device(0).InjectFault(sim.Fault{Ioctl: "CS", BadPacket: true})
		}, nil, func(err error) bool { return errors.Is(err, ErrAborted) && errors.Is(err, unix.EIO) }, true},
	}
}

// A faultCall is one kind of blocking call: it copies x.src to x.dst with
// ctx and returns the call's outcome.
type faultCall struct {
	name string
	run  func(ctx context.Context, t *testing.T, x *inflight) error
}

var faultCalls = []faultCall{
	{"sync copy", func(ctx context.Context, t *testing.T, x *inflight) error {
		return copyVA(ctx, x.e, x.dst.VA(), x.src.VA(), inflightSize)
	}},
	{"async copy", func(ctx context.Context, t *testing.T, x *inflight) error {
		b := x.e.NewBatch(BatchOptions{})
		if err := b.CopyAddr(x.dst.VA(), x.src.VA(), inflightSize); err != nil {
			return err
		}
		tr, err := b.Start(ctx)
		if err != nil {
			return err
		}
		return tr.Wait(ctx)
	}},
	{"batch", func(ctx context.Context, t *testing.T, x *inflight) error {
		b := x.e.NewBatch(BatchOptions{})
		half := uint64(inflightSize / 2)
		if err := b.CopyAddr(x.dst.VA(), x.src.VA(), half); err != nil {
			return err
		}
		if err := b.CopyAddr(x.dst.VA()+half, x.src.VA()+half, half); err != nil {
			return err
		}
		tr, err := b.Start(ctx)
		if err != nil {
			return err
		}
		return tr.Wait(ctx)
	}},
	{"prepared", func(ctx context.Context, t *testing.T, x *inflight) error {
		b := x.e.NewBatch(BatchOptions{})
		if err := b.CopyAddr(x.dst.VA(), x.src.VA(), inflightSize); err != nil {
			return err
		}
		p, err := b.Prepare(ctx)
		if err != nil {
			return err
		}
		defer func() {
			if err := p.Close(); err != nil {
				t.Errorf("Prepared.Close: %v", err)
			}
		}()
		return p.Run(ctx)
	}},
}

// TestFaults runs the fault table on Gaudi, Gaudi2 and Gaudi3 (without
// resets on a Gaudi3: TestFaultsGaudi3Reset).
func TestFaults(t *testing.T) {
	for _, fc := range faultCases() {
		for _, asic := range fc.asics {
			for _, call := range faultCalls {
				t.Run(fc.name+"/"+asic.String()+"/"+call.name, func(t *testing.T) {
					runFault(t, asic, fc, call)
				})
			}
		}
	}
}

// TestFaultsGaudi3Reset is the fault table's reset rows on a Gaudi3:
// a reset while the channels hold the copy, then a copy on the same
// Engine, then one on a new Engine that takes over the closed one's
// channels (the simulator's channel must take the old owner's last
// register writes before the new owner's: sim TestPQMNewOwnerAfterModeWrite).
func TestFaultsGaudi3Reset(t *testing.T) {
	fc := faultCase{"reset mid-wait", []sim.ASIC{sim.Gaudi3}, func(t *testing.T, x *inflight) {
		x.stall(t)
	}, func(t *testing.T, x *inflight) {
		x.s.Device(0).Reset()
		x.stalled = false
	}, func(err error) bool { return err == nil || errors.Is(err, ErrAborted) }, false}
	for _, call := range faultCalls {
		t.Run(call.name, func(t *testing.T) {
			x := runFault(t, sim.Gaudi3, fc, call)
			if x == nil {
				return
			}
			// A copy after the reset completes and moves the bytes.
			ctx, cancel := context.WithTimeout(context.Background(), faultCtx)
			defer cancel()
			dst, err := x.m.Alloc(inflightSize, memory.AllocOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer dst.Close()
			if err := copyVA(ctx, x.e, dst.VA(), x.host.VA(), inflightSize); err != nil {
				t.Errorf("a copy after the reset: %v", err)
			}
		})
	}
}

// runFault runs one row: arm, call (with during once the call is under
// way), check the bound, the outcome and the data, then close everything
// and check nothing was released under the device.
func runFault(t *testing.T, asic sim.ASIC, fc faultCase, call faultCall) *inflight {
	t.Helper()
	x := newInflight(t, asic)
	if fc.arm != nil {
		fc.arm(t, x)
	}
	ctx, cancel := context.WithTimeout(context.Background(), faultCtx)
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- call.run(ctx, t, x) }()
	if fc.during != nil {
		if x.stalled {
			// The copy is queued on stalled engines: wait until the
			// caller waits on the device for it.
			waitUntil(t, "a wait on the device", waitingOnDevice)
		}
		fc.during(t, x)
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(faultCtx + faultBound):
		x.resume(t)
		t.Fatalf("the call did not return within its %v context plus %v", faultCtx, faultBound)
	}
	if d := time.Since(start); d > faultCtx+faultBound {
		t.Errorf("the call returned after %v", d)
	}
	if errors.Is(err, context.DeadlineExceeded) || !fc.want(err) {
		t.Errorf("the call: %v", err)
	}
	// What the call did not provoke of a storm must not fail the checks.
	x.s.Device(0).DisarmFaults()
	if err == nil && !fc.resets() {
		x.sameData(t)
	}
	if fc.resets() || fc.again {
		// The same Engine copies again after the fault (and the reset it
		// led to), and the bytes move.
		x.operational(t)
		ctx, cancel := context.WithTimeout(context.Background(), faultCtx)
		defer cancel()
		err := within(t, faultCtx+faultBound, "a copy after the reset", func() error {
			return copyVA(ctx, x.e, x.dst.VA(), x.src.VA(), inflightSize)
		})
		if err != nil {
			t.Errorf("a copy on the same Engine after the reset: %v", err)
		} else {
			x.sameData(t)
		}
	}
	x.resume(t)
	if err := x.src.Close(); err != nil {
		t.Errorf("close the source: %v", err)
	}
	if err := within(t, faultCtx+faultBound, "Engine.Close", x.e.Close); err != nil {
		t.Errorf("Engine.Close: %v", err)
	}
	if x.m.Lookup(x.src.VA()).Kind != memory.Unknown {
		t.Error("the closed source is still mapped after Engine.Close")
	}
	if v := x.s.Device(0).Violations(); len(v) != 0 {
		t.Errorf("the strict simulator recorded %v", v)
	}
	if t.Failed() {
		return nil
	}
	e, err := New(x.m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	x.e = e
	t.Cleanup(func() { e.Close() })
	return x
}

func (fc faultCase) resets() bool { return fc.during != nil }

// operational waits until the device is operational: a reset a fault led
// to may still be under way when the call returns (the driver answers
// EBUSY meanwhile).
func (x *inflight) operational(t *testing.T) {
	t.Helper()
	waitUntil(t, "an operational device", func() bool {
		st, err := x.d.Status()
		return err == nil && st == device.StatusOperational
	})
}

// waitingOnDevice reports whether a goroutine waits on the device: in
// WAIT_CS (Gaudi, Gaudi2) or the PQM pool's Wait (Gaudi3).
func waitingOnDevice() bool {
	return goroutinesIn("ioctl.(*Device).WaitCS") || goroutinesIn("pqm.(*Pool).Wait")
}

// sameData fails the test unless the destination holds the source.
func (x *inflight) sameData(t *testing.T) {
	t.Helper()
	out, err := x.m.AllocHost(inflightSize, memory.HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	e, err := New(x.m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := copyVA(ctx, e, out.VA(), x.dst.VA(), inflightSize); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), x.host.Bytes()) {
		t.Error("the call reported success, but the destination does not hold the source")
	}
}
