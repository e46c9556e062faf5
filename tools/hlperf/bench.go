package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/memory"
)

// endpoint is one side of a copy: a host buffer or a device buffer.
type endpoint struct {
	host *memory.HostBuffer
	dev  *memory.Buffer
}

// copyOp is one copy of a sample.
type copyOp struct{ dst, src endpoint }

// buffers are the memory of one device's run, each of -max bytes.
type buffers struct {
	hosts []*memory.HostBuffer
	devs  []*memory.Buffer
}

// ops returns the copies one sample of dir makes: h2d copies host buffer
// 0 to device buffer 0, d2h back, d2d device buffer 0 to 1, and bidir
// host 0 to device 0 and device 1 to host 1 at once.
func (b *buffers) ops(dir string) []copyOp {
	h := func(i int) endpoint { return endpoint{host: b.hosts[i]} }
	d := func(i int) endpoint { return endpoint{dev: b.devs[i]} }
	switch dir {
	case "h2d":
		return []copyOp{{d(0), h(0)}}
	case "d2h":
		return []copyOp{{h(0), d(0)}}
	case "d2d":
		return []copyOp{{d(1), d(0)}}
	}
	return []copyOp{{d(0), h(0)}, {h(1), d(1)}}
}

// measureDevice runs every point of the configuration on d and returns
// the results so far: all of them, or up to the point Ctrl-C interrupted
// (that one included when it has samples, marked partial). The device's
// report gets its statistics through the results; an error means the
// device could not be measured (whole or in part).
func measureDevice(ctx context.Context, cfg *config, d *device.Device, dr *deviceReport, prog *progress) (_ []result, err error) {
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		return nil, err
	}
	defer closeInto(&err, m)
	e, err := dma.New(m, dma.Options{Streams: cfg.streams})
	if errors.Is(err, dma.ErrBadOptions) {
		return nil, fmt.Errorf("-streams %d: %w", cfg.streams, err)
	}
	if err != nil {
		return nil, err
	}
	defer closeInto(&err, e)
	bufs, err := allocate(cfg, m)
	if err != nil {
		return nil, err
	}
	// Write every buffer once: the first touch of host pages, and of the
	// simulator's device memory, stays out of the timings, and device
	// sources hold data rather than never-written memory.
	for i, h := range bufs.hosts {
		fillPattern(h.Bytes(), uint64(1000+i), 0)
	}
	for i, b := range bufs.devs {
		if err := fillDevice(ctx, b, uint64(cfg.max), uint64(2000+i)); err != nil {
			return nil, fmt.Errorf("fill device buffer: %w", err)
		}
	}
	var out []result
	sizes := cfg.sizes()
	for di, dir := range cfg.dirs {
		for si, size := range sizes {
			if ctx.Err() != nil {
				return out, nil
			}
			point := uint64(di*len(sizes) + si)
			ops := bufs.ops(dir)
			if cfg.verify {
				for k, op := range ops {
					if err := fill(ctx, op.src, size, seedOf(point, k)); err != nil {
						return out, fmt.Errorf("%s %s: fill the source: %w", dir, cli.FormatSize(size), err)
					}
				}
			}
			prog.start(dr.Path, dir, size)
			samples, err := measure(ctx, cfg, e, ops, size, func(n int) { prog.sample(dr.Path, n) })
			if err != nil {
				// The samples before the error are the point's, cut
				// short: the table shows them, marked, above the error.
				if len(samples) > 0 {
					r := newResult(dr, dir, size, summarize(samples, size*uint64(len(ops))))
					r.Partial = true
					out = append(out, r)
				}
				return out, fmt.Errorf("%s %s: %w", dir, cli.FormatSize(size), err)
			}
			prog.finish(dr.Path)
			if len(samples) == 0 {
				return out, nil // interrupted during the warm-up
			}
			r := newResult(dr, dir, size, summarize(samples, size*uint64(len(ops))))
			r.Partial = ctx.Err() != nil
			if cfg.verify {
				ok := true
				for k, op := range ops {
					if err := check(context.WithoutCancel(ctx), op.dst, size, seedOf(point, k)); err != nil {
						ok = false
						r.VerificationError = err.Error()
						break
					}
				}
				r.Verified = &ok
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// seedOf is the pattern of copy k of point p.
func seedOf(p uint64, k int) uint64 { return p<<8 | uint64(k) + 1 }

// allocate takes the buffers the chosen directions need (config.buffers),
// host buffers on huge pages when the host has them.
func allocate(cfg *config, m *memory.Manager) (*buffers, error) {
	hosts, devs := cfg.buffers()
	b := &buffers{}
	for range hosts {
		h, err := m.AllocHost(uint64(cfg.max), memory.HostOptions{HugePages: true})
		if err != nil {
			return nil, fmt.Errorf("host buffer of %s: %w", cli.FormatSize(uint64(cfg.max)), err)
		}
		b.hosts = append(b.hosts, h)
	}
	for range devs {
		d, err := m.Alloc(uint64(cfg.max), memory.AllocOptions{})
		if err != nil {
			return nil, fmt.Errorf("device buffer of %s: %w", cli.FormatSize(uint64(cfg.max)), err)
		}
		b.devs = append(b.devs, d)
	}
	return b, nil
}

// measure runs the copies of one point, together as one prepared batch:
// cfg.warmup untimed runs, then cfg.iters timed ones or as many as fit in
// cfg.duration. It returns the latency of each timed run. When ctx ends
// (Ctrl-C) it stops between runs and returns the samples so far: a run
// already submitted finishes first, so no copy is left in flight.
func measure(ctx context.Context, cfg *config, e *dma.Engine, ops []copyOp, size uint64, tick func(n int)) (_ []time.Duration, err error) {
	runCtx := context.WithoutCancel(ctx)
	b := e.NewBatch(dma.BatchOptions{})
	for _, op := range ops {
		switch {
		case op.src.host != nil:
			err = b.CopyToDevice(op.dst.dev.Range(0, size), op.src.host.Range(0, size))
		case op.dst.host != nil:
			err = b.CopyToHost(op.dst.host.Range(0, size), op.src.dev.Range(0, size))
		default:
			err = b.CopyOnDevice(op.dst.dev.Range(0, size), op.src.dev.Range(0, size))
		}
		if err != nil {
			return nil, err
		}
	}
	p, err := b.Prepare(runCtx)
	if err != nil {
		return nil, err
	}
	defer closeInto(&err, p)
	for range cfg.warmup {
		if ctx.Err() != nil {
			return nil, nil
		}
		if err := p.Run(runCtx); err != nil {
			return nil, err
		}
	}
	var samples []time.Duration
	if cfg.duration == 0 {
		samples = make([]time.Duration, 0, cfg.iters)
	}
	start := time.Now()
	for {
		n := len(samples)
		if cfg.duration > 0 && n > 0 && time.Since(start) >= cfg.duration || cfg.duration == 0 && n >= cfg.iters || ctx.Err() != nil {
			return samples, nil
		}
		t := time.Now()
		if err := p.Run(runCtx); err != nil {
			return samples, err
		}
		samples = append(samples, time.Since(t))
		tick(n + 1)
	}
}

// closeInto closes c, adding its error to *err: a release that fails is
// reported with the run.
func closeInto(err *error, c io.Closer) {
	*err = errors.Join(*err, c.Close())
}
