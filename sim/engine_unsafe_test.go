package sim

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"time"
	"unsafe"

	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// fillRandom fills b with a cheap pseudo-random pattern seeded by seed: a
// random block of 1 MiB + 7 bytes, repeated.
func fillRandom(b []byte, seed uint64) {
	const block = 1<<20 + 7
	if len(b) > block {
		fillRandom(b[:block], seed)
		for filled := block; filled < len(b); filled *= 2 {
			copy(b[filled:], b[:filled])
		}
		return
	}
	x := seed | 1
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(b[i:], x)
	}
	for ; i < len(b); i++ {
		b[i] = byte(x >> (8 * (i % 8)))
	}
}

// runCB submits one CB on queue q (a kernel CB on Gaudi's external
// queues, a user CB otherwise) and returns the sequence number.
func runCB(t *testing.T, f *File, q uint32, cb []byte, flags, timeout uint32) uint64 {
	t.Helper()
	var ch chunk
	if !f.dev.prof.dramVirtual && q < 8 {
		h := kernelCB(t, f, uint32(len(cb)), cb)
		ch = chunk{queue: q, handle: h, size: uint32(len(cb))}
	} else {
		ch = userCB(t, f, q, cb)
	}
	seq, a, err := submit(f, chunksOf([]chunk{ch}), flags, timeout)
	if err != nil {
		t.Fatalf("submit: %v (status %#x)", err, a.Out().Status)
	}
	return seq
}

// deviceBuf returns a device address of n bytes of DRAM: a mapped
// allocation on Gaudi2, the first user DRAM on Gaudi.
func deviceBuf(t *testing.T, f *File, n uint64) uint64 {
	t.Helper()
	if !f.dev.prof.dramVirtual {
		return f.dev.prof.dramUserBase
	}
	h, err := memAllocFlags(f, n, 0)
	if err != nil {
		t.Fatal(err)
	}
	va, err := memMapDevice(f, h, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return va
}

func TestDMASweep(t *testing.T) {
	sizes := []uint64{1, 4097, 1 << 20, 64 << 20}
	for _, asic := range []ASIC{Gaudi2, Gaudi} {
		_, _, f := openSim(t, asic)
		fm := f.dev.hardware().format()
		p := &f.dev.prof
		src, srcVA := hostMem(t, f, 64<<20+4096)
		dst, dstVA := hostMem(t, f, 64<<20+4096)
		dram := deviceBuf(t, f, 64<<20)
		for _, target := range []string{"SRAM", "DRAM"} {
			for _, n := range sizes {
				dev := dram + 3 // unaligned on purpose
				if target == "SRAM" {
					if n > 16<<20 {
						continue
					}
					dev = p.sramUserBase + 5
				}
				t.Run(fmt.Sprintf("%v/host-%s-host/%d", asic, target, n), func(t *testing.T) {
					fillRandom(src[:n], n)
					clear(dst[:n+1])
					cb := build(t, fm, func(b *packet.Builder) {
						b.LinDMA(packet.LinDMA{Src: srcVA, Dst: dev, Size: uint32(n)})
						// It reads what the first writes: it needs the engine barrier.
						b.LinDMA(packet.LinDMA{Header: packet.Header{EngineBarrier: true}, Src: dev, Dst: dstVA, Size: uint32(n)})
					})
					mustComplete(t, f, runCB(t, f, 0, cb, 0, 0))
					if !bytes.Equal(src[:n], dst[:n]) || dst[n] != 0 {
						t.Fatal("data differ")
					}
				})
			}
		}
	}
}

func TestDMAMemsetAndEndian(t *testing.T) {
	for _, asic := range []ASIC{Gaudi2, Gaudi} {
		_, _, f := openSim(t, asic)
		fm := f.dev.hardware().format()
		host, hostVA := hostMem(t, f, 1<<20)
		dram := deviceBuf(t, f, 1<<20)
		const pattern = 0x0807060504030201
		cases := []struct {
			name     string
			dst      uint64
			off, n   uint64
			pattern  uint64
			readBack bool
		}{
			{"host", hostVA, 3, 1001, pattern, false},
			{"DRAM", dram, 5, 100003, pattern, true},
			{"DRAM zero", dram, 7, 50001, 0, true},
			{"SRAM", f.dev.prof.sramUserBase, 1, 4099, pattern, true},
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("%v/%s", asic, c.name), func(t *testing.T) {
				for i := range host[:c.n+16] {
					host[i] = 0xEE
				}
				cb := build(t, fm, func(b *packet.Builder) {
					if c.readBack { // pre-fill with 0xEE so zeros show
						b.LinDMA(packet.LinDMA{Src: hostVA, Dst: c.dst, Size: uint32(c.n + 16)})
					}
					b.LinDMA(packet.LinDMA{Header: packet.Header{EngineBarrier: true}, Memset: true, Src: c.pattern, Dst: c.dst + c.off, Size: uint32(c.n)})
					if c.readBack {
						b.LinDMA(packet.LinDMA{Header: packet.Header{EngineBarrier: true}, Src: c.dst, Dst: hostVA, Size: uint32(c.n + 16)})
					}
				})
				mustComplete(t, f, runCB(t, f, 0, cb, 0, 0))
				for i := uint64(0); i < c.n+16; i++ {
					want := byte(0xEE)
					if i >= c.off && i < c.off+c.n {
						want = byte(c.pattern >> (8 * ((i - c.off) % 8)))
					}
					if host[i] != want {
						t.Fatalf("byte %d: %#x, want %#x", i, host[i], want)
					}
				}
			})
		}
	}
	_, _, f := openSim(t, Gaudi2)
	src, srcVA := hostMem(t, f, 4096)
	dst, dstVA := hostMem(t, f, 4096)
	in := []byte("0123456789abcdefghi") // 19 bytes: a tail for every width
	copy(src, in)
	for endian, want := range map[uint8]string{
		1: "1032547698badcfehgi",
		2: "32107654ba98fedcghi",
		3: "76543210fedcba98ghi",
	} {
		cb := build(t, packet.Gaudi2, func(b *packet.Builder) {
			b.LinDMA(packet.LinDMA{Src: srcVA, Dst: dstVA, Size: uint32(len(in)), Endian: endian})
		})
		mustComplete(t, f, runCB(t, f, 0, cb, 0, 0))
		if got := string(dst[:len(in)]); got != want {
			t.Fatalf("endian %d: %q, want %q", endian, got, want)
		}
	}
}

