package ib

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/gaudi-go/gaudi/uapi/rdma"
)

// nlBuilder writes netlink messages the way the kernel lays them out, for
// fixtures: a 16-byte header, then 4-byte-aligned attributes; u64 values
// get a PAD attribute first when they would not be 8-byte aligned
// (nla_put_u64_64bit).
type nlBuilder struct{ b []byte }

func (w *nlBuilder) msg(typ, flags uint16, seq uint32, body func(a *nlAttrs)) {
	start := len(w.b)
	w.b = append(w.b, make([]byte, nlmsgHdrLen)...)
	a := &nlAttrs{w: w}
	if body != nil {
		body(a)
	}
	le := binary.LittleEndian
	le.PutUint32(w.b[start:], uint32(len(w.b)-start))
	le.PutUint16(w.b[start+4:], typ)
	le.PutUint16(w.b[start+6:], flags)
	le.PutUint32(w.b[start+8:], seq)
	le.PutUint32(w.b[start+12:], 0)
}

func (w *nlBuilder) errMsg(seq uint32, errno unix.Errno) {
	w.msg(unix.NLMSG_ERROR, 0, seq, func(a *nlAttrs) {
		a.w.b = binary.LittleEndian.AppendUint32(a.w.b, uint32(-int32(errno)))
		a.w.b = append(a.w.b, make([]byte, nlmsgHdrLen)...) // the echoed request header
	})
}

type nlAttrs struct{ w *nlBuilder }

func (a *nlAttrs) put(typ rdma.RDMANldevAttr, v []byte) {
	b := binary.LittleEndian.AppendUint16(nil, uint16(nlaHdrLen+len(v)))
	b = binary.LittleEndian.AppendUint16(b, uint16(typ))
	b = append(b, v...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	a.w.b = append(a.w.b, b...)
}

func (a *nlAttrs) u32(typ rdma.RDMANldevAttr, v uint32) {
	a.put(typ, binary.LittleEndian.AppendUint32(nil, v))
}
func (a *nlAttrs) u8(typ rdma.RDMANldevAttr, v uint8)   { a.put(typ, []byte{v}) }
func (a *nlAttrs) str(typ rdma.RDMANldevAttr, s string) { a.put(typ, append([]byte(s), 0)) }
func (a *nlAttrs) u64(typ rdma.RDMANldevAttr, v uint64) {
	if (len(a.w.b)+nlaHdrLen)%8 != 0 {
		a.put(rdma.RDMA_NLDEV_ATTR_PAD, nil)
	}
	a.put(typ, binary.LittleEndian.AppendUint64(nil, v))
}

// rxeDump is the shape of the kernel's NLDEV_CMD_GET dump on a machine with
// rxe0 (nldev.c, fill_dev_info): one message per device, then NLMSG_DONE.
func rxeDump(seq uint32) []byte {
	var w nlBuilder
	w.msg(nlType(rdma.RDMA_NLDEV_CMD_GET), unix.NLM_F_MULTI, seq, func(a *nlAttrs) {
		a.u32(rdma.RDMA_NLDEV_ATTR_DEV_INDEX, 0)
		a.str(rdma.RDMA_NLDEV_ATTR_DEV_NAME, "rxe0")
		a.u32(rdma.RDMA_NLDEV_ATTR_PORT_INDEX, 1)
		a.u64(rdma.RDMA_NLDEV_ATTR_CAP_FLAGS, 0x3000)
		a.u64(rdma.RDMA_NLDEV_ATTR_NODE_GUID, 0xfc36b4fffe809fc8)
		a.u64(rdma.RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, 0xfc36b4fffe809fc8)
		a.u8(rdma.RDMA_NLDEV_ATTR_DEV_NODE_TYPE, 1)
		a.u8(rdma.RDMA_NLDEV_ATTR_DEV_DIM, 0)
		a.str(rdma.RDMA_NLDEV_ATTR_DEV_PROTOCOL, "roce")
	})
	w.msg(unix.NLMSG_DONE, unix.NLM_F_MULTI, seq, func(a *nlAttrs) {
		a.w.b = append(a.w.b, 0, 0, 0, 0)
	})
	return w.b
}

// rxeChardev is the shape of the GET_CHARDEV answer (nldev.c,
// nldev_get_chardev).
func rxeChardev(seq uint32) []byte {
	var w nlBuilder
	w.msg(nlType(rdma.RDMA_NLDEV_CMD_GET_CHARDEV), 0, seq, func(a *nlAttrs) {
		a.u64(rdma.RDMA_NLDEV_ATTR_CHARDEV, 231<<20|192)
		a.u64(rdma.RDMA_NLDEV_ATTR_CHARDEV_ABI, 2)
		a.str(rdma.RDMA_NLDEV_ATTR_CHARDEV_NAME, "uverbs0")
		a.u32(rdma.RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID, uint32(DriverRXE))
	})
	return w.b
}

func TestParseNetlinkDevices(t *testing.T) {
	msgs, err := parseNetlink(rxeDump(7))
	if err != nil {
		t.Fatal(err)
	}
	out, done, err := collectReplies("GET", nil, msgs, 7, true)
	if err != nil || !done || len(out) != 1 {
		t.Fatalf("collect dump: %d messages, done %v, %v", len(out), done, err)
	}
	var d NetlinkDevice
	applyDevAttrs(&d, out[0].attrs)
	msgs, err = parseNetlink(rxeChardev(8))
	if err != nil {
		t.Fatal(err)
	}
	cm, done, err := collectReplies("GET_CHARDEV", nil, msgs, 8, false)
	if err != nil || !done || len(cm) != 1 {
		t.Fatalf("collect chardev: %d messages, done %v, %v", len(cm), done, err)
	}
	applyDevAttrs(&d, cm[0].attrs)
	want := NetlinkDevice{
		Index: 0, Name: "rxe0", NodeGUID: 0xfc36b4fffe809fc8, Ports: 1, NodeType: 1, Protocol: "roce",
		Chardev: "uverbs0", ChardevABI: 2, HasChardev: true, DriverID: DriverRXE, HasDriverID: true,
	}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("device (-want +got):\n%s", diff)
	}
}

