package gaudi3

import (
	"fmt"
	"math/bits"
	"regexp"
	"testing"
)

// TestEngineIDs checks the engine table for gaps and duplicates and pins
// the first id of every group of enum gaudi3_engine_id to the out-of-tree
// header (include/uapi/drm/habanalabs_accel.h at 1646573d).
func TestEngineIDs(t *testing.T) {
	if got, want := len(EngineIDNames), int(GAUDI3_ENGINE_ID_SIZE); got != want {
		t.Fatalf("%d engine names, want %d", got, want)
	}
	seen := map[string]EngineID{}
	name := regexp.MustCompile(`^(HDCORE[0-7]|DIE[01])_[A-Z0-9_]+$`)
	for id := range GAUDI3_ENGINE_ID_SIZE {
		n, ok := EngineIDNames[id]
		if !ok {
			t.Errorf("no name for engine %d", id)
			continue
		}
		if !name.MatchString(n) {
			t.Errorf("engine %d: odd name %q", id, n)
		}
		if prev, dup := seen[n]; dup {
			t.Errorf("engines %d and %d are both %s", prev, id, n)
		}
		seen[n] = id
	}
	anchors := []struct {
		id   EngineID
		want EngineID
		name string
	}{
		{GAUDI3_HDCORE0_ENGINE_ID_DEC_0, 0, "HDCORE0_DEC_0"},
		{GAUDI3_HDCORE7_ENGINE_ID_DEC_1, 15, "HDCORE7_DEC_1"},
		{GAUDI3_HDCORE1_ENGINE_ID_EDMA_0, 16, "HDCORE1_EDMA_0"},
		{GAUDI3_HDCORE6_ENGINE_ID_EDMA_1, 23, "HDCORE6_EDMA_1"},
		{GAUDI3_HDCORE0_ENGINE_ID_MME_0, 24, "HDCORE0_MME_0"},
		{GAUDI3_HDCORE0_ENGINE_ID_TPC_0, 32, "HDCORE0_TPC_0"},
		{GAUDI3_HDCORE7_ENGINE_ID_TPC_7, 95, "HDCORE7_TPC_7"},
		{GAUDI3_HDCORE0_ENGINE_ID_TPC_8, 96, "HDCORE0_TPC_8"},
		{GAUDI3_HDCORE7_ENGINE_ID_TPC_8, 99, "HDCORE7_TPC_8"},
		{GAUDI3_DIE0_ENGINE_ID_NIC_0, 100, "DIE0_NIC_0"},
		{GAUDI3_DIE1_ENGINE_ID_NIC_5, 111, "DIE1_NIC_5"},
		{GAUDI3_HDCORE1_ENGINE_ID_ROT_0, 112, "HDCORE1_ROT_0"},
		{GAUDI3_DIE0_ENGINE_ID_PDMA_0_CH_0, 120, "DIE0_PDMA_0_CH_0"},
		{GAUDI3_DIE1_ENGINE_ID_PDMA_1_CH_5, 143, "DIE1_PDMA_1_CH_5"},
		{GAUDI3_HDCORE0_ENGINE_ID_STLB, 144, "HDCORE0_STLB"},
		{GAUDI3_HDCORE0_ENGINE_ID_SM, 152, "HDCORE0_SM"},
		{GAUDI3_HDCORE0_ENGINE_ID_ARCF_0, 160, "HDCORE0_ARCF_0"},
		{GAUDI3_HDCORE7_ENGINE_ID_ARCF_1, 175, "HDCORE7_ARCF_1"},
		{GAUDI3_DIE0_ENGINE_ID_PCIE, 176, "DIE0_PCIE"},
		{GAUDI3_DIE0_ENGINE_ID_ETR_PSOC, 178, "DIE0_ETR_PSOC"},
		{GAUDI3_DIE1_ENGINE_ID_ETR_NIC, 181, "DIE1_ETR_NIC"},
		{GAUDI3_DIE0_ENGINE_ID_PDMA_0_DUP, 182, "DIE0_PDMA_0_DUP"},
		{GAUDI3_DIE1_ENGINE_ID_PDMA_1_DUP, 185, "DIE1_PDMA_1_DUP"},
		{GAUDI3_HDCORE0_ENGINE_ID_EDUP, 186, "HDCORE0_EDUP"},
		{GAUDI3_HDCORE7_ENGINE_ID_EDUP, 193, "HDCORE7_EDUP"},
		{GAUDI3_ENGINE_ID_SIZE, 194, ""},
	}
	for _, a := range anchors {
		if a.id != a.want {
			t.Errorf("%s = %d, want %d", a.name, a.id, a.want)
		}
		if a.name != "" && EngineIDNames[a.id] != a.name {
			t.Errorf("EngineIDNames[%d] = %q, want %q", a.id, EngineIDNames[a.id], a.name)
		}
	}
}

