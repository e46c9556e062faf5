package stream

import (
	"math"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/uapi/hl"
)

// TestSubmitOptions: the zero value asks for nothing, a positive timeout
// is rounded up to whole seconds, and a negative one is the driver's
// custom timeout of 0 seconds.
func TestSubmitOptions(t *testing.T) {
	const custom = hl.HL_CS_FLAGS_CUSTOM_TIMEOUT
	for _, tc := range []struct {
		name    string
		opts    SubmitOptions
		flags   uint32
		timeout uint32
	}{
		{"zero", SubmitOptions{}, 0, 0},
		{"1ns", SubmitOptions{Timeout: 1}, custom, 1},
		{"1s", SubmitOptions{Timeout: time.Second}, custom, 1},
		{"1.5s", SubmitOptions{Timeout: 1500 * time.Millisecond}, custom, 2},
		{"immediate", SubmitOptions{Timeout: ImmediateTimeout}, custom, 0},
		{"negative", SubmitOptions{Timeout: -time.Hour}, custom, 0},
		{"max", SubmitOptions{Timeout: MaxTimeout}, custom, 4294967},
		{"past max", SubmitOptions{Timeout: MaxTimeout + 1}, custom, 4294967},
		{"huge", SubmitOptions{Timeout: math.MaxInt64}, custom, 4294967},
		{"timestamp", SubmitOptions{Timestamp: true}, hl.HL_CS_FLAGS_TIMESTAMP, 0},
		{"skip reset", SubmitOptions{SkipResetOnTimeout: true}, hl.HL_CS_FLAGS_SKIP_RESET_ON_TIMEOUT, 0},
	} {
		flags, timeout := uint32(hl.HL_CS_FLAGS_SIGNAL), uint32(0)
		tc.opts.apply(&flags, &timeout)
		if flags != hl.HL_CS_FLAGS_SIGNAL|tc.flags || timeout != tc.timeout {
			t.Errorf("%s: flags %#x timeout %d, want %#x and %d", tc.name, flags, timeout, hl.HL_CS_FLAGS_SIGNAL|tc.flags, tc.timeout)
		}
	}
}
