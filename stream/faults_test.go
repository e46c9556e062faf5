package stream_test

import (
	"context"
	"errors"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/stream"
	"golang.org/x/sys/unix"
)

// TestFaults: signal and wait calls under every fault the simulator
// injects, on Gaudi and Gaudi2 (a Gaudi3 has no CS queues to signal on):
// each call returns within its context plus faultBound, with nil or an
// error that keeps the fault's errno, never the context's error for a
// fault the device answered.
func TestFaults(t *testing.T) {
	const faultCtx, faultBound = 2 * time.Second, time.Second
	faults := []struct {
		name  string
		fault sim.Fault
		n     int
		want  func(error) bool // besides nil
	}{
		{"submit EAGAIN storm", sim.Fault{Ioctl: "CS", Errno: unix.EAGAIN}, 20, func(err error) bool { return errors.Is(err, unix.EAGAIN) }},
		{"submit ENOMEM", sim.Fault{Ioctl: "CS", Errno: unix.ENOMEM}, 1, func(err error) bool { return errors.Is(err, unix.ENOMEM) }},
		{"submit EIO", sim.Fault{Ioctl: "CS", Errno: unix.EIO}, 1, func(err error) bool { return errors.Is(err, unix.EIO) }},
		{"wait EINTR storm", sim.Fault{Ioctl: "WAIT_CS", Errno: unix.EINTR}, 20, func(err error) bool { return false }},
		{"wait EIO", sim.Fault{Ioctl: "WAIT_CS", Errno: unix.EIO}, 1, func(err error) bool { return errors.Is(err, unix.EIO) }},
		// EBUSY from WAIT_CS says nothing about the CS (the device is not
		// operational, hl_wait_ioctl): the wait asks again until the driver
		// gives the CS's verdict (internal/submit's retry policy).
		{"wait EBUSY storm", sim.Fault{Ioctl: "WAIT_CS", Errno: unix.EBUSY}, 5, func(err error) bool { return false }},
		{"wait ENOMEM", sim.Fault{Ioctl: "WAIT_CS", Errno: unix.ENOMEM}, 1, func(err error) bool { return errors.Is(err, unix.ENOMEM) }},
	}
	calls := []struct {
		name string
		run  func(ctx context.Context, r *rig) error
	}{
		{"signal", func(ctx context.Context, r *rig) error {
			seq, _, err := r.s.Signal(ctx, r.down(), stream.SubmitOptions{})
			if err != nil {
				return err
			}
			_, err = r.s.Wait(ctx, seq)
			return err
		}},
		{"wait for signal", func(ctx context.Context, r *rig) error {
			sig, _, err := r.s.Signal(ctx, r.down(), stream.SubmitOptions{})
			if err != nil {
				return err
			}
			w, err := r.s.WaitForSignal(ctx, r.up(), sig, stream.SubmitOptions{})
			if err != nil {
				return err
			}
			if w != stream.NoSeq {
				if _, err := r.s.Wait(ctx, w); err != nil {
					return err
				}
			}
			_, err = r.s.Wait(ctx, sig)
			return err
		}},
		{"wait multi", func(ctx context.Context, r *rig) error {
			seq, _, err := r.s.Signal(ctx, r.down(), stream.SubmitOptions{})
			if err != nil {
				return err
			}
			if r.asic != sim.Gaudi {
				_, err = r.s.Wait(ctx, seq)
				return err
			}
			_, err = r.s.WaitMulti(ctx, []uint64{seq})
			return err
		}},
	}
	for _, f := range faults {
		for _, a := range asics() {
			for _, c := range calls {
				t.Run(f.name+"/"+a.String()+"/"+c.name, func(t *testing.T) {
					r := newRig(t, a)
					for range f.n {
						r.sys.Device(0).InjectFault(f.fault)
					}
					ctx, cancel := context.WithTimeout(context.Background(), faultCtx)
					defer cancel()
					start := time.Now()
					done := make(chan error, 1)
					go func() { done <- c.run(ctx, r) }()
					var err error
					select {
					case err = <-done:
					case <-time.After(faultCtx + faultBound):
						t.Fatalf("the call did not return within its %v context plus %v", faultCtx, faultBound)
					}
					if d := time.Since(start); d > faultCtx+faultBound {
						t.Errorf("the call returned after %v", d)
					}
					if err != nil && (errors.Is(err, context.DeadlineExceeded) || !f.want(err)) {
						t.Errorf("the call: %v", err)
					}
					r.sys.Device(0).DisarmFaults()
				})
			}
		}
	}
}

// TestFaultsResetMidWait: a reset while Wait waits for a signal stuck
// behind a gate ends the wait within its context, with the reset's EIO
// (Wait asks again while the driver answers EBUSY during the reset).
func TestFaultsResetMidWait(t *testing.T) {
	for _, a := range asics() {
		t.Run(a.String(), func(t *testing.T) {
			r := newRig(t, a)
			first := r.firstSOB(t)
			r.run(t, r.down(), r.monitorFence(t, r.down(), first, first.mon, 1, nil))
			sig, _, err := r.s.Signal(ctxT(t), r.down(), stream.SubmitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := r.s.Wait(ctx, sig)
				done <- err
			}()
			// The event: the wait is inside WAIT_CS.
			for deadline := time.Now().Add(30 * time.Second); !inWaitCS(); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("Wait never reached WAIT_CS")
				}
			}
			r.sys.Device(0).Reset()
			select {
			case err := <-done:
				// The driver answers EBUSY while the reset is under way;
				// Wait asks again until it answers EIO.
				if !errors.Is(err, unix.EIO) {
					t.Errorf("Wait across a reset: %v, want EIO", err)
				}
			case <-time.After(3 * time.Second):
				t.Fatal("Wait did not return within its 2 s context plus 1 s after a reset")
			}
		})
	}
}

// inWaitCS reports whether a goroutine is inside the ioctl layer's WAIT_CS.
func inWaitCS() bool {
	var b strings.Builder
	pprof.Lookup("goroutine").WriteTo(&b, 2)
	return strings.Contains(b.String(), "ioctl.(*Device).WaitCS")
}