// fenceSetup returns the packets that make queue q wait until SOB sob
// reaches 1, through monitor mon whose payload increments the queue's
// fence counter 2, as the driver's wait CB does.
func fenceWaitCB(t *testing.T, f *File, q int, sob, mon uint16, then func(b *packet.Builder)) []byte {
	t.Helper()
	// CP_FENCE2_RDATA of the queue's stream: the driver's
	// gaudi_get_fence_addr / gaudi2_gen_wait_cb addresses.
	var fence uint64
	var stride uint16 // MON_PAY_ADDRH_0 - MON_PAY_ADDRL_0
	fm := f.dev.hardware().format()
	if fm == packet.Gaudi2 {
		fence = 0x1000007FF8000000 + 0x4C8A2B8 + uint64(q%4)*4 // PDMA0 QM
		stride = 0x2000
	} else {
		fence = 0x7FFC000000 + 0x508330 + uint64(q%4)*4 // DMA0 QM
		stride = 0x800
	}
	return build(t, fm, func(b *packet.Builder) {
		b.MsgShort(fm.MonitorWrite(mon*4, uint32(fence)))
		b.MsgShort(fm.MonitorWrite(stride+mon*4, uint32(fence>>32)))
		b.MsgShort(fm.MonitorWrite(2*stride+mon*4, 1))
		p, err := fm.ArmMonitor(3*stride+mon*4, sob, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		b.MsgShort(p)
		b.Fence(fm.FenceWait())
		then(b)
	})
}

func TestFenceTwoStreams(t *testing.T) {
	for _, asic := range []ASIC{Gaudi2, Gaudi} {
		t.Run(asic.String(), func(t *testing.T) {
			_, _, f := openSim(t, asic)
			fm := f.dev.hardware().format()
			mem, va := hostMem(t, f, 4096)
			const sob, mon = 413, 289
			// Queue A (stream 0 of the first PCI DMA QMAN) waits; queue B
			// (stream 1 of the same QMAN) writes data, then signals.
			a := fenceWaitCB(t, f, 0, sob, mon, func(b *packet.Builder) {
				b.MsgLong(packet.MsgLong{Addr: va + 4, Value: 0xCAFE})
			})
			seqA := runCB(t, f, 0, a, 0, 0)
			time.Sleep(20 * time.Millisecond)
			if out, err := waitCS(f, seqA, 0); err != nil || out.Status != hl.HL_WAIT_CS_STATUS_BUSY {
				t.Fatalf("A before B: %+v, %v", out, err)
			}
			if binary.LittleEndian.Uint32(mem[4:]) != 0 {
				t.Fatal("A went past its fence")
			}
			bcb := build(t, fm, func(b *packet.Builder) {
				b.MsgLong(packet.MsgLong{Addr: va, Value: 0xBEEF})
				b.Signal(sob, false)
			})
			seqB := runCB(t, f, 1, bcb, 0, 0)
			mustComplete(t, f, seqB)
			mustComplete(t, f, seqA)
			if binary.LittleEndian.Uint32(mem) != 0xBEEF || binary.LittleEndian.Uint32(mem[4:]) != 0xCAFE {
				t.Fatalf("memory %x", mem[:8])
			}
			blk := 0
			if asic == Gaudi {
				blk = 3 // W_S
			}
			if v := f.dev.hardware().sm.sob(blk, sob); v != 1 {
				t.Fatalf("SOB %d", v)
			}
		})
	}
}

// csFail is a CS that must fail: its errno, and which drop counter grows.
type csFail struct {
	name    string
	chunks  []hl.CSChunk
	ptr     uint64 // overrides the chunk pointer when non-zero
	n       uint32 // overrides the chunk count when non-zero
	flags   uint32
	pad     byte
	errno   unix.Errno
	counter int // -1 for none
	seqUsed bool
}

func runFailures(t *testing.T, f *File, cases []csFail) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := csDropCounters(t, f)
			next := f.subm().seq
			var a hl.CSArgs
			if len(c.chunks) > 0 {
				setChunksExecute(a.In(), addrFor(&c.chunks[0]))
			}
			a.In().NumChunksExecute = uint32(len(c.chunks))
			if c.ptr != 0 {
				setChunksExecute(a.In(), c.ptr)
			}
			if c.n != 0 {
				a.In().NumChunksExecute = c.n
			}
			a.In().CSFlags = c.flags
			a.In().Pad[2] = c.pad
			err := csSubmit(f, &a)
			if err != c.errno {
				t.Fatalf("%v, want %v", err, c.errno)
			}
			out := a.Out()
			if c.flags&(hl.HL_CS_FLAGS_ENGINE_CORE_COMMAND) == 0 && out.Seq() != math.MaxUint64 {
				t.Fatalf("seq %d", out.Seq())
			}
			if out.Status != uint32(-int32(c.errno)) {
				t.Fatalf("status %#x", out.Status)
			}
			after := csDropCounters(t, f)
			b4 := []uint64{before.CtxOutOfMemDropCnt, before.CtxParsingDropCnt, before.CtxQueueFullDropCnt,
				before.CtxDeviceInResetDropCnt, before.CtxMaxCSInFlightDropCnt, before.CtxValidationDropCnt}
			now := []uint64{after.CtxOutOfMemDropCnt, after.CtxParsingDropCnt, after.CtxQueueFullDropCnt,
				after.CtxDeviceInResetDropCnt, after.CtxMaxCSInFlightDropCnt, after.CtxValidationDropCnt}
			for i := range b4 {
				want := b4[i]
				if i == c.counter {
					want++
				}
				if now[i] != want {
					t.Fatalf("counter %d: %d -> %d", i, b4[i], now[i])
				}
			}
			if used := f.subm().seq != next; used != c.seqUsed {
				t.Fatalf("sequence number consumed: %v", used)
			}
			if c.seqUsed {
				// The failed CS's fence completed: its wait reports COMPLETED.
				if out, err := waitCS(f, next, 0); err != nil || out.Status != hl.HL_WAIT_CS_STATUS_COMPLETED {
					t.Fatalf("wait on the failed CS: %+v, %v", out, err)
				}
			}
		})
	}
}

