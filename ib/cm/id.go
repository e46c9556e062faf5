package cm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/gaudi-go/gaudi/ib"
	"github.com/gaudi-go/gaudi/uapi/rdma"
	"golang.org/x/sys/unix"
)

// ID is an RDMA CM identifier: one end of a connection, or a listener.
// It belongs to its Channel.
type ID struct {
	ch     *Channel
	handle uint32 // the kernel's id
	uid    uint64 // ours, which the kernel puts in the ID's events
	notify chan struct{}
	peer   Event // the CONNECT_REQUEST that made this ID, for a passive ID

	mu     sync.Mutex
	events []Event
	closed bool
}

// CreateID creates an ID for RC connections over IP (CREATE_ID, port space
// RDMA_PS_TCP: ucma.c maps it to IB_QPT_RC).
func (ch *Channel) CreateID() (*ID, error) {
	ch.mu.Lock()
	if ch.closed {
		ch.mu.Unlock()
		return nil, closedErr(opCreateID)
	}
	id := ch.newIDLocked(0)
	ch.mu.Unlock()
	// struct rdma_ucm_create_id {uid@0, response@8, ps@16 u16,
	// qp_type@18 u8, reserved[5]}; answer {id}.
	resp := make([]byte, 4)
	body := make([]byte, 24)
	le := binary.LittleEndian
	le.PutUint64(body[0:], id.uid)
	le.PutUint64(body[8:], addrOf(resp))
	le.PutUint16(body[16:], uint16(rdma.RDMA_PS_TCP))
	body[18] = qpTypeRC
	if err := ch.command(opCreateID, rdma.RDMA_USER_CM_CMD_CREATE_ID, body, resp); err != nil {
		ch.forget(id)
		return nil, err
	}
	id.handle = le.Uint32(resp)
	return id, nil
}

// qpTypeRC is IB_QPT_RC (enum ib_qp_type).
const qpTypeRC = 2

// Command names in errors.
const (
	opCreateID     = "CREATE_ID"
	opDestroyID    = "DESTROY_ID"
	opBindIP       = "BIND_IP"
	opResolveIP    = "RESOLVE_IP"
	opResolveRoute = "RESOLVE_ROUTE"
	opQueryRoute   = "QUERY_ROUTE"
	opConnect      = "CONNECT"
	opListen       = "LISTEN"
	opAccept       = "ACCEPT"
	opReject       = "REJECT"
	opDisconnect   = "DISCONNECT"
	opInitQPAttr   = "INIT_QP_ATTR"
)

// push queues ev; it reports false when the ID is closed.
func (id *ID) push(ev Event) bool {
	id.mu.Lock()
	if id.closed {
		id.mu.Unlock()
		return false
	}
	id.events = append(id.events, ev)
	id.mu.Unlock()
	id.wake()
	return true
}

func (id *ID) wake() {
	select {
	case id.notify <- struct{}{}:
	default:
	}
}

// NextEvent returns the ID's next event, waiting for it until ctx ends.
// The steps below (ResolveAddr, Connect...) consume the events they wait
// for; NextEvent is for the ones they do not, such as DISCONNECTED.
func (id *ID) NextEvent(ctx context.Context) (Event, error) {
	for {
		id.mu.Lock()
		if id.closed {
			id.mu.Unlock()
			return Event{}, closedErr("GET_EVENT")
		}
		if len(id.events) > 0 {
			ev := id.events[0]
			id.events = id.events[1:]
			id.mu.Unlock()
			return ev, nil
		}
		id.mu.Unlock()
		id.ch.mu.Lock()
		err := id.ch.err
		id.ch.mu.Unlock()
		if err != nil {
			return Event{}, err
		}
		select {
		case <-id.notify:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// await waits for event want; any other event that ends the step is an
// *EventError.
func (id *ID) await(ctx context.Context, op string, want EventType) (Event, error) {
	for {
		ev, err := id.NextEvent(ctx)
		if err != nil {
			return Event{}, fmt.Errorf("rdma_cm %s: %w", op, err)
		}
		switch {
		case ev.Type == want:
			return ev, nil
		case ev.Type == EventAddrChange || ev.Type == EventTimewaitExit && want != EventDisconnected:
			continue // not about this step
		}
		return Event{}, &EventError{Op: op, Event: ev.Type, Status: ev.Status, PrivateData: ev.PrivateData}
	}
}

// timeoutMS is the kernel-side timeout of a resolution: what is left of
// ctx, at most a minute, 2 s without a deadline (librdmacm's examples use
// 2000 ms).
func timeoutMS(ctx context.Context) uint32 {
	d, ok := ctx.Deadline()
	if !ok {
		return 2000
	}
	ms := time.Until(d).Milliseconds()
	return uint32(min(max(ms, 1), 60000))
}

// putSockaddr writes a into a 28-byte struct sockaddr_in6 slot: a
// struct sockaddr_in {family AF_INET, port (big-endian), addr} for IPv4,
// else sockaddr_in6 {family, port, flowinfo, addr, scope_id}. The kernel
// takes the family's size (rdma_addr_size_in6, core/addr.c).
func putSockaddr(b []byte, a netip.AddrPort) error {
	if !a.Addr().IsValid() {
		return nil // family 0: any
	}
	binary.BigEndian.PutUint16(b[2:], a.Port())
	if a.Addr().Is4() || a.Addr().Is4In6() {
		binary.LittleEndian.PutUint16(b[0:], unix.AF_INET)
		v4 := a.Addr().Unmap().As4()
		copy(b[4:8], v4[:])
		return nil
	}
	if a.Addr().Zone() != "" {
		return fmt.Errorf("rdma_cm: zoned address %v: %w", a, ErrBadArgument)
	}
	binary.LittleEndian.PutUint16(b[0:], unix.AF_INET6)
	v6 := a.Addr().As16()
	copy(b[8:24], v6[:])
	return nil
}

// getSockaddr reads a struct sockaddr_in or sockaddr_in6.
func getSockaddr(b []byte) netip.AddrPort {
	port := binary.BigEndian.Uint16(b[2:])
	switch binary.LittleEndian.Uint16(b) {
	case unix.AF_INET:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port)
	case unix.AF_INET6:
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])), port)
	}
	return netip.AddrPort{}
}

