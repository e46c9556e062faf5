package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"time"
)

// The -rdma mode reports in perftest's columns so that its lines sit next
// to ib_write_bw's and ib_write_lat's (perftest's RESULT_FMT, RESULT_FMT_G
// and RESULT_FMT_LAT in src/perftest_parameters.h, and print_report_bw and
// print_report_lat in src/perftest_parameters.c, which say how each
// column is computed).

const rdmaResultLine = "---------------------------------------------------------------------------------------"

// bwReport is one line of a bandwidth run.
type bwReport struct {
	Size, Iters   uint64
	Peak, Average float64 // in MB/s (2^20 bytes) or Gb/s (1e9 bits), as the run asked
	MsgRate       float64 // million messages per second
}

// computeBW computes perftest's bandwidth figures from the time each
// write was posted and, at every cqMod-th and at the last write, the time
// its completion was polled (other entries of completed are not read):
//   - average: size*iters over (last completion - first post);
//   - peak: size over the shortest per-write time of any run of writes
//     i..j, (completed[j] - posted[i]) / (j-i+1), j stepping over the
//     signalled writes;
//   - message rate: iters per second over the same span, in millions.
//
// gbits reports in 1e9 bits per second instead of 2^20 bytes.
func computeBW(size uint64, posted, completed []time.Duration, cqMod int, gbits bool) bwReport {
	n := len(posted)
	r := bwReport{Size: size, Iters: uint64(n)}
	if n == 0 || cqMod < 1 {
		return r
	}
	unit := float64(1 << 20)
	if gbits {
		unit = 125e6
	}
	span := completed[n-1] - posted[0]
	best := span
	for i := range n {
		for j := (i+1+cqMod-1)/cqMod*cqMod - 1; j < n; j += cqMod {
			if t := (completed[j] - posted[i]) / time.Duration(j-i+1); t < best {
				best = t
			}
		}
		if n%cqMod != 0 {
			if t := (completed[n-1] - posted[i]) / time.Duration(n-i); t < best {
				best = t
			}
		}
	}
	if span > 0 {
		r.Average = float64(size) * float64(n) / span.Seconds() / unit
		r.MsgRate = float64(n) / span.Seconds() / 1e6
	}
	if best > 0 {
		r.Peak = float64(size) / best.Seconds() / unit
	}
	return r
}

// writeBWHeader prints perftest's column titles.
func writeBWHeader(w io.Writer, gbits bool) {
	unit := "MB/sec"
	if gbits {
		unit = "Gb/sec"
	}
	fmt.Fprintln(w, rdmaResultLine)
	fmt.Fprintf(w, " #bytes     #iterations    BW peak[%s]    BW average[%s]   MsgRate[Mpps]\n", unit, unit)
}

// writeBW prints one report line in perftest's REPORT_FMT layout.
func writeBW(w io.Writer, r bwReport) {
	fmt.Fprintf(w, " %-7d    %-10d       %-7.2f            %-7.2f\t\t   %-7.6f\n", r.Size, r.Iters, r.Peak, r.Average, r.MsgRate)
}

// latReport is one line of a latency run, in microseconds.
type latReport struct {
	Size, Iters                   uint64
	Min, Max, Typical, Avg, Stdev float64
	P99, P999                     float64
}

// latTail is how many of the slowest samples print_report_lat drops
// (LAT_MEASURE_TAIL) before taking the figures.
const latTail = 2

// computeLat computes ib_write_lat's figures from the time each write of
// a ping-pong was posted: sample i is posted[i+1]-posted[i], a round trip,
// halved (WRITE and SEND tests divide by an RTT factor of 2). The samples
// are sorted and the latTail slowest dropped; t_typical is the median
// (perftest's get_median), t_max the first dropped sample's neighbour as
// perftest indexes it (delta[measure_cnt]), and the percentiles
// delta[ceil(measure_cnt*0.99)] and delta[ceil(measure_cnt*0.999)].
// t_stdev is the population standard deviation (perftest truncates each
// term to an integer number of microseconds; this does not).
func computeLat(size uint64, posted []time.Duration) (latReport, error) {
	r := latReport{Size: size, Iters: uint64(len(posted))}
	if len(posted) < latTail+3 {
		return r, fmt.Errorf("%d iterations: a latency report needs at least %d", len(posted), latTail+3)
	}
	d := make([]float64, len(posted)-1)
	for i := range d {
		d[i] = float64(posted[i+1]-posted[i]) / float64(time.Microsecond) / 2
	}
	slices.Sort(d)
	m := len(d) - latTail
	if (m-1)%2 != 0 {
		r.Typical = (d[m/2] + d[m/2-1]) / 2
	} else {
		r.Typical = d[m/2]
	}
	var sum float64
	for _, v := range d[:m] {
		sum += v
	}
	r.Avg = sum / float64(m)
	var sq float64
	for _, v := range d[:m] {
		sq += (v - r.Avg) * (v - r.Avg)
	}
	r.Stdev = math.Sqrt(sq / float64(m))
	r.Min, r.Max = d[0], d[m]
	r.P99 = d[int(math.Ceil(float64(m)*0.99))]
	r.P999 = d[int(math.Ceil(float64(m)*0.999))]
	return r, nil
}

// writeLatHeader prints ib_write_lat's column titles.
func writeLatHeader(w io.Writer) {
	fmt.Fprintln(w, rdmaResultLine)
	fmt.Fprintln(w, " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ")
}

// writeLat prints one line in perftest's REPORT_FMT_LAT layout.
func writeLat(w io.Writer, r latReport) {
	fmt.Fprintf(w, " %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n",
		r.Size, r.Iters, r.Min, r.Max, r.Typical, r.Avg, r.Stdev, r.P99, r.P999)
}
