package devstat

import (
	"errors"
	"testing"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
	"github.com/gaudi-go/gaudi/tools/internal/devstat/devstattest"
)

// TestOutOfTreeDriver reads a simulated device of Intel's out-of-tree
// driver: the driver is named, and -v has what only that driver reports.
func TestOutOfTreeDriver(t *testing.T) {
	cfg := sim.Default(sim.Gaudi2, 1)
	cfg.LockDir, cfg.Driver = t.TempDir(), sim.DriverOutOfTree
	sys, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	d, err := simdevice.OpenSimControl(sys.Device(0))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r := newDevice(0)
	fillInfo(&r, d, &Options{Details: true})
	if len(r.Errors) != 0 {
		t.Errorf("errors: %+v", r.Errors)
	}
	if r.Driver == nil || *r.Driver != "out-of-tree" {
		t.Fatalf("driver %v, want out-of-tree", r.Driver)
	}
	x := r.Details.OutOfTree
	if x == nil {
		t.Fatal("no out-of-tree details")
	}
	if x.DRMAccel == nil || !*x.DRMAccel || x.MMEMask != 0xF || x.SchedArcMask != 0x3F || x.NICPortsMask != 0 ||
		x.NICInitialized == nil || *x.NICInitialized || x.ModuleParams == nil || x.ModuleParams.TimeoutLockedS != 30 ||
		x.ModuleParams.TPCMask != 0x1FFFFFF {
		t.Errorf("out-of-tree details %+v, module params %+v", x, x.ModuleParams)
	}
	if got := commonDriver([]Device{r, r}); got == nil || *got != "out-of-tree" {
		t.Errorf("common driver %v", got)
	}
	up := "upstream"
	if got := commonDriver([]Device{r, {Driver: &up}}); got != nil {
		t.Errorf("common driver of two drivers %v, want nil", *got)
	}
}

// TestHardwareDriverFromSysfs: devices that cannot be opened get their
// driver from the loaded module.
func TestHardwareDriverFromSysfs(t *testing.T) {
	root := devstattest.Machine(t)
	s, err := Collect(Options{OpenControl: func(string) (*device.Device, error) { return nil, errors.New("no device") }, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if s.Driver == nil || *s.Driver != "upstream" {
		t.Errorf("driver %v, want upstream (the fixture's module has no version)", s.Driver)
	}
}

// TestOwnAccelClassDirs: on the out-of-tree driver's own accel class the
// attributes are in accelN/device/ and the PCI function is found through
// pci_addr.
func TestOwnAccelClassDirs(t *testing.T) {
	n := device.Node{Index: 4, Layout: device.LayoutAccel, PCIAddress: "0000:19:00.0", OwnAccelClass: true}
	pci, attrs := sysfsDirs("/r", n)
	if pci != "/r/sys/bus/pci/devices/0000:19:00.0" || attrs != "/r/sys/class/accel/accel4/device" {
		t.Errorf("own class: pci %q, attrs %q", pci, attrs)
	}
	n.OwnAccelClass = false
	if pci, attrs := sysfsDirs("/r", n); pci != attrs || attrs != "/r/sys/class/accel/accel4/device" {
		t.Errorf("DRM accel: pci %q, attrs %q", pci, attrs)
	}
}
