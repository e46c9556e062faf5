package dma

import (
	"fmt"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// Direction is where a copy moves bytes.
type Direction int

const (
	HostToDevice Direction = iota
	DeviceToHost
	DeviceToDevice
	HostToHost
)

// String returns "h2d", "d2h", "d2d" or "h2h".
func (d Direction) String() string {
	switch d {
	case HostToDevice:
		return "h2d"
	case DeviceToHost:
		return "d2h"
	case DeviceToDevice:
		return "d2d"
	case HostToHost:
		return "h2h"
	}
	return fmt.Sprintf("Direction(%d)", int(d))
}

// queueSet is the queues of one direction, used round robin.
type queueSet struct {
	ids []uint32
}

// queueTable holds the queues per direction for an ASIC.
type queueTable struct {
	byDir     [4]queueSet
	userCB    bool // chunks carry HL_CS_CHUNK_FLAGS_USER_ALLOC_CB (Gaudi2)
	maxStripe int
}

// queuesFor builds the queue table of a device. Gaudi uses its external
// PCI DMA queues for every direction, since only external jobs complete a
// CS there; Gaudi2 uses PDMA_0 for host to device, PDMA_1 for device to
// host, and the enabled EDMA engines for device to device.
// (Both PCI DMA engines can move data either way through the MMU; the split
// by direction follows hl-thunk's convention.)
func queuesFor(d *device.Device, streams int) (queueTable, error) {
	a := d.ASIC()
	var t queueTable
	take := func(base uint32, n int) []uint32 {
		var ids []uint32
		for i := 0; i < n; i++ {
			ids = append(ids, base+uint32(i))
		}
		return ids
	}
	streams = min(max(streams, 1), 4)
	switch {
	case a.IsGaudi():
		down := take(uint32(hl.GAUDI_QUEUE_ID_DMA_0_0), streams)
		up := take(uint32(hl.GAUDI_QUEUE_ID_DMA_1_0), streams)
		t.byDir[HostToDevice] = queueSet{down}
		t.byDir[DeviceToHost] = queueSet{up}
		t.byDir[DeviceToDevice] = queueSet{append(append([]uint32(nil), up...), down...)}
		t.byDir[HostToHost] = queueSet{down}
	case a.IsGaudi2():
		t.userCB = true
		// The driver enables only three PDMA streams for users:
		// PDMA_0_0 and PDMA_0_1, PDMA_1_0 (gaudi2_is_queue_enabled).
		t.byDir[HostToDevice] = queueSet{take(uint32(hl.GAUDI2_QUEUE_ID_PDMA_0_0), min(streams, 2))}
		// Device to host has one stream of its own; large reads are striped
		// onto PDMA_0_1 as well, since either engine moves data both ways.
		up := []uint32{uint32(hl.GAUDI2_QUEUE_ID_PDMA_1_0)}
		if streams > 1 {
			up = append(up, uint32(hl.GAUDI2_QUEUE_ID_PDMA_0_1))
		}
		t.byDir[DeviceToHost] = queueSet{up}
		t.byDir[HostToHost] = t.byDir[HostToDevice]
		// EDMA engines in the order of the enabled mask: dcore d, engine e
		// is bit 2d+e, and its first queue comes from the uapi table.
		edma := []uint32{
			uint32(hl.GAUDI2_QUEUE_ID_DCORE0_EDMA_0_0), uint32(hl.GAUDI2_QUEUE_ID_DCORE0_EDMA_1_0),
			uint32(hl.GAUDI2_QUEUE_ID_DCORE1_EDMA_0_0), uint32(hl.GAUDI2_QUEUE_ID_DCORE1_EDMA_1_0),
			uint32(hl.GAUDI2_QUEUE_ID_DCORE2_EDMA_0_0), uint32(hl.GAUDI2_QUEUE_ID_DCORE2_EDMA_1_0),
			uint32(hl.GAUDI2_QUEUE_ID_DCORE3_EDMA_0_0), uint32(hl.GAUDI2_QUEUE_ID_DCORE3_EDMA_1_0),
		}
		mask := d.HWIPInfo().EDMAMask
		var d2d []uint32
		for i, q := range edma {
			if mask&(1<<i) != 0 {
				d2d = append(d2d, q) // stream 0 of each engine: engines, not streams, add bandwidth
			}
		}
		if len(d2d) == 0 {
			d2d = t.byDir[DeviceToHost].ids
		}
		t.byDir[DeviceToDevice] = queueSet{d2d}
	default:
		return t, fmt.Errorf("dma: %v is not supported", a)
	}
	t.maxStripe = 8
	return t, nil
}
