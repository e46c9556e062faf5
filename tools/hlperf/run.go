package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/simdevice"
)

type config struct {
	dirs          []string
	min, max      uint64
	iters, warmup int
	streams       int
	progress      bool
}

// result is one measured point.
type result struct {
	Device    string  `json:"device"`
	Direction string  `json:"direction"`
	Size      uint64  `json:"size"`
	Iters     int     `json:"iterations"`
	GBps      float64 `json:"gb_per_s"`
	P50us     float64 `json:"p50_us"`
	P99us     float64 `json:"p99_us"`
}

func run(cfg config) (_ []result, err error) {
	d, err := simdevice.OpenDefault()
	if err != nil {
		return nil, err
	}
	defer closeInto(&err, d)
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		return nil, err
	}
	defer closeInto(&err, m)
	e, err := dma.New(m, dma.Options{Streams: cfg.streams})
	if err != nil {
		return nil, err
	}
	defer closeInto(&err, e)
	hostA, err := m.AllocHost(cfg.max, memory.HostOptions{HugePages: true})
	if err != nil {
		return nil, err
	}
	hostB, err := m.AllocHost(cfg.max, memory.HostOptions{HugePages: true})
	if err != nil {
		return nil, err
	}
	devA, err := m.Alloc(cfg.max, memory.AllocOptions{})
	if err != nil {
		return nil, err
	}
	devB, err := m.Alloc(cfg.max, memory.AllocOptions{})
	if err != nil {
		return nil, err
	}
	// Touch the host memory once so page faults stay out of the timings.
	for _, h := range []*memory.HostBuffer{hostA, hostB} {
		b := h.Bytes()
		for i := 0; i < len(b); i += 4096 {
			b[i] = byte(i)
		}
	}
	var sizes []uint64
	for s := cfg.min; s <= cfg.max; s *= 4 {
		sizes = append(sizes, s)
		if s > cfg.max/4 && s != cfg.max {
			sizes = append(sizes, cfg.max)
			break
		}
	}
	ctx := context.Background()
	var out []result
	total := len(sizes) * len(cfg.dirs)
	for i, dir := range cfg.dirs {
		for j, size := range sizes {
			if cfg.progress {
				fmt.Fprintf(os.Stderr, "\r[%3d/%d] %-5s %10d bytes", i*len(sizes)+j+1, total, dir, size)
			}
			var copies []func(*dma.Batch) error
			h2d := func(b *dma.Batch) error { return b.CopyToDevice(devA.Range(0, size), hostA.Range(0, size)) }
			switch dir {
			case "h2d":
				copies = append(copies, h2d)
			case "d2h":
				copies = append(copies, func(b *dma.Batch) error { return b.CopyToHost(hostA.Range(0, size), devA.Range(0, size)) })
			case "d2d":
				copies = append(copies, func(b *dma.Batch) error { return b.CopyOnDevice(devB.Range(0, size), devA.Range(0, size)) })
			case "bidir":
				copies = append(copies, h2d, func(b *dma.Batch) error { return b.CopyToHost(hostB.Range(0, size), devB.Range(0, size)) })
			}
			lat, err := measure(ctx, e, copies, cfg.warmup, cfg.iters)
			if err != nil {
				return nil, fmt.Errorf("%s %d bytes: %w", dir, size, err)
			}
			var sum time.Duration
			for _, l := range lat {
				sum += l
			}
			bytes := float64(size) * float64(len(copies)) * float64(len(lat))
			slices.Sort(lat)
			out = append(out, result{
				Device: d.String(), Direction: dir, Size: size, Iters: len(lat),
				GBps:  bytes / sum.Seconds() / 1e9,
				P50us: float64(lat[len(lat)/2]) / 1e3,
				P99us: float64(lat[min(len(lat)-1, len(lat)*99/100)]) / 1e3,
			})
		}
	}
	if cfg.progress {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
	return out, nil
}

// measure runs the copies of one point (together, as one batch) and returns
// the latency of each timed iteration.
func measure(ctx context.Context, e *dma.Engine, copies []func(*dma.Batch) error, warmup, iters int) (_ []time.Duration, err error) {
	b := e.NewBatch(dma.BatchOptions{})
	for _, add := range copies {
		if err := add(b); err != nil {
			return nil, err
		}
	}
	p, err := b.Prepare(ctx)
	if err != nil {
		return nil, err
	}
	defer closeInto(&err, p)
	var lat []time.Duration
	for i := 0; i < warmup+iters; i++ {
		start := time.Now()
		if err := p.Run(ctx); err != nil {
			return nil, err
		}
		if i >= warmup {
			lat = append(lat, time.Since(start))
		}
	}
	return lat, nil
}

// closeInto closes c, adding its error to *err: a release that fails is
// reported with the run.
func closeInto(err *error, c io.Closer) {
	*err = errors.Join(*err, c.Close())
}
