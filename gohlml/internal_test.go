package gohlml

import (
	"testing"

	"github.com/gaudi-go/gaudi/device"
)

// TestOneEventPerReset walks the snapshots a poller can take of one hard
// reset, in every order the driver's steps allow (status goes to "in
// reset" and back, the counter grows once), and counts the events
// critical reports: one per reset, whatever the poller happened to see.
func TestOneEventPerReset(t *testing.T) {
	op, inReset := device.StatusOperational, device.StatusInReset
	for _, tc := range []struct {
		name  string
		steps []snapshot
	}{
		{"in reset, then counted", []snapshot{{resets: 0, status: op}, {resets: 0, status: inReset}, {resets: 1, status: op}}},
		{"counted while in reset", []snapshot{{resets: 0, status: op}, {resets: 1, status: inReset}, {resets: 1, status: op}}},
		{"in reset, counted, back", []snapshot{{resets: 0, status: op}, {resets: 0, status: inReset}, {resets: 1, status: inReset}, {resets: 1, status: op}}},
		{"only the count", []snapshot{{resets: 0, status: op}, {resets: 1, status: op}}},
		{"two resets", []snapshot{{resets: 0, status: op}, {resets: 0, status: inReset}, {resets: 1, status: op}, {resets: 1, status: inReset}, {resets: 2, status: op}}},
	} {
		want := int(tc.steps[len(tc.steps)-1].resets)
		got := 0
		for i := 1; i < len(tc.steps); i++ {
			if critical(tc.steps[i-1], tc.steps[i]) {
				got++
			}
		}
		if got != want {
			t.Errorf("%s: %d events, want %d", tc.name, got, want)
		}
	}
}

func TestCountReplacedRows(t *testing.T) {
	// Three rows: double-bit, single-bit, double-bit; a count of 200
	// claims more rows than the 264 bytes hold.
	b := make([]byte, 264)
	b[0] = 3
	b[8+6], b[16+6], b[24+6] = replaceCauseDoubleECC, replaceCauseMultiSingleECC, replaceCauseDoubleECC
	if d, s := countReplacedRows(b, replaceCauseDoubleECC), countReplacedRows(b, replaceCauseMultiSingleECC); d != 2 || s != 1 {
		t.Errorf("double %d single %d, want 2 and 1", d, s)
	}
	b[0] = 200
	if d := countReplacedRows(b, replaceCauseDoubleECC); d != 2+29 {
		t.Errorf("count 200 over 32 rows: %d double-bit rows, want 31 (the 29 zero rows are cause 0)", d)
	}
	if d := countReplacedRows(nil, 0); d != 0 {
		t.Errorf("empty buffer: %d", d)
	}
}

// FuzzCountReplacedRows feeds the parser of INFO DRAM_REPLACED_ROWS any
// bytes: it never panics and counts no more rows than the buffer holds.
func FuzzCountReplacedRows(f *testing.F) {
	f.Add(make([]byte, 264), byte(0))
	f.Add([]byte{0xff, 0xff, 0, 0, 0, 0, 0, 0, 1, 2, 3}, byte(1))
	f.Fuzz(func(t *testing.T, b []byte, cause byte) {
		n := countReplacedRows(b, cause)
		if rows := max(0, (len(b)-8)/8); n > uint(rows) {
			t.Fatalf("%d rows counted in %d bytes", n, len(b))
		}
	})
}
