package ib

import (
	"encoding/binary"
	"fmt"

	"github.com/gaudi-go/gaudi/uapi/rdma"
	"golang.org/x/sys/unix"
)

// RDMA netlink (NETLINK_RDMA, include/uapi/rdma/rdma_netlink.h and the
// kernel's drivers/infiniband/core/nldev.c): the message type is
// (client << 10) | op with client RDMA_NL_NLDEV, the attributes follow the
// 16-byte netlink header directly (no generic netlink header), and each
// attribute is a 4-byte {len, type} header plus its value, padded to 4
// bytes. u64 values may be preceded by a PAD attribute to align them.

// NetlinkDevice is what RDMA netlink reports about one device: the
// NLDEV_CMD_GET answer, and for GET_CHARDEV of type "uverbs" its user
// verbs node and driver id. It is plain data.
type NetlinkDevice struct {
	Index     uint32 // the kernel's device index
	Name      string // such as "rxe0"
	NodeGUID  uint64 // in host order
	Ports     uint32 // the highest port number
	FWVersion string // "" when the driver reports none
	NodeType  uint8  // RDMA_NODE_*: 1 CA, 4 RNIC...
	Protocol  string // "ib", "roce", "iw" or "opa" on kernels that say
	// Chardev is the uverbs node's name ("uverbs0"); HasChardev says
	// whether GET_CHARDEV answered, and ChardevABI is its ABI version.
	Chardev    string
	ChardevABI uint64
	HasChardev bool
	// DriverID is the uverbs driver id; HasDriverID is false on kernels
	// that do not report it.
	DriverID    DriverID
	HasDriverID bool
}

// nlType returns RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, op).
func nlType(op rdma.RDMANldevCommand) uint16 {
	return uint16(rdma.RDMA_NL_NLDEV<<10) | uint16(op)
}

const (
	nlmsgHdrLen = 16
	nlaHdrLen   = 4
)

// nlAttr is one netlink attribute.
type nlAttr struct {
	typ uint16 // without the NESTED and BYTEORDER flags
	val []byte
}

// nlMsg is one decoded netlink message.
type nlMsg struct {
	typ, flags uint16
	seq, pid   uint32
	attrs      []nlAttr
	errno      unix.Errno // for NLMSG_ERROR: the (positive) error; 0 = ACK
}

func nlAlign(n int) int { return (n + 3) &^ 3 }

// encodeNetlink lays out a request of type typ with flags, seq and attrs.
func encodeNetlink(typ, flags uint16, seq uint32, attrs []nlAttr) []byte {
	n := nlmsgHdrLen
	for _, a := range attrs {
		n += nlAlign(nlaHdrLen + len(a.val))
	}
	b := make([]byte, n)
	le := binary.LittleEndian // netlink is host order; we build for little-endian hosts only
	le.PutUint32(b[0:], uint32(n))
	le.PutUint16(b[4:], typ)
	le.PutUint16(b[6:], flags)
	le.PutUint32(b[8:], seq)
	off := nlmsgHdrLen
	for _, a := range attrs {
		le.PutUint16(b[off:], uint16(nlaHdrLen+len(a.val)))
		le.PutUint16(b[off+2:], a.typ)
		copy(b[off+nlaHdrLen:], a.val)
		off += nlAlign(nlaHdrLen + len(a.val))
	}
	return b
}

// u32Attr and strAttr build attributes.
func u32Attr(typ rdma.RDMANldevAttr, v uint32) nlAttr {
	return nlAttr{typ: uint16(typ), val: binary.LittleEndian.AppendUint32(nil, v)}
}

func strAttr(typ rdma.RDMANldevAttr, s string) nlAttr {
	return nlAttr{typ: uint16(typ), val: append([]byte(s), 0)}
}

