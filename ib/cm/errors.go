package cm

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Sentinel errors. Errors returned by this package match them with
// errors.Is.
var (
	// ErrClosed reports a call on a closed Channel or ID. It is
	// os.ErrClosed.
	ErrClosed = os.ErrClosed
	// ErrAddrResolution matches ADDR_ERROR: the destination address could
	// not be resolved to an RDMA device and GID.
	ErrAddrResolution = errors.New("address resolution failed")
	// ErrRouteResolution matches ROUTE_ERROR.
	ErrRouteResolution = errors.New("route resolution failed")
	// ErrRejected matches REJECTED: the peer, or its CM for want of a
	// listener, refused the connection.
	ErrRejected = errors.New("connection rejected")
	// ErrUnreachable matches UNREACHABLE: the peer did not answer.
	ErrUnreachable = errors.New("peer unreachable")
	// ErrConnect matches CONNECT_ERROR.
	ErrConnect = errors.New("connection error")
	// ErrDisconnected matches DISCONNECTED, DEVICE_REMOVAL and
	// TIMEWAIT_EXIT arriving while a step waited for something else.
	ErrDisconnected = errors.New("disconnected")
	// ErrBadArgument reports input the package refuses before the kernel
	// sees it (an address family, private data over the limit).
	ErrBadArgument = errors.New("bad argument")
)

// Error is a command the kernel refused.
type Error struct {
	// Op is the command in the kernel's spelling, such as "RESOLVE_IP".
	Op    string
	Errno unix.Errno

	closed bool // refused by this package: closed
}

// Error returns a description such as "rdma_cm RESOLVE_IP: network is
// unreachable".
func (e *Error) Error() string {
	if e.closed {
		return "rdma_cm " + e.Op + ": " + ErrClosed.Error()
	}
	return "rdma_cm " + e.Op + ": " + e.Errno.Error()
}

// Unwrap returns the errno.
func (e *Error) Unwrap() error { return e.Errno }

// Is matches ErrClosed for calls on closed objects.
func (e *Error) Is(target error) bool { return target == ErrClosed && e.closed }

func closedErr(op string) error { return &Error{Op: op, Errno: unix.EBADF, closed: true} }

// IB CM reject reasons (enum ib_cm_rej_reason, include/rdma/ib_cm.h) that
// a REJECTED event's Status carries on RoCE.
const (
	RejectTimeout          = 1
	RejectInvalidServiceID = 8  // nobody listens on the port
	RejectConsumer         = 28 // the peer's application rejected
)

// EventError is a step that ended with a failure event.
type EventError struct {
	Op    string // the step, such as "CONNECT"
	Event EventType
	// Status is the event's status: a negative errno for most events,
	// the IB CM reject reason for REJECTED.
	Status int32
	// PrivateData is what a rejecting peer sent, when any.
	PrivateData []byte
}

// Error returns a description such as
// "rdma_cm CONNECT: REJECTED (reason 8: no listener)".
func (e *EventError) Error() string {
	s := fmt.Sprintf("rdma_cm %s: %s", e.Op, e.Event)
	switch {
	case e.Event == EventRejected:
		s += fmt.Sprintf(" (reason %d", e.Status)
		if e.Status == RejectInvalidServiceID {
			s += ": no listener"
		}
		s += ")"
	case e.Status < 0:
		s += ": " + unix.Errno(-e.Status).Error()
	}
	return s
}

// Is matches the sentinel of the event.
func (e *EventError) Is(target error) bool {
	switch target {
	case ErrAddrResolution:
		return e.Event == EventAddrError
	case ErrRouteResolution:
		return e.Event == EventRouteError
	case ErrRejected:
		return e.Event == EventRejected
	case ErrUnreachable:
		return e.Event == EventUnreachable
	case ErrConnect:
		return e.Event == EventConnectError
	case ErrDisconnected:
		return e.Event == EventDisconnected || e.Event == EventDeviceRemoval || e.Event == EventTimewaitExit
	}
	return false
}

// Unwrap returns the errno of a negative status, so errors.Is(err,
// unix.ETIMEDOUT) holds for an UNREACHABLE that timed out.
func (e *EventError) Unwrap() error {
	if e.Status < 0 && e.Event != EventRejected {
		return unix.Errno(-e.Status)
	}
	return nil
}
