package device_test

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gaudi-go/gaudi/device"
)

// unpackSysfs writes a fixture tree below dir. The format (see the comment of
// testdata/sysfs-accel.txtar) is txtar-like: "-- path --" starts a file
// holding the lines up to the next marker, "-- path/ --" is a directory and
// "-- path -> target --" a symbolic link. Lines before the first marker
// are a comment. Fixtures are text because Go module zips reject the ':'
// of PCI addresses in file names.
func unpackSysfs(dir, archive string) error {
	var (
		name   string
		body   strings.Builder
		inFile bool
	)
	flush := func() error {
		if !inFile {
			return nil
		}
		inFile = false
		return os.WriteFile(filepath.Join(dir, name), []byte(body.String()), 0o644)
	}
	for _, line := range strings.SplitAfter(archive, "\n") {
		marker, ok := sysfsMarker(line)
		if !ok {
			if inFile {
				body.WriteString(line)
			}
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		body.Reset()
		rel, target, isLink := strings.Cut(marker, " -> ")
		isDir := strings.HasSuffix(rel, "/")
		rel = strings.TrimSuffix(rel, "/")
		if !filepath.IsLocal(rel) || filepath.IsAbs(target) {
			return fmt.Errorf("fixture entry %q leaves the tree", marker)
		}
		path := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		switch {
		case isLink:
			if err := os.Symlink(target, path); err != nil {
				return err
			}
		case isDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
		default:
			name, inFile = rel, true
		}
	}
	return flush()
}

// sysfsMarker returns the entry of a "-- entry --" line.
func sysfsMarker(line string) (string, bool) {
	line = strings.TrimSuffix(line, "\n")
	if len(line) < len("-- x --") || !strings.HasPrefix(line, "-- ") || !strings.HasSuffix(line, " --") {
		return "", false
	}
	return strings.TrimSpace(line[3 : len(line)-3]), true
}

// sysfsTree unpacks an inline archive into a new temporary root.
func sysfsTree(t testing.TB, archive string) string {
	t.Helper()
	root := t.TempDir()
	if err := unpackSysfs(root, archive); err != nil {
		t.Fatalf("unpack fixture: %v", err)
	}
	return root
}

// sysfsFixture unpacks testdata/<name>.txtar into a new temporary root.
func sysfsFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	return sysfsTree(t, string(b))
}

// Builders for small inline trees: one PCI function at 0000:01:00.0 shown
// as accel0, and a legacy hl0.
const testPCIDir = "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0"

func accel0(entries ...string) string {
	return "-- sys/class/accel/accel0 -> ../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/accel/accel0 --\n" +
		"-- " + testPCIDir + "/accel/accel0/device -> ../../../0000:01:00.0 --\n" +
		strings.Join(entries, "")
}

func pciFile(name, content string) string {
	return "-- " + testPCIDir + "/" + name + " --\n" + content + "\n"
}

func driverLink(driver string) string {
	return "-- " + testPCIDir + "/driver -> ../../../../bus/pci/drivers/" + driver + " --\n"
}

func hl0(entries ...string) string {
	return "-- sys/class/habanalabs/hl0 -> ../../devices/virtual/habanalabs/hl0 --\n" +
		strings.Join(entries, "")
}

func hl0File(name, content string) string {
	return "-- sys/devices/virtual/habanalabs/hl0/" + name + " --\n" + content + "\n"
}

const busLink = "-- sys/bus/pci/devices/0000:01:00.0 -> ../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0 --\n"

// withAttrs returns a copy of m with the key/value pairs kv set.
func withAttrs(m map[string]string, kv ...string) map[string]string {
	c := maps.Clone(m)
	for i := 0; i+1 < len(kv); i += 2 {
		c[kv[i]] = kv[i+1]
	}
	return c
}

// withoutAttrs returns a copy of m without keys.
func withoutAttrs(m map[string]string, keys ...string) map[string]string {
	c := maps.Clone(m)
	for _, k := range keys {
		delete(c, k)
	}
	return c
}