func TestCSFailuresGaudi2(t *testing.T) {
	_, _, f := openSim(t, Gaudi2)
	nop := build(t, packet.Gaudi2, func(b *packet.Builder) { b.Nop(packet.Nop{}) })
	good := userCB(t, f, 0, nop)
	with := func(mod func(c *chunk)) []hl.CSChunk {
		c := good
		mod(&c)
		return chunksOf([]chunk{c})
	}
	var many [513]hl.CSChunk
	ids := []uint32{1}
	runFailures(t, f, []csFail{
		{name: "pad", chunks: with(func(*chunk) {}), pad: 1, errno: unix.EINVAL, counter: -1},
		{name: "no chunks", errno: unix.EINVAL, counter: -1},
		{name: "staged", chunks: with(func(*chunk) {}), flags: hl.HL_CS_FLAGS_STAGED_SUBMISSION, errno: unix.EPERM, counter: -1},
		{name: "two types", chunks: with(func(*chunk) {}), flags: hl.HL_CS_FLAGS_SIGNAL | hl.HL_CS_FLAGS_WAIT, errno: unix.EINVAL, counter: -1},
		{name: "signal on a NIC queue", chunks: with(func(c *chunk) { c.queue = 156 }), flags: hl.HL_CS_FLAGS_SIGNAL, errno: unix.EINVAL, counter: dropValidation},
		{name: "513 chunks", chunks: many[:], errno: unix.EINVAL, counter: dropValidation},
		{name: "bad pointer", ptr: 8, n: 2, errno: unix.EFAULT, counter: dropValidation},
		{name: "queue 261", chunks: with(func(c *chunk) { c.queue = 261 }), errno: unix.EINVAL, counter: dropValidation, seqUsed: true},
		{name: "CPU PQ", chunks: with(func(c *chunk) { c.queue = 260 }), errno: unix.EINVAL, counter: dropValidation, seqUsed: true},
		{name: "kernel CB", chunks: with(func(c *chunk) { c.user = false }), errno: unix.EINVAL, counter: dropValidation, seqUsed: true},
		{name: "PDMA_0_2", chunks: with(func(c *chunk) { c.queue = 2 }), errno: unix.EINVAL, counter: dropParsing, seqUsed: true},
		{name: "NIC", chunks: with(func(c *chunk) { c.queue = 156 }), errno: unix.EINVAL, counter: dropParsing, seqUsed: true},
		{name: "CB address", chunks: with(func(c *chunk) { c.handle = 0x1000 }), errno: unix.EFAULT, counter: dropParsing, seqUsed: true},
		{name: "engine cores 0", flags: hl.HL_CS_FLAGS_ENGINE_CORE_COMMAND, n: 0, chunks: nil, errno: unix.EINVAL, counter: -1},
	})
	// ENGINE_CORE with a valid command, FLUSH: no sequence number.
	var a hl.CSArgs
	setEngineCores(a.In(), addrFor(&ids[0]))
	a.In().SetNumEngineCores(1)
	a.In().SetCoreCommand(uint32(hl.HL_ENGINE_CORE_HALT))
	a.In().CSFlags = hl.HL_CS_FLAGS_ENGINE_CORE_COMMAND
	if err := csSubmit(f, &a); err != nil || a.Out().Seq() != math.MaxUint64 || a.Out().Status != 0 {
		t.Fatalf("engine cores: %v, %+v", err, *a.Out())
	}
	a = hl.CSArgs{}
	a.In().CSFlags = hl.HL_CS_FLAGS_FLUSH_PCI_HBW_WRITES
	if err := csSubmit(f, &a); err != nil {
		t.Fatalf("flush: %v", err)
	}
	// The totals count too.
	c := csDropCounters(t, f)
	if c.TotalValidationDropCnt != c.CtxValidationDropCnt || c.CtxValidationDropCnt != 6 || c.CtxParsingDropCnt != 3 {
		t.Fatalf("counters %+v", c)
	}
	f.dev.SetState(NeedsReset)
	if _, _, err := submit(f, with(func(*chunk) {}), 0, 0); err != unix.EBUSY {
		t.Fatalf("not operational: %v", err)
	}
	f.dev.SetState(Operational)
}

