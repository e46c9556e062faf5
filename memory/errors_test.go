package memory

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// mmapTest maps n bytes of anonymous memory for MapHost, unmapped at the
// end of the test.
func mmapTest(t *testing.T, n int) []byte {
	t.Helper()
	mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	return mem
}

// TestClosedObjects: a call on anything closed, the Manager, a buffer, a
// mapping or the device under them, fails with an error matching
// os.ErrClosed (and ErrClosed, which is os.ErrClosed).
func TestClosedObjects(t *testing.T) {
	page := uint64(os.Getpagesize())
	tests := []struct {
		name string
		call func(t *testing.T, d *device.Device, m *Manager) error
	}{
		{"Manager.Alloc", func(t *testing.T, d *device.Device, m *Manager) error {
			m.Close()
			_, err := m.Alloc(1, AllocOptions{})
			return err
		}},
		{"Manager.AllocHost", func(t *testing.T, d *device.Device, m *Manager) error {
			m.Close()
			_, err := m.AllocHost(4096, HostOptions{})
			return err
		}},
		{"Manager.MapHost", func(t *testing.T, d *device.Device, m *Manager) error {
			m.Close()
			_, err := m.MapHost(mmapTest(t, 4096))
			return err
		}},
		{"Buffer.Hold", func(t *testing.T, d *device.Device, m *Manager) error {
			b, err := m.Alloc(1, AllocOptions{})
			if err != nil {
				t.Fatal(err)
			}
			b.Close()
			return b.addHold()
		}},
		{"Buffer.Export", func(t *testing.T, d *device.Device, m *Manager) error {
			b, err := m.Alloc(1, AllocOptions{})
			if err != nil {
				t.Fatal(err)
			}
			b.Close()
			_, err = b.Export(0, page, ExportOptions{})
			return err
		}},
		{"HostBuffer.Hold", func(t *testing.T, d *device.Device, m *Manager) error {
			h, err := m.AllocHost(4096, HostOptions{})
			if err != nil {
				t.Fatal(err)
			}
			h.Close()
			return h.addHold()
		}},
		{"device closed", func(t *testing.T, d *device.Device, m *Manager) error {
			d.Close()
			_, err := m.Alloc(1, AllocOptions{})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, m := openSim(t, sim.Gaudi2)
			err := tt.call(t, d, m)
			if !errors.Is(err, os.ErrClosed) || !errors.Is(err, ErrClosed) {
				t.Errorf("%v, want an error matching os.ErrClosed", err)
			}
		})
	}
}

// unmapFault makes the next MEMORY UNMAP of d fail with EIO.
func unmapFault(d *device.Device) {
	simdevice.Sim(d).InjectFault(sim.Fault{Ioctl: "MEMORY", MatchOp: true, Op: hl.HL_MEM_OP_UNMAP, Errno: unix.EIO})
}

