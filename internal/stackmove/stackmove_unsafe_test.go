package stackmove

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/gaudi-go/gaudi/control"
	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/internal/strict"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/stream"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// regions returns what the argument of request nr names by address, as
// the driver would read it (strict.Regions).
func regions(nr uint, arg unsafe.Pointer) []strict.Region {
	return strict.Regions(nr, arg, func(addr uint64, b []byte) bool {
		got := read(strict.Region{Addr: addr, Len: uint64(len(b))})
		return copy(b, got) == len(b)
	})
}

// snapshot is the bytes of a region at the first attempt of a call.
type snapshot struct {
	strict.Region
	b []byte
}

// read copies a region with process_vm_readv on our own process, as the
// simulator reads user memory: the address is an integer here, which Go
// may not turn back into a pointer, and a bad one is an error, not a crash.
func read(r strict.Region) []byte {
	b := make([]byte, r.Len)
	local := []unix.Iovec{{Base: &b[0], Len: r.Len}}
	remote := []unix.RemoteIovec{{Base: uintptr(r.Addr), Len: int(r.Len)}}
	if n, err := unix.ProcessVMReadv(unix.Getpid(), local, remote, 0); err != nil || uint64(n) != r.Len {
		return nil
	}
	return b
}

// movingFile is a File that, before passing a call with user addresses to
// the simulator, answers it with an interruption (EINTR, which the ioctl
// layer retries), then with the retry each layer above handles (EAGAIN for
// a CS, BUSY for a wait slice), moving the stack between attempts.
type movingFile struct {
	ioctl.File
	t *testing.T

	// The scenarios run one call at a time, so no lock guards these.
	cur      uint // request of the call in progress, 0 for none
	attempt  int  // attempts of it so far
	snaps    []snapshot
	calls    map[string]int // calls checked, by what they passed
	failures int
}

func (f *movingFile) Ioctl(req uint, arg unsafe.Pointer) error {
	nr := req & 0xff
	if nr >= 0x40 { // the DRM encoding numbers from DRM_COMMAND_BASE
		nr -= 0x40
	} else {
		nr--
	}
	rs := regions(nr, arg)
	if len(rs) == 0 {
		f.cur = 0
		return f.File.Ioctl(req, arg)
	}
	if f.cur != req || f.attempt == 0 {
		f.cur, f.attempt, f.snaps = req, 0, nil
		for _, r := range rs {
			f.snaps = append(f.snaps, snapshot{r, read(r)})
		}
	} else {
		f.check(rs)
	}
	f.attempt++
	switch {
	case f.attempt == 1:
		moveStack()
		return unix.EINTR
	case f.attempt == 2 && nr == hl.HL_IOCTL_CS && (*hl.CSArgs)(arg).In().CSFlags&(hl.HL_CS_FLAGS_ENGINES_COMMAND|hl.HL_CS_FLAGS_ENGINE_CORE_COMMAND) == 0:
		// Submissions are retried on EAGAIN above the ioctl layer; engine
		// commands are not.
		moveStack()
		return unix.EAGAIN
	case f.attempt == 2 && nr == hl.HL_IOCTL_WAIT_CS && (*hl.WaitCSArgs)(arg).In().Flags&hl.HL_WAIT_CS_FLAGS_REGISTER_INTERRUPT == 0:
		moveStack()
		a := (*hl.WaitCSArgs)(arg)
		*a.Out() = hl.WaitCSOut{Status: hl.HL_WAIT_CS_STATUS_BUSY}
		return nil
	}
	for _, s := range f.snaps {
		f.calls[s.What]++
	}
	f.cur, f.attempt = 0, 0
	return f.File.Ioctl(req, arg)
}

// check compares what the arguments name now with the first attempt.
func (f *movingFile) check(rs []strict.Region) {
	f.t.Helper()
	if len(rs) != len(f.snaps) {
		f.t.Errorf("attempt %d names %d regions, the first named %d", f.attempt+1, len(rs), len(f.snaps))
		f.failures++
		return
	}
	for i, r := range rs {
		s := f.snaps[i]
		if got := read(r); !bytes.Equal(got, s.b) {
			f.t.Errorf("%s: attempt %d: %d bytes at %#x differ from what the first attempt saw at %#x (stack moved under a stored address?):\nfirst % x\nnow   % x",
				r.What, f.attempt+1, r.Len, r.Addr, s.Addr, head(s.b), head(got))
			f.failures++
		}
	}
}

func head(b []byte) []byte { return b[:min(len(b), 32)] }

