// Package packet encodes and decodes the queue packets that Gaudi, Gaudi2
// and Gaudi3 command buffers and queues are made of. It knows bytes, not
// devices: the dma package encodes with it, the simulator decodes and
// executes, and tools decode for people.
//
// # Formats
//
// A Format (Gaudi, Gaudi2, Gaudi3 or Gaudi3PQM) selects the opcodes and
// field layouts. Gaudi3 is the format of the queue managers that the
// Gaudi3 ARC schedulers feed; Gaudi3PQM that of the PDMA channels' queue
// managers, into whose message queues a Gaudi3 user writes directly. Every
// packet starts with a 32-bit payload word and a 32-bit control word (ctl),
// little endian; ctl bits 28:24 hold the opcode and bits 31:29 the barrier
// bits of Header (Gaudi3PQM: bit 29 alone). Sizes and types:
//
//	opcode  packet           bytes       Gaudi  Gaudi2  Gaudi3  PQM   type
//	0x01    WREG_32          8           yes    yes     yes     yes   WReg32
//	0x02    WREG_BULK        8+8*values  yes    yes     yes     yes   WRegBulk
//	0x03    MSG_LONG         16          yes    yes     yes     yes   MsgLong
//	0x04    MSG_SHORT        8           yes    yes     yes     yes   MsgShort
//	0x05    CP_DMA           16          yes    yes     -       -     CPDMA
//	0x06    REPEAT           8           yes    yes     -       -     Repeat
//	0x07    MSG_PROT         16          yes    yes     yes     -     MsgProt
//	0x08    FENCE            8           yes    yes     yes     yes   Fence; Gaudi3Fence
//	0x09    LIN_DMA          24          yes    yes     yes     -     LinDMA; Gaudi3LinDMA
//	0x09    LIN_PDMA         24/32/40    -      -       -       yes   LinPDMA
//	0x0a    NOP              8           yes    yes     yes     yes   Nop
//	0x0b    STOP             8           yes    yes     yes     yes   Stop
//	0x0c    ARB_POINT        8           yes    yes     -       -     ArbPoint
//	0x0d    WAIT             8           yes    yes     yes     yes   Wait
//	0x0e    CB_LIST          24          -      yes     -       -     CBList
//	0x0f    LOAD_AND_EXE     16          yes    yes     yes     -     LoadAndExe
//	0x10    WRITE_ARC_STREAM             -      yes     yes     -     (not decoded)
//	0x11    LAST_READ_FROM_ARC           -      yes     -       -     (not decoded)
//	0x12    WREG_64_SHORT    8           -      yes     yes     yes   WReg64Short (Gaudi3 formats)
//	0x13    WREG_64_LONG     16          -      yes     yes     yes   WReg64Long (Gaudi3 formats)
//	0x14    CH_WREG_32       8           -      -       -       yes   ChWReg32
//	0x15    CH_WREG_BULK     8+8*values  -      -       -       yes   ChWRegBulk
//	0x16    CH_WREG_64_SHORT 8           -      -       -       yes   ChWReg64Short
//	0x17    CH_WREG_64_LONG  16          -      -       -       yes   ChWReg64Long
//
// # Where the bit positions come from
//
// Each type's documentation marks its fields K when the kernel's packet
// header (drivers/accel/habanalabs/include/gaudi{,2}/*_packets.h) defines
// the shift and mask, T when only hl-thunk's packet headers (Habana's
// MIT-licensed user library) name the bits, and S for the Gaudi3 formats,
// which no kernel header describes: Habana's MIT-licensed Gaudi3
// specifications gaudi3_packets.h and gaudi3_pqm_packets.h (the copies in
// HabanaAI/Intel_Gaudi3_Software specs_h9/gaudi3/ at e6cef1c3 and
// HenryTangIntel/hlthunk-enhanced include/specs/gaudi3/ at cb46f4f1), with
// the words after a LIN_DMA or LIN_PDMA header from Habana's own code that
// fills them (see gaudi3.go). The kernel wins where it disagrees with
// hl-thunk (Gaudi2 LIN_DMA ctl 23:8 is the context id). The tests prove
// every encoding byte for byte against the kernel's packet structures
// compiled by gcc, with the kernel's macros for K fields, and the Gaudi3
// formats against bit-field structures the test writes from the
// specifications' facts.
//
// # Encoding
//
// Each packet type has Append(f, b) that appends its bytes to b and
// allocates nothing when b has room; Builder wraps a caller's slice and
// keeps the first error. Encoders reject values that do not fit their field
// (ErrFieldRange) and fields or packets the format does not have
// (ErrNotInFormat); they never truncate. Helpers build the sync-manager
// packets the driver's signal and wait command buffers use
// (Format.Signal, Format.MonitorWrite, Format.ArmMonitor, Format.FenceWait).
//
// # Decoding
//
// Format.Decode decodes one packet and Format.Walk a whole buffer into the
// same value types; errors are *DecodeError values naming the offset, the
// opcode and the reason. Format.ValidateUser applies the driver's user
// command buffer rules (Gaudi's gaudi_validate_cb).
package packet