// TestPDMAChannels checks that bit i of pdma_user_owned_ch_mask names the
// engine gaudi3_pdma_map_lbw_blocks (hlthunk-enhanced tests/gaudi3) pairs
// with it: die i/12, group (i/6)%2, channel i%6.
func TestPDMAChannels(t *testing.T) {
	if NUM_OF_PDMA_CH != 24 || NUM_OF_PDMA_CH_PER_DIE != 12 || NUM_OF_PDMA_GRP != 4 {
		t.Fatalf("PDMA counts %d channels, %d per die, %d groups; want 24, 12, 4", NUM_OF_PDMA_CH, NUM_OF_PDMA_CH_PER_DIE, NUM_OF_PDMA_GRP)
	}
	for ch := range NUM_OF_PDMA_CH {
		want := fmt.Sprintf("DIE%d_PDMA_%d_CH_%d", ch/NUM_OF_PDMA_CH_PER_DIE, ch/NUM_OF_PDMA_CH_PER_GRP%NUM_OF_PDMA_GRP_PER_DIE, ch%NUM_OF_PDMA_CH_PER_GRP)
		if got := EngineIDNames[PDMAChannelEngine(ch)]; got != want {
			t.Errorf("channel %d is engine %s, want %s", ch, got, want)
		}
	}
	if got := EngineIDNames[PDMAChannelEngine(KDMA_CH_ID)]; got != "DIE1_PDMA_1_CH_5" {
		t.Errorf("KDMA channel is %s, want the last channel of die 1", got)
	}
}

// TestHWIPInfo pins the hw_ip_info facts and recomputes the derived ones
// with the driver's rules.
func TestHWIPInfo(t *testing.T) {
	for _, c := range []struct{ in, want uint64 }{
		{DefaultPDMAChMask, 0x7FFFFF},
		{DefaultBringUpPDMAChMask, 0xFFF},
		{0, 0},
		{1 << KDMA_CH_ID, 0},
		{^uint64(0), 0x7FFFFF},
	} {
		if got := PDMAUserOwned(c.in); got != c.want {
			t.Errorf("PDMAUserOwned(%#x) = %#x, want %#x", c.in, got, c.want)
		}
	}
	// enum gaudi3_irq_num: EQ, PF0, PF1, 16 decoders, the NIC ports, the
	// ETRs, then the user interrupts.
	first := 1 + 2 + NUMBER_OF_DEC + NIC_MAX_NUM_OF_PORTS + GAUDI3_NUM_ETR
	// gaudi3_validate_set_rotator_binning: per die, GENMASK(per_die-2, 0)
	// shifted to the die, and the module's rotator_mask.
	var rot uint32
	for die := range MAX_NUM_OF_DIES {
		rot |= (1<<(NUM_OF_ROTATOR_PER_DIE-1) - 1) << (die * NUM_OF_ROTATOR_PER_DIE)
	}
	rot &= 0xFF
	want := HWIPInfo{
		FirstAvailableInterruptID:     uint16(first),
		NumberOfUserInterrupts:        256,
		TPCInterruptID:                0xFFFF,
		DeviceMemAllocDefaultPageSize: 32 << 20,
		PDMAUserOwnedChMask:           0x7FFFFF,
		EDMAEnabledMask:               0xFF,
		MMEEnabledMask:                0xFF,
		SchedArcEnabledMask:           0xFFFF,
		RotatorEnabledMask:            rot,
	}
	if DefaultHWIPInfo != want {
		t.Errorf("DefaultHWIPInfo = %+v\nwant %+v", DefaultHWIPInfo, want)
	}
	if first != 71 || rot != 0x77 {
		t.Errorf("derived first user interrupt %d, rotator mask %#x; want 71, 0x77", first, rot)
	}
}

