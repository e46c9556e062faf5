package device_test

import (
	"fmt"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// Queues and engines print as the driver names them, and know their ASIC.
func ExampleGaudi2Queue() {
	q := device.Gaudi2Queue(hl.GAUDI2_QUEUE_ID_DCORE0_EDMA_0_0)
	e := device.Gaudi2Engine(hl.GAUDI2_DCORE0_ENGINE_ID_EDMA_0)
	fmt.Println(q, q.ID(), q.ASIC())
	fmt.Println(e, e.ID(), e.ASIC())
	// Output:
	// DCORE0_EDMA_0_0 8 GAUDI2
	// DCORE0_EDMA_0 0 GAUDI2
}
