package ioctl_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gaudi-go/gaudi/ioctl"
)

func TestDevNumber(t *testing.T) {
	f, err := ioctl.OpenFile("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	d := ioctl.New(f)
	major, minor, err := d.DevNumber()
	// /dev/null is character device 1:3 on every Linux system
	// (Documentation/admin-guide/devices.txt).
	if err != nil || major != 1 || minor != 3 {
		t.Errorf("/dev/null: %d:%d %v, want 1:3", major, minor, err)
	}
	d.Close()
	if _, _, err := d.DevNumber(); !errors.Is(err, ioctl.ErrClosed) {
		t.Errorf("closed: %v", err)
	}

	path := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err = ioctl.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d = ioctl.New(f)
	defer d.Close()
	if _, _, err := d.DevNumber(); !errors.Is(err, ioctl.ErrNotSupported) {
		t.Errorf("regular file: %v", err)
	}
}
