package main

import (
	"testing"
	"time"
)

// durations returns 1..n microseconds, shuffled by a fixed step.
func durations(n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[(i*7)%n] = time.Duration(i+1) * time.Microsecond
	}
	return out
}

func TestPercentile(t *testing.T) {
	for _, tc := range []struct {
		n, p int
		want time.Duration // in µs: the value is its rank
	}{
		{1, 50, 1}, {1, 99, 1}, {1, 100, 1},
		{2, 50, 1}, {2, 99, 2},
		{4, 50, 2}, {4, 25, 1}, {4, 75, 3}, {4, 76, 4},
		{5, 50, 3},
		{10, 90, 9}, {10, 99, 10},
		// The stumble of issue 15: over at most 100 samples "P99" was
		// the maximum. By nearest rank the 99th percentile of 100 samples
		// is the 99th, of 200 the 198th, of 1000 the 990th.
		{100, 99, 99}, {100, 50, 50}, {100, 100, 100}, {100, 1, 1},
		{200, 99, 198}, {1000, 99, 990}, {101, 99, 100},
	} {
		s := summarize(durations(tc.n), 1000)
		sorted := make([]time.Duration, tc.n)
		for i := range sorted {
			sorted[i] = time.Duration(i+1) * time.Microsecond
		}
		if got := percentile(sorted, tc.p); got != tc.want*time.Microsecond {
			t.Errorf("P%d of 1..%d = %v, want %vµs", tc.p, tc.n, got, tc.want)
		}
		if tc.p == 50 && s.Median != tc.want*time.Microsecond {
			t.Errorf("median of %d = %v", tc.n, s.Median)
		}
	}
}

func TestSummarize(t *testing.T) {
	s := summarize(durations(99), 1e6)
	if s.N != 99 || s.HasP99 || s.P99 != 0 || s.Min != time.Microsecond || s.Max != 99*time.Microsecond || s.Median != 50*time.Microsecond {
		t.Errorf("99 samples: %+v; no P99 below 100 samples", s)
	}
	if s.Mean != 50*time.Microsecond {
		t.Errorf("mean %v", s.Mean)
	}
	// 1e6 bytes in 50 µs is 20 GB/s, by the median and by the mean.
	if !near(s.BandwidthMedian, 2e10) || !near(s.BandwidthMean, 2e10) {
		t.Errorf("bandwidth %v %v", s.BandwidthMedian, s.BandwidthMean)
	}
	s = summarize(durations(100), 1e6)
	if !s.HasP99 || s.P99 != 99*time.Microsecond || s.Max != 100*time.Microsecond {
		t.Errorf("100 samples: %+v", s)
	}
	// Mean and median differ when one sample is slow: the bandwidths
	// follow their latencies.
	s = summarize([]time.Duration{10 * time.Microsecond, 10 * time.Microsecond, 10 * time.Microsecond, 70 * time.Microsecond}, 1e6)
	if s.Median != 10*time.Microsecond || s.Mean != 25*time.Microsecond || !near(s.BandwidthMedian, 1e11) || !near(s.BandwidthMean, 4e10) {
		t.Errorf("skewed: %+v", s)
	}
}
