package dma

import (
	"context"
	"encoding/binary"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gaudi-go/gaudi/internal/kernelsrc"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/sim"
	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
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
			benchVsC(b, bin, sim.Gaudi2, f, func(e *Engine, dst memory.DeviceRange, src memory.HostRange) (func() error, []string) {
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
				return func() error { return p.Run(context.Background()) }, []string{strings.TrimSuffix(mode, "-rawcs")}
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
			benchVsC(b, bin, sim.Gaudi2, &instantFile{syscall: mode == "syscall"}, func(e *Engine, dst memory.DeviceRange, src memory.HostRange) (func() error, []string) {
				ctx := context.Background()
				return func() error { return e.CopyToDevice(ctx, dst, src) }, []string{"copy-" + mode}
			})
		})
	}
}

// BenchmarkGaudi3Copy4KiBVsC is BenchmarkCopy4KiBVsC on a Gaudi3, whose
// copies are jobs in a PDMA channel's ring rather than CSs: the library
// checks the channel's mode register, writes the job (one LIN_PDMA with
// the completion-queue advance) into the ring, stores MSQ_PI and waits in
// WAIT_CS's interrupt mode for the completion counter, which the fake
// sets to the target (see instantFile). percall.c's pqm modes do the same
// register and ring accesses with the same packet words (the control word
// is read back from the library's ring) and the same WAIT_CS.
//
//	go test ./dma -run '^$' -bench Gaudi3Copy4KiBVsC -benchmem -count 10
func BenchmarkGaudi3Copy4KiBVsC(b *testing.B) {
	bin := buildPercall(b)
	for _, mode := range []string{"inproc", "syscall"} {
		b.Run(mode, func(b *testing.B) {
			benchVsC(b, bin, sim.Gaudi3, &instantFile{syscall: mode == "syscall"}, func(e *Engine, dst memory.DeviceRange, src memory.HostRange) (func() error, []string) {
				ctx := context.Background()
				if e.pq == nil {
					b.Fatal("the Gaudi3 Engine has no PDMA channels")
				}
				// One copy, whose packet the C side writes again: the
				// first job of the first channel, at the ring's start.
				if err := e.CopyToDevice(ctx, dst, src); err != nil {
					b.Fatal(err)
				}
				ring := e.pq.Channels()[0].RingBytes()
				ctl := binary.LittleEndian.Uint32(ring[4:])
				if n := packet.LinPDMALen(ctl); n != 24 || !packet.LinPDMACommitted(ctl) {
					b.Fatalf("the ring starts with control word %#x (a %d-byte packet), want the 24-byte LIN_PDMA percall.c writes", ctl, n)
				}
				args := []string{"pqm-" + mode, "-",
					strconv.FormatUint(uint64(ctl), 10),
					strconv.Itoa(g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG),
					strconv.Itoa(g3.PDMA_CH_A_PQM_CH_MSQ_PI),
					strconv.Itoa(g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG_MODE_MASK),
					strconv.Itoa(g3.PQM_DESC_SUBMIT_MODE_PI_CI_IN_MEM),
					strconv.Itoa(pqRing),
				}
				return func() error { return e.CopyToDevice(ctx, dst, src) }, args
			})
		})
	}
}

// benchVsC runs the call that prepare returns, given an Engine over f (a
// simulated asic) and 4 KiB of device and host memory, as the benchmark's
// loop, measured as thread CPU time, then percall.c with the arguments
// prepare returns (the mode, then any more; a "-" among them stands for
// the iteration count) for as many iterations, and reports both and their
// ratio.
func benchVsC(b *testing.B, bin string, asic sim.ASIC, f *instantFile, prepare func(*Engine, memory.DeviceRange, memory.HostRange) (func() error, []string)) {
	m, e := instantRigOn(b, f, asic)
	dst, src := copyRanges(b, m)
	call, cargs := prepare(e, dst, src)
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
	cNs := runPercall(b, bin, max(b.N, 10000), cargs)
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

// runPercall runs the C reference for n submit+waits, with args: the mode,
// then, for the pqm modes, more, in which "-" is where n goes (else n
// follows the mode). It returns the thread CPU time per submit+wait in ns.
func runPercall(b *testing.B, bin string, n int, args []string) float64 {
	argv := []string{args[0], strconv.Itoa(n)}
	if len(args) > 1 {
		argv = slices.Clone(args)
		argv[slices.Index(argv, "-")] = strconv.Itoa(n)
	}
	out, err := exec.Command(bin, argv...).Output()
	if err != nil {
		b.Fatalf("percall %s: %v", strings.Join(argv, " "), err)
	}
	ns, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil || ns <= 0 {
		b.Fatalf("percall %s printed %q", strings.Join(argv, " "), out)
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
