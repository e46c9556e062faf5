package ib

import (
	"errors"
	"sync"
	"testing"
)

// TestConcurrentUse registers and deregisters from many goroutines while
// another closes the Context: every call either works or reports
// ErrClosed, nothing is left live in the kernel, and the race detector
// has something to look at.
func TestConcurrentUse(t *testing.T) {
	k := newFakeKernel(DriverRXE)
	c, err := fakeContext(k, DriverRXE)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				mr, err := pd.RegMR(hostAddr+uintptr(g<<20), 4096, 0, AccessLocalWrite)
				if err != nil {
					if !errors.Is(err, ErrClosed) {
						errs <- err
					}
					return
				}
				if i%2 == 0 {
					if err := mr.Close(); err != nil && !errors.Is(err, ErrClosed) {
						errs <- err
						return
					}
				}
				if _, err := c.QueryPort(1); err != nil && !errors.Is(err, ErrClosed) {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := c.Close(); err != nil {
			errs <- err
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent call: %v", err)
	}
	if p, m := k.live(); p != 0 || m != 0 {
		t.Errorf("after Close: %d PDs, %d MRs live", p, m)
	}
}

// BenchmarkRegMRFake measures the library's own cost of REG_MR plus
// DEREG_MR against the fake kernel: encoding, bookkeeping, allocations.
func BenchmarkRegMRFake(b *testing.B) {
	k := newFakeKernel(DriverRXE)
	c, err := fakeContext(k, DriverRXE)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	pd, err := c.AllocPD()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		mr, err := pd.RegMR(hostAddr, 1<<20, hostAddr, AccessLocalWrite)
		if err != nil {
			b.Fatal(err)
		}
		if err := mr.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
