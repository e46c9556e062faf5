package ib

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/gaudi-go/gaudi/uapi/rdma"
	"golang.org/x/sys/unix"
)

// MR is a registered memory region: host memory (RegMR) or a range of a
// dma-buf (RegDMABufMR) that the NIC may access with the keys it was given.
// It belongs to its PD.
//
// An MR is safe for concurrent use. Close deregisters it; closing twice
// does nothing.
type MR struct {
	pd     *PD
	handle uint32
	lkey   uint32
	rkey   uint32
	iova   uint64
	length uint64
	access Access
	dmabuf bool

	mu     sync.Mutex
	closed bool
}

// Handle returns the kernel's handle of the region (per uverbs file).
func (mr *MR) Handle() uint32 { return mr.handle }

// LKey returns the local key, used in this side's work requests.
func (mr *MR) LKey() uint32 { return mr.lkey }

// RKey returns the remote key that peers use for RDMA READ and WRITE.
func (mr *MR) RKey() uint32 { return mr.rkey }

// IOVA returns the address at which the region starts in the NIC's view.
func (mr *MR) IOVA() uint64 { return mr.iova }

// Len returns the region's length in bytes.
func (mr *MR) Len() uint64 { return mr.length }

// Access returns the rights the region was registered with.
func (mr *MR) Access() Access { return mr.access }

// DMABuf reports whether the region was registered from a dma-buf.
func (mr *MR) DMABuf() bool { return mr.dmabuf }

// PD returns the protection domain the region belongs to.
func (mr *MR) PD() *PD { return mr.pd }

// RegMR registers length bytes of host memory at addr for the NIC, with
// the NIC's view of it starting at iova (usually addr itself). The memory
// must stay mapped, and must not be Go heap memory the runtime may move
// or free: use mmap'd memory (such as a memory.HostBuffer). The kernel
// pins the pages, within RLIMIT_MEMLOCK unless privileged.
//
// It issues the REG_MR command through INVOKE_WRITE (write(2) on legacy
// kernels).
func (pd *PD) RegMR(addr uintptr, length, iova uint64, access Access) (*MR, error) {
	if err := pd.use(opRegMR); err != nil {
		return nil, err
	}
	c := pd.c
	if length == 0 {
		return nil, &Error{Op: opRegMR, Device: c.dev.Name, Errno: unix.EINVAL}
	}
	// struct ib_uverbs_reg_mr: response@0, start@8, length@16, hca_va@24,
	// pd_handle@32, access_flags@36.
	core := make([]byte, 40)
	le := binary.LittleEndian
	le.PutUint64(core[8:], uint64(addr))
	le.PutUint64(core[16:], length)
	le.PutUint64(core[24:], iova)
	le.PutUint32(core[32:], pd.handle)
	le.PutUint32(core[36:], uint32(access))
	resp, _, err := c.invokeWrite(opRegMR, rdma.IB_USER_VERBS_CMD_REG_MR, core, 12, c.drv.regMRIn, c.drv.regMROutLen)
	if err != nil {
		return nil, err
	}
	mr := &MR{
		pd: pd, handle: le.Uint32(resp[0:]), lkey: le.Uint32(resp[4:]), rkey: le.Uint32(resp[8:]),
		iova: iova, length: length, access: access,
	}
	return pd.adopt(opRegMR, mr)
}

// RegBytes registers b (see RegMR) with the NIC's view starting at b's
// address. b must be mmap'd memory, not a Go heap slice.
func (pd *PD) RegBytes(b []byte, access Access) (*MR, error) {
	if len(b) == 0 {
		return nil, &Error{Op: opRegMR, Device: pd.c.dev.Name, Errno: unix.EINVAL}
	}
	a := uintptr(addrOf(b, 0))
	return pd.RegMR(a, uint64(len(b)), uint64(a), access)
}

