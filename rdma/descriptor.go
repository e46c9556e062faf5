package rdma

import (
	"encoding/binary"
	"fmt"
)

// Path is how a transfer moves device memory.
type Path uint8

// Paths. The zero value, PathAuto, is a choice left to the package: zero
// copy when the NIC registers the device memory's dma-buf, else pipelined.
const (
	PathAuto Path = iota
	// PathZeroCopy: the NIC reads or writes device memory itself, through
	// a memory region of the range's dma-buf (ib.RegisterBuffer).
	PathZeroCopy
	// PathPipelined: the DMA engines copy chunks between device memory and
	// registered pinned host memory while earlier chunks are on the wire.
	PathPipelined
)

// String returns "auto", "zero-copy" or "pipelined".
func (p Path) String() string {
	switch p {
	case PathAuto:
		return "auto"
	case PathZeroCopy:
		return "zero-copy"
	case PathPipelined:
		return "pipelined"
	}
	return fmt.Sprintf("Path(%d)", uint8(p))
}

// DescriptorVersion is the version of the descriptor format Marshal
// writes and Unmarshal reads. Version 2 has version 1's layout; it marks
// the protocol in which the receiver ends each transfer with a fin
// (wire.go), so that a peer of version 1, whose ring descriptor comes in
// the CM's private data, is refused at connect (ErrOlderDescriptor)
// rather than failing its first transfer. Version 3, the same layout
// again, marks the protocol in which both ends cut a short transfer into
// chunks of its own (transferChunk), which a peer of version 2 would not
// expect.
const DescriptorVersion = 3

// DescriptorSize is the length of a marshalled descriptor of
// DescriptorVersion. It fits the private data of every RDMA CM message:
// the smallest, CONNECT over IP, carries 56 bytes (the IB CM's REQ limit
// of 92 bytes, IB_CM_REQ_PRIVATE_DATA_SIZE in include/rdma/ib_cm.h, less
// the 36-byte header the CMA prepends for AF_INET ids, struct cma_hdr in
// drivers/infiniband/core/cma.c); ACCEPT carries 196
// (IB_CM_REP_PRIVATE_DATA_SIZE) and REJECT 148 (IB_CM_REJ_PRIVATE_DATA_SIZE).
// struct rdma_ucm_conn_param in include/uapi/rdma/rdma_user_cm.h has room
// for RDMA_MAX_PRIVATE_DATA, 256 bytes, which the CM refuses past those
// limits (EINVAL).
const DescriptorSize = 32

// descriptorMagic starts every descriptor: "GM" (Gaudi memory).
var descriptorMagic = [2]byte{'G', 'M'}

// Descriptor describes memory a peer may write a transfer into: where
// (Addr, in the NIC's view of the region RKey names), how much (Len) and
// how (Path). For PathZeroCopy, Addr and RKey name the device range
// itself; for PathPipelined they name the receiver's ring of Slots
// registered host buffers of ChunkSize bytes each, into which the sender
// writes chunk k at slot k mod Slots and waits for the receiver's credit
// before reusing a slot.
//
// A Descriptor is plain data. Users may exchange it however they like:
// Marshal and Unmarshal give it a fixed, versioned, big-endian form of
// DescriptorSize bytes, which fits RDMA CM private data.
type Descriptor struct {
	Path      Path
	RKey      uint32
	Addr      uint64
	Len       uint64
	ChunkSize uint32
	Slots     uint16
}

// Layout of versions 1 and 2 (big-endian, as RDMA wire formats are):
//
//	0  magic "GM"     2  version      3  path
//	4  rkey           8  addr        16  len
//	24 chunk size    28  slots       30  reserved (zero)
const (
	offVersion = 2
	offPath    = 3
	offRKey    = 4
	offAddr    = 8
	offLen     = 16
	offChunk   = 24
	offSlots   = 28
	offResv    = 30
)

