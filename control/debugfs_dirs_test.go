package control

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gaudi-go/gaudi/device"
	"github.com/google/go-cmp/cmp"
)

func TestDebugFSDirs(t *testing.T) {
	for _, tc := range []struct {
		name string
		node device.Node
		want []string
	}{
		{"accel", device.Node{Index: 2, Layout: device.LayoutAccel, PCIAddress: "0000:19:00.0"},
			[]string{"/d/accel/0000:19:00.0", "/d/accel/2"}},
		{"accel without address", device.Node{Index: 2, Layout: device.LayoutAccel}, []string{"/d/accel/2"}},
		{"legacy", device.Node{Index: 1, Layout: device.LayoutLegacy, PCIAddress: "0000:1a:00.0"},
			[]string{"/d/habanalabs/hl1"}},
	} {
		if diff := cmp.Diff(tc.want, debugFSDirs("/d", tc.node)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestFindDebugFSDir(t *testing.T) {
	root := t.TempDir()
	byIndex := filepath.Join(root, "accel", "2")
	if err := os.MkdirAll(byIndex, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(byIndex, "data32"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	n := device.Node{Index: 2, Layout: device.LayoutAccel, PCIAddress: "0000:19:00.0"}
	// A kernel that names the directory by index.
	if dir, err := findDebugFSDir(debugFSDirs(root, n)); err != nil || dir != byIndex {
		t.Fatalf("by index: %q, %v", dir, err)
	}
	// A 6.12 kernel names it by PCI address, which wins.
	byAddr := filepath.Join(root, "accel", "0000:19:00.0")
	if err := os.MkdirAll(byAddr, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(byAddr, "data32"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if dir, err := findDebugFSDir(debugFSDirs(root, n)); err != nil || dir != byAddr {
		t.Fatalf("by address: %q, %v", dir, err)
	}
	if _, err := findDebugFSDir(debugFSDirs(root, device.Node{Index: 7})); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("no directory: %v", err)
	}
}
