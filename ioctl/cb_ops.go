package ioctl

import (
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// CreateCB creates a kernel command buffer of size bytes and returns its
// handle, which is also the offset to Mmap it at. With mapped set the
// driver also maps it into the device MMU (Gaudi2; CBDeviceVA then gives
// its device address). It replaces hlthunk_request_command_buffer and
// hlthunk_request_mapped_command_buffer.
func (d *Device) CreateCB(size uint32, mapped bool) (handle uint64, err error) {
	var a hl.CBArgs
	in := a.In()
	in.Op = hl.HL_CB_OP_CREATE
	in.CBSize = size
	if mapped {
		in.Flags = hl.HL_CB_FLAGS_MAP
	}
	if err := d.CB(&a); err != nil {
		return 0, err
	}
	return a.Out().CBHandle(), nil
}

// DestroyCB destroys the command buffer with handle; the driver frees it
// once no submission and no mapping use it any more. It replaces
// hlthunk_destroy_command_buffer.
func (d *Device) DestroyCB(handle uint64) error {
	var a hl.CBArgs
	a.In().Op = hl.HL_CB_OP_DESTROY
	a.In().CBHandle = handle
	return d.CB(&a)
}

// CBUsage returns how many submissions in flight use the command buffer
// with handle. It replaces hlthunk_get_cb_usage_count.
func (d *Device) CBUsage(handle uint64) (uint32, error) {
	var a hl.CBArgs
	a.In().Op = hl.HL_CB_OP_INFO
	a.In().CBHandle = handle
	if err := d.CB(&a); err != nil {
		return 0, err
	}
	return a.Out().UsageCnt(), nil
}

// CBDeviceVA returns the device address of a command buffer created with
// mapped set. It replaces hlthunk_get_mapped_cb_device_va_by_handle.
func (d *Device) CBDeviceVA(handle uint64) (uint64, error) {
	var a hl.CBArgs
	a.In().Op = hl.HL_CB_OP_INFO
	a.In().CBHandle = handle
	a.In().Flags = hl.HL_CB_FLAGS_GET_DEVICE_VA
	if err := d.CB(&a); err != nil {
		return 0, err
	}
	return a.Out().DeviceVA(), nil
}
