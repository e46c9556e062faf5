// Package stats holds the percentile rule every command of this module
// reports latencies by, so that hlperf and hltrace agree on what "P99"
// means.
//
// A percentile is by the nearest-rank method: the p-th percentile of n
// sorted samples is the smallest sample that at least p percent of the
// samples are less than or equal to, sorted[ceil(p·n/100) - 1]. It is
// reported only from MinSamples(p) samples up, since with fewer the
// nearest rank above the median is simply the maximum.
package stats

import "cmp"

// NearestRank returns the p-th percentile (0 < p <= 100) of sorted, which
// must be sorted in increasing order and not empty.
func NearestRank[T cmp.Ordered](sorted []T, p int) T {
	n := len(sorted)
	rank := (p*n + 99) / 100 // ceil(p·n/100)
	return sorted[min(max(rank, 1), n)-1]
}

// MinSamples returns how many samples the p-th percentile is reported
// from: 1 up to the median, and otherwise the fewest samples of which
// at least one lies above it (100 for P99, 10 for P90), below which the
// percentile would be the maximum under another name.
func MinSamples(p int) int {
	if p <= 50 {
		return 1
	}
	if p >= 100 {
		return 1
	}
	return (100 + (100 - p) - 1) / (100 - p) // ceil(100/(100-p))
}
