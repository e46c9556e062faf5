package stream_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/stream"
	"golang.org/x/sys/unix"
)

// Gaudi2 register facts for hl-thunk's CQ configuration
// (gaudi2_add_cq_config_pkt): DCORE0's GLBL CQ registers and the MSI-X
// doorbell, as CFG offsets.
const (
	g2CFG         = 0x1000007FF8000000
	g2CQBaseL     = 0x411E050
	g2CQBaseH     = 0x411E150
	g2CQSizeLog2  = 0x411E250
	g2LBWAddrL    = 0x411E550
	g2LBWAddrH    = 0x411E650
	g2LBWData     = 0x411E750
	g2CQIncMode   = 0x411E850
	g2MSIXDoorbel = 0x4C17000
)

// cqConfig appends hl-thunk's prepare_cq_config: configure CQ cq to write
// at cqVA and raise interrupt irq, bump a SOB and arm a monitor that
// writes payload to the CQ when the SOB reaches sobVal.
func (r *rig) cqConfig(t *testing.T, u userSync, cq uint32, irq uint16, sobVal uint16, payload uint32, cqVA uint64) []byte {
	return r.build(t, func(b *packet.Builder) {
		long := func(off uint64, v uint32) {
			b.MsgLong(packet.MsgLong{Header: packet.Header{EngineBarrier: true, MsgBarrier: true}, Addr: g2CFG + off + uint64(cq)*4, Value: v})
		}
		long(g2CQBaseL, uint32(cqVA))
		long(g2CQBaseH, uint32(cqVA>>32))
		long(g2CQSizeLog2, 2)
		long(g2LBWAddrL, g2MSIXDoorbel)
		long(g2LBWAddrH, 0)
		long(g2LBWData, uint32(irq))
		long(g2CQIncMode, 0)
		r.sobWrite(t, b, u.sob, 1, true, false)
		_, _, _, cfgOff := r.monRegs()
		w, err := packet.MonConfig{CQEnable: true, LBWEnable: true, MSBSID: uint8((u.sob / 8) >> 8)}.Word(r.f)
		if err != nil {
			t.Fatal(err)
		}
		b.MsgShort(packet.MsgShort{Value: w, Offset: cfgOff + u.mon*4, Base: 0})
		r.monitor(t, b, u.sob, u.mon, sobVal, uint64(cq), payload)
	})
}

// irqRig is a Gaudi2 rig with a CQ counters buffer of n counters mapped
// into the device MMU, and the first user SOB, monitor, CQ and interrupt.
type irqRig struct {
	*rig
	cq  cb
	u   userSync
	cqs uint32
	irq uint16
}

func newIRQRig(t *testing.T, counters int) *irqRig {
	r := newRig(t, sim.Gaudi2)
	sm, err := r.dev.SyncManager(0)
	if err != nil {
		t.Fatal(err)
	}
	ir := &irqRig{rig: r, cq: r.newCB(t, make([]byte, counters*8)), u: r.firstSOB(t), cqs: sm.FirstCQ, irq: r.dev.HWIPInfo().FirstUserInterrupt}
	// The CB's mapping keeps the size asked for; zero the counters.
	clear(ir.cq.mem[:counters*8])
	r.wait(t, r.run(t, r.plus(r.down(), 1), r.setSOB(t, ir.u.sob, 0)))
	return ir
}

