package warm

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// waitIdle waits until n of p's goroutines wait for work.
func waitIdle(p *Pool, n int) {
	for p.Idle() != n {
		runtime.Gosched()
	}
}

// TestEveryFunctionRuns: functions handed to the pool from many goroutines
// at once each run exactly once, before Stop returns.
func TestEveryFunctionRuns(t *testing.T) {
	p := New(4)
	var ran atomic.Int64
	var wg sync.WaitGroup
	const callers, each = 8, 500
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				p.Go(func() { ran.Add(1) })
			}
		}()
	}
	wg.Wait()
	p.Stop()
	if got := ran.Load(); got != callers*each {
		t.Errorf("%d functions ran by the time Stop returned, want %d", got, callers*each)
	}
	if n := p.Idle(); n != 0 {
		t.Errorf("%d goroutines still wait for work after Stop", n)
	}
}

// TestReused: a function handed to the pool while one of its goroutines
// waits runs on that goroutine; no goroutine is started for it. Before
// the pool, each call started one (a cold 2 KiB stack every time).
func TestReused(t *testing.T) {
	p := New(1)
	defer p.Stop()
	done := make(chan struct{})
	p.Go(func() { done <- struct{}{} })
	<-done
	waitIdle(p, 1)
	before := GoroutinesStarted()
	const calls = 200
	for range calls {
		p.Go(func() { done <- struct{}{} })
		<-done
		waitIdle(p, 1)
	}
	// Other tests' goroutines do not run meanwhile (no t.Parallel), but
	// the runtime may start one of its own.
	if n := GoroutinesStarted() - before; n > 5 {
		t.Errorf("%d goroutines started for %d calls while one waited for work, want none", n, calls)
	}
}

// TestIdleBounded: after a burst, at most maxIdle goroutines stay; the
// rest end.
func TestIdleBounded(t *testing.T) {
	const maxIdle, burst = 2, 16
	p := New(maxIdle)
	defer p.Stop()
	release := make(chan struct{})
	var started, finished sync.WaitGroup
	started.Add(burst)
	finished.Add(burst)
	for range burst {
		p.Go(func() {
			started.Done()
			<-release
			finished.Done()
		})
	}
	started.Wait() // all 16 run at once: 16 goroutines
	close(release)
	finished.Wait()
	waitIdle(p, maxIdle)
	// The next calls go to the waiting ones: none starts a goroutine.
	before := GoroutinesStarted()
	done := make(chan struct{})
	for range maxIdle {
		p.Go(func() { done <- struct{}{} })
	}
	for range maxIdle {
		<-done
	}
	if n := GoroutinesStarted() - before; n > 1 {
		t.Errorf("%d goroutines started for %d calls with %d waiting", n, maxIdle, maxIdle)
	}
	if n := int32(p.Idle()); n > maxIdle {
		t.Errorf("%d goroutines wait for work, at most %d may", n, maxIdle)
	}
}

// stopping reports whether Stop was called on p.
func stopping(p *Pool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopped
}

// TestStopWaits: Stop returns only after the functions running on the
// pool's goroutines returned, and a function handed to a stopped pool
// still runs.
func TestStopWaits(t *testing.T) {
	p := New(2)
	release := make(chan struct{})
	var finished atomic.Bool
	running := make(chan struct{})
	p.Go(func() {
		close(running)
		<-release
		finished.Store(true)
	})
	<-running
	stopped := make(chan bool)
	go func() {
		p.Stop()
		stopped <- finished.Load()
	}()
	for !stopping(p) { // Stop has begun
		runtime.Gosched()
	}
	close(release)
	if !<-stopped {
		t.Error("Stop returned before the function running on the pool did")
	}
	p.Stop() // idempotent
	ran := make(chan struct{})
	p.Go(func() { close(ran) })
	<-ran
}