func TestCSFailuresGaudi(t *testing.T) {
	_, _, f := openSim(t, Gaudi)
	kcb := func(b []byte, size uint32) chunk {
		h := kernelCB(t, f, 4096, b)
		return chunk{queue: 0, handle: h, size: size}
	}
	nop := build(t, packet.Gaudi, func(b *packet.Builder) { b.Nop(packet.Nop{}) })
	prot := build(t, packet.Gaudi, func(b *packet.Builder) { b.Nop(packet.Nop{}); b.MsgProt(packet.MsgProt{}) })
	bulk := build(t, packet.Gaudi, func(b *packet.Builder) { b.WRegBulk(packet.WRegBulk{Values: []uint64{1}}) })
	lae := build(t, packet.Gaudi, func(b *packet.Builder) { b.LoadAndExe(packet.LoadAndExe{Dst: true}) })
	undef := []byte{0, 0, 0, 0, 0, 0, 0, 0x1f}
	intCB := userCB(t, f, 9, nop)
	one := func(c chunk) []hl.CSChunk { return chunksOf([]chunk{c}) }
	runFailures(t, f, []csFail{
		{name: "MSG_PROT", chunks: one(kcb(prot, uint32(len(prot)))), errno: unix.EPERM, counter: dropParsing, seqUsed: true},
		{name: "WREG_BULK", chunks: one(kcb(bulk, uint32(len(bulk)))), errno: unix.EPERM, counter: dropParsing, seqUsed: true},
		{name: "LOAD_AND_EXE dst", chunks: one(kcb(lae, uint32(len(lae)))), errno: unix.EPERM, counter: dropParsing, seqUsed: true},
		{name: "undefined opcode", chunks: one(kcb(undef, 8)), errno: unix.EINVAL, counter: dropParsing, seqUsed: true},
		{name: "cut packet", chunks: one(kcb(nop, 12)), errno: unix.EINVAL, counter: dropParsing, seqUsed: true},
		{name: "cb_size 4", chunks: one(kcb(nop, 4)), errno: unix.EINVAL, counter: dropValidation, seqUsed: true},
		{name: "cb_size > CB", chunks: one(kcb(nop, 4097)), errno: unix.EINVAL, counter: dropValidation, seqUsed: true},
		{name: "bad handle", chunks: one(chunk{queue: 0, handle: 0x1234000, size: 8}), errno: unix.EINVAL, counter: dropValidation, seqUsed: true},
		{name: "CPU PQ", chunks: one(chunk{queue: 8, size: 8}), errno: unix.EINVAL, counter: dropValidation, seqUsed: true},
		{name: "internal only", chunks: one(intCB), errno: unix.EINVAL, counter: dropValidation, seqUsed: true},
		{name: "NIC", chunks: one(chunk{queue: 73, handle: intCB.handle, size: 8}), errno: unix.EINVAL, counter: dropParsing, seqUsed: true},
		{name: "internal CB address", chunks: one(chunk{queue: 9, handle: 8, size: 8}), errno: unix.EFAULT, counter: dropParsing, seqUsed: true},
		{name: "staged part without its first", chunks: one(kcb(nop, 8)), flags: hl.HL_CS_FLAGS_STAGED_SUBMISSION, errno: unix.EINVAL, counter: -1, seqUsed: true},
		{name: "engine cores", flags: hl.HL_CS_FLAGS_ENGINE_CORE_COMMAND, errno: unix.EPERM, counter: -1},
	})
	// An external job with an internal one is fine; the internal job runs.
	mem, va := hostMem(t, f, 4096)
	w := build(t, packet.Gaudi, func(b *packet.Builder) { b.MsgLong(packet.MsgLong{Addr: va, Value: 7}) })
	seq, _, err := submit(f, chunksOf([]chunk{kcb(nop, 8), userCB(t, f, 9, w)}), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	mustComplete(t, f, seq)
	deadline := time.Now().Add(5 * time.Second)
	for binary.LittleEndian.Uint32(mem) != 7 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if binary.LittleEndian.Uint32(mem) != 7 {
		t.Fatal("the internal job did not run")
	}
}

// blockedCB makes a queue wait on a fence nothing signals.
func blockedCB(t *testing.T, f *File) []byte {
	return build(t, f.dev.hardware().format(), func(b *packet.Builder) { b.Fence(packet.Fence{ID: 1, Target: 1, Dec: 1}) })
}

func resetCount(t *testing.T, f *File) uint32 {
	t.Helper()
	var r hl.InfoResetCount
	if err := infoInto(t, f, hl.HL_INFO_RESET_COUNT, &r); err != nil {
		t.Fatal(err)
	}
	return r.HardResetCnt
}

// TestCSTimeoutResets: without an eventfd registered, a CS timeout hard-
// resets the device at once (cs_timedout -> hl_device_cond_reset ->
// hl_device_reset with HL_DRV_RESET_HARD), which rolls the CSs back and
// kills the process holding the compute node (device_kill_open_processes).
// The simulator marks the file dead: waits already under way answer, every
// later call is ErrKilled, and the device opens again once it is closed.
func TestCSTimeoutResets(t *testing.T) {
	_, d, f := openSim(t, Gaudi2)
	before := resetCount(t, f)
	start := time.Now()
	seq := runCB(t, f, 0, blockedCB(t, f), hl.HL_CS_FLAGS_CUSTOM_TIMEOUT, 1)
	other := runCB(t, f, 1, blockedCB(t, f), 0, 0)
	otherDone := make(chan error, 1)
	go func() {
		_, err := waitCS(f, other, 10_000_000)
		otherDone <- err
	}()
	out, err := waitCS(f, seq, 5_000_000)
	if err != unix.ETIMEDOUT || out.Status != hl.HL_WAIT_CS_STATUS_TIMEDOUT {
		t.Fatalf("timed-out CS: %+v, %v", out, err)
	}
	if el := time.Since(start); el < time.Second || el > 3*time.Second {
		t.Fatalf("timed out after %v", el)
	}
	if err := <-otherDone; err != unix.EIO {
		t.Fatalf("wait on the aborted CS under way: %v, want EIO", err)
	}
	for d.State() != Operational {
		time.Sleep(time.Millisecond)
	}
	if !f.Killed() {
		t.Fatal("the file survived the hard reset of a CS timeout")
	}
	if _, err := waitCS(f, other, 0); err != ErrKilled {
		t.Fatalf("WAIT_CS on the killed file: %v, want ErrKilled", err)
	}
	if _, err := cbCreate(f, 4096, 0); err != ErrKilled {
		t.Fatalf("CB on the killed file: %v, want ErrKilled", err)
	}
	if _, err := f.Mmap(0, 4096, unix.PROT_READ, unix.MAP_SHARED); err != ErrKilled {
		t.Fatalf("mmap on the killed file: %v, want ErrKilled", err)
	}
	if _, err := d.Open(); err != unix.EBUSY {
		t.Fatalf("open while the killed file is open: %v, want EBUSY", err)
	}
	ctl, err := d.OpenControl()
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	var ev hl.InfoCSTimeoutEvent
	if err := infoInto(t, ctl, hl.HL_INFO_CS_TIMEOUT_EVENT, &ev); err != nil || ev.Seq != seq {
		t.Fatalf("CS timeout event %+v, %v", ev, err)
	}
	closeSim(f)
	g, err := d.Open()
	if err != nil {
		t.Fatalf("open after closing the killed file: %v", err)
	}
	t.Cleanup(func() { closeSim(g) })
	if n := resetCount(t, g); n != before+1 {
		t.Fatalf("hard resets %d -> %d", before, n)
	}
	// The device works after the reset.
	nop := build(t, packet.Gaudi2, func(b *packet.Builder) { b.Nop(packet.Nop{}) })
	mustComplete(t, g, runCB(t, g, 0, nop, 0, 0))
}

func TestCSTimeoutSkipReset(t *testing.T) {
	_, _, f := openSim(t, Gaudi2)
	before := resetCount(t, f)
	// CUSTOM_TIMEOUT 0 times out at once, as the driver's 0-jiffy delay.
	seq := runCB(t, f, 0, blockedCB(t, f), hl.HL_CS_FLAGS_CUSTOM_TIMEOUT|hl.HL_CS_FLAGS_SKIP_RESET_ON_TIMEOUT, 0)
	var ev hl.InfoCSTimeoutEvent
	for deadline := time.Now().Add(5 * time.Second); ev.Seq != seq && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
		infoInto(t, f, hl.HL_INFO_CS_TIMEOUT_EVENT, &ev)
	}
	if ev.Seq != seq {
		t.Fatal("no CS timeout recorded")
	}
	if out, err := waitCS(f, seq, 0); err != nil || out.Status != hl.HL_WAIT_CS_STATUS_BUSY {
		t.Fatalf("after the timeout: %+v, %v", out, err)
	}
	// Release the fence by writing CP_FENCE1_RDATA_0 of PDMA_0.
	fence1 := uint64(0x1000007FF8000000 + 0x4C8A2A4)
	rel := build(t, packet.Gaudi2, func(b *packet.Builder) { b.MsgLong(packet.MsgLong{Addr: fence1, Value: 1}) })
	mustComplete(t, f, runCB(t, f, 8, rel, 0, 0))
	mustComplete(t, f, seq)
	if n := resetCount(t, f); n != before {
		t.Fatalf("reset despite SKIP_RESET_ON_TIMEOUT: %d -> %d", before, n)
	}
}

