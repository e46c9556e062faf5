package rdma

import (
	"errors"
	"fmt"
	"os"

	"github.com/gaudi-go/gaudi/dma"
)

// Sentinel errors callers branch on.
var (
	// ErrShortDescriptor reports a descriptor cut short.
	ErrShortDescriptor = errors.New("remote memory descriptor too short")
	// ErrOlderDescriptor and ErrNewerDescriptor report a descriptor of
	// another version than DescriptorVersion (a *VersionError matches
	// one of them).
	ErrOlderDescriptor = errors.New("remote memory descriptor of an older version")
	ErrNewerDescriptor = errors.New("remote memory descriptor of a newer version")
	// ErrBadDescriptor reports a descriptor that is not one (wrong magic,
	// an unknown path, reserved bits set) or describes no usable memory.
	ErrBadDescriptor = errors.New("bad remote memory descriptor")

	// ErrAborted reports a transfer the device aborted, on this side or on
	// the peer's (a device reset): it is dma.ErrAborted.
	ErrAborted = dma.ErrAborted
	// ErrPeerGone reports a peer that disconnected or stopped answering
	// during a transfer or before it.
	ErrPeerGone = errors.New("rdma peer gone")
	// ErrPeerCancelled reports a transfer the peer gave up (its context
	// ended, or it failed on its own).
	ErrPeerCancelled = errors.New("rdma transfer cancelled by the peer")
	// ErrLength reports a transfer whose two sides differ in length, or a
	// range out of its buffer's bounds.
	ErrLength = errors.New("rdma transfer length mismatch")
	// ErrBusy reports a transfer started while the previous one in the
	// same direction is still being finished in the background (its
	// caller's context ended). Wait for Conn.Idle, or retry.
	ErrBusy = errors.New("rdma connection busy")
	// ErrPathRefused reports a forced zero-copy path the NIC refused
	// (it also matches ib.ErrDMABufNotSupported then).
	ErrPathRefused = errors.New("zero-copy path refused")
	// ErrClosed reports a call on a closed Conn or Listener: os.ErrClosed.
	ErrClosed = os.ErrClosed
	// ErrBadOptions reports Options out of range.
	ErrBadOptions = errors.New("invalid rdma options")
)

// VersionError reports a descriptor of another version.
type VersionError struct {
	Version uint8 // the descriptor's
}

// Error says which version came and which one this package reads.
func (e *VersionError) Error() string {
	return fmt.Sprintf("decode remote memory descriptor: version %d, this package reads %d", e.Version, DescriptorVersion)
}

// Is matches ErrOlderDescriptor or ErrNewerDescriptor.
func (e *VersionError) Is(target error) bool {
	switch target {
	case ErrOlderDescriptor:
		return e.Version < DescriptorVersion
	case ErrNewerDescriptor:
		return e.Version > DescriptorVersion
	}
	return false
}

// More sentinels of the transfer protocol.
var (
	// ErrProtocol reports a peer that broke the protocol: a chunk out of
	// sequence or of the wrong length, more messages than it has credit
	// for, a descriptor where none belongs.
	ErrProtocol = errors.New("rdma protocol violation")
	// ErrBroken reports a call on a Conn that an earlier transfer's
	// failure or cancellation left unusable: the peer's state is unknown
	// then, so the connection is shut. Close it and connect again.
	ErrBroken = errors.New("rdma connection broken")
)

// PeerError reports a transfer the peer gave up, with its reason.
type PeerError struct {
	Code uint32 // the abort code (abortCancelled...)
}

// Error says why the peer gave up.
func (e *PeerError) Error() string {
	switch e.Code {
	case abortCancelled:
		return "rdma peer cancelled the transfer"
	case abortAborted:
		return "rdma peer's device aborted the transfer"
	case abortLength:
		return "rdma peer's range has another length"
	case abortProtocol:
		return "rdma peer saw a protocol violation"
	}
	return fmt.Sprintf("rdma peer gave up (code %d)", e.Code)
}

// Is matches ErrPeerCancelled, and what the peer's failure matches:
// ErrAborted (a reset of its device), ErrLength or ErrProtocol.
func (e *PeerError) Is(target error) bool {
	switch target {
	case ErrPeerCancelled:
		return true
	case ErrAborted:
		return e.Code == abortAborted
	case ErrLength:
		return e.Code == abortLength
	case ErrProtocol:
		return e.Code == abortProtocol
	}
	return false
}

// goneError reports a peer that disconnected or stopped answering; it
// matches ErrPeerGone and unwraps to the cause (cm.ErrDisconnected, or a
// completion's ib.ErrRetryExceeded...).
type goneError struct{ cause error }

func (e *goneError) Error() string        { return "rdma peer gone: " + e.cause.Error() }
func (e *goneError) Unwrap() error        { return e.cause }
func (e *goneError) Is(target error) bool { return target == ErrPeerGone }

// abortCode is the code that tells the peer why this side failed.
func abortCode(err error) uint32 {
	switch {
	case errors.Is(err, ErrAborted):
		return abortAborted
	case errors.Is(err, ErrLength):
		return abortLength
	case errors.Is(err, ErrProtocol):
		return abortProtocol
	}
	return abortCancelled
}
