package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/gaudi-go/gaudi/internal/cli"
)

// progress shows on a terminal which point runs, with sizes in units, and
// an estimate of the time left. Every point weighs what it will move
// (bytes per sample times warm-up and timed copies), or, with -duration,
// the same as every other; the estimate is the time so far scaled by the
// weight left. It is safe for concurrent use (-parallel); a nil or
// disabled progress does nothing.
type progress struct {
	w       io.Writer
	enabled bool
	now     func() time.Time
	cfg     *config

	mu        sync.Mutex
	begin     time.Time
	total     float64 // weight of the whole run
	done      float64 // weight of the points finished
	points    int     // points in the whole run
	finished  int
	running   map[string]*point // by device
	label     string            // of the point started last
	lastPrint time.Time
}

// point is a running point.
type point struct {
	weight  float64
	frac    float64 // how much of it is done
	started time.Time
}

func newProgress(w io.Writer, cfg *config, devices int) *progress {
	p := &progress{w: w, enabled: cfg.progress, now: time.Now, cfg: cfg, running: map[string]*point{}}
	p.begin = p.now()
	for _, dir := range cfg.dirs {
		for _, size := range cfg.sizes() {
			p.total += p.weight(dir, size) * float64(devices)
			p.points += devices
		}
	}
	return p
}

// weight is what a point counts for in the estimate.
func (p *progress) weight(dir string, size uint64) float64 {
	if p.cfg.duration > 0 {
		return 1
	}
	return float64(size) * float64(copies(dir)) * float64(p.cfg.iters+p.cfg.warmup)
}

// start begins a point.
func (p *progress) start(dev, dir string, size uint64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running[dev] = &point{weight: p.weight(dir, size), started: p.now()}
	p.label = fmt.Sprintf("%s %s %s", dev, dir, cli.FormatSize(size))
	p.print(true)
}

// sample records that n timed samples of dev's running point are done.
func (p *progress) sample(dev string, n int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pt := p.running[dev]
	if pt == nil {
		return
	}
	if p.cfg.duration > 0 {
		pt.frac = min(1, float64(p.now().Sub(pt.started))/float64(p.cfg.duration))
	} else {
		pt.frac = float64(n+p.cfg.warmup) / float64(p.cfg.iters+p.cfg.warmup)
	}
	p.print(false)
}

// finish ends dev's running point.
func (p *progress) finish(dev string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if pt := p.running[dev]; pt != nil {
		p.done += pt.weight
		delete(p.running, dev)
	}
	p.finished++
}

// line is the progress line: "[ 3/16] sim:accel0 h2d 64 MiB  ETA 4s".
func (p *progress) line() string {
	s := fmt.Sprintf("[%*d/%d] %s", len(fmt.Sprint(p.points)), min(p.finished+1, p.points), p.points, p.label)
	done := p.done
	for _, pt := range p.running {
		done += pt.weight * pt.frac
	}
	if el := p.now().Sub(p.begin); done > 0 && el > 0 {
		left := time.Duration(float64(el) * (p.total - done) / done)
		s += "  ETA " + left.Round(time.Second).String()
	} else {
		s += "  ETA ?"
	}
	return s
}

// print shows the line, at most ten times a second unless forced.
func (p *progress) print(force bool) {
	if !p.enabled {
		return
	}
	now := p.now()
	if !force && now.Sub(p.lastPrint) < 100*time.Millisecond {
		return
	}
	p.lastPrint = now
	fmt.Fprintf(p.w, "\r\033[K%s", p.line())
}

// clear removes the line.
func (p *progress) clear() {
	if p == nil || !p.enabled {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.w, "\r\033[K")
}
