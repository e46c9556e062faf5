package ib

import (
	"encoding/binary"

	"github.com/gaudi-go/gaudi/uapi/rdma"
)

// How a uverbs ioctl travels (include/uapi/rdma/rdma_user_ioctl_cmds.h and
// the kernel's drivers/infiniband/core/uverbs_ioctl.c): a 24-byte header
// {length, object_id, method_id, num_attrs, reserved1, driver_id,
// reserved2} followed by num_attrs 16-byte attributes {attr_id, len,
// flags, attr_data, data}. length must be exactly 24 + 16·num_attrs. An
// input of at most 8 bytes travels inline in data; a longer input and every
// output travel as a user address in data. Object handles (IDR) have len 0
// and the handle in data; for a new object the kernel writes the handle
// back into data.
//
// We build the header, the attributes and every buffer they point at in
// one heap slice: [header][attributes][payload...]. Addresses into the
// payload stay valid because heap objects do not move, and keeping the
// slice alive keeps every pointed-at buffer alive.
const (
	hdrSize  = 24 // sizeof(struct ib_uverbs_ioctl_hdr)
	attrSize = 16 // sizeof(struct ib_uverbs_attr)
	maxAttrs = 12 // the largest method we issue has 9
	// maxIoctlLen is the largest header+attributes length the kernel
	// accepts (PAGE_SIZE on the smallest pages; older kernels said 4096).
	maxIoctlLen = 4096
)

// attrKind is how one attribute is encoded.
type attrKind uint8

const (
	kindInline attrKind = iota + 1 // value in data, len given (PTR_IN ≤ 8, CONST_IN, FLAGS_IN)
	kindPtrIn                      // bytes in the payload, data = address
	kindPtrOut                     // zeroed payload area, data = address
	kindIDR                        // len 0, data = handle
	kindIDRNew                     // len 0, data 0; the kernel writes the new handle
)

type attrSpec struct {
	id   uint16
	kind attrKind
	len  uint16
	val  uint64
	in   []byte
	off  int // payload offset of a pointer attribute, set by encode
}

// request is one uverbs ioctl being built. The zero value with obj and
// method set is ready for attributes. It is not safe for concurrent use.
type request struct {
	obj, method uint16
	n           int
	attrs       [maxAttrs]attrSpec
	buf         []byte // set by encode
}

func (r *request) add(a attrSpec) {
	if r.n == maxAttrs {
		// A programming error in this package, not bad input.
		panic("ib: too many uverbs attributes")
	}
	r.attrs[r.n] = a
	r.n++
}

// inline adds an attribute whose value travels in data: size is the len
// the kernel checks (8 for CONST_IN, 4 or 8 for FLAGS_IN and small
// PTR_IN values).
func (r *request) inline(id uint16, size uint16, v uint64) {
	r.add(attrSpec{id: id, kind: kindInline, len: size, val: v})
}

// ptrIn adds an input of any length: inline when it fits in 8 bytes, as
// the kernel requires, else by address.
func (r *request) ptrIn(id uint16, b []byte) {
	if len(b) <= 8 {
		var v [8]byte
		copy(v[:], b)
		r.inline(id, uint16(len(b)), binary.LittleEndian.Uint64(v[:]))
		return
	}
	r.add(attrSpec{id: id, kind: kindPtrIn, len: uint16(len(b)), in: b})
}

// ptrOut adds an output area of n bytes.
func (r *request) ptrOut(id uint16, n int) {
	r.add(attrSpec{id: id, kind: kindPtrOut, len: uint16(n)})
}

// idr adds a handle of an existing object.
func (r *request) idr(id uint16, h uint32) {
	r.add(attrSpec{id: id, kind: kindIDR, val: uint64(h)})
}

// idrNew adds the handle of the object the method creates.
func (r *request) idrNew(id uint16) {
	r.add(attrSpec{id: id, kind: kindIDRNew})
}

// encode lays out the request for driver id drv into r.buf and returns
// the length of its header and attributes. Every attribute is marked
// mandatory, so a kernel that does not know one refuses the request
// instead of silently ignoring it.
func (r *request) encode(drv uint32) int {
	head := hdrSize + attrSize*r.n
	total := head
	for i := range r.attrs[:r.n] {
		a := &r.attrs[i]
		if a.kind == kindPtrIn || a.kind == kindPtrOut {
			a.off = total
			total += (int(a.len) + 7) &^ 7
		}
	}
	b := make([]byte, total)
	le := binary.LittleEndian
	le.PutUint16(b[0:], uint16(head))
	le.PutUint16(b[2:], r.obj)
	le.PutUint16(b[4:], r.method)
	le.PutUint16(b[6:], uint16(r.n))
	le.PutUint32(b[16:], drv)
	for i := range r.attrs[:r.n] {
		a := &r.attrs[i]
		p := b[hdrSize+attrSize*i:]
		le.PutUint16(p[0:], a.id)
		le.PutUint16(p[2:], a.len)
		le.PutUint16(p[4:], rdma.UVERBS_ATTR_F_MANDATORY)
		switch a.kind {
		case kindInline, kindIDR:
			le.PutUint64(p[8:], a.val)
		case kindPtrIn:
			copy(b[a.off:], a.in)
			le.PutUint64(p[8:], addrOf(b, a.off))
		case kindPtrOut:
			le.PutUint64(p[8:], addrOf(b, a.off))
		}
	}
	r.buf = b
	return head
}

// data returns what the kernel left in attribute i's data (a new handle).
func (r *request) data(i int) uint64 {
	return binary.LittleEndian.Uint64(r.buf[hdrSize+attrSize*i+8:])
}

// out returns the payload of pointer attribute i.
func (r *request) out(i int) []byte {
	a := &r.attrs[i]
	return r.buf[a.off : a.off+int(a.len)]
}

// writeCmd is one legacy write() command: the 8-byte header
// {command, in_words, out_words}, the core request whose first u64 is
// the response address, the driver's input, and then (in the same slice)
// the response area: core response followed by driver output.
type writeCmd struct {
	buf     []byte
	n       int // bytes handed to write(2)
	respOff int
}

// newWriteCmd lays out command cmd. core is the core request including
// its leading response field (which newWriteCmd fills in); every length
// must be a multiple of 4, as the kernel counts in 4-byte words.
func newWriteCmd(cmd uint32, core, drvIn []byte, respLen, drvOutLen int) *writeCmd {
	n := 8 + len(core) + len(drvIn)
	respOff := (n + 7) &^ 7
	b := make([]byte, respOff+respLen+drvOutLen)
	le := binary.LittleEndian
	le.PutUint32(b[0:], cmd)
	le.PutUint16(b[4:], uint16(n/4))
	le.PutUint16(b[6:], uint16((respLen+drvOutLen)/4))
	copy(b[8:], core)
	copy(b[8+len(core):], drvIn)
	if len(core) >= 8 && respLen+drvOutLen > 0 {
		le.PutUint64(b[8:], addrOf(b, respOff))
	}
	return &writeCmd{buf: b, n: n, respOff: respOff}
}

// resp returns the response area (core response and driver output).
func (w *writeCmd) resp() []byte { return w.buf[w.respOff:] }
