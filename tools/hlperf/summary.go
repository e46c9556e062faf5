package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/gaudi-go/gaudi/internal/cli"
)

// outcome is one device's result in a run over several (-all), as
// hl_qual reports each card: one word and why.
type outcome struct {
	// Result is "pass" (the verdict passed), "fail" (the device could not
	// be measured, a verification failed or the verdict failed), "none"
	// (it ran without fault but nothing judged it: simulated, link
	// unknown, sizes too small) or "interrupted" (Ctrl-C).
	Result string `json:"result"`
	// Reason says why, on one line.
	Reason string `json:"reason"`
}

// skipped is a device -all names that the run left out: another process
// owns it.
type skipped struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// aggregate is what the devices of a -parallel run moved together in one
// direction at the largest size: the sum of each one's median bandwidth.
type aggregate struct {
	Direction string `json:"direction"`
	SizeBytes uint64 `json:"size_bytes"`
	// Devices counts the devices whose point is in the sum: those that
	// measured it in full.
	Devices             int     `json:"devices"`
	BandwidthMedianGBps float64 `json:"bandwidth_median_gb_per_s"`
}

// judgeOutcome sets d's outcome from its error, its results and its
// verdict: a device fails for an error, a failed verification or a
// failed verdict, in that order of precedence.
func judgeOutcome(d *deviceReport, results []result, interrupted bool) {
	if d.Error != "" {
		d.Outcome = outcome{"fail", "error: " + d.Error}
		return
	}
	for _, r := range results {
		if r.Verified != nil && !*r.Verified {
			d.Outcome = outcome{"fail", fmt.Sprintf("verification failed: %s %s", r.Direction, cli.FormatSize(r.SizeBytes))}
			return
		}
	}
	switch {
	case d.Verdict.Result == "fail" || d.Verdict.Result == "pass":
		d.Outcome = outcome{d.Verdict.Result, d.Verdict.Reason}
	case interrupted:
		d.Outcome = outcome{"interrupted", "interrupted: the results so far"}
	default:
		d.Outcome = outcome{"none", d.Verdict.Reason}
	}
}

// largest returns, for each direction of dirs, the result at the
// largest size measured in full among results, by direction.
func largest(results []result, dirs []string) map[string]result {
	out := map[string]result{}
	for _, r := range results {
		if r.Partial || !slices.Contains(dirs, r.Direction) {
			continue
		}
		if b, ok := out[r.Direction]; !ok || r.SizeBytes > b.SizeBytes {
			out[r.Direction] = r
		}
	}
	return out
}

// aggregates sums, per direction, the median bandwidth of every device
// at the largest size of the run (-max), over the devices that measured
// it in full. Directions no device measured at -max are left out.
func aggregates(cfg *config, rep *report) []aggregate {
	var out []aggregate
	for _, dir := range cfg.dirs {
		a := aggregate{Direction: dir, SizeBytes: uint64(cfg.max)}
		for _, r := range rep.Results {
			if r.Direction == dir && r.SizeBytes == a.SizeBytes && !r.Partial {
				a.Devices++
				a.BandwidthMedianGBps += r.BandwidthMedianGBps
			}
		}
		if a.Devices > 0 {
			out = append(out, a)
		}
	}
	return out
}

// summarizeRun fills the report's outcome of a run over several devices:
// each device's, the aggregate of a -parallel run, and the run's.
func summarizeRun(cfg *config, rep *report, results [][]result) {
	for i := range rep.Devices {
		judgeOutcome(&rep.Devices[i], results[i], rep.Interrupted)
	}
	if cfg.parallel {
		rep.Aggregate = aggregates(cfg, rep)
	}
}

