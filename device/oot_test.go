package device_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// TestOwnAccelClass discovers the devices of the class the out-of-tree
// driver makes on kernels without CONFIG_DRM_ACCEL, with its dynamic
// major.
func TestOwnAccelClass(t *testing.T) {
	root := sysfsFixture(t, "sysfs-oot-accel")
	s := device.SysFS{Root: root}
	nodes, err := s.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	want := []device.Node{
		{
			Index: 0, Layout: device.LayoutAccel, Path: "/dev/accel/accel0", ControlPath: "/dev/accel/accel_controlD0",
			PCIAddress: "0000:19:00.0", VendorID: 0x1da3, DeviceID: 0x1020, Revision: 1, NUMANode: 0, LocalCPUList: "0-31",
			Status: "Operational", ModuleID: 3, OwnAccelClass: true,
			Attrs: map[string]string{
				"pci_addr": "0000:19:00.0", "status": "Operational", "module_id": "3", "device_type": "GAUDI2",
				"driver_ver": "1.24.1-a1b2c3d", "hard_reset_cnt": "0", "armcp_ver": "hl-gaudi2-1.24.1-fw-59.2.3-sec-9",
				"parent_device": "0000:19:00.0",
			},
		},
		{
			Index: 1, Layout: device.LayoutAccel, Path: "/dev/accel/accel1",
			PCIAddress: "0000:1a:00.0", VendorID: 0x1da3, DeviceID: 0x1020, Revision: 2, NUMANode: 1, LocalCPUList: "32-63",
			Status: "Needs reset", ModuleID: 1, OwnAccelClass: true,
			Attrs: map[string]string{
				"pci_addr": "0000:1a:00.0", "status": "Needs reset", "module_id": "1", "device_type": "GAUDI2",
				"driver_ver": "1.24.1-a1b2c3d",
			},
		},
	}
	if diff := cmp.Diff(want, nodes); diff != "" {
		t.Errorf("Nodes (-want +got):\n%s", diff)
	}
	// The dynamic major: device numbers resolve through /sys/dev/char.
	for _, tc := range []struct {
		minor uint32
		addr  string
	}{{0, "0000:19:00.0"}, {1, "0000:19:00.0"}, {2, "0000:1a:00.0"}} {
		n, err := s.NodeByDevNumber(508, tc.minor)
		if err != nil || n.PCIAddress != tc.addr || !n.OwnAccelClass {
			t.Errorf("NodeByDevNumber(508, %d) = %s, own class %v, %v; want %s", tc.minor, n.PCIAddress, n.OwnAccelClass, err, tc.addr)
		}
	}
	// Without /sys/dev/char, the dev attributes find them too.
	if err := os.RemoveAll(filepath.Join(root, "sys", "dev")); err != nil {
		t.Fatal(err)
	}
	if n, err := s.NodeByDevNumber(508, 2); err != nil || n.Index != 1 {
		t.Errorf("NodeByDevNumber(508, 2) by dev attribute = %+v, %v", n, err)
	}
	if n, err := s.NodeByModuleID(3); err != nil || n.Index != 0 {
		t.Errorf("NodeByModuleID(3) = %+v, %v", n, err)
	}
	// The kernel's layout is not the driver's own class.
	for _, n := range mustNodes(t, device.SysFS{Root: sysfsFixture(t, "sysfs-accel")}) {
		if n.OwnAccelClass {
			t.Errorf("accel%d of the DRM layout reported as the driver's own class", n.Index)
		}
	}
	// A device of the own class without pci_addr is an error naming it.
	bad := sysfsTree(t, "-- sys/class/accel/accel0 -> ../../devices/virtual/accel/accel0 --\n"+
		"-- sys/devices/virtual/accel/accel0/device/status --\nOperational\n")
	var ae *device.AttrError
	if _, err := (device.SysFS{Root: bad}).Nodes(); !errors.As(err, &ae) || filepath.Base(ae.Path) != "pci_addr" {
		t.Errorf("own-class device without pci_addr: %v", err)
	}
}

func mustNodes(t *testing.T, s device.SysFS) []device.Node {
	t.Helper()
	nodes, err := s.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	return nodes
}