func TestCSPendingLimit(t *testing.T) {
	_, d, f := openSim(t, Gaudi2)
	blocked := runCB(t, f, 1, blockedCB(t, f), 0, 0)
	nop := build(t, packet.Gaudi2, func(b *packet.Builder) { b.Nop(packet.Nop{}) })
	chs := chunksOf([]chunk{userCB(t, f, 0, nop)})
	for i := 2; i <= 64; i++ {
		seq, _, err := submit(f, chs, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		mustComplete(t, f, seq)
	}
	var a hl.CSArgs
	setChunksExecute(a.In(), addrFor(&chs[0]))
	a.In().NumChunksExecute = 1
	a.In().CSFlags = hl.HL_CS_FLAGS_TIMESTAMP
	saved := a
	if err := csSubmit(f, &a); err != unix.EAGAIN || a != saved {
		t.Fatalf("65th CS: %v, args %+v", err, a)
	}
	c := csDropCounters(t, f)
	if c.CtxMaxCSInFlightDropCnt != 1 || c.TotalMaxCSInFlightDropCnt != 1 {
		t.Fatalf("counters %+v", c)
	}
	d.Reset()
	if out, err := waitCS(f, blocked, 0); err != unix.EIO || out.Status != hl.HL_WAIT_CS_STATUS_ABORTED {
		t.Fatalf("blocked CS after reset: %+v, %v", out, err)
	}
	if err := csSubmit(f, &a); err != nil || a.Out().Seq() != 65 {
		t.Fatalf("after the reset: %v, seq %d", err, a.Out().Seq())
	}
}

func TestPageFault(t *testing.T) {
	_, d, f := openSim(t, Gaudi2)
	host, va := hostMem(t, f, 8192)
	_ = host
	bad := va + 1<<30 // host VA range, nothing mapped
	cb := build(t, packet.Gaudi2, func(b *packet.Builder) {
		b.LinDMA(packet.LinDMA{Src: va, Dst: bad, Size: 64})
	})
	seq := runCB(t, f, 0, cb, 0, 0)
	var pf hl.PageFaultInfo
	for deadline := time.Now().Add(5 * time.Second); pf.Addr == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
		infoInto(t, f, hl.HL_INFO_PAGE_FAULT_EVENT, &pf)
	}
	if pf.Addr != bad {
		t.Fatalf("page fault at %#x, want %#x", pf.Addr, bad)
	}
	if v := takeViolations(t, d, ViolationPageFault); len(v) == 1 && (v[0].Addr != bad || v[0].Seq != seq) {
		t.Errorf("violation %+v, want the page fault at %#x of CS %d", v[0], bad, seq)
	}
	var maps [8]hl.UserMapping
	var ia hl.InfoArgs
	ia.Op = hl.HL_INFO_USER_MAPPINGS
	setPointer(&ia.ReturnPointer, addrFor(&maps))
	ia.ReturnSize = uint32(unsafe.Sizeof(maps))
	ia.SetArraySize(uint32(len(maps)))
	if err := f.Ioctl(hl.DRM_IOCTL_HL_INFO, unsafe.Pointer(&ia)); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range maps {
		found = found || (m.DevVA == va && m.Size == 8192)
	}
	if !found {
		t.Fatalf("user mappings %+v lack %#x", maps, va)
	}
	if ev := getEvents(t, f); ev&hl.HL_NOTIFIER_EVENT_PAGE_FAULT == 0 {
		t.Fatalf("events %#x", ev)
	}
	// The stream stopped: the CS does not complete until a reset aborts it.
	if out, err := waitCS(f, seq, 20_000); err != nil || out.Status != hl.HL_WAIT_CS_STATUS_BUSY {
		t.Fatalf("faulted CS: %+v, %v", out, err)
	}
	d.Reset()
	if out, err := waitCS(f, seq, 0); err != unix.EIO || out.Status != hl.HL_WAIT_CS_STATUS_ABORTED {
		t.Fatalf("after reset: %+v, %v", out, err)
	}
}

