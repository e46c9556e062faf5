package stream_test

import (
	"context"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/stream"
)

// TestWaitSeqZero: sequence 0 is never given out (hl_ctx_init starts
// cs_sequence at 1), so hl_ctx_get_fence finds an empty slot and the
// driver reports the CS as gone; a wait CS on signal 0 is a signal
// already finished (cs_ioctl_signal_wait). The simulator used to crash
// on both.
func TestWaitSeqZero(t *testing.T) {
	r := newRig(t, sim.Gaudi2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := r.s.Wait(ctx, 0)
	if err != nil || !c.Gone {
		t.Errorf("Wait(0) = %+v, %v; want a gone completion", c, err)
	}
	seq, err := r.s.WaitForSignal(ctx, r.queue(0), 0, stream.SubmitOptions{})
	if err != nil || seq != stream.NoSeq {
		t.Errorf("WaitForSignal(0, 0) = %#x, %v; want NoSeq, nil", seq, err)
	}
}
