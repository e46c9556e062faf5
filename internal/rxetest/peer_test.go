package rxetest

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestRetryPeerClock: an attempt whose peer gave up on its clock
// (perftest's "Correlation coefficient r^2 ... < 0.9", then "Can't
// produce a report") is run again, and the first attempt whose peer runs
// through ends the retries. The peer here is a shell that prints what
// perftest prints.
func TestRetryPeerClock(t *testing.T) {
	attempts := 0
	RetryPeer(t, func(t *testing.T) {
		attempts++
		script := "exit 0"
		if attempts == 1 {
			script = `echo 'Correlation coefficient r^2: 0.42 < 0.9'; echo "Can't produce a report"; exit 1`
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		p := StartPeer(ctx, t, "sh", "-c", script)
		p.Wait(t)
	})
	if attempts != 2 {
		t.Errorf("%d attempts, want 2: one the peer's clock ended, one that passed", attempts)
	}
}

// TestRetryPeerOtherSkip: a skip of another cause (no rxe device, say)
// is no reason to run the attempt again.
func TestRetryPeerOtherSkip(t *testing.T) {
	attempts := 0
	var skipped bool
	t.Run("retry", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		RetryPeer(t, func(t *testing.T) {
			attempts++
			t.Skip("no rxe device")
		})
	})
	if attempts != 1 || !skipped {
		t.Errorf("%d attempts after a skip of another cause, test skipped %v; want 1 attempt and the test skipped", attempts, skipped)
	}
}

// TestPeerClockFailed: what Peer.ClockFailed takes for perftest giving up
// on its clock, and what not.
func TestPeerClockFailed(t *testing.T) {
	for _, tc := range []struct {
		out  string
		want bool
	}{
		{"Correlation coefficient r^2: 0.42 < 0.9\n", true},
		{"Can't produce a report\n", true},
		{" 65536      200          1234.56            1200.00\n", false},
		{"Couldn't connect to 10.77.0.1:18624\n", false},
	} {
		p := &Peer{Name: "ib_send_bw", exited: make(chan struct{})}
		fmt.Fprint(&p.out, tc.out)
		close(p.exited)
		if got := p.ClockFailed(); got != tc.want {
			t.Errorf("ClockFailed with output %q = %v, want %v", tc.out, got, tc.want)
		}
	}
}
