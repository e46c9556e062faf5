// Package warm runs functions on goroutines it keeps between calls.
//
// A new goroutine starts on a 2 KiB stack, and a function whose calls go
// deep (a DMA wait into the simulator, a transfer's body) grows it several
// times, each growth a copy of the whole stack with a walk of its frames.
// Measured on a transfer's reapers and bodies (rdma, one-CPU guest under
// TCG), that growth was 18% of the process's time for a 4 KiB transfer.
// A goroutine kept from one call to the next keeps the stack it grew
// (until a garbage collection finds it mostly unused and halves it).
package warm

import (
	"runtime/metrics"
	"sync"
)

// Pool runs functions on goroutines it keeps for reuse: up to the
// maxIdle given to New wait for the next function after theirs returns.
// It is safe for concurrent use. Make one with New; a nil *Pool runs each
// function on a goroutine of its own.
type Pool struct {
	maxIdle int
	mu      sync.Mutex
	// idle holds the channels of the goroutines waiting for work, each
	// with room for one function: Go hands a function to one without
	// waiting for it to be scheduled.
	idle    []chan func()
	stopped bool
	running sync.WaitGroup // the pool's goroutines
}

// New returns a Pool that keeps up to maxIdle goroutines waiting (at
// least one).
func New(maxIdle int) *Pool {
	return &Pool{maxIdle: max(maxIdle, 1)}
}

// Go runs f on a goroutine of the pool that waits for work, or on a new
// one. It never blocks. After Stop, f runs on a goroutine of its own.
func (p *Pool) Go(f func()) {
	if p == nil {
		go f()
		return
	}
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		go f()
		return
	}
	if n := len(p.idle); n > 0 {
		ch := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		ch <- f // room for one, and nobody else has ch now
		return
	}
	p.running.Add(1)
	p.mu.Unlock()
	go p.worker(f)
}

// worker runs f, then whatever it is handed while it waits, until the
// pool has enough waiting or stops.
func (p *Pool) worker(f func()) {
	defer p.running.Done()
	ch := make(chan func(), 1)
	for f != nil {
		f()
		p.mu.Lock()
		if p.stopped || len(p.idle) >= p.maxIdle {
			p.mu.Unlock()
			return
		}
		p.idle = append(p.idle, ch)
		p.mu.Unlock()
		f = <-ch // nil once Stop closed ch
	}
}

// Stop lets the pool's waiting goroutines go, and returns once the pool
// has none left: it waits for the functions still running on them. Later
// calls to Go run their function on a goroutine of its own. Stop is
// idempotent.
func (p *Pool) Stop() {
	if p == nil {
		return
	}
	p.mu.Lock()
	if !p.stopped {
		p.stopped = true
		for _, ch := range p.idle {
			close(ch)
		}
		p.idle = nil
	}
	p.mu.Unlock()
	p.running.Wait()
}

// Idle returns how many of the pool's goroutines wait for work now.
func (p *Pool) Idle() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// GoroutinesStarted returns how many goroutines the process has started
// so far (runtime/metrics), for the tests that check what a Pool saves.
func GoroutinesStarted() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
