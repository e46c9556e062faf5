package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/ib/cm"
	"github.com/gaudi-go/gaudi/internal/rxetest"
)

// lineSignal is a writer that keeps what is written and closes ready at
// the first write containing mark.
type lineSignal struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	mark  string
	ready chan struct{}
	once  sync.Once
}

func newLineSignal(mark string) *lineSignal {
	return &lineSignal{mark: mark, ready: make(chan struct{})}
}

func (w *lineSignal) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.mark) {
		w.once.Do(func() { close(w.ready) })
	}
	return len(p), nil
}

func (w *lineSignal) String() string { w.mu.Lock(); defer w.mu.Unlock(); return w.buf.String() }

// reportFields returns the numbers of the report line for size in a
// perftest-style output (the line after the column titles that starts
// with the size).
func reportFields(t *testing.T, who, out string, size int, n int) []float64 {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < n || f[0] != strconv.Itoa(size) {
			continue
		}
		v := make([]float64, n)
		ok := true
		for i := range n {
			var err error
			s := f[i]
			if s == "-nan" {
				// C's printf writes a negative NaN so (ib_write_lat's
				// t_stdev when its variance overflows); ParseFloat
				// takes no sign on NaN.
				s = "NaN"
			}
			if v[i], err = strconv.ParseFloat(s, 64); err != nil {
				ok = false
			}
		}
		if ok {
			return v
		}
	}
	t.Fatalf("%s: no report line for %d bytes in:\n%s", who, size, out)
	return nil
}

// runPerftest runs a perftest server and client pair on addr:port and
// returns the client's output. A peer that gave up on its clock (perftest's
// get_cpu_mhz: r^2 < 0.9) skips the attempt through rxetest.Peer.Fail:
// call it inside rxetest.RetryPeer, which runs the attempt again.
func runPerftest(ctx context.Context, t *testing.T, tool string, addr netip.Addr, port int, args ...string) string {
	t.Helper()
	// The server is killed when the attempt ends (cleanups run last
	// first: this one before StartPeer's wait for its exit).
	ctx, cancel := context.WithCancel(ctx)
	args = append([]string{"-R", "-p", strconv.Itoa(port)}, args...)
	srv := rxetest.StartPeer(ctx, t, tool, args...)
	t.Cleanup(cancel)
	listening := awaitListen(ctx, t, srv, port)
	// perftest's -R client retries while nobody listens yet; retry the
	// whole client too while the server is still starting, until the
	// server exits or ctx ends. A client that neither finished nor failed
	// within perftestStuck is killed: the pair, both perftest, got stuck,
	// and the attempt is run again (rxetest.RetryPeer).
	for {
		cctx, ccancel := context.WithTimeout(ctx, perftestStuck)
		c := rxetest.StartPeer(cctx, t, tool, append(args, addr.String())...)
		<-c.Exited()
		stuck := cctx.Err() != nil && ctx.Err() == nil
		ccancel()
		switch {
		case c.Err() == nil:
			srv.Wait(t)
			return c.Output()
		case c.ClockFailed():
			c.Fail(t, fmt.Sprintf("client failed: %v", c.Err()))
		case stuck:
			c.Stuck(t, perftestStuck)
		case listening && c.Rejected():
			// Not a server still starting: the pair broke its own
			// handshake, and the server may wait for this client forever.
			c.Refused(t)
		}
		select {
		case <-srv.Exited():
			srv.Fail(t, fmt.Sprintf("server exited (%v) before its client ran", srv.Err()))
		default:
		}
		if ctx.Err() != nil { // the attempt's time is up (timed)
			c.Fail(t, fmt.Sprintf("client failed: %v", c.Err()))
		}
		time.Sleep(200 * time.Millisecond) // the server has not listened yet: try again
	}
}

