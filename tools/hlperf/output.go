package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"

	"github.com/gaudi-go/gaudi/internal/cli"
)

// write prints the report as the configuration asks.
func write(w io.Writer, cfg *config, rep *report) error {
	switch {
	case cfg.json:
		return writeJSON(w, rep)
	case cfg.csv:
		return writeCSV(w, cfg, rep)
	}
	return writeTable(w, cfg, rep)
}

func writeJSON(w io.Writer, rep *report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// csvHeader names the CSV columns: the run's metadata, the device, then
// the point. Every row carries the metadata, so rows stay meaningful
// when files are concatenated or filtered.
var csvHeader = []string{
	"schema_version", "time", "tool_version", "hostname", "config", "interrupted",
	"device", "path", "asic", "pci_address", "driver", "driver_version", "simulated", "verdict",
	"direction", "size_bytes", "bytes_per_sample", "samples", "partial",
	"bandwidth_median_gb_per_s", "bandwidth_mean_gb_per_s",
	"latency_min_us", "latency_median_us", "latency_mean_us", "latency_p99_us", "latency_max_us",
	"verified",
}

func writeCSV(w io.Writer, cfg *config, rep *report) error {
	cw := csv.NewWriter(w)
	cw.Write(csvHeader)
	devs := map[string]deviceReport{}
	for _, d := range rep.Devices {
		devs[d.Path] = d
	}
	f := func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	for _, r := range rep.Results {
		d := devs[r.Device]
		p99, verified := "", ""
		if r.LatencyP99Us != nil {
			p99 = f(*r.LatencyP99Us, 2)
		}
		if r.Verified != nil {
			verified = strconv.FormatBool(*r.Verified)
		}
		cw.Write([]string{
			strconv.Itoa(rep.SchemaVersion), rep.Time, rep.ToolVersion, rep.Hostname, cfg.String(), strconv.FormatBool(rep.Interrupted),
			d.Device, d.Path, d.ASIC, d.PCIAddress, deref(d.Driver), deref(d.DriverVersion), strconv.FormatBool(d.Simulated), d.Verdict.Result,
			r.Direction, strconv.FormatUint(r.SizeBytes, 10), strconv.FormatUint(r.BytesPerSample, 10), strconv.Itoa(r.Samples), strconv.FormatBool(r.Partial),
			f(r.BandwidthMedianGBps, 3), f(r.BandwidthMeanGBps, 3),
			f(r.LatencyMinUs, 2), f(r.LatencyMedianUs, 2), f(r.LatencyMeanUs, 2), p99, f(r.LatencyMaxUs, 2),
			verified,
		})
	}
	cw.Flush()
	return cw.Error()
}

// deref is *p, or "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// writeTable prints the report for people: a heading with the run's
// metadata, then per device what it is (SIMULATED, for the simulator),
// its points and its verdict.
func writeTable(w io.Writer, cfg *config, rep *report) error {
	fmt.Fprintf(w, "hlperf %s, %s\n", rep.ToolVersion, rep.Time)
	fmt.Fprintf(w, "%s\n", cfg)
	if rep.Interrupted {
		fmt.Fprintf(w, "INTERRUPTED: the results so far; a point marked * was cut short\n")
	}
	anyP99Missing := false
	for _, d := range rep.Devices {
		fmt.Fprintln(w)
		kind := "hardware"
		if d.Simulated {
			kind = "SIMULATED: copies by the simulator in host memory, not a Gaudi's DMA"
		}
		fmt.Fprintf(w, "%s, %s\n", d.Device, kind)
		link := "unknown"
		if d.PCIeLink != nil {
			link = d.PCIeLink.LinkDescription
		} else if d.Simulated {
			link = "none"
		}
		fmt.Fprintf(w, "%s, PCI %s, %s, PCIe link %s\n", d.ASIC, d.PCIAddress, cli.DriverText(d.Driver, d.DriverVersion), link)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		head := "DIR\tSIZE\tN\tGB/s median\tGB/s mean\tus min\tus median\tus mean\tus P99\tus max\t"
		if cfg.verify {
			head += "verified\t"
		}
		fmt.Fprintln(tw, head)
		for _, r := range rep.Results {
			if r.Device != d.Path {
				continue
			}
			n := strconv.Itoa(r.Samples)
			if r.Partial {
				n += "*"
			}
			p99 := "-"
			if r.LatencyP99Us != nil {
				p99 = fmt.Sprintf("%.1f", *r.LatencyP99Us)
			} else {
				anyP99Missing = true
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%.2f\t%.1f\t%.1f\t%.1f\t%s\t%.1f\t", r.Direction, cli.FormatSize(r.SizeBytes), n,
				r.BandwidthMedianGBps, r.BandwidthMeanGBps, r.LatencyMinUs, r.LatencyMedianUs, r.LatencyMeanUs, p99, r.LatencyMaxUs)
			if cfg.verify {
				switch {
				case r.Verified == nil:
				case *r.Verified:
					fmt.Fprint(tw, "ok\t")
				default:
					fmt.Fprint(tw, "FAILED\t")
				}
			}
			fmt.Fprintln(tw)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, r := range rep.Results {
			if r.Device == d.Path && r.VerificationError != "" {
				fmt.Fprintf(w, "verification failed: %s %s: %s\n", r.Direction, cli.FormatSize(r.SizeBytes), r.VerificationError)
			}
		}
		if d.Error != "" {
			fmt.Fprintf(w, "error: %s\n", d.Error)
		}
		fmt.Fprintf(w, "verdict: %s\n", d.Verdict.Reason)
		if cfg.plot > 0 {
			writePlot(w, resultsOf(rep, d.Path), cfg.plot)
		}
	}
	if cfg.all {
		if err := writeSummary(w, cfg, rep); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	notes := []string{
		"N samples, each one copy waited for (bidir: one each way at once)",
		"GB/s = 1e9 bytes/s: bytes over the median, and over the mean, latency of the same samples",
		"us = microseconds per sample; percentiles by nearest rank",
	}
	if !rep.Interrupted && slices.ContainsFunc(rep.Results, func(r result) bool { return r.Partial }) {
		notes = append(notes, "N* the point's samples before the error its device reports")
	}
	if anyP99Missing {
		notes = append(notes, "P99 needs 100 samples or more: -iters 100, or -duration")
	}
	for _, n := range notes {
		fmt.Fprintf(w, "%s\n", n)
	}
	return nil
}
