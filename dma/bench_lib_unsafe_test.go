package dma

import (
	"context"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// instantFile is a simulated device whose CSs complete the moment they are
// submitted, without running: CS answers the next sequence number and
// WAIT_CS answers COMPLETED; everything else (INFO, MEMORY, CB, mmap) is
// the simulator's. A benchmark on it measures the library's cost of a
// copy: validation, holds, encoding, the CS and the wait.
type instantFile struct {
	ioctl.File
	seq atomic.Uint64
	// syscall makes every CS and WAIT_CS first issue one real cheap system
	// call (getppid) through the runtime's ordinary entry, as a kernel
	// ioctl would, for BenchmarkPreparedRunVsC.
	syscall bool
	// rawCS issues CS's system call through the raw entry
	// (unix.RawSyscall, no scheduler hand-off); WAIT_CS keeps the
	// ordinary one.
	rawCS bool
}

func (f *instantFile) Ioctl(req uint, arg unsafe.Pointer) error {
	if f.syscall && (req == uint(hl.DRM_IOCTL_HL_CS) || req == uint(hl.DRM_IOCTL_HL_WAIT_CS)) {
		if f.rawCS && req == uint(hl.DRM_IOCTL_HL_CS) {
			unix.RawSyscall(unix.SYS_GETPPID, 0, 0, 0)
		} else {
			unix.Syscall(unix.SYS_GETPPID, 0, 0, 0)
		}
	}
	switch req {
	case uint(hl.DRM_IOCTL_HL_CS):
		a := (*hl.CSArgs)(arg)
		*a = hl.CSArgs{}
		a.Out().SetSeq(f.seq.Add(1))
		return nil
	case uint(hl.DRM_IOCTL_HL_WAIT_CS):
		a := (*hl.WaitCSArgs)(arg)
		*a = hl.WaitCSArgs{}
		a.Out().Status = hl.HL_WAIT_CS_STATUS_COMPLETED
		return nil
	}
	return f.File.Ioctl(req, arg)
}

// instantRig returns an Engine over an instantFile of a simulated Gaudi2.
func instantRig(b *testing.B) (*memory.Manager, *Engine) {
	return instantRigOn(b, &instantFile{})
}

// instantRigOn is instantRig over f, whose File it sets to the simulator's.
func instantRigOn(b *testing.B, f *instantFile) (*memory.Manager, *Engine) {
	cfg := sim.Default(sim.Gaudi2, 1)
	cfg.LockDir = b.TempDir()
	cfg.Strict = sim.StrictOff // what programs run
	s, err := sim.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	sf, err := s.Device(0).Open()
	if err != nil {
		b.Fatal(err)
	}
	f.File = sf
	d, err := device.FromFile(f, device.FileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		b.Fatal(err)
	}
	e, err := New(m, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		e.Close()
		m.Close()
		d.Close()
		s.Close()
	})
	return m, e
}

// BenchmarkCopy4KiBLibrary is a 4 KiB host-to-device copy between typed
// ranges on a device whose CSs complete at once: the library's cost and
// allocations per copy, without the simulator's execution.
func BenchmarkCopy4KiBLibrary(b *testing.B) {
	m, e := instantRig(b)
	dst, src := copyRanges(b, m)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := e.CopyToDevice(ctx, dst, src); err != nil {
			b.Fatal(err)
		}
	}
}

// copyRanges allocates 4 KiB of device memory and 4 KiB of host memory and
// returns them as the ranges of a copy.
func copyRanges(b *testing.B, m *memory.Manager) (memory.DeviceRange, memory.HostRange) {
	h, err := m.AllocHost(4096, memory.HostOptions{})
	if err != nil {
		b.Fatal(err)
	}
	buf, err := m.Alloc(4096, memory.AllocOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return buf.Range(0, 4096), h.Range(0, 4096)
}