func TestUndefinedOpcodeGaudi2Resets(t *testing.T) {
	_, _, f := openSim(t, Gaudi2)
	before := resetCount(t, f)
	seq := runCB(t, f, 0, []byte{0, 0, 0, 0, 0, 0, 0, 0x1f}, 0, 0)
	out, err := waitCS(f, seq, 5_000_000)
	for err == unix.EBUSY { // the reset is under way
		time.Sleep(time.Millisecond)
		out, err = waitCS(f, seq, 5_000_000)
	}
	if err != unix.EIO || out.Status != hl.HL_WAIT_CS_STATUS_ABORTED {
		t.Fatalf("%+v, %v", out, err)
	}
	var ev hl.InfoUndefinedOpcodeEvent
	if err := infoInto(t, f, hl.HL_INFO_UNDEFINED_OPCODE_EVENT, &ev); err != nil || ev.EngineID != uint32(hl.GAUDI2_ENGINE_ID_PDMA_0) {
		t.Fatalf("event %+v, %v", ev, err)
	}
	for deadline := time.Now().Add(5 * time.Second); resetCount(t, f) == before && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if resetCount(t, f) != before+1 {
		t.Fatal("no reset")
	}
}

func TestResetDuringTransfer(t *testing.T) {
	s := newTestSystem(t, Config{Devices: []DeviceConfig{{ASIC: Gaudi2, PCIeBandwidth: 100 << 20}}})
	t.Cleanup(func() { s.Close() })
	d := s.Device(0)
	f, err := d.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSim(f) })
	_, va := hostMem(t, f, 16<<20)
	dram := deviceBuf(t, f, 16<<20)
	cb := func(n uint32) []byte {
		return build(t, packet.Gaudi2, func(b *packet.Builder) { b.LinDMA(packet.LinDMA{Src: va, Dst: dram, Size: n}) })
	}
	// 4 MiB at 100 MiB/s takes 40 ms.
	start := time.Now()
	mustComplete(t, f, runCB(t, f, 0, cb(4<<20), 0, 0))
	if el := time.Since(start); el < 35*time.Millisecond {
		t.Fatalf("4 MiB took %v", el)
	}
	seq := runCB(t, f, 0, cb(16<<20), 0, 0)
	time.Sleep(30 * time.Millisecond)
	start = time.Now()
	d.Reset()
	out, err := waitCS(f, seq, 1_000_000)
	if err != unix.EIO || out.Status != hl.HL_WAIT_CS_STATUS_ABORTED {
		t.Fatalf("%+v, %v", out, err)
	}
	if el := time.Since(start); el > 500*time.Millisecond {
		t.Fatalf("the reset took %v", el)
	}
}

