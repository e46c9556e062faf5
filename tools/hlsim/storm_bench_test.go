package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/devio"
	"github.com/gaudi-go/gaudi/internal/hlsimtest"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/stream"
	"github.com/gaudi-go/gaudi/tools/internal/stats"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Gaudi2 addresses the release of the storm's waiters writes to: the
// configuration space as the device addresses it (CFG_BASE,
// include/gaudi2/gaudi2.h) and the PCIe MSI-X doorbell in it
// (mmPCIE_MSIX_BASE); a 32-bit write of a vector number there raises that
// interrupt (sim/interrupt.go).
const (
	stormCFGBase  = 0x1000007FF8000000
	stormDoorbell = 0x4C17000
)

// stormRound is how many INFO and MEMORY MAP calls one benchmark
// operation makes: enough for a P99 (stats.MinSamples) even at
// -benchtime=1x.
var stormRound = stats.MinSamples(99)

// BenchmarkStorm measures, on a served compute node, the latency of INFO
// (HW_IP_INFO) and of MEMORY MAP (a 64 KiB host buffer, unmapped after
// each) from one thread while N other threads of the same process are
// blocked in user-interrupt waits on the same file (issue 28 item 4: a
// wait blocked in the server must not hold up other requests). Each
// waiter is one WAIT_CS ioctl that blocks until the benchmark raises the
// interrupt at the end, as a C program's hlthunk_wait_for_interrupt with a
// long timeout does. One operation is stormRound INFOs and stormRound
// MAPs (and their UNMAPs); the metrics are the percentiles of each call's
// latency (stats.NearestRank).
func BenchmarkStorm(b *testing.B) {
	s := hlsimtest.Serve(b, "gaudi2:1")
	r := newStormRig(b, s.Node(0, false))
	for _, n := range []int{0, 100, 1000, 4000} {
		b.Run(fmt.Sprintf("waiters=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			w := r.block(b, n)
			defer r.release(b, w)
			info := make([]time.Duration, 0, b.N*stormRound)
			mapped := make([]time.Duration, 0, b.N*stormRound)
			b.ResetTimer()
			for range b.N {
				for range stormRound {
					t0 := time.Now()
					r.info(b)
					t1 := time.Now()
					va := r.mapHost(b)
					t2 := time.Now()
					r.unmap(b, va)
					info = append(info, t1.Sub(t0))
					mapped = append(mapped, t2.Sub(t1))
				}
			}
			b.StopTimer()
			reportLatency(b, "info", info)
			reportLatency(b, "map", mapped)
		})
	}
}

// reportLatency reports the P50, P99 and maximum of d as NAME-p50-ns,
// NAME-p99-ns and NAME-max-ns.
func reportLatency(b *testing.B, name string, d []time.Duration) {
	slices.Sort(d)
	b.ReportMetric(float64(stats.NearestRank(d, 50).Nanoseconds()), name+"-p50-ns")
	b.ReportMetric(float64(stats.NearestRank(d, 99).Nanoseconds()), name+"-p99-ns")
	b.ReportMetric(float64(d[len(d)-1].Nanoseconds()), name+"-max-ns")
}

// stormRig is the benchmark's open compute node: the library's device for
// the release CS and the ioctl layer for the measured calls and the waits.
type stormRig struct {
	d       *device.Device
	io      *ioctl.Device
	streams *stream.Streams
	queue   device.Queue
	cb      *memory.HostBuffer // the release CS's command buffer
	host    []byte             // the buffer MEMORY MAP maps
	counter *uint64            // the waits' counter, in memory that cannot move
	irq     uint32             // the user interrupt the waits name
	target  uint64             // the target of the current waits
}

func newStormRig(b *testing.B, path string) *stormRig {
	d, err := device.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	cb, err := m.AllocHost(4096, memory.HostOptions{})
	if err != nil {
		b.Fatal(err)
	}
	q, err := d.Queue("PDMA_0_0")
	if err != nil {
		b.Fatal(err)
	}
	st, err := stream.New(d)
	if err != nil {
		b.Fatal(err)
	}
	host, err := unix.Mmap(-1, 0, 64<<10, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { unix.Munmap(host) })
	counter, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { unix.Munmap(counter) })
	return &stormRig{
		d: d, io: devio.Of(d), streams: st, queue: q, cb: cb, host: host,
		counter: (*uint64)(unsafe.Pointer(&counter[0])),
		irq:     uint32(d.HWIPInfo().FirstUserInterrupt),
	}
}

func (r *stormRig) info(b *testing.B) {
	var out hl.InfoHWIPInfo
	var a hl.InfoArgs
	if err := r.io.Info(hl.HL_INFO_HW_IP_INFO, &a, unsafe.Slice((*byte)(unsafe.Pointer(&out)), unsafe.Sizeof(out))); err != nil {
		b.Fatal(err)
	}
}