// Bind binds the ID to a local address and port (BIND_IP); the zero Addr
// with a port binds every address.
func (id *ID) Bind(a netip.AddrPort) error {
	if err := id.use(opBindIP); err != nil {
		return err
	}
	// struct rdma_ucm_bind_ip {response@0 (unused), addr@8 (sockaddr_in6),
	// id@36}.
	body := make([]byte, 40)
	addr := a
	if !addr.Addr().IsValid() {
		addr = netip.AddrPortFrom(netip.IPv4Unspecified(), a.Port())
	}
	if err := putSockaddr(body[8:36], addr); err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(body[36:], id.handle)
	return id.ch.command(opBindIP, rdma.RDMA_USER_CM_CMD_BIND_IP, body, nil)
}

// ResolveAddr resolves dst to an RDMA device and GID (RESOLVE_IP) from
// src (the zero AddrPort: any) and waits for ADDR_RESOLVED.
func (id *ID) ResolveAddr(ctx context.Context, src, dst netip.AddrPort) error {
	if err := id.use(opResolveIP); err != nil {
		return err
	}
	if !dst.Addr().IsValid() {
		return fmt.Errorf("rdma_cm %s: no destination: %w", opResolveIP, ErrBadArgument)
	}
	// struct rdma_ucm_resolve_ip {src_addr@0, dst_addr@28, id@56,
	// timeout_ms@60}.
	body := make([]byte, 64)
	if err := putSockaddr(body[0:28], src); err != nil {
		return err
	}
	if err := putSockaddr(body[28:56], dst); err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(body[56:], id.handle)
	binary.LittleEndian.PutUint32(body[60:], timeoutMS(ctx))
	if err := id.ch.command(opResolveIP, rdma.RDMA_USER_CM_CMD_RESOLVE_IP, body, nil); err != nil {
		return err
	}
	_, err := id.await(ctx, opResolveIP, EventAddrResolved)
	return err
}

// ResolveRoute resolves the path to the resolved address (RESOLVE_ROUTE)
// and waits for ROUTE_RESOLVED.
func (id *ID) ResolveRoute(ctx context.Context) error {
	if err := id.use(opResolveRoute); err != nil {
		return err
	}
	body := make([]byte, 8) // struct rdma_ucm_resolve_route {id, timeout_ms}
	binary.LittleEndian.PutUint32(body[0:], id.handle)
	binary.LittleEndian.PutUint32(body[4:], timeoutMS(ctx))
	if err := id.ch.command(opResolveRoute, rdma.RDMA_USER_CM_CMD_RESOLVE_ROUTE, body, nil); err != nil {
		return err
	}
	_, err := id.await(ctx, opResolveRoute, EventRouteResolved)
	return err
}

