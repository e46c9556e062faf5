package device_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/sim"
	"golang.org/x/sys/unix"
)

// fakeKernel serves the device nodes of a sysfs fixture with simulated
// devices, refusing opens as the kernel does (an *ioctl.Error with Op
// "OPEN").
type fakeKernel map[string]struct {
	sd      *sim.Device
	control bool
}

func (k fakeKernel) open(path string) (ioctl.File, error) {
	n, ok := k[path]
	if !ok {
		return nil, &ioctl.Error{Op: "OPEN", Sub: path, Errno: unix.ENOENT}
	}
	open := n.sd.Open
	if n.control {
		open = n.sd.OpenControl
	}
	f, err := open()
	if err != nil {
		var errno unix.Errno
		if !errors.As(err, &errno) {
			return nil, err
		}
		return nil, &ioctl.Error{Op: "OPEN", Sub: path, Errno: errno}
	}
	return f, nil
}

// useAccelFixture makes Open list testdata/sysfs-accel.txtar and serve its
// three habanalabs devices with simulated ones of the same chip, PCI
// address and module id: accel1 (Gaudi2, 0000:19:00.0, module 2), accel2
// (Gaudi2, 0000:b3:00.0, module 6, in reset) and accel10 (Gaudi,
// 0000:4d:00.0, module 5).
func useAccelFixture(t *testing.T) {
	t.Helper()
	sys := testSystemExt(t, sim.Config{Devices: []sim.DeviceConfig{
		{ASIC: sim.Gaudi2, PCIAddress: "0000:19:00.0", ModuleID: 2},
		{ASIC: sim.Gaudi2, PCIAddress: "0000:b3:00.0", ModuleID: 6},
		{ASIC: sim.Gaudi, PCIAddress: "0000:4d:00.0", ModuleID: 5},
	}})
	sys.Device(1).SetState(sim.InReset)
	k := fakeKernel{}
	for i, n := range []string{"1", "2", "10"} {
		k["/dev/accel/accel"+n] = struct {
			sd      *sim.Device
			control bool
		}{sys.Device(i), false}
		k["/dev/accel/accel_controlD"+n] = struct {
			sd      *sim.Device
			control bool
		}{sys.Device(i), true}
	}
	device.UseSysFS(t, sysfsFixture(t, "sysfs-accel"), k.open)
}