// TestWaitForInterrupt is test_wait_for_interrupt (Gaudi2): a monitor
// writes 101 to a CQ whose LBW write raises a user interrupt; a kernel CQ
// wait for 100 completes with the interrupt's time.
func TestWaitForInterrupt(t *testing.T) {
	r := newIRQRig(t, 1)
	before := time.Duration(monotonic())
	seq := r.run(t, r.down(), r.cqConfig(t, r.u, r.cqs, r.irq, 1, 101, r.cq.va))
	ts, err := r.s.WaitKernelCQ(ctxT(t), uint32(r.irq), r.cq.handle, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if ts < before || ts > time.Duration(monotonic()) {
		t.Errorf("interrupt time %v outside [%v, now]", ts, before)
	}
	r.wait(t, seq)
	// The counter is there: a poll completes at once, on any interrupt id.
	if _, err := r.s.WaitKernelCQ(ctxT(t), stream.AnyInterrupt, r.cq.handle, 0, 100); err != nil {
		t.Errorf("wait for a counter already there: %v", err)
	}
}

// TestTimestampRegistration is test_timestamp_registration: the driver
// writes the interrupt time into the timestamp store.
func TestTimestampRegistration(t *testing.T) {
	r := newIRQRig(t, 1)
	buf, err := r.s.AllocTimestamps(10)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	cfg := r.cqConfig(t, r.u, r.cqs, r.irq, 1, 101, r.cq.va)
	if err := r.s.RegisterTimestamp(ctxT(t), uint32(r.irq), r.cq.handle, 0, 100, buf, 0); err != nil {
		t.Fatal(err)
	}
	if got := buf.At(0); got != 0 {
		t.Fatalf("timestamp %v before the interrupt", got)
	}
	r.wait(t, r.run(t, r.down(), cfg))
	if got := pollTS(buf, 0); got == 0 {
		t.Fatal("no timestamp after the interrupt")
	}
}

// pollTS polls element i for up to 5 s, as hl-thunk's timestamp_poll.
func pollTS(b *stream.TimestampBuffer, i int) time.Duration {
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if v := b.At(i); v != 0 {
			return v
		}
	}
	return 0
}

// TestMultipleTimestampRegistrations is
// test_multiple_timestamp_registrations: three registrations and a wait
// on one interrupt, each served when its counter reaches its target.
func TestMultipleTimestampRegistrations(t *testing.T) {
	r := newIRQRig(t, 4)
	buf, err := r.s.AllocTimestamps(10)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	irq := uint32(r.irq)
	for _, reg := range []struct{ off, target, elem uint64 }{{0, 100, 0}, {1, 200, 1}, {3, 400, 2}} {
		if err := r.s.RegisterTimestamp(ctxT(t), irq, r.cq.handle, reg.off, reg.target, buf, reg.elem); err != nil {
			t.Fatal(err)
		}
	}
	step := func(i uint32, val uint16, payload uint32) uint64 {
		return r.run(t, r.down(), r.cqConfig(t, r.u, r.cqs+i, r.irq, val, payload, r.cq.va+uint64(i)*8))
	}
	step(0, 1, 101)
	if pollTS(buf, 0) == 0 {
		t.Fatal("element 0 not written")
	}
	step(1, 2, 201)
	if pollTS(buf, 1) == 0 {
		t.Fatal("element 1 not written")
	}
	seq := step(2, 3, 301)
	if _, err := r.s.WaitKernelCQ(ctxT(t), irq, r.cq.handle, 2, 300); err != nil {
		t.Fatal(err)
	}
	r.wait(t, seq)
	if v := buf.At(2); v != 0 {
		t.Fatalf("element 2 written (%v) before its counter reached 400", v)
	}
	step(3, 4, 401)
	if pollTS(buf, 2) == 0 {
		t.Fatal("element 2 not written")
	}
}