func TestWaitMultiCS(t *testing.T) {
	_, _, f := openSim(t, Gaudi)
	nop := build(t, packet.Gaudi, func(b *packet.Builder) { b.Nop(packet.Nop{}) })
	s1 := runCB(t, f, 0, nop, 0, 0)
	s2 := runCB(t, f, 1, nop, hl.HL_CS_FLAGS_TIMESTAMP, 0)
	blocked := runCB(t, f, 2, blockedCB(t, f), 0, 0)
	mustComplete(t, f, s1)
	mustComplete(t, f, s2)
	multi := func(seqs []uint64, us uint64) (hl.WaitCSOut, error) {
		var a hl.WaitCSArgs
		a.In().SetSeq(addrFor(&seqs[0]))
		a.In().SetSeqArrLen(uint8(len(seqs)))
		a.In().SetTimeoutUs(us)
		a.In().Flags = hl.HL_WAIT_CS_FLAGS_MULTI_CS
		err := f.Ioctl(hl.DRM_IOCTL_HL_WAIT_CS, unsafe.Pointer(&a))
		return *a.Out(), err
	}
	out, err := multi([]uint64{blocked, s1}, 0)
	if err != nil || out.Status != hl.HL_WAIT_CS_STATUS_COMPLETED || out.CSCompletionMap != 2 || out.Flags != hl.HL_WAIT_CS_STATUS_FLAG_GONE {
		t.Fatalf("%+v, %v", out, err)
	}
	out, err = multi([]uint64{s2, blocked}, 0)
	if err != nil || out.CSCompletionMap != 1 || out.Flags != hl.HL_WAIT_CS_STATUS_FLAG_TIMESTAMP_VLD || out.TimestampNsec == 0 {
		t.Fatalf("%+v, %v", out, err)
	}
	out, err = multi([]uint64{blocked}, 10_000)
	if err != nil || out.Status != hl.HL_WAIT_CS_STATUS_BUSY {
		t.Fatalf("%+v, %v", out, err)
	}
	if _, err := multi([]uint64{blocked + 1}, 0); err != unix.EINVAL {
		t.Fatalf("future seq: %v", err)
	}
	f.dev.Reset()
	_, _, g := openSim(t, Gaudi2)
	var a hl.WaitCSArgs
	a.In().Flags = hl.HL_WAIT_CS_FLAGS_MULTI_CS
	if err := g.Ioctl(hl.DRM_IOCTL_HL_WAIT_CS, unsafe.Pointer(&a)); err != unix.EPERM {
		t.Fatalf("Gaudi2 multi-CS: %v", err)
	}
	a.In().Flags = hl.HL_WAIT_CS_FLAGS_INTERRUPT | 1000<<20
	if err := g.Ioctl(hl.DRM_IOCTL_HL_WAIT_CS, unsafe.Pointer(&a)); err != unix.EINVAL {
		t.Fatalf("bad interrupt: %v", err)
	}
	a.In().Flags = hl.HL_WAIT_CS_FLAGS_INTERRUPT
	if err := f.Ioctl(hl.DRM_IOCTL_HL_WAIT_CS, unsafe.Pointer(&a)); err != unix.EPERM {
		t.Fatalf("Gaudi interrupt: %v", err)
	}
}

