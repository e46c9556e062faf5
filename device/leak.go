package device

import (
	"runtime"

	"github.com/gaudi-go/gaudi/internal/leak"
)

// Leak describes an object of this module that the garbage collector
// found unreachable while it was still open: a Device, or a
// memory.Manager, memory.Buffer, memory.HostBuffer or memory.DMABuf,
// dropped without Close. What it owned is not released by the collection:
// it stays until the process exits (or, for device memory, until the
// Device's file closes). See SetLeakReporter.
type Leak struct {
	// Type is the object's Go type: "*device.Device", "*memory.Manager",
	// "*memory.Buffer", "*memory.HostBuffer" or "*memory.DMABuf".
	Type string
	// Device is the path of the device the object belongs to.
	Device string
	// VA is the device address of a buffer, a host mapping or a dma-buf;
	// 0 for a Device or a Manager.
	VA uint64
	// Host is the host address of a HostBuffer's memory; 0 otherwise.
	Host uintptr
	// Size is the length in bytes of a buffer, a host mapping or a
	// dma-buf; 0 for a Device or a Manager.
	Size uint64
	// FD is the descriptor number of a DMABuf (its *os.File's own
	// cleanup may have closed it by now); -1 otherwise.
	FD int

	pcs []uintptr
}

// Frames returns where the object was created: the call stack of the
// function that returned it (Open, Alloc, AllocHost, Export, ...),
// innermost first.
func (l Leak) Frames() *runtime.Frames { return runtime.CallersFrames(l.pcs) }

// String describes the leak on one line, followed by where the object was
// created, one frame a line; the default reporter prints it.
func (l Leak) String() string { return l.info().String() }

func (l Leak) info() leak.Info {
	return leak.Info{Type: l.Type, Device: l.Device, VA: l.VA, Host: l.Host, Size: l.Size, FD: l.FD, PCs: l.pcs}
}

// SetLeakReporter sets the function told about objects garbage-collected
// without Close: Devices, and the memory.Manager, memory.Buffer,
// memory.HostBuffer and memory.DMABuf objects built on them. The default,
// which nil restores, prints Leak.String to stderr.
//
// The report is a safety net, not a release: the library never closes,
// frees or unmaps anything when an object is collected, since the device
// may still be using it (a DMA into a buffer, a dma-buf an importer
// holds). Close every object. f runs on a goroutine of the runtime's
// cleanups (runtime.AddCleanup), possibly concurrently with itself; it
// must not block for long.
func SetLeakReporter(f func(Leak)) {
	if f == nil {
		leak.SetReporter(nil)
		return
	}
	leak.SetReporter(func(i leak.Info) {
		f(Leak{Type: i.Type, Device: i.Device, VA: i.VA, Host: i.Host, Size: i.Size, FD: i.FD, pcs: i.PCs})
	})
}
