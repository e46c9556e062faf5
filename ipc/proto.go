package ipc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// Wire protocol on a SOCK_SEQPACKET Unix socket, one request per
// connection.
//
// Request: magic "GIRQ", version (1), op (1), 2 reserved bytes, then, for
// opImport, the encoded handle (opWatch has nothing after the header).
//
// Reply: magic "GIRP", version (1), code (1), message length (2), size (8),
// offset (8), message. For opImport with CodeOK the reply carries exactly
// one descriptor (SCM_RIGHTS) and no message.
//
// opWatch: after a CodeOK reply the connection stays open and the exporter
// sends notices: magic "GIRN", version (1), kind (1), 2 reserved bytes,
// buffer id (16). The exporter closing the connection means it is gone (or
// dropped a watcher that did not keep up): every buffer it exported must
// be taken as revoked. The CodeOK reply's size field is the keepalive
// interval in nanoseconds: the exporter sends a keepalive notice (zero
// buffer id) at that interval, the watcher answers each with an opAck
// request header; either side closes a connection on which it heard
// nothing for watchTimeoutIntervals intervals.
//
// A connection of a uid the exporter does not allow, or beyond its bound
// on connections, is answered (CodeNotAllowed, CodeBusy) and closed
// before the request is read.
var (
	reqMagic    = [4]byte{'G', 'I', 'R', 'Q'}
	repMagic    = [4]byte{'G', 'I', 'R', 'P'}
	noticeMagic = [4]byte{'G', 'I', 'R', 'N'}
)

const (
	protoVersion = 1
	opImport     = 1
	opWatch      = 2
	opAck        = 3 // a watcher's answer to a keepalive notice
	reqHeaderLen = 8
	repHeaderLen = 24
	noticeLen    = 24
	maxMessage   = 1024
	maxRequest   = reqHeaderLen + handleFixedLen + MaxPCIAddressLen

	noticeRevoked   = 1
	noticeKeepalive = 2 // the watcher answers with an opAck request header
)

// Code is the exporter's answer to an import request.
type Code uint8

// Answers of the exporter.
const (
	CodeOK         Code = 0
	CodeUnknown    Code = 1 // no such buffer (never exported here, or the handle does not match)
	CodeRevoked    Code = 2 // the buffer was exported and revoked
	CodeNotAllowed Code = 3 // the importer's credentials fail the exporter's policy
	CodeBadRequest Code = 4 // the request or the handle is malformed
	CodeClosing    Code = 5 // the exporter is shutting down
	CodeInternal   Code = 6 // the exporter failed to send the descriptor
	CodeBusy       Code = 7 // the exporter serves as many connections as it allows
)

func (c Code) String() string {
	switch c {
	case CodeOK:
		return "ok"
	case CodeUnknown:
		return "unknown buffer"
	case CodeRevoked:
		return "revoked"
	case CodeNotAllowed:
		return "not allowed"
	case CodeBadRequest:
		return "bad request"
	case CodeClosing:
		return "exporter closing"
	case CodeInternal:
		return "exporter error"
	case CodeBusy:
		return "exporter busy"
	}
	return fmt.Sprintf("code %d", uint8(c))
}

// Errors of Import. A refusal by the exporter is a *RefusedError, which
// matches the sentinel of its code with errors.Is.
var (
	ErrUnknownBuffer = errors.New("ipc: unknown buffer")
	ErrRevoked       = errors.New("ipc: buffer revoked")
	ErrNotAllowed    = errors.New("ipc: not allowed")
	ErrBadRequest    = errors.New("ipc: bad request")
	ErrClosing       = errors.New("ipc: exporter closing")
	ErrExporter      = errors.New("ipc: exporter error")
	// ErrBusy: the exporter serves as many connections (or watchers) as
	// its options allow; try again later.
	ErrBusy = errors.New("ipc: exporter busy")
	// ErrExporterGone: nobody listens on the socket, or the exporter
	// closed the connection (or died) before it answered.
	ErrExporterGone = errors.New("ipc: exporter gone")
	// ErrProtocol: the exporter's answer does not follow the protocol.
	ErrProtocol = errors.New("ipc: protocol error")
	// ErrOtherHost: the handle comes from another machine or boot.
	ErrOtherHost = errors.New("ipc: handle from another boot or machine")
	// ErrClosed: the Exporter, Cache or Watcher is closed. It is
	// os.ErrClosed, the sentinel every package of the module uses for
	// closed objects.
	ErrClosed = os.ErrClosed
)

// RefusedError is the exporter's refusal to pass a descriptor.
type RefusedError struct {
	Code    Code
	Message string
}

