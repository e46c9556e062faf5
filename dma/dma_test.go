package dma

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

type rig struct {
	s *sim.System
	d *device.Device
	m *memory.Manager
	e *Engine
}

func newRig(t testing.TB, asic sim.ASIC, opts Options) rig {
	t.Helper()
	cfg := sim.Default(asic, 1)
	cfg.LockDir = t.TempDir()
	if _, ok := t.(*testing.B); ok {
		cfg.Strict = sim.StrictOff // benchmarks measure what programs run
	}
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after the cleanups below: fails on strict mode violations
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	d, err := simdevice.OpenSim(s.Device(0))
	if err != nil {
		t.Fatal(err)
	}
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Close()
		m.Close()
		d.Close()
	})
	return rig{s, d, m, e}
}

// forASICs runs a test on Gaudi2 (CS queues) and Gaudi3 (PDMA channels).
func forASICs(t *testing.T, f func(*testing.T, sim.ASIC)) {
	for _, asic := range []sim.ASIC{sim.Gaudi2, sim.Gaudi3} {
		t.Run(asic.String(), func(t *testing.T) { f(t, asic) })
	}
}

func fill(b []byte, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := 0; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	for i := len(b) &^ 7; i < len(b); i++ {
		b[i] = byte(r.Uint32())
	}
}

// TestRoundTrip copies host -> device -> device -> host over a size sweep
// and compares byte for byte, on both ASICs.
func TestRoundTrip(t *testing.T) {
	for _, asic := range []sim.ASIC{sim.Gaudi2, sim.Gaudi, sim.Gaudi3} {
		t.Run(asic.String(), func(t *testing.T) {
			r := newRig(t, asic, Options{StripeSize: 1 << 20})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			const max = 8 << 20
			src, err := r.m.AllocHost(max, memory.HostOptions{})
			if err != nil {
				t.Fatal(err)
			}
			dst, err := r.m.AllocHost(max, memory.HostOptions{})
			if err != nil {
				t.Fatal(err)
			}
			a, err := r.m.Alloc(max+4096, memory.AllocOptions{})
			if err != nil {
				t.Fatal(err)
			}
			b, err := r.m.Alloc(max, memory.AllocOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for i, n := range []uint64{1, 7, 4096, 4097, 1 << 20, max} {
				fill(src.Bytes()[:n], uint64(i+1))
				clear(dst.Bytes()[:n])
				if err := copyVA(ctx, r.e, a.VA()+3, src.VA(), n); err != nil {
					t.Fatalf("%d bytes host to device: %v", n, err)
				}
				if err := copyVA(ctx, r.e, b.VA(), a.VA()+3, n); err != nil {
					t.Fatalf("%d bytes device to device: %v", n, err)
				}
				// Host pointers work as well as device addresses.
				if err := copyVA(ctx, r.e, addr(dst.Bytes()), b.VA(), n); err != nil {
					t.Fatalf("%d bytes device to host: %v", n, err)
				}
				if !bytes.Equal(dst.Bytes()[:n], src.Bytes()[:n]) {
					t.Fatalf("%d bytes: round trip corrupted the data", n)
				}
			}
		})
	}
}

func TestMemsetAndBatch(t *testing.T) { forASICs(t, testMemsetAndBatch) }

func testMemsetAndBatch(t *testing.T, asic sim.ASIC) {
	r := newRig(t, asic, Options{})
	ctx := context.Background()
	h, _ := r.m.AllocHost(1<<20, memory.HostOptions{})
	buf, _ := r.m.Alloc(1<<20, memory.AllocOptions{})
	if err := memsetVA(ctx, r.e, buf.VA(), 0x0807060504030201, 4096); err != nil {
		t.Fatal(err)
	}
	if err := copyVA(ctx, r.e, h.VA(), buf.VA(), 4096); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4096; i++ {
		if h.Bytes()[i] != byte(i%8+1) {
			t.Fatalf("memset byte %d = %#x", i, h.Bytes()[i])
		}
	}
	// A batch of 600 small copies needs more than one command buffer
	// and is spread over queues.
	b := r.e.NewBatch(BatchOptions{})
	for i := 0; i < 600; i++ {
		h.Bytes()[i] = byte(i * 7)
		if err := b.CopyAddr(buf.VA()+uint64(i)*64, h.VA()+uint64(i), 1); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := b.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-tr.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("batch did not complete")
	}
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 1)
	for i := 0; i < 600; i += 97 {
		if err := copyVA(ctx, r.e, h.VA()+4096, buf.VA()+uint64(i)*64, 1); err != nil {
			t.Fatal(err)
		}
		out[0] = h.Bytes()[4096]
		if out[0] != byte(i*7) {
			t.Errorf("batch copy %d: %#x", i, out[0])
		}
	}
}

func TestErrors(t *testing.T) { forASICs(t, testErrors) }

