package dma

import (
	"context"
	"testing"

	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
)

// BenchmarkPreparedRun submits and waits for a prepared one-packet CS on
// the simulator. Allocations counted here include the simulator's own.
func BenchmarkPreparedRun(b *testing.B) {
	r := newRig(b, sim.Gaudi2, Options{})
	h, _ := r.m.AllocHost(4096, memory.HostOptions{})
	buf, _ := r.m.Alloc(1, memory.AllocOptions{})
	bt := r.e.NewBatch(BatchOptions{})
	bt.CopyAddr(buf.VA(), h.VA(), 64)
	p, err := bt.Prepare(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Run(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCopy64MiB measures 64 MiB host-to-device and device-to-host
// copies on the simulator against a plain copy() of 64 MiB between two
// host buffers in the same run, and reports the ratio.
func BenchmarkCopy64MiB(b *testing.B) {
	const n = 64 << 20
	r := newRig(b, sim.Gaudi2, Options{})
	h, _ := r.m.AllocHost(n, memory.HostOptions{HugePages: true})
	h2, _ := r.m.AllocHost(n, memory.HostOptions{HugePages: true})
	buf, _ := r.m.Alloc(n, memory.AllocOptions{})
	ctx := context.Background()
	fill(h.Bytes(), 1)
	fill(h2.Bytes(), 2)
	// Warm up: fault in every page on both sides.
	for i := 0; i < 2; i++ {
		if err := copyVA(ctx, r.e, buf.VA(), h.VA(), n); err != nil {
			b.Fatal(err)
		}
		if err := copyVA(ctx, r.e, h2.VA(), buf.VA(), n); err != nil {
			b.Fatal(err)
		}
		copy(h2.Bytes(), h.Bytes())
	}
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"memcpy", func() error { copy(h2.Bytes(), h.Bytes()); return nil }},
		{"h2d", func() error { return copyVA(ctx, r.e, buf.VA(), h.VA(), n) }},
		{"d2h", func() error { return copyVA(ctx, r.e, h2.VA(), buf.VA(), n) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(n)
			b.ReportAllocs()
			for b.Loop() {
				if err := c.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
