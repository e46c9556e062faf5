package packet

import "strconv"

// driverLen is the size the Gaudi driver gives each packet when it walks a
// user command buffer (gaudi_packet_sizes): the fixed sizes, and 8 for
// WREG_BULK, whose values it never looks at.
func driverLen(op Opcode) int {
	if op == OpWRegBulk {
		return 8
	}
	return int(fixedLen[op])
}

// ValidateUser applies the checks the driver makes on a user command buffer
// before it runs it, in the driver's order, and returns nil or a
// *DecodeError naming the first offending packet:
//
// Gaudi (gaudi_validate_cb, for the external PCI-DMA queues that the driver
// parses): an opcode that is not Gaudi's fails with ErrUnknownOpcode
// (-EINVAL); a packet that extends past the end fails with ErrTruncated
// (-EINVAL), where WREG_BULK counts as 8 bytes as the driver sizes it; then
// MSG_PROT, CP_DMA, STOP, WREG_BULK, and LOAD_AND_EXE with Dst set fail with
// ErrPrivileged (-EPERM). Reserved bits are not checked, as the driver does
// not check them.
//
// Gaudi2 has no command buffer parser (gaudi2_cs_parser checks only the
// buffer's address), so ValidateUser returns nil for any Gaudi2 buffer; the
// hardware raises an event for what it cannot run. The same holds for the
// Gaudi3 formats: the Gaudi3 driver takes no user command buffer through
// command submission at all, and never sees what a user writes into a PDMA
// channel's queue.
func (f Format) ValidateUser(cb []byte) error {
	if f != Gaudi {
		if f.valid() {
			return nil
		}
		return &DecodeError{Format: f, Reason: "invalid format", Err: ErrNotInFormat}
	}
	for off := 0; off < len(cb); {
		if len(cb)-off < 8 {
			// The driver reads the header of a packet that starts inside
			// the buffer; its opcode lies outside. Report it as truncated.
			return &DecodeError{Format: f, Offset: off, Err: ErrTruncated,
				Reason: strconv.Itoa(len(cb)-off) + " bytes left, a packet header needs 8"}
		}
		w0 := le.Uint32(cb[off:])
		ctl := le.Uint32(cb[off+4:])
		op := Opcode(ctlOpcode.get(ctl))
		fail := func(err error, reason string) error {
			return &DecodeError{Format: f, Offset: off, Opcode: op, Reason: reason, Err: err}
		}
		if !f.Has(op) {
			return fail(ErrUnknownOpcode, "not a gaudi opcode")
		}
		n := driverLen(op)
		if n > len(cb)-off {
			return fail(ErrTruncated, strconv.Itoa(n)+"-byte packet, "+strconv.Itoa(len(cb)-off)+" bytes left")
		}
		switch op {
		case OpMsgProt, OpCPDMA, OpStop, OpWRegBulk:
			return fail(ErrPrivileged, "the driver reserves it")
		case OpLoadAndExe:
			if laeDst.on(w0) {
				return fail(ErrPrivileged, "Dst set")
			}
		}
		off += n
	}
	return nil
}
