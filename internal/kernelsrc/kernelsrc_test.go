package kernelsrc

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDir(t *testing.T) {
	d, err := Dir()
	if err != nil {
		t.Fatalf("Dir: %v (the suite needs linux-source-6.12: make deps)", err)
	}
	for _, f := range []string{Files[0], "include/uapi/linux/udmabuf.h", "drivers/accel/habanalabs/include/gaudi2/gaudi2_packets.h"} {
		if _, err := os.Stat(filepath.Join(d, f)); err != nil {
			t.Errorf("extracted tree lacks %s: %v", f, err)
		}
	}
}

func TestDirFromEnvironment(t *testing.T) {
	t.Setenv("GAUDI_KERNEL_SRC", t.TempDir())
	if _, err := Dir(); err == nil {
		t.Fatal("Dir accepted a GAUDI_KERNEL_SRC without the headers")
	}
	root := t.TempDir()
	p := filepath.Join(root, Files[0])
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GAUDI_KERNEL_SRC", root)
	if d, err := Dir(); err != nil || d != root {
		t.Fatalf("Dir() = %q, %v; want %q", d, err, root)
	}
}
