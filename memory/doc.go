// Package memory manages the memory of an open Gaudi: device buffers (HBM),
// host memory mapped for the device's DMA engines, dma-buf exports of device
// memory, an address index, and a registration cache for host mappings.
//
// A Manager belongs to one compute node (device.Device). Device buffers
// come from Alloc: ALLOC then MAP on Gaudi2, whose device MMU maps DRAM at
// virtual addresses; on first-generation Gaudi the driver does not allocate
// DRAM, so the Manager keeps the free list and buffers are physical
// addresses. Host memory comes from AllocHost (page-aligned, outside the Go
// heap, huge pages on request) or from the caller through MapHost and
// MapHostCached; memory on the Go heap is refused, because the garbage
// collector may move it while a DMA engine writes it.
//
// # Importing device memory of another Gaudi
//
// Import maps a dma-buf (another Gaudi's Buffer.Export, from this process
// or, through package ipc, from another one) into the device's host
// address range, so this device's DMA engines copy to and from the other
// device's memory: typed copies take the import where host memory goes.
// It needs Intel's out-of-tree habanalabs driver (REG_DMABUF_FD); on the
// kernel's driver it fails with ErrNotSupported.
//
// # Lifetimes
//
// Every buffer and mapping has an idempotent Close. A device buffer is
// unmapped, then freed; it refuses to close (ErrInUse) while a dma-buf
// export of it is open, and both device buffers and host mappings defer
// their release while a transfer holds them (Hold/Release), so memory is
// never unmapped under a running DMA. Manager.Close releases whatever is
// left.
//
// No error of a release (UNMAP, FREE, munmap) is dropped. Close returns
// the errors of what it releases, joined with errors.Join; a release that a
// deferred Close leaves to the last Release is returned by that Release;
// and the mappings the registration cache evicts on its own are reported
// by Manager.Close. A call on a closed Manager or buffer fails with an
// error matching ErrClosed, which is os.ErrClosed.
//
// # Address lookup
//
// Manager.Lookup tells, in O(log n), which buffer or mapping covers an
// address: a device address of a buffer or of a host mapping, or a host
// pointer of mapped host memory. The dma package uses it to find the
// direction of a copy.
//
// # Memory maps
//
// LayoutOf returns what the driver fixes about a chip's memory without
// asking the device: the DRAM physical base and virtual range, the DRAM
// page sizes its MMU supports and which of them may be active at once
// (Layout.CheckPageSizes), the default allocation page size, the HBM the
// driver reserves (Layout.ReservedDRAM), and the host-memory ranges and
// their page sizes. Gaudi3 has such a table: its MMU, unlike Gaudi2's,
// takes several DRAM page sizes at once.
//
// All types are safe for concurrent use.
package memory
