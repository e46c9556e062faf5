package memory

import "fmt"

// DeviceRange is a range of device memory: n bytes of a Buffer from an
// offset. Copies take ranges rather than addresses, so the direction of a
// copy follows from the types: a DeviceRange can only be a copy's device
// side. The zero DeviceRange is empty and names no buffer.
//
// A range is checked when it is used: one that does not lie within its
// buffer, or whose buffer is closed, is an error matching ErrRange or
// ErrClosed then.
type DeviceRange struct {
	buf    *Buffer
	off, n uint64
}

// Range returns the n bytes of b from off.
func (b *Buffer) Range(off, n uint64) DeviceRange { return DeviceRange{buf: b, off: off, n: n} }

// All returns the whole buffer.
func (b *Buffer) All() DeviceRange { return DeviceRange{buf: b, n: b.size} }

// Buffer returns the buffer of the range.
func (r DeviceRange) Buffer() *Buffer { return r.buf }

// Offset returns where the range starts in its buffer.
func (r DeviceRange) Offset() uint64 { return r.off }

// Len returns the length of the range in bytes.
func (r DeviceRange) Len() uint64 { return r.n }

// VA returns the device address of the range's first byte.
func (r DeviceRange) VA() uint64 {
	if r.buf == nil {
		return 0
	}
	return r.buf.va + r.off
}

// Check reports whether the range lies within an open buffer: nil, or an
// error matching ErrRange or ErrClosed.
func (r DeviceRange) Check() error {
	if r.buf == nil {
		return fmt.Errorf("device range names no buffer: %w", ErrRange)
	}
	if err := within(r.off, r.n, r.buf.size); err != nil {
		return fmt.Errorf("device range of buffer at %#x: %w", r.buf.va, err)
	}
	if r.buf.isClosed() {
		return fmt.Errorf("device range of buffer at %#x: %w", r.buf.va, ErrClosed)
	}
	return nil
}

// Slice returns the part of r from off, n bytes long; it is checked, as r
// is, when it is used.
func (r DeviceRange) Slice(off, n uint64) DeviceRange {
	return DeviceRange{buf: r.buf, off: r.off + off, n: n}
}

// String describes the range, as "device 0x1001001800000000+4096".
func (r DeviceRange) String() string { return fmt.Sprintf("device %#x+%d", r.VA(), r.n) }

// HostRange is a range of host memory mapped for the device, or of a
// dma-buf imported into it (Manager.Import): n bytes of a HostBuffer from
// an offset. The zero HostRange is empty and names no
// mapping. Like a DeviceRange, it is checked when it is used.
type HostRange struct {
	buf    *HostBuffer
	off, n uint64
}

// Range returns the n bytes of h from off.
func (h *HostBuffer) Range(off, n uint64) HostRange { return HostRange{buf: h, off: off, n: n} }

// All returns the whole mapping.
func (h *HostBuffer) All() HostRange { return HostRange{buf: h, n: h.size} }

// Buffer returns the mapping of the range.
func (r HostRange) Buffer() *HostBuffer { return r.buf }

// Offset returns where the range starts in its mapping.
func (r HostRange) Offset() uint64 { return r.off }

// Len returns the length of the range in bytes.
func (r HostRange) Len() uint64 { return r.n }

// VA returns the device address of the range's first byte.
func (r HostRange) VA() uint64 {
	if r.buf == nil {
		return 0
	}
	return r.buf.va + r.off
}

// Bytes returns the host memory of the range; nil when the range does not
// lie within its mapping, or when the mapping is an imported dma-buf,
// whose memory the CPU does not reach.
func (r HostRange) Bytes() []byte {
	if r.buf == nil || r.buf.mem == nil || within(r.off, r.n, r.buf.size) != nil {
		return nil
	}
	return r.buf.mem[r.off : r.off+r.n : r.off+r.n]
}

// Check reports whether the range lies within an open mapping: nil, or an
// error matching ErrRange or ErrClosed.
func (r HostRange) Check() error {
	if r.buf == nil {
		return fmt.Errorf("host range names no mapping: %w", ErrRange)
	}
	if err := within(r.off, r.n, r.buf.size); err != nil {
		return fmt.Errorf("host range of mapping at %#x: %w", r.buf.va, err)
	}
	if r.buf.isClosed() {
		return fmt.Errorf("host range of mapping at %#x: %w", r.buf.va, ErrClosed)
	}
	return nil
}

// Slice returns the part of r from off, n bytes long; it is checked, as r
// is, when it is used.
func (r HostRange) Slice(off, n uint64) HostRange {
	return HostRange{buf: r.buf, off: r.off + off, n: n}
}

// String describes the range, as "host 0xfff0000000001000+4096".
func (r HostRange) String() string { return fmt.Sprintf("host %#x+%d", r.VA(), r.n) }

// within reports whether [off, off+n) lies within size bytes, without
// overflow.
func within(off, n, size uint64) error {
	if off > size || n > size-off {
		return fmt.Errorf("%d bytes at offset %d of %d: %w", n, off, size, ErrRange)
	}
	return nil
}
