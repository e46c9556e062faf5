// Package packet encodes and decodes the queue packets that Gaudi and Gaudi2
// command buffers are made of. It knows bytes, not devices: the dma package
// encodes with it, the simulator decodes and executes, and tools decode for
// people.
//
// # Formats
//
// A Format (Gaudi or Gaudi2) selects the opcodes and field layouts. Every
// packet starts with a 32-bit payload word and a 32-bit control word (ctl),
// little endian; ctl bits 28:24 hold the opcode and bits 31:29 the barrier
// bits of Header. Sizes:
//
//	opcode  packet        bytes        Gaudi  Gaudi2  type
//	0x01    WREG_32       8            yes    yes     WReg32
//	0x02    WREG_BULK     8+8*values   yes    yes     WRegBulk
//	0x03    MSG_LONG      16           yes    yes     MsgLong
//	0x04    MSG_SHORT     8            yes    yes     MsgShort
//	0x05    CP_DMA        16           yes    yes     CPDMA
//	0x06    REPEAT        8            yes    yes     Repeat
//	0x07    MSG_PROT      16           yes    yes     MsgProt
//	0x08    FENCE         8            yes    yes     Fence
//	0x09    LIN_DMA       24           yes    yes     LinDMA
//	0x0a    NOP           8            yes    yes     Nop
//	0x0b    STOP          8            yes    yes     Stop
//	0x0c    ARB_POINT     8            yes    yes     ArbPoint
//	0x0d    WAIT          8            yes    yes     Wait
//	0x0e    CB_LIST       24           -      yes     CBList
//	0x0f    LOAD_AND_EXE  16           yes    yes     LoadAndExe
//	0x10-13 ARC and WREG_64 packets    -      yes     (not decoded)
//
// # Where the bit positions come from
//
// Each type's documentation marks its fields K when the kernel's packet
// header (drivers/accel/habanalabs/include/gaudi{,2}/*_packets.h) defines
// the shift and mask, and T when only hl-thunk's packet headers (Habana's
// MIT-licensed user library) name the bits. The kernel wins where the two
// disagree (Gaudi2 LIN_DMA ctl 23:8 is the context id). The tests prove
// every encoding byte for byte against the kernel's packet structures
// compiled by gcc, with the kernel's macros for K fields.
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
