package main

import (
	"fmt"
	"strings"

	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/internal/pcie"
)

// verdict is the judgement of one device's host link.
type verdict struct {
	// Result is "pass", "fail" or "none".
	Result string `json:"result"`
	// Reason says why, in a sentence.
	Reason string         `json:"reason"`
	Checks []verdictCheck `json:"checks,omitempty"`
}

// verdictCheck is one direction judged.
type verdictCheck struct {
	Direction    string  `json:"direction"`
	SizeBytes    uint64  `json:"size_bytes"`
	MeasuredGBps float64 `json:"measured_gb_per_s"` // median bandwidth
	RequiredGBps float64 `json:"required_gb_per_s"` // pass_fraction × the link's bandwidth
	Pass         bool    `json:"pass"`
}

// sysfsRoot is where the PCIe link is read; tests point it at fixtures.
var sysfsRoot = "/"

// judgeDevice reads the device's link and judges its results; a device
// whose run failed gets none, or fails when its link is degraded.
func judgeDevice(dr *deviceReport, results []result, fraction float64) {
	if dr.Simulated {
		dr.Verdict = verdict{Result: "none", Reason: "no verdict: simulated device"}
		return
	}
	link, err := pcie.ReadLink(sysfsRoot, dr.PCIAddress)
	if err == nil {
		dr.PCIeLink = &linkReport{
			Generation: pcie.Gen(link.SpeedGTs), SpeedGTs: link.SpeedGTs, Width: link.Width,
			MaxGeneration: pcie.Gen(link.MaxSpeedGTs), MaxWidth: link.MaxWidth,
			BandwidthGBps: link.Bandwidth() / 1e9, BelowMaximum: link.Degraded(), LinkDescription: link.String(),
		}
	}
	switch {
	case dr.Error != "" && err == nil && link.Degraded():
		dr.Verdict = verdict{Result: "fail", Reason: fmt.Sprintf("fail: the link trained at %s; and the run failed (the error above)", link)}
		return
	case dr.Error != "":
		// Its points stop where the error cut them: the largest size
		// measured says nothing of the link.
		dr.Verdict = verdict{Result: "none", Reason: "no verdict: the run failed (the error above)"}
		return
	}
	dr.Verdict = judge(link, err, results, fraction)
}

// judge compares the median bandwidth of h2d and d2h at the largest size
// measured with fraction of what link carries per direction. A link
// trained below its maximum fails whatever the bandwidth. There is no
// verdict without a link, without h2d or d2h results, or when the
// largest size is below verdictMinSize.
func judge(link pcie.Link, linkErr error, results []result, fraction float64) verdict {
	if linkErr != nil {
		return verdict{Result: "none", Reason: "no verdict: PCIe link unknown: " + linkErr.Error()}
	}
	best := map[string]result{}
	for _, r := range results {
		if r.Direction != "h2d" && r.Direction != "d2h" || r.Partial {
			continue
		}
		if b, ok := best[r.Direction]; !ok || r.SizeBytes > b.SizeBytes {
			best[r.Direction] = r
		}
	}
	if len(best) == 0 {
		return verdict{Result: "none", Reason: "no verdict: neither h2d nor d2h was measured in full"}
	}
	required := link.Bandwidth() * fraction / 1e9
	v := verdict{Result: "pass"}
	var parts []string
	for _, dir := range []string{"h2d", "d2h"} {
		r, ok := best[dir]
		if !ok {
			continue
		}
		if r.SizeBytes < verdictMinSize {
			return verdict{Result: "none", Reason: fmt.Sprintf("no verdict: the largest %s size, %s, is below %s, too small to fill the link (raise -max)",
				dir, cli.FormatSize(r.SizeBytes), cli.FormatSize(verdictMinSize))}
		}
		c := verdictCheck{Direction: dir, SizeBytes: r.SizeBytes, MeasuredGBps: r.BandwidthMedianGBps, RequiredGBps: required}
		c.Pass = c.MeasuredGBps >= c.RequiredGBps
		if !c.Pass {
			v.Result = "fail"
		}
		v.Checks = append(v.Checks, c)
		parts = append(parts, fmt.Sprintf("%s %.2f GB/s at %s", dir, c.MeasuredGBps, cli.FormatSize(r.SizeBytes)))
	}
	measured := strings.Join(parts, ", ")
	linkText := fmt.Sprintf("%.0f%% of %s, %.2f GB/s per direction, is %.2f GB/s", fraction*100, link, link.Bandwidth()/1e9, required)
	switch {
	case link.Degraded():
		v.Result = "fail"
		v.Reason = fmt.Sprintf("fail: the link trained at %s; %s (%s)", link, measured, linkText)
	case v.Result == "fail":
		v.Reason = fmt.Sprintf("fail: %s; %s", measured, linkText)
	default:
		v.Reason = fmt.Sprintf("pass: %s; %s", measured, linkText)
	}
	return v
}
