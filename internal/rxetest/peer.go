package rxetest

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// Peer is a perftest process (ib_write_bw, ib_write_lat, ...) a test runs
// against or beside its own side. Its fields are read once Exited is
// closed; it is not for concurrent use before then.
type Peer struct {
	Name   string
	exited chan struct{} // closed once it exited and its output is logged
	err    error         // its exit status, once exited is closed
	out    bytes.Buffer  // its output, to read once exited is closed
}

// StartPeer starts the binary name (looked up in $PATH; missing, the test
// is skipped or failed, SkipOrFail) with args. Its output is logged when
// it exits; ctx's end kills it, and the test's cleanup waits for that
// log.
func StartPeer(ctx context.Context, t testing.TB, name string, args ...string) *Peer {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		SkipOrFail(t, "no "+name+" (apt-get install perftest)")
	}
	p := &Peer{Name: name, exited: make(chan struct{})}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout, cmd.Stderr = &p.out, &p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		t.Logf("%s %v:\n%s", name, args, p.out.String())
		close(p.exited)
	}()
	t.Cleanup(func() { <-p.exited })
	return p
}

// Exited is closed once the peer exited and its output was logged.
func (p *Peer) Exited() <-chan struct{} { return p.exited }

// Output is what the peer printed (stdout and stderr); call it once
// Exited is closed.
func (p *Peer) Output() string { return p.out.String() }

// Err is the peer's exit status (nil for 0); call it once Exited is
// closed.
func (p *Peer) Err() error { return p.err }

// Wait waits for the peer's exit and fails the test (through Fail) unless
// it succeeded.
func (p *Peer) Wait(t testing.TB) {
	t.Helper()
	<-p.exited
	if p.err != nil {
		p.Fail(t, fmt.Sprintf("failed: %v", p.err))
	}
}

// ClockFailed reports whether the peer gave up because it could not
// measure its cycle counter's rate: perftest's get_cpu_mhz (get_clock.c)
// fits 200 samples of cycles against gettimeofday and returns 0 when the
// fit's r^2 is below 0.9 ("Correlation coefficient r^2: ... < 0.9"), and a
// bandwidth or latency test then prints "Can't produce a report" and
// exits, before the exchange that ends its run. perftest has no option
// that skips the measurement (-F only silences the cpufreq warning);
// under QEMU's TCG on a loaded host the samples scatter. Call it once
// Exited is closed.
func (p *Peer) ClockFailed() bool {
	s := p.out.String()
	return strings.Contains(s, "Correlation coefficient r^2") || strings.Contains(s, "Can't produce a report")
}

// ErrPeerClock is the reason given when an attempt ended because the peer
// gave up on its clock (see RetryPeer).
const ErrPeerClock = "the perftest peer could not measure its clock"

// Fail ends the test once the peer exited before the exchange ended (what
// says how): a peer that gave up on its clock skips this attempt, with
// ErrPeerClock, for RetryPeer to run another; anything else fails it.
func (p *Peer) Fail(t testing.TB, what string) {
	t.Helper()
	if p.ClockFailed() {
		retrySkips.Store(t, struct{}{})
		t.Skipf("%s (%s %s): its failure, not ours; another attempt follows", ErrPeerClock, p.Name, what)
	}
	t.Fatalf("%s %s", p.Name, what)
}

// ErrPeerStuck is the reason given when an attempt ended because a pair
// of perftest processes (both theirs, none of ours) did not finish their
// exchange within its bound (see Peer.Stuck): seen once in CI, where
// ib_write_lat's client, rejected while its server was starting, ran
// again and then neither it nor its server printed a line in 90 s.
const ErrPeerStuck = "the perftest pair did not finish its exchange"

// Stuck ends the attempt whose perftest client (paired with a perftest
// server, no code of ours in the exchange) was killed after bound without
// finishing: it is skipped with ErrPeerStuck, for RetryPeer to run
// another. Call it once Exited is closed.
func (p *Peer) Stuck(t testing.TB, bound time.Duration) {
	t.Helper()
	retrySkips.Store(t, struct{}{})
	t.Skipf("%s (%s killed after %v, output %q): its failure, not ours; another attempt follows", ErrPeerStuck, p.Name, bound, p.out.String())
}

// ErrPeerRejected is the reason given when an attempt ended because a
// perftest client was rejected by its perftest server although the
// kernel showed that server listening (see Peer.Refused).
const ErrPeerRejected = "the perftest server rejected its perftest client"

// Rejected reports whether the peer's connection was rejected
// (RDMA_CM_EVENT_REJECTED). Call it once Exited is closed.
func (p *Peer) Rejected() bool {
	return strings.Contains(p.out.String(), "RDMA_CM_EVENT_REJECTED")
}

// Refused ends the attempt whose perftest client was rejected by its
// perftest server, which was listening (no code of ours in the
// exchange): skipped with ErrPeerRejected, for RetryPeer to run another
// with a new server. Running the client alone again got stuck: in CI, a
// rejected ib_write_lat client's successor and the server then sat 45 s
// without a line. Call it once Exited is closed.
func (p *Peer) Refused(t testing.TB) {
	t.Helper()
	retrySkips.Store(t, struct{}{})
	t.Skipf("%s (%s, output %q): its failure, not ours; another attempt follows", ErrPeerRejected, p.Name, p.out.String())
}

// PeerAttempts bounds the runs of a test whose perftest peer gives up on
// its clock or gets stuck.
const PeerAttempts = 3

// retrySkips holds the attempts (their testing.TB) that Peer.Fail skipped
// because the peer gave up on its clock, or Peer.Stuck because a perftest
// pair got stuck: RetryPeer runs those again, and no other skip (no rxe
// device outside the VM, say).
var retrySkips sync.Map

// RetryPeer runs run as subtests attempt_1, attempt_2, ... until one
// passes or fails; an attempt the peer ended by giving up on its clock
// (Peer.Fail skips it) or a perftest pair by getting stuck (Peer.Stuck)
// is run again, at most PeerAttempts times, and if
// every attempt ended so, the test fails saying that no verdict was
// reached. A failure of ours is never retried; a skip of another cause
// skips t.
func RetryPeer(t *testing.T, run func(t *testing.T)) {
	t.Helper()
	for i := 1; i <= PeerAttempts; i++ {
		var clock, skipped bool
		name := fmt.Sprintf("attempt_%d", i)
		ok := t.Run(name, func(t *testing.T) {
			defer func() { _, clock = retrySkips.LoadAndDelete(t); skipped = t.Skipped() }()
			run(t)
		})
		switch {
		case !ok:
			return
		case skipped && !clock:
			t.Skipf("%s was skipped", name) // no device, say: so is the test
		case !clock:
			return
		}
	}
	t.Fatalf("no verdict: in each of %d runs, %s (perftest's get_cpu_mhz: r^2 < 0.9) and exited before the exchange ended, or %s, or %s", PeerAttempts, ErrPeerClock, ErrPeerStuck, ErrPeerRejected)
}
