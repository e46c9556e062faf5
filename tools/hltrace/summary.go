package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// summary counts calls and their latency per call and op. Not safe for
// concurrent use.
type summary struct {
	rows map[summaryKey]*summaryRow
}

type summaryKey struct {
	Call, Op string
}

type summaryRow struct {
	count  uint64
	errnos map[unix.Errno]uint64
	hist   latencyHist
}

func newSummary() *summary { return &summary{rows: map[summaryKey]*summaryRow{}} }

func (s *summary) add(e *Event) {
	k := summaryKey{Call: e.CallName(), Op: e.OpName()}
	r := s.rows[k]
	if r == nil {
		r = &summaryRow{errnos: map[unix.Errno]uint64{}}
		s.rows[k] = r
	}
	r.count++
	if errno := e.Errno(); errno != 0 {
		r.errnos[errno]++
	}
	r.hist.add(e.Duration())
}

func (s *summary) keys() []summaryKey {
	keys := make([]summaryKey, 0, len(s.rows))
	for k := range s.rows {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b summaryKey) int {
		return cmp.Or(cmp.Compare(a.Call, b.Call), cmp.Compare(a.Op, b.Op))
	})
	return keys
}

// errnoList prints a row's errors as NAME:count, or 0 when it has none.
func errnoList(m map[unix.Errno]uint64) string {
	if len(m) == 0 {
		return "0"
	}
	var parts []string
	for errno, n := range m {
		parts = append(parts, fmt.Sprintf("%s:%d", errnoName(errno), n))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func (s *summary) writeText(w io.Writer) {
	fmt.Fprintf(w, "%-30s %-24s %9s %9s %9s %9s %9s  %s\n", "CALL", "OP", "COUNT", "P50", "P90", "P99", "MAX", "ERRORS")
	for _, k := range s.keys() {
		r := s.rows[k]
		h := &r.hist
		fmt.Fprintf(w, "%-30s %-24s %9d %9s %9s %9s %9s  %s\n", k.Call, k.Op, r.count,
			h.percentile(50), h.percentile(90), h.percentile(99),
			formatDuration(time.Duration(h.max)), errnoList(r.errnos))
	}
	if len(s.rows) > 0 {
		fmt.Fprintln(w, percentileNote)
	}
}

type jsonSummaryRow struct {
	Type   string            `json:"type"`
	Call   string            `json:"call"`
	Op     string            `json:"op,omitempty"`
	Count  uint64            `json:"count"`
	Errors map[string]uint64 `json:"errors,omitempty"`
	// The percentiles are left out when there are too few samples for
	// them; Estimated says they come from the histogram.
	P50Ns     *int64 `json:"p50_ns,omitempty"`
	P90Ns     *int64 `json:"p90_ns,omitempty"`
	P99Ns     *int64 `json:"p99_ns,omitempty"`
	Estimated bool   `json:"percentiles_estimated,omitempty"`
	MaxNs     int64  `json:"max_ns"`
	MeanNs    int64  `json:"mean_ns"`
}

func (s *summary) json() []jsonSummaryRow {
	var out []jsonSummaryRow
	for _, k := range s.keys() {
		r := s.rows[k]
		h := &r.hist
		p50 := h.percentile(50)
		j := jsonSummaryRow{Type: "summary", Call: k.Call, Op: k.Op, Count: r.count,
			P50Ns: p50.ns(), P90Ns: h.percentile(90).ns(), P99Ns: h.percentile(99).ns(), Estimated: p50.Estimated,
			MaxNs: int64(h.max), MeanNs: int64(h.mean())}
		if len(r.errnos) > 0 {
			j.Errors = map[string]uint64{}
			for errno, n := range r.errnos {
				j.Errors[errnoName(errno)] = n
			}
		}
		out = append(out, j)
	}
	return out
}
