package stream_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/sim"
	"golang.org/x/sys/unix"
)

// TestClosedObjects: the calls of a Streams whose device was closed fail
// with an error matching os.ErrClosed.
func TestClosedObjects(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		call func(r *rig) error
	}{
		{"Signal", func(r *rig) error { _, _, err := r.s.Signal(r.down()); return err }},
		{"Wait", func(r *rig) error { _, err := r.s.Wait(ctx, 1); return err }},
		{"Reserve", func(r *rig) error { _, err := r.s.Reserve(r.down(), 1); return err }},
		{"AllocTimestamps", func(r *rig) error { _, err := r.s.AllocTimestamps(1); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, sim.Gaudi2)
			r.close()
			if err := tt.call(r); !errors.Is(err, os.ErrClosed) {
				t.Errorf("%v, want an error matching os.ErrClosed", err)
			}
		})
	}
}

// TestNotOperational: while the device is in reset, submissions and waits
// fail with EBUSY, which matches ioctl.ErrNotOperational and not
// ioctl.ErrDeviceBusy.
func TestNotOperational(t *testing.T) {
	r := newRig(t, sim.Gaudi2)
	seq, _, err := r.s.Signal(r.down())
	if err != nil {
		t.Fatal(err)
	}
	r.sys.Device(0).SetState(sim.InReset)
	defer r.sys.Device(0).SetState(sim.Operational)
	_, _, serr := r.s.Signal(r.down())
	_, werr := r.s.Wait(context.Background(), seq)
	for name, err := range map[string]error{"Signal": serr, "Wait": werr} {
		if !errors.Is(err, ioctl.ErrNotOperational) || !errors.Is(err, unix.EBUSY) || errors.Is(err, ioctl.ErrDeviceBusy) {
			t.Errorf("%s in reset: %v, want ErrNotOperational and EBUSY, not ErrDeviceBusy", name, err)
		}
	}
}
