package dma

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/leak"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// TestFaultsGaudi2PostponedReset: a CS the driver times out (TDR) while
// the process registered an eventfd, as a Notifier does. The driver's
// cs_timedout asks hl_device_cond_reset for a reset, which with the
// eventfd waits for the device's release (or the release watchdog) and
// meanwhile completes every CS in flight with -EIO
// (hl_abort_waiting_for_completions, force_complete_cs in
// common/command_submission.c of 6.12) while the engines run on. So the
// EIO is not the CS's end: the copy here is still queued on the stalled
// engines. The wait must fail typed (ioctl.ErrNotOperational, not
// ErrAborted), the closed source stay allocated, the Engine's Close
// report what it could not release (ErrInFlight), and once the device is
// released (which resets it) and opened again, copies move the bytes.
// dma took the EIO for the reset itself and freed the source under the
// queued CS before: "the source was freed while its CS is still queued".
func TestFaultsGaudi2PostponedReset(t *testing.T) {
	abandonSooner(t, 300*time.Millisecond)
	var slabs []*memory.HostBuffer // the abandoned CS's command buffers stay mapped
	t.Cleanup(func() {
		for _, h := range slabs {
			leak.Unmapped(h.Bytes())
		}
	})
	x := newInflight(t, sim.Gaudi2)
	n, err := x.d.Notifier()
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	x.stall(t)
	b := x.e.NewBatch(BatchOptions{Timeout: time.Second})
	if err := b.CopyAddr(x.dst.VA(), x.src.VA(), inflightSize); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr, err := b.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	x.e.cbs.mu.Lock()
	slabs = slices.Clone(x.e.cbs.slabs)
	x.e.cbs.mu.Unlock()
	x.closeSrc(t)
	err = within(t, 20*time.Second, "Transfer.Wait", func() error { return tr.Wait(ctx) })
	if !errors.Is(err, ioctl.ErrNotOperational) || errors.Is(err, ErrAborted) {
		t.Errorf("a copy whose CS timed out while the reset waits for the release: %v, want ErrNotOperational, not ErrAborted", err)
	}
	if !x.s.Device(0).WatchdogActive() {
		t.Error("the driver does not wait for the device's release")
	}
	awaitEvents(ctx, t, n, device.Events(hl.HL_NOTIFIER_EVENT_CS_TIMEOUT|hl.HL_NOTIFIER_EVENT_DEVICE_RESET))
	if x.m.Lookup(x.src.VA()).Kind != memory.DeviceMemory {
		t.Error("the source was freed while its CS is still queued")
	}
	if err := within(t, 20*time.Second, "Engine.Close", x.e.Close); !errors.Is(err, ErrInFlight) {
		t.Errorf("Engine.Close with a CS the device never reported done: %v, want ErrInFlight", err)
	}
	if x.m.Lookup(x.src.VA()).Kind != memory.DeviceMemory {
		t.Error("the source was freed by the Engine's Close while its CS is still queued")
	}
	// The engines resume: the CS runs on memory still held.
	x.resume(t)
	if v := x.s.Device(0).Violations(); len(v) != 0 {
		t.Errorf("the strict simulator recorded %v", v)
	}
	x.releaseAndCopy(t, n)
}
