package dma

import (
	"bytes"
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/sim"
)

// TestTypedCopies moves bytes host -> device -> device -> host with the
// typed copies, at offsets inside the buffers, and checks them.
func TestTypedCopies(t *testing.T) {
	for _, asic := range []sim.ASIC{sim.Gaudi2, sim.Gaudi} {
		t.Run(asic.String(), func(t *testing.T) {
			r := newRig(t, asic, Options{})
			ctx := context.Background()
			const n = 3<<20 + 123
			h, err := r.m.AllocHost(2*n, memory.HostOptions{})
			if err != nil {
				t.Fatal(err)
			}
			a, err := r.m.Alloc(n+4096, memory.AllocOptions{})
			if err != nil {
				t.Fatal(err)
			}
			b, err := r.m.Alloc(n+4096, memory.AllocOptions{})
			if err != nil {
				t.Fatal(err)
			}
			src, dst := h.Range(0, n), h.Range(n, n)
			fill(src.Bytes(), 7)
			if err := r.e.CopyToDevice(ctx, a.Range(17, n), src); err != nil {
				t.Fatal(err)
			}
			if err := r.e.CopyOnDevice(ctx, b.Range(4096, n), a.Range(17, n)); err != nil {
				t.Fatal(err)
			}
			if err := r.e.CopyToHost(ctx, dst, b.Range(4096, n)); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(src.Bytes(), dst.Bytes()) {
				t.Fatal("bytes differ after host -> device -> device -> host")
			}
			if err := r.e.Memset(ctx, a.Range(0, 4096), 0x0807060504030201); err != nil {
				t.Fatal(err)
			}
			if err := r.e.CopyToHost(ctx, dst.Slice(0, 4096), a.Range(0, 4096)); err != nil {
				t.Fatal(err)
			}
			for i, c := range dst.Bytes()[:4096] {
				if c != byte(i%8+1) {
					t.Fatalf("byte %d after Memset: %#x, want %#x", i, c, i%8+1)
				}
			}
			if hz := r.s.Device(0).BarrierHazards(); hz != 0 {
				t.Errorf("%d engine barrier hazards", hz)
			}
		})
	}
}

// TestTypedCopyErrors checks that bad ranges are typed errors before any
// work: nothing is submitted and nothing stays held.
func TestTypedCopyErrors(t *testing.T) {
	r := newRig(t, sim.Gaudi2, Options{})
	ctx := context.Background()
	h, err := r.m.AllocHost(8192, memory.HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	buf, err := r.m.Alloc(8192, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	closedBuf, err := r.m.Alloc(4096, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := closedBuf.Close(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		run  func() error
		want error
	}{
		{"lengths differ", func() error { return r.e.CopyToDevice(ctx, buf.Range(0, 4096), h.Range(0, 4095)) }, ErrLength},
		{"past the buffer", func() error { return r.e.CopyToDevice(ctx, buf.Range(buf.Size()-4096, 8192), h.Range(0, 8192)) }, memory.ErrRange},
		{"offset wraps", func() error { return r.e.CopyToHost(ctx, h.Range(0, 2), buf.Range(math.MaxUint64, 2)) }, memory.ErrRange},
		{"host past the mapping", func() error { return r.e.CopyToHost(ctx, h.Range(8000, 200), buf.Range(0, 200)) }, memory.ErrRange},
		{"zero range", func() error { return r.e.CopyOnDevice(ctx, memory.DeviceRange{}, buf.Range(0, 1)) }, memory.ErrRange},
		{"closed buffer", func() error { return r.e.CopyOnDevice(ctx, buf.Range(0, 64), closedBuf.Range(0, 64)) }, memory.ErrClosed},
		{"memset past the buffer", func() error { return r.e.Memset(ctx, buf.Range(1, buf.Size()), 0) }, memory.ErrRange},
		{"batch keeps its first error", func() error {
			b := r.e.NewBatch(BatchOptions{})
			_ = b.CopyToDevice(buf.Range(0, 10), h.Range(0, 11))
			_ = b.CopyToDevice(buf.Range(0, 10), h.Range(0, 10))
			_, err := b.Start(ctx)
			return err
		}, ErrLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want an error matching %v", err, tt.want)
			}
		})
	}
	// Nothing was held: the buffers close at once.
	if err := buf.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	// An empty copy does nothing and succeeds.
	if err := r.e.CopyToDevice(ctx, memory.DeviceRange{}.Slice(0, 0), memory.HostRange{}); !errors.Is(err, memory.ErrRange) {
		t.Fatalf("copy of ranges naming no buffer: %v, want ErrRange", err)
	}
}

// TestEngineBarrierBits checks which packets of a command buffer get the
// engine barrier: only one that touches what an earlier packet since the
// last barrier writes, or writes what it reads.
func TestEngineBarrierBits(t *testing.T) {
	type pkt struct {
		memset       bool
		src, dst, n  uint64
		wantEBOnThis bool
	}
	tests := []struct {
		name string
		pkts []pkt
	}{
		{"independent copies", []pkt{{false, 0x1000, 0x9000, 0x100, false}, {false, 0x2000, 0xa000, 0x100, false}}},
		{"read after write", []pkt{{false, 0x1000, 0x9000, 0x100, false}, {false, 0x9080, 0xa000, 0x100, true}}},
		{"write after read", []pkt{{false, 0x1000, 0x9000, 0x100, false}, {false, 0x5000, 0x1010, 0x10, true}}},
		{"write after write", []pkt{{false, 0x1000, 0x9000, 0x100, false}, {true, 0, 0x90ff, 1, true}}},
		{"adjacent is not overlapping", []pkt{{false, 0x1000, 0x9000, 0x100, false}, {false, 0x9100, 0xa000, 0x100, false}}},
		{"shared source", []pkt{{false, 0x1000, 0x9000, 0x100, false}, {false, 0x1000, 0xa000, 0x100, false}}},
		{"a barrier clears what came before", []pkt{
			{false, 0x1000, 0x9000, 0x100, false},
			{false, 0x9000, 0xa000, 0x100, true},
			{false, 0x1000, 0xb000, 0x100, false}, // reads 0x1000 again: only the barrier packet is in flight
		}},
	}
	enc := newEncoders(packet.Gaudi2)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f flight
			var cb []byte
			buf := make([]byte, 0, 24*len(tt.pkts))
			cb = buf
			for i, p := range tt.pkts {
				eb := f.admit(p.memset, p.src, p.dst, p.n)
				if eb != p.wantEBOnThis {
					t.Errorf("packet %d: barrier %v, want %v", i, eb, p.wantEBOnThis)
				}
				var err error
				if cb, err = enc.pick(p.memset, eb).Append(cb, p.src, p.dst, uint32(p.n)); err != nil {
					t.Fatal(err)
				}
			}
			for i := range tt.pkts {
				got, _, err := packet.Gaudi2.Decode(cb[24*i:])
				if err != nil {
					t.Fatal(err)
				}
				l := got.(packet.LinDMA)
				if l.EngineBarrier != tt.pkts[i].wantEBOnThis || !l.MsgBarrier || l.Memset != tt.pkts[i].memset {
					t.Errorf("packet %d decodes as %+v", i, l)
				}
			}
		})
	}
	var f flight
	for i := range maxTracked {
		if f.admit(false, uint64(i)<<20, 1<<40+uint64(i)<<20, 16) {
			t.Fatalf("independent packet %d got a barrier", i)
		}
	}
	if !f.admit(false, 1<<30, 1<<41, 16) {
		t.Errorf("packet %d (past maxTracked) got no barrier", maxTracked)
	}
}

