package pqm

// MSIXDoorbell is mmD0_PCIE_MSIX_BASE, the absolute address of the PCIe
// MSI-X doorbell: an LBW write of an interrupt's number there raises that
// interrupt (hlthunk-enhanced's gaudi3 completion-queue setup and SCAL's
// DirectModePDMAStream::initChannelCQ point their completion writes at
// it). Inferred, not read: the die-1 doorbell mmD1_PCIE_MSIX_BASE is
// 0x0300007FFCC17000 in hlthunk-enhanced's
// include/specs/gaudi3/asic_reg/gaudi3_blocks.h, and every die-1 block is
// its die-0 twin plus 0x800000 (uapi/gaudi3.PDMA_DIE_OFFSET).
const MSIXDoorbell = 0x0300007FFCC17000 - 0x800000
