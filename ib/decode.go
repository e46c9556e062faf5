package ib

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/gaudi-go/gaudi/uapi/rdma"
)

// IoctlHeader is the decoded header of a uverbs ioctl (struct
// ib_uverbs_ioctl_hdr).
type IoctlHeader struct {
	Length    uint16   // header plus attributes, in bytes
	Object    uint16   // UVERBS_OBJECT_*
	Method    uint16   // the object's UVERBS_METHOD_*
	NumAttrs  uint16   // attributes that follow
	Reserved1 uint64   // must be 0
	DriverID  DriverID // must be the device's
	Reserved2 uint32   // must be 0
}

// Attr is one decoded uverbs attribute (struct ib_uverbs_attr). Data is
// an inline value, a user address, an object handle or a descriptor,
// depending on the method's declaration of the attribute.
type Attr struct {
	ID       uint16 // the method's attribute id; 0x1000 and up belong to the driver
	Len      uint16 // bytes of a pointer attribute; 0 for handles and descriptors
	Flags    uint16 // UVERBS_ATTR_F_MANDATORY, UVERBS_ATTR_F_VALID_OUTPUT
	AttrData uint16 // enum element for ENUM_IN, else reserved (0)
	Data     uint64 // value, address, handle or descriptor
}

// String returns the attribute as "id=2 len=8 flags=M data=0x1000".
func (a Attr) String() string {
	f := ""
	if a.Flags&rdma.UVERBS_ATTR_F_MANDATORY != 0 {
		f += "M"
	}
	if a.Flags&rdma.UVERBS_ATTR_F_VALID_OUTPUT != 0 {
		f += "V"
	}
	if rest := a.Flags &^ (rdma.UVERBS_ATTR_F_MANDATORY | rdma.UVERBS_ATTR_F_VALID_OUTPUT); rest != 0 {
		f += "|0x" + strconv.FormatUint(uint64(rest), 16)
	}
	if f == "" {
		f = "0"
	}
	return fmt.Sprintf("id=%#x len=%d flags=%s data=%#x", a.ID, a.Len, f, a.Data)
}

// DecodeIoctl decodes the header and attributes of a uverbs ioctl
// argument, as a tracer or a fake kernel sees them. It checks what the
// kernel checks about the framing (the length field against the number
// of attributes, and that b holds them) and returns an error matching
// ErrMalformed otherwise; it never panics.
func DecodeIoctl(b []byte) (IoctlHeader, []Attr, error) {
	if len(b) < hdrSize {
		return IoctlHeader{}, nil, fmt.Errorf("uverbs ioctl: %d bytes, header needs %d: %w", len(b), hdrSize, ErrMalformed)
	}
	le := binary.LittleEndian
	h := IoctlHeader{
		Length:    le.Uint16(b[0:]),
		Object:    le.Uint16(b[2:]),
		Method:    le.Uint16(b[4:]),
		NumAttrs:  le.Uint16(b[6:]),
		Reserved1: le.Uint64(b[8:]),
		DriverID:  DriverID(le.Uint32(b[16:])),
		Reserved2: le.Uint32(b[20:]),
	}
	want := hdrSize + attrSize*int(h.NumAttrs)
	if int(h.Length) != want {
		return h, nil, fmt.Errorf("uverbs ioctl: length %d for %d attributes (want %d): %w", h.Length, h.NumAttrs, want, ErrMalformed)
	}
	if len(b) < want {
		return h, nil, fmt.Errorf("uverbs ioctl: %d bytes for %d attributes: %w", len(b), h.NumAttrs, ErrMalformed)
	}
	attrs := make([]Attr, h.NumAttrs)
	for i := range attrs {
		p := b[hdrSize+attrSize*i:]
		attrs[i] = Attr{
			ID:       le.Uint16(p[0:]),
			Len:      le.Uint16(p[2:]),
			Flags:    le.Uint16(p[4:]),
			AttrData: le.Uint16(p[6:]),
			Data:     le.Uint64(p[8:]),
		}
	}
	return h, attrs, nil
}

// MethodName returns a readable name for a uverbs object and method, such
// as "MR.REG_DMABUF_MR", for the methods this package issues; others are
// "OBJECT.method(N)".
func MethodName(object, method uint16) string {
	obj, ok := rdma.UverbsObjectNames[uint32(object)]
	if !ok {
		obj = "object(" + strconv.Itoa(int(object)) + ")"
	}
	if n, ok := methodNames[[2]uint16{object, method}]; ok {
		return obj + "." + n
	}
	return obj + ".method(" + strconv.Itoa(int(method)) + ")"
}

var methodNames = map[[2]uint16]string{
	{uint16(rdma.UVERBS_OBJECT_DEVICE), uint16(rdma.UVERBS_METHOD_INVOKE_WRITE)}:    "INVOKE_WRITE",
	{uint16(rdma.UVERBS_OBJECT_DEVICE), uint16(rdma.UVERBS_METHOD_INFO_HANDLES)}:    "INFO_HANDLES",
	{uint16(rdma.UVERBS_OBJECT_DEVICE), uint16(rdma.UVERBS_METHOD_QUERY_PORT)}:      "QUERY_PORT",
	{uint16(rdma.UVERBS_OBJECT_DEVICE), uint16(rdma.UVERBS_METHOD_GET_CONTEXT)}:     "GET_CONTEXT",
	{uint16(rdma.UVERBS_OBJECT_DEVICE), uint16(rdma.UVERBS_METHOD_QUERY_CONTEXT)}:   "QUERY_CONTEXT",
	{uint16(rdma.UVERBS_OBJECT_DEVICE), uint16(rdma.UVERBS_METHOD_QUERY_GID_TABLE)}: "QUERY_GID_TABLE",
	{uint16(rdma.UVERBS_OBJECT_DEVICE), uint16(rdma.UVERBS_METHOD_QUERY_GID_ENTRY)}: "QUERY_GID_ENTRY",
	{uint16(rdma.UVERBS_OBJECT_PD), uint16(rdma.UVERBS_METHOD_PD_DESTROY)}:          "PD_DESTROY",
	{uint16(rdma.UVERBS_OBJECT_MR), uint16(rdma.UVERBS_METHOD_DM_MR_REG)}:           "DM_MR_REG",
	{uint16(rdma.UVERBS_OBJECT_MR), uint16(rdma.UVERBS_METHOD_MR_DESTROY)}:          "MR_DESTROY",
	{uint16(rdma.UVERBS_OBJECT_MR), uint16(rdma.UVERBS_METHOD_ADVISE_MR)}:           "ADVISE_MR",
	{uint16(rdma.UVERBS_OBJECT_MR), uint16(rdma.UVERBS_METHOD_QUERY_MR)}:            "QUERY_MR",
	{uint16(rdma.UVERBS_OBJECT_MR), uint16(rdma.UVERBS_METHOD_REG_DMABUF_MR)}:       "REG_DMABUF_MR",
}
