package dma

import (
	"context"
	"errors"
	"testing"

	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
)

// TestInFlightSettledAfterRelease: a Transfer's Wait and Done report it
// finished only after it let go of the memory it held, so a buffer closed
// while the transfer read it is freed by the time a waiter hears the
// result. The transfer is stalled, its source closed (the release is
// deferred), and a reaper finishes it (Done adopted it) once the engines
// resume; between the reaper's recording of the result and its release,
// the hook asks: Wait, with a context already cancelled, must answer with
// the context's error (no final result yet), and Done must still be open.
// Afterwards both answer, and the source is gone. rdma's TestKernelCancel
// failed once in CI (the source still allocated after the connection's
// Close) when Wait returned in that window.
func TestInFlightSettledAfterRelease(t *testing.T) { forInflight(t, testInFlightSettledAfterRelease) }

func testInFlightSettledAfterRelease(t *testing.T, asic sim.ASIC) {
	x := newInflight(t, asic)
	x.stall(t)
	tr, err := startCopyVA(x.e, x.dst.VA(), x.src.VA(), inflightSize)
	if err != nil {
		t.Fatal(err)
	}
	x.closeSrc(t)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	type seen struct {
		wait      error
		doneShut  bool
		allocated bool
	}
	hooked := make(chan seen, 1)
	testHookReleasing = func(h *Transfer) {
		if h != tr {
			return
		}
		var s seen
		s.wait = tr.Wait(cancelled)
		select {
		case <-tr.Done():
			s.doneShut = true
		default:
		}
		s.allocated = x.m.Lookup(x.src.VA()).Kind == memory.DeviceMemory
		hooked <- s
	}
	t.Cleanup(func() { testHookReleasing = nil })
	done := tr.Done()
	x.resume(t)
	<-done
	if x.m.Lookup(x.src.VA()).Kind != memory.Unknown {
		t.Error("Done closed while the closed source buffer was still allocated")
	}
	if err := tr.Wait(cancelled); err != nil {
		t.Errorf("Wait after Done: %v, want nil", err)
	}
	select {
	case s := <-hooked:
		if !s.allocated {
			t.Error("the source was released before the reaper released it")
		}
		if !errors.Is(s.wait, context.Canceled) {
			t.Errorf("Wait while the memory was being released: %v, want context.Canceled (no result yet)", s.wait)
		}
		if s.doneShut {
			t.Error("Done was closed while the memory was being released")
		}
	default:
		t.Error("the release hook never ran for the transfer")
	}
	x.check(t)
}
