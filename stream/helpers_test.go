package stream_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/internal/devio"
	"github.com/gaudi-go/gaudi/internal/simtest"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
	"github.com/gaudi-go/gaudi/stream"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// rig is one simulated device opened through the public packages.
type rig struct {
	asic sim.ASIC
	sys  *sim.System
	dev  *device.Device
	s    *stream.Streams
	mem  *memory.Manager
	f    packet.Format

	mu     sync.Mutex // guards unmaps: tests make CBs from many goroutines
	unmaps []func()   // the CB mappings of the open device, which hold its file
}

func newRig(t *testing.T, asic sim.ASIC) *rig { return newRigB(t, asic) }

// newRigB opens a rig for a test or a benchmark.
func newRigB(t testing.TB, asic sim.ASIC) *rig {
	t.Helper()
	sys := simtest.New(t, sim.Default(asic, 1))
	r := &rig{asic: asic, sys: sys, f: packet.Gaudi2}
	if asic == sim.Gaudi {
		r.f = packet.Gaudi
	}
	r.open(t)
	return r
}

// open opens the device (again).
func (r *rig) open(t testing.TB) {
	t.Helper()
	d, err := simdevice.OpenSim(r.sys.Device(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	s, err := stream.New(d)
	if err != nil {
		t.Fatal(err)
	}
	r.dev, r.mem, r.s = d, m, s
}

// close closes the device and its managers.
func (r *rig) close() {
	// A mapping holds the file (hl_device_release runs on the last
	// reference): unmap the CBs, or a reopen answers EBUSY.
	r.mu.Lock()
	unmaps := r.unmaps
	r.unmaps = nil
	r.mu.Unlock()
	for _, unmap := range unmaps {
		unmap()
	}
	r.mem.Close()
	r.dev.Close()
}

func (r *rig) engine(t *testing.T, opts dma.Options) *dma.Engine {
	t.Helper()
	if opts.Streams == 0 {
		opts.Streams = 1
	}
	e, err := dma.New(r.mem, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// Queues: host to device and device to host, stream 0 of each, as
// hl-thunk's tests choose them.
func (r *rig) down() device.Queue {
	if r.asic == sim.Gaudi {
		return device.GaudiQueue(hl.GAUDI_QUEUE_ID_DMA_0_0)
	}
	return device.Gaudi2Queue(hl.GAUDI2_QUEUE_ID_PDMA_0_0)
}

func (r *rig) up() device.Queue {
	if r.asic == sim.Gaudi {
		return device.GaudiQueue(hl.GAUDI_QUEUE_ID_DMA_1_0)
	}
	return device.Gaudi2Queue(hl.GAUDI2_QUEUE_ID_PDMA_1_0)
}

// queue returns the rig's queue with the driver's number id.
func (r *rig) queue(id uint32) device.Queue {
	if r.asic == sim.Gaudi {
		return device.GaudiQueue(hl.GaudiQueueID(id))
	}
	return device.Gaudi2Queue(hl.Gaudi2QueueID(id))
}

// plus returns the queue n after q in the driver's numbering: with n from
// 1 to 3, another stream of q's queue manager.
func (r *rig) plus(q device.Queue, n uint32) device.Queue { return r.queue(q.ID() + n) }

// cb is a command buffer the queues can run: a kernel CB on Gaudi, a
// kernel CB mapped into the device MMU and given by address on Gaudi2.
type cb struct {
	handle uint64
	va     uint64
	mem    []byte
}

func (r *rig) newCB(t *testing.T, b []byte) cb {
	t.Helper()
	io := devio.Of(r.dev)
	var a hl.CBArgs
	a.In().Op = hl.HL_CB_OP_CREATE
	a.In().CBSize = uint32(max(len(b), 4096))
	if r.asic == sim.Gaudi2 {
		a.In().Flags = hl.HL_CB_FLAGS_MAP
	}
	if err := io.CB(&a); err != nil {
		t.Fatal(err)
	}
	c := cb{handle: a.Out().CBHandle()}
	mem, err := io.Mmap(int64(c.handle), (max(len(b), 4096)+4095)&^4095, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	c.mem = mem
	copy(mem, b)
	if r.asic == sim.Gaudi2 {
		var i hl.CBArgs
		i.In().Op = hl.HL_CB_OP_INFO
		i.In().CBHandle = c.handle
		i.In().Flags = hl.HL_CB_FLAGS_GET_DEVICE_VA
		if err := io.CB(&i); err != nil {
			t.Fatal(err)
		}
		c.va = i.Out().DeviceVA()
	}
	unmapped := false
	unmap := func() {
		if !unmapped {
			unmapped = true
			io.Munmap(mem)
		}
	}
	r.mu.Lock()
	r.unmaps = append(r.unmaps, unmap)
	r.mu.Unlock()
	t.Cleanup(func() {
		unmap()
		var d hl.CBArgs
		d.In().Op = hl.HL_CB_OP_DESTROY
		d.In().CBHandle = c.handle
		io.CB(&d)
	})
	return c
}

// chunk returns the chunk that runs the first n bytes of c on queue.
func (r *rig) chunk(c cb, queue device.Queue, n int) stream.Chunk {
	if r.asic == sim.Gaudi2 {
		return stream.Chunk{Queue: queue, CB: c.va, Size: uint32(n), UserCB: true}
	}
	return stream.Chunk{Queue: queue, CB: c.handle, Size: uint32(n)}
}

// run submits packets on queue and returns the sequence number.
func (r *rig) run(t *testing.T, queue device.Queue, b []byte) uint64 {
	t.Helper()
	return r.runOpts(t, queue, b, stream.SubmitOptions{})
}

// runOpts is run with options.
func (r *rig) runOpts(t *testing.T, queue device.Queue, b []byte, opts stream.SubmitOptions) uint64 {
	t.Helper()
	c := r.newCB(t, b)
	seq, err := r.s.Submit(ctxT(t), []stream.Chunk{r.chunk(c, queue, len(b))}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

// build encodes packets.
func (r *rig) build(t *testing.T, fn func(b *packet.Builder)) []byte {
	t.Helper()
	b := packet.NewBuilder(r.f, nil)
	fn(&b)
	if b.Err() != nil {
		t.Fatal(b.Err())
	}
	return b.Bytes()
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (r *rig) wait(t *testing.T, seq uint64) stream.Completion {
	t.Helper()
	c, err := r.s.Wait(ctxT(t), seq)
	if err != nil {
		t.Fatalf("wait %d: %v", seq, err)
	}
	return c
}

func asics() []sim.ASIC { return []sim.ASIC{sim.Gaudi2, sim.Gaudi} }

type packetBuilder = packet.Builder

var nopPacket = packet.Nop{}

func ctxShort(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	t.Cleanup(cancel)
	return ctx
}

// userSync is a user SOB and monitor from INFO SYNC_MANAGER (dcore 0),
// rounded up to a multiple of 8 as hl-thunk's long mode test does.
type userSync struct{ sob, mon uint16 }

func (r *rig) firstSOB(t *testing.T) userSync {
	t.Helper()
	sm, err := r.dev.SyncManager(0)
	if err != nil {
		t.Fatal(err)
	}
	return userSync{sob: uint16((sm.FirstSyncObject + 7) &^ 7), mon: uint16((sm.FirstMonitor + 7) &^ 7)}
}

// Register layout facts for the user sync manager the queues' MSG_SHORT
// bases 0 (monitors) and 1 (SOBs) reach: Gaudi's east-north, Gaudi2's
// DCORE0 (offsets from MON_PAY_ADDRL_0).
func (r *rig) monRegs() (payH, data, arm, cfg uint16) {
	if r.asic == sim.Gaudi {
		return 0x800, 0x1000, 0x1800, 0
	}
	return 0x2000, 0x4000, 0x6000, 0x8000
}

// fenceAddr is the CP_FENCE0_RDATA register of queue's stream of its QMAN
// (the down, up, TPC 0 and MME 0 queues of the tests).
func (r *rig) fenceAddr(q device.Queue) uint64 {
	queue := q.ID()
	cfg, fence0 := uint64(0x1000007FF8000000), uint64(0x290)
	qms := map[uint32]uint64{
		uint32(hl.GAUDI2_QUEUE_ID_PDMA_0_0):       0x4C8A000,
		uint32(hl.GAUDI2_QUEUE_ID_PDMA_1_0):       0x4C9A000,
		uint32(hl.GAUDI2_QUEUE_ID_DCORE0_TPC_0_0): 0x400A000,
		uint32(hl.GAUDI2_QUEUE_ID_DCORE0_MME_0_0): 0x40CA000,
	}
	if r.asic == sim.Gaudi {
		cfg, fence0 = 0x7FFC000000, 0x308
		qms = map[uint32]uint64{
			uint32(hl.GAUDI_QUEUE_ID_DMA_0_0): 0x508000,
			uint32(hl.GAUDI_QUEUE_ID_DMA_1_0): 0x528000,
			uint32(hl.GAUDI_QUEUE_ID_TPC_0_0): 0xE08000,
			uint32(hl.GAUDI_QUEUE_ID_MME_0_0): 0x168000, // MME_0_x run on the MME2 QMAN
		}
	}
	for first, qm := range qms {
		if queue >= first && queue < first+4 {
			return cfg + qm + fence0 + uint64(queue-first)*4
		}
	}
	panic("no QMAN for the queue")
}

// setSOB returns a CB that sets a user SOB.
func (r *rig) setSOB(t *testing.T, sob uint16, v uint16) []byte {
	return r.build(t, func(b *packet.Builder) { r.sobWrite(t, b, sob, v, false, false) })
}

func (r *rig) sobWrite(t *testing.T, b *packet.Builder, sob uint16, v uint16, add, long bool) {
	w, err := packet.SOBUpdate{Value: v, Add: add, LongMode: long}.Word(r.f)
	if err != nil {
		t.Fatal(err)
	}
	b.MsgShort(packet.MsgShort{Header: packet.Header{MsgBarrier: true, RegBarrier: r.asic == sim.Gaudi}, Value: w, Offset: sob * 4, Base: 1})
}

// monitor appends hl-thunk's add_monitor: payload address, data, then the
// arm (EQUAL on one SOB) of mon.
func (r *rig) monitor(t *testing.T, b *packet.Builder, sob, mon uint16, val uint16, addr uint64, payload uint32) {
	payH, data, arm, _ := r.monRegs()
	w := func(off uint16, v uint32) {
		b.MsgShort(packet.MsgShort{Header: packet.Header{RegBarrier: r.asic == sim.Gaudi}, Value: v, Offset: off + mon*4, Base: 0})
	}
	w(0, uint32(addr))
	w(payH, uint32(addr>>32))
	w(data, payload)
	m, err := packet.SOBMask(sob, 1)
	if err != nil {
		t.Fatal(err)
	}
	aw, err := packet.MonArm{Group: uint8(sob / 8), Mask: m, Equal: true, Value: val}.Word(r.f)
	if err != nil {
		t.Fatal(err)
	}
	b.MsgShort(packet.MsgShort{Header: packet.Header{MsgBarrier: true, RegBarrier: r.asic == sim.Gaudi}, Value: aw, Offset: arm + mon*4, Base: 0})
}

// monitorFence is hl-thunk's add_monitor_and_fence on stream 0 of queue:
// the monitor writes 1 to the queue's fence counter 0 when sob equals val,
// and a FENCE waits for it; then runs after.
func (r *rig) monitorFence(t *testing.T, queue device.Queue, u userSync, mon uint16, val uint16, then func(b *packet.Builder)) []byte {
	return r.build(t, func(b *packet.Builder) {
		r.monitor(t, b, u.sob, mon, val, r.fenceAddr(queue), 1)
		b.Fence(packet.Fence{Header: packet.Header{MsgBarrier: true, RegBarrier: r.asic == sim.Gaudi}, ID: 0, Target: 1, Dec: 1})
		if then != nil {
			then(b)
		}
	})
}

func linDMA(src, dst uint64, n uint32) packet.LinDMA {
	return packet.LinDMA{Src: src, Dst: dst, Size: n}
}