// Validate reports whether d is a descriptor a peer may act on: an
// error matching ErrBadDescriptor otherwise.
func (d Descriptor) Validate() error {
	switch d.Path {
	case PathZeroCopy:
		if d.ChunkSize != 0 || d.Slots != 0 {
			return descErr("zero-copy descriptor with a ring (chunk %d, slots %d)", d.ChunkSize, d.Slots)
		}
		if d.Len > 0 && d.Addr+d.Len < d.Addr {
			return descErr("range %#x+%d wraps around", d.Addr, d.Len)
		}
	case PathPipelined:
		if d.ChunkSize == 0 || d.Slots == 0 {
			return descErr("pipelined descriptor without a ring (chunk %d, slots %d)", d.ChunkSize, d.Slots)
		}
		ring := uint64(d.ChunkSize) * uint64(d.Slots)
		if d.Addr+ring < d.Addr {
			return descErr("ring %#x+%d wraps around", d.Addr, ring)
		}
	default:
		return descErr("path %v", d.Path)
	}
	return nil
}

// MarshalBinary returns the descriptor's DescriptorSize bytes; it fails
// only for a descriptor Validate refuses.
func (d Descriptor) MarshalBinary() ([]byte, error) {
	b := make([]byte, DescriptorSize)
	if err := d.put(b); err != nil {
		return nil, err
	}
	return b, nil
}

// put writes d into b, which holds at least DescriptorSize bytes.
func (d Descriptor) put(b []byte) error {
	if err := d.Validate(); err != nil {
		return err
	}
	be := binary.BigEndian
	copy(b, descriptorMagic[:])
	b[offVersion] = DescriptorVersion
	b[offPath] = byte(d.Path)
	be.PutUint32(b[offRKey:], d.RKey)
	be.PutUint64(b[offAddr:], d.Addr)
	be.PutUint64(b[offLen:], d.Len)
	be.PutUint32(b[offChunk:], d.ChunkSize)
	be.PutUint16(b[offSlots:], d.Slots)
	be.PutUint16(b[offResv:], 0)
	return nil
}

// UnmarshalBinary reads a descriptor from the start of b. Bytes after the
// first DescriptorSize are ignored: the RDMA CM pads private data to its
// message's limit. The errors match ErrShortDescriptor,
// ErrOlderDescriptor or ErrNewerDescriptor (a *VersionError), or
// ErrBadDescriptor; d is left unchanged then.
func (d *Descriptor) UnmarshalBinary(b []byte) error {
	if len(b) < offVersion+1 {
		return fmt.Errorf("decode remote memory descriptor: %d bytes: %w", len(b), ErrShortDescriptor)
	}
	if b[0] != descriptorMagic[0] || b[1] != descriptorMagic[1] {
		return descErr("magic %#02x%02x", b[0], b[1])
	}
	if v := b[offVersion]; v != DescriptorVersion {
		return &VersionError{Version: v}
	}
	if len(b) < DescriptorSize {
		return fmt.Errorf("decode remote memory descriptor: %d bytes of %d: %w", len(b), DescriptorSize, ErrShortDescriptor)
	}
	be := binary.BigEndian
	if r := be.Uint16(b[offResv:]); r != 0 {
		return descErr("reserved field %#x", r)
	}
	n := Descriptor{
		Path:      Path(b[offPath]),
		RKey:      be.Uint32(b[offRKey:]),
		Addr:      be.Uint64(b[offAddr:]),
		Len:       be.Uint64(b[offLen:]),
		ChunkSize: be.Uint32(b[offChunk:]),
		Slots:     be.Uint16(b[offSlots:]),
	}
	if err := n.Validate(); err != nil {
		return err
	}
	*d = n
	return nil
}

func descErr(format string, args ...any) error {
	return fmt.Errorf("decode remote memory descriptor: %s: %w", fmt.Sprintf(format, args...), ErrBadDescriptor)
}
