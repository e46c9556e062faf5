package dma

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
)

// TestGaudi3AbortedAfterRestart: two copies stalled on one channel, a
// reset, then a later copy that restarts the channel: both stalled copies
// report ErrAborted (their bytes never moved), whatever the channel does
// after.
func TestGaudi3AbortedAfterRestart(t *testing.T) {
	r := newRig(t, sim.Gaudi3, Options{Streams: 1})
	const n = 64 << 10
	src, _ := r.m.AllocHost(n, memory.HostOptions{})
	defer src.Close()
	fill(src.Bytes(), 7)
	dsts := make([]*memory.HostBuffer, 3)
	for i := range dsts {
		dsts[i], _ = r.m.AllocHost(n, memory.HostOptions{})
		defer dsts[i].Close()
	}
	c := r.e.pq.Channels()[0]
	if err := c.Stall(0); err != nil {
		t.Fatal(err)
	}
	a, err := startCopyVA(r.e, dsts[0].VA(), src.VA(), n)
	if err != nil {
		t.Fatal(err)
	}
	b, err := startCopyVA(r.e, dsts[1].VA(), src.VA(), n)
	if err != nil {
		t.Fatal(err)
	}
	r.s.Device(0).Reset()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Wait(ctx); !errors.Is(err, ErrAborted) {
		t.Errorf("the first stalled copy: %v, want ErrAborted", err)
	}
	later, err := startCopyVA(r.e, dsts[2].VA(), src.VA(), n)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(ctx); !errors.Is(err, ErrAborted) {
		t.Errorf("the second stalled copy, waited for after a later copy restarted the channel: %v, want ErrAborted (destination intact: %v)", err, bytes.Equal(dsts[1].Bytes(), src.Bytes()))
	}
	if err := later.Wait(ctx); err != nil {
		t.Errorf("the copy after the reset: %v", err)
	} else if !bytes.Equal(dsts[2].Bytes(), src.Bytes()) {
		t.Error("the copy after the reset reported done with other bytes")
	}
}

// TestGaudi3CloseRacesWait: Close of an Engine while another goroutine
// waits for a striped transfer (a ticket per channel) must not take the
// completion counters away under the wait: many rounds, each racing Close
// with Wait; a load from the freed counter kills the process.
func TestGaudi3CloseRacesWait(t *testing.T) {
	rounds := 40
	if testing.Short() {
		rounds = 5
	}
	for round := 0; round < rounds; round++ {
		r := newRig(t, sim.Gaudi3, Options{Streams: 3, StripeSize: 64 << 10})
		const n = 3 << 20
		src, _ := r.m.AllocHost(n, memory.HostOptions{})
		dst, _ := r.m.AllocHost(n, memory.HostOptions{})
		tr, err := startCopyVA(r.e, dst.VA(), src.VA(), n)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.tickets) < 2 {
			t.Fatalf("a striped copy of %d bytes took %d job(s)", n, len(tr.tickets))
		}
		waited := make(chan error, 1)
		go func() { waited <- tr.Wait(context.Background()) }()
		if err := r.e.Close(); err != nil {
			t.Fatalf("round %d: Close: %v", round, err)
		}
		if err := <-waited; err != nil {
			t.Fatalf("round %d: Wait racing Close: %v", round, err)
		}
		src.Close()
		dst.Close()
	}
}
