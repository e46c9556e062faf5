package sim

import (
	"os"
	"path/filepath"
	"testing"
)

// holdsFile reports whether this process has path open, by its
// /proc/self/fd links: what hlinfo does to find a simulated device's owner.
func holdsFile(t *testing.T, path string) bool {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && target == path {
			return true
		}
	}
	return false
}

func TestLockPathNamesTheComputeOwnersFile(t *testing.T) {
	dir := t.TempDir()
	s := newTestSystem(t, Config{Devices: Default(Gaudi2, 2).Devices, LockDir: dir})
	d := s.Device(1)
	if filepath.Dir(d.LockPath()) != dir {
		t.Fatalf("LockPath %q is not in the lock directory %q", d.LockPath(), dir)
	}
	if d.LockPath() == s.Device(0).LockPath() {
		t.Fatalf("devices 0 and 1 share the lock file %q", d.LockPath())
	}
	if holdsFile(t, d.LockPath()) {
		t.Fatal("lock file open before any compute open")
	}
	ctl, err := d.OpenControl()
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	if holdsFile(t, d.LockPath()) {
		t.Fatal("a control open holds the lock file")
	}
	f, err := d.Open()
	if err != nil {
		t.Fatal(err)
	}
	if !holdsFile(t, d.LockPath()) {
		t.Fatalf("compute open does not hold %s", d.LockPath())
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if holdsFile(t, d.LockPath()) {
		t.Fatal("lock file still open after the compute file closed")
	}
}
