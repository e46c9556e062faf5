package dma

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/leak"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// TestFaultsGaudi3BadDescriptor is the fault table's bad-packet row on a
// Gaudi3: the copy's first LIN_PDMA is a descriptor the channel cannot
// execute (Fault.BadPacket, opcode 31). What the hardware and the
// out-of-tree driver do with it (sim/pqm.go, seiError): the channel stops
// on the error (its PQM error cause, cp_undef_cmd_err), and the PDMA SEI
// event has the engine error captured, USER_ENGINE_ERR and DEVICE_RESET
// notified, and the device reset by hl_device_cond_reset. With an eventfd
// registered, as here, that reset waits for the release of the device (or
// the release watchdog): the driver ends the waits in progress with EIO
// and answers the later ones EBUSY, while the channels that did not fail
// run on. Without one, the driver hard-resets at once and kills the
// process (sim TestPQMErrorResets).
//
// The copy fails within its context, typed (ioctl.ErrNotOperational: the
// device waits to be released), never with success and never as aborted
// (no reset stopped anything); a copy after it fails the same way; what
// they use stays held, by the Engine's Close too (ErrInFlight); and once
// the device is released (which resets it) and opened again, copies move
// the bytes.
func TestFaultsGaudi3BadDescriptor(t *testing.T) {
	abandonSooner(t, 300*time.Millisecond)
	for _, call := range faultCalls {
		t.Run(call.name, func(t *testing.T) {
			x := newInflight(t, sim.Gaudi3)
			// The rings an abandoned transfer leaves mapped, on purpose,
			// come off the leak check's record once everything closed
			// (as in TestInFlightAbandon).
			rings := x.e.pqHost
			t.Cleanup(func() { leak.Unmapped(rings.Bytes()) })
			n, err := x.d.Notifier()
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close()
			x.s.Device(0).InjectFault(sim.Fault{Ioctl: "PQM", BadPacket: true})
			ctx, cancel := context.WithTimeout(context.Background(), faultCtx)
			defer cancel()
			start := time.Now()
			err = within(t, faultCtx+faultBound, call.name, func() error { return call.run(ctx, t, x) })
			if d := time.Since(start); d > faultCtx+faultBound {
				t.Errorf("the call returned after %v", d)
			}
			if !errors.Is(err, ioctl.ErrNotOperational) || errors.Is(err, ErrAborted) {
				t.Fatalf("a copy whose descriptor the channel cannot execute: %v, want ErrNotOperational, not ErrAborted", err)
			}
			if v := x.s.Device(0).PQMErrors(); v != 1 {
				t.Errorf("%d channel errors, want 1", v)
			}
			// The driver's word, as a Notifier hears it.
			awaitEvents(ctx, t, n, device.Events(hl.HL_NOTIFIER_EVENT_USER_ENGINE_ERR|hl.HL_NOTIFIER_EVENT_DEVICE_RESET))
			if !x.s.Device(0).WatchdogActive() {
				t.Error("the driver does not wait for the device's release")
			}
			// What the next copy sees: on a channel that did not fail it
			// runs, and the counter in memory says so; on the stopped one
			// it waits, and the driver answers EBUSY until the device is
			// released.
			later, cancelLater := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancelLater()
			switch err := copyVA(later, x.e, x.dst.VA(), x.host.VA(), inflightSize); {
			case err == nil:
				x.sameData(t)
			case errors.Is(err, ioctl.ErrNotOperational):
				// Held by a transfer the Engine will abandon.
				host := x.host
				t.Cleanup(func() { leak.Unmapped(host.Bytes()) })
			default:
				t.Errorf("a copy after the channel error: %v, want success or ErrNotOperational", err)
			}
			// Nothing is released under the device: not on a Close of the
			// buffer, not on the Engine's, which reports what it left.
			x.closeSrc(t)
			if err := within(t, faultCtx+faultBound, "Engine.Close", x.e.Close); !errors.Is(err, ErrInFlight) {
				t.Errorf("Engine.Close with transfers the device never reported done: %v, want ErrInFlight", err)
			}
			if x.m.Lookup(x.src.VA()).Kind != memory.DeviceMemory {
				t.Error("the source of a transfer the device never reported done was released")
			}
			if v := x.s.Device(0).Violations(); len(v) != 0 {
				t.Errorf("the strict simulator recorded %v", v)
			}
			x.releaseAndCopy(t, n)
		})
	}
}

// awaitEvents waits, within ctx, until the Notifier n has heard every
// event of want.
func awaitEvents(ctx context.Context, t *testing.T, n *device.Notifier, want device.Events) {
	t.Helper()
	var got device.Events
	for !got.Has(want) {
		ev, err := n.Wait(ctx)
		if err != nil {
			t.Fatalf("notifier events %v, want %v among them: %v", got, want, err)
		}
		got |= ev
	}
}

// releaseAndCopy closes the Notifier n, the Manager and the device, which
// releases the device and lets the reset the driver postponed run; opens
// it again (reopen); and checks that copies there and back move the
// bytes.
func (x *inflight) releaseAndCopy(t *testing.T, n *device.Notifier) {
	t.Helper()
	if err := n.Close(); err != nil {
		t.Errorf("Notifier.Close: %v", err)
	}
	x.m.Close()
	if err := x.d.Close(); err != nil {
		t.Fatalf("close the device: %v", err)
	}
	x.reopen(t)
	x.operational(t)
	host, err := x.m.AllocHost(inflightSize, memory.HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	fill(host.Bytes(), 7)
	back, err := x.m.AllocHost(inflightSize, memory.HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	dev, err := x.m.Alloc(inflightSize, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := copyVA(ctx, x.e, dev.VA(), host.VA(), inflightSize); err != nil {
		t.Fatalf("a copy after the device was released and opened again: %v", err)
	}
	if err := copyVA(ctx, x.e, back.VA(), dev.VA(), inflightSize); err != nil {
		t.Fatalf("a copy back: %v", err)
	}
	if !bytes.Equal(back.Bytes(), host.Bytes()) {
		t.Error("the copies after the reopen did not move the bytes")
	}
}

// reopen opens the rig's simulated device again, with a new Manager and
// Engine, closed when the test ends.
func (x *inflight) reopen(t *testing.T) {
	t.Helper()
	d, err := simdevice.OpenSim(x.s.Device(0))
	if err != nil {
		t.Fatalf("open the device again: %v", err)
	}
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Close()
		m.Close()
		d.Close()
	})
	x.d, x.m, x.e = d, m, e
}
