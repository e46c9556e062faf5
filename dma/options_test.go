package dma

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// TestBadOptions: New rejects options out of range with ErrBadOptions,
// before the Engine exists, so nothing is held and nothing can hang.
func TestBadOptions(t *testing.T) {
	r := newRig(t, sim.Gaudi2, Options{})
	for _, tc := range []struct {
		name string
		opts Options
		ok   bool
	}{
		{"defaults", Options{}, true},
		{"StripeSize 1", Options{StripeSize: 1}, false},
		{"StripeSize 4095", Options{StripeSize: 4095}, false},
		{"StripeSize 4096", Options{StripeSize: 4096}, true},
		{"StripeSize 1 TiB", Options{StripeSize: 1 << 40}, true},
		{"StripeSize 1 TiB + 1", Options{StripeSize: 1<<40 + 1}, false},
		{"StripeSize max", Options{StripeSize: math.MaxUint64}, false},
		{"Streams -1", Options{Streams: -1}, false},
		{"Streams 4", Options{Streams: 4}, true},
		{"Streams 5", Options{Streams: 5}, false},
		{"Timeout -1", Options{Timeout: -1}, false},
		{"Timeout 2^32-1 s", Options{Timeout: math.MaxUint32 * time.Second}, true},
		{"Timeout 2^32 s", Options{Timeout: (math.MaxUint32 + 1) * time.Second}, false},
		{"MaxRetries -1", Options{MaxRetries: -1}, false},
		{"MaxRetries 1", Options{MaxRetries: 1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(r.m, tc.opts)
			if tc.ok {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if err := e.Close(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrBadOptions) || e != nil {
				t.Fatalf("New(%+v) = %v, %v; want ErrBadOptions", tc.opts, e, err)
			}
		})
	}
}

// TestSmallStripe copies with the smallest stripe, which splits a copy over
// every queue of its direction, and closes the Engine.
func TestSmallStripe(t *testing.T) {
	r := newRig(t, sim.Gaudi2, Options{StripeSize: minStripe, Streams: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 1 << 20
	h, _ := r.m.AllocHost(n, memory.HostOptions{})
	out, _ := r.m.AllocHost(n, memory.HostOptions{})
	buf, _ := r.m.Alloc(n, memory.AllocOptions{})
	fill(h.Bytes(), 3)
	if err := copyVA(ctx, r.e, buf.VA(), h.VA(), n); err != nil {
		t.Fatal(err)
	}
	if err := copyVA(ctx, r.e, out.VA(), buf.VA(), n); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if out.Bytes()[i] != h.Bytes()[i] {
			t.Fatalf("byte %d differs", i)
		}
	}
	if err := within(t, 30*time.Second, "Engine.Close", r.e.Close); err != nil {
		t.Fatal(err)
	}
}

// TestCopyRanges: addresses and lengths whose sums wrap around 2^64, or run
// past a buffer, are ErrUnmapped, never a panic or a transfer.
func TestCopyRanges(t *testing.T) {
	r := newRig(t, sim.Gaudi2, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, _ := r.m.AllocHost(1<<20, memory.HostOptions{})
	buf, _ := r.m.Alloc(1<<20, memory.AllocOptions{})
	end := buf.VA() + buf.Size()
	for _, tc := range []struct {
		name           string
		dst, src, n    uint64
		memset, wantOK bool
	}{
		{name: "whole host buffer", dst: buf.VA(), src: h.VA(), n: h.Size(), wantOK: true},
		{name: "whole device buffer", dst: buf.VA(), n: buf.Size(), memset: true, wantOK: true},
		{name: "last byte", dst: end - 1, src: h.VA(), n: 1, wantOK: true},
		{name: "one past the end", dst: end - 1, src: h.VA(), n: 2},
		{name: "at the end", dst: end, src: h.VA(), n: 1},
		{name: "length 2^64-1", dst: buf.VA(), src: h.VA(), n: math.MaxUint64},
		{name: "source length 2^64-1", dst: h.VA(), src: buf.VA(), n: math.MaxUint64},
		{name: "offset plus length wraps", dst: buf.VA() + 4096, src: h.VA(), n: math.MaxUint64 - 4095},
		{name: "address 2^64-1", dst: math.MaxUint64, src: h.VA(), n: 1},
		{name: "address 2^64-1, length 2", dst: h.VA(), src: math.MaxUint64, n: 2},
		{name: "memset past the end", dst: end - 8, n: 16, memset: true},
		{name: "memset length 2^64-1", dst: buf.VA(), n: math.MaxUint64, memset: true},
		{name: "memset last byte", dst: end - 1, n: 1, memset: true, wantOK: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.memset {
				err = memsetVA(ctx, r.e, tc.dst, 0x5a, tc.n)
			} else {
				err = copyVA(ctx, r.e, tc.dst, tc.src, tc.n)
			}
			if tc.wantOK {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrUnmapped) {
				t.Fatalf("%v, want ErrUnmapped", err)
			}
		})
	}
}

// TestBatchTimeoutRange: a negative batch timeout leaves the Engine's, and
// one beyond the driver's 32-bit field is capped instead of wrapping.
func TestBatchTimeoutRange(t *testing.T) {
	r := newRig(t, sim.Gaudi2, Options{Timeout: 3 * time.Second})
	for _, tc := range []struct {
		d    time.Duration
		want uint32
	}{
		{-time.Second, 3},
		{0, 3},
		{time.Nanosecond, 1},
		{math.MaxInt64, math.MaxUint32},
		{(math.MaxUint32 + 1) * time.Second, math.MaxUint32},
	} {
		b := r.e.NewBatch(BatchOptions{Timeout: tc.d})
		var a hl.CSChunksArgs
		r.e.fillCS(&a, nil, b.opts.Timeout)
		if in := &a; in.CSFlags&hl.HL_CS_FLAGS_CUSTOM_TIMEOUT == 0 || in.Timeout != tc.want {
			t.Errorf("BatchOptions.Timeout %v: flags %#x, timeout %d s; want CUSTOM_TIMEOUT and %d s", tc.d, in.CSFlags, in.Timeout, tc.want)
		}
	}
}
