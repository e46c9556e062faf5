package gohlml_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gaudi-go/gaudi/gohlml"
)

// writeTree makes files (path: content) and symbolic links (path: target)
// below root.
func writeTree(t *testing.T, root string, files, links map[string]string) {
	t.Helper()
	for p, c := range files {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for p, target := range links {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
}

// machine is a sysfs tree of two Gaudi2s as the kernel lays them out:
// accel0 with every optional file a driver or the kernel may give
// (serial_number, uuid, a PCIe link, labelled hwmon channels, a NUMA
// node), accel1 with none. Their nodes are not there, so the INFO values
// fail with the open's error.
func machine(t *testing.T) string {
	root := t.TempDir()
	fn0 := "sys/devices/pci0000:17/0000:19:00.0/"
	fn1 := "sys/devices/pci0000:17/0000:1a:00.0/"
	files := map[string]string{}
	for fn, attrs := range map[string]map[string]string{
		fn0: {"serial_number": "AN00000001", "uuid": "01P0-HL2080A0-15-TNS000-00-00-01", "numa_node": "1", "module_id": "3",
			"current_link_speed": "16.0 GT/s PCIe", "current_link_width": "16",
			"hwmon/hwmon2/temp1_label": "Chip", "hwmon/hwmon2/temp1_input": "51000", "hwmon/hwmon2/temp1_crit": "100000",
			"hwmon/hwmon2/temp1_max": "90000", "hwmon/hwmon2/temp2_label": "board", "hwmon/hwmon2/temp2_input": "38500",
			"armcp_kernel_ver": "Linux gaudi2 5.10", "uboot_ver": "U-Boot 2021.04"},
		fn1: {"numa_node": "-1", "module_id": "0", "current_link_speed": "Unknown", "current_link_width": "0",
			"hwmon/hwmon3/temp1_input": "40000"},
	} {
		attrs["vendor"], attrs["device"], attrs["revision"], attrs["status"] = "0x1da3", "0x1020", "0x01", "Operational"
		for k, v := range attrs {
			files[fn+k] = v
		}
	}
	files["sys/module/habanalabs/version"] = "1.18.0-abc"
	files["sys/devices/virtual/accel/accel_controlD1/dev"] = "508:1"
	writeTree(t, root, files, map[string]string{
		"sys/class/accel/accel0":           "../../devices/pci0000:17/0000:19:00.0/accel/accel0",
		"sys/class/accel/accel1":           "../../devices/pci0000:17/0000:1a:00.0/accel/accel1",
		"sys/class/accel/accel_controlD1":  "../../devices/virtual/accel/accel_controlD1",
		fn0 + "accel/accel0/device":        "../../../0000:19:00.0",
		fn1 + "accel/accel1/device":        "../../../0000:1a:00.0",
		"sys/bus/pci/devices/0000:19:00.0": "../../../devices/pci0000:17/0000:19:00.0",
		"sys/bus/pci/devices/0000:1a:00.0": "../../../devices/pci0000:17/0000:1a:00.0",
		"sys/bus/pci/drivers/habanalabs/x": "../../../../devices/pci0000:17/0000:19:00.0",
		fn0 + "driver":                     "../../../bus/pci/drivers/habanalabs",
		fn1 + "driver":                     "../../../bus/pci/drivers/habanalabs",
	})
	return root
}

// TestSysfsValues reads the values sysfs gives from a fixture tree, and
// checks that the files a driver does not have are ErrNotSupported.
func TestSysfsValues(t *testing.T) {
	t.Setenv("GAUDI_ROOT", machine(t))
	if err := gohlml.Initialize(); err != nil {
		t.Fatal(err)
	}
	defer gohlml.Shutdown()
	type values struct {
		Serial, UUID, Bus                    string
		ID, Minor, Module, Speed, Gen, Width uint
		Chip, Board, Shutdown, Slowdown      uint
		Numa                                 *uint
		Errs                                 []string
	}
	read := func(i uint) values {
		d, err := gohlml.DeviceHandleByIndex(i)
		if err != nil {
			t.Fatal(err)
		}
		var v values
		note := func(name string, err error) {
			if err != nil {
				v.Errs = append(v.Errs, name+": "+err.Error())
			}
		}
		var err2 error
		v.Serial, err2 = d.SerialNumber()
		note("serial", err2)
		v.UUID, err2 = d.UUID()
		note("uuid", err2)
		v.Bus, err2 = d.PCIBusID()
		note("bus", err2)
		for _, f := range []struct {
			name string
			dst  *uint
			f    func() (uint, error)
		}{
			{"id", &v.ID, d.PCIID}, {"minor", &v.Minor, d.MinorNumber}, {"module", &v.Module, d.ModuleID},
			{"speed", &v.Speed, d.PCILinkSpeed}, {"gen", &v.Gen, d.PCIeLinkGeneration}, {"width", &v.Width, d.PCIeLinkWidth},
			{"chip", &v.Chip, d.TemperatureOnChip}, {"board", &v.Board, d.TemperatureOnBoard},
			{"shutdown", &v.Shutdown, d.TemperatureThresholdShutdown}, {"slowdown", &v.Slowdown, d.TemperatureThresholdSlowdown},
		} {
			var err error
			*f.dst, err = f.f()
			note(f.name, err)
		}
		v.Numa, err2 = d.NumaNode()
		note("numa", err2)
		return v
	}
	one := uint(1)
	want0 := values{Serial: "AN00000001", UUID: "01P0-HL2080A0-15-TNS000-00-00-01", Bus: "0000:19:00.0",
		ID: 0x10201da3, Minor: 0, Module: 3, Speed: 16, Gen: 4, Width: 16, Chip: 51, Board: 38, Shutdown: 100, Slowdown: 90, Numa: &one}
	if d := cmp.Diff(want0, read(0)); d != "" {
		t.Errorf("accel0 (-want +got):\n%s", d)
	}
	ns := "not supported"
	want1 := values{Bus: "0000:1a:00.0", ID: 0x10201da3, Minor: 1, Errs: []string{"serial: " + ns, "uuid: " + ns,
		"speed: " + ns, "gen: " + ns, "width: " + ns, "chip: " + ns, "board: " + ns, "shutdown: " + ns, "slowdown: " + ns}}
	if d := cmp.Diff(want1, read(1)); d != "" {
		t.Errorf("accel1 (-want +got):\n%s", d)
	}

	d, err := gohlml.DeviceHandleByUUID("01P0-HL2080A0-15-TNS000-00-00-01")
	if m, _ := d.MinorNumber(); err != nil || m != 0 {
		t.Errorf("DeviceHandleByUUID: minor %d, %v", m, err)
	}
	// The node is missing: INFO values fail with the open's error, not 0.
	d1, _ := gohlml.DeviceHandleByIndex(1)
	if p, err := d1.PowerUsage(); p != 0 || !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, gohlml.ErrUnknownError) {
		t.Errorf("PowerUsage without a node = %d, %v; want the open's ENOENT", p, err)
	}
	if k, u, err := gohlml.FWVersion(0); err != nil || k != "Linux gaudi2 5.10\n" || u != "U-Boot 2021.04\n" {
		t.Errorf("FWVersion(0) = %q, %q, %v", k, u, err)
	}
	if _, _, err := gohlml.FWVersion(1); err == nil {
		t.Error("FWVersion of a device without the attributes succeeded")
	}
	if v, err := gohlml.SystemDriverVersion(); err != nil || v != "1.18.0-abc\n" {
		t.Errorf("SystemDriverVersion = %q, %v", v, err)
	}
	if typ, err := gohlml.GetDeviceTypeName(); err != nil || typ != "gaudi" {
		t.Errorf("GetDeviceTypeName = %q, %v", typ, err)
	}
}

// TestDriverNotLoaded: without the habanalabs driver Initialize fails;
// with it and no device, there are 0 devices.
func TestDriverNotLoaded(t *testing.T) {
	root := t.TempDir()
	t.Setenv("GAUDI_ROOT", root)
	if err := gohlml.Initialize(); err != gohlml.ErrDriverNotLoaded {
		gohlml.Shutdown()
		t.Fatalf("Initialize without the driver: %v, want ErrDriverNotLoaded", err)
	}
	writeTree(t, root, map[string]string{"sys/module/habanalabs/refcnt": "0"}, nil)
	if err := gohlml.Initialize(); err != nil {
		t.Fatalf("Initialize with the driver and no device: %v", err)
	}
	defer gohlml.Shutdown()
	if n, err := gohlml.DeviceCount(); n != 0 || err != nil {
		t.Errorf("DeviceCount = %d, %v; want 0", n, err)
	}
}

// TestDeviceTypeName: GetDeviceTypeName names the family of the Habana
// functions on the PCI bus by device id, as gohlml does, whether or not
// the driver knows the chip or is bound to it.
func TestDeviceTypeName(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fns     map[string][2]string // PCI address: vendor, device
		want    string
		wantErr bool
	}{
		{"gaudi2", map[string][2]string{"0000:19:00.0": {"0x1da3", "0x1020"}}, "gaudi", false},
		{"gaudi2e-unbound", map[string][2]string{"0000:19:00.0": {"0x1da3", "0x1021"}}, "gaudi", false},
		{"gaudi3-pcie", map[string][2]string{"0000:19:00.0": {"0x1da3", "0x1062"}}, "gaudi", false},
		{"goya", map[string][2]string{"0000:19:00.0": {"0x1da3", "0x0001"}}, "goya", false},
		{"greco", map[string][2]string{"0000:19:00.0": {"0x1da3", "0x0030"}}, "greco", false},
		{"nic-and-gaudi", map[string][2]string{"0000:18:00.0": {"0x8086", "0x1020"}, "0000:19:00.0": {"0x1da3", "0x1000"}}, "gaudi", false},
		{"none", map[string][2]string{"0000:18:00.0": {"0x8086", "0x1020"}}, "", true},
		{"unknown-habana-id", map[string][2]string{"0000:19:00.0": {"0x1da3", "0x7777"}}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			files, links := map[string]string{}, map[string]string{}
			for addr, id := range tc.fns {
				fn := "sys/devices/pci0000:17/" + addr + "/"
				files[fn+"vendor"], files[fn+"device"], files[fn+"revision"] = id[0], id[1], "0x00"
				links["sys/bus/pci/devices/"+addr] = "../../../devices/pci0000:17/" + addr
			}
			writeTree(t, root, files, links)
			t.Setenv("GAUDI_ROOT", root)
			got, err := gohlml.GetDeviceTypeName()
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("GetDeviceTypeName = %q, %v; want %q (error: %t)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
