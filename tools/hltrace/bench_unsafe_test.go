package main

import (
	"os"
	"regexp"
	"runtime"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gaudi-go/gaudi/uapi/hl"
)

// BenchmarkTracedIoctl measures the cost hltrace adds to a traced ioctl:
// an INFO request on /dev/null (the kernel answers ENOTTY) issued b.N
// times without the tracer and then b.N times while hltrace traces this
// process, in one run. hltrace runs as its own process, as it would in
// use (this test binary started as hltrace -p <this pid> -summary), so
// its reader does not share this process's scheduler. The benchmark
// reports both per-ioctl times, their difference (the figure hltrace is
// held to: at most 1.5µs) and events lost. Like the other tests, the
// ioctls go to a non-device fd: see ioctl_unsafe_test.go.
//
//	go test -run NONE -bench TracedIoctl -benchtime 2s ./tools/hltrace
func BenchmarkTracedIoctl(b *testing.B) {
	requireRoot(b)
	b.ReportAllocs()
	fd := openNull(b)
	a := new(hl.InfoArgs)
	a.Op = hl.HL_INFO_HW_IP_INFO
	arg := uintptr(unsafe.Pointer(a))
	loop := func(n int) time.Duration {
		start := time.Now()
		for range n {
			unix.Syscall(unix.SYS_IOCTL, uintptr(fd), hl.DRM_IOCTL_HL_INFO, arg)
		}
		return time.Since(start)
	}

	loop(1000) // warm up
	b.ResetTimer()
	untraced := loop(b.N)

	b.StopTimer()
	tracer := startTracer(b, "-p", strconv.Itoa(os.Getpid()), "-summary", "-no-funcs")
	loop(1000)
	b.StartTimer()
	traced := loop(b.N)
	b.StopTimer()
	events, lost := tracer.stop(b)
	runtime.KeepAlive(a)

	n := float64(b.N)
	b.ReportMetric(float64(untraced.Nanoseconds())/n, "ns-untraced/ioctl")
	b.ReportMetric(float64(traced.Nanoseconds())/n, "ns-traced/ioctl")
	b.ReportMetric(float64((traced-untraced).Nanoseconds())/n, "ns-added/ioctl")
	b.ReportMetric(float64(lost), "lost")
	if want := b.N + 1000; events != want { // the warm-up and the measured calls
		b.Errorf("hltrace saw %d events, want %d (%d lost)", events, want, lost)
	}
}

var summaryTotals = regexp.MustCompile(`(?m)^(\d+) events, (\d+) lost$`)

// stop interrupts hltrace and returns the events it counted and lost.
func (p *tracerProcess) stop(tb testing.TB) (events, lost int) {
	tb.Helper()
	out := p.interrupt(tb)
	m := summaryTotals.FindStringSubmatch(out)
	if m == nil {
		tb.Fatalf("no totals in hltrace's summary:\n%s", out)
	}
	events, _ = strconv.Atoi(m[1])
	lost, _ = strconv.Atoi(m[2])
	return events, lost
}
