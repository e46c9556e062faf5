package memory_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/gaudi-go/gaudi/internal/simtest"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
)

// TestDeviceCloseClosesDependents: device.Device.Close closes the Engine
// and the Manager still open on it (Engine first), so their later Close
// returns nil, and in the other order every Close returns nil too; each
// Close is idempotent (issue 22 item 6: Device.Close returned nil and the
// Manager's and Engine's Close then failed with "file already closed").
func TestDeviceCloseClosesDependents(t *testing.T) {
	for _, asic := range []sim.ASIC{sim.Gaudi, sim.Gaudi2, sim.Gaudi3} {
		for _, order := range []string{"device first", "dependents first"} {
			t.Run(asic.String()+"/"+order, func(t *testing.T) {
				d := simtest.Device(t, asic)
				m := simtest.Memory(t, d)
				e := simtest.DMA(t, m)
				b, err := m.Alloc(1<<20, memory.AllocOptions{})
				if err != nil {
					t.Fatal(err)
				}
				h, err := m.AllocHost(1<<20, memory.HostOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if err := e.CopyToDevice(context.Background(), b.All(), h.All()); err != nil {
					t.Fatal(err)
				}
				closers := []struct {
					name  string
					close func() error
				}{{"engine", e.Close}, {"manager", m.Close}, {"device", d.Close}}
				if order == "device first" {
					closers[0], closers[2] = closers[2], closers[0]
				}
				for round := 0; round < 2; round++ {
					for _, c := range closers {
						if err := c.close(); err != nil {
							t.Errorf("round %d: %s Close: %v", round, c.name, err)
						}
					}
				}
				if err := b.Close(); err != nil {
					t.Errorf("buffer Close after its manager's: %v", err)
				}
				if _, err := m.Alloc(4096, memory.AllocOptions{}); !errors.Is(err, memory.ErrClosed) {
					t.Errorf("Alloc after Close: %v, want ErrClosed", err)
				}
				if _, err := memory.New(d, memory.Options{}); !errors.Is(err, os.ErrClosed) {
					t.Errorf("memory.New on a closed device: %v, want os.ErrClosed", err)
				}
			})
		}
	}
}

// TestDeviceCloseReportsDependents: an error of a dependent's Close (a
// buffer with an open export cannot be freed) comes back from the
// device's Close, naming the dependent.
func TestDeviceCloseReportsDependents(t *testing.T) {
	d := simtest.Device(t, sim.Gaudi2)
	m := simtest.Memory(t, d)
	b, err := m.Alloc(1<<20, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	x, err := b.Export(0, 1<<20, memory.ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = d.Close()
	if !errors.Is(err, memory.ErrInUse) || !strings.Contains(err.Error(), "*memory.Manager") {
		t.Errorf("device Close with an exported buffer: %v, want ErrInUse naming the manager", err)
	}
	if err2 := d.Close(); err2 != err {
		t.Errorf("second device Close: %v, want the first's %v", err2, err)
	}
	// The buffer the manager had to leave can no longer be freed: the
	// device is closed, and the kernel frees it with the context.
	if err := x.Close(); err != nil {
		t.Error(err)
	}
	if err := b.Close(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("buffer Close after the device's: %v, want os.ErrClosed", err)
	}
}

// TestDeviceCloseRacesDependents: the device's Close and its dependents'
// own, all at once, each return nil once (-race).
func TestDeviceCloseRacesDependents(t *testing.T) {
	for round := 0; round < 20; round++ {
		d := simtest.Device(t, sim.Gaudi2)
		m := simtest.Memory(t, d)
		e := simtest.DMA(t, m)
		if _, err := m.Alloc(1<<20, memory.AllocOptions{}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for _, c := range []func() error{d.Close, m.Close, e.Close, d.Close} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := c(); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	}
}
