package ioctl

import (
	"math"
	"runtime"
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Info issues INFO with opcode op (one of the hl.HL_INFO_* values). It sets
// args.Op, and points args.ReturnPointer and args.ReturnSize at out, which
// receives the answer; a nil or empty out sends a null pointer and size 0.
// Other fields, such as the union set with args.SetCtxID or
// args.SetPeriodMs, are the caller's. out is kept alive for the call, and
// must not live on a goroutine stack, which the call ensures by making out
// escape to the heap.
func (d *Device) Info(op uint32, args *hl.InfoArgs, out []byte) error {
	req, err := d.request(nrInfo, op)
	if err != nil {
		return err
	}
	return d.info(req, op, args, out)
}

// info is Info with an explicit request number, for the encoding probe.
func (d *Device) info(req uint, op uint32, args *hl.InfoArgs, out []byte) error {
	if uint64(len(out)) > math.MaxUint32 {
		return &Error{Op: opNames[nrInfo], Sub: subName(nrInfo, op), Req: req, Errno: unix.EINVAL}
	}
	args.Op = op
	args.ReturnPointer, args.ReturnSize = userBuffer(out)
	err := issue(d, req, nrInfo, op, args)
	runtime.KeepAlive(out)
	return err
}

// Debug issues DEBUG with args, pointing its input and output pointers and
// sizes at in and out (nil or empty for none). The sub-operation is args.Op.
// in and out are kept alive for the call and made to escape to the heap.
func (d *Device) Debug(args *hl.DebugArgs, in, out []byte) error {
	req, err := d.request(nrDebug, args.Op)
	if err != nil {
		return err
	}
	if uint64(len(in)) > math.MaxUint32 || uint64(len(out)) > math.MaxUint32 {
		return &Error{Op: opNames[nrDebug], Sub: subName(nrDebug, args.Op), Req: req, Errno: unix.EINVAL}
	}
	args.InputPtr, args.InputSize = userBuffer(in)
	args.OutputPtr, args.OutputSize = userBuffer(out)
	err = issue(d, req, nrDebug, args.Op, args)
	runtime.KeepAlive(in)
	runtime.KeepAlive(out)
	return err
}

// userBuffer returns the address and size the kernel should see for b.
// Because the address is stored as an integer, the garbage collector and
// the stack copier no longer know it refers to b; forceEscape makes sure b
// is on the heap, where it does not move, and the caller keeps it alive.
func userBuffer(b []byte) (uint64, uint32) {
	if len(b) == 0 {
		return 0, 0
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	forceEscape(p)
	return uint64(uintptr(p)), uint32(len(b))
}

// escapeSink is never written. forceEscape's store into it is enough for the
// compiler to allocate what p points to on the heap.
var escapeSink struct {
	enabled bool
	p       unsafe.Pointer
}

// forceEscape makes p escape without any run-time cost but a load.
func forceEscape(p unsafe.Pointer) {
	if escapeSink.enabled {
		escapeSink.p = p
	}
}

// issue issues request req of ioctl nr with args until it is not interrupted.
// Before each retry args is restored to what the caller passed, since the
// driver may have written to it. code names the sub-operation in errors.
func issue[T any](d *Device, req uint, nr int, code uint32, args *T) error {
	saved := *args
	for {
		err := d.attempt(req, unsafe.Pointer(args))
		runtime.KeepAlive(args)
		if err == nil {
			return nil
		}
		if !isEINTR(err) {
			return wrapErr(opNames[nr], subName(nr, code), req, err)
		}
		*args = saved
	}
}

// attempt issues one ioctl unless the Device is closed, in which case it
// returns errDeviceClosed, which wrapErr reports as ErrClosed.
func (d *Device) attempt(req uint, arg unsafe.Pointer) error {
	if !d.acquire() {
		return errDeviceClosed
	}
	defer d.release()
	return d.f.Ioctl(req, arg)
}

// attemptWait issues one WAIT_CS; it keeps wait.go free of unsafe.
func (d *Device) attemptWait(req uint, args *hl.WaitCSArgs) error {
	err := d.attempt(req, unsafe.Pointer(args))
	runtime.KeepAlive(args)
	return err
}
