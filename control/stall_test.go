package control_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/control"
	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/internal/simtest"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
)

// TestStalledEDMAHoldsCopies: a device-to-device copy (EDMA queues) does
// not run while every EDMA engine is stalled, and completes, with the
// right bytes, once they are resumed.
func TestStalledEDMAHoldsCopies(t *testing.T) {
	d := simtest.Device(t, sim.Gaudi2)
	m := simtest.Memory(t, d)
	eng := simtest.DMA(t, m)
	const n = 1 << 20
	host, err := m.AllocHost(n, memory.HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	for i := range host.Bytes() {
		host.Bytes()[i] = byte(i*13 + 5)
	}
	src, err := m.Alloc(n, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := m.Alloc(n, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := eng.CopyToDevice(ctx, src.Range(0, n), host.Range(0, n)); err != nil {
		t.Fatal(err)
	}

	var edmas []device.Engine
	for _, e := range d.Engines() {
		if strings.Contains(e.String(), "_EDMA_") {
			edmas = append(edmas, e)
		}
	}
	if len(edmas) != 8 {
		t.Fatalf("EDMA engines %v, want 8", edmas)
	}
	if err := control.StallEngines(d, edmas...); err != nil {
		t.Fatal(err)
	}
	b := eng.NewBatch(dma.BatchOptions{})
	if err := b.CopyOnDevice(dst.Range(0, n), src.Range(0, n)); err != nil {
		t.Fatal(err)
	}
	tr, err := b.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-tr.Done():
		t.Fatalf("a copy on stalled EDMA engines completed: %v", tr.Err())
	case <-time.After(100 * time.Millisecond):
	}
	if err := control.ResumeEngines(d, edmas...); err != nil {
		t.Fatal(err)
	}
	if err := tr.Wait(ctx); err != nil {
		t.Fatalf("copy after resume: %v", err)
	}
	for i := range host.Bytes() {
		host.Bytes()[i] = 0
	}
	if err := eng.CopyToHost(ctx, host.Range(0, n), dst.Range(0, n)); err != nil {
		t.Fatal(err)
	}
	for i, b := range host.Bytes() {
		if want := byte(i*13 + 5); b != want {
			t.Fatalf("byte %d after the resumed copy: %#x, want %#x", i, b, want)
		}
	}
	// Nothing the stalled copy used was unmapped or rewritten under it.
	if v := simdevice.Sim(d).Violations(); len(v) != 0 {
		t.Errorf("the strict simulator recorded %v", v)
	}
}
