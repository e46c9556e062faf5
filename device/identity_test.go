package device_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
	"github.com/google/go-cmp/cmp"
)

func TestNodeByDevNumber(t *testing.T) {
	accel := sysfsFixture(t, "sysfs-accel")
	legacy := sysfsFixture(t, "sysfs-legacy")
	// A tree with the /sys/dev/char links the kernel creates: the link
	// wins over the dev attributes (here deliberately wrong).
	linked := sysfsFixture(t, "sysfs-accel")
	for dev, target := range map[string]string{
		"261:1": "../../devices/pci0000:b1/0000:b1:02.0/0000:b3:00.0/accel/accel2",
		"508:2": "../../devices/virtual/accel/accel_controlD10",
	} {
		if err := os.MkdirAll(filepath.Join(linked, "sys", "dev", "char"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(linked, "sys", "dev", "char", dev)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name         string
		root         string
		major, minor uint32
		want         string
		wantErr      error
	}{
		{"accel compute", accel, 261, 1, "0000:19:00.0", nil},
		{"accel control", accel, 508, 2, "0000:b3:00.0", nil},
		{"accel gaudi", accel, 261, 10, "0000:4d:00.0", nil},
		{"other accel driver", accel, 261, 0, "", device.ErrNotFound},
		{"unknown number", accel, 261, 99, "", device.ErrNotFound},
		{"legacy compute", legacy, 510, 2, "0000:1a:00.0", nil},
		{"legacy control", legacy, 510, 1, "0000:19:00.0", nil},
		{"link", linked, 261, 1, "0000:b3:00.0", nil},
		{"link to control", linked, 508, 2, "0000:4d:00.0", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := device.SysFS{Root: tt.root}.NodeByDevNumber(tt.major, tt.minor)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("got %+v, %v; want %v", n, err, tt.wantErr)
				}
				return
			}
			if err != nil || n.PCIAddress != tt.want {
				t.Fatalf("got %q, %v; want %q", n.PCIAddress, err, tt.want)
			}
		})
	}
}

func TestNodeByModuleID(t *testing.T) {
	s := device.SysFS{Root: sysfsFixture(t, "sysfs-accel")}
	for id, want := range map[int]int{2: 1, 6: 2, 5: 10} {
		n, err := s.NodeByModuleID(id)
		if err != nil || n.Index != want {
			t.Errorf("module %d: index %d, %v; want %d", id, n.Index, err, want)
		}
	}
	for _, id := range []int{0, -1} {
		if _, err := s.NodeByModuleID(id); !errors.Is(err, device.ErrNotFound) {
			t.Errorf("module %d: %v", id, err)
		}
	}
	// Legacy drivers have no module_id.
	if _, err := (device.SysFS{Root: sysfsFixture(t, "sysfs-legacy")}).NodeByModuleID(-1); !errors.Is(err, device.ErrNotFound) {
		t.Errorf("legacy module -1: %v", err)
	}
}

func TestCount(t *testing.T) {
	accel := device.SysFS{Root: sysfsFixture(t, "sysfs-accel")}
	legacy := device.SysFS{Root: sysfsFixture(t, "sysfs-legacy")}
	got := map[string]int{}
	for name, c := range map[string]struct {
		s device.SysFS
		a device.ASIC
	}{
		"accel any": {accel, device.AnyASIC}, "accel gaudi2": {accel, device.Gaudi2},
		"accel gaudi": {accel, device.Gaudi}, "accel gaudi2b": {accel, device.Gaudi2B},
		"legacy any": {legacy, device.AnyASIC}, "legacy gaudi": {legacy, device.Gaudi},
	} {
		n, err := c.s.Count(c.a)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got[name] = n
	}
	want := map[string]int{"accel any": 3, "accel gaudi2": 2, "accel gaudi": 1, "accel gaudi2b": 0, "legacy any": 2, "legacy gaudi": 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}

func TestPCIAddressSim(t *testing.T) {
	s := testSystemExt(t, sim.Default(sim.Gaudi2, 2))
	for i, want := range []string{"0000:19:00.0", "0000:1a:00.0"} {
		d, err := simdevice.OpenSimControl(s.Device(i))
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.PCIAddress()
		d.Close()
		if err != nil || got != want {
			t.Errorf("device %d: %q, %v; want %q", i, got, err, want)
		}
	}
}

func TestPCIAddressNotADevice(t *testing.T) {
	// /dev/null is a character device but no habanalabs node: Open
	// refuses it, so build the check from its number instead.
	_, err := device.SysFS{Root: sysfsFixture(t, "sysfs-accel")}.NodeByDevNumber(1, 3)
	if !errors.Is(err, device.ErrNotFound) {
		t.Fatalf("1:3: %v", err)
	}
}

func testSystemExt(t *testing.T, cfg sim.Config) *sim.System {
	t.Helper()
	cfg.LockDir = t.TempDir()
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
