package cm

import (
	"encoding/binary"
	"fmt"
)

// EventType is an RDMA CM event (enum rdma_cm_event_type, the kernel's
// include/rdma/rdma_cm.h).
type EventType uint32

// Events.
const (
	EventAddrResolved    EventType = 0
	EventAddrError       EventType = 1
	EventRouteResolved   EventType = 2
	EventRouteError      EventType = 3
	EventConnectRequest  EventType = 4
	EventConnectResponse EventType = 5
	EventConnectError    EventType = 6
	EventUnreachable     EventType = 7
	EventRejected        EventType = 8
	EventEstablished     EventType = 9
	EventDisconnected    EventType = 10
	EventDeviceRemoval   EventType = 11
	EventMulticastJoin   EventType = 12
	EventMulticastError  EventType = 13
	EventAddrChange      EventType = 14
	EventTimewaitExit    EventType = 15
)

var eventNames = [...]string{
	"ADDR_RESOLVED", "ADDR_ERROR", "ROUTE_RESOLVED", "ROUTE_ERROR", "CONNECT_REQUEST", "CONNECT_RESPONSE",
	"CONNECT_ERROR", "UNREACHABLE", "REJECTED", "ESTABLISHED", "DISCONNECTED", "DEVICE_REMOVAL",
	"MULTICAST_JOIN", "MULTICAST_ERROR", "ADDR_CHANGE", "TIMEWAIT_EXIT",
}

// String returns the event's name, such as "ESTABLISHED".
func (t EventType) String() string {
	if int(t) < len(eventNames) {
		return eventNames[t]
	}
	return fmt.Sprintf("EventType(%d)", uint32(t))
}

// Event is one event of an ID. It is plain data.
type Event struct {
	Type EventType
	// Status is 0 on success, a negative errno, or for REJECTED the IB CM
	// reject reason.
	Status int32
	// The connection parameters of CONNECT_REQUEST, CONNECT_RESPONSE and
	// ESTABLISHED: the peer's QP number, its private data (padded by the
	// CM to the message's limit: send your own length inside), its
	// responder resources and initiator depth, its RNR retry count.
	QPNum              uint32
	PrivateData        []byte
	ResponderResources uint8
	InitiatorDepth     uint8
	RNRRetryCount      uint8

	// request is the new ID of a CONNECT_REQUEST.
	request *ID
}

// eventRespSize is sizeof(struct rdma_ucm_event_resp), and
// eventRespMin the least output GET_EVENT accepts (ucma.c: the size less
// the trailing reserved bytes).
const (
	eventRespSize = 336
	eventRespMin  = 324
)

// rawEvent is a decoded struct rdma_ucm_event_resp: uid@0, id@8,
// event@12, status@16 (s32), param@20 (a union that is only 4-aligned:
// struct rdma_ucm_conn_param for connection events: qp_num@20, qkey@24,
// private_data@28[256], private_data_len@284, srq@285,
// responder_resources@286, initiator_depth@287, flow_control@288,
// retry_count@289, rnr_retry_count@290), ece@328.
type rawEvent struct {
	uid uint64
	id  uint32
	ev  Event
}

// decodeEvent decodes b (at least eventRespMin bytes).
func decodeEvent(b []byte) (rawEvent, error) {
	if len(b) < eventRespMin {
		return rawEvent{}, fmt.Errorf("rdma_cm event of %d bytes: %w", len(b), ErrBadArgument)
	}
	le := binary.LittleEndian
	r := rawEvent{uid: le.Uint64(b[0:]), id: le.Uint32(b[8:])}
	r.ev = Event{Type: EventType(le.Uint32(b[12:])), Status: int32(le.Uint32(b[16:]))}
	switch r.ev.Type {
	case EventConnectRequest, EventConnectResponse, EventEstablished, EventRejected:
		n := int(b[284])
		if n > 256 {
			n = 256
		}
		r.ev.QPNum = le.Uint32(b[20:]) & 0xffffff
		if n > 0 {
			r.ev.PrivateData = append([]byte(nil), b[28:28+n]...)
		}
		r.ev.ResponderResources = b[286]
		r.ev.InitiatorDepth = b[287]
		r.ev.RNRRetryCount = b[290]
	}
	return r, nil
}
