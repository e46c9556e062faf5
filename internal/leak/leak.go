// Package leak is the module's safety net for objects that own kernel
// resources and were dropped without Close, and its record of the
// memory mappings the library makes, for the leak checks of the tests
// (internal/leakcheck).
//
// Track attaches a cleanup (runtime.AddCleanup) to an object that only
// reports: the object's Close stops it, and a report means the program
// lost an object it should have closed. The cleanup never releases
// anything itself: what the object owned may still be in use by the
// device (a DMA into a buffer, a dma-buf an importer holds), and the
// kernel releases it with the process or the compute file anyway.
// Package device exports the reporter (device.SetLeakReporter); this
// package prints to stderr until one is set.
//
// Mapped and Unmapped keep the mappings of device files (ioctl) and of
// anonymous host memory (memory) that are live, once Enable turned the
// record on: anonymous mappings cannot be told from the Go runtime's own
// in /proc/self/maps, so the tests ask the library instead.
package leak

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
)

// Info describes a tracked object: what it is and what it held. It must
// not refer to the object, or the object is never collected.
type Info struct {
	Type   string  // Go type, such as "*memory.Buffer"
	Device string  // the device's path
	VA     uint64  // device address, or 0
	Host   uintptr // host address, or 0
	Size   uint64  // bytes, or 0
	FD     int     // a descriptor the object owns, or -1
	PCs    []uintptr
}

// String describes the leak in one line, then where the object was
// created, one frame a line.
func (i Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "gaudi: %s garbage-collected without Close:", i.Type)
	if i.Device != "" {
		fmt.Fprintf(&b, " device %s", i.Device)
	}
	if i.VA != 0 {
		fmt.Fprintf(&b, " va %#x", i.VA)
	}
	if i.Host != 0 {
		fmt.Fprintf(&b, " host %#x", i.Host)
	}
	if i.Size != 0 {
		fmt.Fprintf(&b, " size %d", i.Size)
	}
	if i.FD >= 0 {
		fmt.Fprintf(&b, " fd %d", i.FD)
	}
	if len(i.PCs) > 0 {
		b.WriteString("; created at:")
		frames := runtime.CallersFrames(i.PCs)
		for {
			f, more := frames.Next()
			if f.Function != "" && f.Function != "runtime.goexit" {
				fmt.Fprintf(&b, "\n\t%s\n\t\t%s:%d", f.Function, f.File, f.Line)
			}
			if !more {
				break
			}
		}
	}
	return b.String()
}

// maxFrames bounds the creation stack a tracked object keeps.
const maxFrames = 16

// Track arranges for the reporter to be called with info when obj is
// garbage-collected, unless the returned Cleanup is stopped first (in
// obj's Close). info.PCs is set to the stack from Track's caller up,
// without its skip innermost frames.
func Track[T any](obj *T, info Info, skip int) runtime.Cleanup {
	var pcs [maxFrames]uintptr
	n := runtime.Callers(2+skip, pcs[:])
	info.PCs = append([]uintptr(nil), pcs[:n]...)
	return runtime.AddCleanup(obj, report, info)
}

var (
	reporter atomic.Pointer[func(Info)] // nil: print to stderr
	observer atomic.Pointer[func(Info)] // see SetObserver
	stderr   io.Writer                  = os.Stderr
)

// SetReporter makes f receive the reports of leaked objects, in place of
// the default that prints them to stderr; nil restores the default. f is
// called from a goroutine of the runtime's cleanups and must not block
// for long.
func SetReporter(f func(Info)) {
	if f == nil {
		reporter.Store(nil)
		return
	}
	reporter.Store(&f)
}

// SetObserver makes f see every report that the default reporter prints
// (none while a reporter set with SetReporter receives them), and returns
// a function that removes it. The leak checks of the tests use it, so a
// test that installs its own reporter to leak on purpose does not fail
// them.
func SetObserver(f func(Info)) (remove func()) {
	observer.Store(&f)
	return func() { observer.CompareAndSwap(&f, nil) }
}

func report(i Info) {
	if f := reporter.Load(); f != nil {
		(*f)(i)
		return
	}
	fmt.Fprintln(stderr, i.String())
	if f := observer.Load(); f != nil {
		(*f)(i)
	}
}

// Mapping is a live mapping the library made, in the record Enable turns
// on.
type Mapping struct {
	Start, End uintptr // [Start, End)
	What       string  // who mapped what, such as "AllocHost" or "mmap of /dev/accel/accel0 at offset 0x1000"
}

var (
	enabled  atomic.Bool
	mapMu    sync.Mutex
	mappings []Mapping // disjoint, in no order
)

// Enable turns the record of mappings on; it stays on. The tests'
// leakcheck calls it before the first test, so every mapping a test makes
// is recorded.
func Enable() { enabled.Store(true) }

// Recording reports whether Enable was called. Callers that describe a
// mapping with fmt call Mapped only when it is set, so the record costs
// nothing otherwise.
func Recording() bool { return enabled.Load() }

// Mapped records that mem, a mapping the library just made, is live,
// described by what. It replaces whatever the record held in that range
// (the kernel unmapped it when it mapped the new one). It does nothing
// before Enable.
func Mapped(mem []byte, what string) {
	if !enabled.Load() || len(mem) == 0 {
		return
	}
	start := addrOf(mem)
	mapMu.Lock()
	defer mapMu.Unlock()
	mappings = subtract(mappings, start, start+uintptr(len(mem)))
	mappings = append(mappings, Mapping{Start: start, End: start + uintptr(len(mem)), What: what})
}

// Unmapped removes mem from the record: whole mappings, or the parts of
// them it covers.
func Unmapped(mem []byte) {
	if !enabled.Load() || len(mem) == 0 {
		return
	}
	start := addrOf(mem)
	mapMu.Lock()
	defer mapMu.Unlock()
	mappings = subtract(mappings, start, start+uintptr(len(mem)))
}

// subtract removes [start, end) from ms, splitting mappings that straddle
// it.
func subtract(ms []Mapping, start, end uintptr) []Mapping {
	out := ms[:0]
	var tails []Mapping
	for _, m := range ms {
		if m.End <= start || m.Start >= end {
			out = append(out, m)
			continue
		}
		if m.Start < start {
			out = append(out, Mapping{Start: m.Start, End: start, What: m.What})
		}
		if m.End > end {
			tails = append(tails, Mapping{Start: end, End: m.End, What: m.What})
		}
	}
	return append(out, tails...)
}

// Mappings returns the live mappings of the record, in no order.
func Mappings() []Mapping {
	mapMu.Lock()
	defer mapMu.Unlock()
	return append([]Mapping(nil), mappings...)
}
