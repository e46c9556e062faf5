package ioctl_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func TestKernelFileIoctlDevNull(t *testing.T) {
	f, err := ioctl.OpenFile("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := f.Name(); got != "/dev/null" {
		t.Errorf("Name() = %q, want /dev/null", got)
	}
	var args hl.InfoArgs
	err = f.Ioctl(hl.DRM_IOCTL_HL_INFO, unsafe.Pointer(&args))
	if !errors.Is(err, unix.ENOTTY) {
		t.Errorf("Ioctl() = %v, want ENOTTY", err)
	}
	var errno unix.Errno
	if !errors.As(err, &errno) {
		t.Errorf("Ioctl() = %T, want a bare unix.Errno", err)
	}
}

func TestKernelFileClose(t *testing.T) {
	f, err := ioctl.OpenFile("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close() = %v, want nil", err)
	}
	var args hl.InfoArgs
	if err := f.Ioctl(hl.DRM_IOCTL_HL_INFO, unsafe.Pointer(&args)); !errors.Is(err, unix.EBADF) {
		t.Errorf("Ioctl after Close = %v, want EBADF", err)
	}
	if _, err := f.Mmap(0, 4096, unix.PROT_READ, unix.MAP_SHARED); !errors.Is(err, unix.EBADF) {
		t.Errorf("Mmap after Close = %v, want EBADF", err)
	}
}

func TestKernelFileMmapDevZero(t *testing.T) {
	f, err := ioctl.OpenFile("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const size = 2 * 4096
	b, err := f.Mmap(0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatalf("Mmap() = %v", err)
	}
	if diff := cmp.Diff(make([]byte, size), b); diff != "" {
		t.Errorf("mapping of /dev/zero is not zero (-want +got):\n%s", diff)
	}
	b[0], b[size-1] = 1, 2
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// The mapping outlives the descriptor.
	if b[0] != 1 || b[size-1] != 2 {
		t.Errorf("mapping lost its contents after Close")
	}
	if err := f.Munmap(b); err != nil {
		t.Errorf("Munmap() = %v", err)
	}
	if err := f.Munmap(b); !errors.Is(err, unix.EINVAL) {
		t.Errorf("second Munmap() = %v, want EINVAL", err)
	}
}

func TestOpenFileErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing")
	_, err := ioctl.OpenFile(path)
	if !errors.Is(err, unix.ENOENT) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenFile(missing) = %v, want ENOENT", err)
	}
	want := &ioctl.Error{Op: "OPEN", Sub: path, Errno: unix.ENOENT}
	var e *ioctl.Error
	if !errors.As(err, &e) {
		t.Fatalf("OpenFile(missing) = %T, want *ioctl.Error", err)
	}
	if diff := cmp.Diff(want, e, cmp.AllowUnexported(ioctl.Error{})); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}

func TestOpenDevNull(t *testing.T) {
	d, err := ioctl.Open("/dev/null")
	if err == nil {
		d.Close()
		t.Fatal("Open(/dev/null) succeeded, want the probe to fail")
	}
	if !errors.Is(err, ioctl.ErrNotSupported) || !errors.Is(err, unix.ENOTTY) {
		t.Errorf("Open(/dev/null) = %v, want ErrNotSupported and ENOTTY", err)
	}
	var e *ioctl.Error
	if !errors.As(err, &e) || e.Op != "INFO" || e.Sub != "HW_IP_INFO" || e.Req != hl.DRM_IOCTL_HL_INFO {
		t.Errorf("Open(/dev/null) = %#v, want the DRM INFO HW_IP_INFO probe error first", err)
	}
}

func TestDeviceMmapDevZero(t *testing.T) {
	f, err := ioctl.OpenFile("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	d := ioctl.New(f)
	defer d.Close()
	b, err := d.Mmap(0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatalf("Mmap() = %v", err)
	}
	b[10] = 7
	if err := d.Munmap(b); err != nil {
		t.Errorf("Munmap() = %v", err)
	}
	_, err = d.Mmap(0, 0, unix.PROT_READ, unix.MAP_PRIVATE)
	var e *ioctl.Error
	if !errors.As(err, &e) || e.Op != "MMAP" || !errors.Is(err, unix.EINVAL) {
		t.Errorf("Mmap(length 0) = %v, want an MMAP *Error matching EINVAL", err)
	}
	if err := d.Munmap(b); !errors.Is(err, unix.EINVAL) || err.Error() != "munmap: invalid argument" {
		t.Errorf("second Munmap() = %v, want munmap: invalid argument", err)
	}
}
