package ib

import (
	"encoding/binary"
	"sync"

	"github.com/gaudi-go/gaudi/uapi/rdma"
	"golang.org/x/sys/unix"
)

// fakeKernel is a verbsFile that plays the kernel's uverbs core and an
// rxe-like driver from the request bytes alone: it decodes the header and
// attributes with DecodeIoctl, follows pointers with payloadAt, checks the
// framing rules the kernel checks, and keeps a table of live objects so
// tests can see leaks. It is safe for concurrent use.
type fakeKernel struct {
	driverID DriverID

	mu       sync.Mutex
	closed   bool
	noIoctl  bool                  // answer ENOTTY to every ioctl (a pre-ioctl kernel)
	fail     map[string]unix.Errno // errno per method name (MethodName, or "WRITE:<cmd>")
	eintr    int                   // answer EINTR this many times first
	calls    []string
	context  bool
	nextH    uint32
	pds      map[uint32]bool
	mrs      map[uint32]uint32 // mr -> pd
	lastReq  []byte            // header+attributes of the last ioctl, as sent
	lastAttr []Attr
}

func newFakeKernel(id DriverID) *fakeKernel {
	return &fakeKernel{driverID: id, fail: map[string]unix.Errno{}, pds: map[uint32]bool{}, mrs: map[uint32]uint32{}, nextH: 1}
}

func (k *fakeKernel) ioctl(b []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return unix.EBADF
	}
	if k.noIoctl {
		return unix.ENOTTY
	}
	h, attrs, err := DecodeIoctl(b)
	if err != nil || h.Reserved1 != 0 || h.Reserved2 != 0 {
		return unix.EINVAL
	}
	k.lastReq = append([]byte(nil), b[:h.Length]...)
	k.lastAttr = attrs
	name := MethodName(h.Object, h.Method)
	k.calls = append(k.calls, name)
	if k.eintr > 0 {
		k.eintr--
		// A real interrupted call may have scribbled on the request.
		binary.LittleEndian.PutUint16(b[2:], 0xffff)
		return unix.EINTR
	}
	if h.DriverID != k.driverID {
		return unix.EINVAL
	}
	for _, a := range attrs {
		if a.Flags != rdma.UVERBS_ATTR_F_MANDATORY || a.AttrData != 0 {
			return unix.EINVAL
		}
	}
	if e, ok := k.fail[name]; ok {
		return e
	}
	get := func(id uint16) (Attr, bool) {
		for _, a := range attrs {
			if a.ID == id {
				return a, true
			}
		}
		return Attr{}, false
	}
	out := func(id uint16) []byte {
		a, ok := get(id)
		if !ok {
			return nil
		}
		return payloadAt(b, a.Data, int(a.Len))
	}
	in := func(id uint16) []byte {
		a, ok := get(id)
		if !ok {
			return nil
		}
		if a.Len <= 8 {
			v := binary.LittleEndian.AppendUint64(nil, a.Data)
			return v[:a.Len]
		}
		return payloadAt(b, a.Data, int(a.Len))
	}
	le := binary.LittleEndian
	switch name {
	case "DEVICE.GET_CONTEXT":
		if k.context {
			return unix.EINVAL
		}
		o := out(uint16(rdma.UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS))
		if len(o) != 4 {
			return unix.EINVAL
		}
		le.PutUint32(o, 2)
		if o := out(uint16(rdma.UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT)); len(o) == 8 {
			le.PutUint64(o, 1)
		}
		k.context = true
		return nil
	case "DEVICE.QUERY_PORT":
		p, _ := get(uint16(rdma.UVERBS_ATTR_QUERY_PORT_PORT_NUM))
		o := out(uint16(rdma.UVERBS_ATTR_QUERY_PORT_RESP))
		if p.Len != 8 || len(o) < queryPortRespSize {
			return unix.EINVAL
		}
		if p.Data != 1 {
			return unix.EINVAL
		}
		fakePortResp(o)
		return nil
	case "DEVICE.QUERY_GID_TABLE":
		es, _ := get(uint16(rdma.UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE))
		o := out(uint16(rdma.UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES))
		n := out(uint16(rdma.UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES))
		if es.Len != 8 || es.Data != gidEntrySize || len(n) != 8 || len(o) < 2*gidEntrySize {
			return unix.EINVAL
		}
		fakeGID(o[0:], 0, [16]byte{0xfe, 0x80, 15: 1})
		fakeGID(o[gidEntrySize:], 1, [16]byte{10: 0xff, 11: 0xff, 10, 77, 0, 1})
		le.PutUint64(n, 2)
		return nil
	case "DEVICE.QUERY_GID_ENTRY":
		port, _ := get(uint16(rdma.UVERBS_ATTR_QUERY_GID_ENTRY_PORT))
		idx, _ := get(uint16(rdma.UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX))
		fl, ok := get(uint16(rdma.UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS))
		o := out(uint16(rdma.UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY))
		if port.Len != 8 || idx.Len != 8 || !ok || fl.Len != 4 || len(o) != gidEntrySize || port.Data != 1 {
			return unix.EINVAL
		}
		if idx.Data != 0 {
			return unix.ENODATA
		}
		fakeGID(o, 0, [16]byte{0xfe, 0x80, 15: 1})
		return nil
	case "DEVICE.INVOKE_WRITE":
		cmd, ok := get(uint16(rdma.UVERBS_ATTR_WRITE_CMD))
		if !ok || cmd.Len != 8 {
			return unix.EINVAL
		}
		return k.command(rdma.UverbsWriteCmds(cmd.Data), in(uint16(rdma.UVERBS_ATTR_CORE_IN)), out(uint16(rdma.UVERBS_ATTR_CORE_OUT)))
	case "PD.PD_DESTROY":
		a, _ := get(uint16(rdma.UVERBS_ATTR_DESTROY_PD_HANDLE))
		return k.deallocPD(uint32(a.Data))
	case "MR.MR_DESTROY":
		a, _ := get(uint16(rdma.UVERBS_ATTR_DESTROY_MR_HANDLE))
		return k.deregMR(uint32(a.Data))
	case "MR.REG_DMABUF_MR":
		if len(attrs) != 9 {
			return unix.EINVAL
		}
		for id, want := range map[uint16]uint16{0: 0, 1: 0, 2: 8, 3: 8, 4: 8, 5: 4, 6: 4, 7: 4, 8: 4} {
			if a, ok := get(id); !ok || a.Len != want {
				return unix.EINVAL
			}
		}
		pd, _ := get(uint16(rdma.UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE))
		if !k.pds[uint32(pd.Data)] {
			return unix.EINVAL
		}
		fd, _ := get(uint16(rdma.UVERBS_ATTR_REG_DMABUF_MR_FD))
		if int32(uint32(fd.Data)) < 0 {
			return unix.EBADF
		}
		h := k.nextH
		k.nextH++
		k.mrs[h] = uint32(pd.Data)
		le.PutUint64(b[hdrSize+8:], uint64(h)) // attribute 0 is the new handle
		le.PutUint32(out(uint16(rdma.UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY)), 0x100+h)
		le.PutUint32(out(uint16(rdma.UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY)), 0x200+h)
		return nil
	}
	return unix.EPROTONOSUPPORT
}

