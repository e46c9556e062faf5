package main

import (
	"context"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/internal/rxetest"
)

// fakePerftest is a shell stand-in for perftest's ib_write_bw -R. The
// server (no address) listens until a client succeeded, and exits 1 when
// a client went away mid-exchange, as perftest's server does. The client
// (the address last) cannot connect without a listening server; its first
// run gives up on its clock as perftest's get_cpu_mhz does under a loaded
// TCG guest (after connecting: the server loses it), later runs print a
// report line.
const fakePerftest = `#!/bin/sh
for a; do last=$a; done
case $last in
10.*)
	if [ ! -e "$FAKE_DIR/listening" ]; then
		echo "Couldn't connect to $last"
		exit 1
	fi
	n=$(cat "$FAKE_DIR/runs" 2>/dev/null || echo 0)
	n=$((n+1))
	echo $n >"$FAKE_DIR/runs"
	if [ $n = 1 ]; then
		echo 'Correlation coefficient r^2: 0.42 < 0.9'
		echo "Can't produce a report"
		touch "$FAKE_DIR/gone"
		exit 1
	fi
	echo ' 65536      5           10.00              9.00  		   0.000144'
	touch "$FAKE_DIR/done"
	;;
*)
	rm -f "$FAKE_DIR/gone" # an earlier client's, whose server was killed
	touch "$FAKE_DIR/listening"
	while [ ! -e "$FAKE_DIR/done" ]; do
		if [ -e "$FAKE_DIR/gone" ]; then
			rm -f "$FAKE_DIR/gone" "$FAKE_DIR/listening"
			echo "Failed to exchange data between server and clients"
			exit 1
		fi
		sleep 0.05
	done
	;;
esac
`

// TestRunPerftestRetriesClock: a perftest client that gives up on its
// clock makes runPerftest's attempt a retry (inside rxetest.RetryPeer),
// not a failure, and the next attempt's report is returned.
func TestRunPerftestRetriesClock(t *testing.T) {
	installFake(t, "ib_write_bw", fakePerftest)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	attempts, out := runAttempts(ctx, t, "ib_write_bw", 18600, "-s", "65536", "-n", "5")
	if attempts != 2 || !strings.Contains(out, "65536      5") {
		t.Errorf("%d attempts, output %q; want 2 attempts (one the clock ended) and the second's report", attempts, out)
	}
}

// fakeStuckPerftest is a shell stand-in for a perftest pair that gets
// stuck: its first client prints nothing and never ends (in CI,
// ib_write_lat's client and server sat 90 s without a line); later
// clients print a report, and the server ends after one did.
const fakeStuckPerftest = `#!/bin/sh
for a; do last=$a; done
case $last in
10.*)
	n=$(cat "$FAKE_DIR/runs" 2>/dev/null || echo 0)
	n=$((n+1))
	echo $n >"$FAKE_DIR/runs"
	if [ $n = 1 ]; then
		exec sleep 600
	fi
	echo ' 8       300          1171.92        6072.50      3538.49  	       3043.75     	976.43 		5994.22 		6072.50'
	touch "$FAKE_DIR/done"
	;;
*)
	while [ ! -e "$FAKE_DIR/done" ]; do
		sleep 0.05
	done
	;;
esac
`

// TestRunPerftestRetriesStuck: a perftest client that neither finishes
// nor fails within perftestStuck is killed and the attempt run again
// (inside rxetest.RetryPeer), and the next attempt's report is returned.
// Before, runPerftest waited for the stuck client until the point's
// context ended, and the attempt failed ("client failed: signal:
// killed").
func TestRunPerftestRetriesStuck(t *testing.T) {
	installFake(t, "ib_write_lat", fakeStuckPerftest)
	defer func(d time.Duration) { perftestStuck = d }(perftestStuck)
	perftestStuck = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	attempts, out := runAttempts(ctx, t, "ib_write_lat", 18700, "-s", "8", "-n", "300")
	if attempts != 2 || !strings.Contains(out, "3538.49") {
		t.Errorf("%d attempts, output %q; want 2 attempts (one stuck) and the second's report", attempts, out)
	}
}

