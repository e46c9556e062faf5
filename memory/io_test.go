package memory_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/internal/simtest"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
)

// rig opens a simulated device with a Manager and, when withEngine, a DMA
// engine attached to it.
func rig(t *testing.T, asic sim.ASIC, withEngine bool) (*memory.Manager, *dma.Engine) {
	t.Helper()
	s := simtest.New(t, sim.Default(asic, 1))
	d, err := simdevice.OpenSim(s.Device(0))
	if err != nil {
		t.Fatal(err)
	}
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var e *dma.Engine
	if withEngine {
		if e, err = dma.New(m, dma.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if e != nil {
			e.Close()
		}
		m.Close()
		d.Close()
	})
	return m, e
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31) ^ seed
	}
	return b
}

// TestReadWriteAt checks the io.ReaderAt and io.WriterAt contracts of a
// device buffer, through the staging buffers and the attached engine.
func TestReadWriteAt(t *testing.T) {
	for _, asic := range []sim.ASIC{sim.Gaudi2, sim.Gaudi} {
		t.Run(asic.String(), func(t *testing.T) {
			m, _ := rig(t, asic, true)
			b, err := m.Alloc(16<<20, memory.AllocOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var _ io.ReaderAt = b
			var _ io.WriterAt = b
			size := int64(b.Size())
			// More than one staging buffer's worth, at an odd offset.
			data := pattern(9<<20+77, 5)
			if n, err := b.WriteAt(data, 4099); n != len(data) || err != nil {
				t.Fatalf("WriteAt = %d, %v", n, err)
			}
			got := make([]byte, len(data))
			if n, err := b.ReadAt(got, 4099); n != len(got) || err != nil {
				t.Fatalf("ReadAt = %d, %v", n, err)
			}
			if !bytes.Equal(got, data) {
				t.Fatal("ReadAt returned other bytes than WriteAt wrote")
			}
			// io.ReaderAt: a short read at the end is io.EOF with the bytes.
			tail := make([]byte, 100)
			if n, err := b.ReadAt(tail, size-40); n != 40 || err != io.EOF {
				t.Fatalf("ReadAt across the end = %d, %v; want 40, io.EOF", n, err)
			}
			if n, err := b.ReadAt(tail, size); n != 0 || err != io.EOF {
				t.Fatalf("ReadAt at the end = %d, %v; want 0, io.EOF", n, err)
			}
			if _, err := b.ReadAt(tail, -1); !errors.Is(err, memory.ErrRange) {
				t.Fatalf("ReadAt at -1: %v, want ErrRange", err)
			}
			// io.WriterAt: what fits is written, the rest is an error.
			if n, err := b.WriteAt(pattern(100, 9), size-40); n != 40 || !errors.Is(err, memory.ErrRange) {
				t.Fatalf("WriteAt across the end = %d, %v; want 40, ErrRange", n, err)
			}
			if n, err := b.ReadAt(tail[:40], size-40); n != 40 || err != nil || !bytes.Equal(tail[:40], pattern(100, 9)[:40]) {
				t.Fatalf("the bytes WriteAt wrote before the end: %d, %v", n, err)
			}
			if _, err := b.WriteAt(tail, size+1); !errors.Is(err, memory.ErrRange) {
				t.Fatalf("WriteAt past the end: %v, want ErrRange", err)
			}
			// Concurrent readers and writers of distinct ranges.
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for i := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					want := pattern(64<<10, byte(i))
					off := int64(i) << 20
					if _, err := b.WriteAtContext(context.Background(), want, off); err != nil {
						errs <- err
						return
					}
					got := make([]byte, len(want))
					if _, err := b.ReadAtContext(context.Background(), got, off); err != nil {
						errs <- err
						return
					}
					if !bytes.Equal(got, want) {
						errs <- errors.New("concurrent ReadAt saw other bytes")
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

// TestReadAtWithoutEngine: a Manager without an engine (or whose engine
// closed) refuses clearly.
func TestReadAtWithoutEngine(t *testing.T) {
	m, _ := rig(t, sim.Gaudi2, false)
	b, err := m.Alloc(4096, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.ReadAt(make([]byte, 8), 0); !errors.Is(err, memory.ErrNoMover) {
		t.Fatalf("ReadAt without an engine: %v, want ErrNoMover", err)
	}
	e, err := dma.New(m, dma.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.WriteAt([]byte{1, 2, 3}, 0); err != nil {
		t.Fatalf("WriteAt with an engine: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ReadAt(make([]byte, 8), 0); !errors.Is(err, memory.ErrNoMover) {
		t.Fatalf("ReadAt after the engine closed: %v, want ErrNoMover", err)
	}
}

// TestReadAtCancelled: a context that ended is an error, and the buffer
// can still be closed.
func TestReadAtCancelled(t *testing.T) {
	m, _ := rig(t, sim.Gaudi2, true)
	b, err := m.Alloc(1<<20, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.ReadAtContext(ctx, make([]byte, 4096), 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("ReadAtContext with a cancelled context: %v, want context.Canceled", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}
