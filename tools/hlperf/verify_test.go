package main

import (
	"context"
	"strings"
	"testing"

	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/simdevice"
)

// TestCheck shows that -verify's comparison finds a wrong byte, in host
// and in device memory, and a copy that did not happen.
func TestCheck(t *testing.T) {
	d, err := simdevice.Open("sim")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	e, err := dma.New(m, dma.Options{}) // moves the bytes of the device buffers' ReadAt and WriteAt
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const n = chunk + 5000 // two chunks, the second partial
	h, err := m.AllocHost(n, memory.HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Alloc(n, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, ep := range []endpoint{{host: h}, {dev: b}} {
		if err := fill(ctx, ep, n, 7); err != nil {
			t.Fatal(err)
		}
		if err := check(ctx, ep, n, 7); err != nil {
			t.Errorf("same pattern: %v", err)
		}
		if err := check(ctx, ep, n, 8); err == nil || !strings.Contains(err.Error(), "at byte 0 ") {
			t.Errorf("another pattern: %v", err)
		}
		// One byte off, in the second chunk.
		at := uint64(chunk + 4321)
		if ep.host != nil {
			h.Bytes()[at] ^= 1
		} else {
			var one [1]byte
			b.ReadAt(one[:], int64(at))
			one[0] ^= 1
			b.WriteAt(one[:], int64(at))
		}
		if err := check(ctx, ep, n, 7); err == nil || !strings.Contains(err.Error(), "differs from the source at byte 16781537 ") {
			t.Errorf("one byte off: %v", err)
		}
	}
}

func TestFillPattern(t *testing.T) {
	// Filling in pieces at any multiple of 8 gives the bytes of one fill.
	whole := make([]byte, 1000)
	fillPattern(whole, 3, 0)
	pieces := make([]byte, 1000)
	fillPattern(pieces[:504], 3, 0)
	fillPattern(pieces[504:], 3, 504)
	if string(whole) != string(pieces) {
		t.Error("pieces differ from one fill")
	}
	other := make([]byte, 1000)
	fillPattern(other, 4, 0)
	same := 0
	for i := range whole {
		if whole[i] == other[i] {
			same++
		}
	}
	if same > 20 {
		t.Errorf("seeds 3 and 4 share %d of 1000 bytes", same)
	}
}
