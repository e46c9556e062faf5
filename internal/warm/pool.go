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
	"sync/atomic"
)

// Pool runs functions on goroutines it keeps for reuse: up to MaxIdle wait
// for the next function after theirs returns. It is safe for concurrent
// use. Make one with New; a nil *Pool runs each function on a goroutine
// of its own.
type Pool struct {
	work    chan func()   // unbuffered: a send succeeds only if a worker waits
	stop    chan struct{} // closed by Stop
	maxIdle int32
	idle    atomic.Int32
	// mu orders a new goroutine's running.Add before Stop's Wait.
	mu      sync.Mutex
	stopped bool
	running sync.WaitGroup // the pool's goroutines
}

// New returns a Pool that keeps up to maxIdle goroutines waiting (at
// least one).
func New(maxIdle int) *Pool {
	return &Pool{work: make(chan func()), stop: make(chan struct{}), maxIdle: int32(max(maxIdle, 1))}
}

// Go runs f on a goroutine of the pool that waits for work, or on a new
// one. It never blocks. After Stop, f runs on a goroutine of its own.
func (p *Pool) Go(f func()) {
	if p == nil {
		go f()
		return
	}
	select {
	case p.work <- f:
		return
	default:
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		go f()
		return
	}
	p.running.Add(1)
	go p.worker(f)
}

// worker runs f, then whatever it is handed while it waits, until the
// pool has enough waiting or stops.
func (p *Pool) worker(f func()) {
	defer p.running.Done()
	for {
		f()
		if p.idle.Add(1) > p.maxIdle {
			p.idle.Add(-1)
			return
		}
		select {
		case f = <-p.work:
			p.idle.Add(-1)
		case <-p.stop:
			p.idle.Add(-1)
			return
		}
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
		close(p.stop)
	}
	p.mu.Unlock()
	p.running.Wait()
}

// Idle returns how many of the pool's goroutines wait for work now.
func (p *Pool) Idle() int {
	if p == nil {
		return 0
	}
	return int(p.idle.Load())
}

// GoroutinesStarted returns how many goroutines the process has started
// so far (runtime/metrics), for the tests that check what a Pool saves.
func GoroutinesStarted() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
