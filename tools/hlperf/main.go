// Command hlperf measures DMA bandwidth and latency on a Gaudi, or on the
// simulator when none is present: host to device, device to host, device
// to device and both directions at once, over a sweep of sizes, on one
// device or on all of them (in turn or at once), and judges the host
// link against the PCIe generation and width sysfs reports.
//
// Usage:
//
//	hlperf [-device SEL] [-all [-parallel]] [-dir h2d,d2h,d2d,bidir]
//	       [-min 4KiB] [-max 64MiB] [-iters 20 | -duration 10s] [-warmup 2]
//	       [-streams 2] [-verify] [-pass-fraction 0.7] [-json | -csv | -plot COLUMNS]
//	hlperf -rdma [-lat] [-s SIZE] [-n ITERS] [-t DEPTH] [-Q N] [-p PORT]
//	       [-bind ADDR] [-report_gbits] [-R] [SERVER]
//
// With -rdma it measures RDMA WRITE bandwidth or latency between two
// hlperf processes over the kernel's RDMA CM, reporting in the columns of
// perftest's ib_write_bw and ib_write_lat (see rdma.go and hlperf -rdma -h).
//
// Sizes take K, M, G, T (and KiB ... TiB) for powers of 1024 and KB, MB,
// GB, TB for powers of 1000, in any case, with a fraction when the result
// is whole bytes ("1.5M"). The sweep goes from -min to -max by factors of
// four, and ends at -max.
//
// Each point (direction and size) runs -warmup untimed copies, then -iters
// timed ones, or as many as fit in -duration; each copy is waited for, so
// a sample is the latency of one copy (bidir: one copy each way, at once).
// For each point hlperf reports the number of samples n, the latency
// (minimum, median, mean, 99th percentile, maximum; percentiles by the
// nearest-rank method, and P99 only from 100 samples up) and the
// bandwidth computed from the same samples: bytes over the median latency
// and bytes over the mean latency, in GB/s (1e9 bytes per second). With
// -verify it checks after each point that the destination holds the bytes
// of the source, which it fills with a new pattern for every point.
//
// Results from the simulator are labelled as such in every output: its
// copies are memory copies in this process, not a Gaudi's DMA. -json and
// -csv carry the run's metadata (time, tool version, device, ASIC, driver
// version, configuration). The verdict compares the median bandwidth of
// host to device and device to host at the largest size (16 MiB at least)
// with -pass-fraction of what the PCIe link carries after line encoding
// (generation and width from sysfs current_link_speed and
// current_link_width); a link trained below its maximum fails. A
// simulated device gets no verdict.
//
// With -all, a summary follows the devices, as hl_qual's report: one line
// per device with its result (PASS, FAIL, NO VERDICT), its median
// bandwidth at -max per direction and why, the devices skipped because
// another process owns them (named with its pid and command), and, with
// -parallel, the aggregate: the sum of the devices' median bandwidths at
// -max. A device fails when it could not be measured, a verification
// failed or its verdict failed; then the exit status is 1.
//
// Flags are checked before any work, and a run the device or the host
// cannot hold (-max beyond free device memory or available host memory)
// is refused with the sizes involved. Ctrl-C stops the run and prints
// the results so far (exit status 130). On a terminal, progress with an
// estimate of the time left goes to stderr.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/gaudi-go/gaudi/internal/cli"
)

func main() {
	os.Exit(hlperf(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// hlperf runs the command with args and returns its exit status: 0 when
// every device ran, passed its verification and did not fail its
// verdict, 1 for a failure, 2 for a bad command line, 130 when
// interrupted (after printing what was measured).
func hlperf(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if isRDMA(args) {
		return hlperfRDMA(ctx, args, stdout, stderr)
	}
	cfg, cmd := newConfig()
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Parse(args); err != nil {
		return cli.ExitCode(err)
	}
	if err := cfg.check(cmd); err != nil {
		return cli.ExitCode(err)
	}
	cfg.progress = isTerminal(stderr)
	cfg.plot = plotWidth(cfg, cmd, stdout)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// A second Ctrl-C ends the process at once.
		<-ctx.Done()
		stop()
	}()
	rep, err := run(ctx, cfg, cmd)
	if rep != nil {
		if werr := write(stdout, cfg, rep); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		code := cmd.Report(err)
		if rep != nil && rep.Interrupted {
			code = 130
		}
		return code
	}
	switch {
	case rep.Interrupted:
		return 130
	case rep.failed():
		return 1
	}
	return 0
}

// plotWidth is the width of the bandwidth plots: -plot when given, else
// for the table on a terminal of 60 columns or more its width up to 100,
// else 0 (none).
func plotWidth(cfg *config, cmd *cli.Command, stdout io.Writer) int {
	if slices.Contains(cfg.set, "plot") || cfg.json || cfg.csv {
		return cfg.plot
	}
	if w := terminalWidth(stdout); w >= 60 {
		return min(w, 100)
	}
	return 0
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