// moveStack has the runtime copy the calling goroutine's stack elsewhere,
// lets a collection shrink it again, and has other goroutines take and
// fill the stack memory that was freed, so that a stale address into the
// old stack no longer holds the old bytes (package strict). The poisoning
// goroutines stay parked until the test ends.
func moveStack() {
	if moved, _ := strict.MoveStack(); !moved {
		panic("stackmove: the stack did not move")
	}
	runtime.GC()
	release := strict.Poison(8, 1<<20)
	poisonMu.Lock()
	poisoned = append(poisoned, release)
	poisonMu.Unlock()
}

// poisoned releases the goroutines that hold freed stack memory.
var (
	poisonMu sync.Mutex
	poisoned []func()
)

// scenario is one library call that hands the driver addresses. Every
// one of scenarios runs on both driver flavours of the simulator, the
// kernel's and Intel's out-of-tree one; ootScenarios only on the latter.
type scenario struct {
	name string
	asic sim.ASIC
	run  func(t *testing.T, r *rig)
}

type rig struct {
	d   *device.Device
	m   *memory.Manager
	e   *dma.Engine
	s   *stream.Streams
	ctx context.Context
}

var scenarios = []scenario{
	{"device INFO", sim.Gaudi2, func(t *testing.T, r *rig) {
		if _, err := r.d.DRAMUsage(); err != nil {
			t.Fatal(err)
		}
		if _, err := r.d.ClockRate(); err != nil {
			t.Fatal(err)
		}
	}},
	{"host memory MAP", sim.Gaudi2, func(t *testing.T, r *rig) {
		h, err := r.m.AllocHost(1<<16, memory.HostOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
	}},
	{"dma copy", sim.Gaudi2, func(t *testing.T, r *rig) { copyRoundTrip(t, r) }},
	{"dma copy gaudi", sim.Gaudi, func(t *testing.T, r *rig) { copyRoundTrip(t, r) }},
	{"stream signal, wait for signal, wait", sim.Gaudi2, func(t *testing.T, r *rig) { signalWait(t, r) }},
	{"stream signal, wait for signal, wait gaudi", sim.Gaudi, func(t *testing.T, r *rig) { signalWait(t, r) }},
	{"stream multi-CS wait", sim.Gaudi, func(t *testing.T, r *rig) {
		seq, _, err := r.s.Signal(r.ctx, queueOf(t, r), stream.SubmitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.s.WaitMulti(r.ctx, []uint64{seq})
		if err != nil {
			t.Fatal(err)
		}
		if res.Completed != 1 {
			t.Fatalf("multi-CS completion map %#x, want 1", res.Completed)
		}
	}},
	{"stream user interrupt wait", sim.Gaudi2, func(t *testing.T, r *rig) {
		counter := new(uint64)
		*counter = 5
		if _, err := r.s.WaitInterrupt(r.ctx, stream.AnyInterrupt, counter, 5); err != nil {
			t.Fatal(err)
		}
	}},
	{"engine commands", sim.Gaudi2, func(t *testing.T, r *rig) {
		mme := device.Gaudi2Engine(hl.GAUDI2_DCORE0_ENGINE_ID_MME)
		if err := control.StallEngines(r.d, mme); err != nil {
			t.Fatal(err)
		}
		if err := control.ResumeEngines(r.d, mme); err != nil {
			t.Fatal(err)
		}
		core := device.Gaudi2EngineCore(7)
		if err := control.HaltEngineCores(r.d, core); err != nil {
			t.Fatal(err)
		}
		if err := control.RunEngineCores(r.d, core); err != nil {
			t.Fatal(err)
		}
	}},
}

// ootScenarios use what only the out-of-tree driver has.
var ootScenarios = []scenario{
	{"out-of-tree INFO inputs", sim.Gaudi2, func(t *testing.T, r *rig) {
		if _, err := r.d.TimeSyncDie(0); err != nil {
			t.Fatal(err)
		}
		if err := r.d.ReportMemoryConsumption(0, time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := r.d.Status(); err != nil {
			t.Fatal(err)
		}
	}},
	{"NIC query", sim.Gaudi2, func(t *testing.T, r *rig) {
		if _, err := r.d.NICAppParams(0); !errors.Is(err, device.ErrNoNIC) {
			t.Fatalf("NIC query on a device without NIC ports: %v, want ErrNoNIC", err)
		}
	}},
	{"dma-buf import and copy", sim.Gaudi2, func(t *testing.T, r *rig) { importCopy(t, r) }},
}

// importCopy exports a buffer, imports the dma-buf into the same device
// and copies from the import with the device's engines.
func importCopy(t *testing.T, r *rig) {
	const n = 64 << 10
	src, err := r.m.Alloc(n, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	want := bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7}, n/7+1)[:n]
	if _, err := src.WriteAt(want, 0); err != nil {
		t.Fatal(err)
	}
	x, err := src.Export(0, n, memory.ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	imp, err := r.m.Import(x.Fd(), n)
	if err != nil {
		t.Fatal(err)
	}
	defer imp.Close()
	dst, err := r.m.Alloc(n, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if err := r.e.CopyToDevice(r.ctx, dst.Range(0, n), imp.Range(0, n)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, n)
	if _, err := dst.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("bytes copied from the import differ")
	}
}

func queueOf(t *testing.T, r *rig) device.Queue {
	if r.d.ASIC().IsGaudi() {
		return device.GaudiQueue(hl.GAUDI_QUEUE_ID_DMA_0_0)
	}
	return device.Gaudi2Queue(hl.GAUDI2_QUEUE_ID_PDMA_0_0)
}

func copyRoundTrip(t *testing.T, r *rig) {
	const n = 4096
	h, err := r.m.AllocHost(2*n, memory.HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	b, err := r.m.Alloc(n, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	src, dst := h.Bytes()[:n], h.Bytes()[n:]
	for i := range src {
		src[i] = byte(i*7 + 1)
	}
	if err := r.e.CopyToDevice(r.ctx, b.Range(0, n), h.Range(0, n)); err != nil {
		t.Fatal(err)
	}
	if err := r.e.CopyToHost(r.ctx, h.Range(n, n), b.Range(0, n)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(src, dst) {
		t.Fatal("bytes differ after the round trip")
	}
}

func signalWait(t *testing.T, r *rig) {
	q := queueOf(t, r)
	seq, _, err := r.s.Signal(r.ctx, q, stream.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := r.s.WaitForSignal(r.ctx, q, seq, stream.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w != stream.NoSeq {
		if _, err := r.s.Wait(r.ctx, w); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAddressesSurviveStackMoves runs every scenario through the moving
// File and fails if any attempt of any call named bytes that differ from
// the first attempt's.
func TestAddressesSurviveStackMoves(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer func() {
		poisonMu.Lock()
		defer poisonMu.Unlock()
		for _, release := range poisoned {
			release()
		}
		poisoned = nil
	}()

	seen := map[string]int{}
	for _, drv := range []sim.Driver{sim.DriverUpstream, sim.DriverOutOfTree} {
		for _, sc := range scenarios {
			runScenario(t, drv, sc, seen)
		}
	}
	for _, sc := range ootScenarios {
		runScenario(t, sim.DriverOutOfTree, sc, seen)
	}
	// Every kind of address the library passes was exercised.
	for _, want := range []string{"INFO return_pointer", "CS chunks_execute", "CS chunk signal_seq_arr",
		"WAIT_CS multi-CS seq array", "WAIT_CS interrupt addr", "CS engines", "CS engine_cores", "MEMORY map host_virt_addr",
		"NIC input_ptr", "NIC output_ptr"} {
		if seen[want] == 0 {
			t.Errorf("no scenario passed %s; seen %v", want, fmt.Sprint(seen))
		}
	}
}

// runScenario runs one scenario on a fresh simulated device of driver
// drv, through the moving File.
func runScenario(t *testing.T, drv sim.Driver, sc scenario, seen map[string]int) {
	t.Run(drv.String()+"/"+sc.name, func(t *testing.T) {
		cfg := sim.Default(sc.asic, 1)
		cfg.LockDir, cfg.Driver = t.TempDir(), drv
		sys, err := sim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer sys.Close()
		sf, err := sys.Device(0).Open()
		if err != nil {
			t.Fatal(err)
		}
		f := &movingFile{File: sf, t: t, calls: map[string]int{}}
		d, err := device.FromFile(f, device.FileOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		m, err := memory.New(d, memory.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		e, err := dma.New(m, dma.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		s, err := stream.New(d)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background()) // sliced waits
		defer cancel()
		// Run on a fresh goroutine, whose stack starts small.
		done := make(chan struct{})
		go func() {
			defer close(done)
			sc.run(t, &rig{d: d, m: m, e: e, s: s, ctx: ctx})
		}()
		<-done
		if len(f.calls) == 0 {
			t.Fatal("no call passed an address")
		}
		for k, v := range f.calls {
			seen[k] += v
		}
	})
}
