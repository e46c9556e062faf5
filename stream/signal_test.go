package stream_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/stream"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// signalWaitDMA is one round of hl-thunk's test_signal_wait_dma: DMA host
// to device on the down queue, a signal CS behind it on the same queue, a
// wait CS for that signal on the up queue, and a DMA device to host behind
// the wait. The copy back must see the first copy's bytes: only the
// signal/wait pair orders the two queues.
func signalWaitDMA(t *testing.T, r *rig, e *dma.Engine, size uint64, seed byte) error {
	src, err := r.mem.AllocHost(size, memory.HostOptions{})
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := r.mem.AllocHost(size, memory.HostOptions{})
	if err != nil {
		return err
	}
	defer dst.Close()
	dev, err := r.mem.Alloc(size, memory.AllocOptions{})
	if err != nil {
		return err
	}
	defer dev.Close()
	for i := range src.Bytes() {
		src.Bytes()[i] = byte(i*7) + seed
	}
	bin := e.NewBatch(dma.BatchOptions{})
	if err := bin.CopyToDevice(dev.Range(0, size), src.Range(0, size)); err != nil {
		return err
	}
	in, err := bin.Start(ctxT(t))
	if err != nil {
		return err
	}
	sig, sob, err := r.s.Signal(ctxT(t), r.down(), stream.SubmitOptions{})
	if err != nil {
		return fmt.Errorf("signal: %w", err)
	}
	_ = sob
	wseq, err := r.s.WaitForSignal(ctxT(t), r.up(), sig, stream.SubmitOptions{})
	if err != nil {
		return fmt.Errorf("wait for signal: %w", err)
	}
	bout := e.NewBatch(dma.BatchOptions{})
	if err := bout.CopyToHost(dst.Range(0, size), dev.Range(0, size)); err != nil {
		return err
	}
	out, err := bout.Start(ctxT(t))
	if err != nil {
		return err
	}
	ctx := ctxT(t)
	if err := out.Wait(ctx); err != nil {
		return err
	}
	if err := in.Wait(ctx); err != nil {
		return err
	}
	if wseq != stream.NoSeq {
		if _, err := r.s.Wait(ctx, wseq); err != nil {
			return err
		}
	}
	if _, err := r.s.Wait(ctx, sig); err != nil {
		return err
	}
	if !bytes.Equal(src.Bytes(), dst.Bytes()) {
		return errors.New("device to host copy did not see the host to device copy")
	}
	return nil
}

