package ib

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Sentinel errors for the conditions callers branch on. Errors returned by
// this package match them with errors.Is, and the errno stays reachable:
// errors.Is(err, unix.EOPNOTSUPP) and errors.Is(err, ErrDMABufNotSupported)
// both hold when a NIC refuses a dma-buf registration.
var (
	// ErrDMABufNotSupported reports that the NIC's driver cannot register
	// dma-bufs: REG_DMABUF_MR answered EOPNOTSUPP (the driver has no
	// dma-buf registration, as rxe and siw) or EPROTONOSUPPORT (the kernel
	// predates the method).
	ErrDMABufNotSupported = errors.New("dma-buf registration not supported by this NIC")

	// ErrNotSupported reports a request the kernel or the driver does not
	// implement (ENOTTY, EPROTONOSUPPORT or EOPNOTSUPP).
	ErrNotSupported = errors.New("not supported")

	// ErrBadDriverID reports that the first request on a uverbs file was
	// refused with EINVAL, which is what the kernel answers when the driver
	// id in the request header is not the device's. It is a strong hint,
	// not a proof: a driver may refuse its private request data with EINVAL
	// too.
	ErrBadDriverID = errors.New("uverbs request refused: the driver id is probably wrong for this device")

	// ErrClosed reports a call on a closed Context, PD or MR. It is
	// os.ErrClosed.
	ErrClosed = os.ErrClosed

	// ErrNoDevice reports that no RDMA device matches a lookup.
	ErrNoDevice = errors.New("no such RDMA device")

	// ErrMalformed reports bytes that do not decode as the structure they
	// should hold (a uverbs attribute array, a netlink message).
	ErrMalformed = errors.New("malformed message")
)

// Error describes a failed uverbs request. It keeps the errno the kernel
// returned and names the request.
//
// Use errors.Is, never ==, to test an Error:
//
//	errno                        matches
//	EOPNOTSUPP, EPROTONOSUPPORT  ErrDMABufNotSupported (Op "REG_DMABUF_MR" only)
//	ENOTTY, EPROTONOSUPPORT,
//	EOPNOTSUPP                   ErrNotSupported
//	EINVAL                       ErrBadDriverID (first request on a file only)
//	EBADF                        ErrClosed (except from the kernel for Op
//	                             "REG_DMABUF_MR", where it means the dma-buf
//	                             descriptor is bad)
type Error struct {
	// Op names the request in the kernel's spelling: "GET_CONTEXT",
	// "QUERY_DEVICE", "QUERY_PORT", "QUERY_GID_TABLE", "ALLOC_PD",
	// "DEALLOC_PD", "REG_MR", "REG_DMABUF_MR", "DEREG_MR", or "OPEN".
	Op string
	// Device is the RDMA device name, such as "rxe0", when known.
	Device string
	// Errno is the error number returned.
	Errno unix.Errno

	firstCall bool // the request was the first on its file
	closed    bool // refused by this package: the object was closed
}

// Error returns a short description such as
// "uverbs REG_DMABUF_MR rxe0: operation not supported".
func (e *Error) Error() string {
	s := "uverbs " + e.Op
	if e.Device != "" {
		s += " " + e.Device
	}
	switch {
	case e.closed:
		return s + ": " + ErrClosed.Error()
	case e.Op == opRegDMABufMR && (e.Errno == unix.EOPNOTSUPP || e.Errno == unix.EPROTONOSUPPORT):
		return s + ": " + ErrDMABufNotSupported.Error() + " (" + e.Errno.Error() + ")"
	case e.firstCall && e.Errno == unix.EINVAL:
		return s + ": " + e.Errno.Error() + " (is the driver id right?)"
	}
	return s + ": " + e.Errno.Error()
}

// Unwrap returns the errno, so that errors.Is(err, unix.EINVAL) works.
func (e *Error) Unwrap() error { return e.Errno }

// Is reports whether the error matches one of the package's sentinels; see
// the table on Error.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrDMABufNotSupported:
		return e.Op == opRegDMABufMR && (e.Errno == unix.EOPNOTSUPP || e.Errno == unix.EPROTONOSUPPORT)
	case ErrNotSupported:
		return e.Errno == unix.ENOTTY || e.Errno == unix.EPROTONOSUPPORT || e.Errno == unix.EOPNOTSUPP
	case ErrBadDriverID:
		return e.firstCall && e.Errno == unix.EINVAL
	case ErrClosed:
		return e.closed || e.Errno == unix.EBADF && e.Op != opRegDMABufMR
	}
	return false
}

// Request names used in errors.
const (
	opOpen          = "OPEN"
	opProbeDriverID = "PROBE_DRIVER_ID"
	opGetContext    = "GET_CONTEXT"
	opQueryDevice   = "QUERY_DEVICE"
	opQueryPort     = "QUERY_PORT"
	opQueryGIDTable = "QUERY_GID_TABLE"
	opQueryGIDEntry = "QUERY_GID_ENTRY"
	opAllocPD       = "ALLOC_PD"
	opDeallocPD     = "DEALLOC_PD"
	opRegMR         = "REG_MR"
	opRegDMABufMR   = "REG_DMABUF_MR"
	opDeregMR       = "DEREG_MR"

	opCreateCompChannel = "CREATE_COMP_CHANNEL"
	opGetCompEvent      = "GET_COMP_EVENT"
	opCreateCQ          = "CREATE_CQ"
	opDestroyCQ         = "DESTROY_CQ"
	opPollCQ            = "POLL_CQ"
	opReqNotifyCQ       = "REQ_NOTIFY_CQ"
	opCreateQP          = "CREATE_QP"
	opModifyQP          = "MODIFY_QP"
	opDestroyQP         = "DESTROY_QP"
	opPostSend          = "POST_SEND"
	opPostRecv          = "POST_RECV"
)

// closedErr is the error of a call on a closed object.
func closedErr(op, dev string) error {
	return &Error{Op: op, Device: dev, Errno: unix.EBADF, closed: true}
}
