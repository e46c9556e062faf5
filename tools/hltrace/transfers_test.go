package main

import (
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/uapi/hl"
)

func TestTransfers(t *testing.T) {
	v := newTransferView()
	var out []transfer
	feed := func(e *Event) { out = v.observe(e, out) }

	// Two submissions; a multi-CS wait completes both.
	feed(synth(bpfCallCALL_HL_CS, hl.DRM_IOCTL_HL_CS, 0, 100, 200, &bpfCsBody{Seq: 1, NumExecute: 2}))
	feed(synth(bpfCallCALL_HL_CS, hl.DRM_IOCTL_HL_CS, 0, 300, 400, &bpfCsBody{Seq: 2, NumExecute: 1}))
	w := &bpfWaitBody{Flags: hl.HL_WAIT_CS_FLAGS_MULTI_CS, Nseqs: 2, Seqs: [8]uint64{1, 2}, CompletionMap: 0b10, Status: hl.HL_WAIT_CS_STATUS_COMPLETED}
	feed(synth(bpfCallCALL_HL_WAIT_CS, hl.DRM_IOCTL_HL_WAIT_CS, 0, 500, 1_300, w))
	if len(out) != 1 || out[0].Key.Seq != 2 || out[0].Interval != time.Duration(1_000) {
		t.Fatalf("after the first multi wait: %+v", out)
	}
	w.CompletionMap = 0b01
	feed(synth(bpfCallCALL_HL_WAIT_CS, hl.DRM_IOCTL_HL_WAIT_CS, 0, 1_400, 2_100, w))
	if len(out) != 2 || out[1].Key.Seq != 1 || out[1].Interval != 2_000 || out[1].Waits != 2 || out[1].Chunks != 2 {
		t.Fatalf("after the second multi wait: %+v", out)
	}

	// A failed CS makes no submission; a wait for an unseen one counts.
	feed(synth(bpfCallCALL_HL_CS, hl.DRM_IOCTL_HL_CS, -22, 0, 1, &bpfCsBody{Seq: 3}))
	feed(synth(bpfCallCALL_HL_WAIT_CS, hl.DRM_IOCTL_HL_WAIT_CS, 0, 0, 1, &bpfWaitBody{Seq: 3}))
	// An aborted one, on another fd, and one left outstanding.
	feed(synth(bpfCallCALL_HL_CS, hl.DRM_IOCTL_HL_CS, 0, 0, 1, &bpfCsBody{Seq: 4}))
	feed(synth(bpfCallCALL_HL_WAIT_CS, hl.DRM_IOCTL_HL_WAIT_CS, 0, 0, 9, &bpfWaitBody{Seq: 4, Status: hl.HL_WAIT_CS_STATUS_ABORTED}))
	feed(synth(bpfCallCALL_HL_CS, hl.DRM_IOCTL_HL_CS, 0, 0, 1, &bpfCsBody{Seq: 5}))
	// Reserving signals makes no sequence to wait on.
	feed(synth(bpfCallCALL_HL_CS, hl.DRM_IOCTL_HL_CS, 0, 0, 1, &bpfCsBody{Seq: 6, Flags: hl.HL_CS_FLAGS_RESERVE_SIGNALS_ONLY}))

	if v.completed != 2 || v.aborted != 1 || v.unmatched != 1 || len(v.outstanding()) != 1 || v.outstanding()[0].Seq != 5 {
		t.Errorf("completed %d aborted %d unmatched %d outstanding %v", v.completed, v.aborted, v.unmatched, v.outstanding())
	}
	if v.hist.n != 2 {
		t.Errorf("histogram holds %d samples, want 2", v.hist.n)
	}
	// Closing the device file drops its submissions.
	feed(synth[bpfOpenBody](bpfCallCALL_CLOSE, 0, 0, 0, 1, nil))
	if len(v.outstanding()) != 0 {
		t.Errorf("outstanding after close: %v", v.outstanding())
	}
}

func TestHistogram(t *testing.T) {
	var h latencyHist
	for v := 1; v <= 1000; v++ {
		h.add(time.Duration(v) * time.Microsecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Microsecond}, {0.9, 900 * time.Microsecond}, {0.99, 990 * time.Microsecond}, {1, 1000 * time.Microsecond}} {
		got := h.quantile(tc.q)
		if d := float64(got-tc.want) / float64(tc.want); d < -0.125 || d > 0.125 {
			t.Errorf("quantile(%v) = %v, want %v within 12.5%%", tc.q, got, tc.want)
		}
	}
	for v := uint64(0); v < 1<<20; v = v*3 + 1 {
		b := histBucket(v)
		if lo, hi := histLow(b), histLow(b+1); v < lo || v >= hi {
			t.Errorf("value %d in bucket %d [%d, %d)", v, b, lo, hi)
		}
	}
}
