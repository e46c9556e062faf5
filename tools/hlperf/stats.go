package main

import (
	"slices"
	"time"

	"github.com/gaudi-go/gaudi/tools/internal/stats"
)

// minP99Samples is the fewest samples a 99th percentile is reported for:
// below 100, the nearest rank of the 99th percentile is the maximum.
var minP99Samples = stats.MinSamples(99)

// percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method every command shares (tools/internal/stats).
func percentile(sorted []time.Duration, p int) time.Duration {
	return stats.NearestRank(sorted, p)
}

// summary describes the latency samples of one point.
type summary struct {
	N                              int
	Min, Median, Mean, Max         time.Duration
	P99                            time.Duration // 0 when HasP99 is false
	HasP99                         bool
	BandwidthMedian, BandwidthMean float64 // bytes per second, over the median and the mean latency
}

// summarize computes the statistics of samples, each the latency of a
// sample that moved bytes bytes. samples must not be empty.
func summarize(samples []time.Duration, bytes uint64) summary {
	sorted := slices.Sorted(slices.Values(samples))
	var sum time.Duration
	for _, s := range sorted {
		sum += s
	}
	s := summary{
		N:      len(sorted),
		Min:    sorted[0],
		Max:    sorted[len(sorted)-1],
		Median: percentile(sorted, 50),
		Mean:   sum / time.Duration(len(sorted)),
	}
	if s.N >= minP99Samples {
		s.P99, s.HasP99 = percentile(sorted, 99), true
	}
	if s.Median > 0 {
		s.BandwidthMedian = float64(bytes) / s.Median.Seconds()
	}
	if sum > 0 {
		s.BandwidthMean = float64(bytes) * float64(s.N) / sum.Seconds()
	}
	return s
}