// command runs one write command; core is its request, resp its response
// area.
func (k *fakeKernel) command(cmd rdma.UverbsWriteCmds, core, resp []byte) error {
	le := binary.LittleEndian
	if e, ok := k.fail["WRITE:"+writeName(cmd)]; ok {
		return e
	}
	switch cmd {
	case rdma.IB_USER_VERBS_CMD_GET_CONTEXT:
		if len(core) < 8 || len(resp) < 8 || k.context {
			return unix.EINVAL
		}
		le.PutUint32(resp[0:], 0xffffffff) // no async fd in the fake
		le.PutUint32(resp[4:], 2)
		k.context = true
	case rdma.IB_USER_VERBS_CMD_QUERY_DEVICE:
		if len(core) < 8 || len(resp) < queryDeviceRespSize {
			return unix.ENOSPC
		}
		le.PutUint32(resp[80:], 1000) // max_mr
		le.PutUint32(resp[84:], 100)  // max_pd
		resp[171] = 1                 // phys_port_cnt
	case rdma.IB_USER_VERBS_CMD_QUERY_PORT:
		if len(core) < 16 || len(resp) < queryPortRespSize || core[8] != 1 {
			return unix.EINVAL
		}
		fakePortResp(resp)
	case rdma.IB_USER_VERBS_CMD_ALLOC_PD:
		if len(core) < 8 || len(resp) < 4 {
			return unix.ENOSPC
		}
		h := k.nextH
		k.nextH++
		k.pds[h] = true
		le.PutUint32(resp, h)
	case rdma.IB_USER_VERBS_CMD_DEALLOC_PD:
		if len(core) < 4 {
			return unix.ENOSPC
		}
		return k.deallocPD(le.Uint32(core))
	case rdma.IB_USER_VERBS_CMD_REG_MR:
		if len(core) < 40 || len(resp) < 12 {
			return unix.ENOSPC
		}
		start, length, pd, access := le.Uint64(core[8:]), le.Uint64(core[16:]), le.Uint32(core[32:]), Access(le.Uint32(core[36:]))
		if !k.pds[pd] || length == 0 || start == 0 {
			return unix.EINVAL
		}
		if access&(AccessRemoteWrite|AccessRemoteAtomic) != 0 && access&AccessLocalWrite == 0 {
			return unix.EINVAL
		}
		h := k.nextH
		k.nextH++
		k.mrs[h] = pd
		le.PutUint32(resp[0:], h)
		le.PutUint32(resp[4:], 0x100+h)
		le.PutUint32(resp[8:], 0x200+h)
	case rdma.IB_USER_VERBS_CMD_DEREG_MR:
		if len(core) < 4 {
			return unix.ENOSPC
		}
		return k.deregMR(le.Uint32(core))
	default:
		return unix.EOPNOTSUPP
	}
	return nil
}

