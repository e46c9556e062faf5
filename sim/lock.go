package sim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ctxLock is the compute-context lock of one device: an exclusive flock on
// a file named after the device, so every process that shares the lock
// directory sees the same single-owner rule the driver enforces.
type ctxLock struct {
	f *os.File
}

// lockPath names the lock file of the device with the given PCI address.
func lockPath(dir, pci string) string {
	return filepath.Join(dir, "dev-"+strings.ReplaceAll(pci, ":", "_")+".lock")
}

// acquireCtxLock takes the lock without waiting; a lock held elsewhere
// gives EBUSY, as a second compute open does on the driver.
func acquireCtxLock(path string) (*ctxLock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create lock directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, unix.EBUSY
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &ctxLock{f: f}, nil
}

// release drops the lock; closing the file releases the flock.
func (l *ctxLock) release() {
	if l != nil && l.f != nil {
		l.f.Close()
		l.f = nil
	}
}
