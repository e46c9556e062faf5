package packet

import (
	"errors"
	"fmt"
)

// Sentinel errors. Errors returned by this package match one of them with
// errors.Is.
var (
	// ErrNoRoom reports a command buffer without room for another packet
	// (CopyEncoder.Append never grows the buffer).
	ErrNoRoom = errors.New("no room in the command buffer")

	// ErrFieldRange reports that an encoder was given a value that does not
	// fit its bit field. Encoders never truncate.
	ErrFieldRange = errors.New("value out of field range")

	// ErrNotInFormat reports a field or packet that the chosen Format does not
	// have, such as the Gaudi2 LIN_DMA endian swap on Gaudi or CB_LIST on
	// Gaudi.
	ErrNotInFormat = errors.New("not available in this format")

	// ErrTruncated reports a packet that extends past the end of the buffer
	// (gaudi_validate_cb: "out of CB boundary", -EINVAL).
	ErrTruncated = errors.New("truncated packet")

	// ErrUnknownOpcode reports an opcode the Format does not define
	// (gaudi_validate_cb through validate_packet_id: -EINVAL; on Gaudi2 the
	// queue manager raises an undefined-opcode event).
	ErrUnknownOpcode = errors.New("unknown opcode")

	// ErrUnsupportedOpcode reports a defined opcode whose layout this package
	// does not decode: Gaudi2 WRITE_ARC_STREAM, LAST_READ_FROM_ARC,
	// WREG_64_SHORT and WREG_64_LONG, which have no structure in the kernel
	// headers, and Gaudi3 WRITE_ARC_STREAM; and a Gaudi3 LIN_DMA or LIN_PDMA
	// whose control bits ask for a variant whose length the specifications
	// do not settle (more than one write completion, or addresses taken from
	// registers), so that the decoder cannot know where the next packet
	// starts.
	ErrUnsupportedOpcode = errors.New("unsupported opcode")

	// ErrReservedBits reports a packet with bits set that no field holds (or,
	// for Gaudi LIN_DMA, the lin bit clear). The driver does not reject such
	// packets, so Decode still returns the packet and its length alongside
	// this error; re-encoding that packet clears the bits.
	ErrReservedBits = errors.New("reserved bits set")

	// ErrPrivileged reports a packet that the Gaudi driver refuses in a user
	// command buffer (gaudi_validate_cb: -EPERM). See Format.CheckUser.
	ErrPrivileged = errors.New("packet not allowed in a user command buffer")
)

// FieldError is the error an encoder returns for a field it cannot encode.
// It matches ErrFieldRange or ErrNotInFormat with errors.Is. Field is
// "Opcode" for a packet the format lacks, "Type" for a packet type that
// does not encode the format's layout of its opcode (Fence or LinDMA with
// a Gaudi3 format, Gaudi3Fence with Gaudi2), and "Format" for an invalid
// Format. A field that the packet carries only under a flag (LinPDMA's
// completion and fence words) and is set without it has Bits 0.
type FieldError struct {
	Format Format
	Opcode Opcode
	Field  string // Go field name, such as "Dst" or "ContextID"
	Value  uint64 // the rejected value (1 for a bool)
	Bits   int    // the width of the field; 0 with ErrNotInFormat
	Err    error  // ErrFieldRange or ErrNotInFormat
}

func (e *FieldError) Error() string {
	op := e.Format.opName(e.Opcode)
	switch {
	case e.Err == ErrNotInFormat && e.Field == "Format":
		return fmt.Sprintf("packet: %v: invalid format", e.Format)
	case e.Err == ErrNotInFormat && e.Field == "Opcode":
		return fmt.Sprintf("packet: %v: %s is not a %v packet", e.Format, op, e.Format)
	case e.Err == ErrNotInFormat && e.Field == "Type":
		return fmt.Sprintf("packet: %v %s: this packet type does not encode the %v layout", e.Format, op, e.Format)
	case e.Err == ErrNotInFormat:
		return fmt.Sprintf("packet: %v %s: field %s is not available in this format", e.Format, op, e.Field)
	}
	return fmt.Sprintf("packet: %v %s: %s %#x does not fit in %d bits", e.Format, op, e.Field, e.Value, e.Bits)
}

// Unwrap returns the sentinel.
func (e *FieldError) Unwrap() error { return e.Err }

// DecodeError describes a packet that could not be decoded, or (from
// Format.ValidateUser) that the driver refuses. It matches ErrTruncated,
// ErrUnknownOpcode, ErrUnsupportedOpcode, ErrReservedBits, ErrPrivileged or,
// for an invalid Format, ErrNotInFormat with errors.Is.
type DecodeError struct {
	Format Format
	// Offset is the byte offset of the packet: relative to the buffer given
	// to Decode, or to the start of the command buffer given to Walk.
	Offset int
	// Opcode is the packet's opcode, or 0 when fewer than 8 bytes were left
	// to read it from.
	Opcode Opcode
	Reason string // what is wrong, in a few words
	Err    error  // the sentinel
}

func (e *DecodeError) Error() string {
	if e.Opcode == 0 && e.Err == ErrTruncated {
		return fmt.Sprintf("packet: %v: offset %d: %v: %s", e.Format, e.Offset, e.Err, e.Reason)
	}
	return fmt.Sprintf("packet: %v: offset %d: %s (%#02x): %v: %s", e.Format, e.Offset, e.Format.opName(e.Opcode), uint8(e.Opcode), e.Err, e.Reason)
}

// Unwrap returns the sentinel.
func (e *DecodeError) Unwrap() error { return e.Err }