// writeSummary prints, for a run over several devices (-all), one line
// per device with its result, its median bandwidth at the largest size
// per direction and why, the devices skipped, the aggregate of a
// -parallel run, and the run's result: what hl_qual's report says.
func writeSummary(w io.Writer, cfg *config, rep *report) error {
	how := "in turn"
	if cfg.parallel {
		how = "at once (-parallel)"
	}
	fmt.Fprintf(w, "\nSUMMARY: %s %s", count(len(rep.Devices), "device"), how)
	if n := len(rep.Skipped); n > 0 {
		fmt.Fprintf(w, ", %d skipped", n)
	}
	fmt.Fprintf(w, "; GB/s median at %s\n", cli.FormatSize(uint64(cfg.max)))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "DEVICE\tRESULT"
	for _, d := range cfg.dirs {
		head += fmt.Sprintf("\t%7s", d)
	}
	fmt.Fprintln(tw, head+"\tWHY")
	for _, d := range rep.Devices {
		line := d.Path + "\t" + outcomeWord(d.Outcome.Result)
		mine := largest(resultsOf(rep, d.Path), cfg.dirs)
		for _, dir := range cfg.dirs {
			if r, ok := mine[dir]; ok && r.SizeBytes == uint64(cfg.max) {
				line += fmt.Sprintf("\t%7.2f", r.BandwidthMedianGBps)
			} else {
				line += "\t      -"
			}
		}
		why, _ := strings.CutPrefix(d.Outcome.Reason, "no verdict: ")
		fmt.Fprintln(tw, line+"\t"+why)
	}
	for _, s := range rep.Skipped {
		fmt.Fprintln(tw, s.Path+"\tSKIPPED"+strings.Repeat("\t      -", len(cfg.dirs))+"\t"+s.Reason)
	}
	if cfg.parallel {
		line := fmt.Sprintf("aggregate\t%d at once", len(rep.Devices))
		for _, dir := range cfg.dirs {
			i := slices.IndexFunc(rep.Aggregate, func(a aggregate) bool { return a.Direction == dir })
			if i < 0 {
				line += "\t      -"
			} else {
				line += fmt.Sprintf("\t%7.2f", rep.Aggregate[i].BandwidthMedianGBps)
			}
		}
		fmt.Fprintln(tw, line+"\t"+aggregateWhy(rep))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "result: %s\n", runResult(rep))
	return nil
}

// aggregateWhy says what the aggregate sums: "the sum of the 2 devices'
// medians", or, when a device did not measure the largest size in full,
// how many did per direction: "the sum of the medians of h2d: 1 of 2
// devices, d2h: 1 of 2".
func aggregateWhy(rep *report) string {
	n := len(rep.Devices)
	var short []string
	for _, a := range rep.Aggregate {
		if a.Devices < n {
			short = append(short, fmt.Sprintf("%s: %d of %d", a.Direction, a.Devices, n))
		}
	}
	if len(short) == 0 && len(rep.Aggregate) > 0 {
		return fmt.Sprintf("the sum of the %s' medians", count(n, "device"))
	}
	if len(short) > 0 {
		short[0] += " devices"
	}
	return "the sum of the medians of " + strings.Join(short, ", ")
}

// outcomeWord is how the summary writes a result: "PASS", "FAIL",
// "NO VERDICT", "INTERRUPTED".
func outcomeWord(result string) string {
	if result == "none" {
		return "NO VERDICT"
	}
	return strings.ToUpper(result)
}

// runResult is the run's result over its devices' outcomes: FAIL when one
// failed, else INTERRUPTED, else PASS when every one passed, else NO
// VERDICT; with how many devices.
func runResult(rep *report) string {
	n := map[string]int{}
	for _, d := range rep.Devices {
		n[d.Outcome.Result]++
	}
	all := count(len(rep.Devices), "device")
	switch {
	case n["fail"] > 0:
		return fmt.Sprintf("FAIL: %d of %s failed", n["fail"], all)
	case rep.Interrupted:
		return "INTERRUPTED: the results so far"
	case n["pass"] == len(rep.Devices):
		return fmt.Sprintf("PASS: %s passed", all)
	}
	return fmt.Sprintf("NO VERDICT: no device failed, %d of %s without a verdict", n["none"], all)
}

// resultsOf returns the results of the device at path.
func resultsOf(rep *report, path string) []result {
	var out []result
	for _, r := range rep.Results {
		if r.Device == path {
			out = append(out, r)
		}
	}
	return out
}
