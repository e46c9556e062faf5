package gaudi3

// PacketID mirrors enum packet_id of Habana's Gaudi3 QMAN packet
// specification (gaudi3_packets.h, MIT; Intel_Gaudi3_Software
// specs_h9/gaudi3/gaudi3_packets.h at e6cef1c3, identical in hlthunk-enhanced
// include/specs/gaudi3/gaudi3_packets.h at cb46f4f1): the opcodes, ctl bits
// 28:24, of the queue managers the Gaudi3 engines (EDMA, MME, TPC, rotator)
// run behind the ARC schedulers.
type PacketID uint32

// The Gaudi3 QMAN packet opcodes. Gaudi3 drops Gaudi2's CP_DMA, REPEAT,
// ARB_POINT, CB_LIST and LAST_READ_FROM_ARC.
const (
	PACKET_WREG_32          PacketID = 0x1
	PACKET_WREG_BULK        PacketID = 0x2
	PACKET_MSG_LONG         PacketID = 0x3
	PACKET_MSG_SHORT        PacketID = 0x4
	PACKET_MSG_PROT         PacketID = 0x7
	PACKET_FENCE            PacketID = 0x8
	PACKET_LIN_DMA          PacketID = 0x9
	PACKET_NOP              PacketID = 0xA
	PACKET_STOP             PacketID = 0xB
	PACKET_WAIT             PacketID = 0xD
	PACKET_LOAD_AND_EXE     PacketID = 0xF
	PACKET_WRITE_ARC_STREAM PacketID = 0x10
	PACKET_WREG_64_SHORT    PacketID = 0x12
	PACKET_WREG_64_LONG     PacketID = 0x13
)

// PQMPacketID mirrors enum pqm_packet_id of Habana's Gaudi3 PQM packet
// specification (gaudi3_pqm_packets.h, MIT; Intel_Gaudi3_Software
// specs_h9/gaudi3/gaudi3_pqm_packets.h at e6cef1c3, which has the CH_WREG
// packets the hlthunk-enhanced copy at cb46f4f1 lacks): the opcodes of the
// queue managers of the PDMA channels, which a Gaudi3 user drives directly.
type PQMPacketID uint32

// The Gaudi3 PQM packet opcodes.
const (
	PQM_PACKET_WREG_32          PQMPacketID = 0x1
	PQM_PACKET_WREG_BULK        PQMPacketID = 0x2
	PQM_PACKET_MSG_LONG         PQMPacketID = 0x3
	PQM_PACKET_MSG_SHORT        PQMPacketID = 0x4
	PQM_PACKET_FENCE            PQMPacketID = 0x8
	PQM_PACKET_LIN_PDMA         PQMPacketID = 0x9
	PQM_PACKET_NOP              PQMPacketID = 0xA
	PQM_PACKET_STOP             PQMPacketID = 0xB
	PQM_PACKET_WAIT             PQMPacketID = 0xD
	PQM_PACKET_WREG_64_SHORT    PQMPacketID = 0x12
	PQM_PACKET_WREG_64_LONG     PQMPacketID = 0x13
	PQM_PACKET_CH_WREG_32       PQMPacketID = 0x14
	PQM_PACKET_CH_WREG_BULK     PQMPacketID = 0x15
	PQM_PACKET_CH_WREG_64_SHORT PQMPacketID = 0x16
	PQM_PACKET_CH_WREG_64_LONG  PQMPacketID = 0x17
)
