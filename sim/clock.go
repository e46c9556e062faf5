package sim

import _ "unsafe" // go:linkname

// nanotime is the runtime's monotonic clock. On Linux it is
// clock_gettime(CLOCK_MONOTONIC) read through the vDSO, without the system
// call that unix.ClockGettime makes (a test checks that the two agree).
// The runtime keeps it available to linkname (go.dev/issue/67401).
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64