var gaudi2Attrs = map[string]string{
	"armcp_kernel_ver": "5.10.18-hl-gaudi2-1.17.0-fw-51.2.0-sec-9",
	"armcp_ver":        "hl-gaudi2-1.17.0-fw-51.2.0-sec-9",
	"clk_cur_freq_mhz": "1650",
	"clk_max_freq_mhz": "1650",
	"cpld_ver":         "0x65a8f0e30000000c",
	"cpucp_kernel_ver": "5.10.18-hl-gaudi2-1.17.0-fw-51.2.0-sec-9",
	"cpucp_ver":        "hl-gaudi2-1.17.0-fw-51.2.0-sec-9",
	"device_type":      "GAUDI2",
	"fuse_ver":         "2.1.0",
	"fw_os_ver":        "51.2.0",
	"hard_reset_cnt":   "0",
	"max_power":        "600000",
	"module_id":        "2",
	"parent_device":    "0000:19:00.0",
	"pci_addr":         "0000:19:00.0",
	"preboot_btl_ver":  "Preboot version hl-gaudi2-1.17.0-fw-51.2.0-sec-9 (Jul 04 2024 - 11:32:12)",
	"security_enabled": "1",
	"status":           "Operational",
	"thermal_ver":      "51.2.0",
	"uboot_ver":        "U-Boot 2023.07-hl-gaudi2-1.17.0-fw-51.2.0-sec-9",
	"vrm_ver":          "0x2d 0x03:0x03:0x03",
}

var wantAccel = []device.Node{
	{
		Index:        1,
		Layout:       device.LayoutAccel,
		Path:         "/dev/accel/accel1",
		ControlPath:  "/dev/accel/accel_controlD1",
		PCIAddress:   "0000:19:00.0",
		VendorID:     0x1da3,
		DeviceID:     0x1020,
		Revision:     1,
		NUMANode:     0,
		LocalCPUList: "0-31,64-95",
		Status:       "Operational",
		ModuleID:     2,
		Attrs:        gaudi2Attrs,
	},
	{
		Index:        2,
		Layout:       device.LayoutAccel,
		Path:         "/dev/accel/accel2",
		ControlPath:  "/dev/accel/accel_controlD2",
		PCIAddress:   "0000:b3:00.0",
		VendorID:     0x1da3,
		DeviceID:     0x1020,
		Revision:     1,
		NUMANode:     1,
		LocalCPUList: "32-63,96-127",
		Status:       "In reset",
		ModuleID:     6,
		Attrs: withAttrs(withoutAttrs(gaudi2Attrs, "clk_cur_freq_mhz", "clk_max_freq_mhz", "max_power"),
			"hard_reset_cnt", "1",
			"module_id", "6",
			"parent_device", "0000:b3:00.0",
			"pci_addr", "0000:b3:00.0",
			"status", "In reset"),
	},
	{
		Index:        10,
		Layout:       device.LayoutAccel,
		Path:         "/dev/accel/accel10",
		ControlPath:  "/dev/accel/accel_controlD10",
		PCIAddress:   "0000:4d:00.0",
		VendorID:     0x1da3,
		DeviceID:     0x1000,
		Revision:     1,
		NUMANode:     -1,
		LocalCPUList: "0-15",
		Status:       "Operational",
		ModuleID:     5,
		Attrs: map[string]string{
			"armcp_kernel_ver": "4.19.0-hl-gaudi-1.17.0-fw-51.2.0-sec-7",
			"armcp_ver":        "hl-gaudi-1.17.0-fw-51.2.0-sec-7",
			"clk_cur_freq_mhz": "1500",
			"clk_max_freq_mhz": "1500",
			"cpld_ver":         "0x5f1c2b9a00000010",
			"cpucp_kernel_ver": "4.19.0-hl-gaudi-1.17.0-fw-51.2.0-sec-7",
			"cpucp_ver":        "hl-gaudi-1.17.0-fw-51.2.0-sec-7",
			"device_type":      "GAUDI",
			"fuse_ver":         "1.4.0",
			"fw_os_ver":        "",
			"hard_reset_cnt":   "0",
			"infineon_ver":     "0x2a",
			"max_power":        "350000",
			"module_id":        "5",
			"parent_device":    "0000:4d:00.0",
			"pci_addr":         "0000:4d:00.0",
			"preboot_btl_ver":  "Preboot version hl-gaudi-1.17.0-fw-51.2.0-sec-7 (Jul 04 2024 - 11:30:41)",
			"security_enabled": "0",
			"status":           "Operational",
			"thermal_ver":      "51.2.0",
			"uboot_ver":        "U-Boot 2021.04-hl-gaudi-1.17.0-fw-51.2.0-sec-7",
		},
	},
}

