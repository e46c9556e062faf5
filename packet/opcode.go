package packet

import (
	g1 "github.com/gaudi-go/gaudi/uapi/gaudi"
	g2 "github.com/gaudi-go/gaudi/uapi/gaudi2"
	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
)

// Opcode is a packet's opcode (packet id): bits 28:24 of its control word.
type Opcode uint8

// The opcodes of enum packet_id. CB_LIST and the opcodes from 0x10 exist on
// Gaudi2 and the Gaudi3 formats only (see Format.Has); the CH_WREG opcodes
// from 0x14 in the Gaudi3PQM format only (enum pqm_packet_id of Habana's
// gaudi3_pqm_packets.h).
const (
	OpWReg32          = Opcode(g1.PACKET_WREG_32)
	OpWRegBulk        = Opcode(g1.PACKET_WREG_BULK)
	OpMsgLong         = Opcode(g1.PACKET_MSG_LONG)
	OpMsgShort        = Opcode(g1.PACKET_MSG_SHORT)
	OpCPDMA           = Opcode(g1.PACKET_CP_DMA)
	OpRepeat          = Opcode(g1.PACKET_REPEAT)
	OpMsgProt         = Opcode(g1.PACKET_MSG_PROT)
	OpFence           = Opcode(g1.PACKET_FENCE)
	OpLinDMA          = Opcode(g1.PACKET_LIN_DMA)
	OpNop             = Opcode(g1.PACKET_NOP)
	OpStop            = Opcode(g1.PACKET_STOP)
	OpArbPoint        = Opcode(g1.PACKET_ARB_POINT)
	OpWait            = Opcode(g1.PACKET_WAIT)
	OpCBList          = Opcode(g2.PACKET_CB_LIST)
	OpLoadAndExe      = Opcode(g1.PACKET_LOAD_AND_EXE)
	OpWriteArcStream  = Opcode(g2.PACKET_WRITE_ARC_STREAM)
	OpLastReadFromArc = Opcode(g2.PACKET_LAST_READ_FROM_ARC)
	OpWReg64Short     = Opcode(g2.PACKET_WREG_64_SHORT)
	OpWReg64Long      = Opcode(g2.PACKET_WREG_64_LONG)

	OpChWReg32      = Opcode(g3.PQM_PACKET_CH_WREG_32)
	OpChWRegBulk    = Opcode(g3.PQM_PACKET_CH_WREG_BULK)
	OpChWReg64Short = Opcode(g3.PQM_PACKET_CH_WREG_64_SHORT)
	OpChWReg64Long  = Opcode(g3.PQM_PACKET_CH_WREG_64_LONG)

	// OpLinPDMA is LIN_PDMA, opcode 9 of the Gaudi3PQM format: the value
	// of OpLinDMA under the PQM's name. Opcode.String, which knows no
	// format, calls it LIN_DMA.
	OpLinPDMA = Opcode(g3.PQM_PACKET_LIN_PDMA)
)

var opNames = [...]string{
	OpWReg32:          "WREG_32",
	OpWRegBulk:        "WREG_BULK",
	OpMsgLong:         "MSG_LONG",
	OpMsgShort:        "MSG_SHORT",
	OpCPDMA:           "CP_DMA",
	OpRepeat:          "REPEAT",
	OpMsgProt:         "MSG_PROT",
	OpFence:           "FENCE",
	OpLinDMA:          "LIN_DMA",
	OpNop:             "NOP",
	OpStop:            "STOP",
	OpArbPoint:        "ARB_POINT",
	OpWait:            "WAIT",
	OpCBList:          "CB_LIST",
	OpLoadAndExe:      "LOAD_AND_EXE",
	OpWriteArcStream:  "WRITE_ARC_STREAM",
	OpLastReadFromArc: "LAST_READ_FROM_ARC",
	OpWReg64Short:     "WREG_64_SHORT",
	OpWReg64Long:      "WREG_64_LONG",
	OpChWReg32:        "CH_WREG_32",
	OpChWRegBulk:      "CH_WREG_BULK",
	OpChWReg64Short:   "CH_WREG_64_SHORT",
	OpChWReg64Long:    "CH_WREG_64_LONG",
}

// String returns the driver's name of the opcode without the PACKET_
// prefix, such as "LIN_DMA", or "OPCODE_0x1f" for an undefined one.
func (op Opcode) String() string {
	if int(op) < len(opNames) && opNames[op] != "" {
		return opNames[op]
	}
	const hex = "0123456789abcdef"
	return "OPCODE_0x" + string([]byte{hex[op>>4], hex[op&0xf]})
}

// fixedLen is the size in bytes of each packet with a fixed size, from the
// driver's packet structures (gaudi_packet_sizes) and, for the Gaudi3
// formats, from Habana's specifications; 0 for the rest. The Gaudi3 FENCE,
// NOP, STOP, WAIT, MSG_* and WREG_* packets have the sizes of their Gaudi2
// namesakes; Gaudi3 LIN_DMA is 24 bytes, its src and dst split into low
// and high words.
var fixedLen = [...]uint8{
	OpWReg32:      8,
	OpMsgLong:     16,
	OpMsgShort:    8,
	OpCPDMA:       16,
	OpRepeat:      8,
	OpMsgProt:     16,
	OpFence:       8,
	OpLinDMA:      24,
	OpNop:         8,
	OpStop:        8,
	OpArbPoint:    8,
	OpWait:        8,
	OpCBList:      24,
	OpLoadAndExe:  16,
	OpWReg64Long:  16,
	OpWReg64Short: 8,

	OpChWReg32:      8,
	OpChWReg64Short: 8,
	OpChWReg64Long:  16,
}
