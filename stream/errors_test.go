package stream_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/stream"
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
		{"Signal", func(r *rig) error { _, _, err := r.s.Signal(ctx, r.down(), stream.SubmitOptions{}); return err }},
		{"Wait", func(r *rig) error { _, err := r.s.Wait(ctx, 1); return err }},
		{"Reserve", func(r *rig) error { _, err := r.s.Reserve(ctx, r.down(), 1); return err }},
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
	ctx := context.Background()
	r := newRig(t, sim.Gaudi2)
	seq, _, err := r.s.Signal(ctx, r.down(), stream.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.sys.Device(0).SetState(sim.InReset)
	defer r.sys.Device(0).SetState(sim.Operational)
	_, _, serr := r.s.Signal(ctx, r.down(), stream.SubmitOptions{})
	// Wait asks again while the device answers EBUSY (internal/submit's
	// policy), until its context ends: then it says both.
	wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, werr := r.s.Wait(wctx, seq)
	for name, err := range map[string]error{"Signal": serr, "Wait": werr} {
		if !errors.Is(err, ioctl.ErrNotOperational) || !errors.Is(err, unix.EBUSY) || errors.Is(err, ioctl.ErrDeviceBusy) {
			t.Errorf("%s in reset: %v, want ErrNotOperational and EBUSY, not ErrDeviceBusy", name, err)
		}
	}
	if !errors.Is(werr, context.DeadlineExceeded) {
		t.Errorf("Wait in reset: %v, want the context's error too", werr)
	}
}

// TestCanceledContext: a call whose context has ended does not reach the
// driver.
func TestCanceledContext(t *testing.T) {
	r := newRig(t, sim.Gaudi2)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := map[string]error{}
	_, _, calls["Signal"] = r.s.Signal(ctx, r.down(), stream.SubmitOptions{})
	_, calls["WaitForSignal"] = r.s.WaitForSignal(ctx, r.up(), 1, stream.SubmitOptions{})
	_, calls["Reserve"] = r.s.Reserve(ctx, r.down(), 1)
	_, calls["Submit"] = r.s.Submit(ctx, nil, stream.SubmitOptions{})
	_, calls["PollMulti"] = r.s.PollMulti(ctx, []uint64{1})
	_, calls["Wait"] = r.s.Wait(ctx, 1)
	for name, err := range calls {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v, want context.Canceled", name, err)
		}
	}
	// Neither the signal nor the reservation counted on the stream.
	seq, sob, err := r.s.Signal(ctxT(t), r.down(), stream.SubmitOptions{})
	if err != nil || sob.Value != 1 {
		t.Fatalf("first signal that reached the driver: %+v, %v; want value 1", sob, err)
	}
	r.wait(t, seq)
}
