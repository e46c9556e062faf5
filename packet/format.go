package packet

// Format is a packet format: the opcodes and field layouts that the queue
// managers of one ASIC family execute. Use the values Gaudi, Gaudi2,
// Gaudi3 and Gaudi3PQM; the zero Format is invalid and every encoder and
// decoder rejects it. A Format is a plain value, safe for concurrent use.
type Format uint8

const (
	// Gaudi is the first-generation Gaudi (HL-2000) format, described by
	// the driver's gaudi/gaudi_packets.h.
	Gaudi Format = 1
	// Gaudi2 is the Gaudi2 format (all Gaudi2 revisions), described by the
	// driver's gaudi2/gaudi2_packets.h.
	Gaudi2 Format = 2
	// Gaudi3 is the format of the Gaudi3 queue managers that the ARC
	// schedulers feed (EDMA, MME, TPC, rotator), described by Habana's
	// gaudi3_packets.h specification. The Gaudi3 driver accepts no user
	// command buffer through command submission, so a user meets these
	// packets only in buffers for the schedulers.
	Gaudi3 Format = 3
	// Gaudi3PQM is the format of the queue managers of the Gaudi3 PDMA
	// channels (PQM), described by Habana's gaudi3_pqm_packets.h
	// specification: the packets a Gaudi3 user writes into a channel's
	// message queue to move data between host and device.
	Gaudi3PQM Format = 4
)

// String returns "gaudi", "gaudi2", "gaudi3" or "gaudi3-pqm".
func (f Format) String() string {
	switch f {
	case Gaudi:
		return "gaudi"
	case Gaudi2:
		return "gaudi2"
	case Gaudi3:
		return "gaudi3"
	case Gaudi3PQM:
		return "gaudi3-pqm"
	}
	return "format(" + itoa(uint64(f)) + ")"
}

// valid reports whether f is one of the four formats.
func (f Format) valid() bool { return f >= Gaudi && f <= Gaudi3PQM }

// g3 reports whether f is a Gaudi3 format.
func (f Format) g3() bool { return f == Gaudi3 || f == Gaudi3PQM }

// The opcodes of the Gaudi3 formats (enum packet_id of gaudi3_packets.h,
// enum pqm_packet_id of gaudi3_pqm_packets.h), one bit per opcode.
const (
	g3Ops = 1<<OpWReg32 | 1<<OpWRegBulk | 1<<OpMsgLong | 1<<OpMsgShort | 1<<OpMsgProt | 1<<OpFence |
		1<<OpLinDMA | 1<<OpNop | 1<<OpStop | 1<<OpWait | 1<<OpLoadAndExe | 1<<OpWriteArcStream |
		1<<OpWReg64Short | 1<<OpWReg64Long
	pqmOps = 1<<OpWReg32 | 1<<OpWRegBulk | 1<<OpMsgLong | 1<<OpMsgShort | 1<<OpFence | 1<<OpLinPDMA |
		1<<OpNop | 1<<OpStop | 1<<OpWait | 1<<OpWReg64Short | 1<<OpWReg64Long |
		1<<OpChWReg32 | 1<<OpChWRegBulk | 1<<OpChWReg64Short | 1<<OpChWReg64Long
)

// Has reports whether op is an opcode of the format. Opcodes that exist but
// that this package does not decode (see ErrUnsupportedOpcode) count.
func (f Format) Has(op Opcode) bool {
	switch f {
	case Gaudi:
		return op >= OpWReg32 && op <= OpLoadAndExe && op != OpCBList
	case Gaudi2:
		return op >= OpWReg32 && op <= OpWReg64Long
	case Gaudi3:
		return op < 32 && g3Ops>>op&1 == 1
	case Gaudi3PQM:
		return op < 32 && pqmOps>>op&1 == 1
	}
	return false
}

// opName returns the name of op in format f: that of Opcode.String, but
// LIN_PDMA for opcode 9 of the PQM format.
func (f Format) opName(op Opcode) string {
	if f == Gaudi3PQM && op == OpLinPDMA {
		return "LIN_PDMA"
	}
	return op.String()
}

// fset is a set of formats, one bit per Format.
type fset uint8

const (
	inGaudi  fset = 1 << Gaudi
	inGaudi2 fset = 1 << Gaudi2
	inGaudi3 fset = 1 << Gaudi3
	inPQM    fset = 1 << Gaudi3PQM
	inG3     fset = inGaudi3 | inPQM
	inAll    fset = inGaudi | inGaudi2 | inG3
)

func (s fset) has(f Format) bool { return f < 8 && s>>f&1 == 1 }

// itoa formats v in decimal without fmt, for String methods that must not
// allocate more than the result.
func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}
