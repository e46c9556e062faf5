package ib

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/gaudi-go/gaudi/uapi/rdma"
	"golang.org/x/sys/unix"
)

// DeviceAttr is what QUERY_DEVICE reports (struct
// ib_uverbs_query_device_resp): each field is the kernel's field of the
// same meaning (max_mr_size, vendor_id, phys_port_cnt...) in Go spelling.
// It is plain data.
type DeviceAttr struct {
	FWVersion    uint64
	NodeGUID     uint64 // as the kernel stores it: big-endian bytes in memory
	SysImageGUID uint64
	MaxMRSize    uint64
	PageSizeCap  uint64
	VendorID     uint32
	VendorPartID uint32
	HWVersion    uint32
	MaxQP        uint32
	MaxQPWr      uint32
	MaxCQ        uint32
	MaxCQE       uint32
	MaxMR        uint32
	MaxPD        uint32
	MaxSGE       uint32
	MaxMW        uint32
	MaxAH        uint32
	MaxSRQ       uint32
	MaxPKeys     uint16
	PhysPortCnt  uint8
}

// queryDeviceRespSize is sizeof(struct ib_uverbs_query_device_resp); the
// answer is decoded through the generated (gcc-proven) layout.
const queryDeviceRespSize = 176

// QueryDevice issues the QUERY_DEVICE command (the kernel has no ioctl
// method for it; it goes through INVOKE_WRITE, or write(2) on legacy
// kernels).
func (c *Context) QueryDevice() (DeviceAttr, error) {
	if err := c.use(opQueryDevice); err != nil {
		return DeviceAttr{}, err
	}
	core := make([]byte, 8) // response
	resp, _, err := c.invokeWrite(opQueryDevice, rdma.IB_USER_VERBS_CMD_QUERY_DEVICE, core, queryDeviceRespSize, nil, 0)
	if err != nil {
		return DeviceAttr{}, err
	}
	return decodeDeviceAttr(resp), nil
}

func decodeDeviceAttr(b []byte) DeviceAttr {
	var r rdma.UverbsQueryDeviceResp
	if _, err := binary.Decode(b, binary.LittleEndian, &r); err != nil {
		return DeviceAttr{}
	}
	return DeviceAttr{
		FWVersion:    r.FWVer,
		NodeGUID:     r.NodeGUID,
		SysImageGUID: r.SysImageGUID,
		MaxMRSize:    r.MaxMRSize,
		PageSizeCap:  r.PageSizeCap,
		VendorID:     r.VendorID,
		VendorPartID: r.VendorPartID,
		HWVersion:    r.HWVer,
		MaxQP:        r.MaxQP,
		MaxQPWr:      r.MaxQPWr,
		MaxSGE:       r.MaxSge,
		MaxCQ:        r.MaxCQ,
		MaxCQE:       r.MaxCqe,
		MaxMR:        r.MaxMR,
		MaxPD:        r.MaxPD,
		MaxMW:        r.MaxMW,
		MaxAH:        r.MaxAH,
		MaxSRQ:       r.MaxSRQ,
		MaxPKeys:     r.MaxPkeys,
		PhysPortCnt:  r.PhysPortCnt,
	}
}

// PortState is a port's logical state (enum ib_port_state).
type PortState uint8

// Port states.
const (
	PortNop         PortState = 0
	PortDown        PortState = 1
	PortInit        PortState = 2
	PortArmed       PortState = 3
	PortActive      PortState = 4
	PortActiveDefer PortState = 5
)

// String returns the state as sysfs spells it, such as "ACTIVE".
func (s PortState) String() string {
	switch s {
	case PortNop:
		return "NOP"
	case PortDown:
		return "DOWN"
	case PortInit:
		return "INIT"
	case PortArmed:
		return "ARMED"
	case PortActive:
		return "ACTIVE"
	case PortActiveDefer:
		return "ACTIVE_DEFER"
	}
	return fmt.Sprintf("PortState(%d)", uint8(s))
}

// LinkLayer is a port's link layer as QUERY_PORT reports it.
type LinkLayer uint8

// Link layers (IB_LINK_LAYER_*).
const (
	LinkLayerUnspecified LinkLayer = 0
	LinkLayerInfiniBand  LinkLayer = 1
	LinkLayerEthernet    LinkLayer = 2
)

