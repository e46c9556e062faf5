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
