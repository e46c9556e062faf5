package pqm

import "sync/atomic"

// storeDoorbell writes MSQ_PI, the channel's doorbell, once the ring bytes
// before it are written.
//
// The kernel orders a ring before its doorbell with dma_wmb() then writel
// (Documentation/memory-barriers.txt, "Kernel I/O barrier effects"; the
// habanalabs driver's QMAN doorbells, hl_hw_queue.c ext_and_hw_queue_submit_bd,
// do the same). On amd64 dma_wmb() is a compiler barrier alone
// (arch/x86/include/asm/barrier.h: x86 keeps stores in order, and DMA is
// cache coherent), and writel is a plain store to the uncached register
// mapping. atomic.StoreUint32 is an XCHG there: a compiler barrier and a
// full fence, stronger than both. Other architectures are refused (see
// doorbell_other.go).
func storeDoorbell(r *uint32, v uint32) { atomic.StoreUint32(r, v) }

// doorbellOrdered reports that storeDoorbell orders the ring before the
// doorbell on this architecture.
const doorbellOrdered = true
