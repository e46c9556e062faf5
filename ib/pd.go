package ib

import (
	"encoding/binary"
	"errors"
	"sync"

	"github.com/gaudi-go/gaudi/uapi/rdma"
)

// PD is a protection domain: the scope in which memory regions and queue
// pairs may be used together. It belongs to its Context.
//
// A PD is safe for concurrent use. Close deregisters the memory regions
// still open in it, then deallocates it; closing twice does nothing.
type PD struct {
	c      *Context
	handle uint32

	mu     sync.Mutex
	closed bool
	mrs    map[*MR]struct{}
}

// AllocPD allocates a protection domain (the ALLOC_PD command, through
// the INVOKE_WRITE ioctl method or write(2) on legacy kernels).
func (c *Context) AllocPD() (*PD, error) {
	if err := c.use(opAllocPD); err != nil {
		return nil, err
	}
	core := make([]byte, 8) // response
	resp, _, err := c.invokeWrite(opAllocPD, rdma.IB_USER_VERBS_CMD_ALLOC_PD, core, 4, nil, c.drv.allocPDOutLen)
	if err != nil {
		return nil, err
	}
	pd := &PD{c: c, handle: binary.LittleEndian.Uint32(resp), mrs: map[*MR]struct{}{}}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, closedErr(opAllocPD, c.dev.Name)
	}
	c.pds[pd] = struct{}{}
	c.mu.Unlock()
	return pd, nil
}

// Handle returns the kernel's handle of the PD (per uverbs file).
func (pd *PD) Handle() uint32 { return pd.handle }

// Context returns the Context the PD belongs to.
func (pd *PD) Context() *Context { return pd.c }

// use marks the start of a call on the PD; it fails once closed.
func (pd *PD) use(op string) error {
	pd.mu.Lock()
	defer pd.mu.Unlock()
	if pd.closed {
		return closedErr(op, pd.c.dev.Name)
	}
	return nil
}

// track adds mr to the PD, or reports that the PD closed meanwhile.
func (pd *PD) track(mr *MR) bool {
	pd.mu.Lock()
	defer pd.mu.Unlock()
	if pd.closed {
		return false
	}
	pd.mrs[mr] = struct{}{}
	return true
}

func (pd *PD) untrack(mr *MR) {
	pd.mu.Lock()
	delete(pd.mrs, mr)
	pd.mu.Unlock()
}

// Close deregisters every memory region still open in the PD and
// deallocates it (PD_DESTROY, or DEALLOC_PD on legacy kernels). It returns
// the errors of both, joined.
func (pd *PD) Close() error {
	pd.mu.Lock()
	if pd.closed {
		pd.mu.Unlock()
		return nil
	}
	pd.closed = true
	mrs := pd.mrs
	pd.mrs = nil
	pd.mu.Unlock()
	var errs []error
	for mr := range mrs {
		errs = append(errs, mr.Close())
	}
	c := pd.c
	c.mu.Lock()
	gone := c.closed
	delete(c.pds, pd)
	c.mu.Unlock()
	if gone {
		return errors.Join(errs...)
	}
	var err error
	if c.legacy {
		core := binary.LittleEndian.AppendUint32(nil, pd.handle)
		_, _, err = c.invokeWrite(opDeallocPD, rdma.IB_USER_VERBS_CMD_DEALLOC_PD, core, 0, nil, 0)
	} else {
		r := request{obj: uint16(rdma.UVERBS_OBJECT_PD), method: uint16(rdma.UVERBS_METHOD_PD_DESTROY)}
		r.idr(uint16(rdma.UVERBS_ATTR_DESTROY_PD_HANDLE), pd.handle)
		err = c.ioctl(opDeallocPD, &r)
	}
	return errors.Join(append(errs, err)...)
}

// abandon marks the PD and its regions closed without telling the
// kernel; the Context's file is being closed, which destroys them.
func (pd *PD) abandon() {
	pd.mu.Lock()
	pd.closed = true
	mrs := pd.mrs
	pd.mrs = nil
	pd.mu.Unlock()
	for mr := range mrs {
		mr.abandon()
	}
}
