// Package scenario runs one end-to-end suite of the library on several
// backends: the scenarios hl-thunk's tests cover (open and close, control
// queries, memory, DMA, command buffers, sync streams, timestamps, events,
// dma-bufs), through the public packages only, on the simulator inside
// the test process and on the same simulator served by tools/hlsim as
// device nodes, which the library reaches through the kernel like
// hardware (its file-descriptor path).
package scenario

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/control"
	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/internal/devio"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/stream"
	"github.com/gaudi-go/gaudi/uapi/gaudi3"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// backend opens the devices of one simulated server.
type backend struct {
	name string
	asic device.ASIC
	// open opens device i's compute node, or its control node.
	open func(t testing.TB, i int, control bool) (*device.Device, error)
	// reset hard-resets device i from outside the client, as a fatal
	// error would.
	reset func(t testing.TB, i int)
}

// mustOpen opens device i and closes it when the test ends.
func (b backend) mustOpen(t testing.TB, i int, control bool) *device.Device {
	t.Helper()
	d, err := b.open(t, i, control)
	if err != nil {
		t.Fatalf("%s: open device %d (control %v): %v", b.name, i, control, err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// run runs every scenario on b. Device 0 is used by one scenario at a
// time; the suite needs one device.
func run(t *testing.T, b backend) {
	for _, sc := range []struct {
		name string
		fn   func(*testing.T, backend)
	}{
		{"OpenClose", openClose},
		{"ControlQueries", controlQueries},
		{"Memory", memoryScenario},
		{"DMA", dmaScenario},
		{"MappedKernelCBs", mappedKernelCBs},
		{"SignalWait", signalWait},
		{"Timestamps", timestamps},
		{"HWBlock", hwBlock},
		{"Debug", debugSession},
		{"ResetEvent", resetEvent},
		{"DMAAfterReset", dmaAfterReset},
		{"DMABuf", dmaBuf},
	} {
		t.Run(sc.name, func(t *testing.T) { sc.fn(t, b) })
	}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// openClose is hl-thunk's open_close: opens and closes in a row, a second
// compute open is EBUSY, control nodes coexist with the owner and report
// the same identity.
func openClose(t *testing.T, b backend) {
	for i := range 3 {
		d, err := b.open(t, 0, false)
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	d := b.mustOpen(t, 0, false)
	if d.ASIC() != b.asic || !d.Simulated() {
		t.Fatalf("opened %v (simulated %v), want %v", d.ASIC(), d.Simulated(), b.asic)
	}
	if _, err := b.open(t, 0, false); !errors.Is(err, ioctl.ErrDeviceBusy) || !errors.Is(err, unix.EBUSY) {
		t.Fatalf("second compute open: %v, want ErrDeviceBusy", err)
	}
	c := b.mustOpen(t, 0, true)
	if !c.IsControl() || c.HWIPInfo() != d.HWIPInfo() {
		t.Fatal("the control node reports another identity")
	}
	if _, err := c.Events(); !errors.Is(err, unix.EOPNOTSUPP) {
		t.Fatalf("GET_EVENTS on the control node: %v, want EOPNOTSUPP", err)
	}
	stats, err := c.OpenStats()
	if err != nil || !stats.ComputeActive {
		t.Fatalf("OpenStats = %+v, %v; want the compute context active", stats, err)
	}
	da, err1 := d.PCIAddress()
	ca, err2 := c.PCIAddress()
	if err1 != nil || err2 != nil || da != ca || da == "" {
		t.Fatalf("PCI addresses %q (%v) and %q (%v)", da, err1, ca, err2)
	}
}

// controlQueries is hl-thunk's control_device: every INFO query on a
// control node while the compute node is owned.
func controlQueries(t *testing.T, b backend) {
	b.mustOpen(t, 0, false)
	c := b.mustOpen(t, 0, true)
	calls := map[string]func() error{
		"Status":          func() error { _, err := c.Status(); return err },
		"DRAMUsage":       func() error { _, err := c.DRAMUsage(); return err },
		"HWIdle":          func() error { _, err := c.HWIdle(); return err },
		"ClockRate":       func() error { _, err := c.ClockRate(); return err },
		"ResetCount":      func() error { _, err := c.ResetCount(); return err },
		"TimeSync":        func() error { _, err := c.TimeSync(); return err },
		"CSCounters":      func() error { _, err := c.CSCounters(); return err },
		"PCICounters":     func() error { _, err := c.PCICounters(); return err },
		"ClockThrottle":   func() error { _, err := c.ClockThrottle(); return err },
		"SyncManager":     func() error { _, err := c.SyncManager(0); return err },
		"TotalEnergy":     func() error { _, err := c.TotalEnergy(); return err },
		"Power":           func() error { _, err := c.Power(); return err },
		"PLLFrequency":    func() error { _, err := c.PLLFrequency(0); return err },
		"DRAMPendingRows": func() error { _, err := c.DRAMPendingRows(); return err },
		"DRAMReplaced":    func() error { _, err := c.DRAMReplacedRows(); return err },
		"PageSizes":       func() error { _, err := c.DevMemAllocPageSizes(); return err },
		"HWEvents":        func() error { _, err := c.HWEvents(false); return err },
		"EngineStatus":    func() error { _, err := c.EngineStatus(); return err },
		"UserMappings":    func() error { _, err := c.UserMappings(); return err },
		"Razwi":           func() error { _, _, err := c.RazwiEvent(); return err },
		"PageFault":       func() error { _, _, err := c.PageFaultEvent(); return err },
		"LastOpenTime":    func() error { _, err := c.LastOpenTime(); return err },
	}
	for name, call := range calls {
		if err := call(); err != nil {
			t.Errorf("%s on a control node: %v", name, err)
		}
	}
	st, err := c.EngineStatus()
	if err != nil || st == "" {
		t.Errorf("EngineStatus = %q, %v", st, err)
	}
}

// memoryScenario allocates device and host memory, looks addresses up,
// and checks the DRAM accounting on the way back.
func memoryScenario(t *testing.T, b backend) {
	d := b.mustOpen(t, 0, false)
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	before, err := d.DRAMUsage()
	if err != nil {
		t.Fatal(err)
	}
	buf, err := m.Alloc(64<<20, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := m.AllocHost(1<<20, memory.HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := m.Lookup(buf.VA() + 4096); r.Kind != memory.DeviceMemory || r.Device != buf || r.Offset != 4096 {
		t.Errorf("Lookup of a device address: %+v", r)
	}
	if r := m.Lookup(h.VA() + 8); r.Kind != memory.HostMemory || r.Host != h || r.Offset != 8 {
		t.Errorf("Lookup of a host mapping: %+v", r)
	}
	during, err := d.DRAMUsage()
	if err != nil || during.Free >= before.Free || during.Context < 64<<20 {
		t.Errorf("DRAM usage %+v after allocating 64 MiB (before %+v): %v", during, before, err)
	}
	// Host memory the program allocated itself, mapped for the device.
	own, err := unix.Mmap(-1, 0, 2<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(own)
	hb, err := m.MapHost(own)
	if err != nil {
		t.Fatal(err)
	}
	if err := hb.Close(); err != nil {
		t.Fatal(err)
	}
	if err := buf.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := d.DRAMUsage()
	if err != nil || after != before {
		t.Errorf("DRAM usage %+v after freeing, want %+v: %v", after, before, err)
	}
}

// pattern fills b with bytes that depend on seed and position.
func pattern(b []byte, seed int) {
	for i := range b {
		b[i] = byte(i*131 + seed*7 + i>>12)
	}
}

// dmaScenario copies host to device, device to device and back for sizes
// from one byte to 16 MiB, at odd offsets, and fills with a pattern.
// openEngine opens device 0 of b with a memory Manager and a DMA Engine,
// closed when the test ends.
func openEngine(t *testing.T, b backend) (*memory.Manager, *dma.Engine) {
	t.Helper()
	d := b.mustOpen(t, 0, false)
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	e, err := dma.New(m, dma.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return m, e
}

func dmaScenario(t *testing.T, b backend) {
	m, e := openEngine(t, b)
	const max = 16<<20 + 4096
	src, err := m.AllocHost(max, memory.HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dst, err := m.AllocHost(max, memory.HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := m.Alloc(max, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.Alloc(max, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	for i, n := range []uint64{1, 4097, 1 << 20, 16 << 20} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			off := uint64(i * 3) // odd offsets, on purpose
			pattern(src.Bytes()[off:off+n], i)
			clear(dst.Bytes())
			if err := e.CopyToDevice(ctx, a.Range(off, n), src.Range(off, n)); err != nil {
				t.Fatal(err)
			}
			if err := e.CopyOnDevice(ctx, c.Range(off+1, n), a.Range(off, n)); err != nil {
				t.Fatal(err)
			}
			if err := e.CopyToHost(ctx, dst.Range(0, n), c.Range(off+1, n)); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(dst.Bytes()[:n], src.Bytes()[off:off+n]) || dst.Bytes()[n] != 0 {
				t.Fatal("bytes differ after host -> device -> device -> host")
			}
		})
	}
	if err := e.Memset(ctx, a.Range(0, 8192), 0x0807060504030201); err != nil {
		t.Fatal(err)
	}
	if err := e.CopyToHost(ctx, dst.Range(0, 8192), a.Range(0, 8192)); err != nil {
		t.Fatal(err)
	}
	for i, v := range dst.Bytes()[:8192] {
		if v != byte(i%8+1) {
			t.Fatalf("memset: byte %d is %#x", i, v)
		}
	}
	// Device memory read and written through the buffer itself.
	want := []byte("written through Buffer.WriteAt")
	if _, err := a.WriteAt(want, 12345); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want))
	if _, err := a.ReadAt(got, 12345); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("ReadAt = %q, %v", got, err)
	}
}

// mappedKernelCBs runs copies whose command buffers are kernel CBs the
// library maps and fills (Gaudi's always; Gaudi2's with MappedKernelCBs):
// what the process writes into the mapping is what the engines run.
func mappedKernelCBs(t *testing.T, b backend) {
	d := b.mustOpen(t, 0, false)
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	e, err := dma.New(m, dma.Options{MappedKernelCBs: true, Streams: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	src, err := m.AllocHost(1<<20, memory.HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dst, err := m.AllocHost(1<<20, memory.HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	buf, err := m.Alloc(1<<20, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	for round := range 20 {
		n := uint64(1+round) * 4099 % (1 << 20)
		pattern(src.Bytes()[:n], round)
		if err := e.CopyToDevice(ctx, buf.Range(0, n), src.Range(0, n)); err != nil {
			t.Fatal(err)
		}
		if err := e.CopyToHost(ctx, dst.Range(0, n), buf.Range(0, n)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(dst.Bytes()[:n], src.Bytes()[:n]) {
			t.Fatalf("round %d: bytes differ", round)
		}
	}
}

// signalWait orders a copy in and a copy out on two queues with one
// signal/wait pair (examples/signal). On Gaudi3 the driver refuses every
// CS but its own CPU queue's (a signal on it is EINVAL:
// validate_queue_index refuses a driver-only queue, out-of-tree
// common/command_submission.c): the copies go through the PDMA channels'
// queue managers, and waiting for the copy in orders them.
func signalWait(t *testing.T, b backend) {
	d := b.mustOpen(t, 0, false)
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	e, err := dma.New(m, dma.Options{Streams: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s, err := stream.New(d)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	var down, up device.Queue
	if b.asic.IsGaudi3() {
		cpu, err := d.Queue("CPU_PQ")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Signal(ctx, cpu, stream.SubmitOptions{}); !errors.Is(err, unix.EINVAL) {
			t.Fatalf("signal on Gaudi3's CPU queue: %v, want EINVAL", err)
		}
		if len(e.Channels()) == 0 {
			t.Fatal("a Gaudi3 engine without PDMA channels")
		}
	} else {
		downName, upName := "PDMA_0_0", "PDMA_1_0"
		if d.ASIC().IsGaudi() {
			downName, upName = "DMA_0_0", "DMA_1_0"
		}
		if down, err = d.Queue(downName); err != nil {
			t.Fatal(err)
		}
		if up, err = d.Queue(upName); err != nil {
			t.Fatal(err)
		}
	}
	const size = 4 << 20
	src, _ := m.AllocHost(size, memory.HostOptions{})
	dst, _ := m.AllocHost(size, memory.HostOptions{})
	buf, err := m.Alloc(size, memory.AllocOptions{})
	if err != nil || src == nil || dst == nil {
		t.Fatal(err)
	}
	pattern(src.Bytes(), 3)
	bin := e.NewBatch(dma.BatchOptions{})
	if err := bin.CopyToDevice(buf.Range(0, size), src.Range(0, size)); err != nil {
		t.Fatal(err)
	}
	in, err := bin.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var sig uint64
	if b.asic.IsGaudi3() {
		if len(in.Seqs()) != 0 {
			t.Fatalf("a Gaudi3 transfer with CS sequence numbers %v", in.Seqs())
		}
		if err := in.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	} else {
		if sig, _, err = s.Signal(ctx, down, stream.SubmitOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.WaitForSignal(ctx, up, sig, stream.SubmitOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bout := e.NewBatch(dma.BatchOptions{})
	if err := bout.CopyToHost(dst.Range(0, size), buf.Range(0, size)); err != nil {
		t.Fatal(err)
	}
	out, err := bout.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := in.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if !b.asic.IsGaudi3() {
		if _, err := s.Wait(ctx, sig); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(src.Bytes(), dst.Bytes()) {
		t.Fatal("the copy out did not see the copy in")
	}
}

// timestamps maps a driver timestamp store (Gaudi2) and reads it through
// the mapping.
func timestamps(t *testing.T, b backend) {
	d := b.mustOpen(t, 0, false)
	s, err := stream.New(d)
	if err != nil {
		t.Fatal(err)
	}
	buf, err := s.AllocTimestamps(16)
	if b.asic.IsGaudi() {
		if !errors.Is(err, ioctl.ErrNotSupported) && err != nil {
			t.Fatalf("AllocTimestamps on Gaudi: %v", err)
		}
		if err == nil {
			buf.Close()
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	if buf.Len() != 16 {
		t.Fatalf("%d timestamps", buf.Len())
	}
	for i := range buf.Len() {
		if buf.At(i) != 0 {
			t.Fatalf("element %d is %v before anything was recorded", i, buf.At(i))
		}
	}
	// A counters buffer (a CB mapped into the device MMU) whose counter
	// the process sets through its mapping: a registration for that value
	// is satisfied at once, and the driver writes the time into the
	// store, which the process reads through its mapping.
	io := devio.Of(d)
	var a hl.CBArgs
	a.In().Op = hl.HL_CB_OP_CREATE
	a.In().CBSize = 4096
	a.In().Flags = hl.HL_CB_FLAGS_MAP
	if err := io.CB(&a); err != nil {
		t.Fatal(err)
	}
	handle := a.Out().CBHandle()
	mem, err := io.Mmap(int64(handle), 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer io.Munmap(mem)
	binary.LittleEndian.PutUint64(mem[8:], 7)
	irq := uint32(d.HWIPInfo().FirstUserInterrupt)
	if err := s.RegisterTimestamp(ctxT(t), irq, handle, 1, 7, buf, 3); err != nil {
		t.Fatal(err)
	}
	if buf.At(3) == 0 || buf.At(2) != 0 {
		t.Fatalf("timestamps %v, %v after a satisfied registration of element 3", buf.At(2), buf.At(3))
	}
}

// resetEvent is hl-thunk's notifier scenario: a hard reset from outside
// reaches the process's registered eventfd as DEVICE_RESET, and the reset
// count grows.
func resetEvent(t *testing.T, b backend) {
	d := b.mustOpen(t, 0, false)
	n, err := d.Notifier()
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	before, err := d.ResetCount()
	if err != nil {
		t.Fatal(err)
	}
	b.reset(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev, err := n.Wait(ctx)
	if err != nil || !ev.Has(hl.HL_NOTIFIER_EVENT_DEVICE_RESET) {
		t.Fatalf("Wait = %v, %v; want DEVICE_RESET", ev, err)
	}
	after, err := d.ResetCount()
	if err != nil || after.Hard != before.Hard+1 {
		t.Fatalf("hard resets %d -> %d (%v)", before.Hard, after.Hard, err)
	}
}

// dmaAfterReset copies to the device and back, resets the device, and
// does it again with other bytes: the copy after the reset completes with
// its bytes on the Engine opened before it (on a Gaudi3 the next transfer
// sets the PDMA channels up again, and the simulator's channels run
// again, as the hardware's do once programmed).
func dmaAfterReset(t *testing.T, b backend) {
	m, e := openEngine(t, b)
	const n = 1 << 20
	src, err := m.AllocHost(n, memory.HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := m.AllocHost(n, memory.HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	a, err := m.Alloc(n, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for round := range 2 {
		if round == 1 {
			b.reset(t, 0)
		}
		pattern(src.Bytes(), round+5)
		clear(dst.Bytes())
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := e.CopyToDevice(ctx, a.Range(0, n), src.Range(0, n))
		if err == nil {
			err = e.CopyToHost(ctx, dst.Range(0, n), a.Range(0, n))
		}
		cancel()
		if err != nil {
			t.Fatalf("round %d (after the reset: %v): %v", round, round == 1, err)
		}
		if !bytes.Equal(dst.Bytes(), src.Bytes()) {
			t.Fatalf("round %d: bytes differ after host -> device -> host", round)
		}
	}
}

// dmaBuf exports device memory as a dma-buf: the buffer cannot be freed
// while the export is open, and can once it is closed.
func dmaBuf(t *testing.T, b backend) {
	d := b.mustOpen(t, 0, false)
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	buf, err := m.Alloc(16<<20, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	x, err := buf.Export(2<<20, 8<<20, memory.ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(x.Fd(), &st); err != nil {
		t.Fatalf("the export's descriptor is not this process's: %v", err)
	}
	if err := buf.Close(); !errors.Is(err, memory.ErrInUse) {
		t.Fatalf("Close with an export open: %v, want ErrInUse", err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if err := buf.Close(); err != nil {
		t.Fatalf("Close after the export closed: %v", err)
	}
}

// hwBlock maps a hardware block (Gaudi2's SCHED_ARC0 DCCM) read and write;
// Gaudi has none to map (EPERM).
func hwBlock(t *testing.T, b backend) {
	d := b.mustOpen(t, 0, false)
	if b.asic.IsGaudi3() {
		hwBlockGaudi3(t, d)
		return
	}
	const sched0DCCM = 0x1000007ff8000000 + 0x4e90000 // CFG base + the block's offset
	blk, err := control.MapBlock(d, sched0DCCM)
	if b.asic.IsGaudi() {
		if !errors.Is(err, control.ErrNotSupported) {
			t.Fatalf("MapBlock on Gaudi: %v, want ErrNotSupported", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if blk.Size() != 0x10000 {
		t.Fatalf("%d bytes mapped, want 64 KiB", blk.Size())
	}
	if err := blk.Write32(0, 1); err != nil { // read and write
		t.Fatal(err)
	}
	if err := blk.Close(); err != nil {
		t.Fatal(err)
	}
}

// hwBlockGaudi3 maps the PQM CH_A block of a PDMA channel the user owns
// (4 KiB of registers), and is refused the driver's own channel 23.
func hwBlockGaudi3(t *testing.T, d *device.Device) {
	blk, err := control.MapBlock(d, gaudi3.PDMAChannelBlock(1))
	if err != nil {
		t.Fatal(err)
	}
	if blk.Size() != gaudi3.PDMA_CH_A_BLOCK_SIZE {
		t.Fatalf("%d bytes mapped, want %d", blk.Size(), gaudi3.PDMA_CH_A_BLOCK_SIZE)
	}
	if ci, err := blk.Read32(gaudi3.PDMA_CH_A_PQM_CH_MSQ_CI); err != nil || ci != 0 {
		t.Fatalf("MSQ_CI of an idle channel %#x (%v), want 0", ci, err)
	}
	if err := blk.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := control.MapBlock(d, gaudi3.PDMAChannelBlock(gaudi3.KDMA_CH_ID)); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("MapBlock of the driver's channel %d: %v, want EINVAL", gaudi3.KDMA_CH_ID, err)
	}
}

// debugSession is hl-thunk's debug_mode on Gaudi2: DEBUG with input
// structs read from the process (ETR, STM, SPMU) and output written into
// it (the SPMU counters, the ETR write pointer). Gaudi's CoreSight indices
// differ; package sim's tests cover them.
func debugSession(t *testing.T, b backend) {
	if b.asic.IsGaudi() {
		t.Skip("Gaudi2's CoreSight indices")
	}
	d := b.mustOpen(t, 0, false)
	// Upstream's hl_debug_ioctl answers EFAULT, the out-of-tree driver's
	// EPERM (hl_debug_op_requires_debug).
	want := unix.EFAULT
	if info, err := d.DriverInfo(); err == nil && info.Driver == device.DriverOutOfTree {
		want = unix.EPERM
	}
	if err := control.ConfigureFunnel(d, 0, true); !errors.Is(err, want) {
		t.Fatalf("funnel outside debug mode: %v, want %v", err, want)
	}
	if err := control.SetDebugMode(d, true); err != nil {
		t.Fatal(err)
	}
	defer control.SetDebugMode(d, false)
	buf := d.HWIPInfo().DRAMBase
	if err := control.EnableETR(d, control.ETR{BufferAddress: buf, BufferSize: 1 << 20, SinkMode: 2}); err != nil {
		t.Fatal(err)
	}
	if err := control.ConfigureSTM(d, 4, true, control.STM{HEMask: 0xff, ID: 7}); err != nil {
		t.Fatal(err)
	}
	if err := control.EnableSPMU(d, 8, control.SPMU{EventTypes: []uint64{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	c, err := control.DisableSPMU(d, 8, 3)
	if err != nil || len(c.Events) != 3 {
		t.Fatalf("SPMU counters %+v, %v", c, err)
	}
	wp, err := control.DisableETR(d)
	if err != nil || wp != buf {
		t.Fatalf("ETR write pointer %#x, %v; want %#x", wp, err, buf)
	}
	if err := control.EnableSPMU(d, 0, control.SPMU{EventTypes: make([]uint64, 7)}); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("SPMU with 7 events: %v, want EINVAL", err)
	}
}
