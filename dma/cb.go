package dma

import (
	"errors"
	"fmt"
	"sync"

	"github.com/gaudi-go/gaudi/internal/memlink"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// cbSize is the size of pooled command buffers: room for 2,700 LIN_DMA
// packets. Larger batches take a buffer of their own, up to HL_MAX_CB_SIZE.
const cbSize = 64 << 10

// cmdBuf is one command buffer: memory the CPU writes packets into and the
// value a CS chunk names it by.
type cmdBuf struct {
	mem    []byte
	handle uint64 // what a chunk names: kernel CB handle (Gaudi) or device VA (Gaudi2)
	pooled bool
	// Kernel CBs own their mapping; user CBs are carved from a slab.
	kernel bool
	cb     uint64 // the kernel CB handle, for DESTROY
}

// cbPool hands out command buffers and takes them back. Safe for
// concurrent use.
type cbPool struct {
	io     *ioctl.Device
	mem    *memory.Manager
	user   bool // chunks name CBs by device VA (Gaudi2)
	mapped bool // with user: kernel CBs mapped into the device MMU, not host slabs

	mu    sync.Mutex
	free  []*cmdBuf
	slabs []*memory.HostBuffer
	all   []*cmdBuf // every kernel CB, for close

	errMu    sync.Mutex
	reported []error // release errors no call could return, for close
}

func newCBPool(io *ioctl.Device, mem *memory.Manager, user, mapped bool) *cbPool {
	return &cbPool{io: io, mem: mem, user: user, mapped: user && mapped}
}

// get returns a buffer of at least n bytes.
func (p *cbPool) get(n int) (*cmdBuf, error) {
	if n > hl.HL_MAX_CB_SIZE {
		return nil, fmt.Errorf("command buffer of %d bytes exceeds HL_MAX_CB_SIZE: %w", n, ErrTooLarge)
	}
	if n <= cbSize {
		p.mu.Lock()
		if k := len(p.free); k > 0 {
			cb := p.free[k-1]
			p.free = p.free[:k-1]
			p.mu.Unlock()
			return cb, nil
		}
		p.mu.Unlock()
		if p.user && !p.mapped {
			if err := p.growSlab(); err != nil {
				return nil, err
			}
			return p.get(n)
		}
		cb, err := p.newKernelCB(cbSize)
		if err != nil {
			return nil, err
		}
		cb.pooled = true
		return cb, nil
	}
	if p.user && !p.mapped {
		h, err := p.allocSlab(uint64(n))
		if err != nil {
			return nil, fmt.Errorf("allocate command buffer: %w", err)
		}
		p.mu.Lock()
		p.slabs = append(p.slabs, h)
		p.mu.Unlock()
		return &cmdBuf{mem: h.Bytes(), handle: h.VA()}, nil
	}
	return p.newKernelCB(n)
}

// put returns a buffer. One-off kernel CBs are destroyed, and the error
// of that returned; one-off user CBs stay with their slab until the pool
// closes.
func (p *cbPool) put(cb *cmdBuf) error {
	if cb.pooled {
		p.mu.Lock()
		p.free = append(p.free, cb)
		p.mu.Unlock()
		return nil
	}
	if cb.kernel {
		return p.destroyKernelCB(cb)
	}
	return nil
}

// report keeps the error of a release that no call can return (that of a
// transfer finishing on its own), for close.
func (p *cbPool) report(err error) {
	if err == nil {
		return
	}
	p.errMu.Lock()
	p.reported = append(p.reported, err)
	p.errMu.Unlock()
}

// growSlab maps 2 MiB of host memory and cuts it into pooled user CBs.
func (p *cbPool) growSlab() error {
	const slab = 2 << 20
	h, err := p.allocSlab(slab)
	if err != nil {
		return fmt.Errorf("allocate command buffers: %w", err)
	}
	mem := h.Bytes()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.slabs = append(p.slabs, h)
	for off := 0; off+cbSize <= len(mem); off += cbSize {
		p.free = append(p.free, &cmdBuf{mem: mem[off : off+cbSize : off+cbSize], handle: h.VA() + uint64(off), pooled: true})
	}
	return nil
}

// allocSlab maps host memory for user CBs and holds it, so that neither
// the Manager's Close nor anything else unmaps it under a queued CS that
// reads a command buffer in it: only the pool's close, after every CS
// ended, releases it.
func (p *cbPool) allocSlab(n uint64) (*memory.HostBuffer, error) {
	h, err := p.mem.AllocHost(n, memory.HostOptions{})
	if err != nil {
		return nil, err
	}
	if err := memlink.Hold(h); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// newKernelCB creates a CB with the driver and maps it for the CPU; for
// Gaudi2 (mapped) also into the device MMU, named by its device VA.
func (p *cbPool) newKernelCB(n int) (*cmdBuf, error) {
	var a hl.CBArgs
	in := a.In()
	in.Op = hl.HL_CB_OP_CREATE
	in.CBSize = uint32(n)
	if p.mapped {
		in.Flags = hl.HL_CB_FLAGS_MAP
	}
	if err := p.io.CB(&a); err != nil {
		return nil, fmt.Errorf("create command buffer: %w", err)
	}
	handle := a.Out().CBHandle()
	mem, err := p.io.Mmap(int64(handle), n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("map command buffer: %w", err), p.destroy(handle))
	}
	cb := &cmdBuf{mem: mem, handle: handle, kernel: true, cb: handle}
	if p.mapped {
		a = hl.CBArgs{}
		in := a.In()
		in.Op = hl.HL_CB_OP_INFO
		in.CBHandle = handle
		in.Flags = hl.HL_CB_FLAGS_GET_DEVICE_VA
		if err := p.io.CB(&a); err != nil {
			return nil, errors.Join(fmt.Errorf("get command buffer address: %w", err), p.unmap(mem), p.destroy(handle))
		}
		cb.handle = a.Out().DeviceVA()
	}
	p.mu.Lock()
	p.all = append(p.all, cb)
	p.mu.Unlock()
	return cb, nil
}

// destroyKernelCB unmaps and destroys a one-off kernel CB.
func (p *cbPool) destroyKernelCB(cb *cmdBuf) error {
	err := errors.Join(p.unmap(cb.mem), p.destroy(cb.cb))
	p.mu.Lock()
	for i, c := range p.all {
		if c == cb {
			p.all = append(p.all[:i], p.all[i+1:]...)
			break
		}
	}
	p.mu.Unlock()
	return err
}

// unmap removes the CPU mapping of a kernel CB.
func (p *cbPool) unmap(mem []byte) error {
	if err := p.io.Munmap(mem); err != nil {
		return fmt.Errorf("unmap command buffer: %w", err)
	}
	return nil
}

// destroy destroys the kernel CB with handle.
func (p *cbPool) destroy(handle uint64) error {
	if err := p.io.DestroyCB(handle); err != nil {
		return fmt.Errorf("destroy command buffer %#x: %w", handle, err)
	}
	return nil
}

// close releases every buffer and returns the errors of those releases
// and the ones reported before. The device must be done with every CS
// that used one.
func (p *cbPool) close() error {
	p.mu.Lock()
	all, slabs := p.all, p.slabs
	p.all, p.slabs, p.free = nil, nil, nil
	p.mu.Unlock()
	p.errMu.Lock()
	errs := p.reported
	p.reported = nil
	p.errMu.Unlock()
	for _, cb := range all {
		errs = append(errs, p.unmap(cb.mem), p.destroy(cb.cb))
	}
	for _, h := range slabs {
		// The pool holds its slabs (see newSlab): Close marks them, and the
		// Release of that hold unmaps them.
		if err := errors.Join(h.Close(), memlink.Release(h)); err != nil {
			errs = append(errs, fmt.Errorf("free command buffers: %w", err))
		}
	}
	return errors.Join(errs...)
}
