package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/gaudi-go/gaudi/uapi/hl"
)

// transferView pairs each command submission with the waits that saw it
// complete. A submission is known by (pid, fd, sequence number): sequence
// numbers belong to a context, and a context to an open device file. Its
// latency runs from the CS call's entry to the exit of the first WAIT_CS
// that reported it COMPLETED (for multi-CS waits, its bit in the
// completion map). Waits that returned BUSY or TIMEDOUT for it are
// counted on it. Not safe for concurrent use.
type transferView struct {
	pending   map[csKey]*pendingCS
	hist      latencyHist
	completed uint64
	aborted   uint64
	unmatched uint64 // completing waits for submissions not seen
}

type csKey struct {
	PID uint32 `json:"pid"`
	FD  int32  `json:"fd"`
	Seq uint64 `json:"seq"`
}

type pendingCS struct {
	start  uint64 // CS entry, CLOCK_MONOTONIC ns
	tid    uint32
	comm   string
	chunks uint32
	flags  uint32
	waits  int // waits that did not see it complete
}

// A transfer is a submission that completed (or was aborted).
type transfer struct {
	Key      csKey
	Comm     string
	Start    uint64 // CS entry
	End      uint64 // exit of the wait that saw it complete
	Chunks   uint32
	Waits    int    // all waits on it, the completing one included
	WaitTID  uint32 // thread of the completing wait
	Status   string // COMPLETED or ABORTED
	CSFlags  uint32
	Interval time.Duration
}

func newTransferView() *transferView { return &transferView{pending: map[csKey]*pendingCS{}} }

// csMakesSeq reports whether a CS with these flags returns a sequence
// number to wait on (reserving signals and engine commands do not).
func csMakesSeq(flags uint32) bool {
	const noSeq = hl.HL_CS_FLAGS_RESERVE_SIGNALS_ONLY | hl.HL_CS_FLAGS_UNRESERVE_SIGNALS_ONLY |
		hl.HL_CS_FLAGS_ENGINE_CORE_COMMAND | hl.HL_CS_FLAGS_ENGINES_COMMAND
	return flags&noSeq == 0
}

// observe feeds one event and appends the transfers it finished to out.
func (v *transferView) observe(e *Event, out []transfer) []transfer {
	if !e.OK() || e.ExitFault() {
		return out
	}
	switch e.Call() {
	case bpfCallCALL_HL_CS:
		b := e.CS()
		if !csMakesSeq(b.Flags) {
			return out
		}
		k := csKey{PID: e.PID(), FD: e.FD(), Seq: b.Seq}
		if _, ok := v.pending[k]; ok { // a later part of a staged submission
			return out
		}
		v.pending[k] = &pendingCS{start: e.Start(), tid: e.TID(), comm: e.Comm(), chunks: b.NumExecute, flags: b.Flags}
	case bpfCallCALL_HL_WAIT_CS:
		b := e.Wait()
		if b.Flags&hl.HL_WAIT_CS_FLAGS_INTERRUPT != 0 {
			return out
		}
		if b.Flags&hl.HL_WAIT_CS_FLAGS_MULTI_CS != 0 {
			n := min(int(b.Nseqs), len(b.Seqs))
			for i := 0; i < n; i++ {
				done := b.Status == hl.HL_WAIT_CS_STATUS_COMPLETED && b.CompletionMap&(1<<i) != 0
				out = v.waited(e, b.Seqs[i], done, false, out)
			}
			return out
		}
		done := b.Status == hl.HL_WAIT_CS_STATUS_COMPLETED
		out = v.waited(e, b.Seq, done, b.Status == hl.HL_WAIT_CS_STATUS_ABORTED, out)
	case bpfCallCALL_CLOSE:
		// The context is gone with its file: so are its submissions.
		for k := range v.pending {
			if k.PID == e.PID() && k.FD == e.FD() {
				delete(v.pending, k)
			}
		}
	}
	return out
}

func (v *transferView) waited(e *Event, seq uint64, done, aborted bool, out []transfer) []transfer {
	k := csKey{PID: e.PID(), FD: e.FD(), Seq: seq}
	p, ok := v.pending[k]
	if !ok {
		if done {
			v.unmatched++
		}
		return out
	}
	p.waits++
	if !done && !aborted {
		return out
	}
	delete(v.pending, k)
	t := transfer{Key: k, Comm: p.comm, Start: p.start, End: e.End(), Chunks: p.chunks, Waits: p.waits,
		WaitTID: e.TID(), Status: "COMPLETED", CSFlags: p.flags}
	t.Interval = time.Duration(t.End - t.Start)
	if aborted {
		t.Status = "ABORTED"
		v.aborted++
	} else {
		v.completed++
		v.hist.add(t.Interval)
	}
	return append(out, t)
}