// TestReleaseErrors: an UNMAP that fails while memory is released is
// returned by the call that released it, never dropped: Close, the Release
// that finishes a deferred Close, InvalidateHost, HostRef.Release, or the
// Manager's Close for what nobody else could return.
func TestReleaseErrors(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, d *device.Device, m *Manager) error
	}{
		{"Buffer.Close", func(t *testing.T, d *device.Device, m *Manager) error {
			b, err := m.Alloc(1, AllocOptions{})
			if err != nil {
				t.Fatal(err)
			}
			unmapFault(d)
			return b.Close()
		}},
		{"Buffer.Release", func(t *testing.T, d *device.Device, m *Manager) error {
			b, err := m.Alloc(1, AllocOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := b.addHold(); err != nil {
				t.Fatal(err)
			}
			if err := b.Close(); err != nil {
				t.Fatalf("deferred Close: %v", err)
			}
			unmapFault(d)
			return b.dropHold()
		}},
		{"HostBuffer.Close", func(t *testing.T, d *device.Device, m *Manager) error {
			h, err := m.AllocHost(4096, HostOptions{})
			if err != nil {
				t.Fatal(err)
			}
			unmapFault(d)
			return h.Close()
		}},
		{"HostBuffer.Release", func(t *testing.T, d *device.Device, m *Manager) error {
			h, err := m.AllocHost(4096, HostOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := h.addHold(); err != nil {
				t.Fatal(err)
			}
			if err := h.Close(); err != nil {
				t.Fatalf("deferred Close: %v", err)
			}
			unmapFault(d)
			return h.dropHold()
		}},
		{"Manager.Close", func(t *testing.T, d *device.Device, m *Manager) error {
			if _, err := m.Alloc(1, AllocOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := m.AllocHost(4096, HostOptions{}); err != nil {
				t.Fatal(err)
			}
			simdevice.Sim(d).InjectFault(sim.Fault{Ioctl: "MEMORY", MatchOp: true, Op: hl.HL_MEM_OP_UNMAP, Nth: 2, Errno: unix.EIO})
			return m.Close()
		}},
		{"InvalidateHost", func(t *testing.T, d *device.Device, m *Manager) error {
			mem := mmapTest(t, 4096)
			r, err := m.MapHostCached(mem)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Release(); err != nil {
				t.Fatal(err)
			}
			unmapFault(d)
			return m.InvalidateHost(mem)
		}},
		{"HostRef.Release", func(t *testing.T, d *device.Device, m *Manager) error {
			mem := mmapTest(t, 4096)
			r, err := m.MapHostCached(mem)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.InvalidateHost(mem); err != nil {
				t.Fatal(err)
			}
			unmapFault(d)
			return r.Release()
		}},
		{"cache eviction", func(t *testing.T, d *device.Device, m *Manager) error {
			m.cache.maxEntries = 1
			r, err := m.MapHostCached(mmapTest(t, 4096))
			if err != nil {
				t.Fatal(err)
			}
			r.Release()
			unmapFault(d)
			// Evicts the first mapping; the error is not this call's.
			r, err = m.MapHostCached(mmapTest(t, 4096))
			if err != nil {
				t.Fatalf("MapHostCached: %v", err)
			}
			r.Release()
			if st := m.CacheStats(); st.Evictions != 1 {
				t.Fatalf("%d evictions, want 1", st.Evictions)
			}
			return m.Close()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, m := openSim(t, sim.Gaudi2)
			err := tt.run(t, d, m)
			if !errors.Is(err, unix.EIO) {
				t.Errorf("%v, want the failed UNMAP's EIO", err)
			}
			var e *ioctl.Error
			if !errors.As(err, &e) || e.Op != "MEMORY" || e.Sub != "UNMAP" {
				t.Errorf("%v, want an ioctl MEMORY UNMAP error", err)
			}
		})
	}
}

// TestAllocCleanupErrors: when MAP fails after ALLOC, a FREE that fails
// too is returned with the MAP error.
func TestAllocCleanupErrors(t *testing.T) {
	d, m := openSim(t, sim.Gaudi2)
	simdevice.Sim(d).InjectFault(sim.Fault{Ioctl: "MEMORY", MatchOp: true, Op: hl.HL_MEM_OP_MAP, Errno: unix.ENOMEM})
	simdevice.Sim(d).InjectFault(sim.Fault{Ioctl: "MEMORY", MatchOp: true, Op: hl.HL_MEM_OP_FREE, Errno: unix.EIO})
	_, err := m.Alloc(1, AllocOptions{})
	if !errors.Is(err, unix.ENOMEM) || !errors.Is(err, unix.EIO) {
		t.Errorf("Alloc: %v, want the MAP's ENOMEM and the FREE's EIO", err)
	}
}

// TestReleaseRetriedWhileNotOperational: an UNMAP the driver refuses with
// EBUSY (a reset in progress) is asked again until the device answers; a
// device that never comes back gives the error after releaseRetryFor.
func TestReleaseRetriedWhileNotOperational(t *testing.T) {
	d, m := openSim(t, sim.Gaudi2)
	b, err := m.Alloc(4096, AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 3; n++ {
		simdevice.Sim(d).InjectFault(sim.Fault{Ioctl: "MEMORY", MatchOp: true, Op: hl.HL_MEM_OP_UNMAP, Nth: 1, Errno: unix.EBUSY})
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close through three EBUSY answers: %v", err)
	}
	if r := m.Lookup(b.VA()); r.Kind != Unknown {
		t.Fatal("the buffer is still indexed")
	}

	old := releaseRetryFor
	releaseRetryFor = 20 * time.Millisecond
	defer func() { releaseRetryFor = old }()
	b2, err := m.Alloc(4096, AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		simdevice.Sim(d).InjectFault(sim.Fault{Ioctl: "MEMORY", MatchOp: true, Op: hl.HL_MEM_OP_UNMAP, Nth: 1, Errno: unix.EBUSY})
	}
	start := time.Now()
	err = b2.Close()
	if !errors.Is(err, ioctl.ErrNotOperational) {
		t.Fatalf("Close of a device that stays busy: %v, want ErrNotOperational", err)
	}
	if el := time.Since(start); el < 20*time.Millisecond || el > 5*time.Second {
		t.Errorf("gave up after %v, want about releaseRetryFor", el)
	}
}
