package sim

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// The fast path of a CS: no allocation in steady state, the clock, the
// packets the engines run without decoding, fence and CS reuse, the TDR
// and wait timers that are left running.

func TestNanotimeIsClockMonotonic(t *testing.T) {
	for i := 0; i < 100; i++ {
		before := clockNs(unix.CLOCK_MONOTONIC)
		now := monotonicNow()
		after := clockNs(unix.CLOCK_MONOTONIC)
		if now < before || now > after {
			t.Fatalf("nanotime %d outside [%d, %d]", now, before, after)
		}
	}
}

// TestCSWaitAllocs submits and waits for one-packet CSs (NOP, LIN_DMA
// host to DRAM, LIN_DMA with a timestamp) and checks that, once warm, a
// submission and its wait allocate nothing. Strict mode, whose checks
// read /proc, is off: the fast path is what programs run.
func TestCSWaitAllocs(t *testing.T) {
	_, _, f := openSimMode(t, Gaudi2, StrictOff)
	mem, va := hostMem(t, f, 4096)
	fillRandom(mem[:64], 1)
	dst := deviceBuf(t, f, 4096)
	for _, tc := range []struct {
		name  string
		cb    []byte
		flags uint32
	}{
		{"NOP", build(t, packet.Gaudi2, func(b *packet.Builder) { b.Nop(packet.Nop{}) }), 0},
		{"LIN_DMA", build(t, packet.Gaudi2, func(b *packet.Builder) { b.LinDMA(packet.LinDMA{Src: va, Dst: dst, Size: 64}) }), 0},
		{"LIN_DMA timestamp", build(t, packet.Gaudi2, func(b *packet.Builder) { b.LinDMA(packet.LinDMA{Src: va, Dst: dst, Size: 64}) }),
			hl.HL_CS_FLAGS_TIMESTAMP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chs := chunksOf([]chunk{userCB(t, f, 0, tc.cb)})
			var a hl.CSArgs
			var w hl.WaitCSArgs
			run := func() {
				a = hl.CSArgs{}
				setChunksExecute(a.In(), addrFor(&chs[0]))
				a.In().NumChunksExecute = 1
				a.In().CSFlags = tc.flags
				if err := f.Ioctl(hl.DRM_IOCTL_HL_CS, unsafe.Pointer(&a)); err != nil {
					t.Fatal(err)
				}
				w = hl.WaitCSArgs{}
				w.In().SetSeq(a.Out().Seq())
				w.In().SetTimeoutUs(1_000_000)
				if err := f.Ioctl(hl.DRM_IOCTL_HL_WAIT_CS, unsafe.Pointer(&w)); err != nil || w.Out().Status != hl.HL_WAIT_CS_STATUS_COMPLETED {
					t.Fatal(err, w.Out().Status)
				}
				if stamped := w.Out().Flags&hl.HL_WAIT_CS_STATUS_FLAG_TIMESTAMP_VLD != 0; stamped != (tc.flags != 0) {
					t.Fatalf("timestamp flag %v", stamped)
				}
			}
			for i := 0; i < 300; i++ { // fill the fence ring, the outcome store, the pools
				run()
			}
			if n := testing.AllocsPerRun(200, run); n != 0 {
				t.Errorf("%v allocations per CS and wait", n)
			}
		})
	}
	if got := dramAt(t, f, dst, 64); string(got) != string(mem[:64]) {
		t.Errorf("LIN_DMA copied %x, want %x", got, mem[:64])
	}
}

// TestUndecodedPackets checks what lets the engines skip decoding the
// packets that have no effect here: for every such opcode of both
// formats, Decode accepts any packet of the length packetLen gives (at
// most with ErrReservedBits), or does not support the opcode.
func TestUndecodedPackets(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	decoded := map[packet.Opcode]bool{packet.OpLinDMA: true, packet.OpMsgLong: true, packet.OpMsgProt: true,
		packet.OpMsgShort: true, packet.OpFence: true, packet.OpWait: true, packet.OpCPDMA: true}
	b := make([]byte, 8+8*0x10000)
	for _, f := range []packet.Format{packet.Gaudi, packet.Gaudi2} {
		for op := packet.Opcode(0); op < 32; op++ {
			if !f.Has(op) || decoded[op] {
				continue
			}
			for i := 0; i < 200; i++ {
				for k := 0; k < 64; k += 8 {
					*(*uint64)(unsafe.Pointer(&b[k])) = r.Uint64()
				}
				if i%2 == 0 {
					b[0], b[1] = byte(r.IntN(4)), 0 // short WREG_BULK / WRITE_ARC_STREAM
				}
				ctl := uint32(b[4]) | uint32(b[5])<<8 | uint32(b[6])<<16 | uint32(b[7])<<24
				ctl = ctl&^(0x1f<<24) | uint32(op)<<24
				b[4], b[5], b[6], b[7] = byte(ctl), byte(ctl>>8), byte(ctl>>16), byte(ctl>>24)
				n := packetLen(f, b)
				if n == 0 {
					if op != packet.OpLastReadFromArc {
						t.Fatalf("%v %v: packetLen 0", f, op)
					}
					continue
				}
				_, dn, err := f.Decode(b[:n])
				switch {
				case errors.Is(err, packet.ErrUnsupportedOpcode):
				case err != nil && !errors.Is(err, packet.ErrReservedBits):
					t.Fatalf("%v %v % x: %v", f, op, b[:8], err)
				case uint64(dn) != n:
					t.Fatalf("%v %v: Decode length %d, packetLen %d", f, op, dn, n)
				}
			}
		}
	}
}