func (e *RefusedError) Error() string {
	if e.Message == "" {
		return "ipc: exporter refused: " + e.Code.String()
	}
	return "ipc: exporter refused: " + e.Code.String() + ": " + e.Message
}

// Is matches the sentinel of e.Code.
func (e *RefusedError) Is(target error) bool {
	switch e.Code {
	case CodeUnknown:
		return target == ErrUnknownBuffer
	case CodeRevoked:
		return target == ErrRevoked
	case CodeNotAllowed:
		return target == ErrNotAllowed
	case CodeBadRequest:
		return target == ErrBadRequest
	case CodeClosing:
		return target == ErrClosing
	case CodeInternal:
		return target == ErrExporter
	case CodeBusy:
		return target == ErrBusy
	}
	return false
}

func encodeWatchRequest() []byte {
	b := make([]byte, reqHeaderLen)
	copy(b, reqMagic[:])
	b[4] = protoVersion
	b[5] = opWatch
	return b
}

// encodeAck is a watcher's answer to a keepalive.
func encodeAck() []byte {
	b := encodeWatchRequest()
	b[5] = opAck
	return b
}

func encodeRequest(h Handle) ([]byte, error) {
	hb, err := h.MarshalBinary()
	if err != nil {
		return nil, err
	}
	b := make([]byte, reqHeaderLen, reqHeaderLen+len(hb))
	copy(b, reqMagic[:])
	b[4] = protoVersion
	b[5] = opImport
	return append(b, hb...), nil
}

// decodeRequest returns the operation of request b and, for opImport, its
// handle.
func decodeRequest(b []byte) (op byte, h Handle, err error) {
	if len(b) < reqHeaderLen || [4]byte(b[0:4]) != reqMagic {
		return 0, h, errors.New("not a request")
	}
	if b[4] != protoVersion {
		return 0, h, fmt.Errorf("protocol version %d, want %d", b[4], protoVersion)
	}
	switch b[5] {
	case opImport:
		if err := h.UnmarshalBinary(b[reqHeaderLen:]); err != nil {
			return 0, h, err
		}
		return opImport, h, nil
	case opWatch:
		if len(b) != reqHeaderLen {
			return 0, h, fmt.Errorf("watch request of %d bytes, want %d", len(b), reqHeaderLen)
		}
		return opWatch, h, nil
	}
	return 0, h, fmt.Errorf("unknown operation %d", b[5])
}

func encodeNotice(kind byte, id [16]byte) []byte {
	b := make([]byte, noticeLen)
	copy(b, noticeMagic[:])
	b[4] = protoVersion
	b[5] = kind
	copy(b[8:], id[:])
	return b
}

func decodeNotice(b []byte) (kind byte, id [16]byte, err error) {
	if len(b) != noticeLen || [4]byte(b[0:4]) != noticeMagic || b[4] != protoVersion || b[6] != 0 || b[7] != 0 {
		return 0, id, fmt.Errorf("%w: bad notice (%d bytes)", ErrProtocol, len(b))
	}
	if b[5] != noticeRevoked && b[5] != noticeKeepalive {
		return 0, id, fmt.Errorf("%w: unknown notice kind %d", ErrProtocol, b[5])
	}
	return b[5], [16]byte(b[8:24]), nil
}

func encodeReply(c Code, size, offset uint64, msg string) []byte {
	if len(msg) > maxMessage {
		msg = msg[:maxMessage]
	}
	b := make([]byte, repHeaderLen+len(msg))
	copy(b, repMagic[:])
	b[4] = protoVersion
	b[5] = byte(c)
	binary.LittleEndian.PutUint16(b[6:], uint16(len(msg)))
	binary.LittleEndian.PutUint64(b[8:], size)
	binary.LittleEndian.PutUint64(b[16:], offset)
	copy(b[24:], msg)
	return b
}

func decodeReply(b []byte) (c Code, size, offset uint64, msg string, err error) {
	if len(b) < repHeaderLen || [4]byte(b[0:4]) != repMagic || b[4] != protoVersion {
		return 0, 0, 0, "", fmt.Errorf("%w: bad reply header (%d bytes)", ErrProtocol, len(b))
	}
	n := int(binary.LittleEndian.Uint16(b[6:]))
	if len(b) != repHeaderLen+n {
		return 0, 0, 0, "", fmt.Errorf("%w: reply of %d bytes states a %d-byte message", ErrProtocol, len(b), n)
	}
	return Code(b[5]), binary.LittleEndian.Uint64(b[8:]), binary.LittleEndian.Uint64(b[16:]), string(b[24:]), nil
}