// String returns "InfiniBand", "Ethernet" or "Unknown", as sysfs does.
func (l LinkLayer) String() string {
	switch l {
	case LinkLayerInfiniBand:
		return "InfiniBand"
	case LinkLayerEthernet:
		return "Ethernet"
	}
	return "Unknown"
}

// PortAttr is what QUERY_PORT reports (struct ib_uverbs_query_port_resp
// and its extension): each field is the kernel's field of the same meaning
// (state, gid_tbl_len, link_layer...) in Go spelling. It is plain data.
type PortAttr struct {
	State         PortState
	MaxMTU        uint8 // enum ib_mtu: 1 = 256 bytes ... 5 = 4096 bytes
	ActiveMTU     uint8
	GIDTableLen   uint32
	PortCapFlags  uint32
	MaxMsgSize    uint32
	PKeyTableLen  uint16
	LID           uint16
	SMLID         uint16
	LMC           uint8
	ActiveWidth   uint8
	ActiveSpeed   uint8
	PhysState     uint8
	LinkLayer     LinkLayer
	Flags         uint8
	PortCapFlags2 uint16
	ActiveSpeedEx uint32
}

// Sizes of struct ib_uverbs_query_port_resp and _resp_ex.
const (
	queryPortRespSize   = 40
	queryPortRespExSize = 48
)

// QueryPort issues QUERY_PORT for port (ports count from 1): the ioctl
// method, or the write() command on legacy kernels.
func (c *Context) QueryPort(port uint8) (PortAttr, error) {
	if err := c.use(opQueryPort); err != nil {
		return PortAttr{}, err
	}
	if c.legacy {
		core := make([]byte, 16) // response, port_num, reserved[7]
		core[8] = port
		resp, _, err := c.invokeWrite(opQueryPort, rdma.IB_USER_VERBS_CMD_QUERY_PORT, core, queryPortRespSize, nil, 0)
		if err != nil {
			return PortAttr{}, err
		}
		return decodePortAttr(resp), nil
	}
	r := request{obj: uint16(rdma.UVERBS_OBJECT_DEVICE), method: uint16(rdma.UVERBS_METHOD_QUERY_PORT)}
	r.inline(uint16(rdma.UVERBS_ATTR_QUERY_PORT_PORT_NUM), 8, uint64(port))
	r.ptrOut(uint16(rdma.UVERBS_ATTR_QUERY_PORT_RESP), queryPortRespExSize)
	if err := c.ioctl(opQueryPort, &r); err != nil {
		return PortAttr{}, err
	}
	return decodePortAttr(r.out(1)), nil
}

func decodePortAttr(b []byte) PortAttr {
	var r rdma.UverbsQueryPortRespEx
	if len(b) < queryPortRespExSize {
		b = append(b[:len(b):len(b)], make([]byte, queryPortRespExSize-len(b))...)
	}
	if _, err := binary.Decode(b, binary.LittleEndian, &r); err != nil {
		return PortAttr{}
	}
	l := &r.LegacyResp
	return PortAttr{
		State:         PortState(l.State),
		MaxMTU:        l.MaxMTU,
		ActiveMTU:     l.ActiveMTU,
		GIDTableLen:   l.GIDTblLen,
		PortCapFlags:  l.PortCapFlags,
		MaxMsgSize:    l.MaxMsgSz,
		PKeyTableLen:  l.PKEYTblLen,
		LID:           l.LID,
		SMLID:         l.SMLID,
		LMC:           l.Lmc,
		ActiveWidth:   l.ActiveWidth,
		ActiveSpeed:   l.ActiveSpeed,
		PhysState:     l.PhysState,
		LinkLayer:     LinkLayer(l.LinkLayer),
		Flags:         l.Flags,
		PortCapFlags2: r.PortCapFlags2,
		ActiveSpeedEx: r.ActiveSpeedEx,
	}
}

// GIDType is the kind of a GID table entry (IB_UVERBS_GID_TYPE_*).
type GIDType uint32

// GID types.
const (
	GIDTypeIB     GIDType = GIDType(rdma.IB_UVERBS_GID_TYPE_IB)
	GIDTypeRoCEv1 GIDType = GIDType(rdma.IB_UVERBS_GID_TYPE_ROCE_V1)
	GIDTypeRoCEv2 GIDType = GIDType(rdma.IB_UVERBS_GID_TYPE_ROCE_V2)
)