// TestSignalWaitDMA is test_signal_wait_dma: on both ASICs (hl-thunk runs
// it on Gaudi; the 6.12 driver supports sync streams on Gaudi2 too).
func TestSignalWaitDMA(t *testing.T) {
	for _, a := range asics() {
		t.Run(a.String(), func(t *testing.T) {
			r := newRig(t, a)
			e := r.engine(t, dma.Options{})
			for i := 0; i < 3; i++ {
				if err := signalWaitDMA(t, r, e, 1<<20, byte(i)); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestSignalWaitParallel is test_signal_wait_parallel: several goroutines
// each run signal/wait DMA rounds on one device file.
func TestSignalWaitParallel(t *testing.T) {
	for _, a := range asics() {
		t.Run(a.String(), func(t *testing.T) {
			r := newRig(t, a)
			e := r.engine(t, dma.Options{})
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for g := 0; g < 8; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 4; i++ {
						if err := signalWaitDMA(t, r, e, 64<<10, byte(g*16+i)); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// TestSignalWait is test_signal_wait: a wait CS stops its queue until the
// signal ran; a NOP-free queue shows it. The signal sits behind a fence
// nothing releases until the test writes the SOB the fence waits on, so
// the wait CS cannot complete before that.
func TestSignalWait(t *testing.T) {
	for _, a := range asics() {
		t.Run(a.String(), func(t *testing.T) {
			r := newRig(t, a)
			first := r.firstSOB(t)
			// The down queue blocks on a user SOB first.
			gate := r.run(t, r.down(), r.monitorFence(t, r.down(), first, first.mon, 1, nil))
			sig, sob, err := r.s.Signal(ctxT(t), r.down(), stream.SubmitOptions{Timestamp: true})
			if err != nil {
				t.Fatal(err)
			}
			if r.asic == sim.Gaudi && sob.Addr == 0 {
				t.Errorf("Gaudi signal SOB address 0")
			}
			if r.asic == sim.Gaudi2 && sob.Addr != 0 {
				t.Errorf("Gaudi2 signal SOB address %#x, want 0 (gaudi2_get_sob_addr)", sob.Addr)
			}
			w, err := r.s.WaitForSignal(ctxT(t), r.up(), sig, stream.SubmitOptions{Timestamp: true})
			if err != nil || w == stream.NoSeq {
				t.Fatalf("WaitForSignal = %d, %v", w, err)
			}
			if res, err := r.s.Wait(ctxShort(t), w); err == nil {
				t.Fatalf("wait CS completed before its signal: %+v", res)
			}
			// Release the gate: set the user SOB from a third queue (the
			// up queue waits behind the wait CS).
			released := time.Duration(monotonic())
			r.run(t, r.plus(r.down(), 1), r.setSOB(t, first.sob, 1))
			cw := r.wait(t, w)
			cs := r.wait(t, sig)
			r.wait(t, gate)
			// The wait needs the signal to have run, which needs the gate:
			// both complete after the release. (The signal's completion
			// report may come after the wait's.)
			if cs.Timestamp < released || cw.Timestamp < released {
				t.Errorf("signal done at %v, wait at %v, gate released at %v: want both after the release", cs.Timestamp, cw.Timestamp, released)
			}
			// Now the signal is done: another wait for it submits nothing.
			w2, err := r.s.WaitForSignal(ctxT(t), r.up(), sig, stream.SubmitOptions{})
			if err != nil || w2 != stream.NoSeq {
				t.Errorf("wait for a completed signal = %#x, %v; want NoSeq, nil", w2, err)
			}
		})
	}
}

// TestSignalCounts checks what a signal CS answers: the value the signal
// brings the SOB to grows by one per signal of the queue, from 1, and each
// queue has its own stream.
func TestSignalCounts(t *testing.T) {
	for _, a := range asics() {
		t.Run(a.String(), func(t *testing.T) {
			r := newRig(t, a)
			var last [2]stream.SOB
			for i := 0; i < 5; i++ {
				for k, q := range []device.Queue{r.down(), r.up()} {
					seq, sob, err := r.s.Signal(ctxT(t), q, stream.SubmitOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if int(sob.Value) != i+1 {
						t.Errorf("queue %v signal %d: value %d, want %d", q, i, sob.Value, i+1)
					}
					if i > 0 && sob.Addr != last[k].Addr {
						t.Errorf("queue %v: SOB moved from %#x to %#x", q, last[k].Addr, sob.Addr)
					}
					last[k] = sob
					r.wait(t, seq)
				}
			}
			if a == sim.Gaudi && last[0].Addr == last[1].Addr {
				t.Errorf("two queues share SOB %#x", last[0].Addr)
			}
		})
	}
}

// TestSignalWaitRules checks the driver's refusals, in its order.
func TestSignalWaitRules(t *testing.T) {
	for _, a := range asics() {
		t.Run(a.String(), func(t *testing.T) {
			r := newRig(t, a)
			// A queue without a sync stream, the collective engine (which
			// Gaudi2 has not), and a queue of the other ASIC.
			internal := device.GaudiQueue(hl.GAUDI_QUEUE_ID_DMA_2_0)
			engine := device.GaudiEngine(hl.GAUDI_ENGINE_ID_DMA_5)
			other := device.Gaudi2Queue(hl.GAUDI2_QUEUE_ID_PDMA_1_0)
			if a == sim.Gaudi2 {
				internal = device.Gaudi2Queue(hl.GAUDI2_QUEUE_ID_NIC_0_0)
				engine = device.Gaudi2Engine(hl.GAUDI2_DCORE0_ENGINE_ID_EDMA_0)
				other = device.GaudiQueue(hl.GAUDI_QUEUE_ID_DMA_1_0)
			}
			seq, _, err := r.s.Signal(ctxT(t), r.down(), stream.SubmitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r.wait(t, seq)
			nop := r.run(t, r.down(), r.build(t, func(b *packetBuilder) { b.Nop(nopPacket) }))
			r.wait(t, nop)
			for _, tc := range []struct {
				name string
				fn   func() error
				want error
			}{
				{"signal on a queue without sync stream", func() error { _, _, err := r.s.Signal(ctxT(t), internal, stream.SubmitOptions{}); return err }, unix.EINVAL},
				{"signal on a queue out of range", func() error { _, _, err := r.s.Signal(ctxT(t), r.queue(1000), stream.SubmitOptions{}); return err }, unix.EINVAL},
				{"wait for a sequence never given", func() error {
					_, err := r.s.WaitForSignal(ctxT(t), r.up(), seq+1000, stream.SubmitOptions{})
					return err
				}, unix.EINVAL},
				{"wait for a CS that is not a signal", func() error { _, err := r.s.WaitForSignal(ctxT(t), r.up(), nop, stream.SubmitOptions{}); return err }, unix.EINVAL},
				{"collective wait", func() error {
					_, err := r.s.CollectiveWait(ctxT(t), r.down(), seq, engine, stream.SubmitOptions{})
					return err
				}, unix.EINVAL},
				{"collective wait on an internal queue", func() error {
					_, err := r.s.CollectiveWait(ctxT(t), internal, seq, engine, stream.SubmitOptions{})
					return err
				}, unix.EINVAL},
				{"wait on a queue of the other ASIC", func() error {
					_, err := r.s.WaitForSignal(ctxT(t), other, seq, stream.SubmitOptions{})
					return err
				}, unix.EINVAL},
				{"restore chunks on a signal", func() error {
					_, _, err := r.s.Signal(ctxT(t), r.down(), stream.SubmitOptions{Restore: []stream.Chunk{{Queue: r.down()}}})
					return err
				}, unix.EINVAL},
			} {
				if err := tc.fn(); !errors.Is(err, tc.want) {
					t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
				}
			}
		})
	}
}

// TestCSDrop is test_cs_drop: CSs of 256 DMA jobs on the down queue,
// each followed by a signal there and a wait for it on the up queue, fill
// the queue faster than it drains; the driver refuses some with EAGAIN
// (which Submit retries) and counts them as queue-full drops.
func TestCSDrop(t *testing.T) {
	for _, a := range asics() {
		t.Run(a.String(), func(t *testing.T) {
			r := newRig(t, a)
			src, err := r.mem.AllocHost(64<<10, memory.HostOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			sram := r.dev.HWIPInfo().SRAMBase + 0x1000
			dmaCB := r.build(t, func(b *packetBuilder) { b.LinDMA(linDMA(src.VA(), sram, 64<<10)) })
			c := r.newCB(t, dmaCB)
			chunks := make([]stream.Chunk, 256)
			for i := range chunks {
				chunks[i] = r.chunk(c, r.down(), len(dmaCB))
			}
			before, err := r.dev.CSCounters()
			if err != nil {
				t.Fatal(err)
			}
			var seq uint64
			for i := 0; i < 64; i++ {
				if seq, err = r.s.Submit(ctxT(t), chunks, stream.SubmitOptions{}); err != nil {
					t.Fatal(err)
				}
				sig, _, err := r.s.Signal(ctxT(t), r.down(), stream.SubmitOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := r.s.WaitForSignal(ctxT(t), r.up(), sig, stream.SubmitOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			r.wait(t, seq)
			after, err := r.dev.CSCounters()
			if err != nil {
				t.Fatal(err)
			}
			if after.QueueFull.Context == before.QueueFull.Context {
				t.Errorf("no queue-full drop counted: %+v", after.QueueFull)
			}
		})
	}
}