var legacyHL0Attrs = map[string]string{
	"armcp_kernel_ver": "4.19.0-hl-gaudi-0.15.4-fw-28.2.0-sec-4",
	"armcp_ver":        "hl-gaudi-0.15.4-fw-28.2.0-sec-4",
	"clk_cur_freq_mhz": "1500",
	"clk_max_freq_mhz": "1500",
	"cpld_ver":         "0x5f1c2b9a00000010",
	"device_type":      "GAUDI",
	"fuse_ver":         "1.4.0",
	"hard_reset_cnt":   "0",
	"infineon_ver":     "0x2a",
	"max_power":        "350000",
	"pci_addr":         "0000:19:00.0",
	"preboot_btl_ver":  "Preboot version hl-gaudi-0.15.4-fw-28.2.0-sec-4 (Feb 10 2022 - 17:06:13)",
	"soft_reset_cnt":   "0",
	"status":           "Operational",
	"thermal_ver":      "28.2.0",
	"uboot_ver":        "U-Boot 2019.04-hl-gaudi-0.15.4-fw-28.2.0-sec-4",
}

var wantLegacy = []device.Node{
	{
		Index:        0,
		Layout:       device.LayoutLegacy,
		Path:         "/dev/hl0",
		ControlPath:  "/dev/hl_controlD0",
		PCIAddress:   "0000:19:00.0",
		VendorID:     0x1da3,
		DeviceID:     0x1000,
		Revision:     1,
		NUMANode:     0,
		LocalCPUList: "0-23,48-71",
		Status:       "Operational",
		ModuleID:     -1,
		Attrs:        legacyHL0Attrs,
	},
	{
		Index:        1,
		Layout:       device.LayoutLegacy,
		Path:         "/dev/hl1",
		ControlPath:  "/dev/hl_controlD1",
		PCIAddress:   "0000:1a:00.0",
		VendorID:     0x1da3,
		DeviceID:     0x1000,
		Revision:     1,
		NUMANode:     0,
		LocalCPUList: "0-23,48-71",
		Status:       "In reset",
		ModuleID:     -1,
		Attrs: map[string]string{
			"armcp_kernel_ver": "4.19.0-hl-gaudi-0.15.4-fw-28.2.0-sec-4",
			"armcp_ver":        "hl-gaudi-0.15.4-fw-28.2.0-sec-4",
			"cpld_ver":         "0x5f1c2b9a00000010",
			"device_type":      "GAUDI",
			"hard_reset_cnt":   "1",
			"pci_addr":         "0000:1a:00.0",
			"soft_reset_cnt":   "3",
			"status":           "In reset",
		},
	},
}