// String returns the type as sysfs's gid_attrs/types spells it.
func (t GIDType) String() string {
	switch t {
	case GIDTypeIB:
		return "IB/RoCE v1"
	case GIDTypeRoCEv1:
		return "RoCE v1"
	case GIDTypeRoCEv2:
		return "RoCE v2"
	}
	return fmt.Sprintf("GIDType(%d)", uint32(t))
}

// GIDEntry is one valid entry of a port's GID table (struct
// ib_uverbs_gid_entry). It is plain data.
type GIDEntry struct {
	GID           netip.Addr // the 16 GID bytes as an IPv6 address
	Index         uint32     // slot in the port's table
	Port          uint32     // port number, from 1
	Type          GIDType    // IB, RoCE v1 or RoCE v2
	NetdevIfindex uint32     // the netdev the GID belongs to; 0 on InfiniBand
}

const gidEntrySize = 32

// GIDTable returns every valid GID of every port (QUERY_GID_TABLE). It
// sizes the answer from QUERY_DEVICE and QUERY_PORT. Kernels without the
// method answer with an error matching ErrNotSupported; sysfs
// (Device.Ports[i].GIDs) shows the same table.
func (c *Context) GIDTable() ([]GIDEntry, error) {
	if err := c.use(opQueryGIDTable); err != nil {
		return nil, err
	}
	if c.legacy {
		return nil, &Error{Op: opQueryGIDTable, Device: c.dev.Name, Errno: unix.EOPNOTSUPP}
	}
	da, err := c.QueryDevice()
	if err != nil {
		return nil, err
	}
	total := 0
	for p := 1; p <= int(da.PhysPortCnt); p++ {
		pa, err := c.QueryPort(uint8(p))
		if err != nil {
			return nil, err
		}
		total += int(pa.GIDTableLen)
	}
	if total == 0 {
		return nil, nil
	}
	// The answer must fit one attribute length (u16).
	total = min(total, 0xffff/gidEntrySize)
	r := request{obj: uint16(rdma.UVERBS_OBJECT_DEVICE), method: uint16(rdma.UVERBS_METHOD_QUERY_GID_TABLE)}
	r.inline(uint16(rdma.UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE), 8, gidEntrySize)
	r.inline(uint16(rdma.UVERBS_ATTR_QUERY_GID_TABLE_FLAGS), 4, 0)
	r.ptrOut(uint16(rdma.UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES), total*gidEntrySize)
	r.ptrOut(uint16(rdma.UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES), 8)
	if err := c.ioctl(opQueryGIDTable, &r); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint64(r.out(3))
	return decodeGIDEntries(r.out(2), n), nil
}

// decodeGIDEntries decodes n entries of b, never more than b holds.
func decodeGIDEntries(b []byte, n uint64) []GIDEntry {
	n = min(n, uint64(len(b)/gidEntrySize))
	out := make([]GIDEntry, 0, n)
	le := binary.LittleEndian
	for i := range int(n) {
		e := b[i*gidEntrySize:]
		out = append(out, GIDEntry{
			GID:           netip.AddrFrom16([16]byte(e[:16])),
			Index:         le.Uint32(e[16:]),
			Port:          le.Uint32(e[20:]),
			Type:          GIDType(le.Uint32(e[24:])),
			NetdevIfindex: le.Uint32(e[28:]),
		})
	}
	return out
}

// GIDEntry returns entry index of port's GID table
// (QUERY_GID_ENTRY). An empty entry is an error (the kernel answers
// ENODATA or EINVAL).
func (c *Context) GIDEntry(port, index uint32) (GIDEntry, error) {
	if err := c.use(opQueryGIDEntry); err != nil {
		return GIDEntry{}, err
	}
	if c.legacy {
		return GIDEntry{}, &Error{Op: opQueryGIDEntry, Device: c.dev.Name, Errno: unix.EOPNOTSUPP}
	}
	r := request{obj: uint16(rdma.UVERBS_OBJECT_DEVICE), method: uint16(rdma.UVERBS_METHOD_QUERY_GID_ENTRY)}
	r.inline(uint16(rdma.UVERBS_ATTR_QUERY_GID_ENTRY_PORT), 8, uint64(port))
	r.inline(uint16(rdma.UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX), 8, uint64(index))
	r.inline(uint16(rdma.UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS), 4, 0)
	r.ptrOut(uint16(rdma.UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY), gidEntrySize)
	if err := c.ioctl(opQueryGIDEntry, &r); err != nil {
		return GIDEntry{}, err
	}
	return decodeGIDEntries(r.out(3), 1)[0], nil
}
