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
)

// instantFile is a simulated device whose CSs complete the moment they are
// submitted, without running: CS answers the next sequence number and
// WAIT_CS answers COMPLETED; everything else (INFO, MEMORY, CB, mmap) is
// the simulator's. A benchmark on it measures the library's cost of a
// copy: validation, holds, encoding, the CS and the wait.
type instantFile struct {
	ioctl.File
	seq atomic.Uint64
}

func (f *instantFile) Ioctl(req uint, arg unsafe.Pointer) error {
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
	d, err := device.FromFile(&instantFile{File: sf}, device.FileOptions{})
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
	h, err := m.AllocHost(4096, memory.HostOptions{})
	if err != nil {
		b.Fatal(err)
	}
	buf, err := m.Alloc(4096, memory.AllocOptions{})
	if err != nil {
		b.Fatal(err)
	}
	dst, src := buf.Range(0, 4096), h.Range(0, 4096)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := e.CopyToDevice(ctx, dst, src); err != nil {
			b.Fatal(err)
		}
	}
}