// Route is what QUERY_ROUTE tells about an ID: its device and port and
// the addresses.
type Route struct {
	// NodeGUID is the device's node GUID as sysfs prints it
	// ("xxxx:xxxx:xxxx:xxxx"); zero before the ID has a device.
	NodeGUID string
	// DevIndex is the device's index (RDMA netlink's DEV_INDEX).
	DevIndex uint32
	Port     uint8
	Src, Dst netip.AddrPort
	NumPaths uint32
	// SGID and DGID are the first path's GIDs.
	SGID, DGID netip.Addr
}

// Route asks the kernel for the ID's device, port and addresses
// (QUERY_ROUTE), known after ADDR_RESOLVED, after a Bind to a concrete
// address, and on an ID from GetRequest.
func (id *ID) Route() (Route, error) {
	if err := id.use(opQueryRoute); err != nil {
		return Route{}, err
	}
	// struct rdma_ucm_query {response@0, id@8, option@12}; answer struct
	// rdma_ucm_query_route_resp: node_guid@0 (raw big-endian),
	// ib_route[2]@8 (struct ib_user_path_rec, 64 bytes: dgid@0,
	// sgid@16), src_addr@136, dst_addr@164, num_paths@192, port_num@196,
	// ibdev_index@200.
	resp := make([]byte, 208)
	body := make([]byte, 16)
	binary.LittleEndian.PutUint64(body[0:], addrOf(resp))
	binary.LittleEndian.PutUint32(body[8:], id.handle)
	if err := id.ch.command(opQueryRoute, rdma.RDMA_USER_CM_CMD_QUERY_ROUTE, body, resp); err != nil {
		return Route{}, err
	}
	g := resp[0:8]
	r := Route{
		NodeGUID: fmt.Sprintf("%02x%02x:%02x%02x:%02x%02x:%02x%02x", g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7]),
		Src:      getSockaddr(resp[136:164]),
		Dst:      getSockaddr(resp[164:192]),
		NumPaths: binary.LittleEndian.Uint32(resp[192:]),
		Port:     resp[196],
		DevIndex: binary.LittleEndian.Uint32(resp[200:]),
		DGID:     netip.AddrFrom16([16]byte(resp[8:24])),
		SGID:     netip.AddrFrom16([16]byte(resp[24:40])),
	}
	return r, nil
}

// Device returns the RDMA device the ID resolved to, matched by node GUID
// among ib.Devices, as librdmacm matches it.
func (id *ID) Device() (ib.Device, error) {
	r, err := id.Route()
	if err != nil {
		return ib.Device{}, err
	}
	devs, err := ib.Devices()
	if err != nil {
		return ib.Device{}, err
	}
	for _, d := range devs {
		if d.NodeGUID == r.NodeGUID && d.UverbsPath != "" {
			return d, nil
		}
	}
	return ib.Device{}, fmt.Errorf("rdma_cm: node GUID %s: %w", r.NodeGUID, ib.ErrNoDevice)
}

// InitQPAttr asks the CM for the attributes that move a QP of this ID's
// connection to state (INIT_QP_ATTR): the port, P_Key index and access
// for INIT, the path, peer QP and PSN for RTR, the timers and PSN for RTS.
func (id *ID) InitQPAttr(state ib.QPState) (ib.QPAttr, error) {
	if err := id.use(opInitQPAttr); err != nil {
		return ib.QPAttr{}, err
	}
	// struct rdma_ucm_init_qp_attr {response@0, id@8, qp_state@12};
	// answer struct ib_uverbs_qp_attr (144 bytes).
	resp := make([]byte, 144)
	body := make([]byte, 16)
	binary.LittleEndian.PutUint64(body[0:], addrOf(resp))
	binary.LittleEndian.PutUint32(body[8:], id.handle)
	binary.LittleEndian.PutUint32(body[12:], uint32(state))
	if err := id.ch.command(opInitQPAttr, rdma.RDMA_USER_CM_CMD_INIT_QP_ATTR, body, resp); err != nil {
		return ib.QPAttr{}, err
	}
	return ib.DecodeQPAttr(resp)
}

// ModifyQP moves qp to state with the attributes InitQPAttr gives.
func (id *ID) ModifyQP(qp *ib.QP, state ib.QPState) error {
	a, err := id.InitQPAttr(state)
	if err != nil {
		return err
	}
	if err := qp.Modify(&a); err != nil {
		return fmt.Errorf("rdma_cm: QP %d to %v: %w", qp.Num(), state, err)
	}
	return nil
}