// fakeRejectingPerftest is a shell stand-in for a perftest server that
// rejects its first client although it listens (the client prints the
// RDMA CM's REJECTED event and exits 1) and is then wedged, as the
// ib_write_lat server seemed to be in CI: a later client of the same
// server prints nothing and never ends. A new server serves its client,
// which prints a report.
const fakeRejectingPerftest = `#!/bin/sh
for a; do last=$a; done
case $last in
10.*)
	n=$(cat "$FAKE_DIR/runs" 2>/dev/null || echo 0)
	n=$((n+1))
	echo $n >"$FAKE_DIR/runs"
	if [ $n = 1 ]; then
		touch "$FAKE_DIR/wedged"
		rm -f "$FAKE_DIR/listening"
		echo 'Event: RDMA_CM_EVENT_REJECTED; error: 8.'
		exit 1
	fi
	if [ -e "$FAKE_DIR/wedged" ]; then
		exec sleep 600
	fi
	echo ' 8       300          1171.92        6072.50      3538.49  	       3043.75     	976.43 		5994.22 		6072.50'
	touch "$FAKE_DIR/done"
	;;
*)
	rm -f "$FAKE_DIR/wedged"
	touch "$FAKE_DIR/listening"
	while [ ! -e "$FAKE_DIR/done" ]; do
		sleep 0.05
	done
	;;
esac
`

// TestRunPerftestRetriesRejected: a perftest client rejected by a server
// the kernel showed listening ends the attempt at once (inside
// rxetest.RetryPeer), and the next attempt, with a new server, gives the
// report. Before, runPerftest ran the client alone again against the same
// server, which in CI then sat with it until the 45 s bound.
func TestRunPerftestRetriesRejected(t *testing.T) {
	installFake(t, "ib_write_lat", fakeRejectingPerftest)
	// The server shows it listens (the rdma tool's part) by a file.
	awaitListen = func(ctx context.Context, t *testing.T, srv *rxetest.Peer, port int) bool {
		for {
			if _, err := os.Stat(filepath.Join(os.Getenv("FAKE_DIR"), "listening")); err == nil {
				return true
			}
			select {
			case <-srv.Exited():
				return false
			case <-ctx.Done():
				return false
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	defer func(d time.Duration) { perftestStuck = d }(perftestStuck)
	perftestStuck = 5 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	attempts, out := runAttempts(ctx, t, "ib_write_lat", 18800, "-s", "8", "-n", "300")
	if attempts != 2 || !strings.Contains(out, "3538.49") {
		t.Errorf("%d attempts, output %q; want 2 attempts (one rejected) and the second's report", attempts, out)
	}
	if runs, _ := os.ReadFile(filepath.Join(os.Getenv("FAKE_DIR"), "runs")); strings.TrimSpace(string(runs)) != "2" {
		t.Errorf("%s clients ran, want 2: the rejected one and the next attempt's (none against the wedged server)", strings.TrimSpace(string(runs)))
	}
}

// TestReportFieldsNaN: ib_write_lat prints -nan for t_stdev when its
// samples overflow its variance (seen in the VM under load); the line is
// still the report, and the other columns are read.
func TestReportFieldsNaN(t *testing.T) {
	out := " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n" +
		" 8       1000          590.56         451218.28      4012.35  	       10715.84     	-nan   		186195.64 		451218.28\n"
	r := reportFields(t, "ib_write_lat", out, 8, 9)
	if r[1] != 1000 || r[4] != 4012.35 || !math.IsNaN(r[6]) || r[8] != 451218.28 {
		t.Errorf("report %v, want 1000 iterations, t_typical 4012.35, t_stdev NaN, 99.9%% 451218.28", r)
	}
}

// runAttempts runs runPerftest inside rxetest.RetryPeer, as a point of
// the kernel test does, and returns how many attempts ran and the last
// one's output.
func runAttempts(ctx context.Context, t *testing.T, tool string, port int, args ...string) (int, string) {
	t.Helper()
	var out string
	attempts := 0
	rxetest.RetryPeer(t, func(t *testing.T) {
		attempts++
		out = runPerftest(ctx, t, tool, netip.MustParseAddr("10.77.0.1"), port, args...)
	})
	return attempts, out
}

// installFake puts script, as the program name, first on PATH for the
// test, in a directory of its own that FAKE_DIR names (the scripts keep
// their state there).
func installFake(t *testing.T, name, script string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_DIR", dir)
	// A fake perftest makes no RDMA CM listener to wait for.
	saved := awaitListen
	awaitListen = func(context.Context, *testing.T, *rxetest.Peer, int) bool { return false }
	t.Cleanup(func() { awaitListen = saved })
}