// TestAddressMap checks the address map's internal consistency and the
// DRAM page-size rules.
func TestAddressMap(t *testing.T) {
	if got := uint64(MAX_NUM_OF_DIES * NUM_HBM_PER_DIE * SINGLE_HBM_SIZE); got != 128<<30 {
		t.Errorf("HBM = %d GiB, want 128", got>>30)
	}
	if DRAM_PHYS_BASE+DRAM_MAX_SIZE != VA_HBM_SPACE_END {
		t.Errorf("DRAM physical range ends at %#x, the DRAM VA range at %#x", uint64(DRAM_PHYS_BASE+DRAM_MAX_SIZE), uint64(VA_HBM_SPACE_END))
	}
	if SRAM_BASE_ADDR+SRAM_SIZE != DRAM_PHYS_BASE {
		t.Errorf("SRAM ends at %#x, not at DRAM", uint64(SRAM_BASE_ADDR+SRAM_SIZE))
	}
	if VA_HOST_SPACE_HPAGE_START != 0xFFF0000000000000 || VA_HOST_SPACE_HPAGE_END != 0xFFF0800000000000 {
		t.Errorf("huge host range %#x-%#x", uint64(VA_HOST_SPACE_HPAGE_START), uint64(VA_HOST_SPACE_HPAGE_END))
	}
	if VA_HOST_SPACE_PAGE_END-VA_HOST_SPACE_PAGE_START != 128<<40 {
		t.Errorf("host range is %#x bytes, want 128 TiB", uint64(VA_HOST_SPACE_PAGE_END-VA_HOST_SPACE_PAGE_START))
	}
	for _, r := range [][2]uint64{
		{RESERVED_VA_RANGE_FOR_ARC_ON_HBM_START, RESERVED_VA_RANGE_FOR_ARC_ON_HBM_END},
	} {
		if r[0] < DRAM_PHYS_BASE || r[1] >= VA_HBM_SPACE_END {
			t.Errorf("ARC HBM range %#x-%#x outside DRAM", r[0], r[1])
		}
	}
	for _, r := range [][2]uint64{
		{RESERVED_VA_RANGE_FOR_ARC_ON_HOST_START, RESERVED_VA_RANGE_FOR_ARC_ON_HOST_END},
		{RESERVED_VA_RANGE_FOR_ARC_ON_HOST_HPAGE_START &^ VA_PMMU_HUGE_HINT_BIT, RESERVED_VA_RANGE_FOR_ARC_ON_HOST_HPAGE_END &^ VA_PMMU_HUGE_HINT_BIT},
	} {
		if r[0] < VA_HOST_SPACE_PAGE_START || r[1] >= VA_HOST_SPACE_PAGE_END {
			t.Errorf("ARC host range %#x-%#x outside the host range", r[0], r[1])
		}
	}
	// Every power of two in [32 MiB, 2 GiB] but 128 MiB.
	var want uint64
	for s := uint64(32 << 20); s <= 2<<30; s <<= 1 {
		if s != 128<<20 {
			want |= s
		}
	}
	if GAUDI3_HMMU_VALID_PAGES_MASK != want {
		t.Errorf("valid page mask %#x, want %#x", uint64(GAUDI3_HMMU_VALID_PAGES_MASK), want)
	}
	if n := bits.OnesCount64(GAUDI3_HMMU_VALID_SMALL_PAGES_MASK); n != 2 || GAUDI3_HMMU_VALID_SMALL_PAGES_MASK >= 128<<20 {
		t.Errorf("small pages %#x", uint64(GAUDI3_HMMU_VALID_SMALL_PAGES_MASK))
	}
	if GAUDI3_HMMU_MAX_SMALL_PAGES_NUM+GAUDI3_HMMU_MAX_LARGE_PAGES_NUM != HMMU_TLB_MAX_SUPPORTED_PAGE_TYPES {
		t.Error("small and large page limits do not add up to the active page types")
	}
	if DefaultAllocPageSize&GAUDI3_HMMU_VALID_PAGES_MASK == 0 {
		t.Error("default allocation page size is not a valid page size")
	}
	if reserved := FW_RESERVED_HBM_SIZE + HMMU_PAGE_TABLES_SIZE + MAX_NUM_OF_DIES*ETR_BUF_PER_DIE*ETR_BUF_SIZE; reserved != 165<<20 {
		t.Errorf("reserved HBM before rounding = %d MiB, want 165", reserved>>20)
	}
}