// parseNetlink decodes every message in b (one datagram). It never
// panics: a truncated or inconsistent message is an error matching
// ErrMalformed.
func parseNetlink(b []byte) ([]nlMsg, error) {
	var msgs []nlMsg
	le := binary.LittleEndian
	for len(b) > 0 {
		if len(b) < nlmsgHdrLen {
			return msgs, fmt.Errorf("netlink: %d trailing bytes: %w", len(b), ErrMalformed)
		}
		n := int(le.Uint32(b[0:]))
		if n < nlmsgHdrLen || n > len(b) {
			return msgs, fmt.Errorf("netlink: message length %d of %d bytes: %w", n, len(b), ErrMalformed)
		}
		m := nlMsg{typ: le.Uint16(b[4:]), flags: le.Uint16(b[6:]), seq: le.Uint32(b[8:]), pid: le.Uint32(b[12:])}
		body := b[nlmsgHdrLen:n]
		switch m.typ {
		case unix.NLMSG_ERROR:
			if len(body) < 4 {
				return msgs, fmt.Errorf("netlink: short error message: %w", ErrMalformed)
			}
			code := int32(le.Uint32(body))
			if code > 0 || code < -4095 {
				return msgs, fmt.Errorf("netlink: error code %d: %w", code, ErrMalformed)
			}
			m.errno = unix.Errno(-code)
		case unix.NLMSG_DONE, unix.NLMSG_NOOP:
		default:
			attrs, err := parseAttrs(body)
			if err != nil {
				return msgs, err
			}
			m.attrs = attrs
		}
		msgs = append(msgs, m)
		b = b[min(nlAlign(n), len(b)):]
	}
	return msgs, nil
}

// parseAttrs decodes a run of netlink attributes.
func parseAttrs(b []byte) ([]nlAttr, error) {
	var attrs []nlAttr
	le := binary.LittleEndian
	for len(b) >= nlaHdrLen {
		l := int(le.Uint16(b[0:]))
		if l < nlaHdrLen || l > len(b) {
			return attrs, fmt.Errorf("netlink: attribute length %d of %d bytes: %w", l, len(b), ErrMalformed)
		}
		attrs = append(attrs, nlAttr{typ: le.Uint16(b[2:]) &^ (unix.NLA_F_NESTED | unix.NLA_F_NET_BYTEORDER), val: b[nlaHdrLen:l]})
		b = b[min(nlAlign(l), len(b)):]
	}
	if len(b) != 0 {
		return attrs, fmt.Errorf("netlink: %d trailing attribute bytes: %w", len(b), ErrMalformed)
	}
	return attrs, nil
}

// nlString returns a NUL-terminated string value.
func nlString(v []byte) string {
	for i, c := range v {
		if c == 0 {
			return string(v[:i])
		}
	}
	return string(v)
}

// applyDevAttrs copies the attributes of a GET or GET_CHARDEV answer into d.
// Values of the wrong size are ignored.
func applyDevAttrs(d *NetlinkDevice, attrs []nlAttr) {
	le := binary.LittleEndian
	for _, a := range attrs {
		v := a.val
		switch rdma.RDMANldevAttr(a.typ) {
		case rdma.RDMA_NLDEV_ATTR_DEV_INDEX:
			if len(v) == 4 {
				d.Index = le.Uint32(v)
			}
		case rdma.RDMA_NLDEV_ATTR_DEV_NAME:
			d.Name = nlString(v)
		case rdma.RDMA_NLDEV_ATTR_PORT_INDEX:
			if len(v) == 4 {
				d.Ports = le.Uint32(v)
			}
		case rdma.RDMA_NLDEV_ATTR_FW_VERSION:
			d.FWVersion = nlString(v)
		case rdma.RDMA_NLDEV_ATTR_NODE_GUID:
			if len(v) == 8 {
				d.NodeGUID = le.Uint64(v)
			}
		case rdma.RDMA_NLDEV_ATTR_DEV_NODE_TYPE:
			if len(v) == 1 {
				d.NodeType = v[0]
			}
		case rdma.RDMA_NLDEV_ATTR_DEV_PROTOCOL:
			d.Protocol = nlString(v)
		case rdma.RDMA_NLDEV_ATTR_CHARDEV_NAME:
			d.Chardev = nlString(v)
			d.HasChardev = true
		case rdma.RDMA_NLDEV_ATTR_CHARDEV_ABI:
			if len(v) == 8 {
				d.ChardevABI = le.Uint64(v)
			}
		case rdma.RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID:
			if len(v) == 4 {
				d.DriverID = DriverID(le.Uint32(v))
				d.HasDriverID = true
			}
		}
	}
}
