package gaudi3

// QueueID is a Gaudi3 hardware queue id for command submission. The
// out-of-tree driver has no Gaudi3 queue enum in its uapi header; it
// defines the ids privately in drivers/accel/habanalabs/gaudi3/gaudi3.c (at
// 58be9646): a single queue, the device CPU's, which gaudi3_set_fixed_properties
// marks QUEUE_TYPE_CPU and driver_only. No user command buffer can be
// submitted through CS on Gaudi3: user DMA goes through the PDMA channels'
// queue managers (see the PQM packets of package packet).
type QueueID uint32

// The Gaudi3 queue ids (gaudi3.c).
const (
	GAUDI3_QUEUE_ID_CPU_PQ QueueID = 0
	GAUDI3_QUEUE_ID_SIZE   QueueID = 1
)

// QueueIDNames maps the queue ids to their names without the prefix.
var QueueIDNames = map[QueueID]string{
	GAUDI3_QUEUE_ID_CPU_PQ: "CPU_PQ",
}

// PLLIndex mirrors enum hl_gaudi3_pll_index of the out-of-tree uapi header:
// the index of HL_INFO_PLL_FREQUENCY on Gaudi3.
type PLLIndex uint32

// The Gaudi3 PLL indices.
const (
	HL_GAUDI3_CPU_PLL  PLLIndex = 0
	HL_GAUDI3_PCI_PLL  PLLIndex = 1
	HL_GAUDI3_HBM_PLL  PLLIndex = 2
	HL_GAUDI3_NIC_PLL  PLLIndex = 3
	HL_GAUDI3_DMA_PLL  PLLIndex = 4
	HL_GAUDI3_MESH_PLL PLLIndex = 5
	HL_GAUDI3_MME_PLL  PLLIndex = 6
	HL_GAUDI3_TPC_PLL  PLLIndex = 7
	HL_GAUDI3_VID_PLL  PLLIndex = 8
	HL_GAUDI3_D2D_PLL  PLLIndex = 9
	HL_GAUDI3_CS_PLL   PLLIndex = 10
	HL_GAUDI3_C2C_PLL  PLLIndex = 11
	HL_GAUDI3_NCH_PLL  PLLIndex = 12
	HL_GAUDI3_C2M_PLL  PLLIndex = 13
	HL_GAUDI3_PLL_MAX  PLLIndex = 14
)