// awaitListen waits until the kernel's RDMA CM shows a listener on port
// (iproute2's rdma res show cm_id src-port PORT, state LISTEN), or srv
// exited, ctx ended or listenBound passed, and reports whether it saw
// the listener; without the rdma tool it returns false at once. A client started before its server listens is
// rejected ("RDMA_CM_EVENT_REJECTED; error: 8") and started again; in
// the two CI failures of this test, every attempt whose first client was
// so rejected then got stuck (no line from either perftest process in 45
// s), and no attempt without a rejection did. Fake perftests have no
// listener to wait for: installFake turns this off.
var awaitListen = func(ctx context.Context, t *testing.T, srv *rxetest.Peer, port int) bool {
	t.Helper()
	tool, err := exec.LookPath("rdma")
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, listenBound)
	defer cancel()
	for {
		out, err := exec.CommandContext(ctx, tool, "res", "show", "cm_id", "src-port", strconv.Itoa(port)).CombinedOutput()
		if err != nil && ctx.Err() == nil {
			t.Logf("rdma res show cm_id: %v: %s; not waiting for the listener", err, out)
			return false
		}
		if strings.Contains(string(out), "LISTEN") {
			t.Logf("listening: %s", bytes.TrimSpace(out))
			return true
		}
		select {
		case <-srv.Exited():
			return false
		case <-ctx.Done():
			t.Logf("no RDMA CM listener on port %d after %v; starting the client anyway", port, listenBound)
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// listenBound bounds awaitListen.
const listenBound = 20 * time.Second

// perftestStuck bounds one perftest client's run: the longest point
// (ib_write_bw, 16 times 4 MiB) takes about 10 s under TCG.
var perftestStuck = 45 * time.Second

// runOurs runs hlperf -rdma's server and client in this process.
func runOurs(ctx context.Context, t *testing.T, addr netip.Addr, port int, args ...string) string {
	t.Helper()
	args = append([]string{"-rdma", "-p", strconv.Itoa(port)}, args...)
	sout := newLineSignal("Waiting for a client")
	done := make(chan int, 1)
	go func() { done <- hlperf(ctx, args, sout, sout) }()
	select {
	case <-sout.ready:
	case code := <-done:
		t.Fatalf("hlperf -rdma server exited %d:\n%s", code, sout.String())
	}
	var cout bytes.Buffer
	if code := hlperf(ctx, append(args, addr.String()), &cout, &cout); code != 0 {
		t.Fatalf("hlperf -rdma client exited %d:\n%s\nserver:\n%s", code, cout.String(), sout.String())
	}
	if code := <-done; code != 0 {
		t.Fatalf("hlperf -rdma server exited %d:\n%s", code, sout.String())
	}
	return cout.String()
}

// timed runs one tool's point with 90 seconds of its own and logs how long
// it took, and its output unless the runner logged it (perftest's peers
// log theirs).
func timed(ctx context.Context, t *testing.T, name string, logOut bool, run func(context.Context) string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	start := time.Now()
	out := run(ctx)
	if logOut {
		t.Logf("%s took %v:\n%s", name, time.Since(start).Round(time.Millisecond), out)
	} else {
		t.Logf("%s took %v", name, time.Since(start).Round(time.Millisecond))
	}
	return out
}

// envInt returns the environment variable name as a positive integer, or
// def when it is unset.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	return envPositive(t, name, def, strconv.Atoi)
}

// envRatio returns the environment variable name as a positive number,
// or def when it is unset.
func envRatio(t *testing.T, name string, def float64) float64 {
	t.Helper()
	return envPositive(t, name, def, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
}

func envPositive[T int | float64](t *testing.T, name string, def T, parse func(string) (T, error)) T {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := parse(s)
	if err != nil || v <= 0 {
		t.Fatalf("%s=%q: not a positive number", name, s)
	}
	return v
}

// pairs holds one point's figures from several rounds: perftest's and
// ours, measured next to each other in each round.
type pairs struct{ theirs, ours []float64 }

// ratios returns ours over theirs, round by round.
func (p *pairs) ratios() []float64 {
	r := make([]float64, len(p.ours))
	for i := range r {
		r[i] = p.ours[i] / p.theirs[i]
	}
	return r
}

// median returns the median of v (the mean of the middle two for an even
// count).
func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// spread formats v's smallest and largest values.
func spread(v []float64) string {
	return fmt.Sprintf("%.2f..%.2f", slices.Min(v), slices.Max(v))
}

// comparison measures one point with both tools, in rounds: each round
// runs perftest and ours right after each other (alternating which goes
// first, so a drift of the machine's load favours neither), and the
// verdict is on the median of the rounds' ratios.
type comparison struct {
	t      *testing.T
	ctx    context.Context
	addr   netip.Addr
	port   int
	tool   string // perftest's binary
	size   int
	col    int      // the report column compared (index into reportFields)
	ncol   int      // the report's numeric columns
	args   []string // both tools' arguments (ours gets -lat first for a latency point)
	lat    bool
	figure pairs
	// longest is the longest round so far.
	longest time.Duration
}

// round measures the point once with each tool, in the order round's
// parity picks.
func (c *comparison) round(round int) {
	t := c.t
	var theirs, ours float64
	runTheirs := func() {
		t.Run(fmt.Sprintf("%s/%d/round_%d", c.tool, c.size, round), func(t *testing.T) {
			rxetest.RetryPeer(t, func(t *testing.T) {
				out := timed(c.ctx, t, c.tool, false, func(ctx context.Context) string { return runPerftest(ctx, t, c.tool, c.addr, c.port, c.args...) })
				theirs = c.check(t, c.tool, out)
			})
		})
	}
	runOursOnce := func() {
		t.Run(fmt.Sprintf("hlperf/%d/round_%d", c.size, round), func(t *testing.T) {
			args := c.args
			if c.lat {
				args = append([]string{"-lat"}, args...)
			}
			out := timed(c.ctx, t, "hlperf -rdma", true, func(ctx context.Context) string { return runOurs(ctx, t, c.addr, c.port+1, args...) })
			ours = c.check(t, "hlperf -rdma", out)
		})
	}
	c.port += 2
	start := time.Now()
	defer func() { c.longest = max(c.longest, time.Since(start)) }()
	if round%2 == 0 {
		runTheirs()
		runOursOnce()
	} else {
		runOursOnce()
		runTheirs()
	}
	if t.Failed() || theirs <= 0 || ours <= 0 {
		t.Fatalf("%d bytes, round %d: no figures to compare (%s %v, hlperf %v)", c.size, round, c.tool, theirs, ours)
	}
	c.figure.theirs = append(c.figure.theirs, theirs)
	c.figure.ours = append(c.figure.ours, ours)
}

// check returns the compared figure of a tool's report, after checking
// that the report is for the iterations asked.
func (c *comparison) check(t *testing.T, who, out string) float64 {
	t.Helper()
	r := reportFields(t, who, out, c.size, c.ncol)
	iters, _ := strconv.Atoi(c.args[len(c.args)-1])
	if r[1] != float64(iters) || r[c.col] <= 0 {
		t.Fatalf("%s: report %v, want %d iterations and a figure in column %d", who, r, iters, c.col)
	}
	return r[c.col]
}

// TestKernelRDMAWriteVsPerftest runs Debian's ib_write_bw -R and hlperf
// -rdma at 64 KiB to 4 MiB, and ib_write_lat -R and hlperf -rdma -lat at 8
// bytes, on the same rxe device over loopback with host memory, in
// interleaved rounds in the same run, prints the table of medians and
// spreads, and checks the medians of the rounds' ratios: bandwidth (BW
// average) at least GAUDI_RDMA_MIN_BW_RATIO of ib_write_bw's, latency
// (t_typical) at most GAUDI_RDMA_MAX_LAT_RATIO of ib_write_lat's. The
// defaults, 0.7 and 1.5, catch a data path that fell behind perftest's
// without failing make vmtest on a noisy host (single rounds at 4 MiB
// ranged from 0.58 to 1.71 under TCG on a loaded host; the medians of
// four runs from 0.95 to 1.38); the opt-in run below checks issue 25's
// goals, 0.9 and 1.2.
//
// A median of pairs taken side by side is what a loaded machine moves
// least: a load spike hits one round of one tool, and the median drops
// that round. A point whose median misses its goal is measured in more
// rounds, up to GAUDI_RDMA_MAX_ROUNDS (5), before the test fails: the
// median of more rounds says whether the miss was noise.
//
// The defaults fit make vmtest (CI; Soft-RoCE under QEMU's TCG moves
// about 10 MB/s): GAUDI_RDMA_ROUNDS (3) rounds, each bandwidth point
// moving GAUDI_RDMA_BW_BYTES (32 MiB) and at least GAUDI_RDMA_BW_ITERS
// (16) writes, latency GAUDI_RDMA_LAT_ITERS (300; t_typical is a median
// and its rounds agree within a few percent) round trips: about 3.5
// minutes of the package's 5 under light load. Extra rounds for a miss
// are run only while the test's deadline leaves room for them. A longer
// measurement (opt-in) raises them, with a longer -test.timeout:
//
//	GAUDI_VMTEST_ENV='GAUDI_RDMA_ROUNDS=5 GAUDI_RDMA_BW_ITERS=100 GAUDI_RDMA_LAT_ITERS=1000 GAUDI_RDMA_MIN_BW_RATIO=0.9 GAUDI_RDMA_MAX_LAT_RATIO=1.2' \
//	GAUDI_VMTEST_ARGS=-test.timeout=900s GAUDI_VMTEST_RUN='^TestKernelRDMAWriteVsPerftest$' \
//	GAUDI_VMTEST_TIMEOUT=1500 scripts/vmtest/run.sh ./tools/hlperf
func TestKernelRDMAWriteVsPerftest(t *testing.T) {
	addr := rxetest.Addr(t, cm.DevicePath)
	perPoint := envInt(t, "GAUDI_RDMA_BW_BYTES", 32<<20)
	minIters := max(5, envInt(t, "GAUDI_RDMA_BW_ITERS", 16)) // perftest's MIN_ITER is 5
	latIters := max(5, envInt(t, "GAUDI_RDMA_LAT_ITERS", 300))
	rounds := envInt(t, "GAUDI_RDMA_ROUNDS", 3)
	maxRounds := max(rounds, envInt(t, "GAUDI_RDMA_MAX_ROUNDS", 5))
	minBW := envRatio(t, "GAUDI_RDMA_MIN_BW_RATIO", 0.7)
	maxLat := envRatio(t, "GAUDI_RDMA_MAX_LAT_RATIO", 1.5)
	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-5*time.Second))
		defer cancel()
	}

	var points []*comparison
	port := 18600
	for _, size := range []int{64 << 10, 256 << 10, 1 << 20, 4 << 20} {
		iters := max(minIters, perPoint/size)
		points = append(points, &comparison{t: t, ctx: ctx, addr: addr, port: port, tool: "ib_write_bw", size: size, col: 3, ncol: 5,
			args: []string{"-s", strconv.Itoa(size), "-n", strconv.Itoa(iters)}})
		port += 100
	}
	lat := &comparison{t: t, ctx: ctx, addr: addr, port: port, tool: "ib_write_lat", size: 8, col: 4, ncol: 9, lat: true,
		args: []string{"-s", "8", "-n", strconv.Itoa(latIters)}}
	points = append(points, lat)
	// A miss is a bandwidth ratio under minBW or a latency ratio over
	// maxLat.
	miss := func(c *comparison) bool {
		m := median(c.figure.ratios())
		return c.lat && m > maxLat || !c.lat && m < minBW
	}
	for r := range rounds {
		for _, c := range points {
			c.round(r)
		}
	}
	for _, c := range points {
		for len(c.figure.ours) < maxRounds && miss(c) {
			// Another round only if it fits before the test's deadline,
			// with the time the table and the other points' rounds need.
			if d, ok := t.Deadline(); ok && time.Until(d) < 2*c.longest+30*time.Second {
				t.Logf("%d bytes: no time left for round %d (the longest took %v)", c.size, len(c.figure.ours), c.longest)
				break
			}
			c.round(len(c.figure.ours))
		}
	}

	var table strings.Builder
	fmt.Fprintf(&table, "%-9s %-7s %-26s %-26s %s\n", "#bytes", "rounds", "ib_write_bw avg MB/s", "hlperf -rdma avg MB/s", "ratio ours/theirs: median (min..max)")
	for _, c := range points {
		if c.lat {
			fmt.Fprintf(&table, "%-9s %-7s %-26s %-26s %s\n", "#bytes", "rounds", "ib_write_lat t_typical us", "hlperf -rdma -lat t_typ us", "ratio ours/theirs: median (min..max)")
		}
		f := c.figure
		fmt.Fprintf(&table, "%-9d %-7d %-26s %-26s %.2f (%s)\n", c.size, len(f.ours),
			fmt.Sprintf("%.2f (%s)", median(f.theirs), spread(f.theirs)), fmt.Sprintf("%.2f (%s)", median(f.ours), spread(f.ours)),
			median(f.ratios()), spread(f.ratios()))
	}
	t.Logf("RDMA WRITE on rxe, loopback, host memory (same run, interleaved rounds):\n%s", table.String())
	io.WriteString(os.Stdout, "RDMA_RATIO_TABLE\n"+table.String())
	for _, c := range points {
		if miss(c) {
			goal := fmt.Sprintf("at least %.2f", minBW)
			if c.lat {
				goal = fmt.Sprintf("at most %.2f", maxLat)
			}
			t.Errorf("%d bytes: median ratio ours/theirs %.2f over %d rounds (%s), want %s", c.size, median(c.figure.ratios()), len(c.figure.ours), spread(c.figure.ratios()), goal)
		}
	}
}

// TestKernelRDMAGaudi runs hlperf -rdma -use_gaudi's server and client on
// two simulated Gaudi2s of this process over rxe loopback: device memory
// on both ends, moved by package rdma, which takes the pipelined path on
// rxe (it refuses dma-buf registrations) and says so under a perftest
// report of the five transfers.
func TestKernelRDMAGaudi(t *testing.T) {
	addr := rxetest.Addr(t, cm.DevicePath)
	t.Setenv("GAUDI_DEVICE", "sim")
	t.Setenv("GAUDI_SIM_LOCKDIR", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	const size = 1 << 20
	out := timed(ctx, t, "hlperf -rdma -use_gaudi", true, func(ctx context.Context) string {
		return runOurs(ctx, t, addr, 18700, "-use_gaudi", "-s", strconv.Itoa(size), "-n", "5")
	})
	if r := reportFields(t, "hlperf -rdma -use_gaudi", out, size, 5); r[1] != 5 || r[3] <= 0 {
		t.Errorf("report %v, want 5 iterations and a bandwidth", r)
	}
	if want := "Device memory path: pipelined here, pipelined at the receiver"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q", want)
	}
}