func TestSysFSDriver(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tree    string
		drv     device.Driver
		version string
	}{
		{"out-of-tree", "-- sys/module/habanalabs/version --\n1.24.1-a1b2c3d\n-- proc/sys/kernel/osrelease --\n6.1.0\n", device.DriverOutOfTree, "1.24.1-a1b2c3d"},
		{"kernel's driver", "-- sys/module/habanalabs/refcnt --\n3\n-- proc/sys/kernel/osrelease --\n6.12.9-amd64\n", device.DriverUpstream, "6.12.9-amd64"},
		{"no driver", "-- proc/sys/kernel/osrelease --\n6.12.9-amd64\n", device.DriverUnknown, ""},
	} {
		drv, v := device.SysFS{Root: sysfsTree(t, tc.tree)}.Driver()
		if drv != tc.drv || v != tc.version {
			t.Errorf("%s: %v %q, want %v %q", tc.name, drv, v, tc.drv, tc.version)
		}
	}
}

// simFlavour opens a compute and a control node of a simulated device of
// one driver flavour.
func simFlavour(t *testing.T, drv sim.Driver) (*sim.Device, *device.Device, *device.Device) {
	t.Helper()
	cfg := sim.Default(sim.Gaudi2, 1)
	cfg.LockDir, cfg.Driver = t.TempDir(), drv
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	d, err := simdevice.OpenSim(s.Device(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	c, err := simdevice.OpenSimControl(s.Device(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return s.Device(0), d, c
}

func TestDriverInfo(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		drv  sim.Driver
		want device.DriverInfo
	}{
		{sim.DriverUpstream, device.DriverInfo{Driver: device.DriverUpstream, Version: "6.12"}},
		{sim.DriverOutOfTree, device.DriverInfo{Driver: device.DriverOutOfTree, Version: "1.24.1-sim", DRMAccel: &yes}},
	} {
		sd, d, c := simFlavour(t, tc.drv)
		for _, dev := range []*device.Device{d, c} {
			got, err := dev.DriverInfo()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%v %s (-want +got):\n%s", tc.drv, dev.Path(), diff)
			}
		}
		if tc.drv == sim.DriverOutOfTree {
			// The out-of-tree driver answers the probe in any state.
			sd.SetState(sim.NeedsReset)
			c2, err := simdevice.OpenSimControl(sd)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := c2.DriverInfo(); err != nil || got.Driver != device.DriverOutOfTree {
				t.Errorf("out-of-tree driver, device needs reset: %+v, %v", got, err)
			}
			c2.Close()
			sd.SetState(sim.Operational)
		}
	}

	// A device that is not operational on the kernel's driver: unknown
	// until it is, and not cached.
	cfg := sim.Default(sim.Gaudi2, 1)
	cfg.LockDir, cfg.Driver = t.TempDir(), sim.DriverUpstream
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := simdevice.OpenSimControl(s.Device(0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s.Device(0).SetState(sim.NeedsReset)
	if got, err := c.DriverInfo(); err != nil || got.Driver != device.DriverUnknown {
		t.Errorf("kernel's driver, device needs reset: %+v, %v; want unknown", got, err)
	}
	s.Device(0).SetState(sim.Operational)
	if got, err := c.DriverInfo(); err != nil || got.Driver != device.DriverUpstream {
		t.Errorf("kernel's driver, operational again: %+v, %v; want upstream", got, err)
	}
	c.Close()
	if _, err := c.DriverInfo(); err != nil {
		t.Errorf("a known driver is kept after Close: %v", err)
	}
}

func TestOOTQueries(t *testing.T) {
	sd, d, c := simFlavour(t, sim.DriverOutOfTree)
	mp, err := c.ModuleParams()
	if err != nil {
		t.Fatal(err)
	}
	if mp.TPCMask != 0x1FFFFFF || mp.TimeoutLocked != 30*time.Second || !mp.MMEEnable || mp.NICPortsMask != 0 {
		t.Errorf("module params %+v", mp)
	}
	hw := d.HWIPInfo()
	if hw.MMEMask != 0xF || hw.SchedArcMask != 0x3F || hw.NICPortsMask != 0 || hw.ODPSupported {
		t.Errorf("out-of-tree HW_IP_INFO %+v", hw)
	}
	if ts, err := d.TimeSyncDie(0); err != nil || ts.Device == 0 {
		t.Errorf("TimeSyncDie(0) = %+v, %v", ts, err)
	}
	if _, err := d.TimeSyncDie(1); !errors.Is(err, unix.EINVAL) || errors.Is(err, ioctl.ErrNotSupported) {
		t.Errorf("TimeSyncDie(1) on one die: %v, want EINVAL, not ErrNotSupported", err)
	}
	if err := d.ReportMemoryConsumption(0, time.Unix(1234, 0)); err != nil {
		t.Fatal(err)
	}
	if got := sd.MemoryConsumption(); got.TimestampSec != 1234 || got.Reports != 1 {
		t.Errorf("firmware got %+v", got)
	}
	if err := d.ReportMemoryConsumption(1, time.Now()); !errors.Is(err, unix.EINVAL) {
		t.Errorf("report above the allocated DRAM: %v, want EINVAL", err)
	}
	if _, err := d.LinkState(0); !errors.Is(err, device.ErrNoNIC) || !errors.Is(err, unix.EFAULT) {
		t.Errorf("LinkState without NIC: %v, want ErrNoNIC and EFAULT", err)
	}
	if _, err := d.NICAppParams(0); !errors.Is(err, device.ErrNoNIC) {
		t.Errorf("NICAppParams without NIC: %v, want ErrNoNIC", err)
	}

	// The kernel's driver: every one of them is not supported.
	_, ud, uc := simFlavour(t, sim.DriverUpstream)
	checks := map[string]error{}
	_, checks["ModuleParams"] = uc.ModuleParams()
	_, checks["TimeSyncDie"] = ud.TimeSyncDie(0)
	checks["ReportMemoryConsumption"] = ud.ReportMemoryConsumption(0, time.Now())
	_, checks["LinkState"] = ud.LinkState(0)
	_, checks["NICAppParams"] = ud.NICAppParams(0)
	for name, err := range checks {
		if !errors.Is(err, ioctl.ErrNotSupported) {
			t.Errorf("%s on the kernel's driver: %v, want ErrNotSupported", name, err)
		}
	}
	if hw := ud.HWIPInfo(); hw.MMEMask != 0 || hw.SchedArcMask != 0 {
		t.Errorf("kernel's driver HW_IP_INFO reserved bytes %+v", hw)
	}
}

// TestStatusSendsStallZeroed proves that the library's DEVICE_STATUS query
// sends soft_reset_stall zeroed: the out-of-tree driver reads it from the
// caller's buffer, and a non-zero value stalls soft resets.
func TestStatusSendsStallZeroed(t *testing.T) {
	sd, d, c := simFlavour(t, sim.DriverOutOfTree)
	for range 5 {
		for _, dev := range []*device.Device{d, c} {
			if st, err := dev.Status(); err != nil || st != device.StatusOperational {
				t.Fatalf("Status = %v, %v", st, err)
			}
		}
	}
	if n := sd.SoftResetStallRequests(); n != 0 {
		t.Fatalf("the library asked for %d soft reset stalls", n)
	}
	// The counter does see a caller that sets the word.
	f, err := sd.OpenControl()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st := hl.InfoDeviceStatus{Pad: 1}
	a := hl.InfoArgs{Op: hl.HL_INFO_DEVICE_STATUS, ReturnSize: uint32(unsafe.Sizeof(st))}
	a.ReturnPointer = hl.SlicePointer(unsafe.Slice((*byte)(unsafe.Pointer(&st)), unsafe.Sizeof(st)))
	if err := f.Ioctl(hl.DRM_IOCTL_HL_INFO, unsafe.Pointer(&a)); err != nil {
		t.Fatal(err)
	}
	if n := sd.SoftResetStallRequests(); n != 1 {
		t.Fatalf("%d stall requests after one with the word set, want 1", n)
	}
}