func writeName(cmd rdma.UverbsWriteCmds) string {
	switch cmd {
	case rdma.IB_USER_VERBS_CMD_GET_CONTEXT:
		return "GET_CONTEXT"
	case rdma.IB_USER_VERBS_CMD_QUERY_DEVICE:
		return "QUERY_DEVICE"
	case rdma.IB_USER_VERBS_CMD_QUERY_PORT:
		return "QUERY_PORT"
	case rdma.IB_USER_VERBS_CMD_ALLOC_PD:
		return "ALLOC_PD"
	case rdma.IB_USER_VERBS_CMD_DEALLOC_PD:
		return "DEALLOC_PD"
	case rdma.IB_USER_VERBS_CMD_REG_MR:
		return "REG_MR"
	case rdma.IB_USER_VERBS_CMD_DEREG_MR:
		return "DEREG_MR"
	}
	return "?"
}

func (k *fakeKernel) deallocPD(h uint32) error {
	if !k.pds[h] {
		return unix.EINVAL
	}
	for _, pd := range k.mrs {
		if pd == h {
			return unix.EBUSY
		}
	}
	delete(k.pds, h)
	return nil
}

func (k *fakeKernel) deregMR(h uint32) error {
	if _, ok := k.mrs[h]; !ok {
		return unix.EINVAL
	}
	delete(k.mrs, h)
	return nil
}

// write plays the legacy write(2) path: header, core request with the
// response address in its first u64, response area in the same slice.
func (k *fakeKernel) write(b []byte, n int) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return unix.EBADF
	}
	if n < 8 || n > len(b) {
		return unix.EINVAL
	}
	le := binary.LittleEndian
	cmd, inWords, outWords := rdma.UverbsWriteCmds(le.Uint32(b[0:])), int(le.Uint16(b[4:])), int(le.Uint16(b[6:]))
	if inWords*4 != n {
		return unix.EINVAL
	}
	k.calls = append(k.calls, "WRITE:"+writeName(cmd))
	core := b[8:n]
	var resp []byte
	if outWords > 0 {
		if len(core) < 8 {
			return unix.EINVAL
		}
		resp = payloadAt(b, le.Uint64(core), outWords*4)
		if resp == nil {
			return unix.EFAULT
		}
	}
	return k.command(cmd, core, resp)
}

func (k *fakeKernel) close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.closed {
		k.closed = true
		k.pds = map[uint32]bool{}
		k.mrs = map[uint32]uint32{}
	}
	return nil
}

// live returns the number of live PDs and MRs.
func (k *fakeKernel) live() (pds, mrs int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.pds), len(k.mrs)
}

func fakePortResp(o []byte) {
	binary.LittleEndian.PutUint32(o[16:], 16) // gid_tbl_len
	o[26] = uint8(PortActive)
	o[28] = 3 // active_mtu
	o[37] = uint8(LinkLayerEthernet)
}

func fakeGID(o []byte, idx uint32, gid [16]byte) {
	copy(o, gid[:])
	binary.LittleEndian.PutUint32(o[16:], idx)
	binary.LittleEndian.PutUint32(o[20:], 1)
	binary.LittleEndian.PutUint32(o[24:], uint32(GIDTypeRoCEv2))
	binary.LittleEndian.PutUint32(o[28:], 2)
}

// fakeContext opens a Context on a fake kernel for an rxe-like device.
func fakeContext(k *fakeKernel, id DriverID) (*Context, error) {
	return newContext(Device{Name: "fake0", DriverID: id, DriverIDSource: "test", UverbsPath: "/dev/infiniband/uverbs9"}, k)
}

// The fake kernel has no driver queues to map.
func (k *fakeKernel) mmap(int64, int) ([]byte, error) { return nil, unix.ENODEV }

func (k *fakeKernel) munmap([]byte) error { return nil }