func TestWaitBusyTimeout(t *testing.T) {
	_, d, f := openSim(t, Gaudi2)
	seq := runCB(t, f, 0, blockedCB(t, f), 0, 0)
	start := time.Now()
	out, err := waitCS(f, seq, 30_000)
	if err != nil || out.Status != hl.HL_WAIT_CS_STATUS_BUSY {
		t.Fatalf("%+v, %v", out, err)
	}
	if el := time.Since(start); el < 30*time.Millisecond || el > 500*time.Millisecond {
		t.Fatalf("waited %v", el)
	}
	// A wait blocked when the reset comes ends with EIO.
	done := make(chan error, 1)
	go func() {
		_, err := waitCS(f, seq, 5_000_000)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	d.Reset()
	if err := <-done; err != unix.EIO {
		t.Fatalf("blocked wait: %v", err)
	}
	d.SetState(InReset)
	if _, err := waitCS(f, seq, 0); err != unix.EBUSY {
		t.Fatalf("in reset: %v", err)
	}
	d.SetState(Operational)
}

// BenchmarkSubmitWaitNOP submits a prepared one-NOP CS and waits for it,
// as programs run it (strict mode off).
func BenchmarkSubmitWaitNOP(b *testing.B) { benchSubmitWaitNOP(b, StrictOff) }

// BenchmarkSubmitWaitNOPStrict is BenchmarkSubmitWaitNOP in strict mode, as
// tests run it: the cost of its checks.
func BenchmarkSubmitWaitNOPStrict(b *testing.B) { benchSubmitWaitNOP(b, StrictOn) }

func benchSubmitWaitNOP(b *testing.B, mode StrictMode) {
	s, err := New(Config{Devices: Default(Gaudi2, 1).Devices, LockDir: b.TempDir(), Strict: mode})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	f, err := s.Device(0).Open()
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	mem, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Munmap(mem)
	nop, _ := packet.Nop{}.Append(packet.Gaudi2, nil)
	copy(mem, nop)
	va, err := memMapHost(f, addrOf(mem), 4096, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	chs := chunksOf([]chunk{{queue: 0, handle: va, size: 8, user: true}})
	var a hl.CSArgs
	var w hl.WaitCSArgs
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a = hl.CSArgs{}
		setChunksExecute(a.In(), addrFor(&chs[0]))
		a.In().NumChunksExecute = 1
		if err := f.Ioctl(hl.DRM_IOCTL_HL_CS, unsafe.Pointer(&a)); err != nil {
			b.Fatal(err)
		}
		w = hl.WaitCSArgs{}
		w.In().SetSeq(a.Out().Seq())
		w.In().SetTimeoutUs(1_000_000)
		if err := f.Ioctl(hl.DRM_IOCTL_HL_WAIT_CS, unsafe.Pointer(&w)); err != nil || w.Out().Status != 0 {
			b.Fatal(err, w.Out().Status)
		}
	}
}

func TestCSMappedCB(t *testing.T) {
	_, _, f := openSim(t, Gaudi2)
	mem, va := hostMem(t, f, 4096)
	h, err := cbCreate(f, 5000, hl.HL_CB_FLAGS_MAP)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := cbInfo(f, h, hl.HL_CB_FLAGS_GET_DEVICE_VA)
	cbVA := a.Out().DeviceVA()
	m, err := f.Mmap(int64(h), 8192, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Munmap(m)
	cb := build(t, packet.Gaudi2, func(b *packet.Builder) {
		b.MsgLong(packet.MsgLong{Addr: va, Value: 0x1234})
		b.LinDMA(packet.LinDMA{Src: cbVA, Dst: va + 64, Size: 16}) // the CB's own bytes
	})
	copy(m, cb)
	seq, _, err := submit(f, chunksOf([]chunk{{queue: 4, handle: cbVA, size: uint32(len(cb)), user: true}}), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	mustComplete(t, f, seq)
	if binary.LittleEndian.Uint32(mem) != 0x1234 || !bytes.Equal(mem[64:80], cb[:16]) {
		t.Fatalf("memory %x", mem[:80])
	}
	// Past the end of the pool's mapping: a CB address outside every range.
	if _, _, err := submit(f, chunksOf([]chunk{{queue: 4, handle: 0xFFF1000000000000, size: 8, user: true}}), 0, 0); err != unix.EFAULT {
		t.Fatalf("outside the ranges: %v", err)
	}
}

// BenchmarkDMAHostToDRAM moves 64 MiB from host memory to DRAM per op.
func BenchmarkDMAHostToDRAM(b *testing.B) { benchDMA(b, true) }

// BenchmarkDMAHostToHost moves 64 MiB between two host buffers per op:
// the engine's own overhead over memmove.
func BenchmarkDMAHostToHost(b *testing.B) { benchDMA(b, false) }

func benchDMA(b *testing.B, toDRAM bool) {
	s, err := New(Config{Devices: Default(Gaudi2, 1).Devices, LockDir: b.TempDir(), Strict: StrictOff})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	f, err := s.Device(0).Open()
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	const n = 64 << 20
	mem, err := unix.Mmap(-1, 0, n+4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Munmap(mem)
	fillRandom(mem[:n], 1)
	va, err := memMapHost(f, addrOf(mem), n+4096, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	var dst uint64
	if toDRAM {
		h, _ := memAllocFlags(f, n, 0)
		dst, err = memMapDevice(f, h, 0, 0)
	} else {
		out, e := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if e != nil {
			b.Fatal(e)
		}
		defer unix.Munmap(out)
		dst, err = memMapHost(f, addrOf(out), n, 0, 0)
	}
	if err != nil {
		b.Fatal(err)
	}
	cb, _ := packet.LinDMA{Src: va, Dst: dst, Size: n}.Append(packet.Gaudi2, nil)
	copy(mem[n:], cb)
	chs := chunksOf([]chunk{{queue: 0, handle: va + n, size: uint32(len(cb)), user: true}})
	b.SetBytes(n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var a hl.CSArgs
		setChunksExecute(a.In(), addrFor(&chs[0]))
		a.In().NumChunksExecute = 1
		if err := f.Ioctl(hl.DRM_IOCTL_HL_CS, unsafe.Pointer(&a)); err != nil {
			b.Fatal(err)
		}
		var w hl.WaitCSArgs
		w.In().SetSeq(a.Out().Seq())
		w.In().SetTimeoutUs(10_000_000)
		if err := f.Ioctl(hl.DRM_IOCTL_HL_WAIT_CS, unsafe.Pointer(&w)); err != nil || w.Out().Status != 0 {
			b.Fatal(err, w.Out().Status)
		}
	}
}