// TestWaitForInterruptMultiThread is test_wait_for_interrupt_multi_thread:
// waiters on several CQ counters of one interrupt, each released by its
// own monitor.
func TestWaitForInterruptMultiThread(t *testing.T) {
	const n = 8
	r := newIRQRig(t, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.s.WaitKernelCQ(ctxT(t), uint32(r.irq), r.cq.handle, uint64(i), 100); err != nil {
				errs <- err
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	for i := 0; i < n; i++ {
		u := userSync{sob: r.u.sob, mon: r.u.mon + uint16(i)}
		r.wait(t, r.run(t, r.down(), r.cqConfig(t, u, r.cqs+uint32(i), r.irq, uint16(i+1), 100+uint32(i), r.cq.va+uint64(i)*8)))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestWaitForInterruptUserAddr waits on a counter in user memory: the
// interrupt alone does not end the wait while the counter is short.
func TestWaitForInterruptUserAddr(t *testing.T) {
	r := newIRQRig(t, 1)
	host, err := r.mem.AllocHost(4096, memory.HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	counter := (*uint64)(unsafe.Pointer(&host.Bytes()[0]))
	done := make(chan error, 1)
	go func() {
		_, err := r.s.WaitInterrupt(ctxT(t), uint32(r.irq), counter, 5)
		done <- err
	}()
	raise := r.build(t, func(b *packet.Builder) {
		b.MsgLong(packet.MsgLong{Addr: g2CFG + g2MSIXDoorbel, Value: uint32(r.irq)})
	})
	r.wait(t, r.run(t, r.down(), raise))
	select {
	case err := <-done:
		t.Fatalf("wait ended with the counter at 0: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	set := r.build(t, func(b *packet.Builder) {
		b.MsgLong(packet.MsgLong{Header: packet.Header{MsgBarrier: true}, Addr: host.VA(), Value: 7})
		b.MsgLong(packet.MsgLong{Header: packet.Header{MsgBarrier: true}, Addr: g2CFG + g2MSIXDoorbel, Value: uint32(r.irq)})
	})
	r.wait(t, r.run(t, r.down(), set))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestInterruptRules checks the driver's refusals: Gaudi has no user
// interrupts (EPERM); an unknown interrupt id, an unknown CQ handle, a
// counter index past the buffer, or a timestamp element past the store
// are EINVAL.
func TestInterruptRules(t *testing.T) {
	g := newRig(t, sim.Gaudi)
	if _, err := g.s.WaitKernelCQ(ctxT(t), 0, 0, 0, 0); !errors.Is(err, stream.ErrNotSupported) {
		t.Errorf("Gaudi interrupt wait: %v, want ErrNotSupported", err)
	}
	r := newIRQRig(t, 1)
	buf, err := r.s.AllocTimestamps(2)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	irq := uint32(r.irq)
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"interrupt 1000", func() error { _, err := r.s.WaitKernelCQ(ctxT(t), 1000, r.cq.handle, 0, 1); return err }()},
		{"unknown CQ handle", func() error { _, err := r.s.WaitKernelCQ(ctxT(t), irq, 0x12345000, 0, 1); return err }()},
		{"counter past the buffer", func() error { _, err := r.s.WaitKernelCQ(ctxT(t), irq, r.cq.handle, 512, 1); return err }()},
		{"timestamp element past the store", r.s.RegisterTimestamp(ctxT(t), irq, r.cq.handle, 0, 1, buf, 2)},
	} {
		if !errors.Is(tc.err, unix.EINVAL) {
			t.Errorf("%s: %v, want EINVAL", tc.name, tc.err)
		}
	}
	// A counter short of its target with a short context: the wait ends
	// with the context, not an error of the driver.
	ctx, cancel := ctxWith(50 * time.Millisecond)
	defer cancel()
	if _, err := r.s.WaitKernelCQ(ctx, irq, r.cq.handle, 0, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("short wait: %v, want context.DeadlineExceeded", err)
	}
	// A registration whose counter is there already is written at once.
	if err := r.s.RegisterTimestamp(ctxT(t), irq, r.cq.handle, 0, 0, buf, 1); err != nil || buf.At(1) == 0 {
		t.Errorf("registration already satisfied: %v, element %v", err, buf.At(1))
	}
}

// longWaitCB is hl-thunk's long-mode add_monitor_and_fence on the down
// queue: MON_CONFIG long with two writes (the second a dummy SET 0 of SOB
// 8184), the 60-bit value armed over four monitors, then the fence.
func longWaitCB(t *testing.T, r *rig, u userSync, want uint64) []byte {
	return r.build(t, func(b *packet.Builder) {
		payH, data, arm, cfgOff := r.monRegs()
		w, _ := packet.MonConfig{LongSOB: true, WrNum: 1, MSBSID: uint8((u.sob / 8) >> 8)}.Word(r.f)
		b.MsgShort(packet.MsgShort{Value: w, Offset: cfgOff + u.mon*4})
		fence := r.fenceAddr(r.down())
		dummy := uint64(g2CFG + 0x4100000 + 8184*4)
		for _, p := range []struct {
			off uint16
			v   uint32
		}{{0, uint32(fence)}, {payH, uint32(fence >> 32)}, {data, 1},
			{4, uint32(dummy)}, {payH + 4, uint32(dummy >> 32)}, {data + 4, 0}} {
			b.MsgShort(packet.MsgShort{Value: p.v, Offset: p.off + u.mon*4})
		}
		for i := 3; i >= 0; i-- {
			sob := uint16(0)
			if i == 0 {
				sob = u.sob
			}
			m, _ := packet.SOBMask(sob, 1)
			aw, _ := packet.MonArm{Group: uint8(sob / 8), Mask: m, Equal: true, Value: uint16(want>>(15*i)) & 0x7FFF}.Word(r.f)
			b.MsgShort(packet.MsgShort{Header: packet.Header{MsgBarrier: true}, Value: aw, Offset: arm + (u.mon+uint16(i))*4})
		}
		b.Fence(packet.Fence{Header: packet.Header{MsgBarrier: true}, ID: 0, Target: 1, Dec: 1})
	})
}

// longSet sets the 60-bit SOB u.sob to value and adds 0x100, as
// test_sm_long_mode does.
func longSet(t *testing.T, r *rig, u userSync, value uint64) []byte {
	return r.build(t, func(b *packet.Builder) {
		for i := uint16(0); i < 4; i++ {
			r.sobWrite(t, b, u.sob+i, uint16(value>>(15*i))&0x7FFF, false, i == 0)
		}
		r.sobWrite(t, b, u.sob, 0x100, true, true)
	})
}

// TestSMLongMode is test_sm_long_mode (Gaudi2): a 60-bit SOB set and
// added to, and a long monitor waiting for the exact 60-bit value; a
// monitor for another value keeps its queue blocked.
func TestSMLongMode(t *testing.T) {
	const value = 0xFFFE0003FFF8000
	for _, tc := range []struct {
		name string
		want uint64
		ok   bool
	}{
		{"exact value", value + 0x100, true},
		{"other value", value + 0x101, false},
		{"carry into the next SOB", value + 0x100 + 0x8000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, sim.Gaudi2)
			u := r.firstSOB(t)
			r.wait(t, r.run(t, r.down(), longSet(t, r, u, value)))
			seq := r.run(t, r.down(), longWaitCB(t, r, u, tc.want))
			ctx := ctxShort(t) // a blocked queue: the wait ends with the context
			if tc.ok {
				ctx = ctxT(t)
			}
			_, err := r.s.Wait(ctx, seq)
			if (err == nil) != tc.ok {
				t.Fatalf("long monitor for %#x: wait error %v, want completion %v", tc.want, err, tc.ok)
			}
		})
	}
}

func monotonic() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

func ctxWith(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// TestInterruptWaitsOnReset checks hl_release_pending_user_interrupts: a
// reset ends a pending kernel CQ wait with EIO and drops timestamp
// registrations, and a registration of a closed file is dropped with it.
func TestInterruptWaitsOnReset(t *testing.T) {
	r := newIRQRig(t, 2)
	buf, err := r.s.AllocTimestamps(2)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	irq := uint32(r.irq)
	if err := r.s.RegisterTimestamp(ctxT(t), irq, r.cq.handle, 1, 100, buf, 0); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.s.WaitKernelCQ(ctxT(t), irq, r.cq.handle, 0, 100)
		done <- err
	}()
	// The ioctl layer waits in slices; a reset between two slices finds no
	// wait pending, so reset until one lands inside a slice.
	var werr error
wait:
	for i := 0; i < 100; i++ {
		time.Sleep(20 * time.Millisecond)
		r.sys.Device(0).Reset()
		select {
		case werr = <-done:
			break wait
		case <-time.After(20 * time.Millisecond):
		}
	}
	// EIO when the reset found the wait pending, EBUSY when a slice was
	// issued while the device was in reset: either way the wait ends.
	if !errors.Is(werr, unix.EIO) && !errors.Is(werr, unix.EBUSY) {
		t.Fatalf("wait across a reset: %v, want EIO or EBUSY", werr)
	}
	// The registration is gone: the counter reaching the target writes
	// nothing.
	r.wait(t, r.run(t, r.down(), r.cqConfig(t, r.u, r.cqs+1, r.irq, 1, 101, r.cq.va+8)))
	time.Sleep(20 * time.Millisecond)
	if v := buf.At(0); v != 0 {
		t.Errorf("dropped registration wrote %v", v)
	}
	// A file closing with a registration pending: another file's
	// interrupt must not touch its buffers.
	if err := r.s.RegisterTimestamp(ctxT(t), irq, r.cq.handle, 0, 1000, buf, 1); err != nil {
		t.Fatal(err)
	}
	buf.Close()
	r.close()
	r.open(t)
	r.wait(t, r.run(t, r.down(), r.build(t, func(b *packet.Builder) {
		b.MsgLong(packet.MsgLong{Addr: g2CFG + g2MSIXDoorbel, Value: irq})
	})))
}
