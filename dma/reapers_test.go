package dma

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/internal/warm"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
)

// TestReapersReused: transfers finished through Done, one after another,
// are reaped on the goroutine the first one's reaper ran on, which keeps
// the stack its wait into the driver grew (internal/warm). Before, each
// Done started a reaper goroutine on a fresh 2 KiB stack; with 20
// transfers the test counted 20 started goroutines.
func TestReapersReused(t *testing.T) {
	forASICs(t, func(t *testing.T, asic sim.ASIC) {
		r := newRig(t, asic, Options{})
		h, err := r.m.AllocHost(64<<10, memory.HostOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		buf, err := r.m.Alloc(64<<10, memory.AllocOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer buf.Close()
		copyOnce := func() {
			b := r.e.NewBatch(BatchOptions{})
			if err := b.CopyToDevice(buf.All(), h.Range(0, 64<<10)); err != nil {
				t.Fatal(err)
			}
			tr, err := b.Start(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-tr.Done():
			case <-time.After(30 * time.Second):
				t.Fatal("transfer not done in 30 s")
			}
			if err := tr.Err(); err != nil {
				t.Fatal(err)
			}
			// The reaper gets back to waiting right after it finished the
			// transfer: wait for that, not for time.
			for r.e.reapers.Idle() == 0 {
				runtime.Gosched()
			}
		}
		// The first transfers start the simulator's queue goroutines (one
		// per queue, kept) and the reaper.
		for range 16 {
			copyOnce()
		}
		before := warm.GoroutinesStarted()
		const transfers = 20
		for range transfers {
			copyOnce()
		}
		// The runtime may start one of its own.
		if n := warm.GoroutinesStarted() - before; n > 3 {
			t.Errorf("%d goroutines started for %d transfers finished through Done, want none for their reapers", n, transfers)
		}
	})
}