// TestHeldFenceOutlivesItsSlot holds the fence of a CS (as a wait does)
// while later CSs take its slot of the ring: the slot gets a new fence,
// and the held one keeps the first CS's result.
func TestHeldFenceOutlivesItsSlot(t *testing.T) {
	_, _, f := openSim(t, Gaudi2)
	nop := chunksOf([]chunk{userCB(t, f, 0, build(t, packet.Gaudi2, func(b *packet.Builder) { b.Nop(packet.Nop{}) }))})
	blocked := chunksOf([]chunk{userCB(t, f, 1, blockedCB(t, f))})
	first, _, err := submit(f, nop, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	mustComplete(t, f, first)
	c := f.subm()
	held, err := c.holdFence(first)
	if err != nil || held == nil {
		t.Fatal(held, err)
	}
	slot := first & c.mask
	var last uint64
	for i := uint64(0); i <= c.mask; i++ { // the last one takes the slot again
		if last, _, err = submit(f, nop, 0, 0); err != nil {
			t.Fatal(err)
		}
		mustComplete(t, f, last)
	}
	if last&c.mask != slot || c.pending[slot] == held {
		t.Fatalf("seq %d reused the held fence of %d", last, first)
	}
	if !held.completed() || held.seq != first || held.err != 0 {
		t.Fatalf("held fence: seq %d done %v err %v", held.seq, held.completed(), held.err)
	}
	held.release()
	// With no hold, the next round reuses the fence in place.
	fc := c.pending[slot]
	for i := uint64(0); i <= c.mask; i++ {
		if last, _, err = submit(f, nop, 0, 0); err != nil {
			t.Fatal(err)
		}
		mustComplete(t, f, last)
	}
	if c.pending[slot] != fc {
		t.Error("a fence nobody held was not reused")
	}
	// The first CS is gone now.
	if out, err := waitCS(f, first, 0); err != nil || out.Flags&hl.HL_WAIT_CS_STATUS_FLAG_GONE == 0 {
		t.Errorf("first CS: %+v, %v", out, err)
	}
	// A CS in flight keeps its slot: the ring is full after mask more.
	seq, _, err := submit(f, blocked, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(0); i < c.mask; i++ {
		if last, _, err = submit(f, nop, 0, 0); err != nil {
			t.Fatal(err)
		}
		mustComplete(t, f, last)
	}
	if _, _, err := submit(f, nop, 0, 0); err != unix.EAGAIN {
		t.Errorf("submission over a CS in flight: %v, want EAGAIN", err)
	}
	if out, err := waitCS(f, seq, 0); err != nil || out.Status != hl.HL_WAIT_CS_STATUS_BUSY {
		t.Errorf("blocked CS: %+v, %v", out, err)
	}
}

// TestTDRTimerReuse runs CSs whose TDR deadlines come in both orders: a
// short timeout after a long one fires on time, and a long one after a
// short one does not fire early, though the device's timer was set for
// the earlier CS and not stopped.
func TestTDRTimerReuse(t *testing.T) {
	_, d, f := openSim(t, Gaudi2)
	nop := build(t, packet.Gaudi2, func(b *packet.Builder) { b.Nop(packet.Nop{}) })
	// timedOut waits for a CS to time out (the device resets) and returns
	// how long that took from start.
	timedOut := func(seq uint64, start time.Time) time.Duration {
		t.Helper()
		out, err := waitCS(f, seq, 5_000_000)
		el := time.Since(start)
		if err != unix.ETIMEDOUT || out.Status != hl.HL_WAIT_CS_STATUS_TIMEDOUT {
			t.Fatalf("CS %d: %+v, %v after %v", seq, out, err, el)
		}
		for d.State() != Operational {
			time.Sleep(time.Millisecond)
		}
		// The hard reset killed the file (watchdog.go); the device's
		// TDR timer outlives it.
		closeSim(f)
		var err2 error
		if f, err2 = d.Open(); err2 != nil {
			t.Fatal(err2)
		}
		return el
	}
	t.Cleanup(func() { closeSim(f) })
	custom := uint32(hl.HL_CS_FLAGS_CUSTOM_TIMEOUT)

	// The default 30 s TDR is set, and left running, by a quick CS.
	mustComplete(t, f, runCB(t, f, 0, nop, 0, 0))
	start := time.Now()
	if el := timedOut(runCB(t, f, 0, blockedCB(t, f), custom, 1), start); el > 3*time.Second {
		t.Errorf("1 s TDR after a 30 s one fired after %v", el)
	}

	// A 1 s TDR set by a quick CS, then a 2 s one: not before 2 s.
	mustComplete(t, f, runCB(t, f, 1, nop, custom, 1))
	start = time.Now()
	if el := timedOut(runCB(t, f, 1, blockedCB(t, f), custom, 2), start); el < 2*time.Second-50*time.Millisecond {
		t.Errorf("2 s TDR after a 1 s one fired after %v", el)
	}
	mustComplete(t, f, runCB(t, f, 0, nop, 0, 0))
}

// TestWaitTimerReuse waits with timeouts in both orders on the same
// context: a wait whose CS completes leaves its timer running for the
// next wait, which must still end at its own deadline.
func TestWaitTimerReuse(t *testing.T) {
	_, _, f := openSim(t, Gaudi2)
	nop := build(t, packet.Gaudi2, func(b *packet.Builder) { b.Nop(packet.Nop{}) })
	blocked := runCB(t, f, 1, blockedCB(t, f), 0, 0)
	for _, tc := range []struct{ first, second time.Duration }{
		{10 * time.Second, 50 * time.Millisecond},       // a later timer pending: reset
		{20 * time.Millisecond, 200 * time.Millisecond}, // an earlier one: waited past
	} {
		out, err := waitCS(f, runCB(t, f, 0, nop, 0, 0), uint64(tc.first/time.Microsecond))
		if err != nil || out.Status != hl.HL_WAIT_CS_STATUS_COMPLETED {
			t.Fatalf("quick CS: %+v, %v", out, err)
		}
		start := time.Now()
		out, err = waitCS(f, blocked, uint64(tc.second/time.Microsecond))
		el := time.Since(start)
		if err != nil || out.Status != hl.HL_WAIT_CS_STATUS_BUSY {
			t.Fatalf("blocked CS: %+v, %v", out, err)
		}
		if el < tc.second || el > tc.second+time.Second {
			t.Errorf("wait of %v after one of %v took %v", tc.second, tc.first, el)
		}
	}
}

// TestCopyInFaults checks that a chunk array the caller cannot read is
// EFAULT, wherever the fault is.
func TestCopyInFaults(t *testing.T) {
	_, _, f := openSim(t, Gaudi2)
	page := anon(t, 2*4096, 4096, unix.PROT_READ|unix.PROT_WRITE)
	if err := unix.Mprotect(page[4096:], unix.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	// An address nothing maps: a freshly unmapped page can be mapped
	// again by anything running meanwhile (the race detector's shadow,
	// another goroutine), so take one far from the mmap area and the Go
	// heap, and check it.
	goneAddr := uint64(0x2000_0000_0000)
	if vmas, err := readMaps(procMaps); err == nil {
		for _, v := range vmas {
			if goneAddr >= v.start && goneAddr < v.end {
				t.Skipf("%#x is mapped", goneAddr)
			}
		}
	}
	size := uint64(unsafe.Sizeof(hl.CSChunk{}))
	for _, tc := range []struct {
		name string
		ptr  uint64
		n    uint32
	}{
		{"unmapped", goneAddr, 1},
		{"PROT_NONE", addrOf(page[4096:]), 1},
		{"runs into PROT_NONE", addrOf(page[4096-size:]), 2},
		{"kernel address", 0xFFFF800000000000, 1},
		{"non-canonical", 0x0001000000000000, 1},
		{"wraps", ^uint64(0) - 8, 1},
	} {
		var a hl.CSArgs
		setChunksExecute(a.In(), tc.ptr)
		a.In().NumChunksExecute = tc.n
		if err := csSubmit(f, &a); err != unix.EFAULT {
			t.Errorf("%s: %v, want EFAULT", tc.name, err)
		}
	}
	// A readable chunk array right before the PROT_NONE page is fine.
	var ch [1]hl.CSChunk
	copy(page[4096-size:4096], unsafe.Slice((*byte)(unsafe.Pointer(&ch[0])), size))
	var a hl.CSArgs
	setChunksExecute(a.In(), addrOf(page[4096-size:]))
	a.In().NumChunksExecute = 1
	if err := csSubmit(f, &a); err != unix.EINVAL { // queue 0 without a CB: parsed, then refused
		t.Errorf("readable chunk: %v, want EINVAL", err)
	}
}