// RegDMABufMR registers length bytes of the dma-buf fd, starting offset
// bytes into it, with the NIC's view starting at iova (for device memory:
// the device virtual address of the range). The kernel requires offset and
// iova to share their offset within a page, and access to be within
// AccessDMABufMask with AccessLocalWrite whenever a remote write or atomic
// right is asked for. fd may be closed after registration: the region
// keeps its own reference to the dma-buf.
//
// It issues UVERBS_METHOD_REG_DMABUF_MR (object MR, method 4). A NIC whose
// driver cannot register dma-bufs answers EOPNOTSUPP, which matches
// ErrDMABufNotSupported; a bad descriptor answers EBADF.
func (pd *PD) RegDMABufMR(fd int, offset, length, iova uint64, access Access) (*MR, error) {
	if err := pd.use(opRegDMABufMR); err != nil {
		return nil, err
	}
	c := pd.c
	if c.legacy {
		// No write() form exists; the kernel predates the method.
		return nil, &Error{Op: opRegDMABufMR, Device: c.dev.Name, Errno: unix.EPROTONOSUPPORT}
	}
	r := request{obj: uint16(rdma.UVERBS_OBJECT_MR), method: uint16(rdma.UVERBS_METHOD_REG_DMABUF_MR)}
	r.idrNew(uint16(rdma.UVERBS_ATTR_REG_DMABUF_MR_HANDLE))
	r.idr(uint16(rdma.UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE), pd.handle)
	r.inline(uint16(rdma.UVERBS_ATTR_REG_DMABUF_MR_OFFSET), 8, offset)
	r.inline(uint16(rdma.UVERBS_ATTR_REG_DMABUF_MR_LENGTH), 8, length)
	r.inline(uint16(rdma.UVERBS_ATTR_REG_DMABUF_MR_IOVA), 8, iova)
	// The descriptor is a PTR_IN of exactly 4 bytes, not an FD attribute.
	r.inline(uint16(rdma.UVERBS_ATTR_REG_DMABUF_MR_FD), 4, uint64(uint32(int32(fd))))
	r.inline(uint16(rdma.UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS), 4, uint64(access))
	r.ptrOut(uint16(rdma.UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY), 4)
	r.ptrOut(uint16(rdma.UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY), 4)
	if err := c.ioctl(opRegDMABufMR, &r); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	mr := &MR{
		pd: pd, handle: uint32(r.data(0)), lkey: le.Uint32(r.out(7)), rkey: le.Uint32(r.out(8)),
		iova: iova, length: length, access: access, dmabuf: true,
	}
	return pd.adopt(opRegDMABufMR, mr)
}

// adopt records a new region in its PD; if the PD closed meanwhile, the
// region is deregistered again and ErrClosed returned.
func (pd *PD) adopt(op string, mr *MR) (*MR, error) {
	if pd.track(mr) {
		return mr, nil
	}
	if err := mr.dereg(); err != nil {
		return nil, errors.Join(closedErr(op, pd.c.dev.Name), fmt.Errorf("deregister the new region: %w", err))
	}
	return nil, closedErr(op, pd.c.dev.Name)
}

// Close deregisters the region (MR_DESTROY, or DEREG_MR on legacy
// kernels).
func (mr *MR) Close() error {
	mr.mu.Lock()
	if mr.closed {
		mr.mu.Unlock()
		return nil
	}
	mr.closed = true
	mr.mu.Unlock()
	mr.pd.untrack(mr)
	c := mr.pd.c
	c.mu.Lock()
	gone := c.closed
	c.mu.Unlock()
	if gone {
		return nil
	}
	return mr.dereg()
}

// dereg tells the kernel to destroy the region.
func (mr *MR) dereg() error {
	c := mr.pd.c
	if c.legacy {
		core := binary.LittleEndian.AppendUint32(nil, mr.handle)
		_, _, err := c.invokeWrite(opDeregMR, rdma.IB_USER_VERBS_CMD_DEREG_MR, core, 0, nil, 0)
		return err
	}
	r := request{obj: uint16(rdma.UVERBS_OBJECT_MR), method: uint16(rdma.UVERBS_METHOD_MR_DESTROY)}
	r.idr(uint16(rdma.UVERBS_ATTR_DESTROY_MR_HANDLE), mr.handle)
	return c.ioctl(opDeregMR, &r)
}

// abandon marks the region closed without telling the kernel.
func (mr *MR) abandon() {
	mr.mu.Lock()
	mr.closed = true
	mr.mu.Unlock()
}
