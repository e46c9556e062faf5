package device

import "testing"

// TestSysfsDirs: on the out-of-tree driver's own accel class the
// attributes are in accelN/device/ and the PCI function is found through
// pci_addr; on the DRM accel class both are accelN/device; on the legacy
// class the attributes are hlN's and the function is pci_addr's.
func TestSysfsDirs(t *testing.T) {
	s := SysFS{Root: "/r"}
	for _, tc := range []struct {
		name       string
		n          Node
		pci, attrs string
	}{
		{"own-class", Node{Index: 4, Layout: LayoutAccel, PCIAddress: "0000:19:00.0", OwnAccelClass: true},
			"/r/sys/bus/pci/devices/0000:19:00.0", "/r/sys/class/accel/accel4/device"},
		{"drm-accel", Node{Index: 4, Layout: LayoutAccel, PCIAddress: "0000:19:00.0"},
			"/r/sys/class/accel/accel4/device", "/r/sys/class/accel/accel4/device"},
		{"legacy", Node{Index: 2, Layout: LayoutLegacy, PCIAddress: "0000:1a:00.0"},
			"/r/sys/bus/pci/devices/0000:1a:00.0", "/r/sys/class/habanalabs/hl2"},
		{"legacy-no-pci-addr", Node{Index: 2, Layout: LayoutLegacy}, "", "/r/sys/class/habanalabs/hl2"},
	} {
		if pci, attrs := s.PCIDir(tc.n), s.AttrDir(tc.n); pci != tc.pci || attrs != tc.attrs {
			t.Errorf("%s: pci %q, attrs %q; want %q, %q", tc.name, pci, attrs, tc.pci, tc.attrs)
		}
	}
}