// outstanding returns the submissions not yet seen complete, oldest first.
func (v *transferView) outstanding() []csKey {
	keys := make([]csKey, 0, len(v.pending))
	for k := range v.pending {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b csKey) int { return cmp.Compare(v.pending[a].start, v.pending[b].start) })
	return keys
}

func (t *transfer) line(b []byte, wall time.Time) []byte {
	b = wall.AppendFormat(b, "15:04:05.000000")
	return fmt.Appendf(b, " %7d %-15s CS fd=%d seq=%d chunks=%d flags=%s -> %s after %s (%d wait(s), last by tid %d)\n",
		t.Key.PID, t.Comm, t.Key.FD, t.Key.Seq, t.Chunks, flagString(uint64(t.CSFlags), hl.CSFlagNames),
		t.Status, formatDuration(t.Interval), t.Waits, t.WaitTID)
}

type jsonTransfer struct {
	Type      string    `json:"type"`
	Time      time.Time `json:"time"`
	PID       uint32    `json:"pid"`
	Comm      string    `json:"comm"`
	FD        int32     `json:"fd"`
	Seq       uint64    `json:"seq"`
	Chunks    uint32    `json:"chunks"`
	Status    string    `json:"status"`
	SubmitNs  uint64    `json:"submit_mono_ns"`
	DoneNs    uint64    `json:"complete_mono_ns"`
	LatencyNs int64     `json:"latency_ns"`
	Waits     int       `json:"waits"`
	WaitTID   uint32    `json:"wait_tid"`
}

func (t *transfer) json(wall time.Time) jsonTransfer {
	return jsonTransfer{Type: "transfer", Time: wall, PID: t.Key.PID, Comm: t.Comm, FD: t.Key.FD, Seq: t.Key.Seq,
		Chunks: t.Chunks, Status: t.Status, SubmitNs: t.Start, DoneNs: t.End, LatencyNs: int64(t.Interval),
		Waits: t.Waits, WaitTID: t.WaitTID}
}

// writeText prints the totals, the outstanding submissions and the
// latency histogram.
func (v *transferView) writeText(w io.Writer) {
	out := v.outstanding()
	fmt.Fprintf(w, "transfers: %d completed, %d aborted, %d outstanding, %d completing waits for unseen submissions\n",
		v.completed, v.aborted, len(out), v.unmatched)
	for n, k := range out {
		if n == 20 {
			fmt.Fprintf(w, "  ... and %d more\n", len(out)-n)
			break
		}
		p := v.pending[k]
		fmt.Fprintf(w, "  outstanding: pid %d %s fd=%d seq=%d chunks=%d waits=%d\n", k.PID, p.comm, k.FD, k.Seq, p.chunks, p.waits)
	}
	if v.completed > 0 {
		fmt.Fprintf(w, "submit-to-completion p50 %s p90 %s p99 %s (%s)\n",
			v.hist.percentile(50), v.hist.percentile(90), v.hist.percentile(99), percentileNote)
	}
	v.hist.write(w, "submit-to-completion latency")
}

type jsonTransferSummary struct {
	Type        string   `json:"type"`
	Completed   uint64   `json:"completed"`
	Aborted     uint64   `json:"aborted"`
	Unmatched   uint64   `json:"unmatched_waits"`
	Outstanding []csKey  `json:"outstanding"`
	P50Ns       *int64   `json:"p50_ns,omitempty"` // left out, as P90 and P99, when there are too few samples
	P90Ns       *int64   `json:"p90_ns,omitempty"`
	P99Ns       *int64   `json:"p99_ns,omitempty"`
	Estimated   bool     `json:"percentiles_estimated,omitempty"`
	MaxNs       int64    `json:"max_ns"`
	Buckets     []bucket `json:"buckets,omitempty"`
}

type bucket struct {
	LowNs uint64 `json:"low_ns"`
	Count uint64 `json:"count"`
}

func (v *transferView) json() jsonTransferSummary {
	j := jsonTransferSummary{Type: "transfers", Completed: v.completed, Aborted: v.aborted, Unmatched: v.unmatched,
		Outstanding: v.outstanding(), P50Ns: v.hist.percentile(50).ns(), P90Ns: v.hist.percentile(90).ns(),
		P99Ns: v.hist.percentile(99).ns(), Estimated: v.hist.percentile(50).Estimated, MaxNs: int64(v.hist.max)}
	for b, c := range v.hist.counts {
		if c > 0 {
			j.Buckets = append(j.Buckets, bucket{LowNs: histLow(b), Count: c})
		}
	}
	return j
}
