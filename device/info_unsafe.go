package device

import (
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/hl"
)

// infoStruct issues INFO op with a result of type T; set, when not nil,
// fills the op-specific union member of the arguments.
func infoStruct[T any](d *Device, op uint32, set func(*hl.InfoArgs)) (T, error) {
	var r T
	var a hl.InfoArgs
	if set != nil {
		set(&a)
	}
	out := unsafe.Slice((*byte)(unsafe.Pointer(&r)), unsafe.Sizeof(r))
	err := d.io.Info(op, &a, out)
	return r, err
}

// infoSlice issues INFO op with a result array of T.
func (d *Device) infoSlice(op uint32, set func(*hl.InfoArgs), out []uint32) error {
	var a hl.InfoArgs
	if set != nil {
		set(&a)
	}
	return infoSliceArgs(d, op, &a, out)
}

// infoSliceArgs issues INFO op into a slice, keeping the arguments for the
// caller to read back.
func infoSliceArgs[T any](d *Device, op uint32, a *hl.InfoArgs, out []T) error {
	if len(out) == 0 {
		return d.io.Info(op, a, nil)
	}
	var zero T
	b := unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), uintptr(len(out))*unsafe.Sizeof(zero))
	return d.io.Info(op, a, b)
}

// infoInOut issues INFO op with v as both the input the driver reads
// from return_pointer and the result it writes there.
func infoInOut[T any](d *Device, op uint32, v *T) error {
	var a hl.InfoArgs
	return d.io.Info(op, &a, structBytes(v))
}

// structBytes views a struct as bytes.
func structBytes[T any](v *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
}