func testErrors(t *testing.T, asic sim.ASIC) {
	r := newRig(t, asic, Options{})
	ctx := context.Background()
	buf, _ := r.m.Alloc(1<<20, memory.AllocOptions{})
	if err := copyVA(ctx, r.e, buf.VA(), 0x1234, 8); !errors.Is(err, ErrUnmapped) {
		t.Errorf("copy from an unmapped address: %v", err)
	}
	if err := copyVA(ctx, r.e, buf.VA()+buf.Size()-4, buf.VA(), 8); !errors.Is(err, ErrUnmapped) {
		t.Errorf("copy past the end of a buffer: %v", err)
	}
	// A closed buffer under a running transfer is released afterwards.
	h, _ := r.m.AllocHost(1<<20, memory.HostOptions{})
	tr, err := startCopyVA(r.e, buf.VA(), h.VA(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	buf.Close()
	if err := tr.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if r.m.Lookup(buf.VA()).Kind != memory.Unknown {
		t.Error("the buffer was not released after the transfer")
	}
	// Cancellation returns promptly; the transfer can still be waited.
	c, cancel := context.WithCancel(ctx)
	cancel()
	b2, _ := r.m.Alloc(4096, memory.AllocOptions{})
	tr, err = startCopyVA(r.e, b2.VA(), h.VA(), 4096)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Wait(c); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait with a cancelled context: %v", err)
	}
	if err := tr.Wait(ctx); err != nil {
		t.Errorf("second Wait: %v", err)
	}
}

func TestPrepared(t *testing.T) { forASICs(t, testPrepared) }

func testPrepared(t *testing.T, asic sim.ASIC) {
	r := newRig(t, asic, Options{})
	h, _ := r.m.AllocHost(4096, memory.HostOptions{})
	buf, _ := r.m.Alloc(1<<20, memory.AllocOptions{})
	b := r.e.NewBatch(BatchOptions{})
	b.CopyAddr(buf.VA(), h.VA(), 4096)
	p, err := b.Prepare(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if err := p.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if err := buf.Close(); err != nil {
		t.Fatal(err)
	}
	if r.m.Lookup(buf.VA()).Kind == memory.Unknown {
		t.Error("a prepared transfer's buffer was released while prepared")
	}
	p.Close()
	p.Close()
	if r.m.Lookup(buf.VA()).Kind != memory.Unknown {
		t.Error("closing the prepared transfer did not release the buffer")
	}
	if err := p.Run(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Run after Close: %v", err)
	}
}

// TestMappedKernelCBs runs Gaudi2 copies from kernel CBs mapped into the
// device MMU instead of user CBs in host memory.
func TestMappedKernelCBs(t *testing.T) {
	r := newRig(t, sim.Gaudi2, Options{MappedKernelCBs: true})
	ctx := context.Background()
	h, _ := r.m.AllocHost(1<<20, memory.HostOptions{})
	out, _ := r.m.AllocHost(1<<20, memory.HostOptions{})
	buf, _ := r.m.Alloc(1<<20, memory.AllocOptions{})
	fill(h.Bytes(), 9)
	if err := copyVA(ctx, r.e, buf.VA(), h.VA(), 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := copyVA(ctx, r.e, out.VA(), buf.VA(), 1<<20); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(h.Bytes(), out.Bytes()) {
		t.Fatal("copy through mapped kernel CBs corrupted the data")
	}
}

// TestCloseFinishesUnwaited closes an Engine with a transfer nobody waited
// for and a prepared batch nobody closed: Close must finish both.
func TestCloseFinishesUnwaited(t *testing.T) { forASICs(t, testCloseFinishesUnwaited) }

func testCloseFinishesUnwaited(t *testing.T, asic sim.ASIC) {
	r := newRig(t, asic, Options{})
	h, _ := r.m.AllocHost(1<<20, memory.HostOptions{})
	buf, _ := r.m.Alloc(1<<20, memory.AllocOptions{})
	tr, err := startCopyVA(r.e, buf.VA(), h.VA(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	b := r.e.NewBatch(BatchOptions{})
	b.CopyAddr(h.VA(), buf.VA(), 4096)
	if _, err := b.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.e.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close hung on an unwaited transfer")
	}
	if err := tr.Err(); err != nil {
		t.Errorf("transfer finished by Close: %v", err)
	}
	if err := buf.Close(); err != nil || r.m.Lookup(buf.VA()).Kind != memory.Unknown {
		t.Errorf("buffer still held after Engine.Close: %v", err)
	}
	if _, err := startCopyVA(r.e, buf.VA(), h.VA(), 1); err == nil {
		t.Error("StartCopy after Close succeeded")
	}
}

// TestBatchTimeout gives a batch its own CS timeout and checks the CS the
// simulator received carried it, through the simulator's TDR: a copy that
// completes well within one second is unaffected.
func TestBatchTimeout(t *testing.T) {
	r := newRig(t, sim.Gaudi, Options{Timestamps: true})
	h, _ := r.m.AllocHost(1<<20, memory.HostOptions{})
	buf, _ := r.m.Alloc(1<<20, memory.AllocOptions{})
	b := r.e.NewBatch(BatchOptions{Timeout: 1500 * time.Millisecond})
	if err := b.CopyAddr(buf.VA(), h.VA(), 1<<20); err != nil {
		t.Fatal(err)
	}
	var a hl.CSChunksArgs
	r.e.fillCS(&a, nil, b.opts.Timeout)
	if in := &a; in.CSFlags&hl.HL_CS_FLAGS_CUSTOM_TIMEOUT == 0 || in.Timeout != 2 || in.CSFlags&hl.HL_CS_FLAGS_TIMESTAMP == 0 {
		t.Errorf("CS flags %#x timeout %d, want CUSTOM_TIMEOUT|TIMESTAMP and 2 s", in.CSFlags, in.Timeout)
	}
	tr, err := b.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if tr.Timestamp() == 0 {
		t.Error("no completion timestamp with Options.Timestamps")
	}
}