func TestNetlinkErrorKeepsErrno(t *testing.T) {
	var w nlBuilder
	w.errMsg(3, unix.ENODEV)
	msgs, err := parseNetlink(w.b)
	if err != nil {
		t.Fatal(err)
	}
	_, done, err := collectReplies("GET_CHARDEV", nil, msgs, 3, false)
	var ne *NetlinkError
	if !done || !errors.As(err, &ne) || ne.Op != "GET_CHARDEV" || !errors.Is(err, unix.ENODEV) {
		t.Errorf("error reply: done %v, %v", done, err)
	}
	// An acknowledgement (error 0) ends a request without error.
	var ack nlBuilder
	ack.errMsg(4, 0)
	msgs, _ = parseNetlink(ack.b)
	if _, done, err := collectReplies("X", nil, msgs, 4, true); !done || err != nil {
		t.Errorf("ack: done %v, %v", done, err)
	}
	// Replies to another request are skipped.
	msgs, _ = parseNetlink(rxeChardev(99))
	if out, done, err := collectReplies("X", nil, msgs, 5, false); done || err != nil || len(out) != 0 {
		t.Errorf("stale reply: %d messages, done %v, %v", len(out), done, err)
	}
}

func TestEncodeNetlink(t *testing.T) {
	b := encodeNetlink(nlType(rdma.RDMA_NLDEV_CMD_GET_CHARDEV), unix.NLM_F_REQUEST, 9, []nlAttr{
		u32Attr(rdma.RDMA_NLDEV_ATTR_DEV_INDEX, 3),
		strAttr(rdma.RDMA_NLDEV_ATTR_CHARDEV_TYPE, "uverbs"),
	})
	want := []byte{
		36, 0, 0, 0, 0x0f, 0x14, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0, // header: len 36, type 0x140f
		8, 0, 1, 0, 3, 0, 0, 0, // DEV_INDEX = 3
		11, 0, 69, 0, 'u', 'v', 'e', 'r', 'b', 's', 0, 0, // CHARDEV_TYPE "uverbs\0" + pad
	}
	if d := cmp.Diff(want, b); d != "" {
		t.Errorf("request bytes (-want +got):\n%s", d)
	}
	msgs, err := parseNetlink(b)
	if err != nil || len(msgs) != 1 || len(msgs[0].attrs) != 2 || nlString(msgs[0].attrs[1].val) != "uverbs" {
		t.Errorf("round trip: %+v, %v", msgs, err)
	}
	if nlType(rdma.RDMA_NLDEV_CMD_GET) != 0x1401 {
		t.Errorf("NLDEV GET type %#x", nlType(rdma.RDMA_NLDEV_CMD_GET))
	}
}

func TestParseNetlinkMalformed(t *testing.T) {
	good := rxeChardev(1)
	tests := map[string][]byte{
		"short header":       good[:10],
		"length too large":   append([]byte{0xff, 0, 0, 0}, good[4:]...),
		"length too small":   append([]byte{8, 0, 0, 0}, good[4:]...),
		"attr length zero":   func() []byte { b := append([]byte(nil), good...); b[16], b[17] = 0, 0; return b }(),
		"attr past the end":  func() []byte { b := append([]byte(nil), good...); b[16] = 0xf0; return b }(),
		"short error":        {20, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0},
		"positive error":     {20, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0},
		"trailing attr byte": func() []byte { b := append([]byte(nil), good...); b[0]++; return append(b, 0) }(),
	}
	for name, b := range tests {
		if _, err := parseNetlink(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
	// Values of the wrong size are ignored, not trusted.
	var d NetlinkDevice
	applyDevAttrs(&d, []nlAttr{{typ: uint16(rdma.RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID), val: []byte{14}}, {typ: uint16(rdma.RDMA_NLDEV_ATTR_NODE_GUID), val: []byte{1, 2}}})
	if d.HasDriverID || d.NodeGUID != 0 {
		t.Errorf("short values accepted: %+v", d)
	}
}

func FuzzParseNetlink(f *testing.F) {
	f.Add(rxeDump(1))
	f.Add(rxeChardev(2))
	var w nlBuilder
	w.errMsg(3, unix.EPERM)
	f.Add(w.b)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs, err := parseNetlink(b)
		for _, m := range msgs {
			var d NetlinkDevice
			applyDevAttrs(&d, m.attrs)
			for _, a := range m.attrs {
				if len(a.val) > len(b) {
					t.Fatalf("attribute of %d bytes from %d input bytes", len(a.val), len(b))
				}
			}
		}
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v does not match ErrMalformed", err)
		}
		collectReplies("X", nil, msgs, 1, true)
	})
}
