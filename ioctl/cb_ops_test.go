package ioctl_test

import (
	"errors"
	"testing"

	"github.com/gaudi-go/gaudi/internal/simtest"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// simDevice opens the compute node of a fresh simulated device of asic.
func simDevice(t *testing.T, asic sim.ASIC) *ioctl.Device {
	t.Helper()
	s := simtest.New(t, sim.Default(asic, 1))
	f, err := s.Device(0).Open()
	if err != nil {
		t.Fatal(err)
	}
	d := ioctl.New(f)
	t.Cleanup(func() { d.Close() })
	return d
}

// TestCommandBuffers follows hl-thunk's test_cb_mmap and
// test_cb_kernel_mapped: create, map, query, destroy.
func TestCommandBuffers(t *testing.T) {
	d := simDevice(t, sim.Gaudi2)
	for _, size := range []uint32{77, 5000, 92517, 1 << 20} {
		h, err := d.CreateCB(size, false)
		if err != nil {
			t.Fatalf("create %d: %v", size, err)
		}
		m, err := d.Mmap(int64(h), int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			t.Fatalf("mmap %d: %v", size, err)
		}
		m[size-1] = 1
		if n, err := d.CBUsage(h); err != nil || n != 0 {
			t.Errorf("usage of %d: %d %v", size, n, err)
		}
		if err := d.Munmap(m); err != nil {
			t.Fatal(err)
		}
		if err := d.DestroyCB(h); err != nil {
			t.Fatalf("destroy %d: %v", size, err)
		}
		if err := d.DestroyCB(h); !errors.Is(err, unix.EINVAL) {
			t.Errorf("second destroy: %v", err)
		}
	}
	h, err := d.CreateCB(4096, true)
	if err != nil {
		t.Fatal(err)
	}
	va, err := d.CBDeviceVA(h)
	if err != nil || va == 0 {
		t.Fatalf("device va: %#x %v", va, err)
	}
	if err := d.DestroyCB(h); err != nil {
		t.Fatal(err)
	}
	if _, err := d.CreateCB(hl.HL_MAX_CB_SIZE+1, false); !errors.Is(err, unix.EINVAL) {
		t.Errorf("size past HL_MAX_CB_SIZE: %v", err)
	}
}

func TestMappedCBGaudi(t *testing.T) {
	d := simDevice(t, sim.Gaudi)
	h, err := d.CreateCB(4096, false)
	if err != nil {
		t.Fatal(err)
	}
	// An unmapped CB has no device address.
	if _, err := d.CBDeviceVA(h); !errors.Is(err, unix.EINVAL) {
		t.Errorf("device va of an unmapped cb: %v", err)
	}
}