// ConnParam are the parameters of Connect and Accept. The zero value
// asks for one outstanding RDMA READ each way and 7 retries of each kind,
// as rping does.
type ConnParam struct {
	// PrivateData goes to the peer: at most 56 bytes with Connect, 196
	// with Accept, 148 with Reject (the IB CM's limits less the CM's own
	// header for IP: cma.c).
	PrivateData []byte
	// ResponderResources is how many RDMA READs the peer may have
	// outstanding at us, InitiatorDepth how many we may have at the peer.
	// Zero asks for 1.
	ResponderResources uint8
	InitiatorDepth     uint8
	// RetryCount and RNRRetryCount: zero asks for 7 (7 RNR retries mean
	// forever).
	RetryCount    uint8
	RNRRetryCount uint8
}

// encodeConnParam writes a struct rdma_ucm_conn_param: qp_num@0, qkey@4,
// private_data@8[256], private_data_len@264, srq@265,
// responder_resources@266, initiator_depth@267, flow_control@268,
// retry_count@269, rnr_retry_count@270, valid@271.
func encodeConnParam(b []byte, qpn uint32, p *ConnParam) {
	or := func(v, d uint8) uint8 {
		if v == 0 {
			return d
		}
		return v
	}
	binary.LittleEndian.PutUint32(b[0:], qpn)
	copy(b[8:264], p.PrivateData)
	b[264] = uint8(len(p.PrivateData))
	b[266] = or(p.ResponderResources, 1)
	b[267] = or(p.InitiatorDepth, 1)
	b[268] = 1
	b[269] = or(p.RetryCount, 7)
	b[270] = or(p.RNRRetryCount, 7)
	b[271] = 1
}

// Connect connects the ID to its resolved peer with qp, which must be in
// INIT (ModifyQP(qp, ib.QPSInit), then post the receives the peer may
// need at once): CONNECT, then the wait for CONNECT_RESPONSE, then qp
// through INIT (again, for the access rights the reply grants), RTR and
// RTS, then the RTU (ACCEPT without parameters: ucma.c; the kernel sends
// no ESTABLISHED to this side). It returns the peer's reply.
func (id *ID) Connect(ctx context.Context, qp *ib.QP, p ConnParam) (Event, error) {
	if err := id.use(opConnect); err != nil {
		return Event{}, err
	}
	if len(p.PrivateData) > 56 {
		return Event{}, fmt.Errorf("rdma_cm %s: %d bytes of private data, at most 56: %w", opConnect, len(p.PrivateData), ErrBadArgument)
	}
	// struct rdma_ucm_connect {conn_param@0, id@272, reserved@276, ece@280}.
	body := make([]byte, 288)
	encodeConnParam(body[0:272], qp.Num(), &p)
	binary.LittleEndian.PutUint32(body[272:], id.handle)
	if err := id.ch.command(opConnect, rdma.RDMA_USER_CM_CMD_CONNECT, body, nil); err != nil {
		return Event{}, err
	}
	ev, err := id.await(ctx, opConnect, EventConnectResponse)
	if err != nil {
		return Event{}, err
	}
	for _, s := range []ib.QPState{ib.QPSInit, ib.QPSRTR, ib.QPSRTS} {
		if err := id.ModifyQP(qp, s); err != nil {
			return Event{}, errors.Join(err, id.reject(nil))
		}
	}
	if err := id.accept(0, nil, nil); err != nil {
		return Event{}, err
	}
	return ev, nil
}

// Listen makes the bound ID a listener (LISTEN); backlog ≤ 0 takes the
// kernel's maximum (net.rdma_ucm.max_backlog).
func (id *ID) Listen(backlog int) error {
	if err := id.use(opListen); err != nil {
		return err
	}
	body := make([]byte, 8) // struct rdma_ucm_listen {id, backlog}
	binary.LittleEndian.PutUint32(body[0:], id.handle)
	binary.LittleEndian.PutUint32(body[4:], uint32(max(backlog, 0)))
	return id.ch.command(opListen, rdma.RDMA_USER_CM_CMD_LISTEN, body, nil)
}

// GetRequest waits for a connection request on the listener and returns
// the new ID and the request's parameters (the peer's QP number, private
// data, depths). Accept or Reject the new ID, and Close it when done.
func (id *ID) GetRequest(ctx context.Context) (*ID, Event, error) {
	ev, err := id.await(ctx, "GET_REQUEST", EventConnectRequest)
	if err != nil {
		return nil, Event{}, err
	}
	return ev.request, ev, nil
}