func TestNodes(t *testing.T) {
	tests := []struct {
		name string
		root func(t *testing.T) string
		want []device.Node
	}{
		{
			name: "accel layout",
			root: func(t *testing.T) string { return sysfsFixture(t, "sysfs-accel") },
			want: wantAccel,
		},
		{
			name: "legacy layout",
			root: func(t *testing.T) string { return sysfsFixture(t, "sysfs-legacy") },
			want: wantLegacy,
		},
		{
			name: "missing root",
			root: func(t *testing.T) string { return filepath.Join(t.TempDir(), "absent") },
		},
		{
			name: "empty class directories",
			root: func(t *testing.T) string {
				return sysfsTree(t, "-- sys/class/accel/ --\n-- sys/class/habanalabs/ --\n")
			},
		},
		{
			name: "names the kernel does not print are ignored",
			root: func(t *testing.T) string {
				// Each entry would list as a device if its name were accepted.
				target := " -> ../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/accel/accel0 --\n"
				return sysfsTree(t, "-- "+testPCIDir+"/accel/accel0/device -> ../../../0000:01:00.0 --\n"+
					driverLink("habanalabs")+pciFile("vendor", "0x1da3")+pciFile("device", "0x1020")+
					"-- sys/class/accel/accel01"+target+"-- sys/class/accel/accel+1"+target+
					"-- sys/class/accel/accel"+target+"-- sys/class/accel/accel1x"+target+
					"-- sys/class/accel/accel99999999999"+target+
					"-- sys/class/habanalabs/hl01/ --\n-- sys/class/habanalabs/hl+1/ --\n"+
					"-- sys/class/habanalabs/hl/ --\n-- sys/class/habanalabs/hl-1/ --\n")
			},
		},
		{
			name: "another accel driver is skipped before its files are parsed",
			root: func(t *testing.T) string {
				return sysfsTree(t, accel0(driverLink("intel_vpu"), pciFile("vendor", "garbage")))
			},
		},
		{
			name: "a driverless function of another vendor is skipped",
			root: func(t *testing.T) string {
				return sysfsTree(t, accel0(pciFile("vendor", "0x8086"), pciFile("device", "0x7d1d")))
			},
		},
		{
			name: "a parent without a vendor file is not PCI and is skipped",
			root: func(t *testing.T) string {
				return sysfsTree(t, accel0(pciFile("modalias", "of:Nnpu")))
			},
		},
		{
			name: "a device in both layouts is listed once, as accel",
			root: func(t *testing.T) string {
				return sysfsTree(t, accel0(driverLink("habanalabs"),
					pciFile("vendor", "0x1da3"), pciFile("device", "0x1020"),
					pciFile("status", "Operational"))+
					hl0(hl0File("pci_addr", "0000:01:00.0"), hl0File("status", "Operational"))+
					busLink)
			},
			want: []device.Node{{
				Index: 0, Layout: device.LayoutAccel, Path: "/dev/accel/accel0",
				PCIAddress: "0000:01:00.0", VendorID: 0x1da3, DeviceID: 0x1020,
				NUMANode: -1, Status: "Operational", ModuleID: -1,
				Attrs: map[string]string{"status": "Operational"},
			}},
		},
		{
			name: "legacy attributes below a device link",
			root: func(t *testing.T) string {
				return sysfsTree(t, hl0("-- sys/devices/virtual/habanalabs/hl0/device -> ../../../pci0000:00/0000:00:01.0/0000:01:00.0 --\n",
					pciFile("vendor", "0x1da3"), pciFile("device", "0x1000"),
					pciFile("numa_node", "1"), pciFile("status", "Needs Reset")))
			},
			want: []device.Node{{
				Index: 0, Layout: device.LayoutLegacy, Path: "/dev/hl0",
				PCIAddress: "0000:01:00.0", VendorID: 0x1da3, DeviceID: 0x1000,
				NUMANode: 1, Status: "Needs Reset", ModuleID: -1,
				Attrs: map[string]string{"status": "Needs Reset"},
			}},
		},
		{
			name: "legacy device before its attributes exist",
			root: func(t *testing.T) string {
				return sysfsTree(t, hl0("-- sys/devices/virtual/habanalabs/hl0/dev --\n510:0\n"))
			},
			want: []device.Node{{
				Index: 0, Layout: device.LayoutLegacy, Path: "/dev/hl0",
				NUMANode: -1, ModuleID: -1, Attrs: map[string]string{},
			}},
		},
		{
			name: "optional PCI files that do not parse keep their defaults",
			root: func(t *testing.T) string {
				return sysfsTree(t, accel0(driverLink("habanalabs"),
					pciFile("vendor", "0x1da3"), pciFile("device", "0x1020"),
					pciFile("revision", "2"), pciFile("numa_node", "-7"),
					pciFile("module_id", "-3")))
			},
			want: []device.Node{{
				Index: 0, Layout: device.LayoutAccel, Path: "/dev/accel/accel0",
				PCIAddress: "0000:01:00.0", VendorID: 0x1da3, DeviceID: 0x1020,
				NUMANode: -1, ModuleID: -1,
				Attrs: map[string]string{"module_id": "-3"},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := device.SysFS{Root: tt.root(t)}.Nodes()
			if err != nil {
				t.Fatalf("Nodes: %v", err)
			}
			if got == nil {
				t.Error("Nodes returned a nil slice, want an empty one")
			}
			if diff := cmp.Diff(tt.want, got, cmpEmptyNodes); diff != "" {
				t.Errorf("Nodes mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// cmpEmptyNodes treats a nil and an empty []device.Node as equal; Nodes'
// non-nil result is checked separately.
var cmpEmptyNodes = cmp.FilterValues(func(a, b []device.Node) bool {
	return len(a) == 0 && len(b) == 0
}, cmp.Comparer(func(a, b []device.Node) bool { return true }))

func TestNodesErrors(t *testing.T) {
	accelFile := func(name string) string {
		return filepath.Join("sys", "class", "accel", "accel0", "device", name)
	}
	tests := []struct {
		name     string
		archive  string
		wantPath string // relative to the root
		wantIs   error  // nil: not checked
	}{
		{
			name:     "vendor without 0x",
			archive:  accel0(driverLink("habanalabs"), pciFile("vendor", "1da3"), pciFile("device", "0x1020")),
			wantPath: accelFile("vendor"),
		},
		{
			name:     "vendor not hex",
			archive:  accel0(driverLink("habanalabs"), pciFile("vendor", "0xzz"), pciFile("device", "0x1020")),
			wantPath: accelFile("vendor"),
			wantIs:   strconv.ErrSyntax,
		},
		{
			name:     "vendor too wide",
			archive:  accel0(driverLink("habanalabs"), pciFile("vendor", "0x11da3"), pciFile("device", "0x1020")),
			wantPath: accelFile("vendor"),
			wantIs:   strconv.ErrRange,
		},
		{
			name:     "vendor empty",
			archive:  accel0(driverLink("habanalabs"), pciFile("vendor", ""), pciFile("device", "0x1020")),
			wantPath: accelFile("vendor"),
		},
		{
			name:     "device missing",
			archive:  accel0(driverLink("habanalabs"), pciFile("vendor", "0x1da3")),
			wantPath: accelFile("device"),
			wantIs:   fs.ErrNotExist,
		},
		{
			name:     "driverless function with a malformed vendor",
			archive:  accel0(pciFile("vendor", "0x-1")),
			wantPath: accelFile("vendor"),
		},
		{
			name:     "legacy pci_addr that is not an address",
			archive:  hl0(hl0File("pci_addr", "../../../etc")),
			wantPath: filepath.Join("sys", "class", "habanalabs", "hl0", "pci_addr"),
		},
		{
			name:     "legacy PCI function missing",
			archive:  hl0(hl0File("pci_addr", "0000:01:00.0")),
			wantPath: filepath.Join("sys", "bus", "pci", "devices", "0000:01:00.0", "vendor"),
			wantIs:   fs.ErrNotExist,
		},
		{
			name:     "legacy device id malformed",
			archive:  hl0(hl0File("pci_addr", "0000:01:00.0")) + busLink + pciFile("vendor", "0x1da3") + pciFile("device", "4096"),
			wantPath: filepath.Join("sys", "bus", "pci", "devices", "0000:01:00.0", "device"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := sysfsTree(t, tt.archive)
			nodes, err := device.SysFS{Root: root}.Nodes()
			if err == nil {
				t.Fatalf("Nodes = %+v, want an error", nodes)
			}
			var ae *device.AttrError
			if !errors.As(err, &ae) {
				t.Fatalf("Nodes error %v (%T), want an *AttrError", err, err)
			}
			if want := filepath.Join(root, tt.wantPath); ae.Path != want {
				t.Errorf("AttrError.Path = %q, want %q", ae.Path, want)
			}
			if !strings.Contains(err.Error(), ae.Path) {
				t.Errorf("error %q does not name the path", err)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.wantIs)
			}
		})
	}
}

func TestNodesClassNotReadable(t *testing.T) {
	// A class "directory" that is a file cannot be listed: that is an error,
	// unlike a missing one.
	root := sysfsTree(t, "-- sys/class/accel --\nnot a directory\n")
	if nodes, err := (device.SysFS{Root: root}).Nodes(); err == nil {
		t.Fatalf("Nodes = %+v, want an error", nodes)
	}
}

func TestNodeByPCIAddress(t *testing.T) {
	accel := sysfsFixture(t, "sysfs-accel")
	legacy := sysfsFixture(t, "sysfs-legacy")
	tests := []struct {
		name      string
		root      string
		addr      string
		wantIndex int
		wantErr   error
	}{
		{name: "accel full address", root: accel, addr: "0000:19:00.0", wantIndex: 1},
		{name: "accel upper case", root: accel, addr: "0000:B3:00.0", wantIndex: 2},
		{name: "accel short form", root: accel, addr: "4d:00.0", wantIndex: 10},
		{name: "legacy", root: legacy, addr: "0000:1a:00.0", wantIndex: 1},
		{name: "filtered device", root: accel, addr: "0000:00:0b.0", wantErr: device.ErrNotFound},
		{name: "absent", root: accel, addr: "0000:42:00.0", wantErr: device.ErrNotFound},
		{name: "empty", root: accel, addr: "", wantErr: device.ErrNotFound},
		{name: "missing root", root: filepath.Join(accel, "absent"), addr: "0000:19:00.0", wantErr: device.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := device.SysFS{Root: tt.root}.NodeByPCIAddress(tt.addr)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("NodeByPCIAddress(%q) = %+v, %v; want %v", tt.addr, n, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("NodeByPCIAddress(%q): %v", tt.addr, err)
			}
			if n.Index != tt.wantIndex {
				t.Errorf("NodeByPCIAddress(%q).Index = %d, want %d", tt.addr, n.Index, tt.wantIndex)
			}
		})
	}
}

func TestLayoutString(t *testing.T) {
	for _, tt := range []struct {
		l    device.Layout
		want string
	}{
		{device.LayoutAccel, "accel"},
		{device.LayoutLegacy, "legacy"},
		{device.Layout(0), "Layout(0)"},
		{device.Layout(9), "Layout(9)"},
	} {
		if got := tt.l.String(); got != tt.want {
			t.Errorf("Layout(%d).String() = %q, want %q", int(tt.l), got, tt.want)
		}
	}
}

// TestNodesLive lists the devices of this machine. It must not fail, and it
// must find none where the habanalabs driver is not loaded.
func TestNodesLive(t *testing.T) {
	nodes, err := device.Nodes()
	if err != nil {
		t.Fatalf("Nodes: %v", err)
	}
	t.Logf("%d habanalabs devices", len(nodes))
	if _, err := os.Stat("/sys/bus/pci/drivers/habanalabs"); errors.Is(err, fs.ErrNotExist) && len(nodes) != 0 {
		t.Errorf("no habanalabs driver, but Nodes = %+v", nodes)
	}
}

// FuzzNodesPCIFiles feeds arbitrary content to the PCI and driver files of
// one device: Nodes must not panic, and fails only with an *AttrError.
func FuzzNodesPCIFiles(f *testing.F) {
	f.Add("0x1da3", "0x1020", "0x01", "0", "2")
	f.Add("0x1DA3\n", "0X1020", "0x", "-1", "4294967295")
	f.Add("", "\x00", "0x100", "x", " 7 ")
	f.Fuzz(func(t *testing.T, vendor, dev, rev, numa, module string) {
		root := sysfsTree(t, accel0(driverLink("habanalabs")))
		for name, content := range map[string]string{
			"vendor": vendor, "device": dev, "revision": rev, "numa_node": numa, "module_id": module,
		} {
			if err := os.WriteFile(filepath.Join(root, testPCIDir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		nodes, err := device.SysFS{Root: root}.Nodes()
		if err != nil {
			var ae *device.AttrError
			if !errors.As(err, &ae) {
				t.Fatalf("Nodes error %v (%T), want an *AttrError", err, err)
			}
			return
		}
		if len(nodes) != 1 {
			t.Fatalf("Nodes = %+v, want one node", nodes)
		}
		if n := nodes[0]; n.NUMANode < -1 || n.ModuleID < -1 {
			t.Errorf("NUMANode %d, ModuleID %d: want >= -1", n.NUMANode, n.ModuleID)
		}
	})
}

func ExampleSysFS_Nodes() {
	// A fixture of a 6.12 machine; on a live system use device.Nodes().
	root, err := os.MkdirTemp("", "sysfs")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(root)
	archive, err := os.ReadFile("testdata/sysfs-accel.txtar")
	if err == nil {
		err = unpackSysfs(root, string(archive))
	}
	if err != nil {
		fmt.Println(err)
		return
	}

	nodes, err := device.SysFS{Root: root}.Nodes()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range nodes {
		fmt.Printf("%s %s %s %04x:%04x module %d %q\n",
			n.Path, n.ControlPath, n.PCIAddress, n.VendorID, n.DeviceID, n.ModuleID, n.Status)
	}
	// Output:
	// /dev/accel/accel1 /dev/accel/accel_controlD1 0000:19:00.0 1da3:1020 module 2 "Operational"
	// /dev/accel/accel2 /dev/accel/accel_controlD2 0000:b3:00.0 1da3:1020 module 6 "In reset"
	// /dev/accel/accel10 /dev/accel/accel_controlD10 0000:4d:00.0 1da3:1000 module 5 "Operational"
}
