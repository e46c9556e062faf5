package main

import (
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/gaudi-go/gaudi/tools/internal/stats"
)

// exactSamples is how many samples a latencyHist keeps as they are: up to
// it, its percentiles are exact by nearest rank (tools/internal/stats, as
// hlperf reports them); beyond it they are estimated from the buckets.
const exactSamples = 4096

// latencyHist is a log-linear histogram of durations: exact below 8 ns,
// then every power of two split into 8 buckets, so an estimated
// percentile is off by at most 12.5%. It also keeps the first
// exactSamples samples, from which percentiles are exact. Not safe for
// concurrent use.
type latencyHist struct {
	counts   [8 * 62]uint64
	pow2us   [64]uint64 // row 0: under 1µs; row p > 0: [2^(p-1), 2^p) µs
	exact    []uint64   // every sample while n <= exactSamples, then nil
	n        uint64
	sum      uint64
	min, max uint64
}

// A percentile is one percentile of a latencyHist as a report shows it.
type percentile struct {
	D time.Duration
	// OK is false when there are too few samples for it
	// (stats.MinSamples): the report shows "-", never the maximum under
	// the percentile's name.
	OK bool
	// Estimated is true when it comes from the buckets (more than
	// exactSamples samples): within 12.5% of the exact value.
	Estimated bool
}

// String prints the percentile for a text report: "-" when there are
// too few samples, a leading "~" when it is an estimate.
func (p percentile) String() string {
	switch {
	case !p.OK:
		return "-"
	case p.Estimated:
		return "~" + formatDuration(p.D)
	}
	return formatDuration(p.D)
}

// ns returns the percentile in nanoseconds for JSON, nil (the key left
// out) when there are too few samples.
func (p percentile) ns() *int64 {
	if !p.OK {
		return nil
	}
	v := int64(p.D)
	return &v
}

// percentileNote is the line a text report prints under its percentiles.
// Its numbers come from the rules they describe: stats.MinSamples, the
// histogram's resolution (histSub buckets per power of two) and
// exactSamples.
var percentileNote = fmt.Sprintf("percentiles by nearest rank; - too few samples (P90 needs %d, P99 %d); ~ estimated from a histogram (within %.3g%%) beyond %d samples",
	stats.MinSamples(90), stats.MinSamples(99), 100.0/histSub, exactSamples)

const histSub = 8 // buckets per power of two

func histBucket(v uint64) int {
	if v < histSub {
		return int(v)
	}
	e := 63 - bits.LeadingZeros64(v) // v in [2^e, 2^(e+1)), e >= 3
	sub := int(v>>(e-3)) & (histSub - 1)
	return (e-2)*histSub + sub
}

// histLow returns the smallest value of bucket b.
func histLow(b int) uint64 {
	if b < histSub {
		return uint64(b)
	}
	e := b/histSub + 2
	return uint64(histSub+b%histSub) << (e - 3)
}

func (h *latencyHist) add(d time.Duration) {
	v := uint64(max(d, 0))
	h.counts[min(histBucket(v), len(h.counts)-1)]++
	h.pow2us[bits.Len64(v/1000)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	h.max = max(h.max, v)
	h.n++
	h.sum += v
	if h.n <= exactSamples {
		h.exact = append(h.exact, v)
	} else {
		h.exact = nil
	}
}

// percentile returns the p-th percentile (0 < p <= 100): exact by
// nearest rank while every sample is kept, estimated from the buckets
// after that.
func (h *latencyHist) percentile(p int) percentile {
	if h.n == 0 || h.n < uint64(stats.MinSamples(p)) {
		return percentile{}
	}
	if h.exact != nil {
		sorted := slices.Sorted(slices.Values(h.exact))
		return percentile{D: time.Duration(stats.NearestRank(sorted, p)), OK: true}
	}
	return percentile{D: h.quantile(float64(p) / 100), OK: true, Estimated: true}
}

// quantile estimates the q-quantile (0 < q <= 1) from the buckets: the
// middle of the bucket holding its nearest rank, clamped to the observed
// range.
func (h *latencyHist) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.999999)
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for b, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := histLow(b), histLow(b+1)
			mid := lo + (hi-lo)/2
			return time.Duration(min(max(mid, h.min), h.max))
		}
	}
	return time.Duration(h.max)
}

func (h *latencyHist) mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / h.n)
}

// write draws the histogram with one row per power of two of
// microseconds, like
//
//	[  64µs,  128µs)       12 |@@@@@@@@            |
func (h *latencyHist) write(w io.Writer, title string) {
	fmt.Fprintf(w, "%s (%d samples, mean %s, max %s)\n", title, h.n, formatDuration(h.mean()), formatDuration(time.Duration(h.max)))
	if h.n == 0 {
		return
	}
	first, last := -1, 0
	var top uint64
	for p, c := range h.pow2us {
		if c == 0 {
			continue
		}
		if first < 0 {
			first = p
		}
		last = p
		top = max(top, c)
	}
	const width = 40
	for p := first; p <= last; p++ {
		c := h.pow2us[p]
		bar := int(c * width / top)
		if c > 0 && bar == 0 {
			bar = 1
		}
		lo, hi := time.Duration(0), time.Microsecond
		if p > 0 {
			lo, hi = time.Duration(1<<(p-1))*time.Microsecond, time.Duration(1<<p)*time.Microsecond
		}
		fmt.Fprintf(w, "  [%6s, %6s) %8d |%-*s|\n", shortDuration(lo), shortDuration(hi), c, width, strings.Repeat("@", bar))
	}
}

// shortDuration prints a power-of-two bound compactly: 512ns, 1µs, 33ms.
func shortDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", int64(d)/1e3)
	case d < time.Second:
		return fmt.Sprintf("%dms", int64(d)/1e6)
	default:
		return fmt.Sprintf("%ds", int64(d)/1e9)
	}
}
