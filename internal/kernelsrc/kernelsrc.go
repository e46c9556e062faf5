// Package kernelsrc finds the Linux kernel source files the uapi generator
// and the ABI proof read: Debian's linux-source-6.12 tarball, of which only
// the few headers listed in Files are extracted, once, into a cache.
//
// It is used at generation and test time only; the library never reads
// kernel sources.
package kernelsrc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// Tarball is where Debian's linux-source-6.12 package installs the tree.
const Tarball = "/usr/src/linux-source-6.12.tar.xz"

// topDir is the directory the tarball's entries start with.
const topDir = "linux-source-6.12"

// Files are the tarball members the project needs, as tar wildcards below
// topDir.
var Files = []string{
	"include/uapi/drm/habanalabs_accel.h",
	"include/uapi/drm/drm.h",
	"include/uapi/drm/drm_mode.h",
	"include/uapi/rdma/*",
	"include/uapi/linux/dma-buf.h",
	"include/uapi/linux/udmabuf.h",
	"drivers/accel/habanalabs/include/gaudi/gaudi_packets.h",
	"drivers/accel/habanalabs/include/gaudi2/gaudi2_packets.h",
}

// ErrMissing reports that neither an extracted tree nor the tarball exists.
var ErrMissing = errors.New("kernel sources missing: run 'apt-get install linux-source-6.12' (or set GAUDI_KERNEL_SRC to an extracted tree)")

// Dir returns the root of an extracted kernel tree that holds Files. The
// environment variable GAUDI_KERNEL_SRC names one explicitly; otherwise the
// tarball is extracted into the user cache directory on first use.
func Dir() (string, error) {
	if d := os.Getenv("GAUDI_KERNEL_SRC"); d != "" {
		if _, err := os.Stat(filepath.Join(d, Files[0])); err != nil {
			return "", fmt.Errorf("GAUDI_KERNEL_SRC=%s: %w", d, err)
		}
		return d, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	base := filepath.Join(cache, "gaudi-go")
	dir := filepath.Join(base, topDir)
	tb, err := os.Stat(Tarball)
	if err != nil {
		if _, err2 := os.Stat(filepath.Join(dir, Files[0])); err2 == nil {
			return dir, nil
		}
		return "", ErrMissing
	}
	// The stamp records which tarball the cache came from, so a new
	// Debian revision of the package refreshes it.
	stamp := fmt.Sprintf("%d %d\n", tb.Size(), tb.ModTime().UnixNano())
	if b, err := os.ReadFile(filepath.Join(dir, ".stamp")); err == nil && string(b) == stamp {
		return dir, nil
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	// Test binaries of several packages run at once: one extracts while
	// the others wait on the lock, then find the tree current.
	lock, err := os.OpenFile(filepath.Join(base, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, ".stamp")); err == nil && string(b) == stamp {
		return dir, nil
	}
	tmp, err := os.MkdirTemp(base, "extract-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	args := []string{"-xJf", Tarball, "-C", tmp, "--wildcards"}
	for _, f := range Files {
		args = append(args, topDir+"/"+f)
	}
	if out, err := exec.Command("tar", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("extract %s: %v: %s", Tarball, err, out)
	}
	if err := os.WriteFile(filepath.Join(tmp, topDir, ".stamp"), []byte(stamp), 0o644); err != nil {
		return "", err
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.Rename(filepath.Join(tmp, topDir), dir); err != nil {
		return "", err
	}
	return dir, nil
}
