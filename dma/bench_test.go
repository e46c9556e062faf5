package dma

import (
	"context"
	"fmt"
	"testing"

	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
)

// BenchmarkPreparedRun submits and waits for a prepared one-packet CS on
// the simulator. Allocations counted here include the simulator's own.
func BenchmarkPreparedRun(b *testing.B) {
	r := newRig(b, sim.Gaudi2, Options{})
	h, _ := r.m.AllocHost(4096, memory.HostOptions{})
	buf, _ := r.m.Alloc(4096, memory.AllocOptions{})
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

// BenchmarkASICCopy measures a 4 KiB and a 64 MiB host-to-device copy
// (typed ranges, waited for) on a simulated Gaudi2, whose copies are CSs,
// and on a simulated Gaudi3, whose copies are jobs in the rings of its
// PDMA channels: what the two submission paths cost on the same
// simulator. Allocations counted here include the simulator's own.
func BenchmarkASICCopy(b *testing.B) {
	for _, asic := range []sim.ASIC{sim.Gaudi2, sim.Gaudi3} {
		for _, n := range []uint64{4 << 10, 64 << 20} {
			b.Run(fmt.Sprintf("%v/%dKiB", asic, n>>10), func(b *testing.B) {
				r := newRig(b, asic, Options{})
				h, _ := r.m.AllocHost(n, memory.HostOptions{HugePages: true})
				buf, _ := r.m.Alloc(n, memory.AllocOptions{})
				fill(h.Bytes(), 1)
				ctx := context.Background()
				dst, src := buf.Range(0, n), h.Range(0, n)
				if err := r.e.CopyToDevice(ctx, dst, src); err != nil { // fault the pages in
					b.Fatal(err)
				}
				b.SetBytes(int64(n))
				b.ReportAllocs()
				for b.Loop() {
					if err := r.e.CopyToDevice(ctx, dst, src); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
