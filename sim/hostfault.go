package sim

import (
	"runtime"
	"runtime/debug"
	"unsafe"
)

// DMA into host memory the caller unmapped after MAP (HL_MEM_USERPTR).
//
// The driver pins the pages of a host mapping (hl_pin_host_memory), so
// they outlive the caller's munmap: the device goes on reading and writing
// the orphaned pages, and nobody sees it. The simulator does not pin: it
// reaches host memory through the caller's addresses. An access to
// memory that is no longer mapped faults; the engines run their copies
// with runtime/debug.SetPanicOnFault, so such a fault becomes an error
// instead of killing the process, and the access is done again page by
// page: pages that are gone are not touched (reads of them give zeros,
// writes to them are dropped) and are counted (Device.HostFaults); the
// rest of the transfer and the CS go on, as on the device. A fault
// anywhere else (the simulator's own memory) still panics.
//
// What the simulator cannot see is a range that was unmapped and then
// mapped again for something else: the device would write the orphaned
// pages, the simulator writes the new mapping.

// HostFaults counts DMA that reached host memory the caller had unmapped
// after mapping it into the device (see Device.HostFaults).
type HostFaults struct {
	Count uint64 // page-sized accesses that found the memory gone
	Bytes uint64 // bytes those accesses would have moved
	Addr  uint64 // device address of the latest one
}

// HostFaults reports the DMA that reached host memory the caller unmapped
// after MAP: the driver keeps such pages pinned and the device silently
// goes on using them; the simulator skips them (reads give zeros, writes
// are dropped) and counts them here. No event is raised, as on the device.
func (d *Device) HostFaults() HostFaults {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.hostFaults
}

// hostFault counts an access of n bytes at device address va that found
// host memory gone.
func (d *Device) hostFault(va, n uint64) {
	d.mu.Lock()
	d.hostFaults.Count++
	d.hostFaults.Bytes += n
	d.hostFaults.Addr = va
	d.mu.Unlock()
}

// hostFault counts an access of the job's that found host memory gone,
// and reports it in strict mode.
func (x *execEnv) hostFault(va, n uint64) {
	x.hw.d.hostFault(va, n)
	x.strictHostGone(va, n)
}

// faultScope is the caller's memory an access under way touches: the
// host mapping parts of its source and destination.
type faultScope struct {
	src, dst []byte
}

// set records the user parts of an access of n bytes from s to d.
func (f *faultScope) set(s, d seg, n uint64) {
	f.src, f.dst = nil, nil
	if s.user {
		f.src = s.b[:n]
	}
	if d.user {
		f.dst = d.b[:n]
	}
}

func within(b []byte, addr uintptr) bool {
	if len(b) == 0 {
		return false
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return addr >= lo && addr-lo < uintptr(len(b))
}

// hostGone is the error of an access that faulted on the caller's memory:
// src tells whether it was the source's.
type hostGone struct {
	src bool
}

func (e *hostGone) Error() string { return "host memory of a mapping is gone" }

// guard runs fn, one access, with faults on the caller's memory turned
// into a *hostGone error. The access's locks are released by their
// defers as the fault unwinds.
func (x *execEnv) guard(fn func() error) (err error) {
	x.scope = faultScope{}
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		r := recover()
		if r == nil {
			return
		}
		a, ok := r.(interface{ Addr() uintptr })
		if _, isRT := r.(runtime.Error); !ok || !isRT {
			panic(r)
		}
		addr := a.Addr()
		switch {
		case within(x.scope.src, addr):
			err = &hostGone{src: true}
		case within(x.scope.dst, addr):
			err = &hostGone{}
		default:
			panic(r) // not the caller's memory: a bug of the simulator
		}
		x.scope = faultScope{}
	}()
	return fn()
}

// pageRun returns how many of n bytes from a up to the next host page
// boundary of a and of b (device addresses keep the host addresses'
// in-page offsets).
func pageRun(n, a, b uint64) uint64 {
	return min(n, pageSize-a%pageSize, pageSize-b%pageSize)
}

// copyAround is copy for a part that faulted: page by page, with the
// destination zeroed where the source is gone and nothing written where
// the destination is.
func (x *execEnv) copyAround(dst, src, n, width uint64) error {
	for off := uint64(0); off < n; {
		p := pageRun(n-off, dst+off, src+off)
		if width != 0 && p >= width {
			p = p / width * width
		}
		k, host := p, [2]bool{}
		err := x.guard(func() error { return x.copyOnce(dst+off, src+off, p, width, &k, &host) })
		if gone, ok := err.(*hostGone); ok {
			err = nil
			if gone.src {
				x.hostFault(src+off, k)
				var m uint64
				var h bool
				e := x.guard(func() error { return x.fillOnce(dst+off, k, [8]byte{}, 0, &m, &h) })
				if _, ok := e.(*hostGone); ok {
					x.hostFault(dst+off, k)
				} else {
					err = e
				}
			} else {
				x.hostFault(dst+off, k)
			}
		}
		if err != nil {
			return err
		}
		off += k
	}
	return nil
}

// fillAround is fill for a part that faulted: pages that are gone are
// skipped.
func (x *execEnv) fillAround(dst, n uint64, pat [8]byte, phase uint64) error {
	for off := uint64(0); off < n; {
		p := pageRun(n-off, dst+off, dst+off)
		k, host := p, false
		err := x.guard(func() error { return x.fillOnce(dst+off, p, pat, (phase+off)%8, &k, &host) })
		if _, ok := err.(*hostGone); ok {
			x.hostFault(dst+off, k)
			err = nil
		}
		if err != nil {
			return err
		}
		off += k
	}
	return nil
}

// storeAround is store for a part that faulted: bytes for pages that are
// gone are dropped.
func (x *execEnv) storeAround(dst uint64, b []byte) error {
	for off := uint64(0); off < uint64(len(b)); {
		p := pageRun(uint64(len(b))-off, dst+off, dst+off)
		k := p
		err := x.guard(func() error { return x.storeOnce(dst+off, b[off:off+p], &k) })
		if _, ok := err.(*hostGone); ok {
			x.hostFault(dst+off, k)
			err = nil
		}
		if err != nil {
			return err
		}
		off += k
	}
	return nil
}

// loadAround is load for a part that faulted: pages that are gone read
// as zeros.
func (x *execEnv) loadAround(src uint64, b []byte) error {
	for off := uint64(0); off < uint64(len(b)); {
		p := pageRun(uint64(len(b))-off, src+off, src+off)
		k := p
		err := x.guard(func() error { return x.loadOnce(src+off, b[off:off+p], &k) })
		if _, ok := err.(*hostGone); ok {
			x.hostFault(src+off, k)
			clear(b[off : off+k])
			err = nil
		}
		if err != nil {
			return err
		}
		off += k
	}
	return nil
}
