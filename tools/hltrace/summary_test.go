package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"github.com/google/go-cmp/cmp"
)

// TestSummaryPercentiles checks -summary's columns: percentiles by exact
// nearest rank while the samples are few enough to keep, "-" where there
// are too few samples for one (never the maximum under P99's name), "~"
// where one is estimated, and 0 errors printed as 0.
func TestSummaryPercentiles(t *testing.T) {
	row := func(n int) []string {
		s := newSummary()
		for i := 1; i <= n; i++ {
			// Latencies i µs: CS calls with no error.
			s.add(synth(bpfCallCALL_HL_CS, hl.DRM_IOCTL_HL_CS, 0, 0, uint64(i)*1000, &bpfCsBody{NumExecute: 1}))
		}
		var buf bytes.Buffer
		s.writeText(&buf)
		lines := strings.Split(buf.String(), "\n")
		if len(lines) < 2 {
			t.Fatalf("%d samples: no row:\n%s", n, buf.String())
		}
		f := strings.Fields(lines[1])
		return f[len(f)-6:] // COUNT P50 P90 P99 MAX ERRORS
	}
	for _, tc := range []struct {
		n    int
		want []string
	}{
		{2, []string{"2", "1.00µs", "-", "-", "2.00µs", "0"}},
		{10, []string{"10", "5.00µs", "9.00µs", "-", "10.0µs", "0"}},
		{1000, []string{"1000", "500.0µs", "900.0µs", "990.0µs", "1.0ms", "0"}},
	} {
		if diff := cmp.Diff(tc.want, row(tc.n)); diff != "" {
			t.Errorf("%d samples: COUNT..ERRORS (-want +got):\n%s", tc.n, diff)
		}
	}
	// Beyond exactSamples a percentile is an estimate and says so.
	got := row(exactSamples + 1)
	if !strings.HasPrefix(got[3], "~") {
		t.Errorf("%d samples: P99 %q is not marked as an estimate", exactSamples+1, got[3])
	}
}

// TestPercentileNeverAboveMax checks that no percentile exceeds the
// maximum or falls below the minimum, whichever way it was computed.
func TestPercentileNeverAboveMax(t *testing.T) {
	for _, n := range []int{1, 2, 3, 99, 100, 101, exactSamples, exactSamples + 1, 3 * exactSamples} {
		var h latencyHist
		for i := range n {
			h.add(time.Duration(1000+(i*7919)%n) * time.Nanosecond)
		}
		for _, p := range []int{50, 90, 99} {
			q := h.percentile(p)
			if q.OK && (uint64(q.D) > h.max || uint64(q.D) < h.min) {
				t.Errorf("%d samples: P%d = %v outside [%d, %d]", n, p, q.D, h.min, h.max)
			}
		}
	}
}

// TestSummaryJSONLeavesOutPercentiles checks that JSON omits a
// percentile there are too few samples for, rather than writing the
// maximum or 0.
func TestSummaryJSONLeavesOutPercentiles(t *testing.T) {
	s := newSummary()
	for i := 1; i <= 2; i++ {
		s.add(synth(bpfCallCALL_HL_CS, hl.DRM_IOCTL_HL_CS, 0, 0, uint64(i)*1000, &bpfCsBody{NumExecute: 1}))
	}
	var buf bytes.Buffer
	for _, r := range s.json() {
		if err := writeJSON(&buf, r); err != nil {
			t.Fatal(err)
		}
	}
	out := buf.String()
	if !strings.Contains(out, `"p50_ns":1000`) || regexp.MustCompile(`"p9[09]_ns"`).MatchString(out) {
		t.Errorf("JSON summary of 2 samples: want p50_ns and no p90_ns/p99_ns:\n%s", out)
	}
}

// TestASICHint: a trace whose CSs show raw queue numbers, because no INFO
// answer or sysfs named the device's ASIC (hltrace attached with -p or -c
// after the program opened the device), ends with a hint to pass -asic;
// with -asic, or when the ASIC is known, there is none.
func TestASICHint(t *testing.T) {
	cs := func() *Event {
		return synth(bpfCallCALL_HL_CS, hl.DRM_IOCTL_HL_CS, 0, 0, 1000, &bpfCsBody{NumExecute: 1, Seq: 1})
	}
	wall := func(ns uint64) time.Time { return t0.Add(time.Duration(ns)) }
	for _, tc := range []struct {
		name string
		opts outputOptions
		want string
	}{
		{"unknown ASIC", outputOptions{SysFS: t.TempDir()}, "1 command submission(s) show raw queue and engine numbers"},
		{"-asic given", outputOptions{SysFS: t.TempDir(), ASIC: device.Gaudi2}, ""},
	} {
		var buf bytes.Buffer
		p := newPrinter(&buf, tc.opts, wall)
		if err := p.event(cs()); err != nil {
			t.Fatal(err)
		}
		got := p.asicHint()
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) || (got != "" && !strings.Contains(got, "-asic gaudi, gaudi2 or gaudi3")) {
			t.Errorf("%s: hint %q, want one containing %q and naming -asic (none when want is empty)", tc.name, got, tc.want)
		}
	}
}
