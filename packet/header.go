package packet

import (
	"encoding/binary"
	"math/bits"
	"slices"

	g1 "github.com/gaudi-go/gaudi/uapi/gaudi"
)

// Every packet starts with two little-endian 32-bit words: a payload word
// (value, cfg or tsize) and the control word ctl. Bits 28:24 of ctl hold the
// opcode and bits 31:29 the barrier bits (the kernel's *_PKT_CTL_* macros,
// identical for Gaudi and Gaudi2). Most packets keep a predicate id in ctl
// bits 4:0.

// Header holds the barrier bits of a packet's control word. Every packet
// type embeds it. The names follow the kernel headers; the hardware meaning
// is not documented there. The driver's own packets set RegBarrier on Gaudi
// (never on Gaudi2) and MsgBarrier on all but the monitor payload writes.
//
// The Gaudi3PQM format has EngineBarrier only (ctl bits 31:30 are reserved,
// or hold part of a register offset); its NOP carries MsgBarrier in bit 0
// of its payload word instead. The Gaudi3 WAIT has no RegBarrier.
type Header struct {
	EngineBarrier bool // EB, ctl bit 29
	RegBarrier    bool // RB, ctl bit 30 (hl-thunk's Gaudi2 header calls it swtc)
	MsgBarrier    bool // MB, ctl bit 31
}

var (
	ctlOpcode = fieldOf(g1.GAUDI_PKT_CTL_OPCODE_SHIFT, g1.GAUDI_PKT_CTL_OPCODE_MASK)
	ctlEB     = fieldOf(g1.GAUDI_PKT_CTL_EB_SHIFT, g1.GAUDI_PKT_CTL_EB_MASK)
	ctlRB     = fieldOf(g1.GAUDI_PKT_CTL_RB_SHIFT, g1.GAUDI_PKT_CTL_RB_MASK)
	ctlMB     = fieldOf(g1.GAUDI_PKT_CTL_MB_SHIFT, g1.GAUDI_PKT_CTL_MB_MASK)
	// ctlPred is the predicate id. The kernel names it for FENCE only;
	// hl-thunk's headers place it at the same bits in every packet that has
	// one.
	ctlPred = fieldOf(g1.GAUDI_PKT_FENCE_CTL_PRED_SHIFT, g1.GAUDI_PKT_FENCE_CTL_PRED_MASK)

	// ctlHeader is every bit the header owns.
	ctlHeader = ctlOpcode.mask() | ctlEB.mask() | ctlRB.mask() | ctlMB.mask()
)

// ctl returns the control word bits of h and op.
func (h Header) ctl(op Opcode) uint32 {
	return ctlOpcode.put(uint64(op)) | ctlEB.flag(h.EngineBarrier) | ctlRB.flag(h.RegBarrier) | ctlMB.flag(h.MsgBarrier)
}

// headerOf returns the barrier bits of a control word.
func headerOf(ctl uint32) Header {
	return Header{EngineBarrier: ctlEB.on(ctl), RegBarrier: ctlRB.on(ctl), MsgBarrier: ctlMB.on(ctl)}
}

// ctlHeaderPQM is every bit the header owns in the Gaudi3PQM format.
var ctlHeaderPQM = ctlOpcode.mask() | ctlEB.mask()

// header returns the barrier bits of a control word of format f.
func (f Format) header(ctl uint32) Header {
	if f == Gaudi3PQM {
		return Header{EngineBarrier: ctlEB.on(ctl)}
	}
	return headerOf(ctl)
}

// headerBits returns the control-word bits the header owns in format f.
func (f Format) headerBits() uint32 {
	if f == Gaudi3PQM {
		return ctlHeaderPQM
	}
	return ctlHeader
}

// barriers writes the header's flags for String methods.
func (h Header) barriers(s *str) {
	s.flag(h.EngineBarrier, "EB")
	s.flag(h.RegBarrier, "RB")
	s.flag(h.MsgBarrier, "MB")
}

// field is a bit field of a 32-bit word (or, for put64/get64, a 64-bit one).
type field struct{ shift, width uint8 }

// fieldOf makes a field from a kernel SHIFT/MASK pair and panics if they
// disagree, so a wrong pair fails at init rather than corrupting packets.
func fieldOf(shift, mask uint64) field {
	w := bits.OnesCount64(mask)
	if w == 0 || mask != (1<<w-1)<<shift {
		panic("packet: mask does not match shift")
	}
	return field{uint8(shift), uint8(w)}
}