// TestOpenSelectors opens each kind of selector on the accel fixture.
func TestOpenSelectors(t *testing.T) {
	useAccelFixture(t)
	for _, tc := range []struct {
		sel  string
		path string // the node opened; "" when the open must fail
		err  error  // the error it must match
	}{
		{"", "/dev/accel/accel1", nil},
		{"1", "/dev/accel/accel1", nil},
		{"10", "/dev/accel/accel10", nil},
		{"2", "", ioctl.ErrInReset},
		{"0", "", device.ErrNoDevice}, // accel0 is not a habanalabs device
		{"3", "", device.ErrNoDevice},
		{"0000:19:00.0", "/dev/accel/accel1", nil},
		{"4d:00.0", "/dev/accel/accel10", nil},
		{"0000:4D:00.0", "/dev/accel/accel10", nil},
		{"0000:00:0b.0", "", device.ErrNoDevice},
		{"module:2", "/dev/accel/accel1", nil},
		{"module:5", "/dev/accel/accel10", nil},
		{"module:6", "", ioctl.ErrInReset},
		{"module:7", "", device.ErrNoDevice},
		{"/dev/accel/accel10", "/dev/accel/accel10", nil},
		{"/dev/accel/accel3", "", unix.ENOENT},
		{"/dev/accel/accel_controlD1", "", device.ErrBadSelector},
		{"gaudi", "/dev/accel/accel10", nil},
		{"gaudi2", "/dev/accel/accel1", nil},
		{"gaudi2b", "", device.ErrNoDevice},
		{"gaudi3", "", device.ErrNoDevice},
		{"sim:1", "", device.ErrBadSelector},
	} {
		d, err := device.Open(tc.sel)
		if tc.path == "" {
			if !errors.Is(err, tc.err) {
				t.Errorf("Open(%q) = %v, %v; want %v", tc.sel, d, err, tc.err)
			}
			if d != nil {
				d.Close()
			}
			continue
		}
		if err != nil {
			t.Errorf("Open(%q): %v", tc.sel, err)
			continue
		}
		if d.Path() != tc.path || d.IsControl() || !d.Simulated() {
			t.Errorf("Open(%q) = %s (control %v, simulated %v), want %s", tc.sel, d.Path(), d.IsControl(), d.Simulated(), tc.path)
		}
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestOpenFirstFree: "" and a chip name skip devices that are owned or
// in reset, and say ErrNoDevice once none is left; a device named
// exactly reports the owner's EBUSY.
func TestOpenFirstFree(t *testing.T) {
	useAccelFixture(t)
	first, err := device.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if _, err := device.Open("1"); !errors.Is(err, ioctl.ErrDeviceBusy) || !errors.Is(err, unix.EBUSY) {
		t.Errorf("Open(1) while owned: %v, want ErrDeviceBusy", err)
	}
	if _, err := device.Open("gaudi2"); !errors.Is(err, device.ErrNoDevice) {
		t.Errorf("Open(gaudi2) with one owned and one in reset: %v, want ErrNoDevice", err)
	}
	second, err := device.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if first.Path() != "/dev/accel/accel1" || second.Path() != "/dev/accel/accel10" {
		t.Errorf("first free: %s, then %s; want accel1, then accel10 (accel2 is in reset)", first.Path(), second.Path())
	}
	_, err = device.Open("")
	if !errors.Is(err, device.ErrNoDevice) || !strings.Contains(err.Error(), "accel10: device or resource busy") {
		t.Errorf("Open() with none free: %v, want ErrNoDevice naming why each was skipped", err)
	}
}

// TestOpenControlSelectors opens control nodes by each kind of selector,
// also next to the compute node's owner and for a device in reset.
func TestOpenControlSelectors(t *testing.T) {
	useAccelFixture(t)
	owner, err := device.Open("1")
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	for _, tc := range []struct {
		sel  string
		path string
		err  error
	}{
		{"", "/dev/accel/accel_controlD1", nil},
		{"1", "/dev/accel/accel_controlD1", nil},
		{"2", "/dev/accel/accel_controlD2", nil},
		{"3", "", device.ErrNoDevice},
		{"0000:4d:00.0", "/dev/accel/accel_controlD10", nil},
		{"0000:aa:00.0", "", device.ErrNoDevice},
		{"module:6", "/dev/accel/accel_controlD2", nil},
		{"module:1", "", device.ErrNoDevice},
		{"/dev/accel/accel1", "/dev/accel/accel_controlD1", nil},
		{"/dev/accel/accel_controlD10", "/dev/accel/accel_controlD10", nil},
		{"gaudi", "/dev/accel/accel_controlD10", nil},
		{"gaudi2", "/dev/accel/accel_controlD1", nil},
		{"gaudi3", "", device.ErrNoDevice},
		{"sim", "", device.ErrBadSelector},
	} {
		d, err := device.OpenControl(tc.sel)
		if tc.path == "" {
			if !errors.Is(err, tc.err) {
				t.Errorf("OpenControl(%q) = %v, %v; want %v", tc.sel, d, err, tc.err)
			}
			if d != nil {
				d.Close()
			}
			continue
		}
		if err != nil {
			t.Errorf("OpenControl(%q): %v", tc.sel, err)
			continue
		}
		if d.Path() != tc.path || !d.IsControl() {
			t.Errorf("OpenControl(%q) = %s (control %v), want %s", tc.sel, d.Path(), d.IsControl(), tc.path)
		}
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestOpenLegacy opens the nodes of the legacy layout.
func TestOpenLegacy(t *testing.T) {
	sys := testSystemExt(t, sim.Default(sim.Gaudi, 2))
	k := fakeKernel{}
	for i, n := range []string{"0", "1"} {
		k["/dev/hl"+n] = struct {
			sd      *sim.Device
			control bool
		}{sys.Device(i), false}
		k["/dev/hl_controlD"+n] = struct {
			sd      *sim.Device
			control bool
		}{sys.Device(i), true}
	}
	device.UseSysFS(t, sysfsFixture(t, "sysfs-legacy"), k.open)
	for _, tc := range []struct {
		sel     string
		control bool
		path    string
	}{
		{"1", false, "/dev/hl1"},
		{"0000:1a:00.0", false, "/dev/hl1"},
		{"gaudi", false, "/dev/hl0"},
		{"/dev/hl1", true, "/dev/hl_controlD1"},
		{"0", true, "/dev/hl_controlD0"},
	} {
		open := device.Open
		if tc.control {
			open = device.OpenControl
		}
		d, err := open(tc.sel)
		if err != nil {
			t.Errorf("open %q (control %v): %v", tc.sel, tc.control, err)
			continue
		}
		if d.Path() != tc.path || d.IsControl() != tc.control {
			t.Errorf("open %q (control %v) = %s", tc.sel, tc.control, d.Path())
		}
		d.Close()
	}
	// Legacy drivers have no module_id.
	if _, err := device.Open("module:0"); !errors.Is(err, device.ErrNoDevice) {
		t.Errorf("module:0 on a legacy layout: %v, want ErrNoDevice", err)
	}
}

// TestOpenNoSysfs: a machine without habanalabs devices has nothing to
// open, whatever the selector.
func TestOpenNoSysfs(t *testing.T) {
	device.UseSysFS(t, t.TempDir(), fakeKernel{}.open)
	for _, sel := range []string{"", "0", "0000:19:00.0", "module:0", "gaudi2"} {
		if _, err := device.Open(sel); !errors.Is(err, device.ErrNoDevice) {
			t.Errorf("Open(%q): %v, want ErrNoDevice", sel, err)
		}
		if _, err := device.OpenControl(sel); !errors.Is(err, device.ErrNoDevice) {
			t.Errorf("OpenControl(%q): %v, want ErrNoDevice", sel, err)
		}
	}
}

// TestOpenControlNotYetInSysfs: the driver adds a device's control node
// shortly after its compute node; until sysfs shows it, OpenControl
// reports ErrNoDevice and says why.
func TestOpenControlNotYetInSysfs(t *testing.T) {
	root := sysfsTree(t, accel0(driverLink("habanalabs"), pciFile("vendor", "0x1da3"), pciFile("device", "0x1020")))
	device.UseSysFS(t, root, fakeKernel{}.open)
	_, err := device.OpenControl("0")
	if !errors.Is(err, device.ErrNoDevice) || !strings.Contains(err.Error(), "none in sysfs yet") {
		t.Fatalf("OpenControl(0) without a control node: %v", err)
	}
}

// TestRootEnv moves discovery and the nodes under GAUDI_ROOT: sysfs is
// read from the tree there and the nodes it lists are opened below it.
func TestRootEnv(t *testing.T) {
	root := sysfsFixture(t, "sysfs-accel")
	sys := testSystemExt(t, sim.Config{Devices: []sim.DeviceConfig{
		{ASIC: sim.Gaudi2, PCIAddress: "0000:19:00.0", ModuleID: 2},
	}})
	k := fakeKernel{}
	k[root+"/dev/accel/accel1"] = struct {
		sd      *sim.Device
		control bool
	}{sys.Device(0), false}
	k[root+"/dev/accel/accel_controlD1"] = struct {
		sd      *sim.Device
		control bool
	}{sys.Device(0), true}
	device.UseSysFS(t, "", k.open) // the zero SysFS: the environment decides
	t.Setenv(device.RootEnv, root)

	nodes, err := device.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 3 || nodes[0].Path != "/dev/accel/accel1" {
		t.Fatalf("nodes under %s: %+v", root, nodes)
	}
	d, err := device.Open("module:2")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Path() != root+"/dev/accel/accel1" {
		t.Fatalf("opened %s", d.Path())
	}
	c, err := device.OpenControl("0000:19:00.0")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()

	// Unset, the live system is read: no fixture devices.
	t.Setenv(device.RootEnv, "")
	if n, err := (device.SysFS{}).Count(device.AnyASIC); err == nil && n == 3 {
		t.Fatal("the fixture is still read without GAUDI_ROOT")
	}
}
