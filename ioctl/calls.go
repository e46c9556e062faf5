package ioctl

import (
	"runtime"

	"github.com/gaudi-go/gaudi/uapi/hl"
)

// CB issues CB (command buffer create, destroy or info) with args. The
// sub-operation is args.In().Op; on success the driver has replaced the input
// with the output, read through args.Out().
func (d *Device) CB(args *hl.CBArgs) error {
	code := args.In().Op
	req, err := d.request(nrCB, code)
	if err != nil {
		return err
	}
	return issue(d, req, nrCB, code, args)
}

// CS issues CS (command submission) with args and returns the driver's
// answer in args.Out(). The chunk arrays args points at are addresses stored
// as integers: pass them, or whatever holds them, in keep so that they stay
// alive for the whole call, and allocate them on the heap or in mapped
// memory, never in a variable the compiler may place on a goroutine stack.
// A busy submission queue is reported as EAGAIN and is not retried here.
func (d *Device) CS(args *hl.CSArgs, keep ...any) error {
	code := args.In().CSFlags
	req, err := d.request(nrCS, code)
	if err != nil {
		return err
	}
	err = issue(d, req, nrCS, code, args)
	runtime.KeepAlive(keep)
	return err
}

// Memory issues MEMORY with args; the sub-operation is args.In().Op. Memory
// that args refers to by address is kept alive for the call when it is passed
// in keep. A host buffer given to MAP stays pinned by the driver until UNMAP,
// so it must outlive the mapping, not just the call: use memory from mmap,
// which the garbage collector neither moves nor frees.
func (d *Device) Memory(args *hl.MemArgs, keep ...any) error {
	code := args.In().Op
	req, err := d.request(nrMemory, code)
	if err != nil {
		return err
	}
	err = issue(d, req, nrMemory, code, args)
	runtime.KeepAlive(keep)
	return err
}