func (f field) mask() uint32          { return uint32((uint64(1)<<f.width - 1) << f.shift) }
func (f field) put(v uint64) uint32   { return uint32(v) << f.shift }
func (f field) get(w uint32) uint64   { return uint64(w>>f.shift) & (1<<f.width - 1) }
func (f field) on(w uint32) bool      { return f.get(w) != 0 }
func (f field) fits(v uint64) bool    { return v>>f.width == 0 }
func (f field) put64(v uint64) uint64 { return v << f.shift }
func (f field) get64(w uint64) uint64 { return w >> f.shift & (1<<f.width - 1) }
func (f field) flag(b bool) uint32    { return f.put(b2u(b)) }
func (f field) check(c *check, name string, v uint64) {
	if c.err == nil && !f.fits(v) {
		c.fail(name, v, int(f.width), ErrFieldRange)
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// check collects the first error of an encoder without allocating when
// there is none.
type check struct {
	f   Format
	op  Opcode
	err error
}

func newCheck(f Format, op Opcode) check {
	c := check{f: f, op: op}
	if !f.valid() {
		c.err = &FieldError{Format: f, Opcode: op, Field: "Format", Value: uint64(f), Err: ErrNotInFormat}
	} else if !f.Has(op) {
		c.err = &FieldError{Format: f, Opcode: op, Field: "Opcode", Value: uint64(op), Err: ErrNotInFormat}
	}
	return c
}

func (c *check) fail(name string, v uint64, width int, err error) {
	c.err = &FieldError{Format: c.f, Opcode: c.op, Field: name, Value: v, Bits: width, Err: err}
}

// only rejects a field that is set (non-zero) outside the format that has
// it.
func (c *check) only(f Format, name string, v uint64) {
	if c.err == nil && v != 0 && c.f != f {
		c.fail(name, v, 0, ErrNotInFormat)
	}
}

// onlyIn rejects a field that is set (non-zero) outside the formats that
// have it.
func (c *check) onlyIn(s fset, name string, v uint64) {
	if c.err == nil && v != 0 && !s.has(c.f) {
		c.fail(name, v, 0, ErrNotInFormat)
	}
}

// header rejects the barrier bits the format lacks: RegBarrier and
// MsgBarrier in the Gaudi3PQM format.
func (c *check) header(h Header) {
	c.onlyIn(inAll&^inPQM, "RegBarrier", b2u(h.RegBarrier))
	c.onlyIn(inAll&^inPQM, "MsgBarrier", b2u(h.MsgBarrier))
}

// types rejects a packet type used with a format whose layout of the
// opcode it does not encode, such as Fence with Gaudi3 (whose FENCE is
// Gaudi3Fence).
func (c *check) types(s fset) {
	if c.err == nil && !s.has(c.f) {
		c.err = &FieldError{Format: c.f, Opcode: c.op, Field: "Type", Err: ErrNotInFormat}
	}
}

// fits checks v against a field whose width depends on the format.
func (c *check) fits(name string, v uint64, width uint8) {
	if c.err == nil && v>>width != 0 {
		c.fail(name, v, int(width), ErrFieldRange)
	}
}

var le = binary.LittleEndian

// grow extends b by n bytes and returns the whole slice and the new tail.
// It allocates only when b lacks the capacity.
func grow(b []byte, n int) ([]byte, []byte) {
	l := len(b)
	b = slices.Grow(b, n)[:l+n]
	return b, b[l:]
}

// put8 appends an 8-byte packet: payload word w0 and control word ctl.
func put8(b []byte, w0, ctl uint32) []byte {
	b, t := grow(b, 8)
	le.PutUint32(t, w0)
	le.PutUint32(t[4:], ctl)
	return b
}

// put16 appends a 16-byte packet: w0, ctl and one 64-bit word.
func put16(b []byte, w0, ctl uint32, q uint64) []byte {
	b, t := grow(b, 16)
	le.PutUint32(t, w0)
	le.PutUint32(t[4:], ctl)
	le.PutUint64(t[8:], q)
	return b
}

// put24 appends a 24-byte packet: w0, ctl and two 64-bit words.
func put24(b []byte, w0, ctl uint32, q0, q1 uint64) []byte {
	b, t := grow(b, 24)
	le.PutUint32(t, w0)
	le.PutUint32(t[4:], ctl)
	le.PutUint64(t[8:], q0)
	le.PutUint64(t[16:], q1)
	return b
}

// reserved returns the reason for bits set outside the known fields of a
// word, or "" when there are none.
func reserved(word string, bits uint32) string {
	if bits == 0 {
		return ""
	}
	return "reserved bits 0x" + hex32(bits) + " set in " + word
}

// either returns the first non-empty reason.
func either(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func hex32(v uint32) string {
	const digits = "0123456789abcdef"
	var b [8]byte
	i := len(b)
	for {
		i--
		b[i] = digits[v&0xf]
		v >>= 4
		if v == 0 {
			return string(b[i:])
		}
	}
}
