package memory_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
)

// TestBufferLengthIsAsked: a buffer is the length Alloc was given, although
// the driver allocates whole DRAM pages (768 MiB on Gaudi2), so the
// natural whole-buffer copy works and nothing reaches the padding (issue
// 22 item 6: All() was the rounded 768 MiB and the copy failed).
func TestBufferLengthIsAsked(t *testing.T) {
	for _, asic := range []sim.ASIC{sim.Gaudi, sim.Gaudi2, sim.Gaudi3} {
		t.Run(asic.String(), func(t *testing.T) {
			m, e := rig(t, asic, true)
			ctx := context.Background()
			const n = 1 << 20
			b, err := m.Alloc(n, memory.AllocOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if b.Size() != n || b.All().Len() != n || b.Size() < n || b.Size()%4096 != 0 {
				t.Fatalf("Size %#x, All().Len %#x, AllocatedSize %#x; want %#x and a rounded allocation", b.Size(), b.All().Len(), b.Size(), n)
			}
			h, err := m.AllocHost(n, memory.HostOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			want := pattern(n, 7)
			copy(h.Bytes(), want)
			if err := e.CopyToDevice(ctx, b.All(), h.All()); err != nil {
				t.Fatalf("whole-buffer copy: %v", err)
			}
			got := make([]byte, n)
			if k, err := b.ReadAt(got, 0); k != n || err != nil || !bytes.Equal(got, want) {
				t.Fatalf("ReadAt: %d, %v, equal %v", k, err, bytes.Equal(got, want))
			}
			// Nothing past the length: I/O, ranges, address lookups.
			if k, err := b.ReadAt(got[:1], n); k != 0 || err != io.EOF {
				t.Errorf("ReadAt at the end: %d, %v, want 0, EOF", k, err)
			}
			if k, err := b.WriteAt([]byte{1}, n); k != 0 || !errors.Is(err, memory.ErrRange) {
				t.Errorf("WriteAt at the end: %d, %v, want ErrRange", k, err)
			}
			if err := b.Range(n-4096, 8192).Check(); !errors.Is(err, memory.ErrRange) {
				t.Errorf("range past the length: %v, want ErrRange", err)
			}
			if r := m.Lookup(b.VA() + n); r.Kind != memory.Unknown {
				t.Errorf("Lookup past the length: %+v, want nothing", r)
			}
			if r := m.Lookup(b.VA() + n - 1); r.Kind != memory.DeviceMemory || r.Len() != 1 {
				t.Errorf("Lookup of the last byte: %+v", r)
			}
			// Exports cover the length in whole host pages, no more.
			page := uint64(os.Getpagesize())
			x, err := b.Export(0, n, memory.ExportOptions{})
			if err != nil {
				t.Fatalf("export of the whole buffer: %v", err)
			}
			if x.Size() != n {
				t.Errorf("export size %#x", x.Size())
			}
			x.Close()
			if x, err := b.Export(0, n+page, memory.ExportOptions{}); !errors.Is(err, memory.ErrRange) {
				t.Errorf("export past the length: %v, want ErrRange", err)
				if err == nil {
					x.Close()
				}
			}
		})
	}
}

// TestBufferOddLength: a length that is not a whole host page is exported
// with its last page whole, and copies end at the length.
func TestBufferOddLength(t *testing.T) {
	m, _ := rig(t, sim.Gaudi2, false)
	const n = 5000
	b, err := m.Alloc(n, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	page := uint64(os.Getpagesize())
	last := (n + page - 1) / page * page
	x, err := b.Export(0, last, memory.ExportOptions{})
	if err != nil {
		t.Fatalf("export of [0, %#x): %v", last, err)
	}
	x.Close()
	if x, err := b.Export(0, last+page, memory.ExportOptions{}); !errors.Is(err, memory.ErrRange) {
		t.Errorf("export of [0, %#x): %v, want ErrRange", last+page, err)
		if err == nil {
			x.Close()
		}
	}
	if err := b.All().Check(); err != nil || b.All().Len() != n {
		t.Errorf("All: %d bytes, %v", b.All().Len(), err)
	}
}