func (r *stormRig) mapHost(b *testing.B) uint64 {
	a := hl.MemMapHostArgs{
		HostVirtAddr: hl.NewPointer(unsafe.Pointer(&r.host[0])),
		MemSize:      uint64(len(r.host)),
		Op:           hl.HL_MEM_OP_MAP,
		Flags:        hl.HL_MEM_USERPTR,
	}
	if err := r.io.MapHost(&a); err != nil {
		b.Fatal(err)
	}
	return (*hl.MemArgs)(unsafe.Pointer(&a)).Out().DeviceVirtAddr()
}

func (r *stormRig) unmap(b *testing.B, va uint64) {
	var a hl.MemArgs
	a.In().Op = hl.HL_MEM_OP_UNMAP
	a.In().Unmap().DeviceVirtAddr = va
	if err := r.io.Memory(&a); err != nil {
		b.Fatal(err)
	}
}

// stormWaiters are the blocked waits of one sub-benchmark.
type stormWaiters struct {
	wg        sync.WaitGroup
	mu        sync.Mutex
	failed    int
	firstErr  error
	n, target int
}

// block starts n waits for the interrupt with the counter at a target it
// has not reached, and returns once their threads are blocked in the
// ioctl and the server has read every request they sent.
func (r *stormRig) block(b *testing.B, n int) *stormWaiters {
	r.target++
	atomic.StoreUint64(r.counter, r.target-1)
	w := &stormWaiters{n: n, target: int(r.target)}
	for range n {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			a := hl.WaitCSInterruptArgs{
				Addr:               hl.NewPointer(unsafe.Pointer(r.counter)),
				Target:             r.target,
				Flags:              r.irq << 20,
				InterruptTimeoutUs: uint64(10 * time.Minute / time.Microsecond),
			}
			// No ctx to cancel: one ioctl, not slices (ioctl.WaitCS).
			err := r.io.WaitInterrupt(context.Background(), &a)
			if err == nil && a.Out().Status != hl.HL_WAIT_CS_STATUS_COMPLETED {
				err = fmt.Errorf("status %d", a.Out().Status)
			}
			if err != nil {
				w.mu.Lock()
				if w.failed++; w.firstErr == nil {
					w.firstErr = err
				}
				w.mu.Unlock()
			}
		}()
	}
	// Threads asleep in the ioctl, on their FUSE request...
	deadline := time.Now().Add(time.Minute)
	for blocked := 0; blocked < n; {
		if blocked = asleepInIoctl(); blocked < n {
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d waiters asleep in ioctl after a minute", blocked, n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// ... and, since the kernel hands requests to the server in order, all
	// read by it once a later request is answered.
	r.info(b)
	return w
}

// release raises the interrupt with the waits' counter at target and
// checks that every wait completed.
func (r *stormRig) release(b *testing.B, w *stormWaiters) {
	atomic.StoreUint64(r.counter, r.target)
	pb := packet.NewBuilder(packet.Gaudi2, r.cb.Bytes()[:0])
	pb.MsgLong(packet.MsgLong{Header: packet.Header{EngineBarrier: true, MsgBarrier: true}, Addr: stormCFGBase + stormDoorbell, Value: r.irq})
	if pb.Err() != nil {
		b.Fatal(pb.Err())
	}
	ctx := context.Background()
	seq, err := r.streams.Submit(ctx, []stream.Chunk{{Queue: r.queue, CB: r.cb.VA(), Size: uint32(len(pb.Bytes())), UserCB: true}}, stream.SubmitOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := r.streams.Wait(ctx, seq); err != nil {
		b.Fatal(err)
	}
	w.wg.Wait()
	if w.failed != 0 {
		b.Fatalf("%d of %d waits failed: first %v", w.failed, w.n, w.firstErr)
	}
}

// asleepInIoctl counts this process's threads asleep (state S or D) in
// ioctl(2) (/proc/self/task/TID/syscall and stat).
func asleepInIoctl() int {
	tasks, _ := os.ReadDir("/proc/self/task")
	n := 0
	for _, t := range tasks {
		sc, err1 := os.ReadFile("/proc/self/task/" + t.Name() + "/syscall")
		st, err2 := os.ReadFile("/proc/self/task/" + t.Name() + "/stat")
		if err1 != nil || err2 != nil || !strings.HasPrefix(string(sc), strconv.Itoa(unix.SYS_IOCTL)+" ") {
			continue
		}
		// "pid (comm) S ...": the state follows the last ')'. D: a
		// signal came (FUSE then waits for the answer killably,
		// fs/fuse/dev.c request_wait_answer).
		if i := strings.LastIndexByte(string(st), ')'); i >= 0 && (strings.HasPrefix(string(st[i:]), ") S") || strings.HasPrefix(string(st[i:]), ") D")) {
			n++
		}
	}
	return n
}
