package dma

import (
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/gaudi-go/gaudi/internal/kernelsrc"
	"github.com/gaudi-go/gaudi/memory"
	"golang.org/x/sys/unix"
)

// BenchmarkPreparedRunVsC compares the library's CPU cost per prepared
// submit+wait (Prepared.Run of a one-job batch: CS with one execute chunk,
// then WAIT_CS) with a minimal C caller, testdata/percall.c, that issues
// the same two ioctls with the same arguments against the same fake
// answers (instantFile: CS answers the next sequence number, WAIT_CS
// answers COMPLETED). Both sides are measured as thread CPU time
// (CLOCK_THREAD_CPUTIME_ID) in the same run, Go first and then C for as
// many iterations, and reported as go-ns/op, c-ns/op and go/c.
//
// "inproc" answers the ioctl in process, with no system call: the
// library's own overhead. "syscall" makes each ioctl first issue one real
// cheap system call (getppid) on both sides, through the runtime's
// ordinary entry on the Go side: the cost of a call that enters the kernel.
// "syscall-rawcs" is "syscall" with CS's system call through the raw
// entry (unix.RawSyscall) on the Go side, WAIT_CS's through the ordinary
// one: what the split of issue 29 item 3 would gain.
//
//	go test ./dma -run '^$' -bench PreparedRunVsC -benchmem -count 10
func BenchmarkPreparedRunVsC(b *testing.B) {
	bin := buildPercall(b)
	for _, mode := range []string{"inproc", "syscall", "syscall-rawcs"} {
		b.Run(mode, func(b *testing.B) {
			f := &instantFile{syscall: mode != "inproc", rawCS: mode == "syscall-rawcs"}
			benchVsC(b, bin, strings.TrimSuffix(mode, "-rawcs"), f, func(e *Engine, dst memory.DeviceRange, src memory.HostRange) func() error {
				bt := e.NewBatch(BatchOptions{})
				bt.CopyAddr(dst.VA(), src.VA(), 64)
				p, err := bt.Prepare(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { p.Close() })
				if n := len(p.chunks); n != 1 {
					b.Fatalf("prepared CS has %d execute chunks, want 1 as in percall.c", n)
				}
				return func() error { return p.Run(context.Background()) }
			})
		})
	}
}

// BenchmarkCopy4KiBVsC is BenchmarkPreparedRunVsC for a 4 KiB
// host-to-device copy between typed ranges (Engine.CopyToDevice, which
// issues one CS and one WAIT_CS on this fake), against percall.c's copy
// modes, which also encode one LIN_DMA packet per copy.
//
//	go test ./dma -run '^$' -bench Copy4KiBVsC -benchmem -count 10
func BenchmarkCopy4KiBVsC(b *testing.B) {
	bin := buildPercall(b)
	for _, mode := range []string{"inproc", "syscall"} {
		b.Run(mode, func(b *testing.B) {
			benchVsC(b, bin, "copy-"+mode, &instantFile{syscall: mode == "syscall"}, func(e *Engine, dst memory.DeviceRange, src memory.HostRange) func() error {
				ctx := context.Background()
				return func() error { return e.CopyToDevice(ctx, dst, src) }
			})
		})
	}
}

// benchVsC runs the call that prepare returns, given an Engine over f and
// 4 KiB of device and host memory, as the benchmark's loop, measured as
// thread CPU time, then percall.c in mode cmode for as many iterations,
// and reports both and their ratio.
func benchVsC(b *testing.B, bin, cmode string, f *instantFile, prepare func(*Engine, memory.DeviceRange, memory.HostRange) func() error) {
	m, e := instantRigOn(b, f)
	dst, src := copyRanges(b, m)
	call := prepare(e, dst, src)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	start := threadNs(b)
	for b.Loop() {
		if err := call(); err != nil {
			b.Fatal(err)
		}
	}
	goNs := float64(threadNs(b)-start) / float64(b.N)
	cNs := runPercall(b, bin, cmode, max(b.N, 10000))
	b.ReportMetric(goNs, "go-ns/op")
	b.ReportMetric(cNs, "c-ns/op")
	b.ReportMetric(goNs/cNs, "go/c")
}

// buildPercall compiles testdata/percall.c with gcc against the 6.12 uapi
// headers, as tools/hlsim's TestCClient does. A missing compiler or missing
// headers fail the benchmark.
func buildPercall(b *testing.B) string {
	ksrc, err := kernelsrc.Dir()
	if err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(b.TempDir(), "percall")
	out, err := exec.Command("gcc", "-std=gnu11", "-Wall", "-Werror", "-O2",
		"-I", filepath.Join(ksrc, "include", "uapi"),
		"-I", filepath.Join(ksrc, "drivers", "accel", "habanalabs", "include"),
		"-o", bin, filepath.Join("testdata", "percall.c")).CombinedOutput()
	if err != nil {
		b.Fatalf("gcc (is it installed?): %v\n%s", err, out)
	}
	return bin
}

// runPercall runs the C reference for n submit+waits and returns its
// thread CPU time per submit+wait in ns.
func runPercall(b *testing.B, bin, mode string, n int) float64 {
	out, err := exec.Command(bin, mode, strconv.Itoa(n)).Output()
	if err != nil {
		b.Fatalf("percall %s %d: %v", mode, n, err)
	}
	ns, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil || ns <= 0 {
		b.Fatalf("percall %s %d printed %q", mode, n, out)
	}
	return ns
}

// threadNs returns the calling thread's CPU time in ns.
func threadNs(b *testing.B) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		b.Fatal(err)
	}
	return ts.Nano()
}
