package packet

// Format is a packet format: the opcodes and field layouts that the queue
// managers of one ASIC family execute. Use the values Gaudi and Gaudi2; the
// zero Format is invalid and every encoder and decoder rejects it. A Format
// is a plain value, safe for concurrent use.
type Format uint8

const (
	// Gaudi is the first-generation Gaudi (HL-2000) format, described by
	// the driver's gaudi/gaudi_packets.h.
	Gaudi Format = 1
	// Gaudi2 is the Gaudi2 format (all Gaudi2 revisions), described by the
	// driver's gaudi2/gaudi2_packets.h.
	Gaudi2 Format = 2
)

// String returns "gaudi" or "gaudi2".
func (f Format) String() string {
	switch f {
	case Gaudi:
		return "gaudi"
	case Gaudi2:
		return "gaudi2"
	}
	return "format(" + itoa(uint64(f)) + ")"
}

// valid reports whether f is Gaudi or Gaudi2.
func (f Format) valid() bool { return f == Gaudi || f == Gaudi2 }

// Has reports whether op is an opcode of the format. Opcodes that exist but
// that this package does not decode (see ErrUnsupportedOpcode) count.
func (f Format) Has(op Opcode) bool {
	switch f {
	case Gaudi:
		return op >= OpWReg32 && op <= OpLoadAndExe && op != OpCBList
	case Gaudi2:
		return op >= OpWReg32 && op <= OpWReg64Long
	}
	return false
}

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
