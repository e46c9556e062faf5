package sim

import (
	"math"
	"testing"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// signalCS submits a signal CS on queue q.
func signalCS(f *File, q uint32) (hl.CSArgs, error) {
	chs := []hl.CSChunk{{QueueIndex: q}}
	var a hl.CSArgs
	setChunksExecute(a.In(), addrFor(&chs[0]))
	a.In().NumChunksExecute = 1
	a.In().CSFlags = hl.HL_CS_FLAGS_SIGNAL
	err := csSubmit(f, &a)
	return a, err
}

// waitSignalCS submits a wait CS on queue q for the signals of seqs.
func waitSignalCS(f *File, q uint32, seqs []uint64, ptr uint64) (hl.CSArgs, error) {
	chs := []hl.CSChunk{{QueueIndex: q}}
	if len(seqs) > 0 {
		setSignalSeqArr(&chs[0], addrFor(&seqs[0]))
	}
	if ptr != 0 {
		setSignalSeqArr(&chs[0], ptr)
	}
	chs[0].SetNumSignalSeqArr(uint32(len(seqs)))
	var a hl.CSArgs
	setChunksExecute(a.In(), addrFor(&chs[0]))
	a.In().NumChunksExecute = 1
	a.In().CSFlags = hl.HL_CS_FLAGS_WAIT
	err := csSubmit(f, &a)
	return a, err
}

// TestSignalWraparound follows hl_cs_signal_sob_wraparound_handler: the
// signal that would bring next_sob_val to HL_MAX_SOB_VAL still signals the
// old SOB (to 32767), the stream moves to its other SOB (answering that
// SOB and a count of 0), and the old SOB is zeroed when that signal
// completes; a switch to a SOB still in use is EINVAL.
func TestSignalWraparound(t *testing.T) {
	for _, asic := range []ASIC{Gaudi2, Gaudi} {
		t.Run(asic.String(), func(t *testing.T) {
			_, d, f := openSim(t, asic)
			hw := d.hardware()
			sm := hw.sm
			const q = 0
			blk := 0
			if asic == Gaudi {
				blk = gaudiSMWestSouthBlock
			}
			sm.mu.Lock()
			st := sm.streamLocked(q)
			st.next = hlMaxSOBVal - 2
			a, b := st.sob[0].id, st.sob[1].id
			sm.mu.Unlock()

			out, err := signalCS(f, q)
			if err != nil || out.Out().SOBCountBeforeSubmission != hlMaxSOBVal-2 {
				t.Fatalf("signal before the wrap: %v, count %d", err, out.Out().SOBCountBeforeSubmission)
			}
			mustComplete(t, f, out.Out().Seq())
			out, err = signalCS(f, q)
			if err != nil {
				t.Fatal(err)
			}
			if got := out.Out().SOBCountBeforeSubmission; got != 0 {
				t.Errorf("wrapping signal: count %d, want 0 (next_sob_val 1 after the switch)", got)
			}
			if asic == Gaudi && out.Out().SOBBaseAddrOffset != uint32(gaudiSMWestSouth+b*4) {
				t.Errorf("wrapping signal: SOB %#x, want the other SOB %#x", out.Out().SOBBaseAddrOffset, gaudiSMWestSouth+b*4)
			}
			mustComplete(t, f, out.Out().Seq())
			// cs_do_release completes the fence (complete_all) before
			// cs_release_sob_reset_handler puts the SOB, so the wait may
			// return first: wait (waitFor, 10 s) for the release, which
			// must zero it.
			waitFor(t, func() bool { return sm.sob(blk, int(a)) == 0 })
			out, err = signalCS(f, q)
			if err != nil || out.Out().SOBCountBeforeSubmission != 1 {
				t.Fatalf("signal after the wrap: %v, count %d", err, out.Out().SOBCountBeforeSubmission)
			}
			mustComplete(t, f, out.Out().Seq())
			if v := sm.sob(blk, int(b)); v != 1 {
				t.Errorf("new SOB %d = %d, want 1", b, v)
			}
			// The other SOB (a) busy: the next wrap cannot switch.
			sm.mu.Lock()
			st.next = hlMaxSOBVal - 1
			st.sob[0].refs = 2
			sm.mu.Unlock()
			if out, err := signalCS(f, q); err != unix.EINVAL || out.Out().Seq() != math.MaxUint64 {
				t.Errorf("wrap onto a busy SOB: %v, seq %#x; want EINVAL", err, out.Out().Seq())
			}
		})
	}
}

// TestSignalWaitArgs checks cs_ioctl_signal_wait's argument checks in
// order, with the drop counters they bump.
func TestSignalWaitArgs(t *testing.T) {
	_, _, f := openSim(t, Gaudi2)
	sig, err := signalCS(f, 0)
	if err != nil {
		t.Fatal(err)
	}
	seq := sig.Out().Seq()
	mustComplete(t, f, seq)
	for _, tc := range []struct {
		name  string
		seqs  []uint64
		ptr   uint64
		errno unix.Errno
	}{
		{"two signal sequences", []uint64{seq, seq}, 0, unix.EINVAL},
		{"no signal sequence", nil, 0, unix.EINVAL},
		{"bad array pointer", nil, 8, unix.EFAULT},
	} {
		before := csDropCounters(t, f).CtxValidationDropCnt
		seqs := tc.seqs
		if tc.ptr != 0 {
			seqs = nil
		}
		var out hl.CSArgs
		if tc.ptr != 0 {
			chs := []hl.CSChunk{{QueueIndex: 4}}
			setSignalSeqArr(&chs[0], tc.ptr)
			chs[0].SetNumSignalSeqArr(1)
			setChunksExecute(out.In(), addrFor(&chs[0]))
			out.In().NumChunksExecute = 1
			out.In().CSFlags = hl.HL_CS_FLAGS_WAIT
			err = csSubmit(f, &out)
		} else {
			out, err = waitSignalCS(f, 4, seqs, 0)
		}
		if err != tc.errno {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.errno)
		}
		if after := csDropCounters(t, f).CtxValidationDropCnt; after != before+1 {
			t.Errorf("%s: validation drops %d -> %d", tc.name, before, after)
		}
	}
	// A completed signal: success, nothing submitted.
	out, err := waitSignalCS(f, 4, []uint64{seq}, 0)
	if err != nil || out.Out().Seq() != math.MaxUint64 || out.Out().Status != 0 {
		t.Errorf("wait for a completed signal: %v, %+v", err, *out.Out())
	}
}

// TestSyncStreamsAfterReset checks that a hard reset starts the streams
// again (sync_stream_queue_reset): the next signal brings its SOB to 1.
func TestSyncStreamsAfterReset(t *testing.T) {
	_, d, f := openSim(t, Gaudi2)
	for i := 0; i < 3; i++ {
		out, err := signalCS(f, 0)
		if err != nil {
			t.Fatal(err)
		}
		mustComplete(t, f, out.Out().Seq())
	}
	d.Reset()
	out, err := signalCS(f, 0)
	if err != nil || out.Out().SOBCountBeforeSubmission != 1 {
		t.Fatalf("signal after reset: %v, count %d; want 1", err, out.Out().SOBCountBeforeSubmission)
	}
}