// TestOpcodes pins the packet opcodes to the specifications.
func TestOpcodes(t *testing.T) {
	qman := map[PacketID]uint32{
		PACKET_WREG_32: 1, PACKET_WREG_BULK: 2, PACKET_MSG_LONG: 3, PACKET_MSG_SHORT: 4, PACKET_MSG_PROT: 7,
		PACKET_FENCE: 8, PACKET_LIN_DMA: 9, PACKET_NOP: 0xA, PACKET_STOP: 0xB, PACKET_WAIT: 0xD,
		PACKET_LOAD_AND_EXE: 0xF, PACKET_WRITE_ARC_STREAM: 0x10, PACKET_WREG_64_SHORT: 0x12, PACKET_WREG_64_LONG: 0x13,
	}
	for id, v := range qman {
		if uint32(id) != v {
			t.Errorf("QMAN opcode %#x, want %#x", uint32(id), v)
		}
	}
	if len(qman) != 14 {
		t.Errorf("%d distinct QMAN opcodes, want 14", len(qman))
	}
	pqm := map[PQMPacketID]uint32{
		PQM_PACKET_WREG_32: 1, PQM_PACKET_WREG_BULK: 2, PQM_PACKET_MSG_LONG: 3, PQM_PACKET_MSG_SHORT: 4,
		PQM_PACKET_FENCE: 8, PQM_PACKET_LIN_PDMA: 9, PQM_PACKET_NOP: 0xA, PQM_PACKET_STOP: 0xB, PQM_PACKET_WAIT: 0xD,
		PQM_PACKET_WREG_64_SHORT: 0x12, PQM_PACKET_WREG_64_LONG: 0x13, PQM_PACKET_CH_WREG_32: 0x14,
		PQM_PACKET_CH_WREG_BULK: 0x15, PQM_PACKET_CH_WREG_64_SHORT: 0x16, PQM_PACKET_CH_WREG_64_LONG: 0x17,
	}
	for id, v := range pqm {
		if uint32(id) != v {
			t.Errorf("PQM opcode %#x, want %#x", uint32(id), v)
		}
	}
	if len(pqm) != 15 {
		t.Errorf("%d distinct PQM opcodes, want 15", len(pqm))
	}
}

// TestQueues pins the queue table: the CPU queue alone.
func TestQueues(t *testing.T) {
	if GAUDI3_QUEUE_ID_SIZE != 1 || GAUDI3_QUEUE_ID_CPU_PQ != 0 || len(QueueIDNames) != int(GAUDI3_QUEUE_ID_SIZE) {
		t.Errorf("queue table %v, size %d", QueueIDNames, GAUDI3_QUEUE_ID_SIZE)
	}
	if HL_GAUDI3_MME_PLL != 6 || HL_GAUDI3_C2M_PLL != 13 || HL_GAUDI3_PLL_MAX != 14 {
		t.Error("PLL indices moved")
	}
	if PCI_IDS_GAUDI3 != 0x1060 || PCI_IDS_GAUDI3_DIE1 != 0x1061 || PCI_IDS_GAUDI3_SINGLE_DIE != 0x1062 || PCI_IDS_GAUDI3_HL_338 != 0x1063 {
		t.Error("PCI ids moved")
	}
}