// Accept accepts the connection request this ID came from with qp, which
// must be in INIT with its receives posted: qp to RTR and RTS, then
// ACCEPT, then the wait for ESTABLISHED.
func (id *ID) Accept(ctx context.Context, qp *ib.QP, p ConnParam) error {
	if err := id.use(opAccept); err != nil {
		return err
	}
	if len(p.PrivateData) > 196 {
		return fmt.Errorf("rdma_cm %s: %d bytes of private data, at most 196: %w", opAccept, len(p.PrivateData), ErrBadArgument)
	}
	for _, s := range []ib.QPState{ib.QPSRTR, ib.QPSRTS} {
		if err := id.ModifyQP(qp, s); err != nil {
			return errors.Join(err, id.reject(nil))
		}
	}
	if err := id.accept(id.uid, qp, &p); err != nil {
		return err
	}
	_, err := id.await(ctx, opAccept, EventEstablished)
	return err
}

// accept issues ACCEPT: struct rdma_ucm_accept {uid@0, conn_param@8,
// id@280, reserved@284, ece@288}. Without a QP it is the active side's
// RTU (valid 0).
func (id *ID) accept(uid uint64, qp *ib.QP, p *ConnParam) error {
	body := make([]byte, 296)
	binary.LittleEndian.PutUint64(body[0:], uid)
	if qp != nil {
		encodeConnParam(body[8:280], qp.Num(), p)
	}
	binary.LittleEndian.PutUint32(body[280:], id.handle)
	return id.ch.command(opAccept, rdma.RDMA_USER_CM_CMD_ACCEPT, body, nil)
}

// Reject refuses the connection request this ID came from, sending
// privateData (at most 148 bytes).
func (id *ID) Reject(privateData []byte) error {
	if err := id.use(opReject); err != nil {
		return err
	}
	if len(privateData) > 148 {
		return fmt.Errorf("rdma_cm %s: %d bytes of private data, at most 148: %w", opReject, len(privateData), ErrBadArgument)
	}
	return id.reject(privateData)
}

// reject issues REJECT: struct rdma_ucm_reject {id@0,
// private_data_len@4, reason@5 (0: the consumer's 28), reserved[2],
// private_data@8[256]}.
func (id *ID) reject(pd []byte) error {
	body := make([]byte, 264)
	binary.LittleEndian.PutUint32(body[0:], id.handle)
	body[4] = uint8(len(pd))
	copy(body[8:], pd)
	return id.ch.command(opReject, rdma.RDMA_USER_CM_CMD_REJECT, body, nil)
}

// Disconnect moves qp (when not nil) to the error state, so its
// outstanding work completes as flushed, then sends the disconnect
// request or reply (DISCONNECT). The peer gets DISCONNECTED; this side's
// DISCONNECTED follows and is left for NextEvent.
func (id *ID) Disconnect(qp *ib.QP) error {
	if err := id.use(opDisconnect); err != nil {
		return err
	}
	var errs []error
	if qp != nil {
		errs = append(errs, qp.Modify(&ib.QPAttr{Mask: ib.AttrState, State: ib.QPSErr}))
	}
	body := make([]byte, 4) // struct rdma_ucm_disconnect {id}
	binary.LittleEndian.PutUint32(body, id.handle)
	errs = append(errs, id.ch.command(opDisconnect, rdma.RDMA_USER_CM_CMD_DISCONNECT, body, nil))
	return errors.Join(errs...)
}

func (id *ID) use(op string) error {
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.closed {
		return closedErr(op)
	}
	return nil
}

// Close destroys the ID (DESTROY_ID; a connected ID sends a disconnect
// request first, as the kernel does) and drops its queued events. A
// listener's requests that GetRequest has not taken are destroyed with
// it, which rejects their clients. Closing twice does nothing.
func (id *ID) Close() error {
	id.mu.Lock()
	if id.closed {
		id.mu.Unlock()
		return nil
	}
	id.closed = true
	queued := id.events
	id.events = nil
	id.mu.Unlock()
	var errs []error
	for _, ev := range queued {
		if ev.request != nil {
			errs = append(errs, ev.request.Close())
		}
	}
	id.ch.forget(id)
	// struct rdma_ucm_destroy_id {response@0, id@8, reserved}; answer
	// {events_reported}.
	resp := make([]byte, 4)
	body := make([]byte, 16)
	binary.LittleEndian.PutUint64(body[0:], addrOf(resp))
	binary.LittleEndian.PutUint32(body[8:], id.handle)
	err := id.ch.command(opDestroyID, rdma.RDMA_USER_CM_CMD_DESTROY_ID, body, resp)
	if errors.Is(err, ErrClosed) {
		err = nil // the Channel closed: the kernel destroyed it
	}
	return errors.Join(append(errs, err)...)
}

// abandon marks the ID closed for a closing Channel.
func (id *ID) abandon() {
	id.mu.Lock()
	id.closed = true
	id.events = nil
	id.mu.Unlock()
	id.wake()
}

// Handle returns the kernel's number of the ID.
func (id *ID) Handle() uint32 { return id.handle }
