package ib

import (
	"errors"
	"fmt"
)

// Sentinel errors of the data path.
var (
	// ErrQueueFull reports a post to a send or receive queue that has no
	// free slot: poll completions, then post again.
	ErrQueueFull = errors.New("work queue full")

	// ErrBadWorkRequest reports a work request the QP cannot carry: more
	// SGEs than the queue holds, inline data over its limit, an unknown
	// operation, or immediate data on an operation without one.
	ErrBadWorkRequest = errors.New("bad work request")

	// ErrFlushed matches a completion whose request was flushed: the QP
	// had gone to the error state (a peer that left, a failed request
	// before it, or Close) before the request ran.
	ErrFlushed = errors.New("work request flushed")

	// ErrRemoteAccess matches a completion the peer refused: a remote key
	// or range outside its memory region, or rights it lacks.
	ErrRemoteAccess = errors.New("remote access error")

	// ErrRetryExceeded matches a completion that gave up after the
	// transport or RNR retries: the peer stopped answering or posted no
	// receive.
	ErrRetryExceeded = errors.New("retries exceeded")

	// ErrLocalLength matches a completion whose local data length was
	// wrong for the request (WCLocLenErr).
	ErrLocalLength = errors.New("local length error")

	// ErrRemoteOperation matches a completion the peer could not carry
	// out (WCRemOpErr): on rxe, a SEND larger than the receive the peer
	// posted, whose own receive then fails with WCLocQPOpErr.
	ErrRemoteOperation = errors.New("remote operation error")
)

// WCError is a failed work completion.
type WCError struct {
	ID        uint64
	Status    WCStatus
	QPNum     uint32
	VendorErr uint32
}

// Error returns a description such as
// "work request 0x7 on QP 17: remote access error".
func (e *WCError) Error() string {
	return fmt.Sprintf("work request %#x on QP %d: %s", e.ID, e.QPNum, e.Status)
}

// Is matches the data path's sentinels: ErrFlushed (WCFlushErr),
// ErrRemoteAccess (WCRemAccessErr), ErrRetryExceeded (WCRetryExcErr,
// WCRNRRetryExcErr), ErrLocalLength (WCLocLenErr), ErrRemoteOperation
// (WCRemOpErr).
func (e *WCError) Is(target error) bool {
	switch target {
	case ErrFlushed:
		return e.Status == WCFlushErr
	case ErrRemoteAccess:
		return e.Status == WCRemAccessErr
	case ErrRetryExceeded:
		return e.Status == WCRetryExcErr || e.Status == WCRNRRetryExcErr
	case ErrLocalLength:
		return e.Status == WCLocLenErr
	case ErrRemoteOperation:
		return e.Status == WCRemOpErr
	}
	return false
}

// wrError reports a work request refused before it reached the queue.
type wrError struct {
	op     string // "POST_SEND" or "POST_RECV"
	id     uint64
	reason string
	err    error // ErrQueueFull or ErrBadWorkRequest
}

func (e *wrError) Error() string {
	return fmt.Sprintf("%s work request %#x: %s", e.op, e.id, e.reason)
}

func (e *wrError) Unwrap() error { return e.err }