// TestBarrierOnOneQueue runs two writes of the same device memory
// through one command buffer (one stream: the host-to-device copies of a
// batch share a queue) and checks the simulator saw no hazard and the
// second write won: the package set the barrier where the second packet
// writes what the first writes.
func TestBarrierOnOneQueue(t *testing.T) {
	for _, asic := range []sim.ASIC{sim.Gaudi2, sim.Gaudi} {
		t.Run(asic.String(), func(t *testing.T) {
			r := newRig(t, asic, Options{Streams: 1})
			ctx := context.Background()
			const n = 64 << 10
			h, err := r.m.AllocHost(3*n, memory.HostOptions{})
			if err != nil {
				t.Fatal(err)
			}
			a, err := r.m.Alloc(n, memory.AllocOptions{})
			if err != nil {
				t.Fatal(err)
			}
			fill(h.Range(0, n).Bytes(), 3)
			fill(h.Range(n, n).Bytes(), 4)
			b := r.e.NewBatch(BatchOptions{})
			if err := b.CopyToDevice(a.Range(0, n), h.Range(0, n)); err != nil {
				t.Fatal(err)
			}
			if err := b.CopyToDevice(a.Range(0, n), h.Range(n, n)); err != nil {
				t.Fatal(err)
			}
			tr, err := b.Start(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			if err := r.e.CopyToHost(ctx, h.Range(2*n, n), a.Range(0, n)); err != nil {
				t.Fatal(err)
			}
			if hz := r.s.Device(0).BarrierHazards(); hz != 0 {
				t.Fatalf("%d engine barrier hazards", hz)
			}
			if !bytes.Equal(h.Range(n, n).Bytes(), h.Range(2*n, n).Bytes()) {
				t.Fatal("device memory does not hold the second write")
			}
		})
	}
}

// TestCopiesRacingClose runs copies on several goroutines while the Engine
// closes: each either completes or fails with ErrClosed, nothing panics,
// and Close returns once every copy's transfer is done (the pooled
// Transfers of copies must never be adopted after their reuse).
func TestCopiesRacingClose(t *testing.T) {
	for round := range 5 {
		r := newRig(t, sim.Gaudi2, Options{})
		h, err := r.m.AllocHost(1<<20, memory.HostOptions{})
		if err != nil {
			t.Fatal(err)
		}
		buf, err := r.m.Alloc(1<<20, memory.AllocOptions{})
		if err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, 64)
		done := make(chan struct{})
		for g := range 4 {
			go func() {
				defer func() { done <- struct{}{} }()
				off := uint64(g) << 18
				for {
					err := r.e.CopyToDevice(context.Background(), buf.Range(off, 4096), h.Range(off, 4096))
					if err != nil {
						if !errors.Is(err, ErrClosed) {
							errs <- err
						}
						return
					}
				}
			}()
		}
		time.Sleep(time.Duration(round+1) * time.Millisecond)
		if err := r.e.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		for range 4 {
			<-done
		}
		close(errs)
		for err := range errs {
			t.Errorf("copy racing Close: %v", err)
		}
	}
}
