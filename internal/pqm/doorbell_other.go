//go:build !amd64

package pqm

import "sync/atomic"

// storeDoorbell is never reached: Open refuses the PQM path here.
//
// On arm64 atomic.StoreUint32 is STLR, a store-release, while the kernel
// puts dma_wmb() (DMB OSHST, outer shareable) before the doorbell's
// writel (arch/arm64/include/asm/barrier.h, io.h). Whether a
// store-release orders normal memory writes before a Device-memory write
// as a PCIe device observes them is not something this package has
// reasoned out (it would need the barrier in assembly), so it does not
// ring a doorbell there.
func storeDoorbell(r *uint32, v uint32) { atomic.StoreUint32(r, v) }

// doorbellOrdered reports that storeDoorbell orders the ring before the
// doorbell on this architecture: not established here.
const doorbellOrdered = false
