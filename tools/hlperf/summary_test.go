package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
	"github.com/gaudi-go/gaudi/tools/internal/golden"
	"golang.org/x/sys/unix"
)

// summaryReport is a -all -parallel run of three Gaudi2 fixtures: one
// passes, one (on a degraded link) fails with an aborted CS after its
// first point, one was skipped because another process owns it.
func summaryReport(t *testing.T) (*config, *report) {
	t.Helper()
	cfg, cmd := newConfig()
	if err := cmd.Parse([]string{"-all", "-parallel", "-dir", "h2d,d2h", "-min", "4M", "-max", "16M", "-iters", "5", "-plot", "60"}); err != nil {
		t.Fatal(err)
	}
	if err := cfg.check(cmd); err != nil {
		t.Fatal(err)
	}
	rep := newReport(cfg, cli.Selection{})
	rep.ToolVersion, rep.Time, rep.Hostname = "v1.0.0", "2026-11-29T01:00:00Z", "host"
	drv, ver := "upstream", "linux 6.12.0"
	useLinkFixture(t)
	for i, pci := range []string{"0000:19:00.0", "0000:b3:00.0"} {
		path := fmt.Sprintf("/dev/accel/accel%d", i)
		rep.Devices = append(rep.Devices, deviceReport{
			Device: fmt.Sprintf("GAUDI2 module %d (%s)", i, path), Path: path, ASIC: "GAUDI2",
			PCIAddress: pci, Driver: &drv, DriverVersion: &ver,
		})
	}
	point := func(dev int, dir string, size uint64, gbps float64) result {
		us := float64(size) / gbps / 1e3
		return result{Device: rep.Devices[dev].Path, Direction: dir, SizeBytes: size, BytesPerSample: size, Samples: 5,
			BandwidthMedianGBps: gbps, BandwidthMeanGBps: gbps, LatencyMinUs: us, LatencyMedianUs: us, LatencyMeanUs: us, LatencyMaxUs: us}
	}
	results := [][]result{
		{point(0, "h2d", 4<<20, 23.1), point(0, "h2d", 16<<20, 24.5), point(0, "d2h", 4<<20, 22.4), point(0, "d2h", 16<<20, 23.9)},
		{point(1, "h2d", 4<<20, 23.0), point(1, "h2d", 16<<20, 12.2)},
	}
	results[1][1].Samples, results[1][1].Partial = 2, true
	rep.Devices[1].Error = "h2d 16 MiB: wait for CS 12: command submission aborted; ioctl WAIT_CS: EIO (input/output error)"
	for i := range rep.Devices {
		rep.Results = append(rep.Results, results[i]...)
		judgeDevice(&rep.Devices[i], results[i], cfg.passFraction)
	}
	rep.Skipped = append(rep.Skipped, skipped{Path: "/dev/accel/accel2",
		Reason: "open /dev/accel/accel2: EBUSY (device or resource busy): held by pid 4242 (python3)"})
	summarizeRun(cfg, rep, results)
	return cfg, rep
}

// TestSummaryGolden: the table of a -all -parallel run ends with one
// line per device (its result, its median bandwidth at the largest size,
// why), the skipped devices, the aggregate and the run's result; the
// point an aborted CS cut short shows its samples, marked, above the
// error, on one line; -plot 60 draws each device's bandwidth by size.
func TestSummaryGolden(t *testing.T) {
	cfg, rep := summaryReport(t)
	var b strings.Builder
	if err := writeTable(&b, cfg, rep); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "summary.golden", b.String())
	if !rep.failed() {
		t.Error("a run with a failed device is not failed")
	}
}

