package memory

import (
	"errors"
	"fmt"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// ErrNotSupported reports a request the device's driver does not serve:
// importing a dma-buf needs Intel's out-of-tree habanalabs driver, built
// with dma-buf peer-to-peer support. It is ioctl.ErrNotSupported.
var ErrNotSupported = ioctl.ErrNotSupported

// Import maps length bytes of a dma-buf into the device: another Gaudi's
// memory exported with Buffer.Export (in this process, or received from
// another one through package ipc), or any dma-buf the driver can attach.
// The caller keeps fd; the driver takes its own reference to the buffer,
// so fd may be closed at once.
//
// The result is a HostBuffer whose device address this device's DMA
// engines use: the driver maps the dma-buf's pages into the device's host
// address range, which the engines reach over PCIe, as host memory.
// Typed copies take it where host memory goes: dma.Engine.CopyToDevice
// copies from it into a Buffer of this device, CopyToHost into it; that is
// a device-to-device copy between two Gaudis done by this device's
// engines. Its Bytes is nil: the CPU does not reach the memory through
// this mapping. Close unmaps it (UNMAP) and gives the driver's reference
// back; like every HostBuffer it defers that while a transfer holds it.
//
// The op is REG_DMABUF_FD of Intel's out-of-tree driver
// (map_device_va_from_dmabuf_fd in its common/memory.c). On the kernel's
// driver, which does not have it (EINVAL, an unknown op), and on an
// out-of-tree driver built without peer-to-peer support (EPERM), Import
// fails with an error matching ErrNotSupported; device.Device.DriverInfo
// tells the two drivers apart. Otherwise EBADF reports a descriptor that
// is not open, EINVAL one that is not a dma-buf or a dma-buf shorter than
// length, ENOMEM a host address range without room.
func (m *Manager) Import(fd int, length uint64) (*HostBuffer, error) {
	if length == 0 || length > 1<<46 {
		return nil, fmt.Errorf("import dma-buf: length %d: %w", length, ErrRange)
	}
	m.mu.RLock()
	closed := m.closed
	m.mu.RUnlock()
	if closed {
		return nil, m.errClosed("import dma-buf")
	}
	a := hl.MemRegDmabufFDArgs{Op: hl.HL_MEM_OP_REG_DMABUF_FD, FD: uint64(int64(fd)), Length: length}
	if err := m.io.RegDMABufFD(&a); err != nil {
		return nil, m.importError(err)
	}
	h := &HostBuffer{m: m, va: a.Out().DeviceVirtAddr(), size: length, imported: true}
	m.mu.Lock()
	ok := !m.closed && m.hostVA.insert(h.va, h.va+h.size, h)
	m.mu.Unlock()
	if !ok {
		err := fmt.Errorf("import dma-buf at %#x: the range is already mapped, or the manager closed", h.va)
		return nil, errors.Join(err, h.unmap())
	}
	return h, nil
}

// importError says why REG_DMABUF_FD failed: the kernel's driver refuses
// the unknown op with EINVAL, which on the out-of-tree driver means bad
// arguments instead, so the driver is asked which it is.
func (m *Manager) importError(err error) error {
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTTY) {
		if info, ierr := m.dev.DriverInfo(); ierr == nil && info.Driver == device.DriverUpstream {
			return fmt.Errorf("import dma-buf: the kernel's habanalabs driver cannot import dma-bufs (Intel's out-of-tree driver can): %w (%w)", ErrNotSupported, err)
		}
	}
	if errors.Is(err, unix.EPERM) {
		return fmt.Errorf("import dma-buf: the driver was built without dma-buf peer-to-peer support: %w", err)
	}
	return fmt.Errorf("import dma-buf: %w", err)
}

// Imported reports whether the mapping is a dma-buf from Import rather
// than host memory.
func (h *HostBuffer) Imported() bool { return h.imported }
