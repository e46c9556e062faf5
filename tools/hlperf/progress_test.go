package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestProgress(t *testing.T) {
	var out bytes.Buffer
	cfg := &config{dirs: []string{"h2d", "d2h"}, min: 1 << 20, max: 4 << 20, iters: 8, warmup: 2, progress: true}
	p := newProgress(&out, cfg, 1)
	clock := p.begin
	p.now = func() time.Time { return clock }
	// Four points: 1 MiB and 4 MiB, each way; weights 1:4:1:4.
	p.start("sim:accel0", "h2d", 1<<20)
	if got := out.String(); !strings.Contains(got, "[1/4] sim:accel0 h2d 1 MiB  ETA ?") {
		t.Errorf("first line %q", got)
	}
	clock = clock.Add(time.Second)
	p.sample("sim:accel0", 8)
	p.finish("sim:accel0")
	p.start("sim:accel0", "h2d", 4<<20)
	// One point of weight 1 took 1s; 9 remain.
	if got := out.String(); !strings.HasSuffix(got, "\r\033[K[2/4] sim:accel0 h2d 4 MiB  ETA 9s") {
		t.Errorf("second line %q", got)
	}
	clock = clock.Add(2 * time.Second)
	p.sample("sim:accel0", 3) // half of 2+8 done: 1 + 2 of 10 in 3s
	if got := out.String(); !strings.HasSuffix(got, "[2/4] sim:accel0 h2d 4 MiB  ETA 7s") {
		t.Errorf("mid-point line %q", got)
	}
	p.clear()
	if !strings.HasSuffix(out.String(), "\r\033[K") {
		t.Errorf("clear: %q", out.String())
	}
	// Off the terminal nothing is written.
	out.Reset()
	cfg.progress = false
	q := newProgress(&out, cfg, 1)
	q.start("sim:accel0", "h2d", 1<<20)
	q.sample("sim:accel0", 1)
	q.finish("sim:accel0")
	q.clear()
	if out.Len() != 0 {
		t.Errorf("progress off a terminal: %q", out.String())
	}
}
