package devstat

import (
	"errors"
	"testing"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/gohlml"
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
	fillInfo(&r, d, gohlml.NewDevice(gohlml.DeviceSource{Control: d}), &Options{Details: true})
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
