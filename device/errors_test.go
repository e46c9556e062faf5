package device

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/sim"
	"golang.org/x/sys/unix"
)

// TestClosedObjects: calls on a closed Device or Notifier fail with an
// error matching os.ErrClosed.
func TestClosedObjects(t *testing.T) {
	tests := []struct {
		name string
		call func(t *testing.T, d *Device) error
	}{
		{"Device.Status", func(t *testing.T, d *Device) error {
			d.Close()
			_, err := d.Status()
			return err
		}},
		{"Device.Events", func(t *testing.T, d *Device) error {
			d.Close()
			_, err := d.Events()
			return err
		}},
		{"Device.Notifier", func(t *testing.T, d *Device) error {
			d.Close()
			_, err := d.Notifier()
			return err
		}},
		{"Device.DRAMUsage", func(t *testing.T, d *Device) error {
			d.Close()
			_, err := d.DRAMUsage()
			return err
		}},
		{"Notifier.Wait", func(t *testing.T, d *Device) error {
			n, err := d.Notifier()
			if err != nil {
				t.Fatal(err)
			}
			if err := n.Close(); err != nil {
				t.Fatal(err)
			}
			_, err = n.Wait(context.Background())
			if !errors.Is(err, ErrNotifierClosed) {
				t.Errorf("%v, want ErrNotifierClosed", err)
			}
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := openSim(testSystem(t, sim.Default(sim.Gaudi2, 1)).Device(0))
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			err = tt.call(t, d)
			if !errors.Is(err, os.ErrClosed) {
				t.Errorf("%v, want an error matching os.ErrClosed", err)
			}
		})
	}
}

// TestNotOperational: a device that is not operational answers ioctls
// with EBUSY, which matches ioctl.ErrNotOperational and not
// ioctl.ErrDeviceBusy (that is for an open of a device another process
// owns); opening it answers EPERM, which matches ErrNotOperational too,
// and the open of the first free device skips it.
func TestNotOperational(t *testing.T) {
	s := testSystem(t, sim.Default(sim.Gaudi2, 2))
	d, err := openSim(s.Device(0))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s.Device(0).SetState(sim.InReset)
	_, err = d.io.CBUsage(1)
	if !errors.Is(err, ioctl.ErrNotOperational) || !errors.Is(err, unix.EBUSY) || errors.Is(err, ioctl.ErrDeviceBusy) {
		t.Errorf("CB INFO in reset: %v, want ErrNotOperational and EBUSY, not ErrDeviceBusy", err)
	}
	s.Device(0).SetState(sim.Operational)

	s.Device(1).SetState(sim.Malfunction)
	_, err = openSim(s.Device(1))
	if !errors.Is(err, ioctl.ErrNotOperational) || !errors.Is(err, unix.EPERM) || errors.Is(err, ioctl.ErrDeviceBusy) {
		t.Errorf("open of a malfunctioning device: %v, want ErrNotOperational and EPERM", err)
	}
	if !unavailable(err) {
		t.Errorf("open of a malfunctioning device: %v is not skipped by Open", err)
	}
	_, err = openSim(s.Device(0))
	if !errors.Is(err, ioctl.ErrDeviceBusy) || errors.Is(err, ioctl.ErrNotOperational) || !unavailable(err) {
		t.Errorf("open of an owned device: %v, want ErrDeviceBusy only", err)
	}
}