// TestAllParallelFailure: in a -all -parallel run where one device's
// wait fails (the simulator's fault API: WAIT_CS answers EIO, with no
// reset behind it, so dma holds the CS and answers ErrNotOperational),
// that device fails in the summary with the error on one line, the other is
// reported as it ran, and the exit status is 1; -json says the same in
// devices[].outcome.
func TestAllParallelFailure(t *testing.T) {
	sys, err := simdevice.System()
	if err != nil {
		t.Fatal(err)
	}
	dev := sys.Device(1)
	args := []string{"-all", "-parallel", "-device", "sim", "-dir", "h2d", "-min", "4K", "-max", "16K", "-iters", "3"}
	for _, format := range []string{"text", "json"} {
		dev.InjectFault(sim.Fault{Ioctl: "WAIT_CS", Nth: 10, Errno: unix.EIO})
		a := args
		if format == "json" {
			a = append([]string{"-json"}, args...)
		}
		code, out, errOut := runHlperf(t, a...)
		if n := dev.DisarmFaults(); n != 0 {
			t.Fatalf("%s: the fault did not fire", format)
		}
		if code != 1 {
			t.Errorf("%s: exit %d, want 1\nstderr:\n%s", format, code, errOut)
		}
		if format == "json" {
			var rep report
			if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Devices) != 2 {
				t.Fatalf("decode: %v\n%s", err, out)
			}
			if o := rep.Devices[0].Outcome; o.Result != "none" {
				t.Errorf("sim:accel0 outcome %+v, want none", o)
			}
			if o := rep.Devices[1].Outcome; o.Result != "fail" || !strings.Contains(o.Reason, "wait aborted for a device reset not done yet") {
				t.Errorf("sim:accel1 outcome %+v, want fail for the aborted CS", o)
			}
			continue
		}
		for _, re := range []string{
			`(?m)^error: h2d (4|16) KiB: wait for CS \d+: wait aborted for a device reset not done yet: device not operational \(ioctl WAIT_CS: EIO \(input/output error\)\)$`,
			`(?m)^sim:accel0  NO VERDICT +\d+\.\d\d  simulated device$`,
			`(?m)^sim:accel1  FAIL +(-|\d+\.\d\d)  error: h2d (4|16) KiB: wait for CS \d+: wait aborted for a device reset not done yet: device not operational \(ioctl WAIT_CS: EIO \(input/output error\)\)$`,
			`(?m)^aggregate   2 at once +\d+\.\d\d  the sum of the medians of h2d: 1 of 2 devices$`,
			`(?m)^result: FAIL: 1 of 2 devices failed$`,
		} {
			if !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("the table does not match %s:\n%s", re, out)
			}
		}
	}
}

// TestOutcome: a device fails for an error, a failed verification or a
// failed verdict, and the run fails (exit 1) with it; a device without a
// verdict does not fail.
func TestOutcome(t *testing.T) {
	no := false
	for _, tc := range []struct {
		name    string
		dev     deviceReport
		results []result
		want    string
	}{
		{"error", deviceReport{Error: "x", Verdict: verdict{Result: "pass"}}, nil, "fail"},
		{"verification", deviceReport{Verdict: verdict{Result: "pass"}}, []result{{Verified: &no}}, "fail"},
		{"verdict fail", deviceReport{Verdict: verdict{Result: "fail", Reason: "fail: slow"}}, nil, "fail"},
		{"verdict pass", deviceReport{Verdict: verdict{Result: "pass"}}, nil, "pass"},
		{"no verdict", deviceReport{Verdict: verdict{Result: "none", Reason: "no verdict: simulated device"}}, nil, "none"},
	} {
		judgeOutcome(&tc.dev, tc.results, false)
		rep := &report{Devices: []deviceReport{tc.dev}}
		if tc.dev.Outcome.Result != tc.want || rep.failed() != (tc.want == "fail") {
			t.Errorf("%s: outcome %+v, failed %v; want %s", tc.name, tc.dev.Outcome, rep.failed(), tc.want)
		}
	}
}

// TestPlotWidth: a plot fills the width it is given, its longest bar the
// largest bandwidth.
func TestPlotWidth(t *testing.T) {
	for _, width := range []int{minPlotWidth, 80, 133} {
		var b strings.Builder
		writePlot(&b, []result{{Direction: "bidir", SizeBytes: 64 << 20, BandwidthMedianGBps: 123.45}, {Direction: "bidir", SizeBytes: 4 << 10, BandwidthMedianGBps: 1}}, width)
		lines := strings.Split(strings.TrimSpace(b.String()), "\n")
		if len(lines) != 3 {
			t.Fatalf("width %d: %d lines:\n%s", width, len(lines), b.String())
		}
		for _, l := range lines[1:] {
			if len(l) != width {
				t.Errorf("width %d: line of %d columns: %q", width, len(l), l)
			}
		}
		if n := strings.Count(lines[1], "#"); n != width-plotLabel-plotValue {
			t.Errorf("width %d: the full bar has %d marks, want %d", width, n, width-plotLabel-plotValue)
		}
	}
}

// TestVerdictOfFailedRun: a device whose run failed gets no verdict from
// the points the error cut short (they say nothing of the link), unless
// its link is degraded, which fails whatever was measured.
func TestVerdictOfFailedRun(t *testing.T) {
	useLinkFixture(t)
	results := []result{pt("h2d", 16<<20, 30), pt("d2h", 16<<20, 30)}
	for _, tc := range []struct{ pci, want string }{
		{"0000:19:00.0", "no verdict: the run failed (the error above)"},
		{"0000:b3:00.0", "fail: the link trained at Gen4 x8 (16 GT/s), below its maximum Gen4 x16; and the run failed (the error above)"},
	} {
		dr := deviceReport{PCIAddress: tc.pci, Error: "d2h 64 MiB: wait for CS 9: ETIMEDOUT (connection timed out)"}
		judgeDevice(&dr, results, 0.7)
		if dr.Verdict.Reason != tc.want {
			t.Errorf("%s: verdict %q, want %q", tc.pci, dr.Verdict.Reason, tc.want)
		}
	}
}
