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
// args.SetPeriodMs, are the caller's. Because args holds out through a
// Pointer, out is allocated where it cannot move and stays alive for the
// call.
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
	args.ReturnPointer, args.ReturnSize = hl.SlicePointer(out), uint32(len(out))
	return issue(d, req, nrInfo, op, args)
}

// Debug issues DEBUG with args, pointing its input and output pointers and
// sizes at in and out (nil or empty for none). The sub-operation is args.Op.
// args holds in and out through Pointers for the call.
func (d *Device) Debug(args *hl.DebugArgs, in, out []byte) error {
	req, err := d.request(nrDebug, args.Op)
	if err != nil {
		return err
	}
	if uint64(len(in)) > math.MaxUint32 || uint64(len(out)) > math.MaxUint32 {
		return &Error{Op: opNames[nrDebug], Sub: subName(nrDebug, args.Op), Req: req, Errno: unix.EINVAL}
	}
	args.InputPtr, args.InputSize = hl.SlicePointer(in), uint32(len(in))
	args.OutputPtr, args.OutputSize = hl.SlicePointer(out), uint32(len(out))
	return issue(d, req, nrDebug, args.Op, args)
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
	if d.kf != nil {
		// Closed only by the Device's Close, which waits for the gate.
		return d.kf.ioctlOpen(req, arg)
	}
	return d.f.Ioctl(req, arg)
}

// attemptWait issues one WAIT_CS; it keeps wait.go free of unsafe.
func attemptWait[T waitArgs](d *Device, req uint, args *T) error {
	err := d.attempt(req, unsafe.Pointer(args))
	runtime.KeepAlive(args)
	return err
}

// waitView returns the integer view of a wait's arguments, through which
// the wait loop reads the flags and the answer and sets the timeouts. Those
// members are integers in every view; the user address is not touched.
func waitView[T waitArgs](args *T) *hl.WaitCSArgs { return (*hl.WaitCSArgs)(unsafe.Pointer(args)) }

// NIC issues the out-of-tree driver's NIC ioctl with args, pointing its
// input and output pointers and sizes at in and out (nil or empty for
// none). The sub-operation is args.Op. The driver copies in before it acts
// and out before it returns, so both only need to live for the call, which
// the Pointers in args ensure.
//
// The ioctl exists only with the accel (DRM) numbering; on a legacy node,
// and on an upstream driver, it fails with ENOTTY, which matches
// ErrNotSupported. The out-of-tree driver answers EBUSY for a device that
// is not operational, EINVAL for an op it does not serve, and EFAULT when
// the device's NIC is not initialized (no ports).
func (d *Device) NIC(args *hl.NICArgs, in, out []byte) error {
	req, err := d.request(nrNIC, args.Op)
	if err != nil {
		return err
	}
	if uint64(len(in)) > math.MaxUint32 || uint64(len(out)) > math.MaxUint32 {
		return &Error{Op: opNames[nrNIC], Sub: subName(nrNIC, args.Op), Req: req, Errno: unix.EINVAL}
	}
	args.InputPtr, args.InputSize = hl.SlicePointer(in), uint32(len(in))
	args.OutputPtr, args.OutputSize = hl.SlicePointer(out), uint32(len(out))
	return issue(d, req, nrNIC, args.Op, args)
}
