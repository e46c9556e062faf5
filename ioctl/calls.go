package ioctl

import (
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

// CS issues a CS that passes no user memory: a signal reservation or its
// release, a PCIe write flush, or a decoding test. The answer is in
// args.Out(). Submissions of chunk arrays go through CSChunks, engine
// commands through Engines and EngineCores. A busy submission queue is
// reported as EAGAIN and is not retried here.
func (d *Device) CS(args *hl.CSArgs) error {
	code := args.In().CSFlags
	req, err := d.request(nrCS, code)
	if err != nil {
		return err
	}
	return issue(d, req, nrCS, code, args)
}

// CSChunks issues CS for a submission of chunk arrays. The arrays are
// reached through args' Pointer fields, so they stay alive and in place for
// the whole call; the driver copies them before it returns. On success the
// driver has written its answer over the arguments: read it with
// args.Out(), and set the chunk Pointers again before reusing args. A busy
// submission queue is reported as EAGAIN and is not retried here.
func (d *Device) CSChunks(args *hl.CSChunksArgs) error {
	code := args.CSFlags
	req, err := d.request(nrCS, code)
	if err != nil {
		return err
	}
	return issue(d, req, nrCS, code, args)
}

// Memory issues MEMORY with args; the sub-operation is args.In().Op. It
// serves every operation that passes no user memory; MAP of host memory
// goes through MapHost.
func (d *Device) Memory(args *hl.MemArgs) error {
	code := args.In().Op
	req, err := d.request(nrMemory, code)
	if err != nil {
		return err
	}
	return issue(d, req, nrMemory, code, args)
}

// MapHost issues MEMORY MAP for host memory (args.Op is HL_MEM_OP_MAP and
// args.Flags has HL_MEM_USERPTR). The driver pins the pages args.HostVirtAddr
// names and the device uses them until UNMAP, long after this call: the
// memory must outlive the mapping, not just the call, so it is memory from
// mmap or memory its owner keeps referenced until UNMAP returned. The answer
// (the device address) is args.Out().DeviceVirtAddr().
func (d *Device) MapHost(args *hl.MemMapHostArgs) error {
	code := args.Op
	req, err := d.request(nrMemory, code)
	if err != nil {
		return err
	}
	return issue(d, req, nrMemory, code, args)
}

// RegDMABufFD issues MEMORY REG_DMABUF_FD, the out-of-tree driver's
// registration of a dma-buf by descriptor (args.Op is
// hl.HL_MEM_OP_REG_DMABUF_FD, args.FD and args.Length name the buffer).
// The driver attaches to the dma-buf, maps its pages into the device's host
// range and answers the device address in args.Out().DeviceVirtAddr(); a
// MEMORY UNMAP of that address releases it. The attachment holds the
// dma-buf, not the descriptor, so the descriptor may be closed afterwards.
//
// An upstream driver answers EINVAL (an unknown op); an out-of-tree driver
// built without peer-to-peer dma-buf support answers EPERM, which matches
// ErrNotSupported.
func (d *Device) RegDMABufFD(args *hl.MemRegDmabufFDArgs) error {
	code := args.Op
	req, err := d.request(nrMemory, code)
	if err != nil {
		return err
	}
	return issue(d, req, nrMemory, code, args)
}
