package sysfsattr

import (
	"os"
	"path/filepath"
	"testing"
)

func TestIsPCIAddress(t *testing.T) {
	for s, want := range map[string]bool{
		"0000:19:00.0":      true,
		"10000:01:00.7":     true,
		"0000:19:00.8":      false,
		"0000:19:0.0":       false,
		"000:19:00.0":       false,
		"0000:1G:00.0":      false,
		"0000:1A:00.0":      false, // the kernel prints lowercase
		"0000:19:00.0x":     false,
		"":                  false,
		"123456789:00:00.0": false,
	} {
		if got := IsPCIAddress(s); got != want {
			t.Errorf("IsPCIAddress(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestReadJoinLink(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "attr"), []byte("  0x1020\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := Read(Join(root, "attr")); err != nil || got != "0x1020" {
		t.Errorf("Read = %q, %v", got, err)
	}
	if _, err := Read(Join(root, "missing")); !os.IsNotExist(err) {
		t.Errorf("Read of a missing attribute: %v", err)
	}
	if Join("", "sys", "class") != "/sys/class" {
		t.Errorf("Join with an empty root: %q", Join("", "sys", "class"))
	}
	if err := os.Symlink("../../devices/pci0000:00/0000:19:00.0", filepath.Join(root, "device")); err != nil {
		t.Fatal(err)
	}
	if got, err := LinkBase(filepath.Join(root, "device")); err != nil || got != "0000:19:00.0" {
		t.Errorf("LinkBase = %q, %v", got, err)
	}
	if err := os.Symlink("/", filepath.Join(root, "bad")); err != nil {
		t.Fatal(err)
	}
	if _, err := LinkBase(filepath.Join(root, "bad")); err == nil {
		t.Error("LinkBase of a link to / succeeded")
	}
}
