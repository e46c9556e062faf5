package sim

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestCBMmapKeepsFile follows the kernel's file release: a mapping of the
// compute file holds a reference to it (vma->vm_file), so closing the
// last descriptor while a CB is still mapped does not call the driver's
// release (hl_device_release, common/device.c); the compute context stays
// and a new open answers EBUSY (hl_device_open) until the munmap drops
// the last reference.
func TestCBMmapKeepsFile(t *testing.T) {
	for _, asic := range []ASIC{Gaudi2, Gaudi} {
		t.Run(asic.String(), func(t *testing.T) {
			_, d, f := openComputeMode(t, asic, StrictAuto)
			h, err := cbCreate(f, 4096, 0)
			if err != nil {
				t.Fatal(err)
			}
			m, err := f.Mmap(int64(h), 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
			if err != nil {
				t.Fatal(err)
			}
			m[0] = 1 // the mapping works after close too
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			m[1] = 2
			if g, err := d.Open(); err != unix.EBUSY {
				if err == nil {
					g.Close()
				}
				t.Fatalf("open with a CB still mapped after close: %v, want EBUSY", err)
			}
			if err := f.Munmap(m); err != nil {
				t.Fatalf("munmap after close: %v", err)
			}
			g, err := d.Open()
			if err != nil {
				t.Fatalf("open after the last munmap: %v", err)
			}
			g.Close()
		})
	}
}
