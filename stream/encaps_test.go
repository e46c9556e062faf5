package stream_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/stream"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// gaudiWSSOB0 is the CFG offset of Gaudi's W_S sync manager SOB 0, which
// reservations answer addresses in (gaudi_get_sob_addr).
const gaudiWSSOB0 = 0x492000

// encapsRound is one thread of hl-thunk's test_encaps_signal_wait on
// queue q (Gaudi): reserve count signals, signal them from the first part
// of a staged submission claiming the reservation, wait for them on the
// matching up queue, end the staged submission with a NOP last part.
func encapsRound(t *testing.T, r *rig, q device.Queue, count uint32, alone bool) error {
	res, err := r.s.Reserve(ctxT(t), q, count)
	if err != nil {
		return fmt.Errorf("reserve: %w", err)
	}
	sob := uint16((res.SOBAddr - gaudiWSSOB0) / 4)
	signal := r.build(t, func(b *packet.Builder) {
		w, _ := packet.SOBUpdate{Value: uint16(count), Add: true}.Word(r.f)
		b.MsgShort(packet.MsgShort{Header: packet.Header{EngineBarrier: true, MsgBarrier: true, RegBarrier: true},
			Value: w, Offset: sob * 4, Base: packet.GaudiBaseSOB})
	})
	c := r.newCB(t, signal)
	staged, err := r.s.SubmitStagedEncaps(ctxT(t), []stream.Chunk{r.chunk(c, q, len(signal))}, stream.StagedFirst, res.ID, stream.SubmitOptions{})
	if err != nil {
		return fmt.Errorf("staged first part: %w", err)
	}
	w, err := r.s.WaitForReserved(ctxT(t), r.plus(q, 4), staged, count, stream.SubmitOptions{})
	if err != nil {
		return fmt.Errorf("wait for reserved: %w", err)
	}
	if w == stream.NoSeq {
		return errors.New("wait for reserved signals submitted nothing")
	}
	ctx := ctxT(t)
	if _, err := r.s.Wait(ctx, w); err != nil {
		return err
	}
	nop := r.build(t, func(b *packet.Builder) { b.Nop(packet.Nop{}) })
	n := r.newCB(t, nop)
	if got, err := r.s.SubmitStaged(ctxT(t), []stream.Chunk{r.chunk(n, q, len(nop))}, stream.StagedLast, staged, stream.SubmitOptions{}); err != nil || got != staged {
		return fmt.Errorf("staged last part = %d, %v; want %d", got, err, staged)
	}
	if _, err := r.s.Wait(ctx, staged); err != nil {
		return err
	}
	// The claimed reservation is gone once its submission completed. Only
	// a round alone can check: the driver hands out the lowest free id
	// (an IDR), so a concurrent round may hold this id again by now.
	if !alone {
		return nil
	}
	if err := r.s.Unreserve(ctxT(t), res.ID); !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("unreserve of a claimed reservation: %v", err)
	}
	return nil
}

// TestEncapsSignalWait is test_encaps_signal_wait (Gaudi).
func TestEncapsSignalWait(t *testing.T) {
	r := newRig(t, sim.Gaudi)
	for i := 0; i < 3; i++ {
		if err := encapsRound(t, r, r.queue(0), 200, true); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEncapsSignalWaitParallel is test_encaps_signal_wait_parallel: many
// goroutines on the four down queues.
func TestEncapsSignalWaitParallel(t *testing.T) {
	r := newRig(t, sim.Gaudi)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := encapsRound(t, r, r.queue(uint32(i%4)), 200, false); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestEncapsSignalWaitSOBWA is test_encaps_signal_wait_sob_wa: two
// reservations of 32000 fill both SOBs of the stream and a third fails;
// signalling and completing both frees them, and reserving works again.
func TestEncapsSignalWaitSOBWA(t *testing.T) {
	r := newRig(t, sim.Gaudi)
	const count = 32000
	q := r.queue(1)
	first, err := r.s.Reserve(ctxT(t), q, count)
	if err != nil {
		t.Fatal(err)
	}
	second, err := r.s.Reserve(ctxT(t), q, count)
	if err != nil {
		t.Fatal(err)
	}
	if first.SOBAddr == second.SOBAddr {
		t.Fatalf("second reservation did not switch SOBs: %#x", first.SOBAddr)
	}
	if _, err := r.s.Reserve(ctxT(t), q, count); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("third reservation: %v, want EINVAL (both SOBs in use)", err)
	}
	for _, res := range []stream.Reservation{first, second} {
		sob := uint16((res.SOBAddr - gaudiWSSOB0) / 4)
		b := r.build(t, func(b *packet.Builder) {
			w, _ := packet.SOBUpdate{Value: count, Add: true}.Word(r.f)
			b.MsgShort(packet.MsgShort{Header: packet.Header{MsgBarrier: true, RegBarrier: true}, Value: w, Offset: sob * 4, Base: packet.GaudiBaseSOB})
		})
		c := r.newCB(t, b)
		staged, err := r.s.SubmitStagedEncaps(ctxT(t), []stream.Chunk{r.chunk(c, q, len(b))}, stream.StagedFirst|stream.StagedLast, res.ID, stream.SubmitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := r.s.WaitForReserved(ctxT(t), r.plus(q, 4), staged, count, stream.SubmitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if w != stream.NoSeq {
			r.wait(t, w)
		}
		r.wait(t, staged)
	}
	res, err := r.s.Reserve(ctxT(t), q, count)
	if err != nil {
		t.Fatalf("reservation after both completed: %v", err)
	}
	if err := r.s.Unreserve(ctxT(t), res.ID); err != nil {
		t.Fatalf("unreserve: %v", err)
	}
}

// TestEncapsSignalCollectiveWait is test_encaps_signal_collective_wait:
// the simulated Gaudi has no NIC ports, so the driver refuses it.
func TestEncapsSignalCollectiveWait(t *testing.T) {
	r := newRig(t, sim.Gaudi)
	if _, err := r.s.CollectiveWaitForReserved(ctxT(t), r.queue(0), 1, 1, device.GaudiEngine(hl.GAUDI_ENGINE_ID_DMA_5), stream.SubmitOptions{}); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("collective wait for reserved signals: %v, want EINVAL", err)
	}
}

// TestReserveRules checks reservations' refusals and that unreserving
// gives the signals back, on both ASICs.
func TestReserveRules(t *testing.T) {
	for _, a := range asics() {
		t.Run(a.String(), func(t *testing.T) {
			r := newRig(t, a)
			q := r.down()
			// A queue without a sync stream: Gaudi's DMA_2_0 (an internal
			// queue), Gaudi2's NIC_0_0.
			noStream, other := r.queue(9), device.Gaudi2Queue(hl.GAUDI2_QUEUE_ID_PDMA_0_0)
			if a == sim.Gaudi2 {
				noStream, other = r.queue(156), device.GaudiQueue(hl.GAUDI_QUEUE_ID_DMA_0_0)
			}
			for _, tc := range []struct {
				name  string
				queue device.Queue
				count uint32
			}{
				{"count 32768", q, 1 << 15},
				{"queue out of range", r.queue(1000), 1},
				{"queue without sync stream", noStream, 1},
				{"queue of the other ASIC", other, 1},
				{"no queue", device.Queue{}, 1},
			} {
				if _, err := r.s.Reserve(ctxT(t), tc.queue, tc.count); !errors.Is(err, unix.EINVAL) {
					t.Errorf("%s: %v, want EINVAL", tc.name, err)
				}
			}
			var wrong *device.WrongASICError
			if _, err := r.s.Reserve(ctxT(t), other, 1); !errors.As(err, &wrong) {
				t.Errorf("queue of the other ASIC: %v, want a *device.WrongASICError", err)
			}
			res, err := r.s.Reserve(ctxT(t), q, 10)
			if err != nil {
				t.Fatal(err)
			}
			if res.Next != 11 || res.ID != 1 {
				t.Errorf("reservation %+v, want ID 1, next 11", res)
			}
			// A signal in between moves the stream: unreserve refuses.
			seq, sob, err := r.s.Signal(ctxT(t), q, stream.SubmitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if sob.Value != 11 {
				t.Errorf("signal after reserving 10: value %d, want 11", sob.Value)
			}
			r.wait(t, seq)
			if err := r.s.Unreserve(ctxT(t), res.ID); !errors.Is(err, unix.EINVAL) {
				t.Errorf("unreserve after a signal: %v, want EINVAL", err)
			}
			res2, err := r.s.Reserve(ctxT(t), q, 5)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.s.Unreserve(ctxT(t), res2.ID); err != nil {
				t.Errorf("unreserve: %v", err)
			}
			if err := r.s.Unreserve(ctxT(t), res2.ID); !errors.Is(err, unix.EINVAL) {
				t.Errorf("second unreserve: %v, want EINVAL", err)
			}
			// The signals came back: the next signal continues at 12.
			seq, sob, err = r.s.Signal(ctxT(t), q, stream.SubmitOptions{})
			if err != nil || sob.Value != 12 {
				t.Errorf("signal after unreserve: %+v, %v; want value 12", sob, err)
			}
			r.wait(t, seq)
			if a == sim.Gaudi2 {
				// Staged submissions are Gaudi's only.
				_, err := r.s.SubmitStagedEncaps(ctxT(t), nil, stream.StagedFirst, res.ID, stream.SubmitOptions{})
				if !errors.Is(err, stream.ErrNotSupported) || !errors.Is(err, unix.EPERM) {
					t.Errorf("Gaudi2 staged submission: %v, want EPERM", err)
				}
				// Nothing claimed the reservation: a wait finds no handle.
				if w, err := r.s.WaitForReserved(ctxT(t), r.up(), seq, 1, stream.SubmitOptions{}); err != nil || w != stream.NoSeq {
					t.Errorf("wait for unclaimed reservation = %#x, %v; want NoSeq", w, err)
				}
			}
		})
	}
}

// TestStagedSubmission256Threads is test_staged_submission_256_threads
// (Gaudi): each goroutine copies host to device in the first part of a
// staged submission, which then signals a user SOB; the last part, on the
// up queue, fences on that SOB and copies back. Waiting for the staged
// sequence number waits for both parts.
func TestStagedSubmission256Threads(t *testing.T) {
	r := newRig(t, sim.Gaudi)
	u := r.firstSOB(t)
	const threads, size = 256, 0x2000
	var wg sync.WaitGroup
	errs := make(chan error, threads)
	for i := 0; i < threads; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := stagedRound(t, r, userSync{sob: u.sob + uint16(i), mon: u.mon + uint16(i)}, size, byte(i)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func stagedRound(t *testing.T, r *rig, u userSync, size uint32, seed byte) error {
	src, err := r.mem.AllocHost(uint64(size), memory.HostOptions{})
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := r.mem.AllocHost(uint64(size), memory.HostOptions{})
	if err != nil {
		return err
	}
	defer dst.Close()
	dev, err := r.mem.Alloc(uint64(size), memory.AllocOptions{})
	if err != nil {
		return err
	}
	defer dev.Close()
	for i := range src.Bytes() {
		src.Bytes()[i] = byte(i) ^ seed
	}
	first := r.build(t, func(b *packet.Builder) {
		r.sobWrite(t, b, u.sob, 0, false, false) // clear
		b.LinDMA(packet.LinDMA{Header: packet.Header{EngineBarrier: true}, Src: src.VA(), Dst: dev.VA(), Size: size})
		r.sobWrite(t, b, u.sob, 1, false, false)
	})
	c1 := r.newCB(t, first)
	staged, err := r.s.SubmitStaged(ctxT(t), []stream.Chunk{r.chunk(c1, r.down(), len(first))}, stream.StagedFirst, 0, stream.SubmitOptions{})
	if err != nil {
		return fmt.Errorf("first part: %w", err)
	}
	last := r.monitorFence(t, r.up(), u, u.mon, 1, func(b *packet.Builder) {
		b.LinDMA(packet.LinDMA{Header: packet.Header{EngineBarrier: true}, Src: dev.VA(), Dst: dst.VA(), Size: size})
	})
	c2 := r.newCB(t, last)
	got, err := r.s.SubmitStaged(ctxT(t), []stream.Chunk{r.chunk(c2, r.up(), len(last))}, stream.StagedLast, staged, stream.SubmitOptions{})
	if err != nil || got != staged {
		return fmt.Errorf("last part = %d, %v; want %d", got, err, staged)
	}
	if _, err := r.s.Wait(ctxT(t), staged); err != nil {
		return err
	}
	if !bytes.Equal(src.Bytes(), dst.Bytes()) {
		return errors.New("staged copy mismatch")
	}
	return nil
}

// TestStagedRules checks the staged submission rules: a part whose first
// part is unknown, and a part after the last, are EINVAL; Gaudi2 answers
// EPERM.
func TestStagedRules(t *testing.T) {
	r := newRig(t, sim.Gaudi)
	nop := r.build(t, func(b *packet.Builder) { b.Nop(packet.Nop{}) })
	c := r.newCB(t, nop)
	ch := []stream.Chunk{r.chunk(c, r.down(), len(nop))}
	if _, err := r.s.SubmitStaged(ctxT(t), ch, stream.StagedLast, 12345, stream.SubmitOptions{}); !errors.Is(err, unix.EINVAL) {
		t.Errorf("last part without a first: %v, want EINVAL", err)
	}
	// A gate keeps the first part in flight.
	u := r.firstSOB(t)
	gate := r.monitorFence(t, r.down(), u, u.mon, 1, nil)
	g := r.newCB(t, gate)
	staged, err := r.s.SubmitStaged(ctxT(t), []stream.Chunk{r.chunk(g, r.down(), len(gate))}, stream.StagedFirst, 0, stream.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.s.SubmitStaged(ctxT(t), ch, 0, staged, stream.SubmitOptions{}); err != nil {
		t.Fatalf("middle part: %v", err)
	}
	if _, err := r.s.SubmitStaged(ctxT(t), ch, stream.StagedLast, staged, stream.SubmitOptions{}); err != nil {
		t.Fatalf("last part: %v", err)
	}
	if _, err := r.s.SubmitStaged(ctxT(t), ch, stream.StagedLast, staged, stream.SubmitOptions{}); !errors.Is(err, unix.EINVAL) {
		t.Errorf("part after the last: %v, want EINVAL", err)
	}
	if c, err := r.s.Wait(ctxShort(t), staged); err == nil {
		t.Fatalf("staged submission completed with its first part blocked: %+v", c)
	}
	r.run(t, r.plus(r.down(), 1), r.setSOB(t, u.sob, 1))
	r.wait(t, staged)

	r2 := newRig(t, sim.Gaudi2)
	if _, err := r2.s.SubmitStaged(ctxT(t), nil, stream.StagedFirst, 0, stream.SubmitOptions{}); !errors.Is(err, stream.ErrNotSupported) {
		t.Errorf("Gaudi2 staged: %v, want ErrNotSupported", err)
	}
}

// TestReserveAcrossResetAndClose checks release_reserved_encaps_signals
// (a hard reset drops unclaimed reservations and restarts the streams)
// and hl_encaps_sig_mgr_fini (a closed file's reservations give their
// SOBs back, so a new context's stream can switch SOBs).
func TestReserveAcrossResetAndClose(t *testing.T) {
	r := newRig(t, sim.Gaudi)
	res, err := r.s.Reserve(ctxT(t), r.queue(0), 10)
	if err != nil {
		t.Fatal(err)
	}
	r.sys.Device(0).Reset()
	if err := r.s.Unreserve(ctxT(t), res.ID); !errors.Is(err, unix.EINVAL) {
		t.Errorf("unreserve after a reset: %v, want EINVAL", err)
	}
	res, err = r.s.Reserve(ctxT(t), r.queue(0), 5)
	if err != nil || res.ID != 1 || res.Next != 6 {
		t.Errorf("reserve after a reset = %+v, %v; want ID 1, next 6", res, err)
	}
	// Fill the stream's first SOB with a reservation the file never gives
	// back, then close the file.
	if _, err := r.s.Reserve(ctxT(t), r.queue(0), 30000); err != nil {
		t.Fatal(err)
	}
	r.close()
	r.open(t)
	// A switch to the other SOB and back needs the first SOB free again:
	// the closed file's reservations must have given it back.
	if _, err := r.s.Reserve(ctxT(t), r.queue(0), 32000); err != nil {
		t.Fatalf("first switch after the close: %v", err)
	}
	if _, err := r.s.Reserve(ctxT(t), r.queue(0), 32000); err != nil {
		t.Fatalf("switch back after the close: %v", err)
	}
}
